"""Plain-language verdicts, each with its figures."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from corebench.analysis.points import FAILING_SHARE, PointStats
from corebench.analysis.stats import compare

_SLO = re.compile(r"^\s*p(\d+(?:\.\d+)?)\s*<\s*(\d+(?:\.\d+)?)\s*(us|ms|s)\s*$")
_SCALE_US = {"us": 1, "ms": 1000, "s": 1_000_000}


@dataclass(frozen=True)
class Slo:
    percentile: float
    limit_us: float

    def __str__(self) -> str:
        return f"p{self.percentile:g} < {self.limit_us / 1000:g} ms"


def parse_slo(text: str) -> Slo:
    m = _SLO.match(text)
    if not m or float(m.group(1)) not in (50.0, 99.0):
        raise ValueError(f"{text!r} is not a latency target: write p99<200ms or p50<20ms")
    return Slo(float(m.group(1)), float(m.group(2)) * _SCALE_US[m.group(3)])


def _tail(p: PointStats, percentile: float) -> float:
    return (p.p99_us if percentile == 99.0 else p.p50_us).median


def cost_per_million(p: PointStats, price_per_hour: float) -> float:
    """Price of an hour over the requests an hour serves, per million."""
    if not p.throughput.mean > 0:
        return math.inf
    return price_per_hour / (p.throughput.mean * 3600) * 1e6


def price_of(p: PointStats, prices: dict[str, dict[str, float]]) -> float | None:
    for factor, by_level in prices.items():
        if factor in p.levels and str(p.levels[factor]) in by_level:
            return by_level[str(p.levels[factor])]
    return None


def verdicts(
    points: list[PointStats],
    prices: dict[str, dict[str, float]] | None = None,
    slo: Slo | None = None,
    factors: dict[str, list[Any]] | None = None,
) -> list[str]:
    measured = [p for p in points if p.measured and not math.isnan(p.throughput.mean) and p.throughput.mean > 0]
    ok = [p for p in measured if not p.failing]
    failing = [p for p in measured if p.failing]
    out = []
    if failing:
        worst = max(failing, key=lambda p: p.error_share)
        out.append(
            f"Failing: {len(failing)} point(s) ({', '.join(p.label() for p in failing[:3])}"
            f"{', ...' if len(failing) > 3 else ''}) answered more than {FAILING_SHARE:.0%} of requests with an "
            f"error or an unsuccessful status (worst: {worst.label()}, {worst.error_share:.1%}); they are left out "
            "of every verdict below, and their failures were never counted as throughput."
        )
    if not ok:
        return [*out, "No point has a successful measured run without failures: nothing to conclude."]
    out += _core_steps(ok) + _factor_effects(ok, factors or {})
    fast = max(ok, key=lambda p: p.throughput.mean)
    out.append(
        f"Best throughput: {fast.label()} at {fast.throughput.mean:,.0f} req/s "
        f"(95% CI {fast.throughput.ci_low:,.0f}–{fast.throughput.ci_high:,.0f})."
    )
    tail = min(ok, key=lambda p: p.p99_us.median)
    out.append(f"Best tail latency: {tail.label()} with p99 {tail.p99_us.median / 1000:.2f} ms.")
    steady = min(ok, key=lambda p: p.throughput.cv if not math.isnan(p.throughput.cv) else math.inf)
    out.append(f"Least variable: {steady.label()} (coefficient of variation {steady.throughput.cv * 100:.1f}%).")
    if steady is not fast and not math.isnan(steady.throughput.cv) and fast.throughput.cv > 0:
        calmer = (1 - steady.throughput.cv / fast.throughput.cv) * 100
        cmp = compare(steady.rps, fast.rps)
        if cmp.significant:
            out.append(
                f"Trade-off: {fast.label()} is {cmp.relative * 100:.0f}% faster on average; "
                f"{steady.label()} is {calmer:.0f}% less variable."
            )
        else:
            out.append(
                f"{steady.label()} matches the best throughput ({cmp.words()}) and is {calmer:.0f}% less variable."
            )
    out += _costs(ok, prices or {}, slo)
    shared = sorted({p.label() for p in ok if p.shared})
    if shared:
        out.append(
            f"Not shown here: at {len(shared)} point(s) ({', '.join(shared[:3])}{', ...' if len(shared) > 3 else ''}) "
            "the generator had no core of its own and shared the target's: those figures understate the server. "
            "Measure them on a machine with cores to spare, or with the load from other machines "
            "(a [cluster] of load agents in the plan)."
        )
    return out


def _core_steps(points: list[PointStats]) -> list[str]:
    """The gain of each step in CPUs, at each CPU level's best point."""
    if not all("cpus" in p.levels for p in points):
        return []
    best: dict[float, PointStats] = {}
    for p in points:
        c = float(p.levels["cpus"])
        if c not in best or p.throughput.mean > best[c].throughput.mean:
            best[c] = p
    levels = sorted(best)
    out = []
    for lo, hi in zip(levels, levels[1:], strict=False):
        a, b = best[lo], best[hi]
        cmp = compare(a.rps, b.rps)
        ideal = hi / lo
        out.append(
            f"From {lo:g} to {hi:g} CPUs: {cmp.words()}; ideal scaling would give {(ideal - 1) * 100:.0f}% more "
            f"({a.throughput.mean:,.0f} → {b.throughput.mean:,.0f} req/s at their best points)."
        )
    return out


