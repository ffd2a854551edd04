"""Which factors matter, and by how much: a Type II analysis of variance of
the runs of a factorial plan (main effects and two-way interactions), with
ω² effect sizes; and an equivalence test, so a report can say "no
difference that matters" rather than only "not significant".

- Type II sums of squares: each term against the model of every term that
  does not contain it (Langsrud 2003, "ANOVA for unbalanced data: Use Type
  II instead of Type III sums of squares"; as statsmodels' `anova_lm(typ=2)`,
  which the tests compare against).
- ω² = (SS − df·MS_error) / (SS_total + MS_error) (Hays 1963; Olejnik &
  Algina 2003): the share of the variance a term explains, less biased than
  η² on few runs. Where F < 1 the estimate falls below 0, which no share
  of variance can be; it is given as 0, the convention (Keppel & Wickens
  2004, "Design and Analysis", on ω²; Olejnik & Algina 2003).
- Residuals far from normal (Shapiro & Wilk 1965, p < 0.01, with 8 or
  more residual degrees of freedom): the p-values come from a permutation
  test instead of the F distribution, by Freedman & Lane's (1983)
  permutation of the residuals of the reduced model, the method Anderson &
  ter Braak (2003, "Permutation tests for multi-factorial analysis of
  variance", J. Statist. Comput. Simul. 73(2)) found best for multi-factor
  designs: 2,000 permutations from a fixed seed, p = (1 + #{F* ≥ F}) /
  (1 + 2,000).
- Equivalence: Schuirmann's (1987) two one-sided tests on the log of the
  response, with Welch's degrees of freedom: equivalent when the ratio of the
  means lies within ±margin with 95% confidence. Runs made in pairs (two
  tools taking turns, each pair sharing the machine's drift) are tested on
  the pairs' log ratios instead, with n − 1 degrees of freedom (the paired
  form, as statsmodels' `ttost_paired`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import stats as st

from corebench.analysis.stats import ALPHA, p_is

# Residuals this far from normal (Shapiro–Wilk p below it) get permutation
# p-values: strict, so the F test's robustness to mild departures is kept
# and only clear ones (heavy tails, a few wild runs) switch.
NORMALITY_ALPHA = 0.01
# Below this many residual degrees of freedom the residuals are too few, and
# too tied to each other by the fit, for Shapiro–Wilk to say much.
MIN_NORMALITY_DF = 8
# Permutations per term: the Monte Carlo standard error of a p-value of 0.05
# is then 0.005; the seed makes a report reproducible.
PERMUTATIONS = 2000
PERMUTATION_SEED = 1983
F_TEST = "F test"
PERMUTATION = "permutation"
# Equivalence margin: a ratio of means within ±5% is "no difference that matters".
MARGIN = 0.05


def scope(load_terms: bool) -> str:
    """What the table is, beside the verdicts, for a report. Its F tests
    share one error term pooled over every cell, each at α, and pool every
    load level into one model where the plan has load factors (terms like
    any other); the verdicts compare a pair on its own runs by Welch's t,
    held to its family's level, at matched load. So a term here can be
    significant where a comparison is inconclusive, or the reverse: the
    verdicts are the answers. Load is named only where it is a term."""
    load = "load levels included as terms, " if load_terms else ""
    matched = ", at matched load" if load_terms else ""
    at_each = " at each load" if load_terms else ""
    return (
        f"The analysis of variance says where the variance of the runs lies ({load}each term's F test at "
        f"α = {ALPHA} against one error term pooled over every cell); it ranks no configuration and no load. "
        f"Configurations are compared in the verdicts{matched}, each pair by Welch's t on its own runs, held to its "
        f"family's level (Bonferroni), with its own interval{at_each}. A term may be significant here where those "
        "comparisons are inconclusive: that is their lesser power, not a contrary finding; the verdicts answer for "
        "each pair."
    )


@dataclass(frozen=True)
class Term:
    name: str  # "cpus", or "cpus:mpm" for an interaction
    df: int
    ss: float
    f: float
    p_value: float
    omega2: float


@dataclass(frozen=True)
class Anova:
    response: str
    terms: list[Term]
    residual_df: int
    residual_ss: float
    n: int
    method: str = F_TEST  # what gave the terms' p-values: F_TEST or PERMUTATION
    normality_p: float = math.nan  # Shapiro–Wilk on the residuals; NaN: not checked
    permutations: int = 0
    # Runs left out of this response, and why: the ones the verdicts do not
    # read it from either (ANSWERS.md §6: one answer to one question).
    left_out: int = 0
    left_out_why: str = ""

    def p_said(self, term: Term) -> str:
        """A term's p for a table: at a permutation test's floor,
        1/(permutations + 1), "≤" that floor (no permutation beat it: the
        test cannot say how much smaller p is)."""
        if self.method == PERMUTATION and self.permutations and term.p_value <= 1 / (self.permutations + 1) + 1e-12:
            return f"≤ {1 / (self.permutations + 1):.2g}"
        return p_is(term.p_value).removeprefix("= ")

    def method_words(self) -> str:
        """Which method gave the p-values, and why, and the runs left out, for a report."""
        left = f"; {self.left_out:,} runs left out: {self.left_out_why}" if self.left_out else ""
        return f"{self.model_words()}; {self._method()}{left}"

    def model_words(self) -> str:
        """Which terms the model holds, and where the rest went."""
        if any(":" in t.name for t in self.terms):
            return "main effects and two-way interactions (any higher ones pooled into the error)"
        if len(self.terms) > 1:
            return "main effects only (too few runs for interactions: they are pooled into the error)"
        return "one factor"

    def _method(self) -> str:
        if self.method == PERMUTATION:
            return (
                f"p from a permutation test (Freedman & Lane 1983; {self.permutations:,} permutations): "
                f"Shapiro–Wilk rejects normal residuals (p = {self.normality_p:.2g}, below {NORMALITY_ALPHA:g})"
            )
        if not math.isnan(self.normality_p):
            # Not rejecting normality does not show it: the F test is
            # robust to mild departures, and only clear ones switch.
            return (
                f"p from the F distribution: Shapiro–Wilk does not reject normal residuals at {NORMALITY_ALPHA:g} "
                f"(p = {self.normality_p:.2g}), the level below which a permutation test is used instead"
            )
        why = (
            f"fewer than {MIN_NORMALITY_DF} residual degrees of freedom"
            if self.residual_df < MIN_NORMALITY_DF
            else "the residuals have no spread"
        )
        return f"p from the F distribution; normality not checked: {why}"


def _columns(levels: list[Any]) -> tuple[list[Any], dict[Any, int]]:
    order = list(dict.fromkeys(levels))
    return order, {v: i for i, v in enumerate(order)}


def _dummies(values: list[Any]) -> np.ndarray:
    """Treatment coding: one column per level but the first."""
    order, index = _columns(values)
    out = np.zeros((len(values), len(order) - 1))
    for row, v in enumerate(values):
        if index[v]:
            out[row, index[v] - 1] = 1.0
    return out


def _design(rows: Sequence[Mapping[str, object]], terms: list[tuple[str, ...]]) -> np.ndarray:
    blocks = [np.ones((len(rows), 1))]
    for term in terms:
        parts = [_dummies([r[f] for r in rows]) for f in term]
        block = parts[0]
        for other in parts[1:]:
            block = np.einsum("ij,ik->ijk", block, other).reshape(len(rows), -1)
        blocks.append(block)
    return np.hstack(blocks)


def _rss(x: np.ndarray, y: np.ndarray) -> tuple[float, int]:
    beta, _, rank, _ = np.linalg.lstsq(x, y, rcond=None)
    resid = y - x @ beta
    return float(resid @ resid), int(rank)


def anova(
    rows: Sequence[Mapping[str, object]],
    factors: list[str],
    response: str,
    method: Literal["auto", "f", "permutation"] = "auto",
) -> Anova | None:
    """Type II ANOVA of `response` over the factors (each with 2 or more
    levels), main effects and two-way interactions where the runs leave
    residual degrees of freedom for them. None when nothing can be tested.
    `method` "auto" takes the F test's p-values unless the residuals are far
    from normal; "f" and "permutation" force one (the tests compare them)."""
    factors = [f for f in factors if len({r[f] for r in rows}) > 1]
    if not factors:
        return None
    y = np.asarray([r[response] for r in rows], float)
    terms: list[tuple[str, ...]] = [(f,) for f in factors]
    pairs: list[tuple[str, ...]] = list(itertools.combinations(factors, 2))
    _, full_rank = _rss(_design(rows, terms + pairs), y)
    if pairs and len(rows) - full_rank >= 2:
        terms += pairs
    full = _design(rows, terms)
    rss_full, rank = _rss(full, y)
    dof = len(rows) - rank
    if dof < 1:
        return None
    ms_error = rss_full / dof
    total = float(np.sum((y - y.mean()) ** 2))
    normality_p = _normality(full, y, dof)
    permute = method == "permutation" or (method == "auto" and normality_p < NORMALITY_ALPHA)
    rng = np.random.default_rng(PERMUTATION_SEED)
    out = []
    for t in terms:
        others = [u for u in terms if not set(t) <= set(u)]
        rss_without, rank_without = _rss(_design(rows, others), y)
        rss_with, rank_with = _rss(_design(rows, [*others, t]), y)
        df = rank_with - rank_without
        ss = max(rss_without - rss_with, 0.0)
        f = (ss / df) / ms_error if df and ms_error > 0 else math.inf
        p = float(st.f.sf(f, df, dof)) if df and math.isfinite(f) else 0.0
        if permute and df and math.isfinite(f):
            p = _freedman_lane(_design(rows, others), _design(rows, [*others, t]), full, y, f, rng)
        omega2 = max(0.0, (ss - df * ms_error) / (total + ms_error)) if total + ms_error > 0 else math.nan
        out.append(Term(":".join(t), df, ss, f, p, omega2))
    return Anova(
        response,
        out,
        dof,
        rss_full,
        len(rows),
        PERMUTATION if permute else F_TEST,
        normality_p,
        PERMUTATIONS if permute else 0,
    )


def _normality(x: np.ndarray, y: np.ndarray, dof: int) -> float:
    """Shapiro & Wilk's (1965) test of the full model's residuals: its
    p-value, NaN where too few residual df or no residual spread."""
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = y - x @ beta
    if dof < MIN_NORMALITY_DF or not np.ptp(resid) > 1e-12 * max(1.0, float(np.abs(y).max())):
        return math.nan
    return float(st.shapiro(resid).pvalue)


def _basis(x: np.ndarray) -> np.ndarray:
    """An orthonormal basis of the columns of x (their rank, not their count:
    treatment-coded interactions can be collinear)."""
    u, s, _ = np.linalg.svd(x, full_matrices=False)
    return u[:, s > s.max() * max(x.shape) * np.finfo(float).eps]


def _freedman_lane(
    reduced: np.ndarray, with_term: np.ndarray, full: np.ndarray, y: np.ndarray, f: float, rng: np.random.Generator
) -> float:
    """Freedman & Lane (1983), as Anderson & ter Braak (2003) give it: fit
    the reduced model (every term that does not contain the one tested, the
    Type II null), permute its residuals, add them back to its fitted values,
    and recompute the same F (the term's Type II sum of squares over the full
    model's error mean square) on each permuted response. The reduced
    model's effects stay in every permuted y, so the other factors' effects
    do not leak into the tested one's null distribution."""
    q0, q1, qf = _basis(reduced), _basis(with_term), _basis(full)
    fitted = q0 @ (q0.T @ y)
    resid = y - fitted
    perms = np.argsort(rng.random((PERMUTATIONS, len(y))), axis=1)
    ys = fitted[:, None] + resid[perms].T  # one permuted response per column
    sq = np.sum(ys * ys, axis=0)
    ss = np.sum((q1.T @ ys) ** 2, axis=0) - np.sum((q0.T @ ys) ** 2, axis=0)
    rss = sq - np.sum((qf.T @ ys) ** 2, axis=0)
    df, dof = q1.shape[1] - q0.shape[1], len(y) - qf.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        stats = (ss / df) / (rss / dof)
    # Ties count against the term: the statistic is recomputed in floating point.
    hits = int(np.sum(stats >= f * (1 - 1e-9)))
    return (1 + hits) / (1 + PERMUTATIONS)


@dataclass(frozen=True)
class Equivalence:
    ratio: float  # B's mean over A's (geometric, from the logs)
    low: float  # the 90% interval of the ratio: equivalence at 5% needs it inside the margin
    high: float
    p_value: float  # the larger of the two one-sided p-values
    equivalent: bool
    # The two one-sided p-values: H0 that B is the margin or more below A,
    # and that it is the margin or more above (with margin 0: B below A, B
    # above A, the two one-sided tests of a difference).
    p_not_below: float = 1.0
    p_not_above: float = 1.0


def tost(a: list[float], b: list[float], margin: float = MARGIN) -> Equivalence | None:
    """Schuirmann's two one-sided tests on log values with Welch's degrees
    of freedom: H0 says the ratio of B to A is at most 1/(1+margin) or at
    least 1+margin; rejecting both says they are equivalent."""
    if len(a) < 2 or len(b) < 2 or min(a + b) <= 0:
        return None
    la, lb = np.log(np.asarray(a, float)), np.log(np.asarray(b, float))
    va, vb = la.var(ddof=1) / len(la), lb.var(ddof=1) / len(lb)
    if va + vb == 0:
        return _two_one_sided(float(lb.mean() - la.mean()), 0.0, 1.0, margin)
    df = (va + vb) ** 2 / (va**2 / (len(la) - 1) + vb**2 / (len(lb) - 1))
    return _two_one_sided(float(lb.mean() - la.mean()), math.sqrt(va + vb), df, margin)


def tost_paired(a: list[float], b: list[float], margin: float = MARGIN) -> Equivalence | None:
    """Schuirmann's two one-sided tests on paired runs: the log of B over A
    in each pair, tested as one sample (n − 1 degrees of freedom), so the
    drift that pairs share cancels."""
    if len(a) != len(b):
        raise ValueError(f"paired runs need as many of each: {len(a)} and {len(b)}")
    if len(a) < 2 or min(a + b) <= 0:
        return None
    d = np.log(np.asarray(b, float)) - np.log(np.asarray(a, float))
    return _two_one_sided(float(d.mean()), float(d.std(ddof=1)) / math.sqrt(len(d)), len(d) - 1, margin)


def _two_one_sided(diff: float, se: float, df: float, margin: float) -> Equivalence:
    """H0 says the log ratio `diff` is at most −log(1+margin) or at least
    +log(1+margin); rejecting both at ALPHA says equivalent, which is the
    (1 − 2·ALPHA) interval lying inside the margin."""
    bound = math.log(1 + margin)
    if se == 0:
        p_low, p_high = float(diff <= -bound), float(diff >= bound)
        r = math.exp(diff)
        return Equivalence(r, r, r, max(p_low, p_high), max(p_low, p_high) < ALPHA, p_low, p_high)
    p_low = float(st.t.sf((diff + bound) / se, df))  # H0: diff <= -bound
    p_high = float(st.t.cdf((diff - bound) / se, df))  # H0: diff >= +bound
    t = float(st.t.ppf(1 - ALPHA, df))
    p = max(p_low, p_high)
    return Equivalence(math.exp(diff), math.exp(diff - t * se), math.exp(diff + t * se), p, p < ALPHA, p_low, p_high)
