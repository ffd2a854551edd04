"""A capacity search's runner over a simulated single-server queue
(corebench.testing.queues): each step's requests are simulated exactly,
its whole seconds are shown to the step's live watcher as the engine shows
them, a watcher's SETTLED ends the step there, and the result carries the
percentiles the objective judges. `clock_s` counts the simulated seconds
the search spent loading the queue (probe and steps; draining is free)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from corebench import engine
from corebench.config.settings import LoadConfig
from corebench.plan.thresholds import PERCENTILES
from corebench.result import LatencySummary, LoadResult, Percentile
from corebench.runner.capacity import Live
from corebench.testing.queues import response_times
from tests.support.records import load_result

PROBE_CONNECTIONS = 8


def _summary(times_us: np.ndarray) -> LatencySummary:
    qs = [*PERCENTILES, 100.0]
    values = np.percentile(times_us, qs) if len(times_us) else np.zeros(len(qs))
    return LatencySummary(
        count=len(times_us),
        min_us=int(times_us.min()) if len(times_us) else 0,
        max_us=int(times_us.max()) if len(times_us) else 0,
        mean_us=float(times_us.mean()) if len(times_us) else 0.0,
        stdev_us=0.0,
        median_us=int(values[0]),
        percentiles=[Percentile(percentile=q, value_us=int(v)) for q, v in zip(qs, values, strict=True)],
        spectrum=[],
        histogram="",
        hdr_buckets=0,
        hdr_sub_buckets=0,
    )


@dataclass
class QueueRunner:
    mu_rps: float
    seed: int = 0
    clock_s: float = 0.0
    steps_settled: int = 0
    rng: np.random.Generator = field(init=False)
    # Each step's response times (s), in step order: the truth a pooled verdict is checked against.
    times_s: list[np.ndarray] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    def __call__(self, config: LoadConfig, *, live: Live | None = None) -> LoadResult:
        if config.rate is None:
            if config.requests == 1:  # the search's drain check: an idle queue answers at once
                return self._result(np.array([1e6 / self.mu_rps]), 0.001)
            # The probe: a closed loop keeps the server busy, so it answers at μ.
            self.clock_s += config.duration_s or 0.0
            n = round(self.mu_rps * (config.duration_s or 1.0))
            return self._result(np.full(n, PROBE_CONNECTIONS * 1e6 / self.mu_rps), config.duration_s or 1.0)
        rate, duration = config.rate.rps, config.duration_s or 1.0
        arrivals = "uniform" if config.rate.arrivals == "uniform" else "poisson"
        at, t = response_times(rate, self.mu_rps, duration, arrivals, self.rng)
        at, t = at[: config.requests], t[: config.requests]  # the engine sends at most `requests`
        bounds_us = [int(b.root) for b in config.live_bounds_us]
        end = _watched(at, t, duration, bounds_us, live)
        if end < duration:
            self.steps_settled += 1
        self.clock_s += end
        keep = at < end
        self.times_s.append(t[keep])
        return self._result(t[keep] * 1e6, end, rate, bounds_us)

    def _result(
        self, times_us: np.ndarray, duration_s: float, rate: float | None = None, bounds_us: list[int] | None = None
    ) -> LoadResult:
        total = _summary(times_us)
        n = len(times_us)
        schedule = None
        if rate is not None:
            schedule = {
                "target_rps": rate,
                "window_s": duration_s,
                "sent": n,
                "late": 0,
                "dropped": 0,
                "send_lag_p50_us": 0,
                "send_lag_p99_us": 0,
                "send_lag_max_us": 0,
                "peak_in_flight": 1,
                "mean_in_flight": 1.0,
                "kept": True,
            }
        latency = {"connect": total, "waiting": total, "processing": total, "total": total, "uncorrected": None}
        over = [{"bound_us": b, "over": int((times_us > b).sum())} for b in bounds_us or []]
        return load_result(n, duration_s, latency_us=latency, schedule=schedule, over_bounds=over)


def _watched(at: np.ndarray, t: np.ndarray, duration: float, bounds_us: list[int], live: Live | None) -> float:
    """Shows each whole second to `live`; the time the step ended."""
    if live is None:
        return duration
    for s in range(int(duration)):
        this = t[(at >= s) & (at < s + 1)] * 1e6
        over = tuple(int((this > b).sum()) for b in bounds_us)
        second = engine.Second(s, len(this), 0, 0, 0, over)
        figures = engine.Figures(len(this), 0, 0, s + 1.0, None, duration, second)
        if live(figures) == engine.SETTLED:
            return s + 1.0
    return duration
