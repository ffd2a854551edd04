"""Drift across rounds: did throughput change while the experiment ran?

Each run's goodput is taken relative to its configuration's mean, the
relative figures are averaged per round, and the round means are regressed
on the round (least squares, a t-test on the slope with R - 2 degrees of
freedom). The round is the unit: the configurations of one round share its
target starts and the machine's state at that time, so their runs are not
independent evidence of a trend (pseudo-replication, Hurlbert 1984, Ecol.
Monogr. 54(2); analysing the means of the experimental units, Murtaugh
2007, Ecology 88(1)). A test over the single runs would take a few unlucky
rounds for a trend. Interleaving spreads a drift over every configuration,
so their comparison stays fair, but a drift widens every interval and says
the machine or the target changed during the experiment."""

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
        how = f"p = {self.p_value:.3g}; round means of {self.runs} runs over {self.rounds} rounds)"
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
    measured runs. None when fewer than 3 rounds can show a slope."""
    per_round: dict[int, list[float]] = {}
    runs = 0
    for pairs in by_point.values():
        mean_y = sum(v for _, v in pairs) / len(pairs) if pairs else 0.0
        if len(pairs) < 2 or mean_y <= 0:
            continue
        for r, v in pairs:
            per_round.setdefault(r, []).append(v / mean_y)
            runs += 1
    rounds = sorted(per_round)
    if len(rounds) < 3:
        return None
    x = [float(r) for r in rounds]
    y = [sum(per_round[r]) / len(per_round[r]) for r in rounds]
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxx = sum((a - mx) ** 2 for a in x)
    slope = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True)) / sxx
    df = len(x) - 2
    rss = sum((b - my - slope * (a - mx)) ** 2 for a, b in zip(x, y, strict=True))
    se = math.sqrt(rss / df / sxx)
    t = float(stats.t.ppf(1 - ALPHA / 2, df))
    p = 2 * float(stats.t.sf(abs(slope / se), df)) if se > 0 else (0.0 if slope else 1.0)
    return Drift(slope, slope - t * se, slope + t * se, p, len(rounds), runs)