def _change(rel: float) -> str:
    return f"{1 + rel:.1f}×" if rel > 1 else f"{rel * 100:+.1f}%"


def _factor_effects(points: list[PointStats], factors: dict[str, list[Any]]) -> list[str]:
    """Each level of each factor (cpus aside) against the factor's first
    level, configuration by configuration (the other factors held equal):
    in how many is it significantly higher, lower, or no different."""
    import json
    import statistics

    names = [n for n in points[0].levels if n != "cpus"]
    out = []
    for name in names:
        seen = list(dict.fromkeys(p.levels[name] for p in points))
        levels = [lv for lv in factors.get(name, []) if lv in seen] or seen
        if len(levels) < 2:
            continue

        def rest(p: PointStats, name: str = name) -> str:
            return json.dumps({k: v for k, v in p.levels.items() if k != name}, sort_keys=True)

        by_level = {lv: {rest(p): p for p in points if p.levels[name] == lv} for lv in levels}
        base = by_level[levels[0]]
        for lv in levels[1:]:
            higher = lower = same = 0
            changes = []
            for key, b in by_level[lv].items():
                a = base.get(key)
                if a is None or len(a.measured) < 2 or len(b.measured) < 2:
                    continue
                c = compare(a.rps, b.rps)
                changes.append(c.relative)
                if not c.significant:
                    same += 1
                elif c.relative > 0:
                    higher += 1
                else:
                    lower += 1
            total = higher + lower + same
            if total:
                out.append(
                    f"{name}={lv} against {name}={levels[0]}: throughput significantly higher in {higher}, lower in "
                    f"{lower}, no significant difference in {same} of {total} configurations "
                    f"(median change {_change(statistics.median(changes))}; Welch's t-test, α = 0.05)."
                )
    return out


def _costs(points: list[PointStats], prices: dict[str, dict[str, float]], slo: Slo | None) -> list[str]:
    all_priced = [(p, price_of(p, prices)) for p in points]
    priced = [(p, c) for p, c in all_priced if c is not None and p.throughput.mean > 0]
    if not priced:
        return []
    cheapest = min(priced, key=lambda pc: cost_per_million(*pc))
    out = [f"Cheapest per request: {cheapest[0].label()} at ${cost_per_million(*cheapest):.4g} per million requests."]
    if slo is not None:
        meeting = [(p, c) for p, c in priced if _tail(p, slo.percentile) < slo.limit_us]
        if meeting:
            p, c = min(meeting, key=lambda pc: cost_per_million(*pc))
            out.append(f"Cheapest meeting {slo}: {p.label()} at ${cost_per_million(p, c):.4g} per million requests.")
        else:
            out.append(f"No configuration meets {slo}.")
    return out
