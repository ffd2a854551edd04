"""Choosing and bounding a scaling law, against known truth: synthetic data
from each law, statsmodels' F test and t intervals where the model is linear,
and coverage of the profile intervals over repeated noisy samples."""

import numpy as np
import pytest
import statsmodels.api as sm

from corebench.analysis.scaling import Fit, fit, profile_interval, usl
from corebench.analysis.scaling_model import MAX_EXTRAPOLATION, below_saturation, choose, f_test

N = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]


def noisy(truth, seed, cv=0.01):
    rng = np.random.default_rng(seed)
    return list(np.asarray(truth) * (1 + rng.normal(0, cv, len(truth))))


def test_perfectly_linear_data_is_linear_with_no_peak():
    xs = [100 * n for n in N]
    m = choose(N, xs)
    assert m.law == "linear" and m.chosen.params["lambda"] == pytest.approx(100)
    assert m.fits["usl"].peak_n is None, "linear data has no peak, not N* = 462,636"
    assert m.fits["usl"].params["kappa"] == 0 and m.fits["usl"].params["sigma"] == 0


def test_noisy_linear_data_stays_linear():
    for seed in range(5):
        m = choose(N, noisy([100 * n for n in N], seed, 0.02))
        assert m.law == "linear", m.why
        assert m.fits["usl"].peak_n is None


def test_usl_data_gives_the_usl_and_its_peak():
    truth = usl(np.asarray(N), 100, 0.05, 0.002)
    m = choose(N, noisy(truth, 7))
    assert m.law == "usl", m.why
    f = m.chosen
    assert f.intervals["sigma"][0] < 0.05 < f.intervals["sigma"][1]
    assert f.intervals["kappa"][0] < 0.002 < f.intervals["kappa"][1]
    assert f.peak_n == pytest.approx(np.sqrt(0.95 / 0.002), rel=0.15)


def test_amdahl_data_gives_amdahl():
    truth = usl(np.asarray(N), 100, 0.05, 0.0)
    m = choose(N, noisy(truth, 3, 0.005))
    assert m.law == "amdahl", m.why
    assert m.fits["usl"].peak_n is None, "κ's interval reaches 0: no peak is claimed"


def test_too_few_levels_are_said_not_fitted():
    assert choose([4.0], [100.0]).law is None
    m = choose([1.0, 2.0, 4.0, 8.0], [100.0, 190.0, 340.0, 520.0])
    assert "usl" not in m.fits and "the USL not tried: it needs 5 levels" in m.why


def test_saturated_levels_are_left_out():
    # A closed loop past saturation: 25, 75 and 150 clients get the same throughput.
    kept, dropped = below_saturation([25.0, 75.0, 150.0], [5000.0, 5010.0, 4990.0])
    assert (kept, dropped) == ([0], [1, 2])
    # Still growing: every level is kept.
    assert below_saturation([1.0, 2.0, 4.0, 8.0], [100.0, 200.0, 390.0, 700.0]) == ([0, 1, 2, 3], [])
    # 4 clients reach 95% of the peak: 8 only queue.
    assert below_saturation([1.0, 2.0, 4.0, 8.0], [100.0, 200.0, 390.0, 400.0]) == ([0, 1, 2], [3])


def test_predictions_never_go_past_twice_the_largest_level():
    m = choose(N, [100 * n for n in N])
    assert max(m.chosen.predictions) == MAX_EXTRAPOLATION * max(N) == m.limit


def _stub(law, rss, n, p):
    return Fit(law, "", {f"p{i}": 1.0 for i in range(p)}, {}, 0.0, rss, None, None, n)


def test_f_test_matches_statsmodels_on_nested_linear_models():
    rng = np.random.default_rng(11)
    x = np.linspace(1, 10, 12)
    y = 3 * x + 0.2 * x**2 + rng.normal(0, 1, len(x))
    small = sm.OLS(y, np.column_stack([x])).fit()
    big = sm.OLS(y, np.column_stack([x, x**2])).fit()
    want_f, want_p, _ = big.compare_f_test(small)
    got = f_test(_stub("a", small.ssr, len(x), 1), _stub("b", big.ssr, len(x), 2))
    assert got.f == pytest.approx(want_f, rel=1e-9) and got.p_value == pytest.approx(want_p, rel=1e-9)


def test_profile_interval_of_a_linear_parameter_is_the_t_interval():
    # For a parameter that enters linearly the profile interval is exactly
    # estimate ± t·se (F(1, ν) = t²(ν)): statsmodels' OLS through the origin.
    rng = np.random.default_rng(5)
    n = np.asarray(N)
    x = 50 * n + rng.normal(0, 20, len(n))
    f = fit(list(n), list(x), "linear")
    lo, hi = sm.OLS(x, n[:, None]).fit().conf_int(0.05)[0]
    assert f.intervals["lambda"] == pytest.approx((lo, hi), rel=1e-6)
    assert profile_interval("linear", n, x, np.asarray([f.params["lambda"]]), 0) == pytest.approx((lo, hi), rel=1e-6)


def test_profile_intervals_cover_the_truth_about_95_percent_of_the_time():
    truth = usl(np.asarray(N), 100, 0.04, 0.0)
    covered = 0
    trials = 40
    for seed in range(trials):
        f = fit(N, noisy(truth, 100 + seed, 0.02), "amdahl")
        lo, hi = f.intervals["sigma"]
        covered += lo <= 0.04 <= hi
    # 95% nominal: 38 of 40 expected; below 33 would be 3 standard errors off.
    assert covered >= 33, covered


def test_intervals_respect_the_bounds():
    f = fit(N, [100 * n for n in N][:-1] + [3150.0], "usl")
    assert f.intervals["sigma"][0] >= 0 and f.intervals["kappa"][0] >= 0
