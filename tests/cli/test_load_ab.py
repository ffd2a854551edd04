"""`corebench load` speaks ab and wrk: their flags with their meanings, the
same bytes on the wire as ab, and one format per stdout."""

from __future__ import annotations

import base64
import csv
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

import corebench
from corebench.testing import MisbehavingServer
from tests.conftest import run_cli
from tests.support.recording_server import RecordingServer

needs_ab = pytest.mark.skipif(shutil.which("ab") is None, reason="ab (apache2-utils) is not installed")


@pytest.fixture(scope="module")
def recorder():
    with RecordingServer() as srv:
        yield srv


def ab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ab", *args], capture_output=True, text=True, timeout=60)


def one_line_error(p: subprocess.CompletedProcess, fragment: str) -> None:
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("corebench: error:") and fragment in lines[0], p.stderr
    assert p.stdout == ""


def body_files(tmp: Path) -> dict[str, bytes]:
    files = {
        "body.json": b'{"a": 1}\n',
        "empty.txt": b"",
        # CR, LF, CRLF, NUL, bytes that are not UTF-8, no final newline.
        "mixed.bin": b"line1\r\nline2\nline3\r\x00\xff\xfe tail",
        "large.bin": os.urandom(100_000),
    }
    for name, data in files.items():
        (tmp / name).write_bytes(data)
    return files


def sent(p: subprocess.CompletedProcess) -> int:
    return int(re.search(r"Total body sent:\s+(\d+)", p.stdout).group(1))  # type: ignore[union-attr]


@needs_ab
def test_body_files_are_sent_byte_for_byte_as_ab_sends_them(recorder, tmp_path):
    for name, data in body_files(tmp_path).items():
        path = str(tmp_path / name)
        recorder.clear()
        a = ab("-q", "-n", "2", "-p", path, "-T", "application/octet-stream", recorder.url)
        b = run_cli("load", "-n", "2", "-p", path, "-T", "application/octet-stream", recorder.url)
        # HTTP/1.0 as ab: then the requests' heads are as long as ab's, so ab's "Total body sent" (it
        # counts whole requests, headers too) is the same number.
        c = run_cli("load", "--http1.0", "-n", "2", "-p", path, "-T", "application/octet-stream", recorder.url)
        assert a.returncode == 0 and b.returncode == 0 and c.returncode == 0, (name, a.stderr, b.stderr, c.stderr)
        got = recorder.requests
        assert len(got) == 6, name
        for r in got:
            assert r.line.startswith("POST / HTTP/1."), (name, r.line)
            assert r.body == data and r.header("Content-Length") == str(len(data)), name
            assert r.header("Content-Type") == "application/octet-stream", name
        assert sent(c) == sent(a) == sum(r.size for r in got[:2]), name
        # HTTP/1.1 adds only "Connection: close\r\n" to each request.
        assert sent(b) == sent(a) + 2 * len("Connection: close\r\n"), name
        assert f"Request body:           {len(data)} bytes per request" in b.stdout, name


@needs_ab
def test_a_body_without_a_content_type_is_text_plain_as_in_ab(recorder, tmp_path):
    path = tmp_path / "b.txt"
    path.write_bytes(b"x=1")
    recorder.clear()
    assert ab("-q", "-n", "1", "-p", str(path), recorder.url).returncode == 0
    assert run_cli("load", "-n", "1", "-p", str(path), recorder.url).returncode == 0
    a, b = recorder.requests
    assert a.header("Content-Type") == b.header("Content-Type") == "text/plain"


def test_put_file_and_method_rules(recorder, tmp_path):
    path = tmp_path / "doc.bin"
    path.write_bytes(b"\x00put me\r\n")
    recorder.clear()
    p = run_cli("load", "-n", "3", "-u", str(path), recorder.url)
    assert p.returncode == 0, p.stderr
    assert [r.line.split()[0] for r in recorder.requests] == ["PUT"] * 3
    assert all(r.body == b"\x00put me\r\n" for r in recorder.requests)
    one_line_error(run_cli("load", "-p", str(path), "-u", str(path), recorder.url), "-p/--body-file and -u/--put-file")
    one_line_error(run_cli("load", "-i", "-u", str(path), recorder.url), "-i/--head")
    one_line_error(run_cli("load", "-u", "/nonexistent/file", recorder.url), "-u /nonexistent/file")


