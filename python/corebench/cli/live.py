"""The live progress line of `corebench load` and `corebench replay`: on a
terminal, while the load runs, one line on stderr (stdout keeps the report
or the format sent to it) refreshed about four times a second:

    ⠼ 3.2s / 10s, 6.8s left · 48,213 req/s · 0 errors · last second: p50 0.41ms p99 1.92ms

the elapsed and remaining time of a run that has a length (-t; a timed
replay's log span over its speed), or the requests done of those it is to
make (-n; a replay of the whole log), with an estimate of the time left;
the requests per second since the previous refresh; the failed requests so
far, and the responses with a status other than 2xx or 3xx (`· 0 errors,
2,301 4xx/5xx ·`, failures too, though not errors of the transport); and
the latency percentiles of the last whole second. ab's -q, or a stderr
that is not a terminal, turns it off. It is cleared when the load
ends, before the report."""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from corebench import engine
from corebench.engine import Figures
from corebench.result import LoadResult

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live
    from rich.spinner import Spinner

# rich is imported only where the line is drawn: without a terminal (a
# script, a benchmark) its import would be 20 ms of every run's start.

# How often rich redraws the line's spinner; the line is also redrawn at
# each of the engine's reports, about four times a second.
REDRAW_PER_S = 8


def clock(s: float) -> str:
    """A time of the line: tenths of a second under a minute, then m/s, h/m."""
    if s < 60:
        return f"{s:.1f}s"
    whole = math.floor(s)
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def latency(us: int) -> str:
    """A latency in ms, to about three digits (µs below 0.1 ms)."""
    if us < 100:
        return f"{us}µs"
    ms = us / 1000
    if ms < 10:
        return f"{ms:.2f}ms"
    if ms < 1000:
        return f"{ms:.1f}ms"
    return f"{ms / 1000:.2f}s"


def where(f: Figures) -> str:
    """How far the run is: elapsed / length and the time left, or requests
    done / to make (with the time left at the mean rate so far)."""
    elapsed = f.elapsed_s or 0.0
    if f.length_s is not None:
        left = f.length_s - elapsed
        part = f"{clock(elapsed)} / {clock(f.length_s)}, "
        part += f"{clock(left)} left" if left > 0 else "finishing requests in flight"
        if f.requests is not None:
            part += f", {f.finished:,} / {f.requests:,} requests"
        return part
    if f.requests is not None:
        pct = min(100, math.floor(100 * f.finished / f.requests)) if f.requests else 100
        part = f"{f.finished:,} / {f.requests:,} requests ({pct}%), {clock(elapsed)}"
        if 0 < f.finished < f.requests and elapsed > 0:
            part += f", ~{clock((f.requests - f.finished) * elapsed / f.finished)} left"
        return part
    return f"{clock(elapsed)}, {f.finished:,} requests"


def line(f: Figures, rps: float) -> str:
    """The live line's text (rich markup: errors in red once there are any)."""
    if f.elapsed_s is None:
        return "preparing the load…"
    errors = f"{f.failed:,} error{'s' if f.failed != 1 else ''}"
    if f.unsuccessful:
        errors += f", {f.unsuccessful:,} 4xx/5xx"
    if f.failed or f.unsuccessful:
        errors = f"[red]{errors}[/red]"
    s = f.second
    if s is None:
        last = "last second: after the first"
    elif s.completed == 0:
        last = f"last second: all {s.errors:,} failed" if s.errors else "last second: no responses"
    else:
        last = f"last second: p50 {latency(s.p50_us)} p99 {latency(s.p99_us)}"
    from rich.markup import escape

    return f"{escape(where(f))} · {rps:,.0f} req/s · {errors} · {last}"


class LiveLine:
    """The line on `console`, when it is an interactive terminal and not
    `quiet`; otherwise nothing. Called with each `Figures` the engine reports."""

    def __init__(self, console: Console | None, *, quiet: bool = False) -> None:
        self.console = console
        self.on = console is not None and console.is_interactive and not quiet
        self.live: Live | None = None
        self.spinner: Spinner | None = None
        self.text = ""
        self.updates = 0
        # The previous report: (elapsed_s, finished), for the current rate.
        self._prev: tuple[float, int] | None = None

    def rate(self, f: Figures) -> float:
        """Requests per second since the previous report (since the start at
        the first)."""
        now = f.elapsed_s or 0.0
        t, n = self._prev if self._prev is not None else (0.0, 0)
        self._prev = (now, f.finished)
        return (f.finished - n) / (now - t) if now > t else 0.0

    def __call__(self, f: Figures) -> None:
        if not self.on:
            return
        self.text = line(f, self.rate(f) if f.elapsed_s is not None else 0.0)
        self.updates += 1
        if self.spinner is None:
            from rich.spinner import Spinner

            self.spinner = Spinner("dots")
        self.spinner.update(text=self.text)
        if self.live is None:
            from rich.live import Live

            self.live = Live(self.spinner, console=self.console, refresh_per_second=REDRAW_PER_S, transient=True)
            self.live.start()
        self.live.refresh()

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None


def on_stderr(quiet: bool = False) -> LiveLine:
    """The line on stderr, on when stderr is a terminal (a real one: not
    one rich is told to assume by FORCE_COLOR or TTY_COMPATIBLE) and not
    `quiet`."""
    try:
        tty = sys.stderr.isatty()
    except (AttributeError, ValueError):
        tty = False
    if quiet or not tty:
        return LiveLine(None)
    from rich.console import Console

    return LiveLine(Console(stderr=True, highlight=False))


@contextmanager
def shown(quiet: bool = False) -> Iterator[LiveLine]:
    live = on_stderr(quiet)
    try:
        yield live
    finally:
        live.close()


def run(config: Any, quiet: bool = False) -> LoadResult:
    """Runs the load in this process with the live line (when it is on);
    the line is gone when this returns, and Ctrl-C still returns what was
    measured (the result says `interrupted`)."""
    with shown(quiet) as live:
        return engine.run(config, live=live if live.on else None)
