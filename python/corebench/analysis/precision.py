"""Adaptive repetitions: when an experiment has measured enough (the
runner asks between rounds; the report says how far it got).

The stopping rule is Chow & Robbins' fixed-width sequential confidence
interval (Y. S. Chow and H. Robbins, "On the asymptotic theory of
fixed-width sequential confidence intervals for the mean", Ann. Math.
Statist. 36(2), 1965, 457-462): after n >= n0 observations, stop at the
first n with

    n >= (a_n / d)^2 * (s_n^2 + 1/n)

where s_n^2 is the sample variance and a_n -> z_{1-alpha/2}; the interval
x_bar +- d then covers the mean with probability -> 1 - alpha as d -> 0, and
E[N] / (z sigma / d)^2 -> 1. The 1/n term keeps a few identical values
(s = 0) from stopping the rule at once. The width here is relative,
d = precision * |x_bar_n| (the proportional-accuracy form, A. Nadas, Ann.
Math. Statist. 40(5), 1969, 1671-1675), and a_n is Student's t quantile
with n - 1 degrees of freedom, as Law & Kelton (*Simulation Modeling and
Analysis*, §9.4.1) use it for small n."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scipy import stats

from corebench.store import StoredRun

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Precision:
    n: int
    mean: float
    half_width: float  # the 95% CI's half-width, t * s / sqrt(n)
    met: bool  # the stopping rule holds

    @property
    def relative(self) -> float:
        return self.half_width / abs(self.mean) if self.mean else math.inf


@functools.cache
def _t(df: int) -> float:
    return float(stats.t.ppf(0.5 + CONFIDENCE / 2, df))


def precision(values: Sequence[float], target: float, n_min: int = 3) -> Precision:
    """How precisely `values` give their mean, and whether a sequential
    experiment aiming at a relative half-width of `target` may stop."""
    n = len(values)
    if n < 2:
        return Precision(n, values[0] if values else math.nan, math.inf, False)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    a = _t(n - 1)
    half = a * math.sqrt(var / n)
    d = target * abs(mean)
    met = n >= n_min and d > 0 and n >= (a / d) ** 2 * (var + 1 / n)
    return Precision(n, mean, half, met)


def enough(by_point: Mapping[str, Sequence[float]], target: float, n_min: int = 3) -> bool:
    """Every point's mean known within `target`. A point without two
    successful runs cannot be estimated by more of the same: it does not hold
    the experiment back (the report names it failing); a dead target, with
    no such point at all, stops after the first rounds instead of running
    every round to the most."""
    return all(precision(v, target, n_min).met for v in by_point.values() if len(v) >= 2)


def goodput_by_point(runs: Sequence[StoredRun]) -> dict[str, list[float]]:
    """Each point's goodput over its successful measured runs."""
    out: dict[str, list[float]] = {}
    for r in runs:
        if r.measured and r.result is not None:
            out.setdefault(r.point_key, []).append(r.result.goodput_rps)
    return out
