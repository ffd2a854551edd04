"""HdrHistogram's percentile distribution text (.hgrm), as written by its
`outputPercentileDistribution` with values in milliseconds (scaling ratio
1000, as wrk2 does), so the HdrHistogram plotter reads it."""

from __future__ import annotations

from corebench.config.settings import LoadConfig
from corebench.result import LatencySummary, LoadResult

_SCALE = 1000.0  # microseconds per millisecond


def percentile_distribution(h: LatencySummary) -> str:
    lines = [f"{'Value':>12} {'Percentile':>14} {'TotalCount':>10} {'1/(1-Percentile)':>14}", ""]
    for p in h.spectrum:
        value = p.value_us / _SCALE
        if p.percentile < 1.0:
            lines.append(f"{value:12.3f} {p.percentile:2.12f} {p.total_count:10d} {1 / (1 - p.percentile):14.2f}")
        else:
            lines.append(f"{value:12.3f} {p.percentile:2.12f} {p.total_count:10d}")
    lines.append(f"#[Mean    = {h.mean_us / _SCALE:12.3f}, StdDeviation   = {h.stdev_us / _SCALE:12.3f}]")
    lines.append(f"#[Max     = {h.max_us / _SCALE:12.3f}, Total count    = {h.count:12d}]")
    lines.append(f"#[Buckets = {h.hdr_buckets:12d}, SubBuckets     = {h.hdr_sub_buckets:12d}]")
    return "\n".join(lines) + "\n"


class Hgrm:
    name = "hgrm"

    def render(self, result: LoadResult, _config: LoadConfig) -> str:
        return percentile_distribution(result.latency_us.total)
