"""Feedback while an experiment runs: the plan's expected length before the
first run, a line per finished run, and, on a terminal, a live line with
the current run, requests per second, runs done and left, and the time
remaining.

The time remaining is each remaining run's expected length (its duration,
a warm-up's length, a timed replay's log span over its speed) scaled by
how much longer than expected the runs so far took (target starts,
draining, calibration); runs of unknown length (a request count, a capacity
search) count as the mean wall time of the runs done."""

from __future__ import annotations

import re
import sys
import time
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.status import Status

from corebench.plan import ExperimentPlan
from corebench.runner.schedule import Run

# Before any run has ended, each run is taken to cost this much beyond its
# length (a target start, the monitor's last sample).
OVERHEAD_S = 0.5
_CLF_TIME = re.compile(r"\[(\d{2}/\w{3}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4})\]")


def log_span_s(path: Path) -> float | None:
    """First to last timestamp of a Common/Combined log, read from its
    first and last lines; None when they hold none."""
    try:
        with open(path, "rb") as f:
            first = f.readline().decode(errors="replace")
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 8192))
            last = f.read().decode(errors="replace").strip().splitlines()[-1:]
    except OSError:
        return None
    stamps = [m.group(1) for line in [first, *last] if (m := _CLF_TIME.search(line))]
    if len(stamps) < 2:
        return None
    a, b = (datetime.strptime(s, "%d/%b/%Y:%H:%M:%S %z") for s in (stamps[0], stamps[-1]))
    return max(0.0, (b - a).total_seconds())


def _clock(s: float) -> str:
    s = max(0, round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


class Progress:
    def __init__(self, todo: list[Run], exp: ExperimentPlan, quiet: bool = False) -> None:
        self.console = Console(stderr=True, highlight=False)
        self.live = self.console.is_terminal and not quiet
        self.exp = exp
        self.expected: list[float | None] = [self.expected_s(r) for r in todo]
        self.done, self.started = 0, time.monotonic()
        self.status: Status | None = None
        self._label, self._last = "", (0.0, 0)

    def expected_s(self, run: Run) -> float | None:
        """How long a run's load lasts, as far as the plan says."""
        exp = self.exp
        e = exp.plan.experiment
        if run.warmup and e.warmup.length_s is not None:
            return e.warmup.length_s
        if exp.plan.search is not None and not run.warmup:
            return None
        load = run.point.load
        if load.model == "replay" and load.log is not None and load.speed and not load.loop:
            span = log_span_s(exp.path.parent / load.log)
            if span is not None:
                return min(span / load.speed, e.duration_s) if e.duration_s else span / load.speed
        return e.duration_s

    @property
    def total(self) -> int:
        return len(self.expected)

    def add(self, todo: list[Run]) -> None:
        """An adaptive experiment's next round."""
        self.expected += [self.expected_s(r) for r in todo]
        self.console.print(f"corebench: intervals still too wide: round {todo[0].round} added ({len(todo)} runs)")

    def eta_s(self) -> float | None:
        elapsed = time.monotonic() - self.started
        done, left = self.expected[: self.done], self.expected[self.done :]
        known_done = sum(x for x in done if x is not None)
        if self.done:
            per_unknown = elapsed / self.done
            scale = elapsed / known_done if known_done and all(x is not None for x in done) else None
        else:
            per_unknown, scale = None, None
        total = 0.0
        for x in left:
            if x is None:
                if per_unknown is None:
                    return None
                total += per_unknown
            else:
                total += x * scale if scale else x + OVERHEAD_S
        return total

    def plan_line(self, rounds_max: int | None = None) -> str:
        """What the experiment will take, said before its first run."""
        eta = self.eta_s()
        length = f", about {_clock(eta)}" if eta is not None else ""
        more = ""
        if rounds_max is not None:
            more = f"; more rounds, up to {rounds_max} in all, while any point's interval is wider than asked"
        return f"corebench: {self.total} runs to make{length}{more}"

    def _eta(self) -> str:
        eta = self.eta_s()
        return "?" if eta is None else _clock(eta)

    def begin(self, label: str) -> None:
        # Counted within this invocation: a resumed experiment shows what is left.
        self._label, self._last = f"[{self.done + 1}/{self.total}] {label}", (time.monotonic(), 0)
        if self.live:
            if self.status is None:
                self.status = self.console.status(self._label)
                self.status.start()
            self.status.update(f"{self._label}: ~{self._eta()} remaining")

    def tick(self, finished: int) -> None:
        if not self.live or self.status is None:
            return
        now = time.monotonic()
        t, n = self._last
        rps = (finished - n) / max(now - t, 1e-6)
        self._last = (now, finished)
        left = self.total - self.done
        self.status.update(f"{self._label}: {rps:,.0f} req/s, {self.done} done, {left} left, ~{self._eta()} remaining")

    def end(self, line: str) -> None:
        self.done += 1
        self.console.print(f"{self._label}: {line}", soft_wrap=True, markup=False)

    def close(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None

    @staticmethod
    def note(text: str) -> None:
        print(f"corebench: {text}", file=sys.stderr)
