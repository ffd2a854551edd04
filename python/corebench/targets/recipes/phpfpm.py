"""PHP-FPM from Debian's php-fpm package as a service: the FastCGI process
manager that runs PHP outside Apache, so the web server can use the event
or worker MPM (mod_php needs prefork) and PHP is measured as a process
group of its own. Its configuration is written into the service's folder
per start (one pool on a loopback port, the master in the foreground, its
workers as www-data); Apache's `php_fcgi = "127.0.0.1:{php_port}"` sends
the .php pages to it. Debian's php.ini for FPM applies; the system's own
php-fpm is never touched."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

DEFAULTS: dict[str, Any] = {
    # The newest php-fpm the package installed; or a path to one.
    "binary": None,
    "user": "www-data",
    "group": "www-data",
    # How many workers: a fixed number (static), between bounds (dynamic),
    # or started per request (ondemand): PHP-FPM's pm.
    "pm": "static",
    "max_children": 16,
    "start_servers": 4,
    "min_spare_servers": 2,
    "max_spare_servers": 8,
    # Requests a worker serves before it is replaced; 0: never.
    "max_requests": 0,
    # PHP's opcode cache (the report's APC).
    "opcache": True,
    # Any other php.ini setting for the pool: { memory_limit = "256M" }.
    "ini": {},
}
PMS = ("static", "dynamic", "ondemand")
_SBIN = Path("/usr/sbin")
_NAME = re.compile(r"^[a-z_][a-z0-9_.]*$")


class PhpFpmError(ValueError):
    pass


def binary(values: dict[str, Any]) -> Path:
    if values.get("binary"):
        found = Path(values["binary"])
    else:
        versions = sorted(_SBIN.glob("php-fpm*"), key=lambda p: [int(x) for x in re.findall(r"\d+", p.name)])
        if not versions:
            raise PhpFpmError("php-fpm is not installed: install Debian's php-fpm (make test does)")
        found = versions[-1]
    if not found.is_file():
        raise PhpFpmError(f"no php-fpm at {found}")
    return found


def settings(given: dict[str, Any]) -> dict[str, Any]:
    unknown = set(given) - set(DEFAULTS)
    if unknown:
        raise PhpFpmError(f"unknown php-fpm setting {sorted(unknown)[0]!r}; known: {', '.join(sorted(DEFAULTS))}")
    values = {**DEFAULTS, **given}
    if values["pm"] not in PMS:
        raise PhpFpmError(f"pm {values['pm']!r} is not one of {', '.join(PMS)}")
    for key in ("max_children", "start_servers", "min_spare_servers", "max_spare_servers", "max_requests"):
        if not isinstance(values[key], int) or values[key] < (0 if key == "max_requests" else 1):
            raise PhpFpmError(f"{key} = {values[key]!r}: give a whole number of at least 1")
    for key in values["ini"]:
        if not _NAME.match(str(key)):
            raise PhpFpmError(f"ini key {key!r} is not a php.ini name")
    binary(values)
    return values


def _ini(v: Any) -> str:
    if isinstance(v, bool):
        return "On" if v else "Off"
    return str(v)


def conf_text(values: dict[str, Any], folder: Path, port: int) -> str:
    lines = [
        "[global]",
        f"pid = {folder}/php-fpm.pid",
        # The master's stderr is the service's log, kept for error messages.
        "error_log = /proc/self/fd/2",
        "daemonize = no",
        "[corebench]",
        f"user = {values['user']}",
        f"group = {values['group']}",
        f"listen = 127.0.0.1:{port}",
        "listen.allowed_clients = 127.0.0.1",
        "listen.backlog = 511",
        f"pm = {values['pm']}",
        f"pm.max_children = {values['max_children']}",
        f"pm.max_requests = {values['max_requests']}",
        "catch_workers_output = yes",
        "clear_env = no",
        f"php_admin_flag[opcache.enable] = {_ini(values['opcache'])}",
    ]
    if values["pm"] == "dynamic":
        lines += [
            f"pm.start_servers = {values['start_servers']}",
            f"pm.min_spare_servers = {values['min_spare_servers']}",
            f"pm.max_spare_servers = {values['max_spare_servers']}",
        ]
    lines += [f"php_admin_value[{k}] = {_ini(v)}" for k, v in values["ini"].items()]
    return "\n".join(lines) + "\n"


def prepare(values: dict[str, Any], folder: Path, port: int) -> None:
    (folder / "php-fpm.conf").write_text(conf_text(values, folder, port))


def command(values: dict[str, Any], folder: Path) -> list[str]:
    # --nodaemonize: the master stays the process corebench started and stops.
    return [str(binary(values)), "--nodaemonize", "--fpm-config", str(folder / "php-fpm.conf")]
