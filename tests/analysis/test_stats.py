"""Statistics of repetitions, comparisons, knees, Little's law."""

import math

import pytest

from corebench.analysis.effect import effect
from corebench.analysis.knee import kneedle, little_ratio, saturation
from corebench.analysis.slo import parse_slo
from corebench.analysis.stats import compare, summarize


def test_summary_with_t_interval_and_outliers():
    s = summarize([100, 102, 98, 101, 99, 100, 160])
    assert s.n == 7 and s.median == 100 and s.outliers == (6,)
    assert s.ci_low < s.mean < s.ci_high
    t = summarize([10.0, 12.0, 14.0])
    # mean 12, s = 2, t(0.975, 2) = 4.303: on the log scale, 12 · exp(±4.303 · 2 / (sqrt(3) · 12))
    half = 4.302653 * 2 / math.sqrt(3)
    assert t.ci_high == pytest.approx(12 * math.exp(half / 12), rel=1e-5)
    assert t.ci_low == pytest.approx(12 / math.exp(half / 12), rel=1e-5)
    # Symmetric where a value is 0 or below; never below 0 where all are positive.
    z = summarize([0.0, 2.0, 4.0])
    assert z.ci_low == pytest.approx(2 - half, rel=1e-5)
    wide = summarize([17.0, 1062.0])
    assert 0 < wide.ci_low < wide.mean < wide.ci_high
    assert t.cv == pytest.approx(2 / 12) and t.warning is None
    assert summarize([5.0]).warning and summarize([]).n == 0
    # Iglewicz & Hoaglin's rule is not applied below 5 runs: at n = 3 it would flag
    # a run in a large share of perfectly ordinary samples.
    assert summarize([100.0, 101.0, 130.0]).outliers == () and summarize([100, 100, 101, 99, 140]).outliers == (4,)


def test_comparison_tests_and_bounds_the_difference():
    same = compare([100, 101, 99, 100], [100, 99, 101, 100])
    assert not same.significant
    faster = compare([100, 101, 99, 100], [150, 151, 149, 150])
    assert faster.significant and faster.relative == pytest.approx(0.5)
    assert faster.rel_low < 0.5 < faster.rel_high and faster.test == "Welch's t-test"


def test_knee_saturation_little():
    conc = [1, 2, 5, 10, 20, 50]
    rps = [100, 200, 480, 800, 880, 900]
    assert kneedle(conc, rps) == 10
    assert kneedle([1, 2, 3], [1, 2, 3]) is None
    assert saturation(conc, rps, 0.95) == 20
    assert little_ratio(10, 1000, 0.01) == pytest.approx(1.0)


def test_slo_parsing():
    s = parse_slo("p99<200ms")
    assert (s.percentile, s.limit_us) == (99.0, 200_000)
    with pytest.raises(ValueError):
        parse_slo("p97<1s")


def test_degenerate_inputs_do_not_crash():
    from corebench.analysis.scaling import fit

    one = summarize([5.0])
    assert math.isnan(one.sd) and math.isnan(one.cv)
    assert summarize([100, 100, 100, 100, 5]).outliers == (4,), "MAD = 0 falls back to the mean absolute deviation"
    none = compare([0.0, 0.0], [1.0, 2.0])
    assert not none.significant and math.isnan(none.p_value)
    dead = effect([0.0, 0.0], [1.0, 2.0])
    assert dead.verdict == "not tested" and "not compared (a mean of 0)" in dead.words()
    flat = fit([1, 2, 3, 4], [10.0, 10.0, 10.0, 10.0])
    assert math.isnan(flat.r2)


def test_little_with_the_edge_of_a_finite_run():
    # 10 clients, 100 ms each, a 2 s run: 19 rounds end inside it (190
    # responses, 95/s); the 10 in flight at the end are not counted.
    assert little_ratio(10, 95, 0.1) == pytest.approx(0.95)
    assert little_ratio(10, 95, 0.1, 2.0) == pytest.approx(1.0)


