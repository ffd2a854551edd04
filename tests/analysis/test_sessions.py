"""Sessions as blocks: DerSimonian–Laird against statsmodels, and the
replication verdict on synthetic sessions of known truth."""

import numpy as np
import pytest
from statsmodels.stats.meta_analysis import combine_effects

from corebench.analysis.points import point_stats
from corebench.analysis.sessions import combine, replication
from tests.support.records import load_result, stored_run


# statsmodels warns that per-sample intervals fall back to the normal
# distribution; only the combined row is compared.
@pytest.mark.filterwarnings("ignore::statsmodels.tools.sm_exceptions.InvalidTestWarning")
def test_dersimonian_laird_equals_statsmodels():
    y, v = [0.1, 0.5, 0.25], [0.004, 0.006, 0.005]
    ours = combine(y, v, [])
    ref = combine_effects(np.array(y), np.array(v), method_re="dl")
    row = ref.summary_frame().loc["random effect"]
    assert ours.estimate == pytest.approx(row["eff"], rel=1e-9)
    assert (ours.low, ours.high) == pytest.approx((row["ci_low"], row["ci_upp"]), rel=1e-9)
    assert ours.tau2 == pytest.approx(ref.tau2, rel=1e-9) and ours.q == pytest.approx(16.0135, rel=1e-4)
    # Hartung–Knapp's interval: statsmodels' "random effect wls" with use_t.
    hk = combine(y, v, [], knapp=True)
    wls = combine_effects(np.array(y), np.array(v), method_re="dl", use_t=True).summary_frame().loc["random effect wls"]
    assert (hk.low, hk.high) == pytest.approx((wls["ci_low"], wls["ci_upp"]), rel=1e-9)
    # Effects closer than their variances predict (Q < k − 1): the HK scale
    # is truncated at 1, so the interval is never narrower than DL's with t.
    close, cv = [0.1, 0.101, 0.099], [0.004, 0.006, 0.005]
    hk, dl = combine(close, cv, [], knapp=True), combine(close, cv, [])
    raw = combine_effects(np.array(close), np.array(cv), method_re="dl", use_t=True).summary_frame()
    assert hk.q < 2 and raw.loc["random effect wls", "ci_upp"] - raw.loc["random effect wls", "ci_low"] < 0.01
    t_over_z = 4.302653 / 1.959964  # t(0.975, 2 df) / z(0.975)
    assert hk.high - hk.low == pytest.approx((dl.high - dl.low) * t_over_z, rel=1e-5)
    # Sessions that agree: no between-session variance, the fixed-effect answer.
    same = combine([0.2, 0.2], [0.01, 0.01], [])
    assert same.tau2 == 0 and same.estimate == pytest.approx(0.2)


def _session(levels, rps, session):
    return [
        stored_run(levels, load_result(ok=round(x)), repetition=session * 10 + i, session=session, seq=session * 10 + i)
        for i, x in enumerate(rps)
    ]


def test_an_effect_that_replicates_and_one_that_does_not():
    rng = np.random.default_rng(4)
    runs = []
    # cpus=2 is +80% in one session and +75% in the other, each tight: replicated.
    for s, gain in ((1, 1.8), (2, 1.75)):
        runs += _session({"cpus": 1}, list(rng.normal(1000, 10, 3)), s)
        runs += _session({"cpus": 2}, list(rng.normal(1000 * gain, 15, 3)), s)
    (head, line) = replication(point_stats(runs), set())
    assert head.startswith("Sessions: this store holds 2 sessions")
    assert (
        line.startswith("cpus=2 against cpus=1: +7") and "shown in every session, on the same side: replicated" in line
    )
    assert "no combined interval is claimed" in head and "95% CI" not in line, "two sessions: one df, no interval"
    # +20% in one session, −15% in the other: each significant, on opposite sides.
    runs = []
    for s, gain in ((1, 1.2), (2, 0.85)):
        runs += _session({"mpm": "a"}, list(rng.normal(1000, 5, 3)), s)
        runs += _session({"mpm": "b"}, list(rng.normal(1000 * gain, 5, 3)), s)
    (_, line) = replication(point_stats(runs), set())
    assert "shown on opposite sides (1 higher, 1 lower): conflicting" in line, line
    # Three sessions: combined, with the Hartung–Knapp interval.
    runs = []
    for s, gain in ((1, 1.8), (2, 1.75), (3, 1.78)):
        runs += _session({"cpus": 1}, list(rng.normal(1000, 10, 3)), s)
        runs += _session({"cpus": 2}, list(rng.normal(1000 * gain, 15, 3)), s)
    (head, line) = replication(point_stats(runs), set())
    assert "combined as blocks" in head and "replicated; combined +7" in line and "on 2 df" in line, line


def test_one_session_says_nothing_of_replication():
    runs = _session({"cpus": 1}, [1000.0, 1010.0], 1) + _session({"cpus": 2}, [1900.0, 1910.0], 1)
    assert replication(point_stats(runs), set()) == []


def test_two_scattered_strata_give_an_open_interval_not_an_overflow():
    """Three strata, each from runs that scatter over orders of magnitude:
    t on 2 df times a large standard error passes a float's exp range."""
    from corebench.analysis.effect import Effect
    from corebench.analysis.pooled import pool, said

    wild = [Effect(2, 2, 1.0, r, 300.0, 1.0) for r in (2.0, 2.2, 2.1)]
    c = pool(wild)
    assert c is not None and c.high == float("inf") and c.outcome == "inconclusive"
    assert "to ×∞), inconclusive" in said(c)
