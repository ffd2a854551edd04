"""A latency objective (`--slo p99<=50ms`) at each load level: which
configurations are shown to meet it, shown to miss it, or not shown either
way.

A point's figure is the geometric mean of its runs' percentile (the
tables' figure, `stats.geometric`). Meeting the bound by that estimate is
not meeting it: with three runs the next three may land on the other
side. So a configuration is said to meet the objective only where the
one-sided 95% upper bound of its geometric mean lies within it, and to
miss it only where the lower bound lies beyond (a one-sided t-test of the
runs' log figure against the bound's log; Student's t on n − 1 degrees of
freedom, as `stats.geometric`); not where its latency is partly the
generator's (an upper bound of the server's), which may be the cause of
the miss. Each configuration is tested on its own,
at 95%, not adjusted over the configurations. One run, or runs whose
figures are identical (whole-microsecond percentiles can be), give no
spread, and the estimate is then given as an estimate only. The bound is
on the geometric mean of this session's runs, not a promise that each
future run meets the objective: the line counts the runs that did."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from corebench.analysis.finding import Figure, Finding, caveats
from corebench.analysis.load import at_matched_load, split
from corebench.analysis.points import PointStats
from corebench.analysis.stats import geometric, one_sided
from corebench.analysis.steps import caveat

_SLO = re.compile(r"^\s*p(\d+(?:\.\d+)?)\s*(<=?)\s*(\d+(?:\.\d+)?)\s*(us|ms|s)\s*$")
_SCALE_US = {"us": 1, "ms": 1000, "s": 1_000_000}


@dataclass(frozen=True)
class Slo:
    percentile: float
    limit_us: float
    inclusive: bool = False  # <= rather than <

    def __str__(self) -> str:
        return f"p{self.percentile:g} {'≤' if self.inclusive else '<'} {self.limit_us / 1000:g} ms"

    def met(self, value_us: float) -> bool:
        return value_us <= self.limit_us if self.inclusive else value_us < self.limit_us


def parse_slo(text: str) -> Slo:
    m = _SLO.match(text)
    if not m or float(m.group(1)) not in (50.0, 99.0):
        raise ValueError(f"{text!r} is not a latency target: write p99<=200ms or p50<20ms (p50 or p99)")
    return Slo(float(m.group(1)), float(m.group(3)) * _SCALE_US[m.group(4)], m.group(2) == "<=")


def tail(p: PointStats, percentile: float) -> float:
    """The point's figure for the objective: its runs' geometric mean."""
    return (p.p99_us if percentile == 99.0 else p.p50_us).geomean


def _runs(p: PointStats, slo: Slo) -> list[float]:
    values = [r.p99_us if slo.percentile == 99.0 else r.p50_us for r in p.measured]
    return [float(v) for v in values if v is not None and v > 0]


@dataclass(frozen=True)
class Judged:
    """One configuration against the objective."""

    point: PointStats
    slo: Slo
    value_us: float  # the geometric mean
    low_us: float  # one-sided 95% bounds of it; NaN where the runs give no spread
    high_us: float
    runs_met: int
    runs: int

    @property
    def shown(self) -> str:
        """met, missed, or "" (not shown either way)."""
        if math.isnan(self.high_us):
            return ""
        if self.slo.met(self.high_us):
            return "met"
        # A latency partly the generator's is an upper bound of the server's:
        # a miss may be the generator's, so it is not shown.
        return "missed" if not self.slo.met(self.low_us) and not self.point.limits() else ""

    @property
    def bounded_miss(self) -> bool:
        """Beyond the bound at its lower bound, but its latency is an upper bound."""
        return not math.isnan(self.low_us) and not self.slo.met(self.low_us) and bool(self.point.limits())


def judge(p: PointStats, slo: Slo) -> Judged:
    values = _runs(p, slo)
    low, high = one_sided(values, log=True)
    # The estimate from the same runs as its bounds (a run without responses has no figure).
    value = geometric(values)[0] if values else math.nan
    return Judged(p, slo, value, low, high, sum(slo.met(v) for v in values), len(values))


def shown_meeting(points: list[PointStats], slo: Slo) -> list[PointStats]:
    return [p for p in points if judge(p, slo).shown == "met"]


def _entry(j: Judged, slo: Slo, load: set[str]) -> str:
    name = split(j.point, load)[1] or "the target"
    if not j.runs:
        return f"{name} (no run with a p{slo.percentile:g}: none answered)"
    margin = (1 - j.value_us / slo.limit_us) * 100
    side = "below" if margin >= 0 else "above"
    if j.shown:
        bound = j.high_us if j.shown == "met" else j.low_us
        which = "upper" if j.shown == "met" else "lower"
        sure = f", its one-sided 95% {which} bound {bound / 1000:.2f} ms"
    elif j.bounded_miss:
        sure = (
            f", its one-sided 95% lower bound {j.low_us / 1000:.2f} ms beyond the objective, but its latency is an "
            "upper bound of the server's (partly the generator's)"
        )
    elif math.isnan(j.high_us):
        sure = ", an estimate only (" + ("one run" if j.runs < 2 else "its runs' figures identical: no spread") + ")"
    else:
        sure = f", its one-sided 95% bounds {j.low_us / 1000:.2f}–{j.high_us / 1000:.2f} ms straddle the objective"
    stalled = j.point.stalled()
    waited = (
        f"; its slowest response took {stalled[0]:.2f} s of a {stalled[1]:.2f} s run: requests waited "
        f"most of a run, which the p{slo.percentile:g} does not show"
        if stalled is not None
        else ""
    )
    objective = f"the objective's {slo.limit_us / 1000:g} ms"
    return (
        f"{name} ({j.value_us / 1000:.2f} ms, {abs(margin):.0f}% {side} {objective}{sure}; "
        f"{j.runs_met} of {j.runs} runs met it{waited})"
    )


def slo_verdicts(points: list[PointStats], slo: Slo, load: set[str]) -> list[Finding]:
    """At each load level, which configurations are shown to meet the
    objective, which are shown to miss it, and which neither (the module's
    note), each with its figure, bound and runs; prices are not needed."""
    out = []
    for at, ps in at_matched_load(points, load):
        judged = [judge(p, slo) for p in sorted(ps, key=lambda p: tail(p, slo.percentile))]
        classes = {c: [_entry(j, slo, load) for j in judged if j.shown == c] for c in ("met", "", "missed")}
        where = f" at {at}" if at else ""
        parts = [f"met by {', '.join(classes['met'])}" if classes["met"] else "shown met by no configuration"]
        if classes[""]:
            parts.append(f"not shown either way: {', '.join(classes[''])}")
        if classes["missed"]:
            parts.append(f"missed by {', '.join(classes['missed'])}")
        met, missed = len(classes["met"]), len(classes["missed"])
        outcome = (
            "met by all"
            if met == len(judged)
            else "met by some"
            if met
            else "met by none"
            if missed == len(judged)
            else "not shown"
        )
        out.append(
            Finding(
                "verdict",
                f"{slo}{where}, by the geometric mean of each point's runs and its one-sided 95% bound "
                f"(Student's t on the logs; each configuration on its own): {'; '.join(parts)}.",
                subject=f"{slo}{where}",
                figures=tuple(Figure(split(j.point, load)[1] or "the target", j.value_us / 1000, "ms") for j in judged),
                outcome=outcome,
                caveats=caveats(caveat(ps, latency=True)),
            )
        )
    return out
