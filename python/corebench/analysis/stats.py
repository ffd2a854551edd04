"""Statistics of repeated runs. Each method names its source."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as st

# Fewer measured runs than this make a confidence interval meaningless.
MIN_RUNS = 3
# Iglewicz & Hoaglin (1993), "How to Detect and Handle Outliers": a modified
# z-score above 3.5 marks an outlier; hyperfine uses the same rule.
OUTLIER_Z = 3.5
# Below this many runs the median absolute deviation is too coarse for the
# rule: no outlier is claimed.
MIN_RUNS_FOR_OUTLIERS = 5
ALPHA = 0.05


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    sd: float
    cv: float
    median: float
    ci_low: float
    ci_high: float
    # Indices (into the values given) of outliers: flagged, never dropped.
    outliers: tuple[int, ...]
    warning: str | None


def modified_z(values: list[float]) -> list[float]:
    """Iglewicz & Hoaglin (1993): M_i = 0.6745 (x_i − median) / MAD; when
    more than half the values are equal (MAD = 0), the mean absolute
    deviation stands in: M_i = (x_i − median) / (1.253314 · MeanAD)."""
    x = np.asarray(values, dtype=float)
    med = float(np.median(x))
    mad = float(np.median(np.abs(x - med)))
    if mad > 0:
        return list(0.6745 * (x - med) / mad)
    mean_ad = float(np.mean(np.abs(x - med)))
    if mean_ad == 0:
        return [0.0] * len(values)
    return list((x - med) / (1.253314 * mean_ad))


def summarize(values: list[float]) -> Summary:
    """Mean, sample standard deviation, coefficient of variation, median, and
    the 95% confidence interval of the mean from Student's t distribution
    (mean ± t(0.975, n−1) · s/√n; e.g. NIST/SEMATECH e-Handbook §7.2.2.1)."""
    n = len(values)
    if n == 0:
        nan = math.nan
        return Summary(0, nan, nan, nan, nan, nan, nan, (), "no measured runs")
    x = np.asarray(values, dtype=float)
    mean, median = float(x.mean()), float(np.median(x))
    # One run says nothing of the spread: NaN, not 0.
    sd = float(x.std(ddof=1)) if n > 1 else math.nan
    half = float(st.t.ppf(1 - ALPHA / 2, n - 1)) * sd / math.sqrt(n) if n > 1 else math.nan
    outliers = (
        tuple(i for i, z in enumerate(modified_z(values)) if abs(z) > OUTLIER_Z) if n >= MIN_RUNS_FOR_OUTLIERS else ()
    )
    warning = None if n >= MIN_RUNS else f"only {n} measured run{'s' if n != 1 else ''}: the interval means little"
    return Summary(
        n,
        mean,
        sd,
        sd / mean if mean and not math.isnan(sd) else math.nan,
        median,
        mean - half,
        mean + half,
        outliers,
        warning,
    )


@dataclass(frozen=True)
class Comparison:
    """B against A: the relative difference of the means with its 95%
    interval, and a significance test."""

    relative: float
    rel_low: float
    rel_high: float
    test: str
    p_value: float
    significant: bool

    def words(self, what: str = "throughput") -> str:
        if math.isnan(self.p_value):
            return f"{what} not tested (fewer than 2 measured runs a side, or a mean of 0)"
        if not self.significant:
            return f"no significant difference in {what} ({self.test}, p = {self.p_value:.2g})"
        way = "higher" if self.relative > 0 else "lower"
        return (
            f"{what} {abs(self.relative) * 100:.1f}% {way} (95% CI {self.rel_low * 100:+.1f}% to "
            f"{self.rel_high * 100:+.1f}%; {self.test}, p = {self.p_value:.2g})"
        )


def compare(a: list[float], b: list[float]) -> Comparison:
    """Welch's t-test (unequal variances; Welch 1947) for the p-value, and
    Fieller's interval for the ratio of the means B/A (Fieller 1954, with
    Welch's degrees of freedom), less 1: the interval accounts for the
    uncertainty of A's mean as well as B's. With fewer than 2 runs a side no
    test is possible: reported as not significant."""
    xa, xb = np.asarray(a, float), np.asarray(b, float)
    ma, mb = float(xa.mean()), float(xb.mean())
    rel = (mb - ma) / ma if ma else math.nan
    if len(xa) < 2 or len(xb) < 2 or not ma:
        return Comparison(rel, math.nan, math.nan, "Welch's t-test", math.nan, False)
    va, vb = xa.var(ddof=1) / len(xa), xb.var(ddof=1) / len(xb)
    se = math.sqrt(va + vb)
    if se == 0:
        same = mb == ma
        return Comparison(rel, rel, rel, "Welch's t-test", 1.0 if same else 0.0, not same)
    # Welch–Satterthwaite degrees of freedom.
    df = (va + vb) ** 2 / (va**2 / (len(xa) - 1) + vb**2 / (len(xb) - 1))
    t = (mb - ma) / se
    p = float(2 * st.t.sf(abs(t), df))
    low, high = fieller(ma, va, mb, vb, float(st.t.ppf(1 - ALPHA / 2, df)))
    return Comparison(rel, low - 1, high - 1, "Welch's t-test", p, p < ALPHA)


def fieller(ma: float, va: float, mb: float, vb: float, t: float) -> tuple[float, float]:
    """Fieller's (1954) confidence interval for the ratio mb/ma of two
    independent means with squared standard errors va and vb: the ρ where
    (mb − ρ·ma)² ≤ t²(vb + ρ²·va). Unbounded (±∞) when A's mean is not
    itself significantly different from 0."""
    a = ma * ma - t * t * va
    b = ma * mb
    c = mb * mb - t * t * vb
    disc = b * b - a * c
    if a <= 0 or disc < 0:
        return (-math.inf, math.inf)
    root = math.sqrt(disc)
    return ((b - root) / a, (b + root) / a)


def holm(p_values: list[float]) -> list[float]:
    """Holm's (1979) step-down adjustment: the family-wise error rate stays
    at α over all the tests. NaN (untested) stays NaN and is not counted."""
    idx = [i for i, p in enumerate(p_values) if not math.isnan(p)]
    m = len(idx)
    out = list(p_values)
    running = 0.0
    for rank, i in enumerate(sorted(idx, key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        out[i] = running
    return out


def benjamini_hochberg(p_values: list[float]) -> list[float]:
    """Benjamini & Hochberg's (1995) step-up adjustment: controls the false
    discovery rate rather than the family-wise error. NaN stays NaN."""
    idx = [i for i, p in enumerate(p_values) if not math.isnan(p)]
    m = len(idx)
    out = list(p_values)
    running = 1.0
    for rank, i in reversed(list(enumerate(sorted(idx, key=lambda i: p_values[i]), 1))):
        running = min(running, p_values[i] * m / rank)
        out[i] = running
    return out


def dispersion_differs(a: list[float], b: list[float]) -> float:
    """Brown & Forsythe's (1974) test of equal spread (Levene's test about
    the median): its p-value, NaN with fewer than 3 runs a side."""
    if len(a) < 3 or len(b) < 3 or (np.ptp(a) == 0 and np.ptp(b) == 0):
        return math.nan
    return float(st.levene(a, b, center="median").pvalue)
