"""ab's layout, line by line, and its SANE() warnings."""

from corebench.output.text import _ROW, _round_ms, _sane


def test_rounding_is_abs():
    assert [_round_ms(x) for x in (0, 499, 500, 1499, 1500)] == [0, 0, 1, 1, 2]


def test_row_format_matches_ab():
    # ab 2.3: "Connect:        0    0   0.0      0       0"
    assert "Connect:    " + _ROW.format(0, 0, 0.0, 0, 0) == "Connect:        0    0   0.0      0       0"


def test_sane_warnings():
    assert _sane("the total time", 10, 10, 1.0) == []
    assert _sane("the total time", 12, 10, 1.5)[0].startswith("WARNING: The median and mean for the total time")
    assert _sane("the total time", 20, 10, 1.0)[0].startswith("ERROR: The median and mean")


def _run(values=(800, 1200, 1900, 2600, 40_000), **over):
    from types import SimpleNamespace

    from tests.output.hdr import summary

    s = summary(list(values))
    lat = SimpleNamespace(connect=s, processing=s, waiting=s, total=s, uncorrected=None)
    fields = dict(
        latency_us=lat,
        model="closed",
        host="127.0.0.1",
        port=80,
        path="/",
        server_software="t/1",
        document_length=5,
        concurrency=1,
        duration_s=1.0,
        requests=5,
        responses=5,
        failed=0,
        errors=SimpleNamespace(connect=0, receive=0, length=0, exceptions=0, timeout=0),
        non_2xx=0,
        keep_alive=False,
        bytes=SimpleNamespace(received=100, sent=700, body=25),
        heads=None,
        status_counts={200: 5},
        successes=5,
        streams=1,
        http2=None,
    )
    return SimpleNamespace(**{**fields, **over})


def _config(**over):
    from corebench.config.settings import LoadConfig

    return LoadConfig(url="http://127.0.0.1/", **over)


def test_no_confidence_and_no_percentiles():
    from corebench.output.options import ReportOptions
    from corebench.output.text import _ab_block

    full = "\n".join(_ab_block(_run(), _config(), ReportOptions()))
    assert "mean[+/-sd] median" in full and "Percentage of the requests" in full
    plain = "\n".join(_ab_block(_run(), _config(), ReportOptions(confidence=False, percentiles=False)))
    # ab -S: "%5 %5%5" (no space before max), no SANE() warnings; -d: no percentage table.
    assert "              min   avg   max\nConnect:        1     9   40\nProcessing:     1     9   40\n" in plain
    assert "Percentage" not in plain
    # Mean 2 ms, median 1 ms, sd 0.74 ms: ab's SANE() warns, unless -S.
    skewed = [1000] * 5 + [2400] * 5
    assert "WARNING: The median and mean for the total time" in "\n".join(
        _ab_block(_run(skewed), _config(), ReportOptions())
    )
    assert "WARNING" not in "\n".join(_ab_block(_run(skewed), _config(), ReportOptions(confidence=False)))


def test_an_empty_body_file_is_still_a_body_sent():
    from corebench.output.options import ReportOptions
    from corebench.output.text import _ab_block

    # ab -p on an empty file: a POST with Content-Length: 0 and a Content-Type; "Total body sent" shown.
    with_file = "\n".join(_ab_block(_run(), _config(method="POST", content_type="text/plain"), ReportOptions()))
    assert "Total body sent:        700" in with_file and "kb/s sent" in with_file
    assert "Total body sent" not in "\n".join(_ab_block(_run(), _config(), ReportOptions()))


def test_failures_are_not_the_successful_rate():
    from corebench.output.options import ReportOptions
    from corebench.output.text import _ab_block

    # ab's rate counts every request that ended; throughput counts successes only.
    mixed = _run(non_2xx=2, status_counts={200: 3, 503: 2}, successes=3)
    block = "\n".join(_ab_block(mixed, _config(), ReportOptions()))
    assert "Requests per second:    5.00 [#/sec] (mean)\n" in block
    assert "\nSuccessful per second:  3.00 [#/sec] (mean; failures are not throughput)\n" in block
    assert "Successful per second" not in "\n".join(_ab_block(_run(), _config(), ReportOptions()))


def test_users_say_their_think_time():
    from types import SimpleNamespace

    from corebench.output.text import _concurrency_line

    users = SimpleNamespace(model="users", concurrency=25, think_s=(0.0, 2.0))
    assert _concurrency_line(users) == "Users:                  25 (think time 0–2 s after each response, uniform)"
    bench = SimpleNamespace(model="users", concurrency=3, think_s=(0.0, 0.0))
    assert _concurrency_line(bench) == "Users:                  3 (no think time)"


def test_the_generator_line_says_what_the_probes_found():
    from types import SimpleNamespace

    from corebench.output.text import _holding

    def line(linger: str, percent: int, probes: int = 0, held: int = 0, waits: int | None = 5, spin: int = 0) -> str:
        r = SimpleNamespace(
            linger=linger,
            linger_percent=percent,
            linger_probes=SimpleNamespace(probes=probes, held=held),
            held_waits=waits,
            responses=100,
            busy_poll_us=spin,
        )
        return _holding(r)

    assert line("off", 0) == ""
    assert line("always", 10) == ", holding responses up to 10% of their time"
    # Results stored before the waits were counted say what was set.
    assert line("always", 10, waits=None) == ", holding responses up to 10% of their time"
    # Set to hold, but no wait had enough requests in flight to.
    none = ", holding no responses: a wait holds only with 8 or more requests in flight on its thread"
    assert line("always", 10, waits=0) == none + ", none on a connection it is opening"
    assert (
        line("always", 10, waits=0, spin=20)
        == none + ", none on a connection it is opening, and not while it busy-polls"
    )
    held = ", holding responses up to 10% of their time: 3 of 4 probes showed it cost the server no load"
    assert line("auto", 10, probes=4, held=3) == held
    assert (
        line("auto", 10, probes=2)
        == ", holding responses only to probe: 0 of 2 probes showed it cost the server no load"
    )
    # No probe decided (a short run): nothing held but a probe's phases, nothing said.
    assert line("auto", 10) == ""
