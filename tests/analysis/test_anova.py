"""ANOVA against statsmodels' anova_lm(typ=2) on the same unbalanced data,
ω² from its definition, the permutation fallback against the F test on
normal data and on heavy-tailed data of known truth, and TOST (both forms)
on data of known truth and against statsmodels' ttost_ind and ttost_paired."""

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy.stats import ttest_1samp
from statsmodels.stats.anova import anova_lm
from statsmodels.stats.weightstats import ttost_ind, ttost_paired

from corebench.analysis.anova import F_TEST, PERMUTATION, PERMUTATIONS, anova, tost, tost_paired


def data(seed=1):
    rng = np.random.default_rng(seed)
    rows = []
    for cpus in (1, 2, 4):
        for mpm in ("prefork", "worker"):
            # Unbalanced on purpose: Type II and Type I differ here.
            for _ in range(3 + (cpus == 2) + 2 * (mpm == "worker")):
                y = math.log(1000 * cpus**0.9 * (1.1 if mpm == "worker" else 1.0)) + rng.normal(0, 0.05)
                rows.append({"cpus": cpus, "mpm": mpm, "y": y})
    return rows


def test_type_ii_anova_matches_statsmodels():
    rows = data()
    ours = anova(rows, ["cpus", "mpm"], "y")
    df = pd.DataFrame(rows)
    ref = anova_lm(smf.ols("y ~ C(cpus) * C(mpm)", data=df).fit(), typ=2)
    names = {"cpus": "C(cpus)", "mpm": "C(mpm)", "cpus:mpm": "C(cpus):C(mpm)"}
    assert [t.name for t in ours.terms] == ["cpus", "mpm", "cpus:mpm"]
    for t in ours.terms:
        r = ref.loc[names[t.name]]
        assert t.ss == pytest.approx(r["sum_sq"], rel=1e-9)
        assert t.df == r["df"] and t.f == pytest.approx(r["F"], rel=1e-9)
        assert t.p_value == pytest.approx(r["PR(>F)"], rel=1e-6, abs=1e-300)
    assert ours.residual_ss == pytest.approx(ref.loc["Residual", "sum_sq"], rel=1e-9)
    ms_error = ours.residual_ss / ours.residual_df
    total = float(((df["y"] - df["y"].mean()) ** 2).sum())  # Type II sums do not add up to it
    cpus = ours.terms[0]
    assert cpus.omega2 == pytest.approx((cpus.ss - cpus.df * ms_error) / (total + ms_error))
    assert cpus.p_value < 1e-10 and ours.terms[1].p_value < 1e-3, "both factors matter by construction"
    assert ours.terms[2].p_value > 0.01, "no interaction by construction"


def test_omega_squared_of_a_term_with_f_below_one_is_zero_not_negative():
    """No interaction by construction: over seeds, its F falls below 1 in
    some, where Hays's estimate is negative; it is given as 0 there, and as
    the formula elsewhere."""
    seen_below_one = 0
    for seed in range(20):
        ours = anova(two_factors(seed, lambda rng: rng.normal(0, 1.0)), ["cpus", "mpm"], "y")
        inter = ours.terms[2]
        if inter.f < 1:
            seen_below_one += 1
            assert inter.omega2 == 0.0
        else:
            assert inter.omega2 > 0.0
        assert all(t.omega2 >= 0.0 for t in ours.terms)
    assert seen_below_one >= 3, "the test must see terms with F < 1"


def two_factors(seed, noise, effect=0.0):
    """An unbalanced 3×2 plan (4 and 5 runs a cell); `effect` on cpus=4 only."""
    rng = np.random.default_rng(seed)
    rows = []
    for cpus in (1, 2, 4):
        for mpm in ("prefork", "worker"):
            for _ in range(4 + (mpm == "worker")):
                y = effect * (cpus == 4) + 0.3 * (mpm == "worker") + noise(rng)
                rows.append({"cpus": cpus, "mpm": mpm, "y": y})
    return rows


