"""A server under test in its own process group: configuration files
rendered per start, placed on its CPUs before exec, polled until ready,
stopped with its own signal, and its output kept for error messages."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import jinja2

from corebench.plan.factors import substitute
from corebench.plan.model import File, Target
from corebench.targets import owned, recipes
from corebench.targets.cpus import Layout

TAIL_BYTES = 2000
PREPARE_TIMEOUT_S = 600


class TargetError(Exception):
    """The target could not be started, or did not become ready."""


def free_port() -> int:
    """A loopback port nobody listens on now (the kernel's choice)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclasses.dataclass
class Started:
    proc: subprocess.Popen[bytes]
    base_url: str
    ready_s: float
    log_path: Path
    argv: list[str]


def builtin_command(t: Target) -> list[str]:
    b = t.builtin
    assert b is not None
    workers = b.workers or (max(1, round(t.cpus)) if t.cpus else os.cpu_count() or 1)
    return [
        sys.executable,
        "-m",
        "corebench",
        "serve",
        "--host",
        "{address}",
        "--port",
        "{port}",
        "--model",
        b.model,
        "--workers",
        str(workers),
        *(["--tls"] if b.tls else []),
        *b.args,
    ]


def cpus_allowed(pid: int) -> str | None:
    """What the kernel says a process may run on: its layout, verified."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Cpus_allowed_list:"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def tail(path: Path) -> str:
    try:
        with path.open("rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - TAIL_BYTES))
            return f.read().decode(errors="replace").strip()
    except OSError:
        return ""


def render(files: list[File], values: dict[str, Any], plan_dir: Path, run_dir: Path, whose: str = "target") -> None:
    """Each file (jinja2) into `run_dir`, rendered with `values`."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(plan_dir)), undefined=jinja2.StrictUndefined, keep_trailing_newline=True
    )
    for f in files:
        try:
            tmpl = env.get_template(f.template) if f.template else env.from_string(f.content or "")
            text = tmpl.render(**values)
        except jinja2.TemplateError as e:
            raise TargetError(f"{whose} file {f.path}: {e}") from None
        dest = run_dir / substitute(f.path, values)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text)


def _prepare(argv: list[str], plan_dir: Path) -> None:
    try:
        p = subprocess.run(argv, cwd=plan_dir, capture_output=True, text=True, timeout=PREPARE_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError) as e:
        raise TargetError(f"prepare {argv[0]}: {e}") from None
    if p.returncode != 0:
        said = (p.stderr or p.stdout).strip()[-TAIL_BYTES:]
        raise TargetError(f"prepare {' '.join(argv)} exited with status {p.returncode}:\n{said}")


# Readiness is asked of the server itself, never through an http_proxy.
# A target's certificate is not checked (the built-in server's --tls makes
# its own, self-signed): the question is only whether it answers.
_DIRECT = urllib.request.build_opener(
    urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=ssl._create_unverified_context())
)


# The HTTP/2 client preface and an empty SETTINGS frame (RFC 9113 §3.4).
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
_SETTINGS = 4


# Everything printable but whitespace: only what the wire cannot carry is encoded.
_URL_SAFE = "".join(chr(c) for c in range(0x21, 0x7F))


def _answers(url: str) -> bool:
    if url.startswith("h2c://"):
        return _answers_h2c(url)
    try:
        # Encoded as the engine sends it (a space as %20): http.client
        # refuses what the wire cannot carry, and the server is asked the same.
        with _DIRECT.open(urllib.parse.quote(url, safe=_URL_SAFE), timeout=1):
            return True
    except urllib.error.HTTPError:
        return True  # any HTTP answer means it is up
    except (OSError, ValueError):
        return False


def _answers_h2c(url: str) -> bool:
    """Up when the server answers the HTTP/2 preface with its SETTINGS: a
    port that speaks HTTP/2 alone (nginx's `listen … http2` before 1.25.1)
    has no HTTP/1.1 answer to give."""
    u = urllib.parse.urlsplit(url)
    try:
        with socket.create_connection((u.hostname or "127.0.0.1", u.port or 80), timeout=1) as s:
            s.sendall(_H2_PREFACE)
            head = s.recv(9)
    except OSError:
        return False
    return len(head) >= 4 and head[3] == _SETTINGS


def _pages(t: Target, run_dir: Path) -> None:
    docroot = run_dir / "htdocs"
    docroot.mkdir(parents=True, exist_ok=True)
    for size in t.pages:
        # Printable bytes ending in a newline, like the 44-byte page of the reports.
        (docroot / f"{size}.html").write_bytes((b"x" * max(size - 1, 0) + b"\n")[:size])


