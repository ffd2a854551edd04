"""A plan's [thresholds] judged point by point: over each point's measured
runs, the geometric mean of the latency figure (the report's, see
analysis.stats.geometric), the mean goodput, and the share (or
count) of failed requests. A failing point (over 1% failed requests) is
judged like any other: a threshold on errors is what catches it.

The gate passes or fails on those estimates, as k6's thresholds do, so a
pipeline's exit status does not hang on the number of runs. The finding
also says which passing points the runs show passing: the one-sided 95%
bound on the unfavourable side (Student's t over the runs, on the logs for
latency, as `analysis.slo`) within the threshold too. A pass by the
estimate alone, from three runs straddling the limit, is named as such."""

from __future__ import annotations

import math
from dataclasses import dataclass

from corebench.analysis.finding import Figure, Finding
from corebench.analysis.points import PointStats
from corebench.analysis.stats import geometric, one_sided
from corebench.plan.thresholds import Threshold


@dataclass(frozen=True)
class Judged:
    threshold: Threshold
    point: PointStats
    value: float
    ok: bool
    # The one-sided 95% bound on the unfavourable side; NaN where the runs
    # give none (one run, no spread, or a threshold on errors).
    bound: float = math.nan

    @property
    def shown(self) -> bool:
        return self.ok and not math.isnan(self.bound) and self.threshold.passes(self.bound)


def _bound(t: Threshold, p: PointStats) -> float:
    """The unfavourable one-sided 95% bound: the upper one of a latency
    (geometric, Student's t on the logs), the lower one of the goodput."""
    if t.metric == "errors":
        return math.nan
    if t.metric == "rps":
        values = list(p.run_goodput_rps)
    else:
        total = [x.latency_us.total for x in p.results()]
        values = [s.mean_us if t.metric == "mean" else float(s.at(float(t.metric[1:]))) for s in total]
    low, high = one_sided(values, log=t.metric != "rps")
    return low if t.metric == "rps" else high


def _measure(t: Threshold, p: PointStats) -> float:
    results = p.results()
    if t.metric == "rps":
        return p.goodput_rps.mean
    if t.metric == "errors":
        return p.error_share if t.share else float(sum(x.failed_requests for x in results))
    total = [x.latency_us.total for x in results]
    if t.metric == "mean":
        return _geometric([s.mean_us for s in total])
    return _geometric([s.at(float(t.metric[1:])) for s in total])


def _geometric(values: list[float]) -> float:
    """The runs' geometric mean; NaN, which fails every threshold, where a
    run's figure is 0 (a run without responses): never a silent pass."""
    return geometric(values)[0] if values and min(values) > 0 else float("nan")


def judge(thresholds: list[Threshold], points: list[PointStats]) -> list[Judged]:
    """Every threshold at every point with measured runs; a point with none fails each."""
    out = []
    for t in thresholds:
        for p in points:
            if not p.measured:
                out.append(Judged(t, p, float("nan"), False))
                continue
            value = _measure(t, p)
            out.append(Judged(t, p, value, t.passes(value), _bound(t, p)))
    return out


def _shown(t: Threshold, passing: list[Judged]) -> str:
    """Which passes the runs show, beyond the estimate."""
    if not passing or t.metric == "errors":
        return ""
    weak = [j for j in passing if not j.shown]
    if not weak:
        return f" (each also at its runs' one-sided 95% bound, {t.shown(max(passing, key=_worst).bound)} at worst)"
    named = ", ".join(
        f"{j.point.label()} ({'one run or no spread' if math.isnan(j.bound) else t.shown(j.bound) + ' at its bound'})"
        for j in weak[:5]
    )
    return (
        f" (by each point's estimate; {len(passing) - len(weak)} of {len(passing)} also at their runs' one-sided 95% "
        f"bound; not shown: {named}{', ...' if len(weak) > 5 else ''})"
    )


def _worst(j: Judged) -> float:
    return -j.bound if j.threshold.metric == "rps" else j.bound


def lines(judged: list[Judged]) -> list[Finding]:
    """One finding per threshold: how many points pass, and the ones that do not."""
    out = []
    for t in dict.fromkeys(j.threshold for j in judged):
        mine = [j for j in judged if j.threshold == t]
        bad = [j for j in mine if not j.ok]
        text = f"threshold {t.text}: {len(mine) - len(bad)} of {len(mine)} points pass"
        if bad:
            shown = ", ".join(
                f"{j.point.label()} ({t.shown(j.value) if j.point.measured else 'no measured run'})" for j in bad[:5]
            )
            text += f"; FAILED at {shown}{', ...' if len(bad) > 5 else ''}"
        text += _shown(t, [j for j in mine if j.ok])
        figures: tuple[Figure, ...] = (
            Figure("points", len(mine), "count"),
            Figure("points failing", len(bad), "count"),
        )
        if t.metric != "errors":  # a count of errors has no bound over runs here
            figures += (Figure("points shown passing", sum(j.shown for j in mine), "count"),)
        out.append(Finding("threshold", text, subject=t.text, figures=figures, outcome="fail" if bad else "pass"))
    return out
