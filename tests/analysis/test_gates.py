"""A plan's thresholds over a point's runs: pass or fail on the estimate
(k6's rule), and which passes the runs also show at their one-sided 95%
bound, checked against scipy's one-sided t interval."""

import math

import numpy as np
import pytest
from scipy import stats as st

from corebench.analysis.gates import judge, lines
from corebench.plan.thresholds import parse
from tests.analysis.test_multiplicity import runs


def test_a_pass_the_runs_do_not_show_is_named():
    tight = runs({"cpus": 2}, [1000.0, 1010.0, 990.0], [10.0, 11.0, 12.0])
    loose = runs({"cpus": 1}, [500.0, 520.0, 480.0], [17.0, 20.0, 23.0])
    judged = judge([parse("p99<21ms")], [tight, loose])
    assert [j.ok for j in judged] == [True, True] and [j.shown for j in judged] == [True, False]
    ref = st.ttest_1samp(np.log([17.0, 20.0, 23.0]), 0.0, alternative="less").confidence_interval(0.95)
    assert math.log(judged[1].bound / 1000) == pytest.approx(ref.high)
    (f,) = lines(judged)
    assert f.outcome == "pass" and f.figure("points shown passing") == 1
    assert f.text.startswith("threshold p99<21ms: 2 of 2 points pass (by each point's estimate; 1 of 2 also at"), f.text
    assert "not shown: cpus=1 (" in f.text and "ms at its bound)" in f.text


def test_goodput_is_bounded_below_and_every_pass_shown_is_said_once():
    a = runs({"cpus": 1}, [1000.0, 1010.0, 990.0], [10.0, 11.0, 12.0])
    (j,) = judge([parse("rps>900")], [a])
    ref = st.ttest_1samp([1000.0, 1010.0, 990.0], 0.0, alternative="greater").confidence_interval(0.95)
    assert j.bound == pytest.approx(ref.low) and j.shown
    (f,) = lines([j])
    assert (
        f.text == "threshold rps>900: 1 of 1 points pass (each also at its runs' one-sided 95% bound, "
        f"{ref.low:,.0f} req/s at worst)"
    )


def test_one_run_passes_by_its_estimate_only():
    one = runs({}, [1000.0], [10.0])
    (j,) = judge([parse("p99<20ms")], [one])
    assert j.ok and not j.shown and math.isnan(j.bound)
    (f,) = lines([j])
    assert f.text.endswith(
        "0 of 1 also at their runs' one-sided 95% bound; not shown: (one point) (one run or no spread))"
    )
