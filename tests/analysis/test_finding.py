"""Findings as records: the outcome a gate reads agrees with the interval
printed beside it, the sentence is the claim and its caveats, and a
threshold's gate needs no prose."""

import math

import numpy as np
import pytest

from corebench.analysis.analyse import analyse
from corebench.analysis.finding import Finding, Interval
from corebench.analysis.findings import KINDS
from tests.support.records import experiment, load_result, stored_run


def runs_of(levels, rates, p99_us=2000):
    return [stored_run(levels, load_result(ok=round(r), p99_us=p99_us), seq=i) for i, r in enumerate(rates)]


def experiment_runs(effect, noise=0.01, seed=0, thresholds=None):
    """cpus 1, 2 and 4 against mpm prefork and worker at one load, 4 runs a
    point; worker's throughput is `effect` times prefork's (three strata:
    fewer are not combined)."""
    rng = np.random.default_rng(seed)
    factors = {"cpus": [1, 2, 4], "mpm": ["prefork", "worker"]}
    runs = []
    for c in factors["cpus"]:
        for m in factors["mpm"]:
            mean = 1000 * c * (effect if m == "worker" else 1.0)
            runs += runs_of({"cpus": c, "mpm": m}, mean * np.exp(rng.normal(0, noise, 4)))
    plan = {"thresholds": thresholds} if thresholds else {}
    return experiment(factors, plan=plan), runs


def comparison(found, subject):
    (f,) = [f for f in found.said if f.subject == subject]
    return f


# No change: each stratum is equivalent by TOST, and three strata combined
# on 2 df (Hartung–Knapp, truncated) show the whole within the margin.
@pytest.mark.parametrize(("effect", "outcome"), [(0.8, "lower"), (1.25, "higher"), (1.0, "equivalent")])
def test_a_factor_effect_says_its_outcome_from_the_interval_it_prints(effect, outcome):
    found = analyse(*experiment_runs(effect))
    f = comparison(found, "mpm=worker against mpm=prefork")
    # Three comparisons averaged: the class is the average's, said as such.
    assert f.kind == "verdict" and f.outcome == f"{outcome} on average", f.sentence
    assert f.interval is not None and f.interval.unit == "ratio"
    assert f.interval.low < f.interval.estimate < f.interval.high
    assert f.interval.estimate == pytest.approx(effect, rel=0.02)
    # The interval the sentence prints is the record's.
    assert f"{(f.interval.low - 1) * 100:+.1f}%".replace("-", "−") in f.text
    assert f.figure("comparisons") == 3 and f.figure("median ratio") == pytest.approx(effect, rel=0.02)
    if outcome == "equivalent":
        assert f.figure("comparisons equivalent") == 3 and 0.95 < f.interval.low < 1 < f.interval.high < 1.05


def test_an_inconclusive_record_carries_what_the_design_could_detect():
    found = analyse(*experiment_runs(1.03, noise=0.2, seed=3))
    f = comparison(found, "mpm=worker against mpm=prefork")
    assert f.figure("comparisons inconclusive") == 3, f.sentence
    assert f.figure("detectable change") > 0.2, "4 runs a side at a 20% CV cannot see small changes"


def test_every_comparisons_outcome_agrees_with_its_interval():
    """Over noisy designs: higher and lower exclude no change on their
    side, inconclusive and equivalent hold it (ANSWERS.md §1)."""
    seen = set()
    for seed in range(12):
        # Two strata combine on 1 df (Hartung–Knapp, truncated): only large effects are shown.
        for effect in (0.5, 0.9, 1.0, 1.1, 2.0):
            found = analyse(*experiment_runs(effect, noise=0.05, seed=seed))
            for f in found.said:
                i = f.interval
                outcome = f.outcome.removesuffix(" on average")
                if i is None or i.unit != "ratio" or outcome not in ("higher", "lower", "equivalent", "inconclusive"):
                    continue
                seen.add(outcome)
                if outcome == "higher":
                    assert i.low > 1, f.sentence
                elif outcome == "lower":
                    assert i.high < 1, f.sentence
                else:
                    assert i.low <= 1 <= i.high, f.sentence
    assert {"higher", "lower", "inconclusive"} <= seen


def test_a_cpu_step_is_a_record_of_the_familys_comparison():
    found = analyse(*experiment_runs(1.0))
    f = comparison(found, "cpus=2 against cpus=1 at mpm=prefork")
    assert f.outcome == "higher" and f.figure("ideal ratio") == 2
    assert f.interval is not None and f.interval.simultaneous_over > 1, "held to the family's level"
    assert f.figure("goodput at 2 CPUs") / f.figure("goodput at 1 CPUs") == pytest.approx(2, rel=0.05)


def test_the_sentence_is_the_claim_then_its_caveats():
    f = Finding("verdict", "A is faster.", caveats=("Caveat: one.", "Caveat: two."))
    assert f.sentence == "A is faster. Caveat: one. Caveat: two."
    assert Finding("scope", "Nothing fitted.").sentence == "Nothing fitted."
    assert math.isnan(f.figure("absent"))


def test_findings_come_in_the_declared_order():
    found = analyse(*experiment_runs(1.1, thresholds={"rps": ">1500"}))
    order = [KINDS.index(f.kind) for f in found.said]
    assert order == sorted(order) and found.said[0].kind == "threshold"


def test_a_threshold_gate_reads_the_outcome():
    found = analyse(*experiment_runs(1.1, thresholds={"rps": ">1500", "p99": "<5ms"}))
    rps, p99 = found.of("threshold")
    assert (rps.subject, rps.outcome) == ("rps>1500", "fail") and rps.figure("points failing") == 2
    assert (p99.subject, p99.outcome) == ("p99<5ms", "pass") and p99.figure("points failing") == 0


def test_an_untested_effect_has_no_interval():
    from corebench.analysis.effect import effect

    assert Interval.of(effect([1000.0], [1100.0])) is None
    i = Interval.of(effect([1000.0, 1010.0], [1100.0, 1105.0]))
    assert i is not None and i.low < i.estimate < i.high and i.method


def test_an_equivalent_record_carries_the_interval_that_showed_it():
    """Equivalence is the TOST interval inside the margin: the record's
    interval is that one, at its level, not the 95% test interval."""
    from corebench.analysis.effect import effect

    e = effect([1000, 1060, 940, 1010, 990, 1000], [1000, 1070, 930, 1015, 985, 1002])
    assert e.verdict == "equivalent"
    i = Interval.of(e)
    assert i is not None and i.level == pytest.approx(0.90) and "TOST" in i.method
    assert i.low > 1 / 1.05 and i.high < 1.05, "inside the margin, as the outcome says"
