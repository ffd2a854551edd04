"""The web-server recipes: Apache httpd (prefork, worker, event) and nginx
from the Debian packages, each with its configuration rendered per start on
a port and in a folder of its own, never touching the system's instance.
`settings` in the plan override the defaults below (and may be factors)."""

from __future__ import annotations

import os
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

from corebench.plan.model import File, Target

APACHE_DEFAULTS: dict[str, Any] = {
    "mpm": "event",
    "binary": "/usr/sbin/apache2",
    "modules": "/usr/lib/apache2/modules",
    "user": "www-data",
    "group": "www-data",
    "keep_alive": "On",
    "max_keep_alive_requests": 0,  # unlimited, as a benchmark needs
    "keep_alive_timeout": 5,
    "start_servers": 2,
    "min_spare_servers": 5,
    "max_spare_servers": 10,
    "max_request_workers": 150,
    "threads_per_child": 25,
    "min_spare_threads": 25,
    "max_spare_threads": 75,
    "access_log": False,
    # A Python WSGI application (mod_wsgi, Debian's libapache2-mod-wsgi-py3):
    # its folder, relative to the plan, copied into the start's own folder;
    # the script in it; the URL path it answers under; in Apache's own
    # children ("embedded", as mod_python ran) or in daemon processes.
    "wsgi_app": None,
    "wsgi_script": "app.wsgi",
    "wsgi_mount": "/app",
    "wsgi_mode": "embedded",
    "wsgi_processes": 2,
    "wsgi_threads": 15,
    # PHP through mod_php (Debian's libapache2-mod-php; prefork only): a
    # folder of .php files (relative to the plan) copied into the document
    # root, and environment for it (e.g. { DB_PORT = "{db_port}" }).
    "php": False,
    "php_app": None,
    "php_env": {},
    # A front controller for every path that is not a file (FallbackResource).
    "php_front": None,
    # PHP's opcode cache (the report's APC; opcache since PHP 5.5).
    "opcache": True,
    # Or PHP in a php-fpm service, under any MPM: its address, e.g.
    # "127.0.0.1:{php_port}" (the pages and php_env as above; opcache is
    # then the service's setting).
    "php_fcgi": None,
    # HTTP/2 through mod_http2 (worker and event MPMs): h2c with prior
    # knowledge beside HTTP/1.1 on the same port; streams a client may open
    # at once on a connection.
    "http2": False,
    "h2_max_session_streams": 100,
}
NGINX_DEFAULTS: dict[str, Any] = {
    "binary": "/usr/sbin/nginx",
    "worker_processes": "auto",
    "worker_connections": 4096,
    "keep_alive_timeout": 65,
    "max_keep_alive_requests": 100000,
    "access_log": False,
    # HTTP/2 with prior knowledge (h2c) on the port; nginx before 1.25.1 (Debian
    # 12's 1.22) then speaks HTTP/2 alone there, so readiness is checked with
    # the HTTP/2 preface. Streams a client may open at once on a connection.
    "http2": False,
    "http2_max_concurrent_streams": 128,
}
RECIPES = {"apache": APACHE_DEFAULTS, "nginx": NGINX_DEFAULTS}
MPMS = ("prefork", "worker", "event")
WSGI_MODES = ("embedded", "daemon")
# Where a start's copy of the WSGI application goes, in its own folder.
WSGI_DIR = "wsgi-app"


class RecipeError(ValueError):
    pass


def _template(name: str) -> str:
    return resources.files("corebench.targets.recipes").joinpath(name).read_text()


