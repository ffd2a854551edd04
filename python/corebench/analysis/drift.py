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

from corebench.analysis.effect import POWER, detectable_shift
from corebench.analysis.stats import p_is

ALPHA = 0.05
# Fewer rounds leave the slope's test one degree of freedom or none: with 3
# rounds its interval spans some ±70% per round at a 2% run-to-run spread,
# so a "no drift" from it would say nothing.
MIN_ROUNDS = 4


@dataclass(frozen=True)
class Drift:
    slope: float  # change per round, as a share of the configuration's mean
    ci_low: float
    ci_high: float
    p_value: float
    rounds: int
    runs: int
    # The smallest drift per round the test detects with POWER (NaN: untested).
    detectable: float = math.nan

    @property
    def notable(self) -> bool:
        return self.rounds >= MIN_ROUNDS and self.p_value < ALPHA

    def sentence(self) -> str:
        if self.rounds < MIN_ROUNDS:
            return too_few(self.rounds)
        span = f"{self.slope:+.2%} per round (95% CI {self.ci_low:+.2%} to {self.ci_high:+.2%}".replace("-", "−")
        how = f"p {p_is(self.p_value)}; round means of {self.runs} runs over {self.rounds} rounds)"
        if self.notable:
            return (
                f"Drift: throughput changed by {span}, {how}: the machine or the target changed while the "
                "experiment ran. The interleaved order spreads it over every configuration, so comparisons stay "
                "fair, but every interval is wider; look for thermal throttling, background work or a data set "
                "that grows with each run."
            )
        return (
            f"Drift across rounds: none detected, {span}, {how}; this design could detect a drift of "
            f"about ±{self.detectable:.1%} per round with {POWER:.0%} power at the observed spread of the round means."
        )


def too_few(rounds: int) -> str:
    return (
        f"Drift across rounds: not tested, {rounds} round{'s' if rounds != 1 else ''} (the test needs "
        f"{MIN_ROUNDS} or more)."
    )


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
    shift = detectable_shift(se, df) if se > 0 else 0.0
    return Drift(slope, slope - t * se, slope + t * se, p, len(rounds), runs, shift)
