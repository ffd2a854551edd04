"""A result's successes and failures as properties of the record: a
replay's unsuccessful responses that repeat what its log recorded for the
same request are the site's behaviour, not failures of the run; ones the
log did not record are failures; outside a replay every 4xx/5xx is; and
failures are never throughput (goodput_rps counts 2xx and 3xx only)."""

import pytest

from corebench.result import AgentSummary
from tests.support.records import load_result

REPLAY = {
    "path": "access.log",
    "log_format": "combined",
    "lines": 10,
    "replayed": 10,
    "skipped": [],
    "skipped_examples": [],
    "stopped_at_limit": False,
    "out_of_order": 0,
    "span_s": 1.0,
}


def _url(seen, logged):
    n = sum(seen.values())
    return {
        "method": "GET",
        "target": "/",
        "responses": n,
        "errors": 0,
        "mean_us": 1.0,
        "p50_us": 1,
        "p90_us": 1,
        "p99_us": 1,
        "max_us": 1,
        "status_seen": seen,
        "status_logged": logged,
        "status_mismatches": 0,
    }


def _result(urls, replay=True):
    counts: dict[int, int] = {}
    for u in urls:
        for code, n in u["status_seen"].items():
            counts[code] = counts.get(code, 0) + n
    return load_result(status_counts=counts, failed=2, urls=urls, replay=REPLAY if replay else None)


URLS = [
    _url({200: 90}, {200: 9, 304: 1}),
    _url({404: 3}, {404: 1}),  # the log's own 404, looped over
    _url({404: 4}, {200: 2}),  # a page the site lost
    _url({500: 1, 200: 1}, {200: 2}),
]


def test_the_logs_own_statuses_are_not_failures():
    r = _result(URLS)
    assert r.as_logged == 3
    assert r.failed_requests == 2 + (3 + 4 + 1) - 3
    assert r.unsuccessful == 3 + 4 + 1


def test_a_status_the_log_had_once_excuses_only_its_share():
    # Logged 200 nine times and 500 once; the server answers 500 every time.
    r = _result([_url({500: 20}, {200: 9, 500: 1})])
    assert r.as_logged == 2 and r.failed_requests == 2 + 20 - 2


def test_outside_a_replay_every_unsuccessful_status_is_a_failure():
    r = _result(URLS, replay=False)
    assert r.as_logged == 0 and r.failed_requests == 2 + 8


def test_goodput_counts_successes_only():
    r = load_result(status_counts={200: 300, 302: 100, 503: 600}, duration_s=2.0)
    assert r.goodput_rps == 200.0 and r.throughput_rps == 500.0
    assert load_result(ok=10, duration_s=0.0).goodput_rps == 0.0


def test_an_agents_goodput_leaves_its_unsuccessful_responses_out():
    agent = AgentSummary.model_validate(
        {
            "index": 0,
            "node": "n",
            "cores": 1,
            "threads": 1,
            "concurrency": 1,
            "started_unix_s": 0.0,
            "start_lag_s": 0.0,
            "duration_s": 2.0,
            "interrupted": False,
            "requests": 100,
            "responses": 100,
            "failed": 0,
            "throughput_rps": 50.0,
            "sent": 100,
            "late": 0,
            "dropped": 0,
            "p50_us": 1,
            "p99_us": 1,
            "cpu": {"user_s": 0.0, "system_s": 0.0},
            "cpu_utilization": 0.0,
            "unsuccessful": 40,
            "io": "epoll",
            "linger_probes": {"probes": 0, "held": 0},
        }
    )
    assert agent.goodput_rps == pytest.approx(30.0) and agent.failures == 40


def test_the_reports_legend_says_how_many_statuses_the_log_excused():
    from corebench.report.data import ReportData
    from tests.support.records import experiment, stored_run

    def data(replay: bool) -> ReportData:
        return ReportData(experiment(), [stored_run({}, _result(URLS, replay=replay))], [], {}, [])

    assert "3 of the 8 4xx and 5xx responses here were so" in data(True).as_logged_note()
    assert data(False).as_logged_note() == ""
