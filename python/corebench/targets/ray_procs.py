"""Ray's own processes on the target's node (issue 42): kept off the
target's CPUs while it runs, and their CPU measured per run, so that what
Ray costs there is reported beside the target's, not hidden in it.

Which processes: this node's raylet and everything it started (its
workers, their agents, corebench's target agent itself), less what the
agent started (the target, its services: they are the measured ones).
Other nodes' raylets on the same machine (a lab) are not touched.

Affinity is per thread on Linux (sched_setaffinity acts on one task), so
every thread of each process is moved; threads and processes started
later inherit the mask of the thread that started them. When the target
stops, each is moved back, and those started meanwhile get their
process's CPUs (a new process, the raylet's)."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field

import psutil


def _raylet(me: psutil.Process) -> psutil.Process | None:
    try:
        return next((p for p in me.parents() if p.name().startswith("raylet")), None)
    except psutil.Error:
        return None


def ray_processes() -> list[psutil.Process]:
    """This node's Ray processes (the module's note); [] outside Ray."""
    me = psutil.Process()
    raylet = _raylet(me)
    if raylet is None:
        return []
    try:
        ours = {p.pid for p in me.children(recursive=True)}
        return [p for p in [raylet, *raylet.children(recursive=True)] if p.pid not in ours]
    except psutil.Error:
        return []


def _threads(pid: int) -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


@dataclass
class KeptOff:
    """Ray's threads moved to `cpus`; `restore()` moves each back."""

    cpus: list[int]
    saved: dict[int, set[int]] = field(default_factory=dict)  # thread -> its CPUs before

    def restore(self) -> None:
        for tid, cpus in self.saved.items():
            with contextlib.suppress(OSError):  # the thread has ended
                os.sched_setaffinity(tid, cpus)
        # Threads and processes started meanwhile inherited the kept CPUs:
        # they get their process's first thread's CPUs back (a process
        # started meanwhile, the raylet's).
        procs = ray_processes()
        fallback = self.saved.get(procs[0].pid) if procs else None
        for p in procs:
            back = self.saved.get(p.pid, fallback)
            for tid in _threads(p.pid):
                with contextlib.suppress(OSError):
                    if back is not None and tid not in self.saved and os.sched_getaffinity(tid) == set(self.cpus):
                        os.sched_setaffinity(tid, back)
        self.saved.clear()


def keep_off(free: list[int]) -> KeptOff | None:
    """Ray's threads moved to `free`, the node's CPUs that neither the
    target nor its services use (its layout's rest); None where there are
    none to spare (Ray then shares the target's)."""
    if not free:
        return None
    kept = KeptOff(sorted(free))
    for p in ray_processes():
        for tid in _threads(p.pid):
            try:
                kept.saved[tid] = os.sched_getaffinity(tid)
                os.sched_setaffinity(tid, free)
            except OSError:
                kept.saved.pop(tid, None)  # ended meanwhile
    return kept


@dataclass
class Spent:
    """The CPU seconds of Ray's processes from `begin()` to `cores()`."""

    began_s: float = 0.0
    times: dict[int, float] = field(default_factory=dict)

    def begin(self) -> None:
        self.began_s, self.times = time.monotonic(), _cpu_s()

    def cores(self) -> float | None:
        """Cores' worth over the span; None where no Ray process was found."""
        now = _cpu_s()
        if not now:
            return None
        wall = max(time.monotonic() - self.began_s, 1e-9)
        # A process started meanwhile counts from its own start.
        return sum(s - self.times.get(pid, 0.0) for pid, s in now.items()) / wall


def _cpu_s() -> dict[int, float]:
    out = {}
    for p in ray_processes():
        try:
            t = p.cpu_times()
            out[p.pid] = float(t.user + t.system)
        except psutil.Error:
            pass
    return out
