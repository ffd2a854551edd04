"""A plan's [thresholds] judged point by point: over each point's measured
runs, the geometric mean of the latency figure (the report's, see
analysis.stats.geometric), the mean goodput, and the share (or
count) of failed requests. A failing point (over 1% failed requests) is
judged like any other: a threshold on errors is what catches it."""

from __future__ import annotations

from dataclasses import dataclass

from corebench.analysis.finding import Figure, Finding
from corebench.analysis.points import PointStats
from corebench.analysis.stats import geometric
from corebench.plan.thresholds import Threshold


@dataclass(frozen=True)
class Judged:
    threshold: Threshold
    point: PointStats
    value: float
    ok: bool


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
            out.append(Judged(t, p, value, t.passes(value)))
    return out


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
        figures = (Figure("points", len(mine), "count"), Figure("points failing", len(bad), "count"))
        out.append(Finding("threshold", text, subject=t.text, figures=figures, outcome="fail" if bad else "pass"))
    return out
