"""The runs as a flat table: for the report's download, CSV and JSON export."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from corebench.analysis.points import as_logged, failed_requests, goodput_rps
from corebench.report.data import ReportData

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


def rows(d: ReportData) -> list[dict[str, Any]]:
    """One row per run, sorted by factor levels (in the plan's order), then
    round and order of running."""
    factors = list(d.factors)
    out = []
    for r in sorted(d.runs, key=lambda r: (_levels_order(d, json.loads(r["point_json"])), r["seq"], r["id"])):
        monitor = json.loads(r["monitor_json"]) if r["monitor_json"] else {}
        levels = json.loads(r["point_json"])
        row = {k: r.get(k) for k in COLUMNS if k in r}
        row.update({k: monitor.get(k) for k in MONITORED})
        if r.get("result_json"):
            result = json.loads(r["result_json"])
            row["goodput_rps"] = goodput_rps(result)
            row["unsuccessful_responses"] = failed_requests(result) + as_logged(result) - int(result.get("failed", 0))
            row["as_logged"] = as_logged(result)
        row.update({f: levels.get(f) for f in factors})
        out.append(row)
    return out


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
        {"experiment": {k: v for k, v in d.experiment.items() if k != "plan_json"}, "host": d.host, "runs": rows(d)},
        indent=1,
        default=str,
    )


def _levels_order(d: ReportData, levels: dict[str, Any]) -> tuple[int, ...]:
    return tuple(
        d.factors[f].index(levels.get(f)) if levels.get(f) in d.factors[f] else len(d.factors[f]) for f in d.factors
    )
