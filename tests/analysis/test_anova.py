"""ANOVA against statsmodels' anova_lm(typ=2) on the same unbalanced data,
ω² from its definition, and TOST on data of known truth."""

import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from statsmodels.stats.anova import anova_lm

from corebench.analysis.anova import anova, tost


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
