"""The store: SQLite in WAL mode, one row per run committed the moment the
run ends, so nothing measured is lost; everything a report shows can be
derived from it alone (DESIGN.md)."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 4
_RUNS = """
CREATE TABLE {name} (
    id INTEGER PRIMARY KEY,
    experiment_id INTEGER NOT NULL REFERENCES experiments(id),
    seq INTEGER NOT NULL,
    point_key TEXT NOT NULL,
    point_json TEXT NOT NULL,
    -- 1, 2, ... for measured runs; 0 for warm-ups (schema 3; before, 0-based with warm-ups first).
    repetition INTEGER NOT NULL,
    warmup INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    error TEXT,
    started_unix REAL NOT NULL,
    ended_unix REAL NOT NULL,
    duration_s REAL,
    throughput_rps REAL,
    p50_us INTEGER,
    p99_us INTEGER,
    failed_requests INTEGER,
    client_bound INTEGER,
    layout_json TEXT,
    target_json TEXT,
    monitor_json TEXT,
    result_json TEXT,
    -- A capacity search's steps and answer, when the run was one (schema 2).
    search_json TEXT,
    -- The round of the schedule and the run's place in it; NULL in older stores (schema 3).
    round INTEGER,
    position INTEGER,
    -- Why the run's figures understate the target, when they do (schema 3).
    lower_bound TEXT
);
"""
# A measured run is stored once; a warm-up is made again after each start
# (a resumed visit warms its target up anew), so it may repeat its seq.
_MEASURED_ONCE = (
    "CREATE UNIQUE INDEX IF NOT EXISTS runs_measured ON runs(experiment_id, point_key, repetition) WHERE NOT warmup"
)
_SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS experiments (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    plan_path TEXT NOT NULL,
    plan_toml TEXT NOT NULL,
    plan_digest TEXT NOT NULL,
    plan_json TEXT NOT NULL,
    host_json TEXT NOT NULL,
    runs_planned INTEGER NOT NULL,
    created_unix REAL NOT NULL,
    corebench_version TEXT NOT NULL,
    -- The load generator's own ceiling, measured before the first run (schema 3).
    calibration_json TEXT,
    -- The CPU baseline (hackbench) at each cpus level (schema 4).
    baseline_json TEXT
);
"""
    + _RUNS.format(name="IF NOT EXISTS runs")
    + """CREATE TABLE IF NOT EXISTS samples (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    t_s REAL NOT NULL,
    sample_json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS samples_run ON samples(run_id);
"""
)


