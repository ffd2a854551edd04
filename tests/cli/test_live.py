"""The live progress line of `corebench load` and `replay` (issue 17, item 3):
its text, how it is refreshed, and, on a real pseudo-terminal against the
built-in server, that it appears, changes at least twice a second, counts
the remaining time down, and stays off with -q or a stderr that is not a
terminal (stdout keeping only the report)."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from dataclasses import dataclass

import pytest
from rich.console import Console

from corebench.cli import live
from corebench.engine import Figures, Second
from corebench.targets.builtin import Served
from tests.conftest import ACCESS_LOG, CLI

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
TIMED = re.compile(r"(\d+\.\d)s / (\d+\.\d)s, (\d+\.\d)s left")


def figures(**kw: object) -> Figures:
    base: dict[str, object] = dict(
        finished=0, failed=0, unsuccessful=0, elapsed_s=0.0, requests=None, length_s=None, second=None
    )
    return Figures(**{**base, **kw})  # type: ignore[arg-type]


# The line's text


def test_times_and_latencies_read_well():
    assert [live.clock(s) for s in (0, 3.24, 59.94, 65, 3725)] == ["0.0s", "3.2s", "59.9s", "1m05s", "1h02m"]
    assert [live.latency(us) for us in (87, 412, 1920, 12_340, 1_234_000)] == [
        "87µs",
        "0.41ms",
        "1.92ms",
        "12.3ms",
        "1.23s",
    ]


def test_a_timed_run_shows_elapsed_and_remaining():
    f = figures(finished=120_000, elapsed_s=3.2, length_s=10.0)
    assert live.where(f) == "3.2s / 10.0s, 6.8s left"
    # Past its length, the run waits for the requests in flight.
    assert live.where(figures(elapsed_s=10.4, length_s=10.0)) == "10.4s / 10.0s, finishing requests in flight"


def test_a_counted_run_shows_requests_done_of_the_total_and_an_estimate():
    f = figures(finished=41_200, requests=100_000, elapsed_s=2.0)
    assert live.where(f) == "41,200 / 100,000 requests (41%), 2.0s, ~2.9s left"
    assert live.where(figures(finished=0, requests=10, elapsed_s=0.1)) == "0 / 10 requests (0%), 0.1s"


def test_a_timed_replay_shows_its_span_and_its_requests():
    # A timed replay: the engine's length is the log's span over the speed.
    f = figures(finished=4_407, requests=9_994, elapsed_s=3.3, length_s=7.5)
    assert live.where(f) == "3.3s / 7.5s, 4.2s left, 4,407 / 9,994 requests"
    # Unbounded by either (a looped log stopped by Ctrl-C only): what was done.
    assert live.where(figures(finished=5, elapsed_s=1.0)) == "1.0s, 5 requests"


def test_the_line_has_rate_errors_and_the_last_seconds_percentiles():
    s = Second(second=2, completed=48_000, errors=3, p50_us=412, p99_us=1_920)
    f = figures(finished=150_000, failed=3, elapsed_s=3.2, length_s=10.0, second=s)
    text = live.line(f, 48_213.4)
    assert text == ("3.2s / 10.0s, 6.8s left · 48,213 req/s · [red]3 errors[/red] · last second: p50 0.41ms p99 1.92ms")
    assert "last second: after the first" in live.line(figures(elapsed_s=0.5, length_s=10.0), 0)
    assert "0 errors ·" in live.line(figures(elapsed_s=0.5, length_s=10.0), 0)
    assert live.line(figures(elapsed_s=None), 0) == "preparing the load…"
    quiet_second = Second(second=4, completed=0, errors=0, p50_us=0, p99_us=0)
    assert live.line(figures(elapsed_s=5.5, second=quiet_second), 0).endswith("last second: no responses")
    refused = Second(second=4, completed=0, errors=13_900, p50_us=0, p99_us=0)
    assert live.line(figures(elapsed_s=5.5, second=refused), 0).endswith("last second: all 13,900 failed")
    # A 4xx or 5xx is a failure too, though not an error of the transport: said beside the errors.
    answered = figures(finished=9_000, unsuccessful=2_301, elapsed_s=1.5, length_s=10.0)
    assert " · [red]0 errors, 2,301 4xx/5xx[/red] · " in live.line(answered, 6_000)


# Refreshing, without a terminal: rich's console forced into a StringIO


def terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, force_interactive=True, width=160, highlight=False), out


def test_each_report_updates_the_line_and_the_rate_is_over_the_last_interval():
    console, out = terminal()
    line = live.LiveLine(console)
    assert line.on
    try:
        line(figures(finished=1_000, elapsed_s=0.25, length_s=2.0))
        assert "4,000 req/s" in line.text and "1.8s left" in line.text
        line(figures(finished=3_000, elapsed_s=0.5, length_s=2.0))
        assert "8,000 req/s" in line.text and "1.5s left" in line.text
        assert line.updates == 2 and line.live is not None
    finally:
        line.close()
    assert line.live is None
    shown = ANSI.sub("", out.getvalue())
    assert "1.8s left" in shown and "1.5s left" in shown


@pytest.mark.parametrize("why", ["quiet", "not a terminal"])
def test_quiet_or_no_terminal_shows_nothing(why):
    out = io.StringIO()
    if why == "quiet":
        line = live.LiveLine(Console(file=out, force_terminal=True, force_interactive=True), quiet=True)
    else:
        line = live.LiveLine(Console(file=out, force_terminal=False))
    line(figures(finished=1_000, elapsed_s=0.25, length_s=2.0))
    line.close()
    assert not line.on and line.updates == 0 and out.getvalue() == ""


def test_a_terminal_rich_is_told_to_assume_is_not_one(monkeypatch):
    """FORCE_COLOR makes rich treat a pipe as a terminal; the line still
    needs a real one."""
    monkeypatch.setenv("FORCE_COLOR", "1")
    r, w = os.pipe()
    try:
        with os.fdopen(w, "w") as pipe:
            monkeypatch.setattr("sys.stderr", pipe)
            assert not live.on_stderr().on
    finally:
        os.close(r)


# On a pseudo-terminal, against the built-in server


@dataclass
class Ran:
    rc: int
    out: str  # stdout, a pipe
    frames: list[tuple[float, str]]  # each redraw of stderr's line, with when it arrived
    raw_err: str


def run_on_pty(*args: str, stderr_tty: bool = True, timeout: float = 60) -> Ran:
    """`corebench ARGS` with stderr on a pseudo-terminal 160 columns wide
    (or a pipe), stdout on a pipe."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR")}
    env.update(TERM="xterm-256color", COLUMNS="160", LINES="40")
    if stderr_tty:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
        err_fd = slave
    else:
        master, err_fd = os.pipe()
    proc = subprocess.Popen(CLI + list(args), stdout=subprocess.PIPE, stderr=err_fd, stdin=subprocess.DEVNULL, env=env)
    os.close(err_fd)
    chunks: list[tuple[float, bytes]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.05)
        if not ready:
            if proc.poll() is not None and not select.select([master], [], [], 0.2)[0]:
                break
            continue
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the pty's other end is closed
            break
        if not data:
            break
        chunks.append((time.monotonic(), data))
    os.close(master)
    out = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))[0].decode()
    frames = []
    for at, data in chunks:
        for piece in re.split(r"[\r\n]", ANSI.sub("", data.decode(errors="replace"))):
            if " req/s " in piece:
                frames.append((at, piece.strip()))
    return Ran(proc.returncode, out, frames, b"".join(d for _, d in chunks).decode(errors="replace"))


