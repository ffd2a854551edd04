"""Feedback while an experiment runs: a line per finished run, and, on a
terminal, a live line with the current point, requests per second, runs
done and left, and the time remaining."""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.status import Status


class Progress:
    def __init__(self, total: int, quiet: bool = False) -> None:
        self.console = Console(stderr=True, highlight=False)
        self.live = self.console.is_terminal and not quiet
        self.total, self.done, self.started = total, 0, time.monotonic()
        self.status: Status | None = None
        self._label, self._last = "", (0.0, 0)

    def eta(self) -> str:
        if not self.done:
            return "?"
        left = (time.monotonic() - self.started) / self.done * (self.total - self.done)
        return f"{int(left // 60)}m{int(left % 60):02d}s"

    def begin(self, label: str) -> None:
        # Counted within this invocation: a resumed experiment shows what is left.
        self._label, self._last = f"[{self.done + 1}/{self.total}] {label}", (time.monotonic(), 0)
        if self.live:
            if self.status is None:
                self.status = self.console.status(self._label)
                self.status.start()
            self.status.update(self._label)

    def tick(self, finished: int) -> None:
        if not self.live or self.status is None:
            return
        now = time.monotonic()
        t, n = self._last
        rps = (finished - n) / max(now - t, 1e-6)
        self._last = (now, finished)
        self.status.update(
            f"{self._label}: {rps:,.0f} req/s, {self.done} done, {self.total - self.done} left, ~{self.eta()} remaining"
        )

    def end(self, line: str) -> None:
        self.done += 1
        self.console.print(f"{self._label}: {line}", soft_wrap=True)

    def close(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None

    @staticmethod
    def note(text: str) -> None:
        print(f"corebench: {text}", file=sys.stderr)
