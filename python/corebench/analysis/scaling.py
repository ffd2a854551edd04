"""Scaling: speedup, efficiency, throughput per core-GHz, and the Universal
Scalability Law and Amdahl's law fitted by nonlinear least squares."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from scipy import optimize
from scipy import stats as st


def speedup(x: float, x1: float) -> float:
    """Jain 1991 (docs/architecture.md#terms): rps(n) / rps(1)."""
    return x / x1


def efficiency(x: float, n: float, x1: float) -> float:
    """Jain 1991 (docs/architecture.md#terms): rps(n) / (n · rps(1))."""
    return x / (n * x1)


def per_core_ghz(x: float, n: float, ghz: float) -> float:
    """The first field report's efficiency: rps / (cores · GHz)."""
    return x / (n * ghz)


FloatArray = npt.NDArray[np.float64]


def usl(n: npt.ArrayLike, lam: float, sigma: float, kappa: float) -> FloatArray:
    """Gunther's Universal Scalability Law: X(N) = λN / (1 + σ(N−1) + κN(N−1))
    (N. J. Gunther, "Guerrilla Capacity Planning", 2007)."""
    a = np.asarray(n, dtype=np.float64)
    return lam * a / (1 + sigma * (a - 1) + kappa * a * (a - 1))


def amdahl(n: npt.ArrayLike, lam: float, sigma: float) -> FloatArray:
    """Amdahl's law as the USL with κ = 0."""
    return usl(n, lam, sigma, 0.0)


def linear(n: npt.ArrayLike, lam: float) -> FloatArray:
    """Ideal scaling, the USL with σ = κ = 0: X(N) = λN."""
    return lam * np.asarray(n, dtype=np.float64)


# Each law: its function, its parameters, their bounds (as the R package
# usl bounds them: λ free, 0 ≤ σ, κ ≤ 1) and starting values relative to λ0.
LAWS: dict[str, tuple[Callable[..., FloatArray], list[str], list[float], list[float]]] = {
    "linear": (linear, ["lambda"], [0.0], [np.inf]),
    "amdahl": (amdahl, ["lambda", "sigma"], [0.0, 0.0], [np.inf, 1.0]),
    "usl": (usl, ["lambda", "sigma", "kappa"], [0.0, 0.0, 0.0], [np.inf, 1.0, 1.0]),
}
# The fewest distinct levels each law is fitted to: one more than its
# parameters, so that something is left to judge the fit by (and its
# intervals exist); the USL asks for five, as a curve with a peak needs
# points on both of its bends.
MIN_LEVELS = {"linear": 2, "amdahl": 3, "usl": 5}


@dataclass
class Fit:
    law: str  # "linear", "amdahl" or "usl"
    method: str
    params: dict[str, float]
    # 95% profile-likelihood intervals (Bates & Watts), within the bounds.
    intervals: dict[str, tuple[float, float]]
    r2: float
    rss: float
    # Gunther's peak N* = √((1 − σ)/κ): only where κ's interval excludes 0.
    peak_n: float | None
    peak_x: float | None
    n: int
    predictions: dict[float, float] = field(default_factory=dict)
    # The 95% confidence band of each prediction (delta method).
    bands: dict[float, tuple[float, float]] = field(default_factory=dict)
    cov: list[list[float]] = field(default_factory=list, repr=False)

    def predict(self, at: float) -> float:
        p = self.params
        return float(usl(at, p["lambda"], p.get("sigma", 0.0), p.get("kappa", 0.0)))

    def band(self, at: float) -> tuple[float, float]:
        """The 95% confidence band of X(at): t · the delta method's standard
        error (Bates & Watts 1988, §2.3.2), from the fit's covariance."""
        names = list(self.params)
        if not self.cov or not np.all(np.isfinite(self.cov)) or self.n <= len(names):
            return (math.nan, math.nan)
        x = self.predict(at)
        grad = []
        for k in names:
            step = max(abs(self.params[k]) * 1e-6, 1e-12)
            moved = Fit(**{**self.__dict__, "params": {**self.params, k: self.params[k] + step}})
            grad.append((moved.predict(at) - x) / step)
        g = np.asarray(grad)
        se = math.sqrt(max(float(g @ np.asarray(self.cov) @ g), 0.0))
        t = float(st.t.ppf(0.975, self.n - len(names)))
        return (max(x - t * se, 0.0), x + t * se)


METHOD = (
    "unweighted nonlinear least squares on (N, X), λ free, 0 ≤ σ, κ ≤ 1 "
    "(as the R package usl; scipy.optimize.curve_fit, trust region reflective); "
    "95% profile-likelihood intervals (Bates & Watts 1988)"
)


ZERO = 1e-12


def _least_squares(
    law: str, n: FloatArray, x: FloatArray, fixed: dict[int, float] | None = None
) -> tuple[FloatArray, FloatArray]:
    """The law's parameters minimising the squared residuals, with some of
    them held at given values (for profiles); and their covariance."""
    model, names, lo, hi = LAWS[law]
    fixed = fixed or {}
    free = [i for i in range(len(names)) if i not in fixed]
    lam0 = float(np.max(x / n))
    start = [lam0, 0.01, 0.0001][: len(names)]

    def f(a: FloatArray, *free_values: float) -> FloatArray:
        values = [0.0] * len(names)
        for i, v in fixed.items():
            values[i] = v
        for i, v in zip(free, free_values, strict=True):
            values[i] = v
        return model(a, *values)

    if not free:
        return np.asarray([fixed[i] for i in range(len(names))]), np.zeros((0, 0))
    with warnings.catch_warnings():
        # Too few points for a covariance: NaN, which reports show as unknown.
        warnings.simplefilter("ignore", optimize.OptimizeWarning)
        popt, pcov = optimize.curve_fit(
            f,
            n,
            x,
            p0=[min(max(start[i], lo[i]), hi[i]) for i in free],
            bounds=([lo[i] for i in free], [hi[i] for i in free]),
            max_nfev=20000,
        )
    values = np.zeros(len(names))
    for i, v in fixed.items():
        values[i] = v
    values[free] = popt
    return values, pcov


def _rss(law: str, n: FloatArray, x: FloatArray, values: FloatArray) -> float:
    return float(np.sum((x - LAWS[law][0](n, *values)) ** 2))


@dataclass(frozen=True)
class ScalingRow:
    label: str
    cores: float
    throughput: float
    speedup: float
    efficiency: float
    per_core_ghz: float | None
    # The other factors' levels the row's CPU steps hold equal (matched load
    # and configuration); "" where cpus is the only factor.
    at: str = ""
    ghz: float | None = None  # the clock per_core_ghz is divided by
    throughput_ci: tuple[float, float] | None = None  # the mean's 95% interval, where measured runs give one
    note: str = ""  # why the row is not the server's scaling as it stands (a lower bound, a rate the load set)


def scaling_table(rows: list[tuple[str, float, float, float | None]], baseline: float) -> list[ScalingRow]:
    """(label, cores, throughput, GHz) rows against the 1-core throughput."""
    return [
        ScalingRow(
            label,
            n,
            x,
            speedup(x, baseline),
            efficiency(x, n, baseline),
            per_core_ghz(x, n, ghz) if ghz else None,
            ghz=ghz,
        )
        for label, n, x, ghz in rows
    ]


def fit(ns: list[float], xs: list[float], law: str = "usl", predict_at: list[float] | None = None) -> Fit:
    """Fits a law (USL, Amdahl or linear) to measured (N, X) pairs, as the R
    package `usl` does (nls with the port algorithm: unweighted, λ free, σ
    and κ bounded to [0, 1]); starts from λ = max X/N. The transformed-
    regression method (a quadratic in N − 1 after normalising by X(1)) gives
    other numbers on the same data, so reports name this method."""
    n, x = np.asarray(ns, float), np.asarray(xs, float)
    names = LAWS[law][1]
    if len(n) < len(names) + (1 if law != "linear" else 0):
        raise ValueError(f"the {law} fit needs at least {len(names) + 1} points, got {len(n)}")
    values, pcov = _least_squares(law, n, x)
    # A coefficient at its bound of 0 comes back as a tiny number (1e-10 on
    # perfectly linear data): where its term changes the denominator of the
    # law by less than a part in a million over the measured range (far below
    # any measurement's precision), it is 0.
    top = float(np.max(n))
    reach = [1.0, top - 1, top * (top - 1)]
    values = np.asarray([0.0 if i and abs(v) * reach[i] < 1e-6 else float(v) for i, v in enumerate(values)])
    rss = _rss(law, n, x, values)
    spread = float(np.sum((x - x.mean()) ** 2))
    r2 = 1 - rss / spread if spread > 0 else math.nan
    params = dict(zip(names, map(float, values), strict=True))
    intervals = {k: profile_interval(law, n, x, values, i) for i, k in enumerate(names)}
    kappa, sigma = params.get("kappa", 0.0), params.get("sigma", 0.0)
    # Gunther: the peak of the USL is at N* = √((1 − σ)/κ), and it exists
    # only when κ > 0: claimed only where κ's interval excludes 0.
    significant = law == "usl" and intervals["kappa"][0] > 0 and sigma < 1
    peak_n = math.sqrt((1 - sigma) / kappa) if significant and kappa > 0 else None
    cov = pcov.tolist() if pcov.size and np.all(np.isfinite(pcov)) else []
    f = Fit(law, METHOD, params, intervals, r2, rss, peak_n, None, len(n), cov=cov)
    if peak_n is not None:
        f.peak_x = f.predict(peak_n)
    for at in predict_at or []:
        f.predictions[at] = f.predict(at)
        f.bands[at] = f.band(at)
    return f


def profile_interval(law: str, n: FloatArray, x: FloatArray, values: FloatArray, j: int) -> tuple[float, float]:
    """The 95% profile-likelihood interval of parameter j: the values θj at
    which the least residual sum of squares with θj held fixed stays below
    RSS · (1 + F(1, n − p; 0.95) / (n − p)) (Bates & Watts, "Nonlinear
    Regression Analysis and Its Applications", 1988, §6.1). Unlike estimate
    ± t·se it respects the parameter's bounds (σ ≥ 0) and the curvature of
    the model. NaN when no residual degree of freedom is left."""
    _, names, lo, hi = LAWS[law]
    p = len(names)
    dof = len(n) - p
    best = _rss(law, n, x, values)
    if dof < 1:
        return (math.nan, math.nan)
    limit = best * (1 + float(st.f.ppf(0.95, 1, dof)) / dof)
    at = float(values[j])
    if best <= ZERO * max(float(np.sum(x**2)), 1.0):
        return (at, at)  # the law goes through every point

    def excess(v: float) -> float:
        try:
            held, _ = _least_squares(law, n, x, {j: v})
        except (ValueError, RuntimeError):
            return math.inf
        return _rss(law, n, x, held) - limit

    def edge(bound: float, direction: float) -> float:
        if math.isfinite(bound) and excess(bound) <= 0:
            return bound
        # Walk outwards until the profile crosses the limit, then bisect.
        step = (abs(at) or (1e-6 if math.isfinite(bound) else 1.0)) * 1e-3
        inner = at
        for _ in range(80):
            outer = at + direction * step
            if math.isfinite(bound) and (outer - bound) * direction >= 0:
                outer = bound
            if excess(outer) > 0:
                return float(optimize.brentq(excess, min(inner, outer), max(inner, outer), xtol=1e-12, rtol=1e-9))
            if outer == bound:
                return bound
            inner, step = outer, step * 2
        return math.inf * direction

    return (edge(lo[j], -1.0), edge(hi[j], 1.0))