@pytest.fixture(scope="module")
def server():
    with Served("--workers", "1") as s:
        yield s


RUN_S = 4


def test_the_line_refreshes_twice_a_second_and_counts_down(server):
    ran = run_on_pty("load", "-c", "4", "-t", f"{RUN_S}s", "-k", server.url)
    assert ran.rc == 0, ran.raw_err
    timed = [(at, TIMED.search(text)) for at, text in ran.frames]
    seen = [(at, m.groups()) for at, m in timed if m]
    assert seen, ran.raw_err
    # The figures change at least twice a second of run: distinct elapsed
    # times, arriving over the run.
    firsts: dict[str, float] = {}
    for at, (elapsed, length, _) in seen:
        assert length == f"{RUN_S}.0"
        firsts.setdefault(elapsed, at)
    assert len(firsts) >= 2 * (RUN_S - 1), sorted(firsts)
    times = sorted(firsts.values())
    assert len(times) - 1 >= 2 * (times[-1] - times[0]), times
    # The remaining time counts down, as the elapsed time counts up.
    lefts = [float(left) for _, (_, _, left) in seen]
    assert lefts == sorted(lefts, reverse=True) and lefts[0] > lefts[-1], lefts
    # Every part of the line is there.
    text = ran.frames[-1][1]
    assert re.search(r"[\d,]+ req/s · 0 errors · last second: p50 \S+ p99 \S+", text), text
    # stdout holds the report alone, no trace of the line.
    assert "Requests per second:" in ran.out and " req/s " not in ran.out and "\x1b" not in ran.out


def test_a_timed_replay_shows_the_log_span_over_the_speed(server):
    # The log spans about 3.5 days: at 100,000 times, about 3.0 s.
    ran = run_on_pty("replay", str(ACCESS_LOG), "--target", server.url, "--speed", "100000", "-c", "50", "-k")
    assert ran.rc in (0, 1), ran.raw_err
    m = [re.search(r"s / (\d+\.\d)s, .* left, [\d,]+ / ([\d,]+) requests", t) for _, t in ran.frames]
    spans = {(g.group(1), g.group(2)) for g in m if g}
    assert len(spans) == 1, ran.frames
    span_s, requests = spans.pop()
    assert 2.5 < float(span_s) < 3.5 and int(requests.replace(",", "")) > 9_000


@pytest.mark.parametrize("how", ["-q", "stderr not a terminal"])
def test_quiet_or_a_piped_stderr_turns_it_off(server, how):
    args = ["load", "-c", "2", "-t", "1.5s", "-k", server.url] + (["-q"] if how == "-q" else [])
    ran = run_on_pty(*args, stderr_tty=how == "-q")
    assert ran.rc == 0, ran.raw_err
    assert ran.frames == [] and "req/s" not in ran.raw_err and "\x1b" not in ran.raw_err, ran.raw_err
    assert "Requests per second:" in ran.out
