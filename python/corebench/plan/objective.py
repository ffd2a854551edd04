"""A service-level objective for a capacity search: latency percentiles and
an error share a load must stay within, like `p99<=20ms` or
`p99<=20ms,p50<=5ms,errors<=0.1%`. Each part is a threshold
(`plan.thresholds`) that bounds from above; errors default to at most 1%,
because a server answering errors fast must never count as sustaining its
load."""

from __future__ import annotations

import math
from dataclasses import dataclass

from corebench.plan.thresholds import Threshold, parse
from corebench.result import FAILING_SHARE, LoadResult

# Samples beyond the judged percentile a step needs (so a p99 rests on 50
# slow requests, i.e. 5,000 in all): below ~50 exceedances the sample
# quantile's spread is a large part of the margins being judged (the
# order-statistic CI of a quantile; Hahn & Meeker, "Statistical
# Intervals", 1991, §5.2).
TAIL_SAMPLES = 50
MIN_SAMPLES = 1000
EXAMPLES = "p99<=20ms, p999<=100ms, p50<=5ms,p99<=50ms, p99<=20ms,errors<=0.1%"


@dataclass(frozen=True)
class Objective:
    text: str
    parts: tuple[Threshold, ...]

    @property
    def latency(self) -> tuple[Threshold, ...]:
        return tuple(t for t in self.parts if t.metric not in ("errors",))

    @property
    def latency_limit_us(self) -> float:
        """The tightest latency bound: what 'answering in time' means."""
        return min((t.limit for t in self.latency), default=math.inf)

    def samples_needed(self) -> int:
        """Requests a step needs for its highest percentile."""
        tail = max((1 - float(t.metric[1:]) / 100 for t in self.latency if t.metric.startswith("p")), default=1.0)
        needed = TAIL_SAMPLES / tail if tail < 1.0 else MIN_SAMPLES
        return max(MIN_SAMPLES, math.ceil(round(needed, 6)))

    def judge(self, r: LoadResult) -> list[tuple[Threshold, float, bool]]:
        return [(t, v, t.passes(v)) for t in self.parts for v in [t.measure(r)]]

    def __str__(self) -> str:
        return ", ".join(t.text for t in self.parts)


def parse_objective(text: str) -> Objective:
    """`p99<=20ms`, parts joined by commas; ValueError saying what is accepted."""
    parts: list[Threshold] = []
    for piece in (p.strip() for p in text.split(",")):
        if not piece:
            raise ValueError(f"{text!r}: an empty part; write objectives like {EXAMPLES}")
        t = parse(piece)
        if t.metric == "rps":
            raise ValueError(f"{piece!r}: the search finds the rate; bound latency or errors, like p99<=20ms")
        if t.op not in ("<", "<="):
            raise ValueError(f"{piece!r}: an objective bounds from above, like {t.metric}<=...")
        if any(p.metric == t.metric for p in parts):
            raise ValueError(f"{piece!r}: {t.metric} is bounded twice")
        parts.append(t)
    if not any(p.metric != "errors" for p in parts):
        raise ValueError(f"{text!r}: give a latency bound too, like p99<=20ms")
    if not any(p.metric == "errors" for p in parts):
        parts.append(Threshold(f"errors<={FAILING_SHARE:.0%}", "errors", "<=", FAILING_SHARE, share=True))
    return Objective(text, tuple(parts))