def test_basic_auth_and_cookies(recorder):
    recorder.clear()
    p = run_cli("load", "-n", "2", "-A", "  user:pa:ss", "-C", "a=1", "-C", "b=2; c=3", recorder.url)
    assert p.returncode == 0, p.stderr
    for r in recorder.requests:
        # ab drops the leading spaces and encodes the rest, colons and all.
        assert r.header("Authorization") == "Basic " + base64.b64encode(b"user:pa:ss").decode()
        assert r.header("Cookie") == "a=1; b=2; c=3"
    one_line_error(run_cli("load", "-A", "nopassword", recorder.url), "-A/--auth")
    one_line_error(run_cli("load", "-A", "u:p", "-H", "Authorization: x", recorder.url), "-A/--auth")
    one_line_error(run_cli("load", "-C", "novalue", recorder.url), "-C/--cookie")
    one_line_error(run_cli("load", "-C", "a=1", "-H", "Cookie: b=2", recorder.url), "-C/--cookie")


def test_control_bytes_in_a_header_or_the_content_type_are_refused_before_any_request(recorder, tmp_path):
    # CR LF would end the header and put a second request on the wire; other
    # control bytes are no field value either (RFC 9110 §5.5).
    body = tmp_path / "body.txt"
    body.write_text("x")
    recorder.clear()
    smuggled = "text/plain\r\nContent-Length: 0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x"
    one_line_error(run_cli("load", "-p", str(body), "-T", smuggled, recorder.url), "-T")
    one_line_error(run_cli("load", "-H", "X-A: a\x01b", recorder.url), "-H")
    one_line_error(run_cli("load", "-H", "X-A: a\x7fb", recorder.url), "-H")
    assert recorder.requests == [], "refused before a byte was sent"
    p = run_cli("load", "-n", "1", "-H", "X-A: tab\there, obs-text \u00e9", recorder.url)
    assert p.returncode == 0, p.stderr


def test_bytes_that_are_not_utf8_are_one_line_naming_their_flag(recorder):
    # A command line's byte 0xff reaches Python as a lone surrogate; it was a
    # traceback from the JSON encoder (issue 41, item 8).
    recorder.clear()
    one_line_error(
        run_cli("load", "-n", "1", "-H", "X-A: \udcff", recorder.url),
        "-H/--header: '\\xff' holds bytes that are not UTF-8 text",
    )
    one_line_error(run_cli("load", "-n", "1", recorder.url + "\udcff"), "holds bytes that are not UTF-8 text")
    assert recorder.requests == []


def test_a_rate_that_is_no_number_is_said_to_be_none(recorder):
    # It said "should be less than or equal to 10000000" (issue 41, item 10).
    one_line_error(run_cli("load", "--rate", "nan", "-t", "1s", recorder.url), "'nan' is not a rate")
    one_line_error(run_cli("load", "--rate", "10..inf", "--ramp", "1s", "-t", "1s", recorder.url), "is not a rate")


def test_a_proxy_on_loopback_gets_every_request_with_the_absolute_url(recorder):
    recorder.clear()
    with MisbehavingServer("ok") as target:
        p = run_cli("load", "-n", "4", "-X", recorder.address, target.url + "page?x=1")
        assert p.returncode == 0, p.stderr
        assert target.requests == 0, "the requests went to the proxy, not the target"
    assert [r.line for r in recorder.requests] == [f"GET {target.url}page?x=1 HTTP/1.1"] * 4
    assert {r.header("Host") for r in recorder.requests} == {target.url.split("/")[2]}


@pytest.mark.parametrize(
    "proxy, fragment",
    [
        ("192.0.2.1:3128", "not on a loopback address"),
        ("10.0.0.1", "not on a loopback address"),
        ("127.0.0.1:0", "port"),
        ("no-such-host.invalid:3128", "no-such-host.invalid"),
    ],
)
def test_a_proxy_off_loopback_is_refused(proxy, fragment):
    p = run_cli("load", "-X", proxy, "http://127.0.0.1:8080/")
    one_line_error(p, "-X/--proxy")
    assert fragment in p.stderr
    # Not even with --allow-remote: the load would leave this machine.
    if "loopback" in fragment:
        one_line_error(run_cli("load", "--allow-remote", "-X", proxy, "http://127.0.0.1:8080/"), "loopback")


