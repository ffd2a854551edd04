"""The report says which method gave the ANOVA's p-values: the F test, or
the permutation test where the residuals are far from normal."""

from pathlib import Path

import numpy as np

from corebench.analysis.analyse import factor_anova
from corebench.analysis.anova import scope
from corebench.analysis.diagnose import diagnose
from corebench.analysis.points import PointStats
from corebench.analysis.stats import summarize
from corebench.report.data import ReportData
from corebench.report.html import Html
from corebench.report.md import Markdown
from tests.support.records import experiment, load_result, stored_run


def report(wild_share: float, responses: int = 1000) -> ReportData:
    """A 3×2 plan of 5 runs a point; `wild_share` of the runs far off; the
    cpus=1 runs hold `responses` each."""
    rng = np.random.default_rng(0)
    factors = {"cpus": [1, 2, 4], "mpm": ["prefork", "worker"]}
    points = []
    for c in factors["cpus"]:
        for m in factors["mpm"]:
            rps = [
                float(1000 * c * np.exp(rng.normal(0, 0.5 if rng.random() < wild_share else 0.02))) for _ in range(5)
            ]
            runs = [
                stored_run(
                    {"cpus": c, "mpm": m},
                    load_result(responses if c == 1 else 1000, p99_us=int(10_000 * rng.uniform(0.9, 1.1))),
                )
                for _ in rps
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
    d.anova_scope = scope(load_terms=False)
    return d


def test_the_report_names_the_permutation_fallback():
    d = report(wild_share=0.1)
    goodput = next(a for a in d.anova if a.response == "log_goodput")
    assert goodput.method == "permutation", goodput.normality_p
    md = Markdown().render(d)
    assert (
        "- log throughput (goodput): main effects and two-way interactions (any higher ones pooled into the error)"
        in md
    )
    assert "; p from a permutation test (Freedman & Lane 1983; 2,000 permutations)" in md
    html = Html().render(d)
    assert "p from a permutation test (Freedman &amp; Lane 1983; 2,000 permutations)" in html
    assert "Anderson &amp; ter Braak 2003" in html


def test_the_report_names_the_f_test_on_normal_residuals():
    d = report(wild_share=0.0)
    assert all(a.method == "F test" for a in d.anova)
    md = Markdown().render(d)
    assert (
        "- log throughput (goodput): main effects and two-way interactions (any higher ones pooled into the error); "
        "p from the F distribution: Shapiro–Wilk does not reject normal residuals" in md
    )
    # The table ranks nothing: the verdicts compare at matched load.
    assert "it ranks no configuration and no load" in md and "it ranks no configuration and no load" in Html().render(d)


def test_a_p99_too_thin_to_rank_is_left_out_of_the_anova_and_said():
    """The cpus=1 runs hold 500 responses: their p99 is one of their five
    largest, which the verdicts do not rank; the p99 ANOVA leaves them out,
    says so, and keeps them for throughput."""
    d = report(wild_share=0.0, responses=500)
    by = {a.response: a for a in d.anova}
    assert by["log_p99"].n == 20 and by["log_p99"].left_out == 10, by["log_p99"]
    assert by["log_goodput"].n == 30 and by["log_goodput"].left_out == 0
    md = Markdown().render(d)
    assert "10 runs left out: their point has a run of fewer than 1,000 responses, too few for a p99" in md
    # No load factor among the terms: the note under the table names none.
    assert "load levels included" not in md and "at matched load" not in md
    assert "load levels included as terms" in scope(load_terms=True)
