"""Each process of the target's stack (the server itself and its services,
a database) at each point: its CPU in user and in system time, its memory
and its storage writes, and where it had a cgroup of its own the share of
the time some task of it waited on I/O (the per-group iowait: Linux PSI's
"some" time), means over the point's measured runs. The system share
(system over user + system time) is what the second field report read
from top: over 20% for a database short of buffers, under 5% once tuned."""

from __future__ import annotations

from dataclasses import dataclass

from corebench.analysis.points import PointStats, monitors_of
from corebench.store import MonitorSummary, ServiceSummary

TARGET = "target"


@dataclass(frozen=True)
class ProcessRow:
    point: str
    process: str  # "target", or a service's name
    user_cpu: float  # cores' worth
    system_cpu: float
    rss_max_bytes: float | None
    write_bps: float | None
    runs: int
    io_wait: float | None = None

    @property
    def system_share(self) -> float | None:
        total = self.user_cpu + self.system_cpu
        return self.system_cpu / total if total > 0 else None


def processes(points: list[PointStats]) -> list[ProcessRow]:
    """Rows only when some run has services: a lone target's CPU is shown already."""
    out: list[ProcessRow] = []
    for p in points:
        if p.searched:
            continue  # a search's monitor spans every step: no one rate's figures
        monitors = [m for m in monitors_of(p) if m.services]
        if not monitors:
            continue
        groups: dict[str, list[ServiceSummary]] = {TARGET: [_target(m) for m in monitors]}
        for name in monitors[0].services:
            groups[name] = [m.services[name] for m in monitors if name in m.services]
        for name, rows in groups.items():
            n = len(rows)
            out.append(
                ProcessRow(
                    point=p.label(),
                    process=name,
                    user_cpu=sum(r.user_cpu or 0.0 for r in rows) / n,
                    system_cpu=sum(r.system_cpu or 0.0 for r in rows) / n,
                    rss_max_bytes=max((r.rss_max_bytes for r in rows if r.rss_max_bytes is not None), default=None),
                    write_bps=sum(r.write_bps or 0.0 for r in rows) / n,
                    runs=n,
                    io_wait=_mean_known([r.io_wait for r in rows]),
                )
            )
    return out


def _target(m: MonitorSummary) -> ServiceSummary:
    """The target's process tree, in a service's terms."""
    return ServiceSummary(
        user_cpu=m.target_user_cpu or 0.0,
        system_cpu=m.target_system_cpu or 0.0,
        rss_max_bytes=m.target_rss_max_bytes,
        write_bps=m.target_write_bps,
        io_wait=m.target_io_wait,
    )


def _mean_known(values: list[float | None]) -> float | None:
    known = [float(v) for v in values if v is not None]
    return sum(known) / len(known) if known else None
