"""The monitor stage: per-core utilisation of the machine, the target's CPU
and memory (its whole process tree), the generator's own CPU and the
context switches, sampled several times a second during a run."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import psutil

INTERVAL_S = 0.2
# A shorter tail has too few clock ticks (10 ms each) to say anything.
MIN_TAIL_S = 0.05
# A generator using this share of its cores' time was the limit (client-bound).
CLIENT_BOUND_SHARE = 0.9
_CORE_FIELDS = ("user", "system", "iowait", "softirq", "idle", "steal")
# A run that lost this many cores' worth to the hypervisor (steal time: the
# VM's vCPUs were runnable but not run) measured less than the machine gives.
STEAL_NOTABLE_CORES = 0.05

# (monotonic s, per-core CPU times, the target tree's _tree_times, this process's CPU s, context switches)
_Reading = tuple[float, Sequence[tuple[float, ...]], tuple[float, float, int, int], float, int]


def _tree_times(pid: int | None) -> tuple[float, float, int, int]:
    """(user s, system s, rss bytes, context switches) of a process and its children."""
    if pid is None:
        return 0.0, 0.0, 0, 0
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0, 0.0, 0, 0
    user = system = 0.0
    rss = ctx = 0
    for p in procs:
        try:
            with p.oneshot():
                t = p.cpu_times()
                user += t.user + t.children_user
                system += t.system + t.children_system
                rss += p.memory_info().rss
                c = p.num_ctx_switches()
                ctx += c.voluntary + c.involuntary
        except psutil.Error:
            continue  # a worker that exited between listing and reading
    return user, system, rss, ctx


@dataclass
class Sample:
    t_s: float
    # Per core: shares of the interval in user, system, iowait, softirq, idle, steal.
    cores: list[dict[str, float]]
    target_cpu: float  # cores' worth used by the target over the interval
    target_rss_bytes: int
    generator_cpu: float
    ctx_switches_per_s: float
    # Cores' worth of time the hypervisor took from this VM over the interval.
    steal_cpu: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return self.__dict__


@dataclass
class Monitor:
    target_pid: int | None
    generator_cores: int
    samples: list[Sample] = field(default_factory=list)

    def __enter__(self) -> Monitor:
        self._stop = threading.Event()
        self._me = psutil.Process()
        self._thread = threading.Thread(target=self._loop, name="corebench-monitor", daemon=True)
        self._start = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _read(self) -> _Reading:
        me = self._me.cpu_times()
        return (
            time.monotonic(),
            psutil.cpu_times(percpu=True),
            _tree_times(self.target_pid),
            me.user + me.system,
            psutil.cpu_stats().ctx_switches,
        )

    def _loop(self) -> None:
        prev = self._read()
        while not self._stop.wait(INTERVAL_S):
            cur = self._read()
            self.samples.append(self._sample(prev, cur))
            prev = cur
        # The part of the run after the last full interval: a run shorter
        # than one interval still gets a sample.
        cur = self._read()
        if cur[0] - prev[0] >= MIN_TAIL_S:
            self.samples.append(self._sample(prev, cur))

    def _sample(self, a: _Reading, b: _Reading) -> Sample:
        dt = max(b[0] - a[0], 1e-6)
        cores = []
        # Not strict: a CPU taken offline (or brought online) between two reads changes the list's length.
        for x, y in zip(a[1], b[1], strict=False):
            total = max(sum(y) - sum(x), 1e-9)
            cores.append({f: max(0.0, getattr(y, f, 0.0) - getattr(x, f, 0.0)) / total for f in _CORE_FIELDS})
        (tu0, ts0, _, _), (tu1, ts1, rss, _) = a[2], b[2]
        return Sample(
            t_s=round(b[0] - self._start, 3),
            cores=cores,
            target_cpu=max(0.0, (tu1 + ts1) - (tu0 + ts0)) / dt,
            target_rss_bytes=rss,
            generator_cpu=max(0.0, b[3] - a[3]) / dt,
            ctx_switches_per_s=(b[4] - a[4]) / dt,
            steal_cpu=sum(
                max(0.0, getattr(y, "steal", 0.0) - getattr(x, "steal", 0.0)) for x, y in zip(a[1], b[1], strict=False)
            )
            / dt,
        )

    def summary(self, busy_poll: bool = False) -> dict[str, Any]:
        """Means over the run's samples; `client_bound` when the generator
        used nearly all of its cores (not when it busy-polled: then it always does)."""
        s = self.samples
        if not s:
            return {"samples": 0, "client_bound": False}
        n = len(s)

        def mean(f: Callable[[Sample], float]) -> float:
            return sum(f(x) for x in s) / n

        cores = [{f: sum(x.cores[i][f] for x in s) / n for f in _CORE_FIELDS} for i in range(len(s[0].cores))]
        generator = mean(lambda x: x.generator_cpu)
        steal = mean(lambda x: x.steal_cpu)
        return {
            "samples": n,
            "interval_s": INTERVAL_S,
            "cores": cores,
            "target_cpu": mean(lambda x: x.target_cpu),
            "target_rss_max_bytes": max(x.target_rss_bytes for x in s),
            "generator_cpu": generator,
            "generator_cores": self.generator_cores,
            "ctx_switches_per_s": mean(lambda x: x.ctx_switches_per_s),
            "client_bound": not busy_poll and generator >= CLIENT_BOUND_SHARE * self.generator_cores,
            # Steal time (Linux /proc/stat): cores' worth, and CPU-seconds over the run.
            "steal_cpu": steal,
            "steal_s": sum(x.steal_cpu for x in s) * INTERVAL_S,
            "steal_notable": steal >= STEAL_NOTABLE_CORES,
        }