def settings(t: Target) -> dict[str, Any]:
    assert t.recipe is not None
    defaults = RECIPES[t.recipe]
    unknown = set(t.settings) - set(defaults)
    if unknown:
        raise RecipeError(f"unknown {t.recipe} setting {sorted(unknown)[0]!r}; known: {', '.join(sorted(defaults))}")
    values = {**defaults, **t.settings}
    if t.recipe == "apache" and values["mpm"] not in MPMS:
        raise RecipeError(f"mpm {values['mpm']!r} is not one of {', '.join(MPMS)}")
    if t.recipe == "apache" and values["wsgi_mode"] not in WSGI_MODES:
        raise RecipeError(f"wsgi_mode {values['wsgi_mode']!r} is not one of {', '.join(WSGI_MODES)}")
    if t.recipe == "apache" and values["php_fcgi"]:
        if "opcache" in t.settings:
            raise RecipeError("with php_fcgi, opcache is the php-fpm service's setting")
        values["php"] = True
    elif t.recipe == "apache" and (values["php"] or values["php_app"]):
        if values["mpm"] != "prefork":
            raise RecipeError(
                f"mod_php runs under the prefork MPM only, not {values['mpm']}: for {values['mpm']}, run PHP in a "
                'php-fpm service ([target.services.php] recipe = "php-fpm") and set php_fcgi = "127.0.0.1:{php_port}"'
            )
        values["php"], values["php_module"] = True, _php_module(Path(values["modules"]))
    if t.recipe == "apache" and values["http2"] and values["mpm"] == "prefork":
        raise RecipeError('http2 (mod_http2) does not run under the prefork MPM: use mpm = "worker" or "event"')
    if t.recipe == "apache" and values["wsgi_app"]:
        if not Path(values["modules"], "mod_wsgi.so").is_file():
            raise RecipeError("wsgi_app needs mod_wsgi: install Debian's libapache2-mod-wsgi-py3 (make test does)")
        values["wsgi_dir"] = WSGI_DIR
    return values


def _php_module(modules: Path) -> str:
    found = sorted(modules.glob("libphp*.so"))
    if not found:
        raise RecipeError("php needs mod_php: install Debian's libapache2-mod-php (make test does)")
    return str(found[-1])


def place_apps(values: dict[str, Any], plan_dir: Path, run_dir: Path) -> None:
    """Copies the WSGI application, and the PHP one into the document root,
    into the start's folder, which Apache's children (another user) can
    read, as a deployment would install them."""
    if values.get("wsgi_app"):
        src = plan_dir / str(values["wsgi_app"])
        if not (src / str(values["wsgi_script"])).is_file():
            raise RecipeError(f"wsgi_app: no {values['wsgi_script']} in {src}")
        _copy(src, run_dir / WSGI_DIR)
    if values.get("php_app"):
        src = plan_dir / str(values["php_app"])
        if not src.is_dir():
            raise RecipeError(f"php_app: no such folder {src}")
        _copy(src, run_dir / "htdocs")


def _copy(src: Path, dest: Path) -> None:
    shutil.copytree(src, dest, dirs_exist_ok=True)
    for folder, dirs, files in os.walk(dest):
        for name in dirs + files:
            os.chmod(os.path.join(folder, name), 0o755 if name in dirs else 0o644)


def expand(t: Target) -> Target:
    """The recipe as a command target."""
    if t.recipe is None:
        return t
    s = settings(t)
    if t.recipe == "apache":
        command = [s["binary"], "-f", "{dir}/httpd.conf", "-DFOREGROUND"]
        conf = File(path="httpd.conf", content=_template("apache.conf.j2"))
        version = [s["binary"], "-v"]
        stop = "SIGTERM"
    else:
        command = [s["binary"], "-c", "{dir}/nginx.conf", "-p", "{dir}"]
        conf = File(path="nginx.conf", content=_template("nginx.conf.j2"))
        version = [s["binary"], "-v"]
        stop = "SIGQUIT"  # nginx's graceful shutdown
    ready = "h2c://{host}:{port}/" if t.recipe == "nginx" and s["http2"] else "http://{host}:{port}/"
    return t.model_copy(
        update={
            "command": command,
            "files": [conf, *t.files],
            "version_command": t.version_command or version,
            "stop_signal": stop if t.stop_signal == "SIGTERM" else t.stop_signal,
            "ready_url": t.ready_url or ready,
        }
    )