def normal(rng):
    return rng.normal(0, 1)


def wild(rng):
    # One run in ten far off: the heavy tail of a benchmark with a noisy neighbour.
    return rng.normal(0, 10 if rng.random() < 0.1 else 1)


def test_permutation_p_values_agree_with_the_f_test_on_normal_data():
    diffs = []
    for seed in range(20):
        rows = two_factors(seed, normal, effect=0.5)
        f, perm = anova(rows, ["cpus", "mpm"], "y", method="f"), anova(rows, ["cpus", "mpm"], "y", method="permutation")
        assert f.method == F_TEST and perm.method == PERMUTATION and perm.permutations == PERMUTATIONS
        assert [t.f for t in perm.terms] == [t.f for t in f.terms], "the same statistic, another reference"
        diffs += [abs(a.p_value - b.p_value) for a, b in zip(f.terms, perm.terms, strict=True)]
    # Monte Carlo error of 2,000 permutations at p = 0.5 is 0.011.
    assert max(diffs) < 0.03 and np.mean(diffs) < 0.012, (max(diffs), np.mean(diffs))
    auto = anova(two_factors(1, normal), ["cpus", "mpm"], "y")
    assert auto.method == F_TEST and auto.normality_p > 0.01, "normal residuals keep the F test"
    words = auto.method_words()
    assert "p from the F distribution: Shapiro–Wilk does not reject normal residuals at 0.01 (p = " in words


def test_heavy_tails_without_an_effect_fall_back_and_find_nothing():
    rows = two_factors(0, wild)
    a = anova(rows, ["cpus", "mpm"], "y")
    assert a.method == PERMUTATION and a.normality_p < 0.01
    assert a.method_words().startswith(
        "main effects and two-way interactions (any higher ones pooled into the error); p from a permutation test "
        "(Freedman & Lane 1983; 2,000 permutations): Shapiro–Wilk rejects normal residuals"
    )
    cpus = a.terms[0]
    assert cpus.p_value > 0.05
    assert cpus.p_value * (1 + PERMUTATIONS) == pytest.approx(round(cpus.p_value * (1 + PERMUTATIONS)))
    # Over many such plans with no effect, the test rejects about 5% of the time.
    nulls = [anova(two_factors(s, wild), ["cpus", "mpm"], "y", method="permutation") for s in range(100, 300)]
    rejected = [a.terms[0].p_value < 0.05 for a in nulls]
    assert 0.015 <= np.mean(rejected) <= 0.09, np.mean(rejected)


def test_heavy_tails_with_a_strong_effect_fall_back_and_find_it():
    a = anova(two_factors(3, wild, effect=15.0), ["cpus", "mpm"], "y")
    assert a.method == PERMUTATION
    assert 1 / (1 + PERMUTATIONS) <= a.terms[0].p_value < 0.01, "never 0: the observed order is one of the permutations"
    again = anova(two_factors(3, wild, effect=15.0), ["cpus", "mpm"], "y")
    assert [t.p_value for t in again.terms] == [t.p_value for t in a.terms], "a fixed seed: the same report twice"


def test_too_few_residuals_are_not_checked_for_normality():
    rows = [{"cpus": c, "y": float(c + i)} for c in (1, 2) for i in range(3)]
    a = anova(rows, ["cpus"], "y")
    assert a.method == F_TEST and math.isnan(a.normality_p)
    assert a.method_words() == (
        "one factor; p from the F distribution; normality not checked: fewer than 8 residual degrees of freedom"
    )


def test_a_factor_with_one_level_is_not_tested():
    rows = [{"cpus": 1, "mpm": "prefork", "y": float(i)} for i in range(4)]
    assert anova(rows, ["cpus", "mpm"], "y") is None


