"""The verdicts' answers on synthetic data of known truth (ANSWERS.md):
think time is load, a design without power says so, points that measured
the generator say so first, interference is measured and named, and
intervals never reach 0."""

import numpy as np
import pytest

from corebench.analysis.diagnose import diagnose
from corebench.analysis.drift import drift
from corebench.analysis.load import load_factors
from corebench.analysis.points import point_stats
from corebench.analysis.verdict import compare, verdicts
from corebench.store import CoreTimes, MonitorSummary, RunLayout, ServiceSummary, TargetInfo
from tests.support.records import experiment, load_result, stored_run

REALISTIC = {"think": ["0", "0..2s"], "size": [2048, 204800], "model": ["prefork", "threads"]}
REALISTIC_LOAD = {"model": "users", "think": "{think}", "path": "/static/{size}", "concurrency": 25}


def _runs(levels, rps, **kw):
    """Measured runs of one point, one per throughput, 1 s long; 10
    clients, so that Little's law holds (R = 10 / X)."""
    return [
        stored_run(levels, load_result(ok=round(x), mean_us=1e7 / x), repetition=i + 1, round=i + 1, seq=i + 1, **kw)
        for i, x in enumerate(rps)
    ]


def test_think_time_and_what_is_requested_are_load():
    assert load_factors(REALISTIC, REALISTIC_LOAD) == {"think", "size"}
    assert load_factors({"users": [1, 5], "mpm": ["a", "b"]}) == {"users"}
    assert load_factors({"http": ["1.1", "2"]}, {"http": "{http}"}) == set(), "the protocol is configuration"


def test_load_levels_are_never_ranked_or_compared_as_configurations():
    rng = np.random.default_rng(1)
    runs = []
    for think, scale in (("0", 1.0), ("0..2s", 0.01)):
        for size in (2048, 204800):
            for model in ("prefork", "threads"):
                levels = {"think": think, "size": size, "model": model}
                these = _runs(levels, list(rng.normal(5000 * scale, 50 * scale, 3)))
                if think != "0":
                    for r in these:
                        assert r.result is not None
                        r.result = r.result.model_copy(update={"model": "users", "think_s": (0.0, 2.0)})
                runs += these
    points = point_stats(runs)
    out = verdicts(points, factors=REALISTIC, load=load_factors(REALISTIC, REALISTIC_LOAD))
    assert not any(v.startswith("think=") or "Over all points" in v for v in out), out
    best = [v for v in out if "in throughput" in v or "best throughput" in v]
    assert len(best) == 2 and all(v.startswith("At think=0 ") for v in best), best
    assert all(": model=" in v for v in best), "only the configuration is picked"
    # With users thinking, the load model sets the rate: not compared.
    thinking = [v for v in out if "set by the users' think time" in v]
    assert len(thinking) == 2 and all(v.startswith("At think=0..2s ") for v in thinking), thinking
    # 10 users thinking 1 s on average at 0.2 s a response offer at most
    # 10/1.2 ≈ 8 req/s; these runs measured about 50: said, with why.
    assert all("≈ 8 req/s in a steady state; measured up to 5" in v for v in thinking), thinking
    assert all("above it: every user's first request leaves at once" in v for v in thinking)
    (method,) = [v for v in out if v.startswith("Comparisons: ")]
    assert "Throughput comparisons leave out the 4 point(s) where users' think time sets the rate" in method
    # About 50 responses a run: no p99 is compared there either, and neither line says one is.
    assert "(nor is their p99: their runs hold too few responses for one)" in method, method
    assert all("nor is their p99, their runs too short for one (the next line)" in v for v in thinking), thinking
    # The model's effect on throughput is compared where the load did not
    # set the rate: at think=0, one comparison per page size.
    (effects,) = [v for v in out if v.startswith("model=threads against model=prefork")]
    assert "of 2 matched comparisons" in effects


def test_an_underpowered_comparison_says_what_it_could_have_seen():
    # 1 -> 2 CPUs at +78% from 2 runs a side, 25% apart: not shown, and the
    # design could not have shown it.
    runs = _runs({"cpus": 1}, [4000.0, 6000.0]) + _runs({"cpus": 2}, [8500.0, 9300.0])
    out = verdicts(point_stats(runs), factors={"cpus": [1, 2]})
    (step,) = [v for v in out if v.startswith("From 1 to 2 CPUs")]
    assert "throughput inconclusive: +78.0%" in step
    assert "this design (2 and 2 runs) could detect a change of only more than a factor of 10" in step
    assert not any("no significant difference" in v for v in out)
    assert any(v.startswith("What the intervals cover: the run-to-run noise of this session only") for v in out)


def test_drift_says_what_it_could_detect_and_when_rounds_are_too_few():
    three = drift({"a": [(1, 100.0), (2, 101.0), (3, 99.0)], "b": [(1, 50.0), (2, 50.5), (3, 49.0)]})
    assert three is not None and not three.notable
    assert three.sentence() == "Drift across rounds: not tested, 3 rounds (the test needs 4 or more)."
    rng = np.random.default_rng(2)
    flat = drift({"a": [(r, 100 * (1 + rng.normal(0, 0.02))) for r in range(1, 9)]})
    assert flat is not None and not flat.notable
    said = flat.sentence()
    assert said.startswith("Drift across rounds: none detected, ") and "could detect a drift of about ±" in said
    assert 0 < flat.detectable < 0.05


