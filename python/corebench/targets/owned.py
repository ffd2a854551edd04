"""What a corebench run started, recorded where it runs, so that
`corebench cleanup` stops only that: never a process because it happens to
work in one of our folders (a user's shell there), never an image because
of its name alone.

Each target and service is started as the leader of a session of its own
(`start_new_session`); its children (Apache's workers, PostgreSQL's
backends) stay in that session. The experiment's folder holds one line per
leader: its pid and its start time in clock ticks since boot
(/proc/PID/stat, field 22). A process is ours when its session is one of
those leaders' and it started no earlier than the leader; a leader pid
alive with another start time is another process that reused the number:
its session is left alone."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

# In an experiment's folder: the sessions its corebench started.
STARTED_FILE = "corebench.started"
# In an experiment's folder (and only there): the pid of its corebench.
OWNER_FILE = "corebench.pid"
# An experiment's folder (tempfile's), where its targets, services and
# filesystem images are.
WORK_PREFIX = "corebench-run-"


def claim(work_dir: Path) -> None:
    """Marks an experiment's folder as this process's: cleanup leaves it
    (its images, its targets) alone while this process lives."""
    (work_dir / OWNER_FILE).write_text(f"{os.getpid()}\n")


def record(pid: int, where: Path) -> None:
    """Records the session `pid` leads in the experiment's folder that
    holds `where` (a target's or service's folder inside it); nothing when
    `where` is in no such folder (a target started outside an experiment)."""
    ticks = start_ticks(pid)
    home = experiment_dir(where)
    if ticks is None or home is None:
        return
    with (home / STARTED_FILE).open("a") as f:
        f.write(f"{pid} {ticks}\n")


def experiment_dir(where: Path) -> Path | None:
    """The experiment's folder `where` is in (it holds OWNER_FILE)."""
    for d in [where, *where.parents]:
        if (d / OWNER_FILE).is_file():
            return d
    return None


def started(home: Path) -> list[tuple[int, int]]:
    """(pid, start ticks) of each session leader recorded in `home`."""
    out = []
    with contextlib.suppress(OSError):
        for line in (home / STARTED_FILE).read_text().splitlines():
            with contextlib.suppress(ValueError):
                pid, ticks = (int(x) for x in line.split())
                out.append((pid, ticks))
    return out


def processes(home: Path) -> list[int]:
    """The live processes of the sessions recorded in `home`."""
    leaders = {}
    for pid, ticks in started(home):
        now = start_ticks(pid)
        if now is None or now == ticks:  # gone (its session may live on), or the same process
            leaders[pid] = ticks
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        stat = _stat(int(proc.name))
        if stat is None:
            continue
        session, ticks = int(stat[3]), int(stat[19])
        if session in leaders and ticks >= leaders[session] and int(proc.name) != os.getpid():
            found.append(int(proc.name))
    return sorted(found)


def stop(home: Path) -> list[int]:
    """SIGKILLs the processes of the sessions recorded in `home`; returns their pids."""
    pids = processes(home)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    _wait_gone(pids)
    return pids


def start_ticks(pid: int) -> int | None:
    stat = _stat(pid)
    return int(stat[19]) if stat is not None else None


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command (state first), or None for
    a process gone or a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if not fields or fields[0] == "Z" else fields


def alive(pid: int) -> bool:
    """A process that runs (not gone, not a zombie awaiting its parent)."""
    return _stat(pid) is not None


def _wait_gone(pids: list[int], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if alive(p)]
        time.sleep(0.02)
