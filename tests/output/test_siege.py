"""siege's summary, byte for byte, from hand-made results."""

from corebench.config.settings import LoadConfig
from corebench.output.siege import SiegeText
from corebench.result import LoadResult
from tests.support.records import load_result

CONFIG = LoadConfig(url="http://127.0.0.1:8080/")


def _summary(count: int, min_us: int = 0, max_us: int = 0, mean_us: float = 0.0) -> dict:
    return {
        "count": count,
        "min_us": min_us,
        "max_us": max_us,
        "mean_us": mean_us,
        "stdev_us": 0.0,
        "median_us": min_us,
        "percentiles": [],
        "spectrum": [],
        "histogram": "",
        "hdr_buckets": 0,
        "hdr_sub_buckets": 0,
    }


def _result(
    *, requests: int, responses: int, status: dict, body: int, duration_s: float, total: dict, length_errors: int = 0
) -> LoadResult:
    errors = {"connect": requests - responses, "receive": 0, "length": length_errors, "exceptions": 0, "timeout": 0}
    failed = sum(errors.values())
    return load_result(
        duration_s=duration_s,
        status_counts=status,
        failed=failed,
        requests=requests,
        responses=responses,
        non_2xx=sum(n for c, n in status.items() if not 200 <= c < 300),
        concurrency=25,
        threads=2,
        keep_alive=False,
        keep_alive_requests=0,
        connections_opened=requests,
        errors=errors,
        bytes={"header": 0, "body": body, "received": body, "sent": 0},
        throughput_rps=0.0,
        latency_us={k: total for k in ("connect", "waiting", "processing", "total")} | {"uncorrected": None},
    )


def test_known_run_matches_siege_layout():
    # 618660 B = 0.59 MB; mean 50.1 ms * 1000 / 2.03 s = 24.68 busy users.
    r = _result(
        requests=1000,
        responses=1000,
        status={200: 1000},
        body=618660,
        duration_s=2.03,
        total=_summary(1000, 1000, 110000, 50100.0),
    )
    assert SiegeText().render(r, CONFIG) == (
        "Transactions:\t\t        1000 hits\n"
        "Availability:\t\t      100.00 %\n"
        "Elapsed time:\t\t        2.03 secs\n"
        "Data transferred:\t        0.59 MB\n"
        "Response time:\t\t        0.05 secs\n"
        "Transaction rate:\t      492.61 trans/sec\n"
        "Throughput:\t\t        0.29 MB/sec\n"
        "Concurrency:\t\t       24.68\n"
        "Successful transactions:        1000\n"
        "Failed transactions:\t           0\n"
        "Longest transaction:\t        0.11\n"
        "Shortest transaction:\t        0.00\n"
    )


def test_http_errors_and_socket_failures():
    # 300 responses (3 of them 404, 1 a 503) and 100 requests with none.
    r = _result(
        requests=400,
        responses=300,
        status={200: 290, 302: 6, 404: 3, 503: 1},
        body=0,
        duration_s=10.0,
        total=_summary(300, 2000, 900000, 20000.0),
    )
    lines = SiegeText().render(r, CONFIG).splitlines()
    assert lines[0] == "Transactions:\t\t         300 hits"
    assert lines[1] == "Availability:\t\t       75.00 %"
    assert lines[8] == "Successful transactions:         296"
    assert lines[9] == "Failed transactions:\t         104"


def test_length_rule_is_no_siege_failure():
    # ab's Length errors are counted in `failed` but the responses arrived.
    r = _result(
        requests=10,
        responses=10,
        status={200: 10},
        body=100,
        duration_s=1.0,
        total=_summary(10, 1000, 1000, 1000.0),
        length_errors=4,
    )
    lines = SiegeText().render(r, CONFIG).splitlines()
    assert lines[1] == "Availability:\t\t      100.00 %"
    assert lines[9] == "Failed transactions:\t           0"


def test_zero_transactions_and_zero_elapsed():
    for requests in (0, 5):
        r = _result(requests=requests, responses=0, status={}, body=0, duration_s=0.0, total=_summary(0))
        out = SiegeText().render(r, CONFIG)
        assert "Availability:\t\t        0.00 %\n" in out
        assert "Transaction rate:\t        0.00 trans/sec\n" in out
        assert "Concurrency:\t\t        0.00\n" in out
        assert f"Failed transactions:\t{requests:12d}\n" in out
        assert out.endswith("Longest transaction:\t        0.00\nShortest transaction:\t        0.00\n")


def test_zero_elapsed_with_transactions():
    r = _result(requests=3, responses=3, status={200: 3}, body=3, duration_s=0.0, total=_summary(3, 10, 30, 20.0))
    out = SiegeText().render(r, CONFIG)
    assert "Throughput:\t\t        0.00 MB/sec\n" in out
    assert "Availability:\t\t      100.00 %\n" in out


def test_name():
    assert SiegeText.name == "siege"