def test_https_through_a_proxy_is_refused():
    one_line_error(run_cli("load", "-X", "127.0.0.1:3128", "https://127.0.0.1:8443/"), "CONNECT")


@needs_ab
def test_receive_errors_are_counted_and_the_run_goes_on_as_ab_r():
    with MisbehavingServer("reset") as srv:
        a = ab("-r", "-n", "10", srv.url)
        p = run_cli("load", "-r", "-n", "10", srv.url)
        plain = run_cli("load", "-n", "10", srv.url)
    # ab -r completes the run, counting the resets as receive errors (and, its quirk, as exceptions too).
    assert "Complete requests:      10" in a.stdout and "Receive: 10," in a.stdout, a.stdout
    for q in (p, plain):  # corebench never stops at a receive error, -r or not
        assert q.returncode == 1 and "no request succeeded: 10 sent; receive: 10" in q.stdout, q.stdout
        assert "Complete requests:      10" in q.stdout
        assert "(Connect: 0, Receive: 10, Length: 0, Exceptions: 0)" in q.stdout


def test_variable_lengths_fail_unless_l():
    with MisbehavingServer("varying_length") as srv:
        strict = run_cli("load", "-k", "-n", "20", srv.url, "--json", "-")
        loose = run_cli("load", "-k", "-l", "-n", "20", srv.url, "--json", "-")
    assert strict.returncode == 0 and json.loads(strict.stdout)["errors"]["length"] == 10
    assert loose.returncode == 0 and json.loads(loose.stdout)["errors"]["length"] == 0
    with MisbehavingServer("varying_length") as srv:
        text = run_cli("load", "-l", "-n", "4", srv.url).stdout
    assert "Document Length:        Variable" in text and "Failed requests:        0" in text


def test_version_flags_on_load():
    for flag in ("-V", "--version"):
        p = run_cli("load", flag)
        assert p.returncode == 0 and p.stdout.startswith(f"corebench {corebench.__version__} ("), p.stdout


def test_d_is_abs_and_a_wrk_duration_after_it_is_explained(recorder):
    p = run_cli("load", "-n", "5", "-d", recorder.url)
    assert p.returncode == 0 and "Percentage of the requests" not in p.stdout and "Connection Times" in p.stdout
    for args in (["-d", "30s", recorder.url], ["-d", "30s"]):
        one_line_error(run_cli("load", *args), "give -t 30s")
    one_line_error(run_cli("load", recorder.url, recorder.url), "an argument too many")


@needs_ab
def test_no_confidence_prints_abs_min_avg_max_table(recorder):
    a = ab("-S", "-n", "20", recorder.url)
    p = run_cli("load", "-S", "-n", "20", recorder.url)
    assert p.returncode == 0, p.stderr

    def table(out: str) -> list[str]:
        return out.split("Connection Times (ms)\n")[1].split("\n\n")[0].splitlines()

    ours, theirs = table(p.stdout), table(a.stdout)
    # The same header and labels as ab's, and its "%5d %5d%5d" columns (the times differ).
    assert ours[0] == theirs[0] == "              min   avg   max"
    assert [line[:12] for line in ours] == [line[:12] for line in theirs]
    for line in ours[1:] + theirs[1:]:
        assert re.fullmatch(r".{12}[ \d]{4}\d [ \d]{4}\d[ \d]{4}\d", line), line
    assert "[+/-sd]" not in p.stdout and "median" not in p.stdout


