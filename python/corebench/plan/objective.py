"""A service-level objective for a capacity search: latency percentiles and
an error share a load must stay within, like `p99<=20ms` or
`p99<=20ms,p50<=5ms,errors<=0.1%`. Each part is a threshold
(`plan.thresholds`) that bounds from above; errors default to at most 1%,
because a server answering errors fast must never count as sustaining its
load."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from corebench.plan.thresholds import Threshold, parse
from corebench.result import FAILING_SHARE, LoadResult
from corebench.units import parse_duration_s

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


def _share(v: Any) -> Any:
    if isinstance(v, str):
        text = v.strip()
        try:
            return float(text.removesuffix("%")) / (100 if text.endswith("%") else 1)
        except ValueError:
            raise ValueError(f"{v!r} is not a share: write 2% or 0.02") from None
    return v


def _seconds(v: Any) -> Any:
    return parse_duration_s(v) if isinstance(v, str) else v


class SearchSettings(BaseModel):
    """A capacity search: its objective and how it searches. The one home of
    these settings and their defaults: `corebench capacity`'s flags and a
    plan's `[search]` table are both read into it (plan keys: slo,
    precision, arrivals, start_rate, min_rate, max_rate, step, max_step,
    max_steps, sequential, from_previous)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    slo: str
    # The answer's bracket: its midpoint ± this share of the rate.
    precision: float = Field(0.02, gt=0, lt=0.5)
    arrivals: Literal["poisson", "uniform"] = "poisson"
    # The first rate; None: 3/4 of what a short closed-loop probe reaches.
    start_rps: float | None = Field(None, gt=0, alias="start_rate")
    min_rps: float = Field(1.0, gt=0, alias="min_rate")
    max_rps: float = Field(1_000_000.0, gt=0, alias="max_rate")
    min_step_s: float = Field(2.0, gt=0, le=3600, alias="step")
    max_step_s: float = Field(60.0, gt=0, le=3600, alias="max_step")
    max_steps: int = Field(30, ge=1, le=1000)
    # A step ends once its misses exceed what its whole length allows
    # (runner.sequential); False: every step runs its whole length.
    sequential: bool = True
    # A later round's search of a configuration starts near the previous
    # round's answer (runner.capacity.seeded); False: every search probes.
    from_previous: bool = True
    # The ramp's factor between steps, and how long a server may take to drain.
    growth: float = 2.0
    max_settle_s: float = 60.0

    _share = field_validator("precision", mode="before")(classmethod(lambda _cls, v: _share(v)))
    _durations = field_validator("min_step_s", "max_step_s", mode="before")(classmethod(lambda _cls, v: _seconds(v)))

    @field_validator("slo")
    @classmethod
    def _objective(cls, v: str) -> str:
        parse_objective(v)
        return v

    @model_validator(mode="after")
    def _ranges(self) -> SearchSettings:
        if self.min_rps > self.max_rps:
            raise ValueError(f"min_rate {self.min_rps:g} is above max_rate {self.max_rps:g}")
        if self.min_step_s > self.max_step_s:
            raise ValueError(f"step {self.min_step_s:g}s is longer than max_step {self.max_step_s:g}s")
        return self

    @property
    def objective(self) -> Objective:
        return parse_objective(self.slo)

    def step_s(self, rate_rps: float) -> float:
        """A step long enough for the objective's highest percentile."""
        return min(self.max_step_s, max(self.min_step_s, self.objective.samples_needed() / rate_rps))

    def step_requests(self, rate_rps: float) -> int:
        """The requests a step at `rate_rps` sends at most, its rate times its
        seconds: capped, so that a step's allowance (1% of them for a p99) is
        exact, where a Poisson schedule would send about √N more or fewer.
        The 1e-6 keeps a product such as 4,999.999999 from losing one."""
        return max(1, math.floor(rate_rps * self.step_s(rate_rps) + 1e-6))

    def timeout_s(self) -> float:
        """A request 20 times later than the bound has missed it anyway: an
        overloaded step ends without waiting out ab's 30 s timeouts."""
        return min(30.0, max(1.0, 20 * self.objective.latency_limit_us / 1e6))
