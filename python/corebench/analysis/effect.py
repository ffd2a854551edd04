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
- **not tested**: fewer than 2 runs a side, or a mean of 0.

The ratio is of arithmetic means (what the tables show), its interval on the
log scale by the delta method, so it never reaches 0 or below (Hirschberg &
Lye 2010, "A geometric comparison of the delta and Fieller confidence
intervals", Am. Stat. 64(3)): log(B̄/Ā) has squared standard error
s_A²/(n_A·Ā²) + s_B²/(n_B·B̄²), with Welch–Satterthwaite degrees of freedom
over those two parts (Welch 1947). The test, the interval, the equivalence
and the power all come from that one statistic, so they cannot disagree."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy import optimize
from scipy import stats as st

from corebench.analysis.anova import MARGIN
from corebench.analysis.stats import ALPHA

# The power at which "could detect" is stated (Cohen 1988's convention).
POWER = 0.8
# An effect's classes, in the order verdicts count them.
VERDICTS = ("higher", "lower", "equivalent", "inconclusive", "not tested")


@dataclass(frozen=True)
class Effect:
    """B against A."""

    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    ratio: float  # mean B / mean A; NaN when not tested
    low: float  # 95% interval of the ratio (NaN when not tested)
    high: float
    p_value: float  # two-sided, of no change
    detectable: float  # smallest change (a share, up) detectable at POWER and α; NaN untested
    eq_low: float  # the (1 − 2α) interval TOST tests against the margin
    eq_high: float
    margin: float = MARGIN
    # Holm-adjusted p-value where this effect is one of a family of tests.
    adjusted_p: float | None = None

    @property
    def tested(self) -> bool:
        return not math.isnan(self.p_value)

    @property
    def p(self) -> float:
        return self.p_value if self.adjusted_p is None else self.adjusted_p

    @property
    def significant(self) -> bool:
        return self.tested and self.p < ALPHA

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
    def relative(self) -> float:
        return self.ratio - 1

    @property
    def verdict(self) -> str:
        """higher, lower, equivalent, inconclusive, or not tested."""
        if not self.tested:
            return "not tested"
        if self.significant:
            return "higher" if self.ratio > 1 else "lower"
        return "equivalent" if self.equivalent else "inconclusive"

    def adjusted(self, p: float) -> Effect:
        return replace(self, adjusted_p=p)

    def interval(self) -> str:
        return f"95% CI {_pct(self.low - 1)} to {_pct(self.high - 1)}"

    def test(self) -> str:
        if self.adjusted_p is None:
            return f"p = {self.p_value:.2g}"
        return f"p = {self.p_value:.2g}, Holm-adjusted {self.adjusted_p:.2g}"

    def could_detect(self) -> str:
        return (
            f"this design ({self.n_a} and {self.n_b} runs) could detect a change of about ±{self.detectable:.0%} "
            f"with {POWER:.0%} power at the observed run-to-run variance"
        )

    def words(self, what: str = "throughput") -> str:
        """The effect, its interval and its class, in one clause."""
        if not self.tested:
            if self.mean_a > 0 and self.mean_b > 0:
                return f"{what} {_pct(self.mean_b / self.mean_a - 1)}, not tested ({self._why_untested()})"
            return f"{what} not compared ({self._why_untested()})"
        change = f"{_pct(self.relative)} ({self.interval()}; {self.test()})"
        v = self.verdict
        if v in ("higher", "lower"):
            small = f", a change within ±{self.margin:.0%} (equivalent by TOST too)" if self.within_margin else ""
            return f"{what} {v}: {change}{small}"
        if v == "equivalent":
            return (
                f"{what} equivalent within ±{self.margin:.0%}: {_pct(self.relative)} "
                f"(90% CI {_pct(self.eq_low - 1)} to {_pct(self.eq_high - 1)}, inside the margin; Schuirmann's TOST)"
            )
        return f"{what} inconclusive: {change}; {self.could_detect()}"

    def _why_untested(self) -> str:
        if self.n_a < 2 or self.n_b < 2:
            return f"{self.n_a} and {self.n_b} measured runs: a test needs 2 or more a side"
        return "a mean of 0"


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


def _pct(share: float) -> str:
    if not math.isfinite(share):
        return "∞" if share > 0 else "−∞"
    return f"{share * 100:+.1f}%".replace("-", "−")


def effect(a: list[float], b: list[float], margin: float = MARGIN) -> Effect:
    """B against A, from each side's runs (see the module's note)."""
    xa, xb = np.asarray(a, float), np.asarray(b, float)
    na, nb = len(xa), len(xb)
    ma = float(xa.mean()) if na else math.nan
    mb = float(xb.mean()) if nb else math.nan
    nan = math.nan
    if na < 2 or nb < 2 or not (ma > 0 and mb > 0):
        return Effect(na, nb, ma, mb, nan, nan, nan, nan, nan, nan, nan, margin)
    diff = math.log(mb / ma)
    ga = float(xa.var(ddof=1)) / na / ma**2
    gb = float(xb.var(ddof=1)) / nb / mb**2
    se = math.sqrt(ga + gb)
    ratio = mb / ma
    if se == 0:
        # Runs without spread: the ratio is known exactly.
        return Effect(na, nb, ma, mb, ratio, ratio, ratio, float(ratio == 1), 0.0, ratio, ratio, margin)
    df = (ga + gb) ** 2 / (ga**2 / (na - 1) + gb**2 / (nb - 1))
    t2 = float(st.t.ppf(1 - ALPHA / 2, df))
    t1 = float(st.t.ppf(1 - ALPHA, df))
    p = float(2 * st.t.sf(abs(diff) / se, df))
    return Effect(
        na,
        nb,
        ma,
        mb,
        ratio,
        math.exp(diff - t2 * se),
        math.exp(diff + t2 * se),
        p,
        math.expm1(detectable_shift(se, df)),
        math.exp(diff - t1 * se),
        math.exp(diff + t1 * se),
        margin,
    )


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