def test_an_experiment_whose_every_point_measured_the_generator_says_so_first():
    busy = MonitorSummary(target_cpu=0.5, generator_cpu=1.0, client_bound=True)
    runs = _runs({"mpm": "prefork"}, [1000.0, 1010.0, 990.0], monitor=busy)
    runs += _runs({"mpm": "worker"}, [1500.0, 1510.0, 1490.0], monitor=busy)
    out = verdicts(point_stats(runs), factors={"mpm": ["prefork", "worker"]})
    assert out[0].startswith("Measured the generator, not only the server: at every point (2)"), out[0]
    assert "generator CPU-bound" in out[0] and "[cluster]" in out[0]
    (best,) = [v for v in out if "best in throughput" in v]
    # Every point the line names carries its caveat, and the loser's lower bound withholds "shown best";
    # the pick is a bound too, so the bias's direction is unknown.
    assert "mpm=prefork: generator CPU-bound in 3 of 3 runs; mpm=worker: generator CPU-bound in 3 of 3 runs" in best
    assert "no configuration shown best in throughput; the highest mean: mpm=worker" in best
    assert "Not shown best: mpm=prefork had its throughput a lower bound" in best and "is unknown" in best


def test_sharing_is_told_from_the_cpu_sets_without_a_cpus_factor():
    unplaced = RunLayout(method="none", target_cpus=[0, 1], generator_cpus=[0, 1], shared=True)
    (p,) = point_stats(_runs({"mpm": "prefork"}, [1000.0, 1010.0], layout=unplaced))
    assert p.shared and p.limits() == ["generator on the target's cores"]
    apart = RunLayout(method="affinity", target_cpus=[0], generator_cpus=[1])
    (q,) = point_stats(_runs({"mpm": "prefork"}, [1000.0, 1010.0], layout=apart))
    assert not q.shared and q.limits() == []


def _core(busy: float) -> CoreTimes:
    return CoreTimes(user=busy * 0.8, system=busy * 0.2, idle=1 - busy)


def test_interference_on_the_target_core_is_measured_and_named():
    # The field case: the target's pinned core full, the target on 0.69 of it,
    # the generator on the other core: neighbours took 0.31.
    layout = RunLayout(method="affinity", target_cpus=[0], generator_cpus=[1])
    crowded = MonitorSummary(cores=[_core(1.0), _core(0.3)], target_cpu=0.69, generator_cpu=0.3)
    (p,) = point_stats(_runs({"cpus": 1}, [1000.0, 1010.0, 990.0], layout=layout, monitor=crowded))
    assert p.interference_runs == 3 and abs(p.interference_max - 0.31) < 1e-9
    d = diagnose(p, 1.0, 2)
    assert d.kind == "interference" and "others (neither the target nor the generator) took up to 31%" in d.evidence
    assert any(v.startswith("Interference: in 3 of 3 measured runs") for v in verdicts([p]))
    # iowait is idle time: a core waiting on the disk is not a neighbour.
    waiting = MonitorSummary(cores=[CoreTimes(user=0.5, iowait=0.5, idle=0.0), _core(0.3)], target_cpu=0.5)
    (q,) = point_stats(_runs({"cpus": 1}, [1000.0, 1010.0], layout=layout, monitor=waiting))
    assert q.interference_runs == 0


def test_a_machine_whose_cores_are_full_is_machine_cpu_bound():
    # Unplaced on 2 cores: the target on 1.1 of them, the generator on 0.75,
    # others on under 5%: the machine, not a wait, was the limit, and not
    # the target's CPU alone (it used 55% of it).
    layout = RunLayout(method="none", target_cpus=[0, 1], generator_cpus=[0, 1], shared=True)
    full = MonitorSummary(cores=[_core(0.98), _core(0.97)], target_cpu=1.1, generator_cpu=0.75)
    (p,) = point_stats(_runs({"model": "prefork"}, [1000.0, 1010.0], layout=layout, monitor=full))
    d = diagnose(p, None, 2)
    assert d.kind == "machine CPU-bound" and "every core of the machine was busy" in d.evidence, d
    assert "not the target's alone, was the limit" in d.evidence


def _spread(levels, rps, mean_ms, sd_ms):
    """Runs whose requests' latency has this mean and sd (one sd for every
    run, or one per run)."""
    runs = _runs(levels, rps)
    sds = sd_ms if isinstance(sd_ms, list) else [sd_ms] * len(runs)
    for r, sd in zip(runs, sds, strict=True):
        assert r.result is not None
        total = r.result.latency_us.total.model_copy(update={"mean_us": mean_ms * 1000, "stdev_us": sd * 1000})
        lat = r.result.latency_us.model_copy(update={"total": total})
        r.result = r.result.model_copy(update={"latency_us": lat})
    return runs


