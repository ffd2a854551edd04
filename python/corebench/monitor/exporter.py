"""A host corebench does not control, measured through the field's
standard exporter: Prometheus node_exporter's /metrics, scraped during
each run. Per-core CPU (user, system, iowait, softirq, idle, steal), the
block devices' and network interfaces' bytes, and the memory available.

Its counters are cumulative (node_exporter reads /proc/stat and
/proc/diskstats as the local monitor does), so each interval's figures
are differences of two scrapes over the time between them. A counter that
goes back (the exporter or the host restarted) ends that interval; it is
counted, never read as a negative rate. A scrape that fails or takes too
long is counted with its reason, and a run with fewer than two good
scrapes has no figures from the host, said as such: never a silent zero.

The host's CPU is everything on it (the target, its services, the
exporter, any other process): with a server on a host of its own, the
target's service demand D = U / X (Denning & Buzen 1978) read from it is
an upper bound of the target's own."""

from __future__ import annotations

import http.client
import platform
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from corebench.monitor.sampler import STEAL_NOTABLE_CORES
from corebench.store import CoreTimes, MonitorSummary

# Between scrapes: node_exporter's CPU counters tick in 10 ms (USER_HZ),
# so a second keeps each core's share within about 1%.
INTERVAL_S = 1.0
# A scrape takes milliseconds; one slower than this is counted as failed,
# and a run's end (or Ctrl-C) waits for at most one more.
TIMEOUT_S = 0.8
MAX_BYTES = 16 * 1024 * 1024  # a node_exporter page is tens of kB; more is not one
# The modes of node_cpu_seconds_total that are work; iowait is idle time
# with a disk request out, steal the hypervisor's.
BUSY_MODES = ("user", "nice", "system", "irq", "softirq")
# A counter that goes back by more than this many seconds was reset.
BACKWARDS_S = 0.05
# Interfaces and block devices whose bytes are another device's too
# (loopback, bridges, veth pairs, tunnels; device-mapper and md over
# disks, partitions of a counted disk are not listed by node_exporter).
_VIRTUAL_NET = re.compile(r"^(lo|veth.*|br-.*|br\d+|docker\d*|virbr.*|cni\d*|flannel.*|tun\d+|tap\d+|vxlan.*)$")
_VIRTUAL_DISK = re.compile(r"^(dm-\d+|md\d+|loop\d+|ram\d+|zram\d+)$")


class ExporterError(Exception):
    """A scrape that gave no usable page."""


@dataclass(frozen=True)
class Scrape:
    t_s: float  # this machine's monotonic clock when the page arrived
    cpu: dict[int, dict[str, float]]  # core -> mode -> seconds
    disk_read_bytes: float = 0.0
    disk_written_bytes: float = 0.0
    net_rx_bytes: float = 0.0
    net_tx_bytes: float = 0.0
    memory_available_bytes: float | None = None
    nodename: str | None = None  # node_uname_info's, where the uname collector runs


def parse(text: str, t_s: float) -> Scrape:
    """The figures corebench reads from a node_exporter page."""
    cpu: dict[int, dict[str, float]] = {}
    sums = {"read": 0.0, "written": 0.0, "rx": 0.0, "tx": 0.0}
    memory = None
    nodename = None
    try:
        families = list(text_string_to_metric_families(text))
    except ValueError as e:
        raise ExporterError(f"not a Prometheus text page: {e}") from None
    for family in families:
        for s in family.samples:
            name, labels, value = s.name, s.labels, float(s.value)
            if name == "node_cpu_seconds_total" and labels.get("cpu", "").isdigit():
                cpu.setdefault(int(labels["cpu"]), {})[labels.get("mode", "")] = value
            elif name in ("node_disk_read_bytes_total", "node_disk_written_bytes_total"):
                if not _VIRTUAL_DISK.match(labels.get("device", "")):
                    sums["read" if "read" in name else "written"] += value
            elif name in ("node_network_receive_bytes_total", "node_network_transmit_bytes_total"):
                if not _VIRTUAL_NET.match(labels.get("device", "")):
                    sums["rx" if "receive" in name else "tx"] += value
            elif name == "node_uname_info":
                nodename = labels.get("nodename")
            elif name == "node_memory_MemAvailable_bytes":
                memory = value
    if not cpu:
        raise ExporterError("the page has no node_cpu_seconds_total: is it node_exporter with its cpu collector?")
    return Scrape(t_s, cpu, sums["read"], sums["written"], sums["rx"], sums["tx"], memory, nodename)


def fetch(url: str, timeout_s: float = TIMEOUT_S) -> str:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:  # noqa: S310 (the plan's http URL)
            body: bytes = r.read(MAX_BYTES + 1)
            announced = r.headers.get("Content-Length")
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as e:
        raise ExporterError(f"{url}: {getattr(e, 'reason', None) or type(e).__name__ + ' ' + str(e)}") from None
    if announced is not None and announced.isdigit() and len(body) < int(announced):
        raise ExporterError(f"{url}: the page was cut off ({len(body):,} of {int(announced):,} bytes)")
    if len(body) > MAX_BYTES:
        raise ExporterError(f"{url}: a page over {MAX_BYTES // 1024 // 1024} MiB is not node_exporter's")
    return body.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class Interval:
    """Two consecutive good scrapes: each core's shares, and rates."""

    dt_s: float
    cpus: tuple[int, ...]  # the CPUs' numbers, in the order of `cores`
    cores: list[CoreTimes]
    busy_cores: float  # cores' worth in BUSY_MODES
    steal_cores: float
    disk_read_bps: float
    disk_write_bps: float
    net_rx_bps: float
    net_tx_bps: float


