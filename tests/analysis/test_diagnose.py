"""The diagnosis classes (`classify`, the rules on a point's figures), each on a point whose limit is known by
construction (queueing arithmetic: Little's law and the demand law)."""

from types import SimpleNamespace

from corebench.analysis.diagnose import classify, diagnose
from corebench.analysis.points import PointStats
from corebench.analysis.stats import summarize


def point(x, target_cpu, clients=None, response_s=None, generator_cpu=0.2, **kw):
    s = summarize([x, x, x])
    runs = [SimpleNamespace(result=None)] * 3  # stored runs without results: only their number counts here
    demand = [target_cpu / x * 1000] * 3
    p = PointStats({}, runs, runs, s, s, s, 0, 0.0, target_cpu, generator_cpu, False, None, False, [x] * 3, demand)
    p.clients, p.response_s = clients, response_s
    for k, v in kw.items():
        setattr(p, k, v)
    return p


def test_cpu_bound():
    d = classify(point(2000, 1.9, clients=50, response_s=0.025), cpus=2)
    assert d.kind == "CPU-bound" and "1.90 of the 2 CPUs it was given (95%)" in d.evidence


def test_load_limited_by_too_few_clients():
    # 1 ms of CPU per request, 2 CPUs: a ceiling of 2,000 req/s. Two clients
    # waiting 2 ms each carry N/R = 1,000 req/s; Little's law needs 4.
    d = classify(point(1000, 1.0, clients=2, response_s=0.002), cpus=2)
    assert d.kind == "load-limited", d
    assert "2 clients at 2.00 ms each carry at most 1,000 req/s" in d.evidence
    assert "serve about 2,000: about 4 clients would keep them busy" in d.evidence


def test_waiting_on_something_else():
    # Plenty of clients (100 at 100 ms: up to 1,000 req/s) but only 0.2 of 2 CPUs busy.
    d = classify(point(1000, 0.2, clients=100, response_s=0.1), cpus=2)
    assert d.kind == "waiting" and "I/O, locks" in d.evidence


def test_generator_limited_and_failing():
    assert classify(point(1000, 0.5, client_bound=True, client_bound_runs=3), cpus=2).kind == "generator-limited"
    held = classify(point(1000, 0.5, little=1.5, clients=10, response_s=0.015), cpus=2)
    assert held.kind == "load not held" and "The cause is not measured" in held.evidence
    assert classify(point(1000, 0.5, error_share=0.2), cpus=2).kind == "failing"


def test_without_a_cpus_factor_the_machines_cpus_are_the_limit():
    d = classify(point(2000, 1.9, clients=50, response_s=0.025), cpus=None, host_cpus=2)
    assert d.kind == "CPU-bound" and "all 2 of this machine's CPUs" in d.evidence


def test_load_not_held_with_responses_as_long_as_the_run():
    """10 clients, 500 req/s at 10 ms each: X·R/N = 0.5, and a response took
    1.9 s of a 2 s run, as connections waiting for a worker would."""
    from corebench.analysis.points import point_stats
    from tests.support.records import load_result, stored_run

    result = load_result(1000, 2.0, p50_us=10_000, p99_us=1_900_000, mean_us=10_000)
    (p,) = point_stats([stored_run({}, result, repetition=i, seq=i) for i in (1, 2)])
    d = diagnose(p, cpus=2)
    assert d.kind == "load not held" and "X·R/N = 0.50" in d.evidence, d
    assert "the longest response took 1.90 s of a 2.00 s run" in d.evidence and "fewer workers" in d.evidence
    # Where every response was short, no waiting connection is suggested.
    quick = load_result(1000, 2.0, p50_us=10_000, p99_us=30_000, mean_us=10_000)
    (q,) = point_stats([stored_run({}, quick, repetition=i, seq=i) for i in (1, 2)])
    assert diagnose(q, cpus=2).kind == "load not held" and "longest" not in diagnose(q, cpus=2).evidence


def test_a_target_at_its_cpus_limit_is_cpu_bound_whatever_its_clients_did():
    """X·R/N = 0.6 (the clients were outside requests 40% of the time),
    but the target used 95% of its one CPU: it set the rate, so the point
    is CPU-bound, the Little's law failure is said beside it, and it is no
    reason to call the figures a lower bound."""
    p = point(1000, 0.95, little=0.6, target_share=0.95, clients=10, response_s=0.01)
    d = classify(p, cpus=1)
    assert d.kind == "CPU-bound" and "Little's law fails too (X·R/N = 0.60)" in d.evidence
    assert "with the CPUs full is consistent with the CPU, not the time outside requests, setting the rate" in (
        d.evidence
    )
    assert not any("Little's law" in why for why in p.limits())
    # Not at its limit: the failure bounds the figures and names the point.
    q = point(1000, 0.5, little=0.6, target_share=0.5, clients=10, response_s=0.01)
    assert classify(q, cpus=1).kind == "load not held" and any("Little's law" in why for why in q.limits())


def test_a_generator_cpu_bound_in_one_run_of_three_is_counted_not_the_diagnosis():
    p = point(2000, 1.9, clients=50, response_s=0.025, client_bound=True, client_bound_runs=1)
    d = classify(p, cpus=2)
    assert d.kind == "CPU-bound" and "CPU-bound in 1 of 3 runs" in d.evidence, d
    assert "generator CPU-bound in 1 of 3 runs" in p.limits()


def test_a_full_machine_is_read_before_a_rule_that_infers_a_limit_elsewhere():
    """Every core 97% busy, the generator CPU-bound in 3 of 3 runs and
    Little's law failing: the machine's CPU was the limit, said as
    measured, with the generator at its limit beside it."""
    p = point(1000, 0.9, little=0.6, clients=10, response_s=0.01, machine_busy=0.97)
    p.client_bound, p.client_bound_runs = True, 3
    d = classify(p, cpus=2)
    assert d.kind == "machine CPU-bound" and "every core of the machine was busy (97%" in d.evidence, d
    assert "CPU-bound in 3 of 3 runs, so it may have set the figure as well" in d.evidence
    assert "Little's law fails too (X·R/N = 0.60)" in d.evidence and "(not measured)" in d.evidence
