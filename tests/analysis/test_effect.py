"""Effects classified by what their interval excludes, against known truth:
statsmodels' power analysis, coverage on synthetic data of known ratio, and
designs whose power is known to be too low to see a real effect."""

import math

import numpy as np
import pytest
from scipy import stats as st
from statsmodels.stats.power import TTestIndPower

from corebench.analysis.effect import detectable_shift, effect, log_effect, power
from corebench.analysis.stats import geometric, summarize


@pytest.mark.parametrize("n", [2, 3, 5, 10])
def test_detectable_shift_equals_statsmodels_power_analysis(n):
    # Two groups of n with σ = 1: the difference's standard error is √(2/n)
    # on 2n − 2 degrees of freedom, and statsmodels solves for Cohen's d.
    d = TTestIndPower().solve_power(effect_size=None, nobs1=n, alpha=0.05, power=0.8, ratio=1.0)
    assert detectable_shift(math.sqrt(2 / n), 2 * n - 2) == pytest.approx(d, rel=1e-6)
    assert power(d, math.sqrt(2 / n), 2 * n - 2) == pytest.approx(0.8, abs=1e-6)


def test_interval_covers_the_true_ratio_and_never_reaches_zero():
    rng = np.random.default_rng(7)
    covered, trials = 0, 1000
    for _ in range(trials):
        a, b = rng.normal(1000, 60, 5), rng.normal(1200, 60, 5)
        e = effect(list(a), list(b))
        covered += e.low <= 1.2 <= e.high
    # 95% nominal over 1,000 trials: the binomial standard error is 0.7 points.
    assert 0.93 <= covered / trials <= 0.97, covered / trials
    wide = effect([17.0, 1062.0], [500.0, 900.0])
    assert 0 < wide.low < 1 < wide.high, "a throughput ratio's interval stays above 0"


def test_a_real_difference_without_power_is_inconclusive_with_what_could_be_seen():
    # The field case: +78% from 2 runs a side, runs 25% apart.
    e = effect([4000.0, 6000.0], [8500.0, 9300.0])
    assert e.verdict == "inconclusive" and e.p_value > 0.05
    assert e.detectable > e.relative, "the design could not have seen the effect it measured"
    words = e.words()
    assert words.startswith("throughput inconclusive: +78.0% (95% CI ")
    assert "this design (2 and 2 runs) could detect a change of " in words and "80% power" in words
    assert "no significant difference" not in words


def test_higher_lower_and_equivalent():
    rng = np.random.default_rng(3)
    a = list(rng.normal(1000, 10, 6))
    assert effect(a, list(rng.normal(1300, 10, 6))).verdict == "higher"
    assert effect(a, list(rng.normal(700, 10, 6))).verdict == "lower"
    same = effect(a, list(rng.normal(1000, 10, 6)))
    assert same.verdict == "equivalent" and "equivalent within ±5%" in same.words()
    assert same.eq_low > 1 / 1.05 and same.eq_high < 1.05
    # Held to α over a family, "higher" can become "inconclusive", and its
    # interval widens to match: a printed interval that excludes no change
    # is always called higher or lower.
    close = effect([100.0, 101.0, 99.0], [103.0, 104.0, 102.0])
    wide = close.in_family(36)
    assert close.verdict == "higher" and close.low > 1
    assert wide.verdict == "inconclusive" and wide.low < 1 < wide.high, (wide.low, wide.high)
    assert wide.p == min(1.0, close.p_value * 36) and wide.detectable > close.detectable


def test_too_few_runs_are_not_tested_and_not_worded_as_a_result():
    one = effect([5424.0], [13255.0])
    assert one.verdict == "not tested"
    assert one.words() == ("throughput +144.4%, not tested (1 and 1 measured runs: a test needs 2 or more a side)")
    assert effect([], [1.0, 2.0]).verdict == "not tested"
    # Identical runs each side: the run-to-run variance is unknown, not 0
    # (a statistician's review: it read "+20.0% (95% CI +20.0% to +20.0%;
    # p < 0.0001)").
    for flat in (effect([5.0, 5.0], [6.0, 6.0]), log_effect([5.0, 5.0], [6.0, 6.0])):
        assert flat.verdict == "not tested" and flat.flat
        assert flat.words("p99") == (
            "p99 +20.0%, not tested (the runs of both sides gave identical figures: their run-to-run variance is "
            "unknown, not 0)"
        )
    assert log_effect([5.0, 0.0], [6.0, 6.0]).words("p99").endswith("(a run's value of 0)")
    assert effect([5.0, 5.0], [6.0, 7.0]).tested, "one side's spread is enough to test"


def test_an_interval_past_a_floats_range_is_open_not_an_overflow():
    from corebench.analysis.effect import Effect, bound

    wide = Effect(2, 2, 1.0, 2.0, 300.0, 1.0, family=6)
    assert wide.low == 0.0 and math.isinf(wide.high)
    assert bound(wide.high - 1) == "×∞" and wide.verdict == "inconclusive"


def test_interval_ends_past_a_factor_of_1000_say_only_that():
    from corebench.analysis.effect import bound

    assert bound(7.76e13) == "×>1000" and bound(-0.99999) == "−>99.9%"
    assert bound(0.452) == "+45.2%" and bound(2.2) == "×3.2" and bound(-0.5) == "−50.0%"


def test_log_effect_is_welchs_t_on_the_logs_as_scipy_computes_it():
    a, b = [9.1, 10.4, 11.8, 9.7], [13.2, 15.9, 12.4]
    e = log_effect(a, b)
    ref = st.ttest_ind(np.log(b), np.log(a), equal_var=False)
    assert e.geometric and e.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert e.ratio == pytest.approx(st.gmean(b) / st.gmean(a), rel=1e-12)
    low, high = ref.confidence_interval(0.95)
    assert (e.low, e.high) == pytest.approx((math.exp(low), math.exp(high)), rel=1e-9)
    assert not log_effect([1.0, 0.0], [2.0, 3.0]).tested, "a 0 has no logarithm: not tested, never a crash"


def test_geometric_mean_and_interval_cover_lognormal_truth():
    # Runs' p99s drawn log-normal with median 20 ms (the geometric mean's
    # target): its t interval on the logs covers 20 in 95% of designs.
    rng = np.random.default_rng(3)
    covered, trials = 0, 1000
    for _ in range(trials):
        gm, low, high = geometric(list(rng.lognormal(math.log(20), 0.4, 4)))
        covered += low <= 20 <= high
    assert 0.93 <= covered / trials <= 0.97, covered / trials
    assert geometric([30.0, 30.0, 30.0]) == (30.0, 30.0, 30.0), "equal runs keep their value to the last bit"
    s = summarize([12.0, 12.0, 40.0])
    assert s.geomean == pytest.approx(st.gmean([12.0, 12.0, 40.0])) and s.median == 12.0
    assert math.isnan(summarize([0.0, 1.0]).geomean)


def test_a_design_too_weak_to_detect_anything_says_so_without_overflow():
    # Two runs a side, t on 1 df, held to α/91 (a recorded report's p99 family).
    from corebench.analysis.effect import Effect, change_size

    e = Effect(2, 2, 0.2615, 0.1140, 0.839, 1.0002, family=91, geometric=True)
    assert e.detectable == float("inf") and e.verdict == "inconclusive"
    assert change_size(e.detectable) == "only more than a factor of 10 either way"
