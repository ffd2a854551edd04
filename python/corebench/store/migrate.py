"""Older stores, brought to the current schema. What each version added:

- 2: `runs.search_json`, a capacity search's steps and answer.
- 3: `runs.round`, `runs.position` (the schedule) and `runs.lower_bound`;
  measured runs numbered from 1 and warm-ups 0 (before: 0-based with the
  warm-ups first), and only measured runs unique (warm-ups follow every
  start); `experiments.calibration_json`.
- 4: `experiments.baseline_json`.
- 5: `runs.session`, the invocation of `corebench run` that made the run
  (NULL before: the first).

A store opened for writing is migrated in place; one opened read-only (a
report) is read as it is, and its rows renumbered in memory."""

from __future__ import annotations

import sqlite3

from corebench.store.schema import MEASURED_ONCE, RUNS, SCHEMA_VERSION


def migrate(db: sqlite3.Connection) -> None:
    """Adds what later schemas added; the runs keep every figure they had."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
    if "search_json" not in columns:
        db.execute("ALTER TABLE runs ADD COLUMN search_json TEXT")
    if "round" not in columns:
        _renumber(db)
    if "session" not in {row[1] for row in db.execute("PRAGMA table_info(runs)")}:
        db.execute("ALTER TABLE runs ADD COLUMN session INTEGER")
    experiments = {row[1] for row in db.execute("PRAGMA table_info(experiments)")}
    for column in ("calibration_json", "baseline_json"):
        if column not in experiments:
            db.execute(f"ALTER TABLE experiments ADD COLUMN {column} TEXT")
    db.execute(MEASURED_ONCE)
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))


def renumbered(rows: list[dict[str, object]]) -> None:
    """Schema 2's numbering as schema 3's, in memory (see _renumber), for a
    store opened read-only."""
    warmups: dict[object, int] = {}
    for r in rows:
        warmups[r["point_key"]] = warmups.get(r["point_key"], 0) + int(bool(r["warmup"]))
    for r in rows:
        repetition = r["repetition"]
        assert isinstance(repetition, int)  # an INTEGER NOT NULL column
        r["repetition"] = 0 if r["warmup"] else repetition + 1 - warmups[r["point_key"]]


def _renumber(db: sqlite3.Connection) -> None:
    """Schema 2 -> 3: measured runs are numbered from 1 and warm-ups 0, and
    only measured runs are unique (warm-ups now follow every start). SQLite
    drops a UNIQUE constraint only by rebuilding the table."""
    kept = (
        "id, experiment_id, seq, point_key, point_json, warmup, status, error, started_unix, ended_unix,"
        " duration_s, throughput_rps, p50_us, p99_us, failed_requests, client_bound, layout_json, target_json,"
        " monitor_json, result_json, search_json"
    )
    with db:
        db.execute("BEGIN")
        db.execute(RUNS.format(name="runs_new"))
        db.execute(
            f"INSERT INTO runs_new ({kept}, repetition) SELECT {kept},"
            " CASE WHEN warmup THEN 0 ELSE repetition + 1 - (SELECT count(*) FROM runs w"
            " WHERE w.experiment_id = r.experiment_id AND w.point_key = r.point_key AND w.warmup) END"
            " FROM runs r"
        )
        db.execute("DROP TABLE runs")
        db.execute("ALTER TABLE runs_new RENAME TO runs")


# What a result stored by an older corebench lacks, and what its absence
# meant then; the engine's figures are listed whole in
# crates/engine/src/result.rs. Filled in when read, never written back.
_RESULT_ADDED: dict[str, object] = {
    # Before `linger = "auto"`, waits held responses wherever the percent was not 0.
    "linger": "always",
    "linger_percent": 0,
    "linger_probes": {"probes": 0, "held": 0},
    # Not counted then; only `corebench load`'s own output reads it.
    "held_waits": 0,
    # Before io_uring, every load ran on epoll; before HTTP/2, on HTTP/1.1.
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
# Before arrivals could be chosen, a rate's requests were evenly spaced.
_RATE_ADDED: dict[str, object] = {"arrivals": "uniform"}
_SCHEDULE_ADDED: dict[str, object] = {"peak_in_flight": 0, "mean_in_flight": 0.0}
# Closed-loop results had no uncorrected latencies: the open loop's alone.
_LATENCIES_ADDED: dict[str, object] = {"uncorrected": None}
# Before an agent's lag and its unsuccessful responses were measured.
_AGENT_ADDED: dict[str, object] = {
    "start_lag_s": 0.0,
    "io": "epoll",
    "linger_probes": {"probes": 0, "held": 0},
    "unsuccessful": 0,
}


def upgraded_result(doc: dict[str, object]) -> dict[str, object]:
    """An older corebench's result (decoded JSON) with the figures added
    since at what their absence meant then."""
    out = _RESULT_ADDED | doc
    for key, added in (("rate", _RATE_ADDED), ("schedule", _SCHEDULE_ADDED), ("latency_us", _LATENCIES_ADDED)):
        part = out.get(key)
        if isinstance(part, dict):
            out[key] = added | part
    agents = out.get("agents")
    if isinstance(agents, list):
        out["agents"] = [_AGENT_ADDED | a if isinstance(a, dict) else a for a in agents]
    return out
