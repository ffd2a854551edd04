"""A capacity search read against its host's CPU (`capacity --monitor`):
which of the three things the figures can say is said, from steps whose
host figures are known."""

from __future__ import annotations

from corebench.analysis.host_steps import host_lines
from corebench.store import Capacity, Step


def step(
    rate: float, meets: bool, cpu: float | None, busiest: float | None = None, error: str = "", on: str = "p99"
) -> Step:
    judged = [("p99<=20ms", "1 ms", meets or on != "p99"), ("errors<=1%", "0%", meets or on != "errors")]
    return Step(
        rate_rps=rate,
        duration_s=2.0,
        meets=meets,
        goodput_rps=rate if meets else rate * 0.9,
        sent=int(rate * 2),
        scheduled=int(rate * 2),
        late=0,
        p50_us=1000,
        judged=judged,
        measured={},
        host_cpu=cpu,
        host_cpus=None if cpu is None else 4,
        host_busiest=busiest if busiest is not None else (None if cpu is None else cpu / 4),
        host_error=error,
    )


def search(*steps: Step, lo: float = 1000.0, hi: float = 1100.0) -> Capacity:
    return Capacity(
        objective="p99<=20ms", arrivals="poisson", precision=0.05, outcome="found", steps=list(steps),
        rate_rps=lo, bracket=(lo, hi),
    )  # fmt: skip


def test_not_watched_says_nothing():
    assert host_lines(search(step(1000, True, None), step(1100, False, None)), False) == []


def test_full_cpus_where_missed_are_cpu_bound():
    lines = host_lines(search(step(1000, True, 3.0), step(1100, False, 3.8), step(1000, True, 3.1)), False)
    first, reading = lines
    # The sustained rate's figures are the mean of its steps: 3.05 CPUs, 3.05 ms per request.
    assert "at 1,000 req/s, the highest rate that met the objective, 3.05 of its 4 CPUs busy (76%" in first
    assert "3.050 ms of CPU per successful request" in first
    assert "at 1,100 req/s, the lowest that missed, 3.80 of its 4 CPUs busy (95%" in first
    assert "an upper bound of the server's" in first and "generator" not in first
    assert "CPU-bound" in reading and "95% busy" in reading


def test_one_full_cpu_is_a_single_threads_limit_not_the_hosts():
    (_, reading) = host_lines(search(step(1000, True, 1.0, 0.9), step(1100, False, 1.1, 0.99)), True)
    assert "one CPU was 99% busy while the host's were 28%" in reading and "single thread" in reading
    assert "CPU-bound" not in reading


def test_idle_cpus_where_missed_name_no_cause():
    (first, reading) = host_lines(search(step(1000, True, 0.4), step(1100, False, 0.5)), True)
    assert "that host ran this load too" in first
    # The busiest CPU at 12%: queueing for it stretches a response by 1/(1 − 0.125) = 1.14.
    assert "88% of the host's CPU was idle" in reading and "×1.14" in reading
    assert "missed for another reason" in reading and "these figures do not say" in reading


def test_half_busy_cpus_leave_queueing_for_them_open():
    (_, reading) = host_lines(search(step(1000, True, 2.0, 0.5), step(1100, False, 2.6, 0.7)), False)
    assert "35% of the host's CPU was idle" in reading and "missed before the CPU filled" in reading
    assert "Queueing for a CPU this busy" in reading and "these figures do not say" in reading


def test_a_dead_exporter_is_said():
    lines = host_lines(search(step(1000, True, None, error="refused"), step(1100, False, None, error="refused")), False)
    assert lines == ["Target host CPU: unknown: node_exporter gave no figures (refused)."]


def test_no_missed_step_with_figures_gives_the_sustained_rate_only():
    lines = host_lines(search(step(1000, True, 2.0), step(1100, False, None, error="timed out")), False)
    assert len(lines) == 1 and "the highest rate that met" in lines[0] and "lowest that missed" not in lines[0]


def test_missed_on_errors_alone_is_not_read_as_a_cpu_limit():
    (_, reading) = host_lines(search(step(1000, True, 3.0), step(1100, False, 3.9, on="errors")), False)
    assert "on errors, not on latency" in reading and "98% busy" in reading and "CPU-bound" not in reading