def test_the_fastest_is_weighed_against_the_least_variable_per_request():
    # The fourth field report: the faster size's requests vary more.
    runs = _spread({"cpus": 4}, [1090.0, 1100.0, 1110.0], 10.0, 8.0)
    runs += _spread({"cpus": 8}, [1000.0, 1005.0, 995.0], 11.0, 4.4)
    out = verdicts(point_stats(runs), factors={"cpus": [4, 8]})
    (line,) = [v for v in out if "speed against steadiness" in v]
    assert line.startswith("At the plan's one load, speed against steadiness: cpus=4 serves the most (+10% over")
    # Every run's sd the same on each side: nothing says how they vary from
    # run to run, so no test is claimed.
    # And these runs' latencies are bounds (10 clients at 10-11 ms and
    # 1,000-1,100 req/s: Little's law fails), so their spreads are too.
    assert (
        "cpus=8's requests varied less in these runs, not shown (cpus=4, cpus=8: latency partly the generator's or "
        "the machine's, so its spread is too): latency 11.00 ± 4.40 ms against 10.00 ± 8.00" in line
    )
    assert "latency sd −45.0%, not tested (the runs of both sides gave identical figures" in line
    assert "run-to-run variation of throughput" in line
    # Run sds that scatter, 5 runs a side, Little's law holding (10 clients,
    # R = 10/X): shown, with its interval.
    runs = _spread({"cpus": 4}, [1090.0, 1100.0, 1110.0, 1095.0, 1105.0], 10 / 1.1, [8.0, 7.5, 8.5, 8.2, 7.8])
    runs += _spread({"cpus": 8}, [1000.0, 1005.0, 995.0, 1002.0, 998.0], 10.0, [4.4, 4.0, 4.8, 4.5, 4.2])
    (f,) = [f for f in compare(point_stats(runs), factors={"cpus": [4, 8]}) if "speed against steadiness" in f.text]
    assert "cpus=8's requests vary less" in f.text and "latency sd lower" in f.text and f.outcome == "trade-off"
    assert f.interval is not None and f.interval.high < 1
    # The same with the generator on the target's cores: not shown.
    shared = RunLayout(method="none", target_cpus=[0, 1], generator_cpus=[0, 1], shared=True)
    for r in runs:
        r.layout = shared
    (f,) = [f for f in compare(point_stats(runs), factors={"cpus": [4, 8]}) if "speed against steadiness" in f.text]
    assert "varied less in these runs, not shown (cpus=4, cpus=8: latency partly" in f.text and f.outcome == "not shown"
    # Run means that drift while each run's own sd is larger: no trade-off
    # (a pooled sd would have counted the drift as spread).
    runs = _spread({"cpus": 4}, [1090.0, 1100.0, 1110.0], 10.0, 3.0)
    for r, mean_ms in zip(runs, (5.0, 10.0, 15.0), strict=True):
        assert r.result is not None
        total = r.result.latency_us.total.model_copy(update={"mean_us": mean_ms * 1000})
        r.result = r.result.model_copy(update={"latency_us": r.result.latency_us.model_copy(update={"total": total})})
    runs += _spread({"cpus": 8}, [1000.0, 1005.0, 995.0], 10.0, 4.0)
    assert not any("speed against steadiness" in v for v in verdicts(point_stats(runs), factors={"cpus": [4, 8]}))
    # Runs whose own sds scatter: the smaller pooled sd is not shown, and said so.
    runs = _spread({"cpus": 4}, [1090.0, 1100.0, 1110.0], 10 / 1.1, [12.0, 3.0, 9.0])
    runs += _spread({"cpus": 8}, [1000.0, 1005.0, 995.0], 10.0, [2.0, 9.0, 2.2])
    (f,) = [f for f in compare(point_stats(runs), factors={"cpus": [4, 8]}) if "speed against steadiness" in f.text]
    assert "cpus=8's requests varied less in these runs, not shown" in f.text, f.text
    assert "latency sd inconclusive" in f.text and "could detect" in f.text
    assert f.outcome == "inconclusive" and "Which to run weighs" not in f.text
    # The fastest is also the steadiest: no trade-off to state.
    runs = _spread({"cpus": 4}, [1090.0, 1100.0, 1110.0], 10.0, 2.0) + _spread({"cpus": 8}, [1000.0, 1005.0], 11.0, 4.4)
    assert not any("speed against steadiness" in v for v in verdicts(point_stats(runs), factors={"cpus": [4, 8]}))


def test_runs_too_short_for_their_think_time_are_warned_about():
    from corebench.analysis.lines import short_lines

    runs = _runs({"think": "0..2s"}, [10.0, 11.0])
    for r in runs:
        assert r.result is not None
        r.result = r.result.model_copy(update={"think_s": (0.0, 2.0), "duration_s": 2.0})
    (line,) = short_lines(point_stats(runs))
    assert "the users' mean think time (1 s) is 50% of a 2 s run" in line and "(10 s)" in line
    assert short_lines(point_stats(_runs({"think": "0"}, [10.0, 11.0]))) == []


def test_a_point_answering_only_errors_is_named_failing_not_dropped():
    # Nothing succeeded at server=broken: its runs are failed, not measured,
    # and its 500s still count against it, first in the verdicts.
    broken = [
        stored_run(
            {"server": "broken"},
            load_result(status_counts={500: 1000}),
            status="failed",
            error="no request succeeded: 1,000 sent; status 500: 1,000",
            repetition=i,
            seq=10 + i,
        )
        for i in (1, 2)
    ]
    points = point_stats(_runs({"server": "good"}, [5000.0, 5100.0]) + broken)
    out = verdicts(points, factors={"server": ["good", "broken"]})
    assert out[0].startswith("Failing: 1 point(s) (server=broken)"), out
    assert "100.0% of requests failed" in out[0]
    assert "no request succeeded: 1,000 sent; status 500: 1,000" in out[0]
    dead = next(p for p in points if p.levels["server"] == "broken")
    assert dead.error_share == 1.0
    assert diagnose(dead, None).evidence.startswith("no measured run succeeded (2 failed: no request succeeded")


