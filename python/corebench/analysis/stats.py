"""Statistics of repeated runs. Each method names its source."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special
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
    # exp(mean of logs), with Student's t interval on the log scale: the
    # statistic latency percentiles are reported, ranked and tested by
    # (`geometric`); NaN unless every value is positive.
    geomean: float = math.nan
    geo_low: float = math.nan
    geo_high: float = math.nan


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
    the 95% confidence interval of the mean from Student's t distribution:
    mean ± t(0.975, n−1) · s/√n (e.g. NIST/SEMATECH e-Handbook §7.2.2.1)
    where any value is 0 or below; where all are positive (throughput,
    latency), the same interval on the log scale, mean · exp(±t · s/(√n ·
    mean)) (the delta method's log-transformed interval for a positive
    quantity, e.g. Hirschberg & Lye 2010, Am. Stat. 64(3)): it never
    reaches 0, which a throughput or a latency cannot, and it agrees with
    the symmetric one while s/√n is small beside the mean."""
    n = len(values)
    if n == 0:
        nan = math.nan
        return Summary(0, nan, nan, nan, nan, nan, nan, (), "no measured runs")
    x = np.asarray(values, dtype=float)
    mean, median = float(x.mean()), float(np.median(x))
    # One run says nothing of the spread: NaN, not 0.
    sd = float(x.std(ddof=1)) if n > 1 else math.nan
    half = float(st.t.ppf(1 - ALPHA / 2, n - 1)) * sd / math.sqrt(n) if n > 1 else math.nan
    low, high = mean - half, mean + half
    if n > 1 and float(x.min()) > 0:
        spread = math.exp(half / mean)
        low, high = mean / spread, mean * spread
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
        low,
        high,
        outliers,
        warning,
        *geometric(values),
    )


def geometric(values: list[float]) -> tuple[float, float, float]:
    """The geometric mean exp(mean log x) and its 95% interval
    exp(mean log x ± t(0.975, n−1) · s_log/√n): Student's t on the logs.
    A latency percentile's spread over runs grows with its size and is
    skewed right (one stalled run moves the arithmetic mean as far as the
    other runs together), so it is summarised, ranked and compared on the
    log scale (Limpert, Stahel & Abbt 2001, "Log-normal distributions
    across the sciences", BioScience 51(5); Fleming & Wallace 1986, CACM
    29(3), for benchmark figures). NaN unless every value is positive."""
    nan = math.nan
    if not values or min(values) <= 0:
        return nan, nan, nan
    logs = np.log(np.asarray(values, dtype=float))
    centre = float(logs.mean())
    # exp(log x) is not x to the last bit: equal runs give their value, so
    # 30 ms stays 30 ms against a bound of 30 ms.
    gm = min(max(math.exp(centre), min(values)), max(values))
    if len(values) < 2:
        return gm, nan, nan
    half = float(st.t.ppf(1 - ALPHA / 2, len(values) - 1)) * float(logs.std(ddof=1)) / math.sqrt(len(values))
    return gm, gm if half == 0 else math.exp(centre - half), gm if half == 0 else math.exp(centre + half)


def one_sided(values: list[float], log: bool) -> tuple[float, float]:
    """The one-sided 95% bounds of the runs' mean, each on its own side:
    Student's t on n − 1 degrees of freedom, on the logs (`log`, a
    geometric mean, as `geometric`) or as is. NaN for fewer than 2 runs,
    runs without spread (the variance is then unknown, not 0), or a log of
    a figure that is not positive."""
    nan = math.nan
    if len(values) < 2 or (log and min(values) <= 0):
        return nan, nan
    x = np.log(np.asarray(values, dtype=float)) if log else np.asarray(values, dtype=float)
    sd = float(x.std(ddof=1))
    if sd == 0:
        return nan, nan
    half = float(st.t.ppf(1 - ALPHA, len(values) - 1)) * sd / math.sqrt(len(values))
    low, high = float(x.mean()) - half, float(x.mean()) + half
    return (math.exp(low), math.exp(high)) if log else (low, high)


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


P_FLOOR = 1e-4


def p_is(p: float) -> str:
    """A p-value as said after "p": "= 0.032", or "< 0.0001" below that
    floor, where a float's 0 is underflow or runs that were all identical,
    never a certainty; "not computed" for NaN."""
    if math.isnan(p):
        return "not computed"
    return f"< {P_FLOOR:g}" if p < P_FLOOR else f"= {p:.2g}"


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


