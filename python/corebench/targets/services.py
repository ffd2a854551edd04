"""The processes a target needs (a database), started before it in
dependency order, each checked ready, on the target's CPUs or its own, in
cgroups that measure it apart, and in a folder and on a port of its own; stopped after it, in reverse order, also when a
later one or the target fails to start."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corebench.plan.factors import substitute
from corebench.plan.model import Service, order
from corebench.targets import owned
from corebench.targets.cpus import Layout
from corebench.targets.process import TargetError, cpus_allowed, free_port, render, tail
from corebench.targets.recipes import phpfpm, postgresql


@dataclass
class StartedService:
    name: str
    spec: Service
    proc: subprocess.Popen[bytes]
    port: int
    folder: Path
    argv: list[str]
    ready_s: float
    log_path: Path
    settings: dict[str, Any] = field(default_factory=dict)
    cpus_allowed: str | None = None

    def facts(self) -> dict[str, Any]:
        """What is stored with each run: how it ran."""
        return {
            "kind": self.spec.recipe or "command",
            "pid": self.proc.pid,
            "argv": self.argv,
            "port": self.port,
            "ready_s": round(self.ready_s, 3),
            "settings": self.settings,
            "cpus_allowed": self.cpus_allowed,
        }


def values_of(started: list[StartedService]) -> dict[str, Any]:
    """The placeholders they fill into the target: {db_port}, {db_dir}, {db_host}."""
    out: dict[str, Any] = {}
    for s in started:
        out |= {f"{s.name}_port": s.port, f"{s.name}_dir": str(s.folder), f"{s.name}_host": "127.0.0.1"}
    return out


def start_all(
    services: dict[str, Service], levels: dict[str, Any], layout: Layout, plan_dir: Path, run_dir: Path
) -> list[StartedService]:
    started: list[StartedService] = []
    try:
        for name in order(services):
            started.append(_start(name, services[name], levels | values_of(started), layout, plan_dir, run_dir))
    except BaseException:
        stop_all(started)
        raise
    return started


def _start(
    name: str, spec: Service, values: dict[str, Any], layout: Layout, plan_dir: Path, run_dir: Path
) -> StartedService:
    folder = run_dir / f"service-{name}"
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    own = values | {"port": port, "dir": str(folder)}
    settings: dict[str, Any] = {}
    ready: list[str] | None
    render(spec.files, own, plan_dir, folder, f"service {name}")
    try:
        if spec.recipe == "postgresql":
            settings = postgresql.settings(substitute(spec.settings, own))
            postgresql.prepare(settings, folder)
            argv = postgresql.command(settings, folder, port)
            ready = postgresql.ready_command(settings, port)
        elif spec.recipe == "php-fpm":
            settings = phpfpm.settings(substitute(spec.settings, own))
            phpfpm.prepare(settings, folder, port)
            argv, ready = phpfpm.command(settings, folder), None
        else:
            argv = [str(a) for a in substitute(list(spec.command or []), own)]
            ready = [str(a) for a in substitute(spec.ready_command, own)] if spec.ready_command else None
    except (postgresql.PostgresError, phpfpm.PhpFpmError, OSError, subprocess.SubprocessError) as e:
        raise TargetError(f"service {name}: {e}") from None
    if shutil.which(argv[0]) is None and not Path(folder, argv[0]).is_file():
        raise TargetError(f"service {name}: cannot start {argv[0]}: no such program")
    log_path = folder / "service.log"
    env = {**os.environ, **{k: str(v) for k, v in substitute(spec.env, own).items()}}
    placed = [sys.executable, "-m", "corebench.targets.enter", json.dumps(layout.of(name).to_json()), "--", *argv]
    began = time.monotonic()
    with log_path.open("ab") as log:
        try:
            proc = subprocess.Popen(
                placed, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=folder, env=env,
                start_new_session=True,
            )  # fmt: skip
        except OSError as e:
            raise TargetError(f"service {name}: cannot start {argv[0]}: {e}") from None
    owned.record(proc.pid, folder)  # what `corebench cleanup` may stop, should we be killed
    svc = StartedService(name, spec, proc, port, folder, argv, 0.0, log_path, settings)
    try:
        _wait_ready(svc, ready, began)
        if spec.recipe == "postgresql":
            postgresql.load(settings, plan_dir, port)
    except postgresql.PostgresError as e:
        stop(svc)
        raise TargetError(f"service {name}: {e}") from None
    except BaseException:
        stop(svc)
        raise
    svc.ready_s = time.monotonic() - began
    svc.cpus_allowed = cpus_allowed(proc.pid)
    return svc


def _wait_ready(svc: StartedService, ready: list[str] | None, began: float) -> None:
    deadline = began + svc.spec.ready_timeout_s
    while time.monotonic() < deadline:
        if svc.proc.poll() is not None:
            raise TargetError(
                f"service {svc.name} exited with status {svc.proc.returncode} before it was ready; its output "
                f"ends:\n{tail(svc.log_path)}"
            )
        if _is_ready(ready, svc.port):
            return
        time.sleep(0.05)
    raise TargetError(
        f"service {svc.name} was not ready within {svc.spec.ready_timeout_s:g} s; its output ends:\n"
        f"{tail(svc.log_path)}"
    )


def _is_ready(ready: list[str] | None, port: int) -> bool:
    if ready is None:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
        return False
    try:
        return subprocess.run(ready, capture_output=True, timeout=10, check=False).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def stop(svc: StartedService) -> None:
    """Its stop signal to its process group, then SIGKILL after the timeout."""
    proc = svc.proc
    try:
        if proc.poll() is None:
            os.killpg(proc.pid, getattr(signal, _signal(svc.spec)))
            proc.wait(timeout=svc.spec.stop_timeout_s)
    except (subprocess.TimeoutExpired, ProcessLookupError, PermissionError):
        pass
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _signal(spec: Service) -> str:
    # PostgreSQL's fast shutdown: SIGTERM would wait for every client to leave.
    return "SIGINT" if spec.recipe == "postgresql" and spec.stop_signal == "SIGTERM" else spec.stop_signal


def stop_all(started: list[StartedService]) -> None:
    for svc in reversed(started):
        stop(svc)
