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
    """DESIGN.md: rps(n) / rps(1)."""
    return x / x1


def efficiency(x: float, n: float, x1: float) -> float:
    """DESIGN.md: rps(n) / (n · rps(1))."""
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


@dataclass
class Fit:
    law: str  # "usl" or "amdahl"
    method: str
    params: dict[str, float]
    # 95% intervals from the covariance of the least-squares estimate
    # (estimate ± t(0.975, n − p) · standard error).
    intervals: dict[str, tuple[float, float]]
    r2: float
    peak_n: float | None
    peak_x: float | None
    n: int
    predictions: dict[float, float] = field(default_factory=dict)

    def predict(self, at: float) -> float:
        p = self.params
        return float(usl(at, p["lambda"], p["sigma"], p.get("kappa", 0.0)))


METHOD = (
    "unweighted nonlinear least squares on (N, X), λ free, 0 ≤ σ, κ ≤ 1 "
    "(as the R package usl; scipy.optimize.curve_fit, trust region reflective)"
)


ZERO = 1e-12


def _curve_fit(
    law: str, n: FloatArray, x: FloatArray, lam0: float
) -> tuple[FloatArray, FloatArray, list[str], Callable[..., FloatArray]]:
    if law == "usl":
        popt, pcov = optimize.curve_fit(
            usl, n, x, p0=[lam0, 0.01, 0.0001], bounds=([0, 0, 0], [np.inf, 1, 1]), max_nfev=20000
        )
        return popt, pcov, ["lambda", "sigma", "kappa"], usl
    popt, pcov = optimize.curve_fit(amdahl, n, x, p0=[lam0, 0.01], bounds=([0, 0], [np.inf, 1]), max_nfev=20000)
    return popt, pcov, ["lambda", "sigma"], amdahl


@dataclass(frozen=True)
class ScalingRow:
    label: str
    cores: float
    throughput: float
    speedup: float
    efficiency: float
    per_core_ghz: float | None


def scaling_table(rows: list[tuple[str, float, float, float | None]], baseline: float) -> list[ScalingRow]:
    """(label, cores, throughput, GHz) rows against the 1-core throughput."""
    return [
        ScalingRow(
            label, n, x, speedup(x, baseline), efficiency(x, n, baseline), per_core_ghz(x, n, ghz) if ghz else None
        )
        for label, n, x, ghz in rows
    ]


def fit(ns: list[float], xs: list[float], law: str = "usl", predict_at: list[float] | None = None) -> Fit:
    """Fits the USL (or Amdahl) to measured (N, X) pairs, as the R package
    `usl` does (nls with the port algorithm: unweighted, λ free, σ and κ
    bounded to [0, 1]); starts from λ = max X/N. The transformed-regression
    method (a quadratic in N − 1 after normalising by X(1)) gives other
    numbers on the same data, so reports name this method."""
    n, x = np.asarray(ns, float), np.asarray(xs, float)
    if len(n) < (3 if law == "usl" else 2):
        raise ValueError(f"the {law.upper()} fit needs at least {3 if law == 'usl' else 2} points, got {len(n)}")
    lam0 = float(np.max(x / n))
    with warnings.catch_warnings():
        # Too few points for a covariance: the intervals come out as NaN, which reports show as unknown.
        warnings.simplefilter("ignore", optimize.OptimizeWarning)
        popt, pcov, names, model = _curve_fit(law, n, x, lam0)
    residual = x - model(n, *popt)
    spread = float(np.sum((x - x.mean()) ** 2))
    r2 = 1 - float(np.sum(residual**2)) / spread if spread > 0 else math.nan
    dof = max(len(n) - len(popt), 1)
    t = float(st.t.ppf(0.975, dof))
    se = np.sqrt(np.clip(np.diag(pcov), 0, None)) if np.all(np.isfinite(pcov)) else np.full(len(popt), np.nan)
    # A coefficient at its bound of 0 comes back as ~1e-19: it is 0.
    params = {k: (0.0 if k != "lambda" and abs(v) < ZERO else float(v)) for k, v in zip(names, popt, strict=True)}
    intervals = {k: (float(v - t * s), float(v + t * s)) for k, v, s in zip(names, popt, se, strict=True)}
    kappa, sigma = params.get("kappa", 0.0), params["sigma"]
    # Gunther: the peak of the USL is at N* = √((1 − σ)/κ), only when κ > 0.
    peak_n = math.sqrt((1 - sigma) / kappa) if kappa > 0 and sigma < 1 else None
    f = Fit(law, METHOD, params, intervals, r2, peak_n, None, len(n))
    if peak_n is not None:
        f.peak_x = f.predict(peak_n)
    for at in predict_at or []:
        f.predictions[at] = f.predict(at)
    return f
