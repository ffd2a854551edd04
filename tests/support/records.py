"""Typed records built from a few known figures, for tests of the stages
that read them (the analysis, the report): a whole LoadResult and a
StoredRun around it, everything not given at a plain default."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from corebench.result import LatencySummary, LoadResult, Percentile
from corebench.store import MonitorSummary, RunLayout, StoredExperiment, StoredRun

PERCENTILES = (50.0, 90.0, 99.0, 99.9, 100.0)


def latency(p50_us: int = 1000, p99_us: int = 2000, mean_us: float | None = None, count: int = 100) -> LatencySummary:
    """A summary with these percentiles (the others in between)."""
    values = {50.0: p50_us, 90.0: (p50_us + p99_us) // 2, 99.0: p99_us, 99.9: p99_us, 100.0: p99_us}
    return LatencySummary(
        count=count,
        min_us=min(p50_us, p99_us),
        max_us=p99_us,
        mean_us=float(mean_us if mean_us is not None else p50_us),
        stdev_us=0.0,
        median_us=p50_us,
        percentiles=[Percentile(percentile=p, value_us=values[p]) for p in PERCENTILES],
        spectrum=[],
        histogram="",
        hdr_buckets=0,
        hdr_sub_buckets=0,
    )


def load_result(
    ok: int = 1000,
    duration_s: float = 1.0,
    *,
    status_counts: dict[int, int] | None = None,
    p50_us: int = 1000,
    p99_us: int = 2000,
    mean_us: float | None = None,
    **fields: Any,
) -> LoadResult:
    """A closed-loop result of `ok` 200s over `duration_s` (or these
    `status_counts`), with `fields` over the defaults."""
    counts = status_counts if status_counts is not None else {200: ok}
    responses = sum(counts.values())
    failed = int(fields.pop("failed", 0))
    total = latency(p50_us, p99_us, mean_us, responses)
    data: dict[str, Any] = {
        "schema": "corebench.load/1",
        "engine_version": "0.1.0",
        "url": "http://127.0.0.1:8080/",
        "host": "127.0.0.1",
        "port": 8080,
        "path": "/",
        "address": "127.0.0.1:8080",
        "model": "closed",
        "concurrency": 10,
        "threads": 1,
        "keep_alive": True,
        "started_unix_s": 0.0,
        "duration_s": duration_s,
        "interrupted": False,
        "requests": responses + failed,
        "responses": responses,
        "failed": failed,
        "non_2xx": sum(n for c, n in counts.items() if not 200 <= c < 300),
        "keep_alive_requests": responses,
        "connections_opened": 10,
        "errors": {"connect": 0, "receive": 0, "length": 0, "exceptions": failed, "timeout": 0},
        "error_samples": [],
        "status_counts": counts,
        "bytes": {"header": 0, "body": 0, "received": 0, "sent": 0},
        "server_software": None,
        "document_length": None,
        "throughput_rps": responses / duration_s if duration_s else 0.0,
        "transfer_rate_bytes_s": 0.0,
        "latency_us": {"connect": total, "waiting": total, "processing": total, "total": total, "uncorrected": None},
        "timeline": [],
        "cpu": {"user_s": 0.0, "system_s": 0.0},
        "busy_poll_us": 0,
        "linger": "off",
        "linger_percent": 0,
        "linger_probes": {"probes": 0, "held": 0},
        "held_waits": 0,
        "io": "epoll",
        "http_version": "1.1",
        "streams": 1,
        "rate": None,
        "think_s": None,
        "random_order": False,
        "seed": 1,
        "schedule": None,
        "urls": [],
        "replay": None,
    }
    return LoadResult.model_validate(data | fields)


def stored_run(
    point: dict[str, Any] | None = None,
    result: LoadResult | None = None,
    *,
    repetition: int = 1,
    warmup: bool = False,
    status: str = "ok",
    monitor: dict[str, Any] | MonitorSummary | None = None,
    layout: dict[str, Any] | RunLayout | None = None,
    seq: int = 1,
    **fields: Any,
) -> StoredRun:
    """A run of `point` (its levels) as the store returns it."""
    levels = point or {}
    return StoredRun.model_validate(
        {
            "id": seq,
            "experiment_id": 1,
            "seq": seq,
            "point": levels,
            "point_key": json.dumps(levels, sort_keys=True),
            "repetition": repetition,
            "warmup": warmup,
            "status": status,
            "started_unix": 0.0,
            "ended_unix": 1.0,
            "result": result if result is not None or status == "failed" else load_result(),
            "monitor": monitor,
            "layout": layout,
        }
        | fields
    )


def experiment(
    factors: dict[str, list[Any]] | None = None, plan: dict[str, Any] | None = None, **fields: Any
) -> StoredExperiment:
    """An experiment of these factors, as the store returns it."""
    return StoredExperiment.model_validate(
        {
            "id": 1,
            "name": "t",
            "plan_path": "t.toml",
            "plan_toml": "",
            "plan_digest": "d",
            "plan": {"plan": plan or {}, "factors": factors or {}},
            "host": {},
            "runs_planned": 0,
            "created_unix": 0.0,
            "corebench_version": "x",
        }
        | fields
    )


def as_json(record: BaseModel | None) -> Any:
    """A stored part as its JSON (what the store's column holds), for
    tests that read it key by key."""
    return None if record is None else record.model_dump(mode="json", by_alias=True)