def between(a: Scrape, b: Scrape) -> Interval | None:
    """None where a counter went back (a restart), a scrape lacks a mode
    the other has, or the CPUs changed. Each core's shares are of its own
    counters' time, and the busy cores' worth is the sum of those shares:
    when a scrape arrives late, both ends of its interval move together,
    where the arrival times would not."""
    dt = b.t_s - a.t_s
    if dt <= 0 or set(a.cpu) != set(b.cpu):
        return None
    cores, busy, steal = [], 0.0, 0.0
    for c in sorted(b.cpu):
        x, y = a.cpu[c], b.cpu[c]
        if set(x) != set(y):
            return None
        d = {m: y[m] - x[m] for m in y}
        if any(v < -BACKWARDS_S for v in d.values()):
            return None
        # iowait may go back a little (proc(5)): read as none.
        d = {m: max(0.0, v) for m, v in d.items()}
        total = sum(d.values())
        if total <= 0:
            return None
        share = {m: v / total for m, v in d.items()}
        cores.append(
            CoreTimes(
                user=share.get("user", 0.0) + share.get("nice", 0.0),
                system=share.get("system", 0.0) + share.get("irq", 0.0),
                iowait=share.get("iowait", 0.0),
                softirq=share.get("softirq", 0.0),
                idle=share.get("idle", 0.0),
                steal=share.get("steal", 0.0),
            )
        )
        busy += sum(share.get(m, 0.0) for m in BUSY_MODES)
        steal += share.get("steal", 0.0)
    rates = [
        b.disk_read_bytes - a.disk_read_bytes,
        b.disk_written_bytes - a.disk_written_bytes,
        b.net_rx_bytes - a.net_rx_bytes,
        b.net_tx_bytes - a.net_tx_bytes,
    ]
    if any(r < 0 for r in rates):
        return None
    return Interval(dt, tuple(sorted(b.cpu)), cores, busy, steal, *(r / dt for r in rates))


@dataclass
class Exporter:
    """Scrapes `url` every `interval_s` from entry to exit, in a thread."""

    url: str
    interval_s: float = INTERVAL_S
    scrapes: list[Scrape] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __enter__(self) -> Exporter:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="corebench-exporter", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._scrape(TIMEOUT_S / 2)  # the run's end, so the last interval reaches it

    def _scrape(self, timeout_s: float = TIMEOUT_S) -> None:
        try:
            text = fetch(self.url, timeout_s)
            self.scrapes.append(parse(text, time.monotonic()))
        except ExporterError as e:
            self.errors.append(str(e))

    def _loop(self) -> None:
        self._scrape()
        while not self._stop.wait(self.interval_s):
            self._scrape()

    def intervals(self) -> tuple[list[Interval], int]:
        """The good intervals, and how many a counter going back cut out."""
        out, resets = [], 0
        for a, b in zip(self.scrapes, self.scrapes[1:], strict=False):
            i = between(a, b)
            if i is None:
                resets += 1
            else:
                out.append(i)
        return out, resets

    def summary(self, local: MonitorSummary) -> MonitorSummary:
        """The run's monitor summary with the host's figures in place of this
        machine's cores, and the host's CPU as the target's (the module's note);
        the generator's own figures stay this machine's."""
        done, resets = self.intervals()
        if done:
            # Intervals over the same CPUs only: one taken offline changes the set.
            sets = [i.cpus for i in done]
            common = max(set(sets), key=sets.count)
            resets += len(done) - sets.count(common)
            done = [i for i in done if i.cpus == common]
        nodenames = {s.nodename for s in self.scrapes if s.nodename}
        about = {
            "source": f"node_exporter {self.url}",
            "scrapes": len(self.scrapes),
            "scrape_errors": len(self.errors),
            "scrape_error": self.errors[0] if self.errors else None,
            "counter_resets": resets,
            "exporter_host": next(iter(nodenames), None),
            "exporter_local": platform.node() in nodenames if nodenames else None,
        }
        if not done:
            # No figures from the host: none of this machine's stand in for them.
            none: dict[str, object] = {
                "cores": [],
                "target_cpu": None,
                "steal_cpu": None,
                "steal_s": 0.0,
                "steal_notable": False,
            }
            return local.model_copy(update={**about, **none})
        span = sum(i.dt_s for i in done)

        def mean(values: Iterable[float]) -> float:
            return sum(v * i.dt_s for v, i in zip(values, done, strict=True)) / span

        n = len(done[0].cores)
        cores = [
            CoreTimes(**{f: mean(getattr(i.cores[c], f) for i in done) for f in CoreTimes.model_fields})
            for c in range(n)
        ]
        busy = mean(i.busy_cores for i in done)
        steal = mean(i.steal_cores for i in done)
        memory = [s.memory_available_bytes for s in self.scrapes if s.memory_available_bytes is not None]
        return local.model_copy(
            update={
                **about,
                "cores": cores,
                "host_cpu": busy,
                "target_cpu": busy,
                "target_user_cpu": None,
                "target_system_cpu": None,
                "target_system_share": None,
                "disk_devices": [],
                "disk_busy": None,
                "disk_read_bps": mean(i.disk_read_bps for i in done),
                "disk_write_bps": mean(i.disk_write_bps for i in done),
                "net_rx_bps": mean(i.net_rx_bps for i in done),
                "net_tx_bps": mean(i.net_tx_bps for i in done),
                "memory_available_min_bytes": min(memory) if memory else None,
                "steal_cpu": steal,
                "steal_s": steal * span,
                "steal_notable": steal >= STEAL_NOTABLE_CORES,
            }
        )
