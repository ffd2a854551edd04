"""A latency objective judged at the runs' one-sided bound: the cases
with nothing to bound (no run answered; one run each)."""

from corebench.analysis.slo import judge, parse_slo, slo_verdicts
from corebench.analysis.verdict import compare
from tests.analysis.test_multiplicity import runs


def test_a_point_whose_runs_have_no_figure_is_named_not_printed_as_nan():
    p = runs({"cpus": 1}, [0.0, 0.0], [1.0, 1.0])
    empty = [r.model_copy(update={"result": None}) for r in p.measured]
    from dataclasses import replace

    dead = replace(p, measured=empty)
    j = judge(dead, parse_slo("p99<50ms"))
    assert j.runs == 0 and j.shown == ""
    (f,) = slo_verdicts([dead], parse_slo("p99<50ms"), set())
    assert "(no run with a p99: none answered)" in f.text and "nan" not in f.text, f.text
    assert f.outcome == "not shown"


def test_one_run_each_is_not_called_a_miss_of_the_cheapest():
    # One run a point: no bound, so nothing is shown to meet or to miss.
    ps = [runs({"cpus": c}, [x], [p99]) for c, x, p99 in ((1, 1000.0, 10.0), (2, 1900.0, 8.0))]
    found = compare(ps, {"cpus": {"1": 0.05, "2": 0.10}}, parse_slo("p99<50ms"), {"cpus": [1, 2]})
    (f,) = [f for f in found if "no configuration is shown to meet" in f.text]
    assert f.outcome == "not shown", f.outcome