def test_tost_equivalence_only_within_the_margin():
    rng = np.random.default_rng(3)
    a = list(1000 * np.exp(rng.normal(0, 0.01, 6)))
    same = tost(a, list(1000 * np.exp(rng.normal(0, 0.01, 6))))
    assert same.equivalent and 0.95 < same.low <= same.high < 1.05
    apart = tost(a, list(1100 * np.exp(rng.normal(0, 0.01, 6))))
    assert not apart.equivalent and apart.ratio == pytest.approx(1.1, rel=0.02)
    noisy = tost([900.0, 1100.0], [1000.0, 950.0])
    assert not noisy.equivalent, "two noisy runs a side cannot show equivalence"
    assert tost([1.0], [1.0, 2.0]) is None


@pytest.mark.parametrize("shift", [0.0, 0.02, 0.04, -0.03])
def test_tost_p_values_match_statsmodels(shift):
    """Both forms against statsmodels' ttost_ind (Welch) and ttost_paired on
    the same logs and bounds: Schuirmann's p-value is the larger one-sided one."""
    rng = np.random.default_rng(7)
    a = 1000 * np.exp(rng.normal(0, 0.03, 9))
    b = a * np.exp(shift + rng.normal(0, 0.02, 9))
    bound = math.log(1.03)
    welch = tost(list(a), list(b), margin=0.03)
    p_ind = ttost_ind(np.log(b), np.log(a), -bound, bound, usevar="unequal")[0]
    assert welch.p_value == pytest.approx(p_ind, rel=1e-9)
    paired = tost_paired(list(a), list(b), margin=0.03)
    p_paired, (_, p_lower, _), (_, p_upper, _) = ttost_paired(np.log(b), np.log(a), -bound, bound)
    assert paired.p_value == pytest.approx(p_paired, rel=1e-9)
    assert paired.p_not_below == pytest.approx(p_lower, rel=1e-9)
    assert paired.p_not_above == pytest.approx(p_upper, rel=1e-9)
    # With no margin the halves are the one-sided paired t-tests of a difference.
    d = np.log(b) - np.log(a)
    plain = tost_paired(list(a), list(b), margin=0.0)
    assert plain.p_not_below == pytest.approx(ttest_1samp(d, 0.0, alternative="greater").pvalue, rel=1e-9)
    assert plain.p_not_above == pytest.approx(ttest_1samp(d, 0.0, alternative="less").pvalue, rel=1e-9)
    assert paired.equivalent == (p_paired < 0.05)
    assert paired.low <= paired.ratio <= paired.high


def test_tost_paired_cancels_what_the_pairs_share():
    """Drift of ±20% shared by each pair hides a 1% difference from Welch's
    form but not from the paired one; a steady 10% gap is never equivalent."""
    rng = np.random.default_rng(11)
    drift = np.exp(rng.normal(0, 0.2, 12))
    a = 1000 * drift * np.exp(rng.normal(0, 0.005, 12))
    b = 1010 * drift * np.exp(rng.normal(0, 0.005, 12))
    assert tost_paired(list(a), list(b), margin=0.03).equivalent
    assert not tost(list(a), list(b), margin=0.03).equivalent
    gap = tost_paired(list(a), list(1.1 * a), margin=0.03)
    assert not gap.equivalent and gap.ratio == pytest.approx(1.1)
    with pytest.raises(ValueError, match="as many of each"):
        tost_paired([1.0, 2.0], [1.0])
    assert tost_paired([1.0], [1.0]) is None


def test_a_permutation_p_at_its_floor_is_said_as_at_most_the_floor():
    """No permutation of 2,000 beat a large effect: p is at most 1/2,001,
    not 0.0005; an F test's p is said as it is."""
    rows = two_factors(2, normal, effect=5.0)
    perm = anova(rows, ["cpus", "mpm"], "y", method="permutation")
    floor = [t for t in perm.terms if t.p_value <= 1 / (PERMUTATIONS + 1)]
    assert floor and all(perm.p_said(t) == "≤ 0.0005" for t in floor)
    f = anova(rows, ["cpus", "mpm"], "y", method="f")
    assert all(not f.p_said(t).startswith("≤") for t in f.terms)
