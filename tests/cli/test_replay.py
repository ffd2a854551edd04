"""`corebench replay`: hostile logs, both pacings, the report, bad input."""

import json

import pytest

from corebench.targets.builtin import Served
from tests.conftest import run_cli

GOOD = [
    b'127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET /static/100 HTTP/1.0" 200 100',
    b'2001:db8::7 - frank [10/Oct/2000:13:55:37 -0700] "GET /static/2000 HTTP/1.1" 200 -',
    b'::1 - - [10/Oct/2000:13:55:37 -0700] "HEAD /static/5 HTTP/1.1" 200 5 "-" "curl \\"7\\""',
]
HOSTILE = [
    b"\x00\x9f\xff\x16\x03\x01 binary junk",
    b'127.0.0.1 - - [10/Oct/2000:13:55:38 -0700] "GET /static/1',
    b'127.0.0.1 - - [10/Oct/2000:13:55:39 -0700] "-" 408 -',
    b'127.0.0.1 - - [10/Oct/2000:13:55:39 -0700] "\\x16\\x03\\x01" 400 226',
    b'127.0.0.1 - - [10/Oct/2000:13:55:40 -0700] "GET /' + b"a" * 70_000 + b' HTTP/1.1" 200 1',
    b'127.0.0.1 - - [10/Oct/2000:13:55:40 -0700] "GET /' + b"b" * 9_000 + b' HTTP/1.1" 200 1',
    b'127.0.0.1 - - [10/Oct/2000:13:55:41 -0700] "GET /caf\xc3\xa9 HTTP/1.1" 200 1',
    b'127.0.0.1 - - [10/Oct/2000:13:55:41 -0700] "GET /latin\xe9 HTTP/1.1" 200 1',
    b'127.0.0.1 - - [10/Oct/2000:13:55:42 -0700] "GET /a b c HTTP/1.1" 200 1',
    b'127.0.0.1 - - [10/Oct/2000:13:55:42 -0700] "DELETE /static/1 HTTP/1.1" 200 1',
    b'127.0.0.1 - - [32/Foo/2000:99:55:42 -0700] "GET /static/1 HTTP/1.1" 200 1',
    b'127.0.0.1 - - [10/Oct/2000:13:55:42 -0700] "GET /static/1 HTTP/1.1" 2000 1',
    b'127.0.0.1 - - [10/Oct/2000:13:55:42 -0700] "GET /static/1 HTTP/1.1" 200 many',
    b"",
]


@pytest.fixture
def hostile_log(tmp_path):
    path = tmp_path / "hostile.log"
    lines = [HOSTILE[0], GOOD[0], *HOSTILE[1:6], GOOD[1], *HOSTILE[6:], GOOD[2]]
    path.write_bytes(b"\n".join(lines))  # no final newline: the last line still counts
    return path


@pytest.mark.parametrize("pacing", [["-c", "3"], ["--speed", "50"]])
def test_hostile_log_is_skipped_and_counted_never_sent(hostile_log, tmp_path, pacing):
    access = tmp_path / "access.log"
    with Served("--access-log", str(access), "--workers", "1") as srv:
        p = run_cli("replay", str(hostile_log), "--target", srv.url, "-k", *pacing, "--json", "-")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    src = r["replay"]
    assert src["lines"] == len(GOOD) + len(HOSTILE)
    assert src["replayed"] == len(GOOD) == r["responses"]
    assert sum(s["count"] for s in src["skipped"]) == len(HOSTILE)
    assert len({s["reason"] for s in src["skipped"]}) >= 8, src["skipped"]
    # The server saw exactly the good requests, each well formed.
    served = sorted(line.split('"')[1] for line in access.read_text().splitlines())
    assert served == sorted(["GET /static/100 HTTP/1.1", "GET /static/2000 HTTP/1.1", "HEAD /static/5 HTTP/1.1"])


