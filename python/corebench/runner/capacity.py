"""The capacity search: the highest open-loop rate a server sustains within
a service-level objective.

Like Envoy Nighthawk's adaptive load controller, it measures at a rate,
judges the result against the objective and picks the next rate; unlike it,
each step is long enough for the percentile it judges, arrivals are a
Poisson process by default, latency counts from each request's intended
send time (no coordinated omission), and the answer comes with the bracket
it was found in. The search is a geometric ramp that brackets the limit
(from three quarters of a short probe's rate, by FINE_GROWTH near that
rate and doubling past it, or down by the same steps until one meets),
then bisection
on the geometric mean until the bracket is within the precision, then a
repeat of both ends of the bracket: a rate's verdict is the majority of
its steps, a tie measured once more. Between a missed step and the next, the
server is left to drain its backlog, so a queue built by an overload is not
charged to the next rate."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from corebench.config.engine import LiveBoundsU, RateConfig
from corebench.config.settings import LoadConfig
from corebench.engine import Figures
from corebench.plan.objective import Objective, SearchSettings
from corebench.result import LoadResult
from corebench.runner import pool, sequential
from corebench.store import Capacity, Step

# How far below its start the search goes looking for a rate that meets:
# this many halvings.
RAMP_DOWN_STEPS = 6
# A search that starts from an earlier round's answer (`seeded`): its start
# is drawn uniformly from this share of that answer up to the answer, and
# it ramps by FINE_GROWTH near that answer, as a probed search does near
# the probe's rate (halving below half of it: an answer the server no
# longer sustains is left in few steps).
SEEDED_LOW = 0.85
# The ramp's factor where the limit is expected: near an earlier answer,
# or near the probe's closed-loop rate, which a latency objective usually
# holds to 0.5-0.95 of (an M/M/1 queue with p99 <= 100 ms: 0.77 at
# mu = 200/s, 0.95 at 1,000/s). A first bracket of 1.25 rather than 2 saves
# bisections, each a full-length step near the limit.
FINE_GROWTH = 1.25
SEEDED_GROWTH = FINE_GROWTH
# An unseeded search starts at this share of the probe's rate: below most
# limits, so its first step usually meets, at a rate high enough that the
# step (long enough for its percentile's samples, so longer the lower
# the rate) is short.
PROBED_START = 0.75


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
    # The probe's rate: near it the ramp goes by FINE_GROWTH (up to a
    # FINE_GROWTH past it, down to half of it), beyond by the settings'
    # growth, so a probe that misjudged the server costs few extra steps.
    near_rps: float | None = None

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
        return max(s.min_rps, min(self.start_rps, s.max_rps) / 2.0**RAMP_DOWN_STEPS)

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
            return None if lo >= s.max_rps else min(lo * self._up(lo), s.max_rps)
        if lo is None:
            # By FINE_GROWTH down to half the expected rate, by halves
            # below it whatever the growth: a server that no longer
            # sustains an earlier answer reaches the floor in a few steps.
            return None if hi <= self.floor_rps else max(hi / self._down(hi), self.floor_rps)
        if self.converged():
            # Both ends of the answer's bracket are measured twice.
            return next((r for r in (lo, hi) if len(self.runs[r]) < 2), None)
        return math.sqrt(lo * hi)

    def _up(self, lo_rps: float) -> float:
        near = self.near_rps
        return FINE_GROWTH if near is not None and lo_rps < near * FINE_GROWTH else self.settings.growth

    def _down(self, hi_rps: float) -> float:
        near = self.near_rps
        return FINE_GROWTH if near is not None and hi_rps > near / 2 else 2.0


def seeded(settings: SearchSettings, previous_rps: float, rng: random.Random) -> SearchSettings:
    """The search of a later round of a plan, started from an earlier
    round's answer for the same configuration: no probe, no first step far
    below the limit (the longest of a search: a step lasts long enough for
    its percentile's samples, so the lower its rate the longer), and a
    bracket of SEEDED_GROWTH upward rather than 2, so fewer bisections. The start
    is drawn uniformly from SEEDED_LOW to 1 times the earlier answer: a
    fixed start would put every round's rates on one grid, and their
    answers would agree by construction, understating the spread between
    rounds. Each step is still measured and judged whole; an earlier answer
    the server no longer sustains is ramped down from, as far as an
    unseeded search goes (RAMP_DOWN_STEPS halvings). A plan's own
    start_rate is kept. The search is given the earlier answer as its
    `near_rps`, so it ramps down by FINE_GROWTH to half of it: a start
    near the limit misses by noise as often as not, and a halving would
    then measure a long step far below it."""
    if settings.start_rps is not None:
        return settings
    start = previous_rps * rng.uniform(SEEDED_LOW, 1.0)
    return settings.model_copy(update={"start_rps": max(start, settings.min_rps), "growth": SEEDED_GROWTH})


class Runner(Protocol):
    """Runs a load (engine.run's shape); `live` watches its whole seconds
    where the backend reports them, and may end it once settled."""

    def __call__(self, config: LoadConfig, *, live: Live | None = None) -> LoadResult: ...


Live = Callable[[Figures], object]
OnStep = Callable[[Step], None]


class _Cut(Exception):
    """A load cut short by a signal (Ctrl-C, SIGTERM): the search stops
    there, and the step it cut is not judged as if it were whole."""


def _whole(run: Runner) -> Runner:
    def whole(config: LoadConfig, *, live: Live | None = None) -> LoadResult:
        r = run(config, live=live)
        if r.interrupted:
            raise _Cut
        return r

    return whole


@dataclass
class _Progress:
    """What a search has measured whole so far: it survives an interruption."""

    began: float
    bracket: Bracket
    steps: list[Step] = field(default_factory=list)
    results: list[LoadResult] = field(default_factory=list)


def search(
    base: LoadConfig,
    settings: SearchSettings,
    run: Runner,
    on_step: OnStep | None = None,
    near_rps: float | None = None,
) -> Capacity:
    """Measures `base` (a load of the target's URL) at rates chosen by the
    search until the limit is bracketed within the precision. `near_rps`:
    where the limit is expected (an earlier round's answer, `seeded`); else
    the probe's rate, when the search probes. A signal ends it with outcome
    "interrupted" and the steps measured whole."""
    done = _Progress(time.monotonic(), Bracket(settings, 0.0, near_rps=near_rps))
    try:
        return _search(base, settings, _whole(run), on_step, done)
    except (_Cut, KeyboardInterrupt):
        lo, hi = done.bracket.lo, done.bracket.hi
        # No rate is claimed sustained: its confirming steps may not have run.
        return _answer(settings, done.began, "interrupted", done.steps, bracket=(lo, hi), results=done.results)


def _search(
    base: LoadConfig, settings: SearchSettings, run: Runner, on_step: OnStep | None, done: _Progress
) -> Capacity:
    """The search, filling `done` as it goes."""
    began, bracket, steps, results = done.began, done.bracket, done.steps, done.results
    probe_rps: float | None = None
    start = settings.start_rps
    if start is None:
        probe = run(_probe(base))
        if probe.successes == 0:
            return _answer(
                settings, began, "dead", [], probe_rps=0.0, failures=f"{probe.requests:,} sent; {probe.failures()}"
            )
        probe_rps = probe.successes / max(probe.duration_s, 1e-9)
        start = probe_rps * PROBED_START
        bracket.near_rps = probe_rps
    bracket.start_rps = start
    while len(steps) < settings.max_steps and (rate := bracket.next_rate()) is not None:
        step = _rate(base, settings, rate, run, on_step, done)
        if step is None:
            # A server that answers nothing is not slow: lower rates would
            # only take longer to say the same, so the search ends.
            result = results[-1]
            failures = f"{result.requests:,} sent; {result.failures()}"
            return _answer(
                settings,
                began,
                "dead",
                steps,
                bracket=(bracket.lo, bracket.hi),
                probe_rps=probe_rps,
                failures=failures,
                results=results,
            )
        bracket.record(rate, step.meets)
    lo, hi = bracket.lo, bracket.hi
    if bracket.next_rate() is not None:
        outcome = "unfinished"
    elif hi is None:
        outcome = "above-max"
    elif lo is None:
        outcome = "none"
    else:
        outcome = "found"
    return _answer(settings, began, outcome, steps, rate_rps=lo, bracket=(lo, hi), probe_rps=probe_rps, results=results)


def _rate(
    base: LoadConfig, settings: SearchSettings, rate: float, run: Runner, on_step: OnStep | None, done: _Progress
) -> Step | None:
    """Measures one rate: a step, and where --max-step cut it short of the
    responses its percentile needs, more at the same rate judged together
    with it (runner.pool). The step that carries the rate's verdict, or
    None where a step had no success."""
    objective = settings.objective
    parts = sequential.bounds(objective)
    # Pooled only where every percentile part is counted (the engine counts at most MAX_LIVE_BOUNDS).
    poolable = len(parts) == sum(1 for t in objective.latency if t.metric.startswith("p"))
    group: list[Step] = []
    while True:
        step, result = _measure(base, objective, settings, rate, run, group if poolable else None)
        done.results.append(result)
        alone = step.meets
        if group:
            pool.judge(step, group, parts, objective.samples_needed())
        group.append(step)
        if poolable and step.few_samples and step.counted > 0:
            pool.curtail(group, parts, settings.step_requests(rate), objective.samples_needed())
        done.steps.append(step)
        # A step whose own tail missed leaves a backlog, whatever its pool's verdict.
        if result.successes and not (step.meets and alone):
            step.settle_s = _settle(base, objective, settings, run)
        if on_step is not None:
            on_step(step)
        if result.successes == 0:
            return None
        again = poolable and step.few_samples and step.counted > 0 and len(group) < pool.POOL_STEPS
        if not again or pool.own_misses(step, parts) or len(done.steps) >= settings.max_steps:
            return step


def _answer(settings: SearchSettings, began: float, outcome: str, steps: list[Step], **found: Any) -> Capacity:
    """The search's answer: `found` holds what it found (Capacity's
    rate_rps, bracket, probe_rps, failures and results)."""
    return Capacity(
        objective=str(settings.objective),
        arrivals=settings.arrivals,
        precision=settings.precision,
        outcome=outcome,
        steps=steps,
        elapsed_s=time.monotonic() - began,
        **found,
    )


def _probe(base: LoadConfig) -> LoadConfig:
    """A short closed loop that says roughly how fast the server answers."""
    return base.model_copy(update={"rate": None, "concurrency": 8, "duration_s": 2.0, "requests": None})


def _step_config(
    base: LoadConfig, settings: SearchSettings, rate_rps: float, duration_s: float, requests: int, bounds_us: list[int]
) -> LoadConfig:
    """A step's load: `requests` at most (what its allowance counts), over `duration_s`."""
    rate = RateConfig(rps=rate_rps, arrivals=settings.arrivals)
    live = [LiveBoundsU(b) for b in bounds_us]
    update = {"rate": rate, "duration_s": duration_s, "requests": requests, "live_bounds_us": live}
    return base.model_copy(update=update)


def _measure(
    base: LoadConfig,
    objective: Objective,
    settings: SearchSettings,
    rate: float,
    run: Runner,
    before: list[Step] | None,
) -> tuple[Step, LoadResult]:
    """A step at `rate`. `before`: the steps at it its verdict is to be
    judged with (runner.pool), whose responses its curtailment counts too, as
    it counts the requests later steps of the pool may add; None where the
    objective's percentiles cannot be pooled."""
    samples = objective.samples_needed()
    duration_s = settings.step_s(rate)
    # The engine counts the responses over each bound (each second's: missed beyond doubt, a sequential
    # step ends there, runner.sequential; the whole step's: they pool it with the next, runner.pool).
    parts = sequential.bounds(objective)
    planned = settings.step_requests(rate)
    prior = before or []
    counted = sum(s.counted for s in prior)
    over = [sum(s.over[i] for s in prior) for i in range(len(parts))]
    later = 0.0
    if before is not None and planned < samples:
        later = max(0.0, pool.most_requests(counted, len(prior), planned, samples) - counted - planned)
    watch = sequential.Watch(
        parts,
        looks=math.ceil(duration_s),
        planned=planned,
        curtail=settings.sequential,
        before=(counted, over),
        later=later,
    )
    bounds_us = [b.limit_us for b in watch.parts]
    r = run(_step_config(base, settings, rate, duration_s, planned, bounds_us), live=watch)
    judged = objective.judge(r)
    counts = _counts(r, parts)
    sch = r.schedule
    sent, dropped, late = (sch.sent, sch.dropped, sch.late) if sch is not None else (r.requests, 0, 0)
    scheduled = sent + dropped
    missed = [f"{t.text} ({t.shown(v)})" for t, v, ok in judged if not ok]
    missed += pool.unsent(sent, scheduled)
    if watch.settled is not None:
        missed.insert(0, watch.why())
    step = Step(
        rate_rps=rate,
        duration_s=duration_s,
        meets=not missed,
        goodput_rps=r.goodput_rps,
        sent=sent,
        scheduled=scheduled,
        late=late,
        p50_us=r.latency_us.total.at(50.0) if r.latency_us.total.count else 0,
        judged=[(t.text, t.shown(v), ok) for t, v, ok in judged],
        measured={t.metric: v for t, v, _ in judged},
        why="; ".join(missed),
        # Thin where it planned too few and, where counted, answered too few.
        few_samples=watch.settled is None and planned < samples and counts["counted"] < samples,
        settled_s=r.duration_s if watch.settled is not None else None,
        **counts,
    )
    return step, r


def _counts(r: LoadResult, parts: list[sequential.Bound]) -> dict[str, Any]:
    """The step's responses and, per percentile part, those over its bound,
    from its whole histogram (the engine's `over_bounds`): what pools it
    with the next step at its rate. No responses counted where the engine
    did not count every bound (then it is not pooled)."""
    over = {b.bound_us: b.over for b in r.over_bounds}
    if any(p.limit_us not in over for p in parts):
        return {"counted": 0, "over": []}
    return {"counted": r.latency_us.total.count, "over": [over[p.limit_us] for p in parts]}


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