def test_verbosity_prints_the_heads_and_statuses(recorder):
    p = run_cli("load", "-n", "3", "-v", "3", recorder.url)
    assert p.returncode == 0, p.stderr
    out = p.stdout  # read as text: the heads' CRLFs arrive as LFs
    assert "(be patient)...INFO: GET header == \n---\nGET / HTTP/1.1\nHost: " in out
    assert "LOG: header received:\nHTTP/1.1 200 OK\nServer: recording/1\n" in out
    assert "LOG: Response code = 200 (3 responses)\n..done" in out
    quiet = run_cli("load", "-n", "3", "-v", "1", recorder.url).stdout
    assert "INFO:" not in quiet and "LOG:" not in quiet
    # Beside a format that holds stdout, the lines go to stderr.
    p = run_cli("load", "-n", "3", "-v", "2", "--json", "-", recorder.url)
    assert json.loads(p.stdout)["heads"]["request"].startswith("GET / HTTP/1.1\r\nHost: ")
    assert p.stderr.startswith("INFO: GET header == ") and "LOG: Response code" not in p.stderr
    with MisbehavingServer("status_500") as srv:
        p = run_cli("load", "-n", "4", "-v", "2", srv.url)
    assert "WARNING: Response code not 2xx (500) (4 responses)" in p.stdout


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.rows: list[list[str]] = []
        self.text = ""

    def handle_starttag(self, tag, attrs):
        if tag in ("table", "tr", "th", "td"):
            self.open.append(tag)
            self.text = ""
        if tag == "tr":
            self.rows.append([])

    def handle_endtag(self, tag):
        if tag in ("table", "tr", "th", "td"):
            assert self.open.pop() == tag, f"</{tag}> closes <{self.open}>"
        if tag in ("th", "td"):
            self.rows[-1].append(self.text.strip())
            self.text = ""

    def handle_data(self, data):
        self.text += data


def html_rows(text: str) -> list[list[str]]:
    parser = _Tags()
    parser.feed(text)
    assert parser.open == [], "every table element is closed"
    return parser.rows


@needs_ab
def test_html_output_has_abs_rows(recorder, tmp_path):
    body = tmp_path / "b.txt"
    body.write_bytes(b"abc")
    a = ab("-w", "-n", "20", "-p", str(body), recorder.url)
    p = run_cli("load", "-w", "-n", "20", "-p", str(body), recorder.url)
    assert p.returncode == 0, p.stderr
    assert "<table >" in p.stdout and "Complete requests" not in p.stdout.split("<table")[0]
    ours, theirs = html_rows(p.stdout), html_rows(a.stdout)
    # The same rows with the same labels, in the same order (values differ).
    assert [r[0] for r in ours] == [r[0] for r in theirs]
    figures = {r[0]: r[1] for r in ours if len(r) == 2}
    assert figures["Complete requests:"] == "20" and figures["Server Software:"] == "recording/1"
    connect, processing, total = ([int(x) for x in r[1:]] for r in ours[-3:])
    # ab's arithmetic: Processing is Total minus Connect, column by column.
    assert processing == [t - c for t, c in zip(total, connect, strict=True)]
    one_line_error(run_cli("load", "-w", "--json", "-", recorder.url), "-w/--html and --json -")


def test_csv_and_gnuplot_files(recorder, tmp_path):
    csv_path, tsv_path = tmp_path / "p.csv", tmp_path / "r.tsv"
    p = run_cli("load", "-n", "300", "-c", "3", "-e", str(csv_path), "-g", str(tsv_path), "--json", "-", recorder.url)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    rows = list(csv.reader(csv_path.read_text().splitlines()))
    assert rows[0] == ["Percentage served", "Time in ms"] and [int(x) for x, _ in rows[1:]] == list(range(101))
    ms = [float(t) for _, t in rows[1:]]
    assert ms == sorted(ms)
    total = r["latency_us"]["total"]
    assert ms[0] == round(total["min_us"] / 1000, 3) and ms[100] == round(total["max_us"] / 1000, 3)
    lines = tsv_path.read_text().splitlines()
    assert lines[0] == "starttime\tseconds\tctime\tdtime\tttime\twait" and len(lines) == 301
    cells = [line.split("\t") for line in lines[1:]]
    ttime = [int(c[4]) for c in cells]
    assert ttime == sorted(ttime), "ab sorts the lines by total time"
    for c in cells:
        assert re.fullmatch(r"\w{3} \w{3} \d\d \d\d:\d\d:\d\d \d{4}", c[0]), c
        assert abs(int(c[1]) - r["started_unix_s"]) <= r["duration_s"] + 1
        assert int(c[2]) + int(c[3]) in (int(c[4]), int(c[4]) + 1, int(c[4]) - 1)
    # The trace is in the JSON too, one row per response.
    assert len(r["trace"]["total_us"]) == 300 and r["trace"]["left_out"] == 0
    # Either file may hold stdout, alone.
    alone = run_cli("load", "-n", "20", "-e", "-", recorder.url)
    assert alone.returncode == 0 and alone.stdout.startswith("Percentage served,Time in ms\n0,")
    assert len(alone.stdout.splitlines()) == 102
    one_line_error(run_cli("load", "-e", "-", "-g", "-", recorder.url), "-e/--csv - and -g/--gnuplot -")