def test_a_p_value_below_its_floor_is_never_printed_as_zero():
    from corebench.analysis.stats import p_is

    assert p_is(0.0) == "< 0.0001" and p_is(3e-9) == "< 0.0001"
    assert p_is(0.0312) == "= 0.031" and p_is(float("nan")) == "not computed"
    identical = compare([100.0, 100.0, 100.0], [120.0, 120.0, 120.0])
    assert identical.p_value == 0.0 and p_is(identical.p_value) == "< 0.0001"


def test_one_sided_bounds_are_scipys_one_sided_t_intervals():
    import numpy as np
    from scipy import stats as st

    from corebench.analysis.stats import one_sided

    xs = [17.0, 20.0, 23.0]
    low, high = one_sided(xs, log=False)
    assert low == pytest.approx(st.ttest_1samp(xs, 0.0, alternative="greater").confidence_interval(0.95).low)
    assert high == pytest.approx(st.ttest_1samp(xs, 0.0, alternative="less").confidence_interval(0.95).high)
    log_high = st.ttest_1samp(np.log(xs), 0.0, alternative="less").confidence_interval(0.95).high
    assert math.log(one_sided(xs, log=True)[1]) == pytest.approx(log_high)
    # No spread, one run, or a zero on the log scale: no bound, not a certain one.
    for values, log in (([5.0, 5.0], False), ([5.0], False), ([0.0, 3.0], True)):
        assert all(math.isnan(b) for b in one_sided(values, log)), values


def test_a_knee_is_given_only_where_throughput_rises_beyond_its_noise():
    # cores-worth-it at 1 CPU: 964.5, 965.8 and 962.8 req/s over 25, 75 and
    # 150 connections, flat within ±1%; Kneedle alone finds a knee at 75.
    from corebench.analysis.analyse import knees
    from corebench.analysis.points import point_stats
    from tests.support.records import load_result, stored_run

    def runs(means: list[float], wobble: float, held: bool = True) -> list:
        out = []
        for c, m in zip((25, 75, 150), means, strict=True):
            for i, x in enumerate((m * (1 - wobble), m, m * (1 + wobble))):
                seq = len(out) + 1
                # Little's law holds for c clients (R = c / X), over 10 s runs; not held at 150 if not `held`.
                mean_us = 1e6 * c / x * (1 if held or c < 150 else 0.5)
                r = load_result(ok=round(10 * x), duration_s=10.0, mean_us=mean_us, concurrency=c)
                out.append(stored_run({"concurrency": c}, r, repetition=i + 1, round=i + 1, seq=seq))
        return out

    factors = {"concurrency": [25, 75, 150]}
    assert kneedle([25, 75, 150], [964.5, 965.8, 962.8]) == 75
    (flat,) = knees(point_stats(runs([964.5, 965.8, 962.8], 0.01)), factors)
    assert flat.knee is None and "does not rise beyond its 95% intervals" in flat.why_none
    assert flat.saturation == 25, "already at its peak at the lowest load"
    (rising,) = knees(point_stats(runs([500.0, 900.0, 950.0], 0.01)), factors)
    assert rising.knee == 75 and rising.why_none == ""
    (bounded,) = knees(point_stats(runs([500.0, 900.0, 950.0], 0.01, held=False)), factors)
    assert bounded.knee is None and "some points are lower bounds" in bounded.why_none
    assert bounded.saturation is None, "the generator's saturation is not the server's"
    (falling,) = knees(point_stats(runs([950.0, 900.0, 500.0], 0.01)), factors)
    assert falling.knee is None and falling.why_none == "not given: throughput falls with load here"
    one = [r for i, r in enumerate(runs([500.0, 900.0, 950.0], 0.01)) if i % 3 == 1]  # one run a point
    (once,) = knees(point_stats(one), factors)
    assert once.knee is None and "no interval" in once.why_none