@functools.lru_cache(maxsize=256)
def dunnett_one_sided(lambdas: tuple[float, ...], df: float, alpha: float = ALPHA) -> float:
    """Dunnett's (1955) one-sided critical value d: P(T_j ≤ d for every j) =
    1 − α, where the T_j are multivariate t with `df` degrees of freedom and
    correlations ρ_jl = λ_j·λ_l (j ≠ l), the structure of the comparisons of
    several groups with one control (λ_j² = n_j / (n_j + n_control)).

    That product structure reduces the multivariate t integral to two
    dimensions (Dunnett 1955, JASA 50; Dunnett 1989, Algorithm AS 251, Appl.
    Statist. 38(3)):
    T_j = (λ_j·Z + √(1 − λ_j²)·W_j) / S with Z, W_j standard normal and S²
    a χ²_df / df, so P = E_S E_Z ∏_j Φ((d·S − λ_j·Z) / √(1 − λ_j²)). It is
    integrated on fixed grids, so the answer is deterministic (scipy's
    multivariate_t.cdf is quasi-Monte Carlo, and the tests check against it),
    and cached: a report asks for the same few again and again."""
    lam = np.asarray(lambdas, float)
    if len(lam) == 1:
        return float(st.t.ppf(1 - alpha, df)) if math.isfinite(df) else float(st.norm.ppf(1 - alpha))
    s, ws = _scale_grid(df)
    root = np.sqrt(1 - lam**2)
    # Each factor of the product steps over a width of about √(1 − λ²)/λ in
    # Z: the grid is 4 points to that width or finer (a test bounds the error).
    z = np.linspace(-9.0, 9.0, min(4001, max(401, math.ceil(18 / (float(root.min()) / 4)))))
    wz = st.norm.pdf(z) * (z[1] - z[0])

    def coverage(d: float) -> float:
        arg = (d * s[:, None, None] - lam[None, None, :] * z[None, :, None]) / root
        return float(np.prod(special.ndtr(arg), axis=2) @ wz @ ws) - (1 - alpha)

    # A single comparison's t quantile is below d, Bonferroni's bound above it.
    lo = float(st.t.ppf(1 - alpha, df)) - 0.01
    hi = float(st.t.ppf(1 - alpha / len(lam), df)) + 0.01
    return float(optimize.brentq(coverage, lo, hi, xtol=1e-6))


def _scale_grid(df: float) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights for S = √(χ²_df / df), on a grid in log S (where its
    density is smooth on both sides); S = 1 exactly when df is infinite."""
    if not math.isfinite(df):
        return np.ones(1), np.ones(1)
    lo, hi = float(st.chi2.ppf(1e-12, df)), float(st.chi2.isf(1e-12, df))
    y = np.linspace(0.5 * math.log(lo / df), 0.5 * math.log(hi / df), 81)
    s2 = np.exp(2 * y)
    # Density of log S: χ²_df at df·S², times d(df·S²)/d(log S) = 2·df·S².
    w = np.exp(st.chi2.logpdf(df * s2, df)) * 2 * df * s2
    return np.exp(y), w / w.sum()


@dataclass(frozen=True)
class BestSet:
    """Hsu's multiple comparisons with the best, on groups of runs."""

    # Per group: the upper bound of the simultaneous interval for
    # μ_i − max_{j≠i} μ_j, on the scale where larger is better (so for
    # lower-is-better, of min_{j≠i} μ_j − μ_i); NaN: the group was not tested.
    upper: list[float]
    critical: list[float]  # per group: its Dunnett critical value d_i (NaN: not tested)
    df: int  # of the pooled variance: N − k over the tested groups
    in_set: list[bool]  # cannot be shown worse than the best of the others
    tested: list[bool]  # had 2 or more runs


def mcb(groups: list[list[float]], higher: bool = True, alpha: float = ALPHA) -> BestSet:
    """Hsu's (1981; 1984) multiple comparisons with the best (Hsu 1996,
    "Multiple Comparisons", ch. 4): with the one-way ANOVA's pooled variance
    σ̂² (error mean square, df = N − k), the constrained upper bound for
    μ_i − max_{j≠i} μ_j is D_i⁺ = (min_{j≠i} ȳ_i − ȳ_j + d_i·σ̂·√(1/n_i + 1/n_j))⁺,
    simultaneous at 1 − α. Group i is in the best set when D_i⁺ > 0: it
    cannot be shown worse than the best of the others; the true best is in
    the set with probability at least 1 − α.

    Unequal n: d_i is Dunnett's one-sided critical value with group i as the
    control (correlations λ_jλ_l, λ_j² = n_j / (n_i + n_j)), so each group
    gets its own, and the true best's comparisons hold at exactly 1 − α
    (Hsu 1996, ch. 4, the unbalanced one-way model; Edwards & Hsu 1983,
    "Multiple comparisons with the best treatment", JASA 78; a test checks
    that rate by simulation). With
    `higher` False, smaller is better (the values are negated).

    Groups with fewer than 2 runs are not tested and stay in the set: a run
    alone says nothing of its own spread, and the pooled variance would lend
    it one on the assumption of equal spreads that it cannot check. They do
    not enter the variance or the comparisons of the others. When the runs
    have no spread at all (σ̂ = 0) a group equal to the best stays in it."""
    tested = [len(g) >= 2 for g in groups]
    idx = [i for i, t in enumerate(tested) if t]
    nan = math.nan
    upper, critical = [nan] * len(groups), [nan] * len(groups)
    sign = 1.0 if higher else -1.0
    means = {i: sign * float(np.mean(groups[i])) for i in idx}
    n = {i: len(groups[i]) for i in idx}
    df = sum(n.values()) - len(idx)
    if len(idx) < 2:
        return BestSet(upper, critical, df, [True] * len(groups), tested)
    sigma = math.sqrt(sum(float(np.var(groups[i], ddof=1)) * (n[i] - 1) for i in idx) / df)
    for i in idx:
        rivals = [j for j in idx if j != i]
        # Sorted, so groups of the same sizes share one cached value.
        lambdas = tuple(sorted(math.sqrt(n[j] / (n[i] + n[j])) for j in rivals))
        d = critical[i] = dunnett_one_sided(lambdas, df, alpha)
        bound = min(means[i] - means[j] + d * sigma * math.sqrt(1 / n[i] + 1 / n[j]) for j in rivals)
        upper[i] = max(bound, 0.0)
    in_set = [
        not t or (u > 0 if sigma > 0 else means[i] >= max(means.values()))
        for i, (t, u) in enumerate(zip(tested, upper, strict=True))
    ]
    return BestSet(upper, critical, df, in_set, tested)
