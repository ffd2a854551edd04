"""The CPU baseline's speedup (hackbench at each cpus level: fixed work, so
its speedup is the ratio of its times, the fewest CPUs' over each level's;
Jain 1991, The Art of Computer Systems Performance Analysis), and the
server's beside it."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from corebench.analysis.scaling import ScalingRow
from corebench.store import Baseline


@dataclass(frozen=True)
class BaselineRow:
    cpus: float
    median_s: float | None  # hackbench's median wall time at this level
    runs: int
    speedup: float | None  # the fewest CPUs' median time over this level's
    ideal: float  # cpus over the fewest CPUs
    error: str | None


def rows(found: Baseline | None) -> list[BaselineRow]:
    """The stored baseline's levels with a CPU limit, fewest CPUs first."""
    if found is None:
        return []
    levels = sorted(((lv.cpus, lv) for lv in found.levels if lv.cpus is not None), key=lambda c_lv: c_lv[0])
    if not levels:
        return []
    medians = [statistics.median(lv.seconds) if lv.seconds else None for _, lv in levels]
    low, t_low = levels[0][0], medians[0]
    return [
        BaselineRow(
            cpus=cpus,
            median_s=t,
            runs=len(lv.seconds),
            speedup=t_low / t if t_low and t else None,
            ideal=cpus / low,
            error=lv.error,
        )
        for (cpus, lv), t in zip(levels, medians, strict=True)
    ]


def server_speedup(scaling: list[ScalingRow], cpus: float) -> float | None:
    """The server's point at `cpus` over its point at the fewest CPUs, at
    the first combination of the other factors (matched load) whose rate
    the CPUs set (not users' think time: its rows have no speedup)."""
    scaled = [r for r in scaling if r.speedup == r.speedup]
    if not scaled:
        return None
    first = [r for r in scaled if r.at == scaled[0].at]
    at = next((r for r in first if r.cores == cpus), None)
    return at.throughput / first[0].throughput if at and first[0].throughput > 0 else None


def sentence(found: Baseline | None, scaling: list[ScalingRow]) -> str | None:
    """One line: the baseline's speedup at each level, the server's beside it."""
    table = rows(found)
    if len(table) < 2 or found is None:
        return None
    low = table[0]
    parts = []
    for r in table[1:]:
        if r.speedup is None:
            parts.append(f"cpus={r.cpus:g}: not measured ({r.error or low.error or 'no time'})")
            continue
        said = f"{r.speedup:.2f}x at cpus={r.cpus:g} (ideal {r.ideal:.2f}x)"
        server = server_speedup(scaling, r.cpus)
        if server is not None:
            # Means at matched load: the comparison between cpus levels says how sure they are.
            at = f" at {scaling[0].at}" if scaling[0].at else ""
            said += f", the server {server:.2f}x{at} (means; {server / r.speedup:.0%} of the baseline's)"
        parts.append(said)
    runs = min((r.runs for r in table if r.runs), default=0)
    return (
        f"CPU baseline ({' '.join(found.argv)}, median of {runs} run(s) per level, speedup over "
        f"cpus={low.cpus:g}): " + "; ".join(parts) + "."
    )
