"""The generator's ceiling: which page it is measured on, and how a run is
held against it (the measurement itself: test_protocols.py)."""

from corebench.plan.model import Load
from corebench.runner.calibrate import lower_bound, page, page_bytes
from corebench.store import Ceiling, RunLayout


def test_a_plan_asking_for_a_builtin_page_is_calibrated_on_that_page():
    assert [page(Load(path=p)) for p in ("/static/2k", "static/204800", "/index.php")] == [
        "/static/2k",
        "/static/204800",
        "/static/64",
    ]
    assert page(Load(url="http://127.0.0.1:1/static/2k")) == "/static/64", "a whole URL is not the built-in server's"
    assert [page_bytes(p) for p in ("/static/2k", "/static/204800", "/static/64")] == [2048, 204_800, 64]


def test_a_run_is_near_the_ceiling_from_its_lowest_calibration():
    layout = RunLayout(method="affinity", target_cpus=[0], generator_cpus=[1])
    c = Ceiling(
        target_cpus=[0],
        generator_cpus=[1],
        shared=False,
        connections=64,
        rps=9_000.0,
        generator_cpu=0.9,
        ceiling_rps=10_000.0,
        ceiling_low_rps=8_000.0,
        ceiling_high_rps=12_000.0,
        repeats=3,
    )
    # Near is NEAR_CEILING (80%) of it: 6,500 req/s is 65% of the mean but
    # 81% of the lowest calibration.
    said = lower_bound(6_500.0, layout, None, c)
    assert said == "65% of the generator's ceiling (3 calibrations ranged 8,000–12,000)", said
    assert lower_bound(6_300.0, layout, None, c) is None
