"""One family of comparisons for every verdict: each pair of configurations
at matched load, compared once.

The CPU steps, the factor effects and the best at each load level all ask
about pairs of configurations at the same load. Asked with different
methods or in different families, the same pair could be called "lower" in
one line and "cannot be told from the best" in the next (ANSWERS.md §6).
So each such pair is an `Effect` here, and Holm's step-down adjustment
(Holm 1979) runs once over all of them: every line that names a pair says
what this family says of it, and the chance of any false "higher" or
"lower" among all the verdicts' comparisons stays at α.

Hsu's multiple comparisons with the best (`stats.mcb`) pools the variance
of every configuration; runs whose generator shared the target's cores
vary many times more than the others (a run-to-run CV of 26% beside 0.5%
on the demo), so the pooled variance is wrong for both, and Welch's
comparisons, which assume nothing of the kind, carry the verdicts."""

from __future__ import annotations

from collections.abc import Callable

from corebench.analysis.effect import Effect, effect
from corebench.analysis.load import at_matched_load
from corebench.analysis.points import PointStats
from corebench.analysis.stats import holm

Values = Callable[[PointStats], list[float]]


def throughput(p: PointStats) -> list[float]:
    return list(p.run_goodput_rps)


def p99_ms(p: PointStats) -> list[float]:
    return [r.p99_us / 1000 for r in p.measured if r.p99_us is not None]


class Family:
    """Every pair of configurations at each load level, for one measure."""

    def __init__(self, points: list[PointStats], load: set[str], values: Values = throughput) -> None:
        self.values = values
        pairs: list[tuple[PointStats, PointStats]] = []
        for _, ps in at_matched_load(points, load):
            pairs += [(a, b) for i, a in enumerate(ps) for b in ps[i + 1 :]]
        found = [effect(values(a), values(b)) for a, b in pairs]
        adjusted = holm([e.p_value for e in found])
        self._p = {_key(a, b): q for (a, b), q in zip(pairs, adjusted, strict=True)}
        self.size = sum(e.tested for e in found)

    def get(self, a: PointStats, b: PointStats) -> Effect:
        """B against A, with its adjusted p-value where tested."""
        e = effect(self.values(a), self.values(b))
        q = self._p.get(_key(a, b))
        return e.adjusted(q) if e.tested and q is not None else e

    def method(self) -> str:
        return (
            f"ratio of means, 95% CI on the log scale, Welch's t, Holm-adjusted over all {self.size} comparisons "
            "of configurations at matched load"
        )


def _key(a: PointStats, b: PointStats) -> frozenset[int]:
    return frozenset((id(a), id(b)))
