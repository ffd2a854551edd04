"""The monitor's sampler: per-core utilisation of the machine, the target's CPU
(user and system apart), memory and storage I/O (its whole process tree),
the I/O of the block devices it writes to (a filesystem image's loop
device), the generator's own CPU and the context switches, sampled several
times a second during a run. The same for each service apart; where the
target and each service have a measuring cgroup (cgroups.py), their CPU
comes from it, and their I/O wait and block I/O are added."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import psutil

from corebench.monitor import cgroups
from corebench.result import CLIENT_BOUND_SHARE
from corebench.store import MonitorSummary
from corebench.system.check import CLOCK_SOURCE, ClockReader

INTERVAL_S = 0.2
# A shorter tail has too few clock ticks (10 ms each) to say anything.
MIN_TAIL_S = 0.05
_CORE_FIELDS = ("user", "system", "iowait", "softirq", "idle", "steal")
# A run that lost this many cores' worth to the hypervisor (steal time: the
# VM's vCPUs were runnable but not run) measured less than the machine gives.
STEAL_NOTABLE_CORES = 0.05

SECTOR_BYTES = 512  # /proc/diskstats counts 512-byte sectors whatever the device's own


class Tree(NamedTuple):
    """A process and its children, summed: CPU seconds, memory, context
    switches and the bytes they made the storage read and write; from its
    cgroup, where it has one: seconds waiting on I/O and block I/O bytes."""

    user_s: float = 0.0
    system_s: float = 0.0
    rss_bytes: int = 0
    ctx: int = 0
    read_bytes: int = 0
    write_bytes: int = 0
    io_wait_s: float | None = None
    dev_read_bytes: int | None = None
    dev_write_bytes: int | None = None


class Disk(NamedTuple):
    """Block devices, summed (/proc/diskstats): bytes read and written, and
    the milliseconds each spent with I/O in flight."""

    read_bytes: int = 0
    write_bytes: int = 0
    busy_ms: int = 0


# (monotonic s, per-core CPU times, the target's tree, this process's CPU s,
# context switches, the devices, each service's tree, the target CPUs' clock)
_Reading = tuple[float, Sequence[tuple[float, ...]], Tree, float, int, Disk, dict[str, Tree], float | None]


def _group_times(pid: int | None, groups: Sequence[str], devices: set[str]) -> Tree:
    tree = _tree_times(pid)
    if not groups or pid is None:
        return tree
    c = cgroups.read(groups, devices)
    if c.user_s is not None and c.system_s is not None:
        # Exact: every process that ran in the group, not only those alive at each sample.
        tree = tree._replace(user_s=c.user_s, system_s=c.system_s)
    return tree._replace(io_wait_s=c.io_wait_s, dev_read_bytes=c.read_bytes, dev_write_bytes=c.write_bytes)


def _delta(a: float | None, b: float | None, dt: float) -> float | None:
    return None if a is None or b is None else max(0.0, b - a) / dt


def _tree_times(pid: int | None) -> Tree:
    if pid is None:
        return Tree()
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return Tree()
    user = system = 0.0
    rss = ctx = read = write = 0
    for p in procs:
        try:
            with p.oneshot():
                t = p.cpu_times()
                user += t.user + t.children_user
                system += t.system + t.children_system
                rss += p.memory_info().rss
                c = p.num_ctx_switches()
                ctx += c.voluntary + c.involuntary
                io = p.io_counters()
                read += io.read_bytes
                write += io.write_bytes
        except (psutil.Error, AttributeError):
            continue  # a worker that exited between listing and reading
    return Tree(user, system, rss, ctx, read, write)


def _tree_rates(a: Tree, b: Tree, dt: float) -> dict[str, float | None]:
    user, system = max(0.0, b.user_s - a.user_s) / dt, max(0.0, b.system_s - a.system_s) / dt
    return {
        "cpu": user + system,
        "user_cpu": user,
        "system_cpu": system,
        "rss_bytes": float(b.rss_bytes),
        "read_bps": max(0, b.read_bytes - a.read_bytes) / dt,
        "write_bps": max(0, b.write_bytes - a.write_bytes) / dt,
        "io_wait": _delta(a.io_wait_s, b.io_wait_s, dt),
        "dev_read_bps": _delta(a.dev_read_bytes, b.dev_read_bytes, dt),
        "dev_write_bps": _delta(a.dev_write_bytes, b.dev_write_bytes, dt),
    }


def disk(devices: Sequence[str], path: str = "/proc/diskstats") -> Disk:
    """The devices' counters (Documentation/admin-guide/iostats.rst: fields
    6 and 10 are sectors read and written, 13 the time spent doing I/O)."""
    if not devices:
        return Disk()
    read = write = busy = 0
    try:
        with open(path) as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 13 and fields[2] in devices:
                    read += int(fields[5]) * SECTOR_BYTES
                    write += int(fields[9]) * SECTOR_BYTES
                    busy += int(fields[12])
    except OSError:
        return Disk()
    return Disk(read, write, busy)


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
    # The target's CPU in user and in kernel code, cores' worth.
    target_user_cpu: float = 0.0
    target_system_cpu: float = 0.0
    # What the target's processes made the storage read and write.
    target_read_bps: float = 0.0
    target_write_bps: float = 0.0
    # The monitored devices: bytes per second, and the share of the interval
    # with I/O in flight (summed over the devices).
    disk_read_bps: float = 0.0
    disk_write_bps: float = 0.0
    disk_busy: float = 0.0
    # Each service (a database): cpu, user_cpu, system_cpu (cores' worth),
    # rss_bytes, read_bps, write_bps, and from its cgroup io_wait,
    # dev_read_bps, dev_write_bps (None without one).
    services: dict[str, dict[str, float | None]] = field(default_factory=dict)
    # From the target's cgroup: the share of the interval in which at least
    # one of its tasks waited on I/O, and its block I/O (None without one).
    target_io_wait: float | None = None
    target_dev_read_bps: float | None = None
    target_dev_write_bps: float | None = None
    # The target's CPUs' mean clock at the end of the interval (system.check);
    # None where the machine does not give it.
    clock_mhz: float | None = None

    def to_json(self) -> dict[str, Any]:
        return self.__dict__


@dataclass
class Monitor:
    target_pid: int | None
    generator_cores: int
    # Block devices to watch by their /proc/diskstats name (e.g. loop0).
    devices: list[str] = field(default_factory=list)
    # The target's services by name: the pid of each one's process tree.
    groups: dict[str, int] = field(default_factory=dict)
    # Measuring cgroups by process group: "target", and each service's name.
    accounting: dict[str, list[str]] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)
    # The CPUs the target runs on, whose clock is read (all, when not placed).
    target_cpus: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._clock = ClockReader.of(self.target_cpus or sorted(psutil.Process().cpu_affinity() or []))

    def __enter__(self) -> Monitor:
        self._devnums = cgroups.device_numbers(self.devices)
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
        me, groups = self._me.cpu_times(), self.groups.items()
        return (
            time.monotonic(),
            psutil.cpu_times(percpu=True),
            _group_times(self.target_pid, self.accounting.get("target", []), self._devnums),
            me.user + me.system,
            psutil.cpu_stats().ctx_switches,
            disk(self.devices),
            {name: _group_times(pid, self.accounting.get(name, []), self._devnums) for name, pid in groups},
            self._clock.mhz(),
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
        t0, t1, d0, d1 = a[2], b[2], a[5], b[5]
        user, system = max(0.0, t1.user_s - t0.user_s) / dt, max(0.0, t1.system_s - t0.system_s) / dt
        return Sample(
            t_s=round(b[0] - self._start, 3),
            cores=cores,
            target_cpu=user + system,
            target_rss_bytes=t1.rss_bytes,
            target_user_cpu=user,
            target_system_cpu=system,
            target_read_bps=max(0, t1.read_bytes - t0.read_bytes) / dt,
            target_write_bps=max(0, t1.write_bytes - t0.write_bytes) / dt,
            target_io_wait=_delta(t0.io_wait_s, t1.io_wait_s, dt),
            target_dev_read_bps=_delta(t0.dev_read_bytes, t1.dev_read_bytes, dt),
            target_dev_write_bps=_delta(t0.dev_write_bytes, t1.dev_write_bytes, dt),
            disk_read_bps=max(0, d1.read_bytes - d0.read_bytes) / dt,
            disk_write_bps=max(0, d1.write_bytes - d0.write_bytes) / dt,
            disk_busy=max(0, d1.busy_ms - d0.busy_ms) / 1000 / dt,
            services={name: _tree_rates(a[6][name], b[6][name], dt) for name in b[6]},
            generator_cpu=max(0.0, b[3] - a[3]) / dt,
            ctx_switches_per_s=(b[4] - a[4]) / dt,
            steal_cpu=sum(
                max(0.0, getattr(y, "steal", 0.0) - getattr(x, "steal", 0.0)) for x, y in zip(a[1], b[1], strict=False)
            )
            / dt,
            clock_mhz=b[7],
        )

    def summary(self, busy_poll: bool = False) -> MonitorSummary:
        """Means over the run's samples; `client_bound` when the generator
        used nearly all of its cores (not when it busy-polled: then it always does)."""
        s = self.samples
        if not s:
            return MonitorSummary(samples=0, client_bound=False)
        n = len(s)

        def mean(f: Callable[[Sample], float]) -> float:
            return sum(f(x) for x in s) / n

        cores = [{f: sum(x.cores[i][f] for x in s) / n for f in _CORE_FIELDS} for i in range(len(s[0].cores))]
        generator = mean(lambda x: x.generator_cpu)
        steal = mean(lambda x: x.steal_cpu)
        user, system = mean(lambda x: x.target_user_cpu), mean(lambda x: x.target_system_cpu)
        return MonitorSummary.model_validate(
            {
                "samples": n,
                "interval_s": INTERVAL_S,
                "cores": cores,
                "target_cpu": mean(lambda x: x.target_cpu),
                "target_user_cpu": user,
                "target_system_cpu": system,
                # The kernel's share of the target's CPU (the second field report's "sys time").
                "target_system_share": system / (user + system) if user + system > 0 else None,
                "target_read_bps": mean(lambda x: x.target_read_bps),
                "target_write_bps": mean(lambda x: x.target_write_bps),
                "target_io_wait": _mean_known([x.target_io_wait for x in s]),
                "target_dev_read_bps": _mean_known([x.target_dev_read_bps for x in s]),
                "target_dev_write_bps": _mean_known([x.target_dev_write_bps for x in s]),
                "disk_devices": self.devices,
                "disk_read_bps": mean(lambda x: x.disk_read_bps),
                "disk_write_bps": mean(lambda x: x.disk_write_bps),
                "disk_busy": mean(lambda x: x.disk_busy),
                "services": {name: _service_summary([x.services[name] for x in s]) for name in self.groups},
                "target_rss_max_bytes": max(x.target_rss_bytes for x in s),
                "generator_cpu": generator,
                "generator_cores": self.generator_cores,
                "ctx_switches_per_s": mean(lambda x: x.ctx_switches_per_s),
                "client_bound": not busy_poll and generator >= CLIENT_BOUND_SHARE * self.generator_cores,
                # Steal time (Linux /proc/stat): cores' worth, and CPU-seconds over the run.
                "steal_cpu": steal,
                "steal_s": sum(x.steal_cpu for x in s) * INTERVAL_S,
                "steal_notable": steal >= STEAL_NOTABLE_CORES,
                **self.clock_summary(),
            }
        )

    def clock_summary(self) -> dict[str, object]:
        """The clock of the target's CPUs over the samples, and its governor and turbo."""
        clocks = [x.clock_mhz for x in self.samples if x.clock_mhz is not None]
        reader = self._clock
        return {
            "clock_mhz": sum(clocks) / len(clocks) if clocks else None,
            "clock_min_mhz": min(clocks, default=None),
            "clock_max_mhz": max(clocks, default=None),
            "clock": CLOCK_SOURCE if clocks else reader.why or "not measured: the clock files could not be read",
            "governor": reader.governor(),
            "turbo": reader.turbo(),
        }


def _mean_known(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _service_summary(samples: list[dict[str, float | None]]) -> dict[str, float | None]:
    out = {k: _mean_known([x[k] for x in samples]) for k in samples[0] if k != "rss_bytes"}
    out["rss_max_bytes"] = max(x["rss_bytes"] or 0 for x in samples)
    cpu = out["user_cpu"] or 0.0, out["system_cpu"] or 0.0
    out["system_share"] = cpu[1] / (cpu[0] + cpu[1]) if cpu[0] + cpu[1] > 0 else None
    return out
