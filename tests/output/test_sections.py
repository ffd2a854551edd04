"""The agents' table of a distributed run's report."""

from types import SimpleNamespace

from corebench.output.sections import agents
from corebench.result import AgentSummary, ProbeCounts


def _agent(index: int, probes: ProbeCounts | None = None, unsuccessful: int | None = None) -> AgentSummary:
    fields = dict(
        index=index,
        node=f"node-{index}",
        cores=2,
        threads=2,
        concurrency=25,
        started_unix_s=0.0,
        start_lag_s=0.0,
        duration_s=5.0,
        interrupted=False,
        io="io_uring",
        requests=1000,
        responses=1000,
        failed=0,
        throughput_rps=200.0,
        sent=0,
        late=0,
        dropped=0,
        p50_us=1000,
        p99_us=5000,
        cpu={"user_s": 0.5, "system_s": 0.5},
        cpu_utilization=0.1,
        linger_probes=(probes or ProbeCounts(probes=0, held=0)).model_dump(),
        unsuccessful=unsuccessful or 0,
    )
    return AgentSummary.model_validate(fields)


def test_each_agent_says_whether_it_held_where_probes_ran():
    probed = [_agent(0, ProbeCounts(probes=2, held=2)), _agent(1, ProbeCounts(probes=2, held=0))]
    lines = agents(SimpleNamespace(agents=probed, linger_probes=ProbeCounts(probes=4, held=2)))  # type: ignore[arg-type]
    assert "probes held" in lines[2]
    assert lines[3].endswith("2 of 2  node-0") and lines[4].endswith("0 of 2  node-1"), lines
    # Columns stay under their headings.
    assert lines[2].index("node") == lines[3].index("node-0")
    assert lines[2].index("held") + len("held") == lines[3].index("2 of 2") + len("2 of 2")


def test_without_probes_the_table_has_no_such_column():
    # A part from before agents reported their probes parses, with none.
    plain = [_agent(0), _agent(1)]
    assert plain[0].linger_probes == ProbeCounts(probes=0, held=0)
    lines = agents(SimpleNamespace(agents=plain, linger_probes=ProbeCounts(probes=0, held=0)))  # type: ignore[arg-type]
    assert "probes" not in "\n".join(lines) and lines[3].endswith("10%  node-0"), lines
    assert lines[2].index("CPU use") + len("CPU use") == lines[3].index("10%") + len("10%")
    assert lines[2].index("node") == lines[3].index("node-0")


def test_each_agent_counts_unsuccessful_statuses_as_failures_not_rate():
    # 1,000 responses in 5 s, 300 of them 503s: 140 successes a second, 300 failed.
    mixed = [_agent(0, unsuccessful=300), _agent(1)]
    lines = agents(SimpleNamespace(agents=mixed, linger_probes=ProbeCounts(probes=0, held=0)))  # type: ignore[arg-type]
    assert lines[3].split()[:5] == ["0", "25", "1000", "300", "140.00"], lines
    assert lines[4].split()[:5] == ["1", "25", "1000", "0", "200.00"], lines
    assert mixed[1].unsuccessful == 0, "a part from before they were counted parses"


def test_the_achieved_rate_says_how_much_of_it_succeeded():
    from corebench.output.sections import schedule
    from corebench.result import ScheduleSummary
    from tests.output.test_siege import _result, _summary

    lag = dict(send_lag_p50_us=0, send_lag_p99_us=0, send_lag_max_us=0, kept=True, peak_in_flight=0, mean_in_flight=0.0)
    plan = ScheduleSummary(target_rps=500.0, window_s=2.0, sent=1000, late=0, dropped=0, **lag)

    def achieved(status: dict[int, int]) -> str:
        r = _result(requests=1000, responses=1000, status=status, body=0, duration_s=2.0, total=_summary(1000))
        r = r.model_copy(update={"schedule": plan, "throughput_rps": 500.0})
        return next(line for line in schedule(r) if "Achieved rate" in line)

    assert achieved({200: 1000}).endswith("500.00 [#/sec] (responses over the run)")
    assert achieved({200: 700, 503: 300}).endswith("500.00 [#/sec] (responses over the run); 350.00 successful")
