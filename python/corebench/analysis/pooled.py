"""A factor's matched comparisons averaged into one effect: the CPU-step
summaries and the factor-effect lines.

Each comparison (a level against the first, at one combination of the
other factors and the load) is a block; its log ratio of means is one
observation, and their mean, each weighted equally, is the effect
averaged over the blocks the plan measured: not the effect at any one of
them, and it changes with the plan's grid, so the line says "on
average" and gives the blocks' range beside it.

Equal weights, not each comparison's inverse variance: a variance from 2
or 3 runs is itself so noisy that inverse-variance weights let the one
comparison whose few runs happened to agree carry the result
(DerSimonian–Laird did so here: one comparison of four took most of the
weight). The cells' means are then a two-factor design without
replication (Jain 1991, "The Art of Computer Systems Performance
Analysis", ch. 21), whose error is the factor-by-block interaction: the
spread of the k log ratios over √k, on k − 1 degrees of freedom (for two
levels, the paired t-test over blocks), the answer for blocks drawn from
many. With the blocks taken as fixed, the error is the runs' own noise,
√(Σ se_i²)/k (Jain ch. 22, with replication). The larger of the two is
used, so neither view claims a precision the other denies (the same
truncation as Knapp & Hartung 2003's), and the line says which one bound
it.

Where the spread is well beyond the runs' noise, the blocks differ in
their effect: H, the ratio of the two standard errors (Higgins &
Thompson 2002, "Quantifying heterogeneity in a meta-analysis", Stat. Med.
21(11), here with equal weights), is given from 2 on, and the average is
then said to hide an effect that depends on the other factors. Where
comparisons are significantly higher in some blocks and lower in others,
no average is given at all.

Each such line is one test; every combined line of a report (throughput
over CPU steps and over factor levels, and the same lines' CPU per
request) is held together by Bonferroni over their number."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as st

from corebench.analysis.anova import MARGIN
from corebench.analysis.effect import POWER, Effect, bound, change_size, detectable_shift, pct, safe_exp
from corebench.analysis.finding import Interval
from corebench.analysis.stats import ALPHA

# Comparisons combined into one effect only from this many: with two, the
# interval rests on 1 degree of freedom (t = 12.7) and says less than
# either comparison; their own classes are given instead.
MIN_STRATA = 3
# From this H on, the blocks' effects differ beyond their runs' noise.
HETEROGENEOUS_H = 2.0


@dataclass(frozen=True)
class Pooled:
    """Matched comparisons averaged (the module's note)."""

    ratio: float
    low: float
    high: float
    k: int  # the comparisons averaged
    spread: tuple[float, float]  # the lowest and highest of their ratios
    lines: int = 1  # the combined lines held together (Bonferroni)
    # Some comparisons significantly higher and others lower, each at the
    # family's level: no one effect.
    both_ways: bool = False
    h: float = math.nan  # the spread's standard error over the runs' noise's
    detectable: float = math.nan  # the smallest change the average could detect (a share)
    any_shown: bool = False  # a single comparison is shown on its own in the average's direction

    @property
    def spread_bound(self) -> bool:
        """The blocks' spread, not the runs' noise, set the error."""
        return self.h >= 1

    @property
    def kind(self) -> str:
        """higher, lower, equivalent or inconclusive, from the interval."""
        limit = 1 + MARGIN
        if self.low > 1 or self.high < 1:
            return "higher" if self.low > 1 else "lower"
        return "equivalent" if 1 / limit < self.low and self.high < limit else "inconclusive"

    @property
    def outcome(self) -> str:
        """The average's class, "… on average" (a gate reads it), or "both ways"."""
        if self.both_ways:
            return "both ways"
        return self.kind if self.kind == "inconclusive" else f"{self.kind} on average"

    def interval(self) -> Interval | None:
        if self.both_ways:
            return None
        return Interval(self.ratio, self.low, self.high, "ratio", 1 - ALPHA, self.lines, self.method)

    @property
    def method(self) -> str:
        error = "their spread" if self.spread_bound else "their runs' noise (larger than their spread)"
        return (
            f"mean of {self.k} comparisons' log ratios, equal weights, Student's t on {self.k - 1} df with {error} "
            "as error (Jain 1991 ch. 21–22)"
        )


def poolable(es: list[Effect]) -> bool:
    return len(_usable(es)) >= MIN_STRATA


def _usable(es: list[Effect]) -> list[Effect]:
    return [e for e in es if e.tested and e.se > 0]


def pool(es: list[Effect], lines: int = 1) -> Pooled | None:
    """The comparisons that can be combined (tested, with a spread),
    averaged as blocks (the module's note), held over `lines` such lines."""
    usable = _usable(es)
    k = len(usable)
    if k < MIN_STRATA:
        return None
    logs = np.log([e.ratio for e in usable])
    noise = math.sqrt(sum(e.se**2 for e in usable)) / k
    spread = float(np.std(logs, ddof=1)) / math.sqrt(k)
    se = max(spread, noise)
    alpha = ALPHA / max(1, lines)
    t = float(st.t.ppf(1 - alpha / 2, k - 1))
    mean = float(np.mean(logs))
    ratios = [e.ratio for e in usable]
    verdicts = {e.verdict for e in es}
    shift = detectable_shift(se, k - 1, alpha)
    low, high = safe_exp(mean - t * se), safe_exp(mean + t * se)
    kind = "higher" if low > 1 else "lower" if high < 1 else ""
    return Pooled(
        safe_exp(mean),
        low,
        high,
        k,
        (min(ratios), max(ratios)),
        max(1, lines),
        both_ways={"higher", "lower"} <= verdicts,
        h=spread / noise if noise > 0 else math.inf,
        detectable=safe_exp(shift) - 1,
        any_shown=kind in verdicts,
    )


def said(c: Pooled | None) -> str:
    """The average as a clause of a verdict, "" where there is none."""
    if c is None:
        return ""
    lo, hi = c.spread
    if c.both_ways:
        return (
            f"; they point both ways (some higher, some lower, from {pct(lo - 1)} to {pct(hi - 1)}): "
            "the effect depends on the other factors, and no one effect summarises them"
        )
    kind = f"within ±{MARGIN:.0%}" if c.kind == "equivalent" else c.kind
    held = f", simultaneous over {c.lines} combined lines (Bonferroni)" if c.lines > 1 else ""
    error = "over their spread" if c.spread_bound else "over their runs' noise, larger than their spread"
    out = (
        f"; on average over these {c.k} comparisons (each weighted equally, from {pct(lo - 1)} to {pct(hi - 1)}; "
        f"Student's t on {c.k - 1} df {error}): {pct(c.ratio - 1)} (95% CI{held} {bound(c.low - 1)} to "
        f"{bound(c.high - 1)}), {kind}"
    )
    if c.kind in ("higher", "lower") and not c.any_shown:
        out += " on average, though no single comparison shows it"
    elif c.kind == "inconclusive":
        out += f" (the average could detect {change_size(c.detectable)}, {POWER:.0%} power)"
    if c.h >= HETEROGENEOUS_H:
        out += (
            f"; they vary {c.h:.1f}× more than their runs' noise allows (H, Higgins & Thompson 2002): the effect "
            "depends on the other factors, and the average is not the effect at any one of them"
        )
    return out
