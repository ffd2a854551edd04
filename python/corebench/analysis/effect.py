"""An effect, classified by what its interval excludes.

Every comparison of two groups of runs (B against A) says its effect, the
ratio of the means with its 95% interval, and one of four things:

- **higher / lower**: the test rejects no change (the interval excludes 1);
- **equivalent within ±m**: Schuirmann's two one-sided tests (TOST;
  Schuirmann 1987, J. Pharmacokinet. Biopharm. 15(6); Lakens 2017, "Equivalence
  tests", Soc. Psychol. Personal. Sci. 8(4)) reject a change of m or more,
  which is the 90% interval lying inside (1/(1+m), 1+m);
- **inconclusive**: neither; the sentence then says the smallest change this
  design could have detected with 80% power at the observed run-to-run
  variance and these numbers of runs (a sensitivity analysis, Cohen 1988,
  "Statistical Power Analysis", ch. 2). Never "observed power" from the
  observed effect, which is a restatement of the p-value (Hoenig & Heisey
  2001, "The abuse of power", Am. Stat. 55(1));
- **not tested**: fewer than 2 runs a side, a mean of 0, or runs without
  any spread on either side (identical figures, as whole-microsecond
  percentiles can be): the run-to-run variance is then unknown, not 0, and
  a test would claim certainty (p < 0.0001 from two runs a side).

Latency percentiles and per-request sds are compared as the ratio of their
runs' geometric means instead (`log_effect`): Welch's t on the logs of the
runs' values, whose difference of means is the log of that ratio (Limpert,
Stahel & Abbt 2001, BioScience 51(5)), and the tables show the same
geometric means, so the figure printed is the one tested.

The ratio of throughputs is of arithmetic means (what the tables show), its interval on the
log scale by the delta method, so it never reaches 0 or below (Hirschberg &
Lye 2010, "A geometric comparison of the delta and Fieller confidence
intervals", Am. Stat. 64(3)): log(B̄/Ā) has squared standard error
s_A²/(n_A·Ā²) + s_B²/(n_B·B̄²), with Welch–Satterthwaite degrees of freedom
over those two parts (Welch 1947). The test, the interval, the equivalence
and the power all come from that one statistic, so they cannot disagree.

Where comparisons are made together (`analysis.family`), each is held to
α divided by their number (Bonferroni; e.g. Miller 1981, "Simultaneous
Statistical Inference"): its interval is then a simultaneous 95% one, and
its test, its TOST and its detectable change are at that level too, so a
printed interval that excludes no change is always called higher or
lower. Holm's step-down test rejects a little more, but gives no interval
to print beside its verdict."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
from scipy import optimize
from scipy import stats as st

from corebench.analysis.anova import MARGIN
from corebench.analysis.stats import ALPHA, p_is

# exp of more than this overflows a float.
LARGEST_LOG = 709.0
# The power at which "could detect" is stated (Cohen 1988's convention).
POWER = 0.8
# An effect's classes, in the order verdicts count them.
VERDICTS = ("higher", "lower", "equivalent", "inconclusive", "not tested")


@dataclass(frozen=True)
class Effect:
    """B against A: the ratio of the means on the log scale, its standard
    error and degrees of freedom; everything else derives from them at the
    level the comparison is held to (α over the family's size)."""

    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    se: float  # of log(mean B / mean A); NaN when not tested
    df: float
    margin: float = MARGIN
    # The comparisons made together with this one: each is held to α/family
    # (Bonferroni), its interval, test, equivalence and power alike.
    family: int = 1
    # The means are geometric (log_effect), not arithmetic.
    geometric: bool = False
    # Not tested because neither side's runs varied at all.
    flat: bool = False

    @property
    def tested(self) -> bool:
        return not math.isnan(self.se)

    @property
    def ratio(self) -> float:
        return self.mean_b / self.mean_a if self.tested else math.nan

    @property
    def relative(self) -> float:
        return self.ratio - 1

    @property
    def alpha(self) -> float:
        return ALPHA / self.family

    @property
    def _diff(self) -> float:
        return math.log(self.ratio)

    @property
    def p_value(self) -> float:
        """Two-sided, of no change, before the family's adjustment."""
        if not self.tested:
            return math.nan
        if self.se == 0:
            return float(self.ratio == 1)
        return float(2 * st.t.sf(abs(self._diff) / self.se, self.df))

    @property
    def p(self) -> float:
        """Bonferroni-adjusted over the family."""
        return min(1.0, self.p_value * self.family)

    def _bounds(self, alpha: float) -> tuple[float, float]:
        if not self.tested:
            return math.nan, math.nan
        t = float(st.t.ppf(1 - alpha, self.df)) if self.se > 0 else 0.0
        return safe_exp(self._diff - t * self.se), safe_exp(self._diff + t * self.se)

    @property
    def low(self) -> float:
        return self._bounds(self.alpha / 2)[0]

    @property
    def high(self) -> float:
        return self._bounds(self.alpha / 2)[1]

    @property
    def eq_low(self) -> float:
        """The (1 − 2α) interval TOST tests against the margin."""
        return self._bounds(self.alpha)[0]

    @property
    def eq_high(self) -> float:
        return self._bounds(self.alpha)[1]

    @cached_property
    def detectable(self) -> float:
        """The smallest change (a share, up) detectable with POWER at the
        family's level; NaN untested."""
        if not self.tested:
            return math.nan
        if self.se == 0:
            return 0.0
        shift = detectable_shift(self.se, self.df, self.alpha)
        # Two runs a side held to α/91: t on 1 df passes exp's range.
        return math.inf if shift > LARGEST_LOG else math.expm1(shift)

    @property
    def significant(self) -> bool:
        return self.tested and self.p_value < self.alpha

    @property
    def within_margin(self) -> bool:
        """TOST rejects a change of the margin or more: a significant change
        can be this too, real but too small to matter."""
        bound = 1 + self.margin
        return self.tested and 1 / bound < self.eq_low and self.eq_high < bound

    @property
    def equivalent(self) -> bool:
        return self.within_margin and not self.significant

    @property
    def verdict(self) -> str:
        """higher, lower, equivalent, inconclusive, or not tested."""
        if not self.tested:
            return "not tested"
        if self.significant:
            return "higher" if self.ratio > 1 else "lower"
        return "equivalent" if self.equivalent else "inconclusive"

    def in_family(self, size: int) -> Effect:
        """This comparison as one of `size` made together."""
        return replace(self, family=max(1, size))

    def held(self, what: str = "95% CI") -> str:
        """An interval's label, naming the family it is simultaneous over."""
        return f"{what}, simultaneous over {self.family} (Bonferroni)" if self.family > 1 else what

    def interval(self) -> str:
        return f"{self.held()} {bound(self.low - 1)} to {bound(self.high - 1)}"

    def test(self) -> str:
        if self.family == 1:
            return f"p {p_is(self.p_value)}"
        return f"p {p_is(self.p_value)}, adjusted {p_is(self.p).removeprefix('= ')}"

    def could_detect(self) -> str:
        return (
            f"this design ({self.n_a} and {self.n_b} runs) could detect a change of "
            f"{change_size(self.detectable)} with {POWER:.0%} power at the observed run-to-run variance"
        )

    def words(self, what: str = "throughput") -> str:
        """The effect, its interval and its class, in one clause."""
        if not self.tested:
            if self.mean_a > 0 and self.mean_b > 0:
                return f"{what} {pct(self.mean_b / self.mean_a - 1)}, not tested ({self._why_untested()})"
            return f"{what} not compared ({self._why_untested()})"
        change = f"{pct(self.relative)} ({self.interval()}; {self.test()})"
        v = self.verdict
        if v in ("higher", "lower"):
            small = f", a change within ±{self.margin:.0%} (equivalent by TOST too)" if self.within_margin else ""
            return f"{what} {v}: {change}{small}"
        if v == "equivalent":
            return (
                f"{what} equivalent within ±{self.margin:.0%}: {pct(self.relative)} "
                f"({(1 - 2 * self.alpha) * 100:.3g}% CI {pct(self.eq_low - 1)} to {pct(self.eq_high - 1)}, inside "
                "the margin; Schuirmann's TOST)"
            )
        return f"{what} inconclusive: {change}; {self.could_detect()}"

    def _why_untested(self) -> str:
        if self.n_a < 2 or self.n_b < 2:
            return f"{self.n_a} and {self.n_b} measured runs: a test needs 2 or more a side"
        if self.flat:
            return "the runs of both sides gave identical figures: their run-to-run variance is unknown, not 0"
        return "a run's value of 0" if self.geometric else "a mean of 0"


def change_size(share: float) -> str:
    """A detectable change: "about ±12%" below a doubling, "a factor of 3.4"
    beyond (a ratio cannot fall by more than 100%), and no finer than "more
    than a factor of 10" past that, where the design says nothing useful."""
    if share < 1:
        return f"about ±{share:.0%}"
    if share < 9:
        return f"about a factor of {1 + share:.1f} either way"
    return "only more than a factor of 10 either way"


def safe_exp(x: float) -> float:
    """exp, infinite past a float's range: an interval of 1 run a side on
    few degrees of freedom can reach it, and is then open to that side."""
    return math.inf if x > 700 else math.exp(x)


def bound(share: float) -> str:
    """An interval's end: "+45.2%", "×3.2" past a doubling, "×∞" open;
    past a factor of 1,000 either way only that ("×>1000", "−>99.9%"):
    a few runs' interval says nothing finer there (not ×7.76e+13)."""
    if math.isinf(share):
        return "×∞"
    if share >= 999:
        return "×>1000"
    if share <= -0.999:
        return "−>99.9%"
    return pct(share) if share < 1 else f"×{1 + share:.3g}"


def counted(effects: list[Effect]) -> str:
    """Effects counted by class, "higher in 2, lower in 6 (all 6 within
    ±5%), inconclusive in 1", in the order of VERDICTS."""
    out = []
    for v in VERDICTS:
        these = [e for e in effects if e.verdict == v]
        if not these:
            continue
        small = sum(e.within_margin for e in these) if v in ("higher", "lower") else 0
        note = ""
        if small:
            margin = f"±{these[0].margin:.0%}"
            note = f" (all {small} within {margin})" if small == len(these) else f" ({small} of them within {margin})"
        out.append(f"{v} in {len(these)}{note}")
    return ", ".join(out)


def held_together(effects: list[Effect]) -> list[Effect]:
    """Comparisons counted in one sentence, each held to α over the tested
    ones among them (Bonferroni), as a sentence's throughput counts are
    held to their family's: "higher in 5 of 7" then says what a
    simultaneous level shows, not what seven 5% tests would."""
    size = sum(e.tested for e in effects)
    return [e.in_family(size) for e in effects]


def held_words(effects: list[Effect]) -> str:
    """How `held_together`'s comparisons were held, in words."""
    size = max((e.family for e in effects), default=1)
    if size <= 1:
        return f"one comparison, at α = {ALPHA}"
    # Not the report's throughput family: a reader of "all N held" above
    # must not take these for part of it.
    return f"this line's {size} held to α = {ALPHA}/{size} (Bonferroni), a family of their own"


def pct(share: float) -> str:
    """A change as a signed percentage, with a true minus sign."""
    if not math.isfinite(share):
        return "∞" if share > 0 else "−∞"
    return f"{share * 100:+.1f}%".replace("-", "−")


def effect(a: list[float], b: list[float], margin: float = MARGIN) -> Effect:
    """B against A, from each side's runs (see the module's note)."""
    xa, xb = np.asarray(a, float), np.asarray(b, float)
    na, nb = len(xa), len(xb)
    ma = float(xa.mean()) if na else math.nan
    mb = float(xb.mean()) if nb else math.nan
    if na < 2 or nb < 2 or not (ma > 0 and mb > 0):
        return Effect(na, nb, ma, mb, math.nan, math.nan, margin)
    ga = float(xa.var(ddof=1)) / na / ma**2
    gb = float(xb.var(ddof=1)) / nb / mb**2
    se = math.sqrt(ga + gb)
    if se == 0:
        return Effect(na, nb, ma, mb, math.nan, math.nan, margin, flat=True)
    df = (ga + gb) ** 2 / (ga**2 / (na - 1) + gb**2 / (nb - 1))
    return Effect(na, nb, ma, mb, se, df, margin)


def log_effect(a: list[float], b: list[float], margin: float = MARGIN) -> Effect:
    """B against A as the ratio of geometric means: Welch's t on the logs
    of the runs' values (see the module's note). Not tested with fewer than
    2 runs a side or any value of 0 or below."""
    xa, xb = np.asarray(a, float), np.asarray(b, float)
    na, nb = len(xa), len(xb)
    if na < 2 or nb < 2 or not (xa.min() > 0 and xb.min() > 0):
        ga = float(np.exp(np.log(xa).mean())) if na and xa.min() > 0 else math.nan
        gb = float(np.exp(np.log(xb).mean())) if nb and xb.min() > 0 else math.nan
        return Effect(na, nb, ga, gb, math.nan, math.nan, margin, geometric=True)
    la, lb = np.log(xa), np.log(xb)
    va, vb = float(la.var(ddof=1)) / na, float(lb.var(ddof=1)) / nb
    se = math.sqrt(va + vb)
    ga, gb = float(np.exp(la.mean())), float(np.exp(lb.mean()))
    if se == 0:
        return Effect(na, nb, ga, gb, math.nan, math.nan, margin, geometric=True, flat=True)
    df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
    return Effect(na, nb, ga, gb, se, df, margin, geometric=True)


def power(shift: float, se: float, df: float, alpha: float = ALPHA) -> float:
    """The chance a two-sided t-test at `alpha` rejects no change when the
    true change is `shift` and its estimate has standard error `se` with
    `df` degrees of freedom: the noncentral t's mass beyond ±t(1 − α/2)
    (Cohen 1988, ch. 2; the same as statsmodels' TTestIndPower)."""
    crit = float(st.t.ppf(1 - alpha / 2, df))
    ncp = shift / se
    # The far tail, P(T < −crit), as P(T > crit) at −ncp: scipy's cdf gives
    # NaN for it at a large ncp, where it is 0 to any precision.
    far = float(st.nct.sf(crit, df, -ncp))
    near = float(st.nct.sf(crit, df, ncp))
    if math.isnan(near):  # out of scipy's range: the normal limit
        near = float(st.norm.sf(crit - ncp))
    return near + (0.0 if math.isnan(far) else far)


def detectable_shift(se: float, df: float, alpha: float = ALPHA, want: float = POWER) -> float:
    """The smallest true change (in the units of `se`'s estimate) that a
    two-sided test at `alpha` detects with probability `want`."""
    if se <= 0:
        return 0.0
    # The normal approximation's answer bounds the search from below; the
    # power grows with the shift, so a root lies between it and far above.
    low = (float(st.norm.ppf(1 - alpha / 2)) + float(st.norm.ppf(want))) * se * 0.5
    high = low * 4
    while power(high, se, df, alpha) < want:
        high *= 2
    return float(optimize.brentq(lambda s: power(s, se, df, alpha) - want, low, high, xtol=se * 1e-9))
