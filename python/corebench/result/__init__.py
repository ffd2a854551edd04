"""The typed result of one load run, parsed from the engine's versioned JSON
(schema `corebench.load/1`). The figures are the engine's, generated from
its Rust types (models.py); what they mean is in methods.py. Later stages
(runner, store, report) take these records."""

from corebench.result.methods import (
    CALIBRATION_REPEATS,
    CLIENT_BOUND_MIN_S,
    CLIENT_BOUND_SHARE,
    FAILING_SHARE,
    NEAR_CEILING,
    SUCCESS,
)
from corebench.result.models import (
    AgentSummary,
    Bytes,
    CpuTimes,
    ErrorCounts,
    Heads,
    Http2Summary,
    Latencies,
    LatencySummary,
    LoadResult,
    Percentile,
    ProbeCounts,
    RateConfig,
    ReplaySource,
    ScheduleSummary,
    SkipCount,
    SkippedLine,
    SpectrumPoint,
    TimelineSecond,
    Trace,
    UrlSummary,
)

__all__ = [
    "CALIBRATION_REPEATS",
    "CLIENT_BOUND_MIN_S",
    "CLIENT_BOUND_SHARE",
    "FAILING_SHARE",
    "NEAR_CEILING",
    "SUCCESS",
    "AgentSummary",
    "Bytes",
    "CpuTimes",
    "ErrorCounts",
    "Heads",
    "Http2Summary",
    "Latencies",
    "LatencySummary",
    "LoadResult",
    "Percentile",
    "ProbeCounts",
    "RateConfig",
    "ReplaySource",
    "ScheduleSummary",
    "SkipCount",
    "SkippedLine",
    "SpectrumPoint",
    "TimelineSecond",
    "Trace",
    "UrlSummary",
]
