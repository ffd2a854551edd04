"""The capacity search: the highest open-loop rate a server sustains within
a service-level objective.

Like Envoy Nighthawk's adaptive load controller, it measures at a rate,
judges the result against the objective and picks the next rate; unlike it,
each step is long enough for the percentile it judges, arrivals are a
Poisson process by default, latency counts from each request's intended
send time (no coordinated omission), and the answer comes with the bracket
it was found in. The search is a geometric ramp that brackets the limit
(doubling until a step misses, or halving until one meets), then bisection
on the geometric mean until the bracket is within the precision, then a
repeat of both ends of the bracket: a rate's verdict is the majority of
its steps, a tie measured once more. Between a missed step and the next, the
server is left to drain its backlog, so a queue built by an overload is not
charged to the next rate."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from corebench.config.engine import RateConfig
from corebench.config.load import LoadConfig
from corebench.plan.objective import Objective, SearchSettings
from corebench.result import LoadResult

# A step that could not send this share of its schedule (every connection
# busy) did not offer its rate: it misses, whatever its latencies.
UNSENT_SHARE = 0.01
# How far below its start the search goes looking for a rate that meets.
RAMP_DOWN_STEPS = 6


@dataclass
class Step:
    rate_rps: float
    duration_s: float
    meets: bool
    achieved_rps: float  # goodput: successful responses per second
    sent: int
    scheduled: int
    late: int
    p50_us: int
    judged: list[tuple[str, str, bool]]  # (threshold, measured, met)
    measured: dict[str, float]  # metric -> value: latencies in µs, errors as a share or a count
    why: str = ""  # what missed, in words
    settle_s: float = 0.0  # time the server took to drain after this step
    few_samples: bool = False


@dataclass
class Bracket:
    """The search's state: every rate measured and whether each step met
    the objective. Pure, so its decisions are tested on known curves.

    A rate's verdict is the majority of its steps; a tie is measured again.
    Majority rather than "every step" keeps the answer unbiased: near the
    limit a step's percentile is noisy, and requiring every repeat to pass
    would drift the answer down with each repeat."""

    settings: SearchSettings
    start_rps: float
    runs: dict[float, list[bool]] = field(default_factory=dict)

    def record(self, rate_rps: float, meets: bool) -> None:
        self.runs.setdefault(rate_rps, []).append(meets)

    def verdict(self, rate_rps: float) -> bool | None:
        """True (meets), False (misses), or None while its steps are tied."""
        ok = self.runs[rate_rps]
        met = sum(ok)
        return None if 2 * met == len(ok) else 2 * met > len(ok)

    @property
    def hi(self) -> float | None:
        """The lowest rate whose verdict is a miss."""
        return min((r for r in self.runs if self.verdict(r) is False), default=None)

    @property
    def lo(self) -> float | None:
        """The highest rate below `hi` whose verdict is a meet."""
        hi = self.hi
        return max((r for r in self.runs if self.verdict(r) and (hi is None or r < hi)), default=None)

    @property
    def floor_rps(self) -> float:
        """The lowest rate tried: --min-rate, or RAMP_DOWN_STEPS halvings
        below the start. A server that misses the objective at a 64th of
        what it answered in the probe is not slow but broken for this load
        (say, keep-alive connections held by too few workers), and the
        steps there would each last a minute."""
        s = self.settings
        return max(s.min_rps, min(self.start_rps, s.max_rps) / s.growth**RAMP_DOWN_STEPS)

    def converged(self) -> bool:
        lo, hi = self.lo, self.hi
        p = self.settings.precision
        return lo is not None and hi is not None and hi / lo <= (1 + p) / (1 - p)

    def next_rate(self) -> float | None:
        """The next rate to measure, or None when the search is over."""
        s = self.settings
        if not self.runs:
            return min(max(self.start_rps, s.min_rps), s.max_rps)
        tied = [r for r in self.runs if self.verdict(r) is None]
        if tied:
            return min(tied)
        lo, hi = self.lo, self.hi
        if hi is None:
            assert lo is not None
            return None if lo >= s.max_rps else min(lo * s.growth, s.max_rps)
        if lo is None:
            return None if hi <= self.floor_rps else max(hi / s.growth, self.floor_rps)
        if self.converged():
            # Both ends of the answer's bracket are measured twice.
            return next((r for r in (lo, hi) if len(self.runs[r]) < 2), None)
        return math.sqrt(lo * hi)


@dataclass
class Capacity:
    objective: str
    arrivals: str
    precision: float
    rate_rps: float | None  # the highest rate whose steps met the objective (by majority, confirmed)
    bracket: tuple[float | None, float | None]  # (lo, hi): the limit lies between
    outcome: str  # "found", "above-max", "none", "unfinished", "dead"
    steps: list[Step]
    probe_rps: float | None = None
    elapsed_s: float = 0.0
    # Why the search ended "dead": the failures of the probe or step that got no answer.
    failures: str = ""
    # Each step's whole measurement, in step order (not in to_json: the store keeps results apart).
    results: list[LoadResult] = field(default_factory=list, repr=False)

    def to_json(self) -> dict[str, Any]:
        out = asdict(replace(self, results=[]))
        del out["results"]
        return out

    def sustained(self) -> LoadResult | None:
        """The last measurement at the sustained rate."""
        at = [r for s, r in zip(self.steps, self.results, strict=True) if s.rate_rps == self.rate_rps]
        return at[-1] if at else None

    def sentence(self) -> str:
        lo, hi = self.bracket
        if self.outcome == "found" and lo is not None and hi is not None:
            half = (hi - lo) / (hi + lo)
            return (
                f"Sustains {lo:,.0f} req/s within {self.objective} ({self.arrivals} arrivals); the steps' verdicts "
                f"change between {lo:,.0f} and {hi:,.0f} req/s (the search's resolution, ±{half:.1%}, not a "
                "confidence interval)."
            )
        if self.outcome == "above-max" and lo is not None:
            return f"Sustains at least {lo:,.0f} req/s within {self.objective}, the highest rate tried (--max-rate)."
        if self.outcome == "dead":
            return f"No request succeeded: the server stopped answering ({self.failures}); the search ended there."
        if self.outcome == "none":
            return (
                f"No rate tried meets {self.objective}: even {hi:,.0f} req/s missed (the search goes down to "
                "--min-rate, or 64 times below its start)."
            )
        where = f"between {lo:,.0f} and {hi:,.0f}" if lo is not None and hi is not None else "not bracketed"
        return f"Search unfinished after {len(self.steps)} steps (--max-steps): the limit is {where} req/s."


Runner = Callable[[LoadConfig], LoadResult]
OnStep = Callable[[Step], None]


def search(base: LoadConfig, settings: SearchSettings, run: Runner, on_step: OnStep | None = None) -> Capacity:
    """Measures `base` (a load of the target's URL) at rates chosen by the
    search until the limit is bracketed within the precision."""
    began = time.monotonic()
    objective = settings.objective
    probe_rps: float | None = None
    start = settings.start_rps
    if start is None:
        probe = run(_probe(base))
        if probe.successes == 0:
            return Capacity(
                str(objective), settings.arrivals, settings.precision, None, (None, None), "dead", [], 0.0,
                time.monotonic() - began, f"{probe.requests:,} sent; {probe.failures()}",
            )  # fmt: skip
        probe_rps = probe.successes / max(probe.duration_s, 1e-9)
        start = probe_rps / 2
    bracket = Bracket(settings, start)
    steps: list[Step] = []
    results: list[LoadResult] = []
    while len(steps) < settings.max_steps and (rate := bracket.next_rate()) is not None:
        step, result = _measure(base, objective, settings, rate, run)
        results.append(result)
        if result.successes == 0:
            # A server that answers nothing is not slow: lower rates would
            # only take longer to say the same, so the search ends.
            steps.append(step)
            if on_step is not None:
                on_step(step)
            return Capacity(
                str(objective), settings.arrivals, settings.precision, None, (bracket.lo, bracket.hi), "dead", steps,
                probe_rps, time.monotonic() - began, f"{result.requests:,} sent; {result.failures()}", results,
            )  # fmt: skip
        bracket.record(rate, step.meets)
        if not step.meets:
            step.settle_s = _settle(base, objective, settings, run)
        steps.append(step)
        if on_step is not None:
            on_step(step)
    lo, hi = bracket.lo, bracket.hi
    if bracket.next_rate() is not None:
        outcome = "unfinished"
    elif hi is None:
        outcome = "above-max"
    elif lo is None:
        outcome = "none"
    else:
        outcome = "found"
    return Capacity(
        str(objective), settings.arrivals, settings.precision, lo, (lo, hi), outcome, steps, probe_rps,
        time.monotonic() - began, results=results,
    )  # fmt: skip


def _probe(base: LoadConfig) -> LoadConfig:
    """A short closed loop that says roughly how fast the server answers."""
    return base.model_copy(update={"rate": None, "concurrency": 8, "duration_s": 2.0, "requests": None})


def _step_config(base: LoadConfig, settings: SearchSettings, rate_rps: float, duration_s: float) -> LoadConfig:
    rate = RateConfig(rps=rate_rps, arrivals=settings.arrivals)
    return base.model_copy(update={"rate": rate, "duration_s": duration_s, "requests": None})


def _measure(
    base: LoadConfig, objective: Objective, settings: SearchSettings, rate: float, run: Runner
) -> tuple[Step, LoadResult]:
    samples = objective.samples_needed()
    duration_s = settings.step_s(rate)
    r = run(_step_config(base, settings, rate, duration_s))
    judged = objective.judge(r)
    sch = r.schedule
    sent, dropped, late = (sch.sent, sch.dropped, sch.late) if sch is not None else (r.requests, 0, 0)
    scheduled = sent + dropped
    missed = [f"{t.text} ({t.shown(v)})" for t, v, ok in judged if not ok]
    if scheduled and dropped > UNSENT_SHARE * scheduled:
        missed.append(f"{dropped:,} of {scheduled:,} requests not sent: every connection was busy")
    step = Step(
        rate_rps=rate,
        duration_s=duration_s,
        meets=not missed,
        achieved_rps=r.successes / r.duration_s if r.duration_s else 0.0,
        sent=sent,
        scheduled=scheduled,
        late=late,
        p50_us=r.latency_us.total.at(50.0) if r.latency_us.total.count else 0,
        judged=[(t.text, t.shown(v), ok) for t, v, ok in judged],
        measured={t.metric: v for t, v, _ in judged},
        why="; ".join(missed),
        few_samples=rate * duration_s < samples,
    )
    return step, r


def _settle(base: LoadConfig, objective: Objective, settings: SearchSettings, run: Runner) -> float:
    """Waits until one request is answered within the objective's latency
    bound: a server still working off the queue a missed step left would
    charge it to the next step. Bounded by `max_settle_s`."""
    began = time.monotonic()
    limit_s = objective.latency_limit_us / 1e6
    one = base.model_copy(
        update={"rate": None, "concurrency": 1, "requests": 1, "duration_s": None, "timeout_s": settings.max_settle_s}
    )
    while time.monotonic() - began < settings.max_settle_s:
        r = run(one)
        if r.successes == 1 and r.latency_us.total.max_us / 1e6 <= limit_s:
            break
        time.sleep(min(0.5, limit_s))
    return time.monotonic() - began
