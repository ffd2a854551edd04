"""Drift across rounds against statsmodels' OLS of the round means on the
round; and its level when every configuration of a round shares the
round's luck (a common factor per round, as shared target starts give)."""

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from corebench.analysis.drift import drift


def _data(rng, slope, rounds=6, configs=(1000.0, 2000.0, 5000.0), cv=0.02):
    return {
        f"c{i}": [(r, mu * (1 + slope * (r - 1)) * (1 + rng.normal(0, cv))) for r in range(1, rounds + 1)]
        for i, mu in enumerate(configs)
    }


@pytest.mark.parametrize("slope", [0.0, -0.01, 0.03])
def test_slope_interval_and_p_equal_statsmodels(slope):
    data = _data(np.random.default_rng(5), slope)
    d = drift(data)
    rows = []
    for cfg, pairs in data.items():
        mean = np.mean([y for _, y in pairs])
        rows += [{"cfg": cfg, "round": r, "y": y / mean} for r, y in pairs]
    means = pd.DataFrame(rows).groupby("round", as_index=False)["y"].mean()
    fit = smf.ols("y ~ round", data=means).fit()
    lo, hi = fit.conf_int().loc["round"]
    assert d.slope == pytest.approx(fit.params["round"], rel=1e-9, abs=1e-12)
    assert (d.ci_low, d.ci_high) == pytest.approx((lo, hi), rel=1e-9, abs=1e-12)
    assert d.p_value == pytest.approx(fit.pvalues["round"], rel=1e-6, abs=1e-12)
    assert (d.rounds, d.runs) == (6, 18)


def test_a_real_drift_is_found_and_none_is_not_claimed():
    rng = np.random.default_rng(11)
    assert drift(_data(rng, -0.02)).notable
    assert "Drift: throughput changed by −" in drift(_data(rng, -0.02)).sentence()
    false_alarms = sum(drift(_data(rng, 0.0)).notable for _ in range(400))
    assert false_alarms / 400 < 0.09, "the test keeps its 5% level"
    # Each round's luck shared by every configuration (one start per round):
    # a test over single runs would call this drift far more than 5% of the time.
    shared = 0
    for _ in range(400):
        luck = {r: 1 + rng.normal(0, 0.1) for r in range(1, 11)}
        data = {c: [(r, mu * luck[r]) for r in range(1, 11)] for c, mu in (("a", 800.0), ("b", 1600.0))}
        shared += drift(data).notable
    assert shared / 400 < 0.09, shared / 400


def test_too_little_to_show_a_slope():
    assert drift({"a": [(1, 10.0)], "b": [(1, 11.0)]}) is None
    assert drift({"a": [(1, 10.0), (2, 11.0)]}) is None, "two rounds: no residual degree of freedom"
    assert drift({"a": [(1, 10.0), (1, 11.0), (1, 12.0)]}) is None, "one round"


def test_a_step_between_sessions_is_not_a_drift():
    """Two sessions of 4 rounds each, flat within each, the second 10%
    faster throughout: no drift while the experiment ran."""
    from corebench.analysis.lines import schedule_lines
    from corebench.analysis.points import point_stats
    from tests.support.records import load_result, stored_run

    rng = np.random.default_rng(3)
    runs = []
    for session, level in ((1, 1000.0), (2, 1100.0)):
        for rnd in range(1, 5):
            for cpus in (1, 2):
                x = level * cpus * (1 + rng.normal(0, 0.005))
                seq = len(runs) + 1
                runs.append(
                    stored_run(
                        {"cpus": cpus},
                        load_result(ok=round(x)),
                        round=rnd + 4 * (session - 1),
                        session=session,
                        seq=seq,
                    )
                )
    lines = schedule_lines({}, runs, point_stats(runs))
    (said,) = [x for x in lines if "rift" in x]
    assert said.startswith("Drift across rounds: none detected") and "Within each session" in said, said
