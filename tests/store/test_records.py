"""The store's records: the generator's calibrated ceiling as the report
says it, and the parts older stores wrote read without loss."""

from corebench.store import Capacity, Ceiling, RunLayout, Step


def _ceiling(target, generator, shared, connections, rps, cpu, ceiling):
    return Ceiling(
        target_cpus=target,
        generator_cpus=generator,
        shared=shared,
        connections=connections,
        rps=rps,
        generator_cpu=cpu,
        ceiling_rps=ceiling,
    )


def test_the_ceiling_names_its_cpus_in_the_right_number():
    one = _ceiling([0], [1], False, 64, 61_965.0, 0.92, 67_478.0)
    assert one.sentence() == (
        "generator ceiling for HTTP/1.1, keep-alive, a closed loop: about 67,478 req/s, projected to all of its 1 "
        "core from 61,965 req/s at 0.92 of them (64 connections to the built-in server's 64-byte page; generator on "
        "CPU 1, built-in server on CPU 0); it holds for that protocol, load model and page size only"
    )
    # Measured three times on a 200 kB page: the range is said, and a run
    # is held near the ceiling from its lowest calibration.
    big = one.model_copy(
        update={"page_bytes": 204_800, "ceiling_low_rps": 9_000.0, "ceiling_high_rps": 11_000.0, "repeats": 3}
    )
    assert "about 67,478 req/s (3 calibrations ranged 9,000–11,000), projected" in big.sentence()
    assert "the built-in server's 204,800-byte page" in big.sentence()
    assert big.lowest_rps == 9_000.0 and one.lowest_rps == 67_478.0, "an old store's ceiling has no range"
    both = _ceiling([0, 1], [0, 1], True, 64, 44_877.0, 1.88, 94_987.0)
    assert "generator on CPUs 0,1, built-in server on CPUs 0,1; they share cores)" in both.sentence()
    fresh = one.model_copy(update={"keep_alive": False, "http": "2"})
    assert fresh.sentence().startswith("generator ceiling for HTTP/2, a new connection per request, a closed loop: ")
    paced = one.model_copy(update={"model": "open"})
    assert paced.sentence().startswith("generator ceiling for HTTP/1.1, keep-alive, an open loop: about 67,478")


def test_a_step_stored_as_achieved_rps_reads_as_goodput():
    step = {
        "rate_rps": 100.0,
        "duration_s": 5.0,
        "meets": True,
        "achieved_rps": 99.5,
        "sent": 500,
        "scheduled": 500,
        "late": 0,
        "p50_us": 900,
        "judged": [["p99<=20ms", "3.1 ms", True]],
        "measured": {"p99": 3100.0},
    }
    assert Step.model_validate(step).goodput_rps == 99.5
    found = Capacity.model_validate(
        {
            "objective": "p99<=20ms",
            "arrivals": "poisson",
            "precision": 0.02,
            "rate_rps": 100.0,
            "bracket": [100.0, 104.0],
            "outcome": "found",
            "steps": [step],
        }
    )
    assert "goodput_rps" in found.model_dump_json() and "achieved_rps" not in found.model_dump_json()
    assert "results" not in found.model_dump(), "each step's measurement is not stored with the search"


def test_a_layout_keeps_keys_it_does_not_declare():
    layout = RunLayout.model_validate({"method": "cgroup2", "target_cpus": [0], "numa_node": 1})
    assert layout.controlled and layout.target_cores == 1.0
    assert layout.model_dump()["numa_node"] == 1
    assert RunLayout().target_cores is None, "a target corebench did not place has no cores of its own"


def test_a_nan_or_an_infinity_reads_back_as_stored(tmp_path):
    from corebench.store import MonitorSummary, Store
    from tests.support.records import stored_run

    s = Store(tmp_path / "s.sqlite")
    try:
        monitor = MonitorSummary(samples=1, target_cpu=float("nan"), target_system_share=float("inf"))
        s.add_run(stored_run({}, monitor=monitor).model_copy(update={"id": None}))
        (back,) = s.runs(1)
    finally:
        s.close()
    assert back.monitor is not None and back.monitor.target_system_share == float("inf")
    assert back.monitor.target_cpu != back.monitor.target_cpu, "NaN"


def test_the_first_searches_failures_are_read():
    found = Capacity.model_validate(
        {"objective": "p99<=20ms", "arrivals": "poisson", "precision": 0.02, "outcome": "dead", "steps": []}
        | {"rate_rps": None, "bracket": [None, None], "probe_failures": "100 sent; connect: 100"}
    )
    assert found.failures == "100 sent; connect: 100"


def test_an_answer_resting_on_a_thin_tail_is_said_undecided():
    def step(rate, meets, few, pooled=0):
        return {
            "rate_rps": rate,
            "duration_s": 60.0,
            "meets": meets,
            "goodput_rps": rate,
            "sent": 100,
            "scheduled": 100,
            "late": 0,
            "p50_us": 900,
            "judged": [["p99.9<=20ms", "3.1 ms", meets]],
            "measured": {"p99.9": 3100.0},
            "few_samples": few,
            "pooled": pooled,
        }

    found = {"objective": "p99.9<=20ms", "arrivals": "poisson", "precision": 0.02, "outcome": "found"}
    found |= {"rate_rps": 100.0, "bracket": [100.0, 104.0]}
    thin = Capacity.model_validate(
        found | {"steps": [step(50.0, True, True), step(100.0, True, True), step(104.0, False, False)]}
    )
    assert thin.sentence().endswith(
        "Undecided at 100 req/s: a verdict there rests on fewer responses than the percentile needs (--max-step "
        "ended its steps), so it is from a thin tail; a longer --max-step decides it."
    )
    whole = Capacity.model_validate(
        found | {"steps": [step(50.0, True, True), step(100.0, True, False), step(104.0, False, False)]}
    )
    assert "Undecided" not in whole.sentence(), "a thin step away from the answer's bracket is not the answer's"
    # A thin step judged again with the next at its rate: the pooled verdict is the rate's.
    pooled = [step(100.0, False, True), step(100.0, True, False, pooled=1), step(104.0, False, False)]
    decided = Capacity.model_validate(found | {"steps": pooled})
    assert [(s.rate_rps, s.pooled) for s in decided.verdicts()] == [(100.0, 1), (104.0, 0)]
    assert "Undecided" not in decided.sentence()
    # Two pools at one rate in a row (the bracket's repeats of the rate it just measured): each counts once.
    two = [step(100.0, True, True), step(100.0, True, False, 1), step(100.0, False, True), step(100.0, False, False, 1)]
    both = Capacity.model_validate(found | {"steps": two})
    assert [s.pooled for s in both.verdicts()] == [1, 1] and [s.meets for s in both.verdicts()] == [True, False]
    # Two separate measurements of one rate (the bracket's repeats) each count.
    again = [step(100.0, True, False), step(104.0, False, False), step(100.0, True, True)]
    twice = Capacity.model_validate(found | {"steps": again})
    assert len(twice.verdicts()) == 3 and "Undecided at 100 req/s" in twice.sentence()
