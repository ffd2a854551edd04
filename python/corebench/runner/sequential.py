"""Curtailed steps: a capacity step whose verdict can no longer change
ends as soon as that is so, instead of running for the samples a
percentile needs.

"p99 ≤ L" holds for a step exactly when the share of its responses slower
than L is at most 1%, the percentile's allowance a = 1 − p/100. A step at
rate λ for T seconds plans N = λT requests, and ends with at most N
responses (some may go unsent or unanswered; its requests are capped at
N, where a Poisson schedule would send about √N more or fewer). Once more than a·N of the
responses so far were over L, the whole step's share is over a whatever
its remaining seconds bring: it misses, and running it on measures
nothing that could change that. The engine counts, in each whole second,
the responses over each bound (`live_bounds_us`; a failed request counts
as over, having not answered in time), and the step ends there
(deterministic curtailment: the test stops once its outcome is decided;
e.g. Lan, Simon & Halperin, "Stochastically curtailed tests in long-term
clinical trials", Sequential Analysis 1, 1982, whose probability 1 case
this is).

So a step ended early is one its whole length would have called missed,
up to the histogram's resolution (0.1%) at the bound: no error rate to
state, no assumption about the queue's autocorrelation, a slow start or
a slow end. A step whose misses are not yet decided runs its whole length
and is judged on its whole percentiles, as before; the last second is
never a reason to end.

Steps that meet run whole. Rules that would end them from their first
seconds (batch means of the share over the bound, or of the seconds'
p99s) hold their 5% error on independent responses but ended 76-94% of
steps exactly at an exact queue's limit: a queue's slow responses come
from a few busy periods, some longer than the step, which its seconds
cannot show yet (bench/meeting_rules.py; docs/capacity.md).

Replaced (29 Nov 2026): a batch-means rule that ended a step once the
lower end of a Bonferroni interval of the share was above a. It ended
steps a slow start made look bad (16-20% of those that met as a whole),
and with the first third of each look left out, steps a slow end made
look bad (54% at 1,000 req/s, in a statistician's review); its error rate
was approximate and its tests could not tell it from a laxer rule.
Curtailment ends more steps sooner (bench/capacity_search.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from corebench._engine import MAX_LIVE_BOUNDS
from corebench.engine import SETTLED, Figures
from corebench.plan.objective import Objective


@dataclass(frozen=True)
class Bound:
    """A percentile part of the objective: "p99 <= 100ms" is at most 1% of
    responses over 100,000 µs."""

    text: str
    limit_us: int
    allowance: float


def bounds(objective: Objective) -> list[Bound]:
    """The objective's percentile parts, at most the engine's MAX_LIVE_BOUNDS."""
    out = [
        # Rounded: 1 − 90/100 is 0.09999999999999998, which would miss a p90 at its exact boundary.
        Bound(t.text, over_us(t.limit, strict=t.op == "<"), round(1 - float(t.metric[1:]) / 100, 9))
        for t in objective.latency
        if t.metric.startswith("p") and float(t.metric[1:]) < 100
    ]
    return out[:MAX_LIVE_BOUNDS]


def over_us(limit_us: float, *, strict: bool) -> int:
    """The engine's bound for a latency limit: it counts the responses over
    a whole number of µs (latencies are whole µs), so a response is over
    it exactly when it alone would fail the limit: at the limit itself
    for "p99 < L", only beyond it for "p99 <= L"."""
    return max(0, math.ceil(limit_us) - 1 if strict else math.floor(limit_us))


def decided(over: int, planned: float, allowance: float) -> bool:
    """Whether `over` responses over the bound already exceed what a step of
    `planned` requests may have: it misses, whatever comes next."""
    return over > allowance * planned


@dataclass
class Watch:
    """A step's live watcher (engine.run's `live`): reads each whole second
    once, counting its responses and those over each percentile part's
    bound, and, where `curtail`, as soon as one part's misses exceed what
    the whole step of `planned` requests allows, ends the load
    (engine.SETTLED) and keeps what it saw. `looks`: the step's planned
    seconds. `before`: the responses of the steps before it at this rate
    whose verdict it is judged with (runner.pool), and of those,
    over each part's bound; `later`: the requests the steps after it in
    that pool may add. The allowance is the whole pool's."""

    parts: list[Bound]
    looks: int
    planned: float
    curtail: bool = True
    before: tuple[int, list[int]] = (0, [])
    later: float = 0.0
    ended: int = 0
    over: list[int] = field(default_factory=list)
    seen: int = 0
    last: int = -1
    settled: tuple[Bound, int, int] | None = None  # the part, its responses over, after how many seconds

    def __post_init__(self) -> None:
        self.over = [0 for _ in self.parts]

    def __call__(self, f: Figures) -> object:
        s = f.second
        if self.settled is not None:
            return SETTLED
        if s is None or s.second <= self.last or not self.parts:
            return None
        self.last = s.second
        self.seen += 1
        self.ended += s.completed + s.errors
        for i in range(len(self.parts)):
            # A failed request did not answer in time.
            self.over[i] += (s.over[i] if i < len(s.over) else 0) + s.errors
        # A step that runs whole is judged on its whole percentiles.
        if self.seen >= self.looks or not self.curtail:
            return None
        counted, over = self.before
        for i, part in enumerate(self.parts):
            if decided(self.over[i] + (over[i] if over else 0), self.planned + counted + self.later, part.allowance):
                self.settled = (part, self.over[i], self.seen)
                return SETTLED
        return None

    def why(self) -> str:
        """What settled the step, in words ("" when nothing did)."""
        if self.settled is None:
            return ""
        part, over, n = self.settled
        counted, over_before = self.before
        allowed = math.floor(part.allowance * (self.planned + counted + self.later))
        if counted or self.later:
            i = self.parts.index(part)
            before = f" and {over_before[i]:,} of {counted:,} in the steps before it at this rate" if counted else ""
            return (
                f"{part.text} settled after {n} s: {over:,} of {self.ended:,} responses over the bound{before}, more "
                f"than the {allowed:,} ({part.allowance:.1%}) its rate's pooled steps' "
                f"{self.planned + counted + self.later:,.0f} requests allow"
            )
        return (
            f"{part.text} settled after {n} s: {over:,} of {self.ended:,} responses over the bound, more than "
            f"the {allowed:,} ({part.allowance:.1%}) the whole step's {self.planned:,.0f} requests allow"
        )
