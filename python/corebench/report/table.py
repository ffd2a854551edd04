"""The runs as a flat table: for the report's download, CSV and JSON export."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping

from corebench.report.data import ReportData
from corebench.store import Level, StoredRun

Row = dict[str, object]

COLUMNS = [
    "experiment_id",
    "seq",
    "round",  # of an interleaved schedule, and the run's place in it
    "position",
    "repetition",
    "warmup",
    "lower_bound",  # why the run understates the target, when it does
    "status",
    "error",
    "duration_s",
    "throughput_rps",  # every response, as ab counts it
    "goodput_rps",  # successful (2xx, 3xx) responses: what the analysis calls throughput
    "p50_us",
    "p99_us",
    "failed_requests",
    "unsuccessful_responses",  # 4xx and 5xx
    "as_logged",  # of those, a replay's with the status its log recorded: not failures
    "client_bound",
    "target_cpu",
    "target_system_share",  # the kernel's share of the target's CPU
    "target_write_bps",  # bytes/s the target's processes made the storage write
    "target_io_wait",  # share of the run some task of the target waited on I/O (its cgroup's PSI)
    "disk_write_bps",  # bytes/s written to the filesystem image's device
    "disk_busy",  # share of the run the device had I/O in flight
    "generator_cpu",
    "started_unix",
]


MONITORED = (
    "target_cpu",
    "target_system_share",
    "target_write_bps",
    "target_io_wait",
    "disk_write_bps",
    "disk_busy",
    "generator_cpu",
)


def rows(d: ReportData) -> list[Row]:
    """One row per run, sorted by factor levels (in the plan's order), then
    round and order of running."""
    return [_row(d, r) for r in sorted(d.runs, key=lambda r: (_levels_order(d, r.point), r.seq, r.id or 0))]


def _row(d: ReportData, r: StoredRun) -> Row:
    result = r.result
    row: Row = {
        "experiment_id": r.experiment_id,
        "seq": r.seq,
        "round": r.round,
        "position": r.position,
        "repetition": r.repetition,
        "warmup": int(r.warmup),
        "lower_bound": r.lower_bound,
        "status": r.status,
        "error": r.error,
        "duration_s": r.duration_s,
        "throughput_rps": r.throughput_rps,
        "p50_us": r.p50_us,
        "p99_us": r.p99_us,
        "failed_requests": result.failed if result is not None else None,
        "client_bound": int(r.client_bound),
        "started_unix": r.started_unix,
    }
    monitor = r.monitor.model_dump() if r.monitor is not None else {}
    row.update({k: monitor.get(k) for k in MONITORED})
    if result is not None:
        row["goodput_rps"] = result.goodput_rps
        row["unsuccessful_responses"] = result.unsuccessful
        row["as_logged"] = result.as_logged
    row.update({f: r.point.get(f) for f in d.factors})
    return row


def columns(d: ReportData) -> list[str]:
    return list(d.factors) + COLUMNS


def to_csv(d: ReportData) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns(d), extrasaction="ignore")
    w.writeheader()
    w.writerows(rows(d))
    return buf.getvalue()


def to_json(d: ReportData) -> str:
    return json.dumps(
        {
            "experiment": d.experiment.model_dump(mode="json", exclude={"plan", "host"}),
            "host": d.host.shown(),
            "runs": rows(d),
        },
        indent=1,
        default=str,
    )


def _levels_order(d: ReportData, levels: Mapping[str, Level]) -> tuple[int, ...]:
    return tuple(_index(d.factors[f], levels.get(f)) for f in d.factors)


def _index(levels: list[Level], level: Level | None) -> int:
    """Where a run's level stands in its factor's; unlisted ones last."""
    return levels.index(level) if level is not None and level in levels else len(levels)
