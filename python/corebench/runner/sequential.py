"""Sequential steps: a capacity step that is clearly over its objective
ends as soon as its data show it, at a stated error rate, instead of
running for the samples a percentile needs near the limit.

"p99 ≤ L" holds exactly when the share of responses slower than L is at
most 1%, the percentile's allowance a = 1 − p/100. Each whole second of a
step gives its responses n_i and x_i of them over L. The share
p̂ = Σx / Σn is a ratio estimator. A queue's seconds are autocorrelated (a
backlog lasts), so its standard error comes from batch means: the seconds
grouped into k batches, the spread of the batch residuals x_j − p̂·n_j
(Schmeiser, "Batch size effects in the analysis of simulation output",
Oper. Res. 30, 1982; Law & Kelton, Simulation Modeling and Analysis,
§9.5.3), with Student's t on k − 1 degrees of freedom, and never below the
binomial error at the boundary, sqrt(a(1 − a)/Σn). The step misses once
the lower end of that interval is above a, with exceedances in at least
MIN_BATCHES_OVER batches (one burst is not a trend).

The rule looks once a second, at most `looks` times in a step, and tests
at α / looks at each look (and α / parts for an objective of several
percentiles): by Bonferroni's inequality the chance that any look says
"misses" of a step that meets is at most α whatever the dependence
between looks (a conservative stand-in for an α-spending function; Lan &
DeMets, Biometrika 70, 1983), as far as each look's own level holds:
that is approximate (1-s batches are not independent near the limit of a
fast queue, and few batches make normality doubtful).

A server slower in its first seconds than later (a warm-up, a backlog)
must not be ended for them, so each look leaves out the first third of the
seconds seen (deletion of the initial transient; Law & Kelton §9.5.1,
Welch 1983) and tests the rest. A slow start longer than a third of the
seconds seen looks like a miss to any rule, since nothing tells the two
apart yet: simulated, a server 2% over its bound for 10 s and 0.2% after
was ended in 7% of the 34-s steps that would have met (20% without the
deletion).

Only misses are settled early. A queue's exceedances come in clumps (one
long busy period makes dozens of slow responses), so seconds without any
say little until many clumps could have been seen: in simulated M/M/1
queues a rule that also settled "meets" this way called steps 2-10% over
the limit met in 30-65% of cases. A step not settled runs its whole
length and is judged on its percentiles, as before.

The error rate is tested against M/M/1 and D/M/1 queues simulated exactly
(corebench.testing.queues) at rates below the limit theory gives
(tests/runner/test_sequential.py)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from scipy import stats

from corebench._engine import MAX_LIVE_BOUNDS
from corebench.engine import SETTLED, Figures
from corebench.plan.objective import Objective

# The chance of ending a step that meets, over all its looks.
ALPHA = 0.05
# Seconds tested before the first verdict: batch means need a few batches.
MIN_BATCHES = 5
MAX_BATCHES = 20
MIN_BATCHES_OVER = 3
# Each look leaves out the first 1/WARM_SHARE of the seconds seen: a slow start.
WARM_SHARE = 3


@dataclass(frozen=True)
class Second:
    """One whole second of a step: the responses it ended, and how many
    were over the latency bound."""

    ended: int
    over: int


@dataclass(frozen=True)
class Look:
    """What one look saw: the share over the bound with its simultaneous
    interval, and whether it shows the step misses."""

    share: float
    low: float
    high: float
    misses: bool


def look(seconds: Sequence[Second], allowance: float, looks: int, alpha: float = ALPHA) -> Look:
    """Whether `seconds` show the share over the bound above `allowance`,
    at error rate `alpha` spread over `looks` looks."""
    seconds = seconds[len(seconds) // WARM_SHARE :]
    n = sum(s.ended for s in seconds)
    x = sum(s.over for s in seconds)
    if n == 0 or len(seconds) < MIN_BATCHES:
        return Look(x / n if n else math.nan, 0.0, 1.0, False)
    share = x / n
    k = min(MAX_BATCHES, len(seconds))
    batches = _batches(seconds, k)
    mean_n = n / k
    residuals = [(bx - share * bn) / mean_n for bn, bx in batches]
    batch_se = math.sqrt(sum(r * r for r in residuals) / (k * (k - 1)))
    binomial_se = math.sqrt(allowance * (1 - allowance) / n)
    one_sided = alpha / looks
    t = float(stats.t.ppf(1 - one_sided, k - 1))
    z = float(stats.norm.ppf(1 - one_sided))
    half = max(t * batch_se, z * binomial_se)
    low, high = max(0.0, share - half), min(1.0, share + half)
    burst = sum(bx > 0 for _, bx in batches) < MIN_BATCHES_OVER
    return Look(share, low, high, low > allowance and not burst)


def _batches(seconds: Sequence[Second], k: int) -> list[tuple[int, int]]:
    """The seconds in k consecutive batches of (nearly) equal length."""
    out = []
    for j in range(k):
        part = seconds[j * len(seconds) // k : (j + 1) * len(seconds) // k]
        out.append((sum(s.ended for s in part), sum(s.over for s in part)))
    return out


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
        Bound(t.text, math.ceil(t.limit), 1 - float(t.metric[1:]) / 100)
        for t in objective.latency
        if t.metric.startswith("p") and float(t.metric[1:]) < 100
    ]
    return out[:MAX_LIVE_BOUNDS]


@dataclass
class Watch:
    """A step's live watcher (engine.run's `live`): reads each whole second
    once and, as soon as one percentile part shows the step misses, ends
    the load (engine.SETTLED) and keeps what it saw."""

    parts: list[Bound]
    looks: int
    seconds: list[list[Second]] = field(default_factory=list)
    last: int = -1
    settled: tuple[Bound, Look, int] | None = None  # the part, what showed it, after how many seconds

    def __post_init__(self) -> None:
        self.seconds = [[] for _ in self.parts]

    def __call__(self, f: Figures) -> object:
        s = f.second
        if self.settled is not None:
            return SETTLED
        if s is None or s.second <= self.last or not self.parts:
            return None
        self.last = s.second
        ended = s.completed + s.errors
        alpha = ALPHA / len(self.parts)
        for i in range(len(self.parts)):
            # A failed request did not answer in time.
            self.seconds[i].append(Second(ended, s.over[i] + s.errors if i < len(s.over) else s.errors))
        # A step that runs whole is judged on its whole percentiles.
        if len(self.seconds[0]) >= self.looks:
            return None
        for i, part in enumerate(self.parts):
            seen = look(self.seconds[i], part.allowance, self.looks, alpha)
            if seen.misses:
                self.settled = (part, seen, len(self.seconds[i]))
                return SETTLED
        return None

    def why(self) -> str:
        """What settled the step, in words ("" when nothing did)."""
        if self.settled is None:
            return ""
        part, seen, n = self.settled
        return (
            f"{part.text} settled after {n} s: {seen.share:.1%} of responses over the bound "
            f"(at least {seen.low:.1%}, at about {1 - ALPHA:.0%} over all looks), {part.allowance:.1%} allowed"
        )
