"""Chow & Robbins' sequential stopping rule, against its known truth: the
interval it stops with covers the mean about 95% of the time, and its mean
sample size approaches (z sigma / d)^2 (Chow & Robbins 1965, Theorems 1-2)."""

import math

import numpy as np
import pytest
from scipy import stats

from corebench.analysis.precision import enough, goodput_by_point, precision
from tests.support.records import load_result, stored_run


def test_half_width_is_the_t_interval():
    x = [101.0, 97.0, 104.0, 99.5, 100.2]
    p = precision(x, 0.05)
    lo, hi = stats.t.interval(0.95, len(x) - 1, loc=np.mean(x), scale=stats.sem(x))
    assert p.half_width == pytest.approx((hi - lo) / 2, rel=1e-12)
    assert p.relative == pytest.approx(p.half_width / np.mean(x))


def _sequential(rng, mu, sigma, d_rel, n_min=3, n_max=2000):
    x = list(rng.normal(mu, sigma, n_min))
    while not precision(x, d_rel, n_min).met and len(x) < n_max:
        x.append(rng.normal(mu, sigma))
    return x


def test_stopping_rule_coverage_and_sample_size_match_theory():
    rng = np.random.default_rng(7)
    mu, sigma, d_rel = 100.0, 1.0, 0.002  # d = 0.2: n* = (1.96 / 0.2)^2 = 96
    n_star = (stats.norm.ppf(0.975) * sigma / (d_rel * mu)) ** 2
    sizes, covered = [], 0
    for _ in range(1500):
        x = _sequential(rng, mu, sigma, d_rel)
        sizes.append(len(x))
        covered += abs(np.mean(x) - mu) <= d_rel * np.mean(x)
    # Theorem 2: E[N] / n* -> 1; at n* ~ 96, t quantiles and the overshoot
    # add a few runs (simulated: ratio 1.01-1.04).
    assert 0.97 < np.mean(sizes) / n_star < 1.08, np.mean(sizes) / n_star
    # Theorem 1: coverage -> 0.95; the rule stops early on low s, so a
    # little below (simulated: 0.93-0.95). A fixed n = 3 would cover ~0.99
    # of a wide interval, not this one.
    assert 0.92 < covered / 1500 < 0.965, covered / 1500


def test_identical_values_do_not_stop_at_once():
    # s = 0, but the 1/n term of the rule keeps n above (a/d)^2 / n.
    assert not precision([1.0, 1.0, 1.0], 0.02).met
    assert precision([1000.0] * 3, 0.02).met


def test_a_stable_target_stops_and_a_noisy_one_does_not():
    stable = [5000.0, 5010.0, 4995.0]  # half-width 0.19%
    noisy = [5000.0, 6000.0, 4000.0]  # half-width 50%
    assert enough({"a": stable, "b": stable}, 0.02)
    assert not enough({"a": stable, "b": noisy}, 0.02)
    assert enough({"a": stable, "dead": [0.0]}, 0.02), "a point without two successful runs does not hold it back"
    assert enough({}, 0.02), "a dead target: nothing to estimate, no more rounds"
    assert not enough({"a": stable[:2]}, 0.02, n_min=3)


def test_goodput_by_point_counts_measured_successful_runs_only():
    def run(key, warmup, status, ok, duration=2.0):
        result = load_result(status_counts={200: ok, 503: 10}, duration_s=duration)
        return stored_run({"k": key}, result, warmup=bool(warmup), status=status, repetition=0 if warmup else 1)

    got = goodput_by_point(
        [run("a", 0, "ok", 100), run("a", 1, "ok", 999), run("a", 0, "failed", 5), run("b", 0, "ok", 4)]
    )
    assert got == {'{"k": "a"}': [50.0], '{"k": "b"}': [2.0]}
    assert math.isinf(precision([], 0.02).half_width)