def test_a_run_faster_than_its_own_ceiling_is_a_calibration_error():
    from corebench.analysis.lines import above_ceiling

    def point(rps, ceiling):
        layout = RunLayout(method="affinity", target_cpus=[0], generator_cpus=[1], generator_ceiling_rps=ceiling)
        return point_stats([stored_run({"c": ceiling}, load_result(ok=rps), layout=layout, seq=ceiling)])

    assert above_ceiling(point(9_000, 10_000)) == [], "below its ceiling: no error"
    (said,) = above_ceiling(point(12_000, 10_000) + point(9_000, 20_000))
    assert said.startswith(
        "Calibration error: 1 measured run(s) went faster than every calibration of the generator's ceiling"
    )
    assert "(up to 120% of the ceiling)" in said and "projected from its CPU per request" in said


def test_a_projected_ceiling_carries_its_interval():
    """ANSWERS.md §4: a projection carries its interval. The 3 calibrations
    are recovered from their mean, lowest and highest; their mean's 95%
    interval is Student's t on 2 df, as scipy gives it."""
    import numpy as np
    from scipy import stats as st

    from corebench.analysis.lines import generator_lines
    from corebench.analysis.points import ceiling_interval
    from corebench.store import Ceiling

    values = [2435.0, 2549.0, 2660.0]
    mean = float(np.mean(values))
    want = st.t.interval(0.95, 2, loc=mean, scale=st.sem(values))
    assert ceiling_interval(mean, 2435.0, 2660.0, 3) == pytest.approx(want)
    assert ceiling_interval(2500.0, 2400.0, 2600.0, 2) == pytest.approx(
        st.t.interval(0.95, 1, loc=2500.0, scale=st.sem([2400.0, 2600.0]))
    )
    assert ceiling_interval(mean, None, 2660.0, 3) is None and ceiling_interval(mean, 2435.0, 2660.0, 1) is None
    ceiling = Ceiling(
        target_cpus=[0], generator_cpus=[1], shared=False, connections=50, rps=1200.0, generator_cpu=0.5,
        ceiling_rps=mean, ceiling_low_rps=2435.0, ceiling_high_rps=2660.0, repeats=3,
    )  # fmt: skip
    exp = experiment({"size": ["2MB"]}).model_copy(update={"calibration": [ceiling]})
    (line,) = [v for v in generator_lines(exp, []) if v.startswith("Generator ceiling")]
    low, high = want
    assert (
        f"(3 calibrations ranged 2,435–2,660; their mean's 95% CI {low:,.0f}–{high:,.0f}, Student's t, which covers "
        "their spread, not the projection's)" in line
    ), line
    assert "projected to all of its 1 core" in line, line


def test_a_run_past_the_highest_calibration_by_their_noise_does_not_refute_the_ceiling():
    # realistic-vs-benchmark's case: 3 calibrations 2,435, 2,549 and 2,660
    # (mean 2,548, sd 112.5); a run at 2,797 went past the highest by less
    # than their noise allows (a run of their own spread passes the highest
    # a quarter of the time): the ceiling stands, and the run is marked near
    # it. The bound is the one-sided 95% prediction bound for the largest of
    # the runs the ceiling held: t(0.95, 2) for one, t(1 − 0.05/k, 2) for k.
    import math
    import statistics

    from scipy import stats as st

    from corebench.analysis.lines import above_ceiling
    from corebench.analysis.points import refuted_above

    bounds = {"generator_ceiling_rps": 2548, "generator_ceiling_high_rps": 2660, "generator_ceiling_low_rps": 2435}
    layout = RunLayout(method="affinity", target_cpus=[0], generator_cpus=[1], **bounds)
    sd = statistics.stdev([2435, 3 * 2548 - 2435 - 2660, 2660])
    for k in (1, 12):
        want = 2548 + float(st.t.ppf(1 - 0.05 / k, 2)) * sd * math.sqrt(4 / 3)
        assert refuted_above(layout, k) == pytest.approx(want)
    assert refuted_above(layout, 12) > refuted_above(layout, 1) > 2797
    # A store from before the lowest was kept: the widest three with that mean and highest (2,324, 2,660, 2,660).
    old = layout.model_copy(update={"generator_ceiling_low_rps": None})
    widest = statistics.stdev([3 * 2548 - 2 * 2660, 2660, 2660])
    assert refuted_above(old) == pytest.approx(2548 + float(st.t.ppf(0.95, 2)) * widest * math.sqrt(4 / 3))
    near = "110% of the generator's ceiling (3 calibrations ranged 2,435–2,660)"

    def point(rps: float) -> list:
        run = stored_run({"size": "2MB"}, load_result(ok=round(rps)), layout=layout, seq=1)
        return point_stats([run.model_copy(update={"lower_bound": near})])

    (noisy,) = point(2797)
    assert above_ceiling([noisy]) == [] and noisy.near_ceiling, "the ceiling stands and marks the run"
    (past,) = point(3400)
    assert above_ceiling([past]) != [] and not past.near_ceiling