class Store:
    def __init__(self, path: Path, read_only: bool = False) -> None:
        """`read_only` for reports: a file that is not a store stays untouched."""
        self.path = path
        try:
            if read_only:
                self.db = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
                self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                return
            self.db = sqlite3.connect(path, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(_SCHEMA)
            _migrate(self.db)
            self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        except sqlite3.DatabaseError as e:
            raise ValueError(f"{path}: not a corebench store ({e})") from None

    def close(self) -> None:
        self.db.close()

    def new_experiment(
        self,
        *,
        name: str,
        plan_path: str,
        plan_toml: str,
        digest: str,
        plan_json: dict[str, Any],
        host: dict[str, Any],
        runs_planned: int,
        version: str,
    ) -> int:
        cur = self.db.execute(
            "INSERT INTO experiments (name, plan_path, plan_toml, plan_digest, plan_json, host_json, runs_planned,"
            " created_unix, corebench_version) VALUES (?,?,?,?,?,?,?,?,?)",
            (
                name,
                plan_path,
                plan_toml,
                digest,
                json.dumps(plan_json),
                json.dumps(host),
                runs_planned,
                time.time(),
                version,
            ),
        )
        assert cur.lastrowid is not None  # set by the INSERT
        return cur.lastrowid

    def set_calibration(self, experiment_id: int, calibration: list[dict[str, Any]]) -> None:
        self.db.execute(
            "UPDATE experiments SET calibration_json = ? WHERE id = ?", (json.dumps(calibration), experiment_id)
        )

    def set_baseline(self, experiment_id: int, found: dict[str, Any]) -> None:
        self.db.execute("UPDATE experiments SET baseline_json = ? WHERE id = ?", (json.dumps(found), experiment_id))

    def latest_of_plan(self, plan_toml: str) -> dict[str, Any] | None:
        """The last experiment run from this plan's exact text, with any overrides."""
        row = self.db.execute(
            "SELECT id FROM experiments WHERE plan_toml = ? ORDER BY id DESC LIMIT 1", (plan_toml,)
        ).fetchone()
        return self.experiment(row[0]) if row else None

    def latest_experiment(self, digest: str) -> int | None:
        row = self.db.execute(
            "SELECT id FROM experiments WHERE plan_digest = ? ORDER BY id DESC LIMIT 1", (digest,)
        ).fetchone()
        return row[0] if row else None

    def newest_experiment(self) -> int | None:
        """The last experiment stored, of any plan."""
        row = self.db.execute("SELECT max(id) FROM experiments").fetchone()
        return row[0] if row else None

    def experiment(self, experiment_id: int) -> dict[str, Any] | None:
        """An experiment's row: its plan, host facts and versions."""
        self.db.row_factory = sqlite3.Row
        try:
            row = self.db.execute("SELECT * FROM experiments WHERE id = ?", (experiment_id,)).fetchone()
            return dict(row) if row else None
        finally:
            self.db.row_factory = None

    def done(self, experiment_id: int) -> set[tuple[str, int]]:
        """(point, repetition) of the measured runs stored, ok or failed."""
        rows = self.db.execute(
            "SELECT point_key, repetition FROM runs WHERE experiment_id = ? AND NOT warmup", (experiment_id,)
        )
        return {(k, r) for k, r in rows}

    def add_run(
        self,
        experiment_id: int,
        *,
        seq: int,
        point: dict[str, Any],
        point_key: str,
        repetition: int,
        warmup: bool,
        status: str,
        error: str | None,
        started: float,
        ended: float,
        layout: dict[str, Any] | None,
        target: dict[str, Any] | None,
        monitor: dict[str, Any] | None,
        samples: list[dict[str, Any]],
        result: dict[str, Any] | None,
        search: dict[str, Any] | None = None,
        round_no: int | None = None,
        position: int | None = None,
        lower_bound: str | None = None,
    ) -> int:
        """One transaction: the run and its samples are stored together or not at all."""
        total = (result or {}).get("latency_us", {}).get("total", {})
        pct = {p["percentile"]: p["value_us"] for p in total.get("percentiles", [])}
        with self.db:
            self.db.execute("BEGIN")
            cur = self.db.execute(
                "INSERT INTO runs (experiment_id, seq, point_key, point_json, repetition, warmup, status, error,"
                " started_unix, ended_unix, duration_s, throughput_rps, p50_us, p99_us, failed_requests, client_bound,"
                " layout_json, target_json, monitor_json, result_json, search_json, round, position, lower_bound)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    experiment_id,
                    seq,
                    point_key,
                    json.dumps(point),
                    repetition,
                    int(warmup),
                    status,
                    error,
                    started,
                    ended,
                    (result or {}).get("duration_s"),
                    (result or {}).get("throughput_rps"),
                    pct.get(50.0),
                    pct.get(99.0),
                    (result or {}).get("failed"),
                    int(bool((monitor or {}).get("client_bound"))),
                    _json(layout),
                    _json(target),
                    _json(monitor),
                    _json(result),
                    _json(search),
                    round_no,
                    position,
                    lower_bound,
                ),
            )
            assert cur.lastrowid is not None  # set by the INSERT
            run_id = cur.lastrowid
            self.db.executemany(
                "INSERT INTO samples VALUES (?,?,?)", ((run_id, s["t_s"], json.dumps(s)) for s in samples)
            )
        return run_id

    def runs(self, experiment_id: int) -> list[dict[str, Any]]:
        self.db.row_factory = sqlite3.Row
        try:
            rows = self.db.execute(
                "SELECT * FROM runs WHERE experiment_id = ? ORDER BY seq, id", (experiment_id,)
            ).fetchall()
            out = [dict(r) for r in rows]
        finally:
            self.db.row_factory = None
        if out and "round" not in out[0]:
            _renumbered(out)  # an older store, opened read-only
        return out


def _renumbered(rows: list[dict[str, Any]]) -> None:
    """Schema 2's numbering as schema 3's, in memory (see _renumber)."""
    warmups: dict[str, int] = {}
    for r in rows:
        warmups[r["point_key"]] = warmups.get(r["point_key"], 0) + int(bool(r["warmup"]))
    for r in rows:
        r["repetition"] = 0 if r["warmup"] else r["repetition"] + 1 - warmups[r["point_key"]]
        r.update({"round": None, "position": None, "lower_bound": None})


def _migrate(db: sqlite3.Connection) -> None:
    """A store written by an older corebench gets the columns added since;
    its runs keep every figure they had."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
    if "search_json" not in columns:
        db.execute("ALTER TABLE runs ADD COLUMN search_json TEXT")
    if "round" not in columns:
        _renumber(db)
    experiments = {row[1] for row in db.execute("PRAGMA table_info(experiments)")}
    for column in ("calibration_json", "baseline_json"):
        if column not in experiments:
            db.execute(f"ALTER TABLE experiments ADD COLUMN {column} TEXT")
    db.execute(_MEASURED_ONCE)
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))


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
        db.execute(_RUNS.format(name="runs_new"))
        db.execute(
            f"INSERT INTO runs_new ({kept}, repetition) SELECT {kept},"
            " CASE WHEN warmup THEN 0 ELSE repetition + 1 - (SELECT count(*) FROM runs w"
            " WHERE w.experiment_id = r.experiment_id AND w.point_key = r.point_key AND w.warmup) END"
            " FROM runs r"
        )
        db.execute("DROP TABLE runs")
        db.execute("ALTER TABLE runs_new RENAME TO runs")


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value)