def start(t: Target, levels: dict[str, Any], layout: Layout, plan_dir: Path, run_dir: Path, load_path: str) -> Started:
    try:
        return _start(t, levels, layout, plan_dir, run_dir, load_path)
    except TargetError:
        raise
    except (OSError, ValueError, KeyError, TypeError, UnicodeError) as e:
        # A folder that cannot be written, a template that is not text: this
        # configuration's runs fail, the experiment goes on.
        raise TargetError(f"cannot prepare the target: {type(e).__name__}: {e}") from None


def _start(t: Target, levels: dict[str, Any], layout: Layout, plan_dir: Path, run_dir: Path, load_path: str) -> Started:
    try:
        settings = recipes.settings(t) if t.recipe else {}
        t = recipes.expand(t)
    except recipes.RecipeError as e:
        raise TargetError(f"recipe {t.recipe}: {e}") from None
    port = free_port()
    host = f"[{t.address}]" if ":" in t.address else t.address
    values = {**levels, **settings, "port": port, "dir": str(run_dir), "address": t.address, "host": host}
    # A recipe's settings may name what the start fills in, e.g. a service's {db_port}.
    values |= substitute(settings, values)
    run_dir.mkdir(parents=True, exist_ok=True)
    # Servers that drop privileges (Apache's children run as www-data) must read their folder.
    os.chmod(run_dir, 0o755)
    _pages(t, run_dir)
    try:
        recipes.place_apps(values, plan_dir, run_dir)
    except recipes.RecipeError as e:
        raise TargetError(f"recipe {t.recipe}: {e}") from None
    render(t.files, values, plan_dir, run_dir)
    if t.prepare:
        _prepare([str(a) for a in substitute(t.prepare, values)], plan_dir)
    argv = [str(a) for a in substitute(builtin_command(t) if t.builtin else list(t.command or []), values)]
    scheme = "https" if t.builtin is not None and t.builtin.tls else "http"
    base_url = f"{scheme}://{host}:{port}/"
    ready_url = substitute(t.ready_url, values) if t.ready_url else base_url.rstrip("/") + "/" + load_path.lstrip("/")
    log_path = run_dir / "target.log"
    env = {**os.environ, **{k: str(v) for k, v in substitute(t.env, values).items()}}
    # The built-in server's paths (a log, a database file) are the plan's;
    # a command's are its own folder's, where its configuration is rendered.
    cwd = plan_dir / substitute(t.cwd, values) if t.cwd else (plan_dir if t.builtin else run_dir)
    started = time.monotonic()
    if shutil.which(argv[0], path=env.get("PATH")) is None and not Path(cwd, argv[0]).is_file():
        raise TargetError(f"cannot start {argv[0]}: no such program")
    # The target is placed on its CPUs by a small program that then execs it
    # (target/enter.py), not by a preexec_fn: this process runs threads.
    placed = [sys.executable, "-m", "corebench.targets.enter", json.dumps(layout.to_json()), "--", *argv]
    with log_path.open("ab") as log:
        try:
            proc = subprocess.Popen(
                placed,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
        except (OSError, subprocess.SubprocessError) as e:
            raise TargetError(f"cannot start {argv[0]}: {e}") from None
    owned.record(proc.pid, run_dir)  # what `corebench cleanup` may stop, should we be killed
    try:
        return _wait_ready(Started(proc, base_url, 0.0, log_path, argv), t, ready_url, started)
    except BaseException:
        # Not ready, or Ctrl-C while waiting: nothing of it may outlive us.
        stop(proc, t)
        raise


def _wait_ready(pending: Started, t: Target, ready_url: str, started: float) -> Started:
    """`pending` once it answers `ready_url`, with the time that took."""
    proc, log_path = pending.proc, pending.log_path
    deadline = started + t.ready_timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise TargetError(
                f"the target exited with status {proc.returncode} before it was ready; its output ends:\n"
                f"{tail(log_path)}"
            )
        if _answers(ready_url):
            return dataclasses.replace(pending, ready_s=time.monotonic() - started)
        time.sleep(0.05)
    raise TargetError(
        f"the target did not answer {ready_url} within {t.ready_timeout_s:g} s; its output ends:\n{tail(log_path)}"
    )


def stop(proc: subprocess.Popen[bytes], t: Target) -> None:
    """The stop signal to the whole process group, then SIGKILL after the
    timeout; the SIGKILL happens whatever interrupts the wait."""
    try:
        if proc.poll() is None:
            os.killpg(proc.pid, getattr(signal, t.stop_signal))
            proc.wait(timeout=t.stop_timeout_s)
    except (subprocess.TimeoutExpired, ProcessLookupError, PermissionError):
        pass
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # stragglers of the group, even if its leader exited
        proc.wait()
