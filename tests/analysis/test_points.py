"""A replay's unsuccessful responses that repeat what its log recorded for
the same request are the site's behaviour, not failures of the run; ones
the log did not record are failures; outside a replay every 4xx/5xx is."""

from corebench.analysis.points import as_logged, failed_requests


def _result(urls, replay=True):
    counts: dict[str, int] = {}
    for u in urls:
        for code, n in u["status_seen"].items():
            counts[code] = counts.get(code, 0) + n
    return {"failed": 2, "status_counts": counts, "urls": urls, "replay": {"lines": 10} if replay else None}


URLS = [
    {"status_seen": {"200": 90}, "status_logged": {"200": 9, "304": 1}},
    {"status_seen": {"404": 3}, "status_logged": {"404": 1}},  # the log's own 404, looped over
    {"status_seen": {"404": 4}, "status_logged": {"200": 2}},  # a page the site lost
    {"status_seen": {"500": 1, "200": 1}, "status_logged": {"200": 2}},
]


def test_the_logs_own_statuses_are_not_failures():
    r = _result(URLS)
    assert as_logged(r) == 3
    assert failed_requests(r) == 2 + (3 + 4 + 1) - 3


def test_a_status_the_log_had_once_excuses_only_its_share():
    # Logged 200 nine times and 500 once; the server answers 500 every time.
    r = _result([{"status_seen": {"500": 20}, "status_logged": {"200": 9, "500": 1}}])
    assert as_logged(r) == 2 and failed_requests(r) == 2 + 20 - 2


def test_outside_a_replay_every_unsuccessful_status_is_a_failure():
    r = _result(URLS, replay=False)
    assert as_logged(r) == 0 and failed_requests(r) == 2 + 8