def test_the_steadiest_of_those_throughput_cannot_tell_apart_is_named_with_its_caveat():
    # Same throughput, one configuration's requests vary a quarter as much;
    # the generator shared the target's cores: latency an upper bound.
    shared = RunLayout(method="none", target_cpus=[0, 1], generator_cpus=[0, 1], shared=True)
    runs = _spread({"mpm": "event"}, [1000.0, 1010.0, 990.0], 10.0, 8.0)
    runs += _spread({"mpm": "worker"}, [1002.0, 1008.0, 992.0], 10.5, 2.0)
    for r in runs:
        r.layout = shared
    out = verdicts(point_stats(runs), factors={"mpm": ["event", "worker"]})
    (line,) = [v for v in out if "steadiness per request" in v]
    assert (
        "steadiness per request among the configurations throughput cannot tell apart (mpm=worker, mpm=event): "
        "mpm=worker's requests varied least in these runs, lower against every other, but not shown to be the "
        "server's "
        "(mpm=worker, mpm=event: latency partly the generator's or the machine's, so its spread is too)" in line
    ), line
    assert "10.50 ± 2.00 ms against 10.00 ± 8.00 ms for mpm=event" in line
    assert (
        "Caveat, each named point's latency an upper bound of the server's: mpm=worker: generator on the target's cores"
        in line
    )
    # Two runs a side, their own sds scattered: not shown, and said so.
    runs = _spread({"mpm": "event"}, [1000.0, 1010.0], 10.0, [9.0, 3.0])
    runs += _spread({"mpm": "worker"}, [1002.0, 1008.0], 10.5, [1.0, 5.0])
    (f,) = [f for f in compare(point_stats(runs), factors={"mpm": ["event", "worker"]}) if "steadiness" in f.text]
    assert "mpm=worker's requests varied least in these runs, not shown against every other" in f.text, f.text
    assert "latency sd inconclusive" in f.text and f.outcome == "inconclusive"
    # The JSON record carries the comparison's interval, as the sentence does: it holds no change.
    assert f.interval is not None and f.interval.low < 1 < f.interval.high and f.interval.unit == "ratio", f.interval


def test_steadier_run_to_run_only_where_a_test_of_spread_says_so():
    # Brown–Forsythe on 8 runs a side: CV 10% against 0.5%.
    rng = np.random.default_rng(5)
    fast = _runs({"mpm": "event"}, list(rng.normal(1100, 110, 8)))
    steady = _runs({"mpm": "worker"}, list(rng.normal(1000, 5, 8)))
    out = verdicts(point_stats(fast + steady), factors={"mpm": ["event", "worker"]})
    (line,) = [v for v in out if "steadier run to run" in v]
    assert line.startswith("At the plan's one load, mpm=worker is steadier run to run than mpm=event")
    assert "Brown–Forsythe test, Holm-adjusted p " in line
    # Spreads that a test cannot tell apart: no such line.
    alike = _runs({"mpm": "worker"}, list(rng.normal(1000, 90, 8)))
    assert not any("steadier" in v for v in verdicts(point_stats(fast + alike), factors={"mpm": ["event", "worker"]}))


def test_a_factor_that_changes_the_generators_io_says_the_effect_is_confounded():
    # HTTP/2 runs on epoll, HTTP/1.1 on io_uring: the generator changed too.
    runs = []
    for http, io, rps in (("1.1", "io_uring", [5000.0, 5050.0, 4950.0]), ("2", "epoll", [7000.0, 7100.0, 6900.0])):
        for r in _runs({"http": http}, rps):
            assert r.result is not None
            r.result = r.result.model_copy(update={"io": io})
            runs.append(r)
    out = verdicts(point_stats(runs), factors={"http": ["1.1", "2"]})
    (line,) = [v for v in out if v.startswith("http=2 against http=1.1")]
    assert "The generator's I/O differed between the sides (io_uring against epoll" in line
    same = verdicts(point_stats(_runs({"m": "a"}, [1.0e3, 1.01e3]) + _runs({"m": "b"}, [2.0e3, 2.02e3])))
    assert not any("I/O differed" in v for v in same)


def test_a_target_on_its_own_host_is_named_and_shares_only_where_the_load_did():
    from corebench.analysis.lines import hosts_lines

    def runs(shared: bool, generator: str | None) -> list:
        layout = RunLayout(
            method="cgroup2", target_cpus=[0, 1], generator_cpus=[0, 1, 2, 3], shared=shared, target_host="10.0.0.5"
        )
        if generator:
            layout = layout.model_copy(update={"generator": generator})
        return [stored_run({"cpus": 2}, layout=layout, repetition=i, seq=i) for i in (1, 2)]

    # Another machine: CPU numbers in common mean nothing there, no caveat.
    apart = runs(False, None)
    assert not any(r.shared for r in apart)
    exp = experiment()
    (line,) = hosts_lines(exp, point_stats(apart))
    assert line.startswith("Hosts: the target ran on the Ray node 10.0.0.5 ([target] node)")
    assert (
        "the load came from the machine that ran the plan (the host above); no load ran on the target's cores" in line
    )
    assert "The generator's ceiling was not measured across these hosts" in line
    # A load agent on the target's node (or the node is this machine): shared, and said.
    beside = runs(True, "ray agents")
    assert all(r.shared for r in beside)
    (line,) = hosts_lines(exp, point_stats(beside))
    assert "the Ray cluster's load agents; in 2 run(s) the load ran on the target's cores too" in line
    # The agents' hosts as stored, agents on one host counted together; the ceiling measured across them.
    node = {"cpu_model": "EPYC", "cpus": 16, "kernel": "6.1"}
    loads = [{"node": "l/10.0.0.4/a", "agent": i, "cores": 16} | node for i in (0, 1)]
    loads += [{"node": "m/10.0.0.6/b", "agent": 2, "cores": 1}]
    calibrated = experiment(
        host={"load_nodes": loads},
        calibration=[
            {
                "target_cpus": [0, 1],
                "generator_cpus": [],
                "shared": False,
                "connections": 4,
                "rps": 1.0,
                "generator_cpu": 1.0,
                "ceiling_rps": 2.0,
                "across": True,
                "agents": [
                    {"node": "l/10.0.0.4/a", "cores": 1, "rps": 1.0, "cpu_utilization": 0.5, "ceiling_rps": 2.0}
                ],
            }
        ],
    )
    (line,) = hosts_lines(calibrated, point_stats(beside))
    assert (
        "the Ray cluster's load agents (2 agents on l/10.0.0.4/a: EPYC, 16 CPUs, kernel 6.1; an agent on m/10.0.0.6/b)"
        in line
    )
    assert "The generator's ceiling was measured from the load hosts against the built-in server" in line
    # A calibration that failed is not "not measured".
    failed = calibrated.model_copy(
        update={"calibration": [c.model_copy(update={"error": "x", "agents": []}) for c in calibrated.calibration]}
    )
    (line,) = hosts_lines(failed, point_stats(beside))
    assert "The generator's ceiling could not be measured across these hosts (why: above)." in line
    # Agents loading a target on this machine: the hosts are named too.
    here = [stored_run({"cpus": 2}, layout=RunLayout(method="cgroup2", target_cpus=[0], generator="ray agents"), seq=1)]
    (line,) = hosts_lines(calibrated, point_stats(here))
    assert line.startswith("Hosts: the target ran on the machine that ran the plan (the host above); the load came")
    # A running server: where it runs is not known here.
    here[0].target = TargetInfo(kind="url", base_url="http://10.0.0.9:8080/")
    (line,) = hosts_lines(calibrated, point_stats(here))
    assert line.startswith("Hosts: the target is a server already running at http://10.0.0.9:8080/ (url), wherever")
    assert hosts_lines(exp, point_stats(_runs({"cpus": 1}, [10.0, 11.0]))) == []


