"""One family of comparisons for every verdict: each pair of configurations
at matched load, compared once.

The CPU steps, the factor effects and the best at each load level all ask
about pairs of configurations at the same load. Asked with different
methods or in different families, the same pair could be called "lower" in
one line and "cannot be told from the best" in the next (ANSWERS.md §6).
So each such pair is an `Effect` here, held to α over the number of pairs
(Bonferroni, with simultaneous intervals: `analysis.effect`): every line
that names a pair says what this family says of it, and the chance of any
false "higher" or "lower" among the family's pairwise verdicts stays at α.
Lines that average several pairs (`pooled.pool`) are one test each,
held together by Bonferroni over every such line of the report.

Hsu's multiple comparisons with the best (`stats.mcb`) pools the variance
of every configuration; runs whose generator shared the target's cores
vary many times more than the others (a run-to-run CV of 26% beside 0.5%
on the demo), so the pooled variance is wrong for both, and Welch's
comparisons, which assume nothing of the kind, carry the verdicts."""

from __future__ import annotations

from collections.abc import Callable

from corebench.analysis.anova import MARGIN
from corebench.analysis.effect import POWER, Effect, effect, log_effect
from corebench.analysis.load import at_matched_load
from corebench.analysis.points import PointStats
from corebench.analysis.stats import ALPHA

Values = Callable[[PointStats], list[float]]


def throughput(p: PointStats) -> list[float]:
    return list(p.run_goodput_rps)


def p99_ms(p: PointStats) -> list[float]:
    return [r.p99_us / 1000 for r in p.measured if r.p99_us is not None]


class Family:
    """Every pair of configurations at each load level, for one measure:
    throughput as a ratio of means; a latency percentile (`geometric`) as a
    ratio of geometric means, the figure the tables show."""

    def __init__(
        self, points: list[PointStats], load: set[str], values: Values = throughput, geometric: bool = False
    ) -> None:
        self.values = values
        self._effect = log_effect if geometric else effect
        pairs: list[tuple[PointStats, PointStats]] = []
        for _, ps in at_matched_load(points, load):
            pairs += [(a, b) for i, a in enumerate(ps) for b in ps[i + 1 :]]
        self.size = sum(self._effect(values(a), values(b)).tested for a, b in pairs)

    def get(self, a: PointStats, b: PointStats) -> Effect:
        """B against A, held to the family's level."""
        return self._effect(self.values(a), self.values(b)).in_family(self.size)

    def method(self) -> str:
        return (
            f"each pair of configurations at matched load: the ratio of means with its 95% interval on the log "
            f"scale, Welch's t; all {self.size} held to α = {ALPHA}/{self.size} (Bonferroni), so the intervals are "
            f"simultaneous; equivalent: Schuirmann's TOST within ±{MARGIN:.0%}; inconclusive: with the smallest "
            f"change {POWER:.0%} power would detect at that level"
        )
