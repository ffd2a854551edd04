"""Drift across rounds: did throughput change while the experiment ran?

Each run's goodput relative to its configuration's mean is regressed on the
round it ran in, with one intercept per configuration and a common slope
(an analysis of covariance with the configuration as a fixed effect:
D. C. Montgomery, *Design and Analysis of Experiments*, 8th ed., §15.3;
Jain 1991, §14 on regression with categorical predictors). The slope is the
change per round as a share of the mean; its t-test has N - k - 1 degrees
of freedom. Interleaving spreads a drift over every configuration, so their
comparison stays fair, but a drift widens every interval and says the
machine or the target changed during the experiment."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scipy import stats

ALPHA = 0.05


@dataclass(frozen=True)
class Drift:
    slope: float  # change per round, as a share of the configuration's mean
    ci_low: float
    ci_high: float
    p_value: float
    rounds: int
    runs: int

    @property
    def notable(self) -> bool:
        return self.p_value < ALPHA

    def sentence(self) -> str:
        span = f"{self.slope:+.2%} per round (95% CI {self.ci_low:+.2%} to {self.ci_high:+.2%}"
        how = f"p = {self.p_value:.3g}; {self.runs} runs over {self.rounds} rounds, a common slope per configuration)"
        if self.notable:
            return (
                f"Drift: throughput changed by {span}, {how}: the machine or the target changed while the "
                "experiment ran. The interleaved order spreads it over every configuration, so comparisons stay "
                "fair, but every interval is wider; look for thermal throttling, background work or a data set "
                "that grows with each run."
            )
        return f"No drift across rounds: {span}, {how}."


def drift(by_point: Mapping[str, Sequence[tuple[int, float]]]) -> Drift | None:
    """`by_point`: each configuration's (round, goodput) of its successful
    measured runs. None when rounds cannot show a slope."""
    sxx = sxy = 0.0
    groups: list[tuple[list[float], list[float]]] = []
    for pairs in by_point.values():
        if len(pairs) < 2:
            continue
        mean_y = sum(y for _, y in pairs) / len(pairs)
        if mean_y <= 0:
            continue
        r = [float(x) for x, _ in pairs]
        y = [v / mean_y for _, v in pairs]
        mr, my = sum(r) / len(r), sum(y) / len(y)
        rc, yc = [v - mr for v in r], [v - my for v in y]
        sxx += sum(a * a for a in rc)
        sxy += sum(a * b for a, b in zip(rc, yc, strict=True))
        groups.append((rc, yc))
    n = sum(len(rc) for rc, _ in groups)
    df = n - len(groups) - 1
    if sxx <= 0 or df < 1:
        return None
    slope = sxy / sxx
    rss = sum((b - slope * a) ** 2 for rc, yc in groups for a, b in zip(rc, yc, strict=True))
    se = math.sqrt(rss / df / sxx)
    t = float(stats.t.ppf(1 - ALPHA / 2, df))
    p = 2 * float(stats.t.sf(abs(slope / se), df)) if se > 0 else (0.0 if slope else 1.0)
    rounds = len({x for pairs in by_point.values() for x, _ in pairs})
    return Drift(slope, slope - t * se, slope + t * se, p, rounds, n)