def test_a_cheaper_pick_is_not_shown_against_a_runner_up_whose_throughput_is_a_lower_bound():
    """cpus=2 serves 1.5× as much at 4× the price: cpus=1 costs 2.67× less
    per request, shown with tight runs; but where cpus=2's throughput is a
    lower bound (the generator shared its cores), its cost is an upper
    bound, and the pick is not shown."""
    prices = {"cpus": {"1": 0.05, "2": 0.20, "4": 0.40}}

    def said(shared: bool, both: bool = False, third: bool = False) -> str:
        layout = RunLayout(method="none", target_cpus=[0, 1], generator_cpus=[0, 1], shared=True) if shared else None
        runs = _runs({"cpus": 1}, [1000, 1005, 995, 1002], layout=layout if both else None)
        runs += _runs({"cpus": 2}, [1500, 1510, 1490, 1503], layout=None if third else layout)
        if third:
            # Dearer by its mean, but a lower bound: it may truly be cheaper than the pick.
            runs += _runs({"cpus": 4}, [1900, 1910, 1890, 1903], layout=layout)
        (line,) = [v for v in verdicts(point_stats(runs), prices) if "lowest cost per request at mean throughput" in v]
        return line

    clean = said(False)
    assert "lowest cost per request at mean throughput: cpus=1" in clean and "so cpus=1 is shown cheaper" in clean, (
        clean
    )
    bounded = said(True)
    assert "cpus=2's throughput is a lower bound" in bounded and "cpus=1 is not shown cheaper" in bounded, bounded
    # The pick a bound too: it is, if anything, cheaper still; the runner-up's bound still withholds it.
    both = said(True, both=True)
    assert "cpus=2's throughput is a lower bound" in both and "cpus=1 is not shown cheaper" in both, both
    # A clean runner-up, but a third configuration's throughput a lower bound: not shown either.
    third = said(True, third=True)
    assert "cpus=4's throughput is a lower bound" in third and "cpus=1 is not shown cheaper" in third, third


def test_an_objective_met_by_the_p99_says_when_requests_waited_most_of_a_run():
    """50 workers, 175 connections: the p99 meets 50 ms while the requests
    left without a worker take the whole run. The SLO line says so; the
    diagnosis names it where Little's law fails."""
    from corebench.analysis.slo import parse_slo

    stuck = []
    for i in (1, 2, 3):
        result = load_result(10_000, 2.0, p50_us=1000, p99_us=3000 + 100 * i, mean_us=1000)
        total = result.latency_us.total.model_copy(update={"max_us": 1_980_000})
        result = result.model_copy(update={"latency_us": result.latency_us.model_copy(update={"total": total})})
        stuck.append(stored_run({}, result, repetition=i, seq=i))
    (line,) = [v for v in verdicts(point_stats(stuck), slo=parse_slo("p99<50ms")) if v.startswith("p99 < 50 ms")]
    assert "met by the target" in line and "its slowest response took 1.98 s of a 2.00 s run" in line, line
    assert "which the p99 does not show" in line


def test_a_p99_from_too_few_responses_is_not_ranked():
    """67 responses a run (users thinking 1 s in a 2 s run): a run's p99 is
    one of its largest few; no lowest p99 is named."""
    a = [stored_run({"cpus": 1}, load_result(67, 2.0, p99_us=900_000), repetition=i, seq=i) for i in (1, 2, 3)]
    b = [stored_run({"cpus": 2}, load_result(67, 2.0, p99_us=400_000), repetition=i, seq=i + 3) for i in (1, 2, 3)]
    lines = verdicts(point_stats(a + b))
    assert any("p99 not ranked: a run held only 67 responses" in v for v in lines), lines
    assert not any("lowest p99" in v for v in lines), lines


