"""The HTML report's table of load agents: one row per agent of each run,
with what each agent's probes found where they ran."""

from corebench.report.html import Html
from tests.report.test_anova_report import report
from tests.support.records import load_result, stored_run


def _agent(index: int, probes: dict[str, int] | None) -> dict:
    a = {
        "index": index,
        "node": f"10.0.0.{index}",
        "cores": 1,
        "threads": 1,
        "concurrency": 50,
        "started_unix_s": 0.0,
        "start_lag_s": 0.002,
        "duration_s": 5.0,
        "interrupted": False,
        "requests": 1000,
        "responses": 1000,
        "failed": 0,
        "throughput_rps": 200.0,
        "sent": 1000,
        "late": 0,
        "dropped": 0,
        "p50_us": 1000,
        "p99_us": 1500,
        "cpu": {"user_s": 0.0, "system_s": 0.0},
        "cpu_utilization": 0.4,
        "io": "epoll",
        "unsuccessful": 0,
        "linger_probes": {"probes": 0, "held": 0},
    }
    return a if probes is None else {**a, "linger_probes": probes}


def _table(agents: list[dict]) -> str:
    d = report(wild_share=0.0)
    d.runs = [stored_run({"cpus": 1}, load_result(duration_s=5.0, agents=agents))]
    html = Html().render(d)
    return html.split('<table id="agents">')[1].split("</table>")[0]


def test_each_agent_says_what_its_probes_found():
    table = _table([_agent(0, {"probes": 2, "held": 2}), _agent(1, {"probes": 2, "held": 0})])
    assert "<th>probes held</th>" in table
    rows = table.split("<tr>")[2:]
    assert [r.count("<td") for r in rows] == [12, 12]
    assert "<td>2 of 2</td>" in rows[0] and "<td>0 of 2</td>" in rows[1]


def test_no_column_where_no_probe_ran():
    # Runs too short or with too few connections to probe (and results
    # stored before agents kept their probes): nothing to say, no column.
    table = _table([_agent(0, None), _agent(1, {"probes": 0, "held": 0})])
    assert "probes held" not in table
    assert table.count("<tr>") == 3
    assert [r.count("<td") for r in table.split("<tr>")[2:]] == [11, 11]


def test_each_agent_counts_unsuccessful_statuses_as_failures_not_rate():
    # 1,000 responses in 5 s (200 a second, as every response counts), 300 of them 503s.
    mixed = {**_agent(0, None), "unsuccessful": 300}
    table = _table([mixed, _agent(1, None)])
    rows = table.split("<tr>")[2:]
    assert "<td>1000</td><td>300</td><td>140</td>" in rows[0], rows[0]
    assert "<td>1000</td><td>0</td><td>200</td>" in rows[1], rows[1]
