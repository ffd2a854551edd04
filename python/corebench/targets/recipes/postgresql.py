"""PostgreSQL from the Debian package as a service: a fresh cluster per
start (initdb into the service's folder, on the filesystem factor's image
when there is one), `postgres` in the foreground as the unprivileged
postgres user on a loopback port, settings such as shared_buffers and
fsync on its command line, an optional SQL file loaded once it is ready,
and a fast shutdown (SIGINT) at the end. The system's own clusters are
never touched."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

DEFAULTS: dict[str, Any] = {
    # The newest server the package installed; or a path to its bin folder.
    "bin": None,
    "user": "postgres",
    "shared_buffers": "128MB",
    "fsync": "on",
    "synchronous_commit": "on",
    "max_connections": 100,
    # Any other postgresql.conf setting: { work_mem = "4MB" }.
    "conf": {},
    # SQL run once the server is ready (relative to the plan): the data set;
    # init_vars are its psql variables (:name), e.g. { articles = 20000 }.
    "init_sql": None,
    "init_vars": {},
}
_BIN = Path("/usr/lib/postgresql")
_NAME = re.compile(r"^[a-z_][a-z0-9_.]*$")


class PostgresError(ValueError):
    pass


def bin_dir(values: dict[str, Any]) -> Path:
    if values.get("bin"):
        found = Path(values["bin"])
    else:
        versions = sorted(_BIN.glob("*/bin/postgres"), key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0)
        if not versions:
            raise PostgresError("PostgreSQL is not installed: install Debian's postgresql (make test does)")
        found = versions[-1].parent
    if not (found / "postgres").is_file():
        raise PostgresError(f"no postgres in {found}")
    return found


def settings(given: dict[str, Any]) -> dict[str, Any]:
    unknown = set(given) - set(DEFAULTS)
    if unknown:
        raise PostgresError(f"unknown postgresql setting {sorted(unknown)[0]!r}; known: {', '.join(sorted(DEFAULTS))}")
    values = {**DEFAULTS, **given}
    for key in values["conf"]:
        if not _NAME.match(str(key)):
            raise PostgresError(f"conf key {key!r} is not a postgresql.conf name")
    for key in values["init_vars"]:
        if not _NAME.match(str(key)):
            raise PostgresError(f"init_vars key {key!r} is not a psql variable name")
    return values


def conf(values: dict[str, Any]) -> dict[str, str]:
    """Every setting the server is started with (-c name=value)."""
    fixed = {k: values[k] for k in ("shared_buffers", "fsync", "synchronous_commit", "max_connections")}
    return {k: _text(v) for k, v in {**fixed, **values["conf"]}.items()}


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def _as_user(user: str) -> list[str]:
    # setpriv execs (runuser would stay as a parent): the stop signal reaches postgres itself.
    return ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups"]


def prepare(values: dict[str, Any], folder: Path) -> None:
    """A new cluster in `folder`/pgdata, owned by the server's user."""
    bin_path = bin_dir(values)
    user = values["user"]
    data = folder / "pgdata"
    data.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, 0o755)
    if os.geteuid() == 0:
        shutil.chown(folder, user, user)
        shutil.chown(data, user, user)
    argv = [str(bin_path / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"]
    p = subprocess.run(
        (_as_user(user) if os.geteuid() == 0 else []) + argv, capture_output=True, text=True, timeout=120, check=False
    )
    if p.returncode != 0:
        last = (p.stderr or p.stdout).strip().splitlines()
        raise PostgresError(f"initdb failed: {last[-1] if last else p.returncode}")


def command(values: dict[str, Any], folder: Path, port: int) -> list[str]:
    argv = [str(bin_dir(values) / "postgres"), "-D", str(folder / "pgdata"), "-p", str(port), "-k", str(folder)]
    argv += ["-c", "listen_addresses=127.0.0.1"]
    for name, value in conf(values).items():
        argv += ["-c", f"{name}={value}"]
    return (_as_user(values["user"]) if os.geteuid() == 0 else []) + argv


def ready_command(values: dict[str, Any], port: int) -> list[str]:
    return [str(bin_dir(values) / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port)]


def load(values: dict[str, Any], plan_dir: Path, port: int) -> None:
    """Runs init_sql against the ready server (stops at the first error)."""
    if not values.get("init_sql"):
        return
    sql = plan_dir / str(values["init_sql"])
    if not sql.is_file():
        raise PostgresError(f"init_sql: no such file {sql}")
    argv = [str(bin_dir(values) / "psql"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-q"]
    for name, value in values["init_vars"].items():
        argv += ["-v", f"{name}={_text(value)}"]
    p = subprocess.run(
        [*argv, "-v", "ON_ERROR_STOP=1", "-f", str(sql)], capture_output=True, text=True, timeout=600, check=False
    )
    if p.returncode != 0:
        last = (p.stderr or p.stdout).strip().splitlines()
        raise PostgresError(f"init_sql {sql.name} failed: {last[-1] if last else p.returncode}")
