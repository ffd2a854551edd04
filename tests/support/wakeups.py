"""How late this machine wakes a sleeping thread, measured while a
latency test runs: a test that judges a 20 ms bound cannot judge it on a
machine that wakes threads many milliseconds late (a busy CI neighbour),
and says so instead of failing or being tried again."""

from __future__ import annotations

import threading
import time
from types import TracebackType

import numpy as np

SLEEP_S = 0.001


class WakeUps:
    """A thread that sleeps 1 ms at a time and records how late it woke, in
    µs, until the block ends."""

    def __init__(self) -> None:
        self.late_us: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            began = time.perf_counter()
            time.sleep(SLEEP_S)
            self.late_us.append((time.perf_counter() - began - SLEEP_S) * 1e6)

    def __enter__(self) -> WakeUps:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()

    def p99_us(self) -> float:
        return float(np.percentile(self.late_us, 99)) if self.late_us else float("nan")

    def __str__(self) -> str:
        a = np.asarray(self.late_us)
        if a.size == 0:
            return "no wake-ups sampled"
        return (
            f"this machine woke a 1-ms sleep late by p50 {np.percentile(a, 50):,.0f} µs, "
            f"p99 {np.percentile(a, 99):,.0f} µs, max {a.max():,.0f} µs ({a.size:,} samples)"
        )
