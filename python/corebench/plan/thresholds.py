"""Pass/fail criteria on one load's result, for CI pipelines (k6's
thresholds): `p99<20ms`, `p99.9<=100ms`, `mean<5ms`, `errors<0.1%`,
`errors<=10` (a count), `rps>5000`. Throughput here is goodput (successful
responses per second) and errors are every failed request: transport errors,
4xx and 5xx."""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

from corebench.result import LoadResult

# The percentiles every result summarises (ab's table and the tail).
PERCENTILES = (50.0, 66.0, 75.0, 80.0, 90.0, 95.0, 98.0, 99.0, 99.9, 99.99, 99.999)
_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_TIME_US = {"us": 1.0, "ms": 1000.0, "s": 1_000_000.0}
_FORM = re.compile(r"^\s*([a-z]+(?:\d+(?:\.\d+)?)?)\s*(<=|>=|<|>)\s*(\d+(?:\.\d+)?)\s*(us|ms|s|%|/s)?\s*$")
EXAMPLES = "p99<20ms, p99.9<=100ms, mean<5ms, errors<0.1%, errors<=10, rps>5000"


@dataclass(frozen=True)
class Threshold:
    text: str
    metric: str  # "p99", "mean", "errors", "rps"
    op: str
    limit: float  # µs for latencies, a share (0..1) or a count for errors, req/s for rps
    share: bool = False  # errors given in %

    def measure(self, r: LoadResult) -> float:
        if self.metric == "rps":
            return r.successes / r.duration_s if r.duration_s else 0.0
        if self.metric == "errors":
            failed = r.requests - r.successes
            return failed / r.requests if self.share and r.requests else float(failed)
        if not r.latency_us.total.count:
            return math.nan  # no response: no latency, met by no bound
        if self.metric == "mean":
            return r.latency_us.total.mean_us
        return float(r.latency_us.total.at(float(self.metric[1:])))

    def passes(self, value: float) -> bool:
        return _OPS[self.op](value, self.limit)

    def shown(self, value: float) -> str:
        if math.isnan(value):
            return "no response measured"
        if self.metric == "rps":
            return f"{value:,.0f} req/s"
        if self.metric == "errors":
            return f"{value:.3%}" if self.share else f"{value:,.0f}"
        return f"{value / 1000:,.3f} ms"


def parse(text: str) -> Threshold:
    """One criterion; ValueError with what is accepted otherwise."""
    m = _FORM.match(text.lower())
    if not m:
        raise ValueError(f"{text!r} is not a threshold: write METRIC OP VALUE, like {EXAMPLES}")
    metric, op, number, unit = m.group(1), m.group(2), float(m.group(3)), m.group(4)
    if metric in ("rps",):
        if unit not in (None, "/s"):
            raise ValueError(f"{text!r}: rps takes a number of requests per second, like rps>5000")
        return Threshold(text, metric, op, number)
    if metric == "errors":
        if unit not in (None, "%"):
            raise ValueError(f"{text!r}: errors take a share or a count, like errors<0.1% or errors<=10")
        return Threshold(text, metric, op, number / 100 if unit == "%" else number, share=unit == "%")
    if metric == "mean" or (metric.startswith("p") and _percentile(metric) in PERCENTILES):
        if unit not in _TIME_US:
            raise ValueError(f"{text!r}: a latency needs a unit (us, ms or s), like {metric}<20ms")
        if number <= 0:
            raise ValueError(
                f"{text!r}: a latency bound must be above 0 (no response takes no time), like {metric}<20ms"
            )
        return Threshold(text, metric if metric == "mean" else f"p{_percentile(metric):g}", op, number * _TIME_US[unit])
    known = ", ".join(f"p{p:g}" for p in PERCENTILES)
    raise ValueError(f"{text!r}: unknown metric {metric!r}; use {known}, mean, errors or rps")


def _percentile(metric: str) -> float:
    digits = metric[1:]
    # p999 is p99.9 and p9999 is p99.99, as load tools write them.
    if digits.startswith("99") and len(digits) > 2 and "." not in digits:
        digits = "99." + digits[2:]
    try:
        return float(digits)
    except ValueError:
        return -1.0


def judge(thresholds: list[Threshold], result: LoadResult) -> list[tuple[Threshold, float, bool]]:
    return [(t, v, t.passes(v)) for t in thresholds for v in [t.measure(result)]]
