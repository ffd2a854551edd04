"""The report says which method gave the ANOVA's p-values: the F test, or
the permutation test where the residuals are far from normal."""

from pathlib import Path

import numpy as np

from corebench.analysis.analyse import factor_anova
from corebench.analysis.diagnose import diagnose
from corebench.analysis.points import PointStats
from corebench.analysis.stats import summarize
from corebench.report.data import ReportData
from corebench.report.html import Html
from corebench.report.md import Markdown
from tests.support.records import experiment, load_result, stored_run


def report(wild_share: float) -> ReportData:
    """A 3×2 plan of 5 runs a point; `wild_share` of the runs far off."""
    rng = np.random.default_rng(0)
    factors = {"cpus": [1, 2, 4], "mpm": ["prefork", "worker"]}
    points = []
    for c in factors["cpus"]:
        for m in factors["mpm"]:
            rps = [
                float(1000 * c * np.exp(rng.normal(0, 0.5 if rng.random() < wild_share else 0.02))) for _ in range(5)
            ]
            runs = [
                stored_run({"cpus": c, "mpm": m}, load_result(p99_us=int(10_000 * rng.uniform(0.9, 1.1)))) for _ in rps
            ]
            lat = summarize([float(r.p99_us or 0) for r in runs])
            points.append(
                PointStats(
                    {"cpus": c, "mpm": m},
                    runs,
                    runs,
                    summarize(rps),
                    lat,
                    lat,
                    0,
                    0.0,
                    None,
                    None,
                    False,
                    None,
                    False,
                    rps,
                )
            )
    d = ReportData(
        experiment(factors, runs_planned=30),
        [],
        points,
        factors,
        [diagnose(p, None, None) for p in points],
        store_path=Path("t.sqlite"),
    )
    d.anova = factor_anova(points, factors)
    return d


def test_the_report_names_the_permutation_fallback():
    d = report(wild_share=0.1)
    goodput = next(a for a in d.anova if a.response == "log_goodput")
    assert goodput.method == "permutation", goodput.normality_p
    md = Markdown().render(d)
    assert "- log throughput (goodput): p from a permutation test (Freedman & Lane 1983; 2,000 permutations)" in md
    html = Html().render(d)
    assert "p from a permutation test (Freedman &amp; Lane 1983; 2,000 permutations)" in html
    assert "Anderson &amp; ter Braak 2003" in html


def test_the_report_names_the_f_test_on_normal_residuals():
    d = report(wild_share=0.0)
    assert all(a.method == "F test" for a in d.anova)
    md = Markdown().render(d)
    assert "- log throughput (goodput): p from the F distribution: Shapiro–Wilk does not reject normal residuals" in md
    # The table ranks nothing: the verdicts compare at matched load.
    assert "it ranks no configuration and no load" in md and "it ranks no configuration and no load" in Html().render(d)
