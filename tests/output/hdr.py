"""Latency summaries built from known values, through a second HdrHistogram
implementation (the `hdrh` package), for testing formats exactly."""

from __future__ import annotations

import statistics
from types import SimpleNamespace
from typing import Any

from hdrh.histogram import HdrHistogram

from corebench.result import LatencySummary, Percentile

PERCENTILES = (50.0, 66.0, 75.0, 80.0, 90.0, 95.0, 98.0, 99.0, 99.9, 99.99, 99.999, 100.0)


def histogram(values_us: list[int]) -> HdrHistogram:
    h = HdrHistogram(1, 3_600_000_000, 3)
    for v in values_us:
        h.record_value(v)
    return h


def summary(values_us: list[int]) -> LatencySummary:
    h = histogram(values_us)
    return LatencySummary(
        count=len(values_us),
        min_us=h.get_min_value() if values_us else 0,
        max_us=h.get_max_value() if values_us else 0,
        mean_us=statistics.fmean(values_us) if values_us else 0.0,
        stdev_us=statistics.stdev(values_us) if len(values_us) > 1 else 0.0,
        median_us=h.get_value_at_percentile(50.0) if values_us else 0,
        percentiles=[Percentile(percentile=p, value_us=h.get_value_at_percentile(p)) for p in PERCENTILES],
        spectrum=[],
        histogram=h.encode().decode(),
        hdr_buckets=h.bucket_count,
        hdr_sub_buckets=h.sub_bucket_count,
    )


def result(total: LatencySummary, **fields: Any) -> Any:
    """What a format reads of a LoadResult: the total latency, and `fields`."""
    return SimpleNamespace(latency_us=SimpleNamespace(total=total), **fields)