def test_a_ceiling_a_run_went_past_marks_no_run_a_lower_bound():
    """Two points held against one ceiling of 10,000 req/s: one at 9,000
    (90%, marked near it), one at 12,000 (past it). The ceiling does not
    hold for this load, so neither is marked by it; a point held against
    another ceiling keeps its mark."""
    layout = RunLayout(method="affinity", target_cpus=[0], generator_cpus=[1], generator_ceiling_rps=10_000)
    other = RunLayout(method="affinity", target_cpus=[0], generator_cpus=[1], generator_ceiling_rps=20_000)
    near = "90% of the generator's ceiling"
    runs = [
        stored_run({"c": 1}, load_result(ok=9_000), layout=layout, lower_bound=near, seq=1),
        stored_run({"c": 2}, load_result(ok=12_000), layout=layout, seq=2),
        stored_run({"c": 3}, load_result(ok=19_000), layout=other, lower_bound="95% of the generator's ceiling", seq=3),
    ]
    a, b, c = point_stats(runs)
    assert not a.near_ceiling and not b.near_ceiling and c.near_ceiling
    assert "at 80% or more of the lowest of the generator's calibrations" in c.limits()
    assert not any("ceiling" in why for why in a.limits() + b.limits())
    # With a range of calibrations (10,000 the mean, 12,500 the highest), a
    # run at 12,000 is within it: the ceiling stands, and so does the mark.
    ranged = layout.model_copy(update={"generator_ceiling_high_rps": 12_500})
    runs = [
        stored_run({"c": 1}, load_result(ok=9_000), layout=ranged, lower_bound=near, seq=1),
        stored_run(
            {"c": 2}, load_result(ok=12_000), layout=ranged, lower_bound="120% of the generator's ceiling", seq=2
        ),
    ]
    a, b = point_stats(runs)
    assert a.near_ceiling and b.near_ceiling


def test_every_line_naming_a_point_whose_requests_waited_a_whole_run_says_so():
    def stalled(levels, rps, seq):
        out = []
        for i, x in enumerate(rps):
            result = load_result(ok=round(x), mean_us=1e7 / x)
            total = result.latency_us.total.model_copy(update={"max_us": 990_000})
            result = result.model_copy(update={"latency_us": result.latency_us.model_copy(update={"total": total})})
            out.append(stored_run(levels, result, repetition=i + 1, round=i + 1, seq=seq + i))
        return out

    runs = stalled({"cpus": 1}, [1000.0, 1010.0, 990.0], 1) + _runs({"cpus": 2}, [1500.0, 1510.0, 1490.0])
    named = [v for v in verdicts(point_stats(runs)) if "cpus=1" in v]
    assert named and all("Caution: requests waited most of a run at cpus=1" in v for v in named), named


def test_steadiness_asked_at_every_load_level_is_held_over_them():
    """The same contrast at two concurrencies: each steadiness comparison
    is held over both levels (Bonferroni over 2), as throughput's family
    is held over its pairs."""
    runs = []
    for c in (10, 50):
        runs += _spread({"mpm": "event", "concurrency": c}, [1000.0, 1010.0, 990.0], 10.0, 8.0)
        runs += _spread({"mpm": "worker", "concurrency": c}, [1002.0, 1008.0, 992.0], 10.5, 2.0)
    for i, r in enumerate(runs):
        r.seq = r.id = i + 1
    out = verdicts(point_stats(runs), factors={"mpm": ["event", "worker"], "concurrency": [10, 50]})
    said = [v for v in out if "steadiness per request" in v]
    assert len(said) == 2 and all("simultaneous over 2 (Bonferroni)" in v for v in said), said


def test_a_services_own_cpu_per_request_is_compared_beside_the_targets():
    # The second field report: bigger buffers cut the database's CPU per
    # request (2.0 → 1.0 ms, a cgroup of its own), not the web server's
    # (0.5 ms either way). Service demand law per run, D = U/X.
    runs = []
    for buffers, db_ms in (("8MB", 2.0), ("80MB", 1.0)):
        rps = [500.0, 505.0, 495.0]
        for r, x, wobble in zip(_runs({"buffers": buffers}, rps), rps, (1.0, 1.01, 0.99), strict=True):
            db = ServiceSummary(user_cpu=0.8 * db_ms * wobble * x / 1000, system_cpu=0.2 * db_ms * wobble * x / 1000)
            monitor = MonitorSummary(target_cpu=0.5 * wobble * x / 1000, services={"db": db})
            runs.append(r.model_copy(update={"monitor": monitor}))
    ps = point_stats(runs)
    assert [p.service_demand_ms["db"] for p in ps] == [
        pytest.approx([2.0, 2.02, 1.98]),
        pytest.approx([1.0, 1.01, 0.99]),
    ]
    (line,) = [v for v in verdicts(ps, factors={"buffers": ["8MB", "80MB"]}) if v.startswith("buffers=80MB")]
    assert (
        "CPU per request (service demand, the target's own processes (db measured apart); one comparison, at "
        "α = 0.05): equivalent" in line
    )
    assert (
        "db's own CPU per request (its cgroup's CPU over the successes, background work included; one comparison, "
        "at α = 0.05): lower in 1 of 1, median change −50.0%." in line
    )