def test_report_accounts_for_the_log(hostile_log):
    with Served("--workers", "1") as srv:
        p = run_cli("replay", str(hostile_log), "--target", srv.url, "--speed", "50")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    for fragment in (
        "Replayed log:",
        "Lines read:           17",
        "Replayed:             3",
        "Skipped:              14",
        "method other than GET or HEAD",
        "Open-loop schedule",
        "from intended send",
        "Slowest URLs (of 3, by mean",
        "Status differs from the log: 0 responses",
    ):
        assert fragment in out, fragment


def test_limit_and_loop(hostile_log):
    with Served("--workers", "1") as srv:
        limited = run_cli("replay", str(hostile_log), "--target", srv.url, "--limit", "2", "--json", "-")
        looped = run_cli("replay", str(hostile_log), "--target", srv.url, "--loop", "-n", "10", "--json", "-")
    r = json.loads(limited.stdout)
    assert (r["replay"]["replayed"], r["responses"], r["replay"]["stopped_at_limit"]) == (2, 2, True)
    r = json.loads(looped.stdout)
    assert (r["replay"]["replayed"], r["responses"]) == (3, 10)
    assert sorted(u["responses"] for u in r["urls"]) == [3, 3, 4]


def test_custom_log_format(tmp_path):
    log = tmp_path / "custom.log"
    log.write_text("1.2.3.4 GET /static/7 200 7 1234\n1.2.3.4 GET /static/8 404 - 99\n")
    with Served("--workers", "1") as srv:
        p = run_cli("replay", str(log), "--target", srv.url, "--log-format", "%a %m %U %>s %b %D", "--json", "-")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["replay"]["replayed"] == r["responses"] == 2
    eight = next(u for u in r["urls"] if u["target"] == "/static/8")
    assert eight["status_logged"] == {"404": 1} and eight["status_mismatches"] == 1


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["/nonexistent.log", "--target", "http://127.0.0.1:9/"], "cannot read /nonexistent.log"),
        (["{junk}", "--target", "http://127.0.0.1:9/"], "none of its 2 lines"),
        (["{good}", "--target", "http://127.0.0.1:9/", "--log-format", "%h %Z"], "%Z"),
        (
            ["{good}", "--target", "http://127.0.0.1:9/", "--log-format", "%a %m %U %>s", "--speed", "2"],
            "no request times",
        ),
        (
            ["{good}", "--target", "http://127.0.0.1:9/", "--loop"],
            "looped replay needs a request count",
        ),
        (["{good}", "--target", "http://127.0.0.1:9/", "--speed", "0"], "--speed"),
        (["{good}", "--target", "http://127.0.0.1:9/", "--limit", "0"], "--limit"),
        (["{good}", "--target", "http://192.0.2.1/"], "loopback"),
        (["{good}"], "--target"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, fragment):
    (tmp_path / "junk.log").write_bytes(b"junk\n\x00\x01\n")
    (tmp_path / "good.log").write_bytes(b"1.2.3.4 GET /x 200\n")
    args = [a.format(junk=tmp_path / "junk.log", good=tmp_path / "good.log") for a in args]
    p = run_cli("replay", *args)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], p.stderr


def test_a_log_without_newlines_is_refused_not_read_forever():
    r = run_cli("replay", "/dev/zero", "--target", "http://127.0.0.1:1/", "-n", "1")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.count("\n") == 1 and "runs past 64 MiB without a newline: not a text log" in r.stderr


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_ctrl_c_stops_the_reading_of_an_endless_log(sig):
    """/dev/urandom as a log: endless lines, none a request. Reading it is
    stopped by a signal within 2 s (slack for a busy machine), before any request."""
    import signal
    import subprocess
    import time

    from tests.conftest import CLI

    p = subprocess.Popen(
        [*CLI, "replay", "/dev/urandom", "--target", "http://127.0.0.1:1/", "-n", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    time.sleep(1.5)
    assert p.poll() is None, p.communicate()[0]
    p.send_signal(getattr(signal, sig))
    began = time.monotonic()
    try:
        p.communicate(timeout=10)
    finally:
        p.kill()
    assert time.monotonic() - began < 3.5
    assert p.returncode in (130, -signal.SIGTERM, 128 + signal.SIGTERM), p.returncode
