"""The report's scaling fits: only points that can carry a law are fitted,
and the reason is given where no law is."""

from corebench.analysis.analyse import scaling_fits
from corebench.analysis.points import PointStats
from corebench.analysis.stats import summarize
from tests.support.records import stored_run


def point(levels, rps, shared=False):
    s = summarize([rps * 0.99, rps, rps * 1.01])
    return PointStats(levels, [], [stored_run(levels)], s, s, s, 0, 0.0, None, None, False, None, shared)


def test_a_saturated_concurrency_sweep_gets_no_law():
    # The demo's case: every level is past saturation (the server is busy at 25).
    points = [point({"concurrency": c}, x) for c, x in ((25, 5000), (75, 5010), (150, 4990))]
    (sf,) = scaling_fits(points, {"concurrency": [25, 75, 150]})
    assert sf.fit is None
    assert sf.model.why.startswith("no scaling law fitted: 1 usable level")
    assert "N = 75 (past saturation)" in sf.model.why and "N = 150 (past saturation)" in sf.model.why
    assert sf.left_out == [(75.0, 5010), (150.0, 4990)]


def test_points_whose_generator_shared_the_cores_are_left_out():
    xs = {1: 1000, 2: 2000, 3: 3000, 4: 3100}
    points = [point({"cpus": c}, x, shared=c == 4) for c, x in xs.items()]
    (sf,) = scaling_fits(points, {"cpus": list(xs)})
    assert sf.model.ns == [1.0, 2.0, 3.0]
    assert sf.fit is not None and sf.fit.law == "linear"
    assert "N = 4 (the load generator shared the target's cores)" in sf.model.why
    assert max(sf.fit.predictions) == 6.0, "predictions reach twice the largest fitted level"


def test_failing_points_are_left_out_of_fits_and_the_cores_table():
    from corebench.analysis.analyse import cores_table

    xs = {1: 1000, 2: 2000, 3: 3000, 4: 9000}
    points = [point({"cpus": c}, x) for c, x in xs.items()]
    points[3].error_share = 0.6  # fast errors: its goodput is not to be fitted or ranked
    (sf,) = scaling_fits(points, {"cpus": list(xs)})
    assert sf.model.ns == [1.0, 2.0, 3.0] and "N = 4 (more than 1% of its requests failed)" in sf.model.why
    assert [r.cores for r in cores_table(points, {"cpus": list(xs)}, None)] == [1.0, 2.0, 3.0]


def test_the_cores_table_marks_lower_bounds_and_gives_no_speedup_where_the_load_set_the_rate():
    from corebench.analysis.analyse import cores_table

    factors = {"cpus": [1, 2], "think": ["0", "1s"]}
    points = [point({"cpus": c, "think": "0"}, x, shared=c == 2) for c, x in ((1, 1000), (2, 1900))]
    users = [point({"cpus": c, "think": "1s"}, 25.0) for c in (1, 2)]
    for p in users:  # 25 users thinking 1 s: N/(Z+R) ≈ 25 req/s, whatever the CPUs
        p.think_s, p.clients, p.response_s = 1.0, 25, 0.001
    rows = {(r.at, r.cores): r for r in cores_table(points + users, factors, None)}
    flat, shared = rows[("think=0", 1.0)], rows[("think=0", 2.0)]
    assert flat.note == "" and shared.speedup == 1.9 and shared.note.startswith("a lower bound of the server")
    assert "generator on the target's cores" in shared.note
    assert shared.throughput_ci is not None and shared.throughput_ci[0] < 1900 < shared.throughput_ci[1]
    for c in (1.0, 2.0):
        r = rows[("think=1s", c)]
        assert r.speedup != r.speedup and r.efficiency != r.efficiency, "NaN: no speedup"
        assert r.note == "the users' think time set the rate (N/(Z+R)), not the CPUs"