def test_cpu_per_request_counted_over_many_load_levels_is_held_over_them():
    # At each of 7 concurrencies worker's CPU per request is 25% above
    # event's, each test alone at p ≈ 0.04: "higher in 7" from seven 5%
    # tests would claim what a simultaneous level does not show. Held to
    # 0.05/7 (Bonferroni, as statsmodels computes it) none is shown.
    from statsmodels.stats.multitest import multipletests

    from corebench.analysis.factor_effects import demand_effects, factor_rows
    from corebench.analysis.family import Family

    runs = []
    for c in range(1, 8):
        for mpm, ms in (("event", (1.0, 1.1, 0.9)), ("worker", (1.25, 1.35, 1.15))):
            rps = [1000.0, 1000.0, 1000.0]
            for r, d in zip(_runs({"mpm": mpm, "concurrency": c}, rps), ms, strict=True):
                runs.append(r.model_copy(update={"monitor": MonitorSummary(target_cpu=d)}))
    for i, r in enumerate(runs):
        r.seq = r.id = i + 1
    ps = point_stats(runs)
    factors = {"mpm": ["event", "worker"], "concurrency": list(range(1, 8))}
    ((_, pairs),) = factor_rows(ps, {"mpm": factors["mpm"]}, {"concurrency"}, Family(ps, {"concurrency"}))
    es, _ = demand_effects(pairs)
    alone = [e.in_family(1) for e in es]
    assert len(es) == 7 and all(e.p_value < 0.05 and e.verdict == "higher" for e in alone)
    assert [e.p for e in es] == pytest.approx(list(multipletests([e.p_value for e in es], method="bonferroni")[1]))
    assert all(e.verdict == "inconclusive" for e in es)
    (line,) = [v for v in verdicts(ps, factors=factors) if v.startswith("mpm=worker")]
    assert (
        "CPU per request (service demand; this line's 7 held to α = 0.05/7 (Bonferroni), a family of their own): "
        "inconclusive in 7 of 7" in line
    )


def test_runs_that_differ_in_their_limit_are_read_one_by_one():
    # Reading 3's case: one CPU, its runs' target at 98%, 95% and 64% of it.
    # The mean (86%) alone would call all three CPU-bound; the third run
    # took 10 ms a response where the CPU accounts for at most
    # 0.64 / (1 − 0.64) = 1.8 ms: it waited on something else.
    layout = RunLayout(method="affinity", target_cpus=[0], generator_cpus=[1])
    runs = [
        r.model_copy(update={"monitor": MonitorSummary(target_cpu=u, generator_cpu=0.2)})
        for r, u in zip(_runs({"cpus": 1}, [1000.0, 1000.0, 1000.0], layout=layout), (0.98, 0.95, 0.64), strict=True)
    ]
    (p,) = point_stats(runs)
    d = diagnose(p, 1.0, 2)
    assert d.kind == "mixed", d
    assert d.evidence.startswith(
        "the runs differ: CPU-bound in 2 of 3 runs (target CPU 98%, 95% of 1); waiting in 1 of 3 runs (target CPU "
        "64% of 1). Over their means: CPU-bound, target used 0.86 of the 1 CPUs it was given (86%)"
    ), d.evidence
    # Runs that agree keep their one class.
    same = [r.model_copy(update={"monitor": MonitorSummary(target_cpu=0.97, generator_cpu=0.2)}) for r in runs]
    assert diagnose(point_stats(same)[0], 1.0, 2).kind == "CPU-bound"
    # Runs at 84%, 86% and 88% differ in class by the 85% cut, not by their limit.
    near = [
        r.model_copy(update={"monitor": MonitorSummary(target_cpu=u, generator_cpu=0.2)})
        for r, u in zip(runs, (0.84, 0.86, 0.88), strict=True)
    ]
    d = diagnose(point_stats(near)[0], 1.0, 2)
    assert d.kind == "CPU-bound" and d.evidence.endswith("; its runs straddle the 85% cut (target CPU 84%, 86%, 88%)")


def test_others_on_a_machine_the_target_shares_with_the_generator_are_interference():
    # prefork-vs-worker's case: Apache unplaced on 2 cores, the generator
    # beside it. The cores were 96% busy, Apache used 0.36 of them and the
    # generator 0.31: 1.25 cores went to others, and the run is flagged.
    # Softirq is left out, so the figure is a lower bound: a run whose busy
    # time is all the target's, the generator's and the kernel's network
    # work is not flagged.
    from corebench.analysis.interference import other_cpu, share

    layout = RunLayout(method="none", target_cpus=[0, 1], generator_cpus=[0, 1], shared=True)
    others = MonitorSummary(cores=[_core(0.96), _core(0.96)], target_cpu=0.36, generator_cpu=0.31)
    (run,) = _runs({"mpm": "prefork"}, [5700.0], layout=layout, monitor=others)
    assert other_cpu(run) == pytest.approx(1.92 - 0.67) and share(run) == pytest.approx(1.25 / 2)
    # Each core 0.4 in user and system time, 0.2 in softirq: the target and
    # the generator account for 0.6 + 0.2 of the 0.8 of user and system time.
    net = CoreTimes(user=0.3, system=0.1, softirq=0.2, idle=0.4)
    quiet = MonitorSummary(cores=[net, net], target_cpu=0.6, generator_cpu=0.2)
    (calm,) = _runs({"mpm": "prefork"}, [8900.0], layout=layout, monitor=quiet)
    assert share(calm) == 0.0
    (p,) = point_stats(_runs({"mpm": "prefork"}, [5700.0, 8900.0], layout=layout, monitor=others))
    assert p.interference_runs == 2 and any("others on the target's cores (up to 62%" in w for w in p.limits())
    # The cores were full with the generator's part: interference, not the machine's CPU as such.
    d = diagnose(p, None, 2)
    assert d.kind == "interference" and "took up to 62% of its cores, which were full" in d.evidence, d
    # Neither for a target on another host nor load from agents: this machine's generator was not on its cores.
    for elsewhere in ({"target_host": "10.0.0.2"}, {"generator": "ray agents"}):
        (remote,) = _runs({"mpm": "prefork"}, [5700.0], layout=layout.model_copy(update=elsewhere), monitor=others)
        assert other_cpu(remote) is None