def test_wrk_latency_blocks(recorder):
    p = run_cli("load", "-n", "200", "-c", "2", "-k", "-L", recorder.url)
    assert p.returncode == 0, p.stderr
    block = p.stdout.split("  Latency Distribution\n")[1].splitlines()[:4]
    assert [line[:8] for line in block] == ["     50%", "     75%", "     90%", "     99%"]
    assert all(re.fullmatch(r" {5,}\d+%\s+[\d.]+(us|ms|s |m )", line) for line in block), block
    p = run_cli("load", "-R", "200", "-t", "1s", "-k", "--latency", recorder.url)
    assert p.returncode == 0, p.stderr
    assert "  Latency Distribution (HdrHistogram - Recorded Latency)\n 50.000%" in p.stdout
    assert "100.000%" in p.stdout and "  Detailed Percentile spectrum:\n       Value     Percentile" in p.stdout
    assert "#[Max     =" in p.stdout and "\n" + "-" * 58 + "\n" in p.stdout
    one_line_error(run_cli("load", "-L", "--json", "-", recorder.url), "-L/--latency")


def test_wrk2_rate_and_wrk_timeout_spellings(recorder):
    p = run_cli("load", "-R", "100", "-t", "1s", "-k", "--timeout", "2s", recorder.url, "--json", "-")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["model"] == "rate" and r["schedule"]["sent"] == 100
    cfg = json.loads(run_cli("load", "--timeout", "2s", "-R", "5", "-t", "1s", recorder.url, "--print-config").stdout)
    assert cfg["timeout_s"] == 2.0 and cfg["rate"]["rps"] == 5.0


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--json", "-", "--hgrm", "-"], "--json - and --hgrm -: both would write to stdout"),
        (["--hgrm", "-", "-w"], "-w/--html and --hgrm -"),
        (["--json", "-", "-S"], "-S/--no-confidence"),
        (["-e", "-", "-d"], "-d/--no-percentiles"),
        (["-v", "-1"], "-v/--verbosity"),
        (["-g", "x.tsv", "--ray", "auto"], "-g/--gnuplot"),
    ],
)
def test_one_format_per_stdout_and_other_bad_combinations(args, fragment):
    one_line_error(run_cli("load", "-n", "1", *args, "http://127.0.0.1:8080/"), fragment)


def test_replay_refuses_two_formats_on_stdout_too(tmp_path):
    log = tmp_path / "a.log"
    log.write_text('127.0.0.1 - - [10/Oct/2024:13:55:36 +0000] "GET / HTTP/1.1" 200 5\n')
    p = run_cli("replay", str(log), "--target", "http://127.0.0.1:8080", "--json", "-", "--hgrm", "-")
    one_line_error(p, "--json - and --hgrm -")


def test_a_trace_past_its_limit_says_how_many_were_left_out(recorder, tmp_path, capsys):
    from unittest import mock

    from corebench.cli import main

    measured = corebench.load(recorder.url, requests=5, trace=True)
    assert measured.trace is not None and len(measured.trace.total_us) == 5
    full = measured.model_copy(update={"trace": measured.trace.model_copy(update={"left_out": 1234})})
    tsv = tmp_path / "r.tsv"
    with mock.patch("corebench.engine.run", return_value=full):
        assert main(["load", "-n", "5", "-g", str(tsv), recorder.url]) == 0
    err = capsys.readouterr().err
    assert "-g/--gnuplot: the file holds 5 responses; 1,234 more were not kept" in err
    assert len(tsv.read_text().splitlines()) == 6
