"""Stores written by every older schema (1, 2 and 3) open, read-only for a
report and migrated for writing, and report what the same runs report from
a current store. The old stores are made from a current one the way the
older corebench laid them out: the columns each later schema added dropped,
and (before schema 3) measured runs numbered from 0 after their warm-ups."""

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from corebench.analysis.analyse import analyse
from corebench.report.data import load
from corebench.report.md import Markdown
from corebench.store import SCHEMA_VERSION, Store, StoredExperiment, StoredRun
from tests.support.records import load_result, stored_run

# The runs table of schema 1 and 2 (2 added search_json), as they declared it.
OLD_RUNS = """
CREATE TABLE runs (id INTEGER PRIMARY KEY, experiment_id INTEGER NOT NULL REFERENCES experiments(id),
    seq INTEGER NOT NULL, point_key TEXT NOT NULL, point_json TEXT NOT NULL, repetition INTEGER NOT NULL,
    warmup INTEGER NOT NULL, status TEXT NOT NULL CHECK (status IN ('ok', 'failed')), error TEXT,
    started_unix REAL NOT NULL, ended_unix REAL NOT NULL, duration_s REAL, throughput_rps REAL, p50_us INTEGER,
    p99_us INTEGER, failed_requests INTEGER, client_bound INTEGER, layout_json TEXT, target_json TEXT,
    monitor_json TEXT, result_json TEXT{search}, UNIQUE (experiment_id, point_key, repetition))
"""
OLD_EXPERIMENTS = """
CREATE TABLE experiments (id INTEGER PRIMARY KEY, name TEXT NOT NULL, plan_path TEXT NOT NULL,
    plan_toml TEXT NOT NULL, plan_digest TEXT NOT NULL, plan_json TEXT NOT NULL, host_json TEXT NOT NULL,
    runs_planned INTEGER NOT NULL, created_unix REAL NOT NULL, corebench_version TEXT NOT NULL{calibration})
"""
EXPERIMENT_COLUMNS = (
    "id, name, plan_path, plan_toml, plan_digest, plan_json, host_json, runs_planned, created_unix, corebench_version"
)
COLUMNS_1 = (
    "id, experiment_id, seq, point_key, point_json, repetition, warmup, status, error, started_unix, ended_unix,"
    " duration_s, throughput_rps, p50_us, p99_us, failed_requests, client_bound, layout_json, target_json,"
    " monitor_json, result_json"
)


def _experiment() -> StoredExperiment:
    return StoredExperiment.model_validate(
        {
            "name": "old",
            "plan_path": "p.toml",
            "plan_toml": "",
            "plan_digest": "d",
            "plan": {"plan": {"experiment": {"repetitions": 3}}, "factors": {"cpus": [1, 2], "mpm": ["a", "b"]}},
            "host": {"cpu_model": "test", "cpus": 2, "kernel": "k"},
            "runs_planned": 16,
            "created_unix": 0.0,
            "corebench_version": "0.1.0",
        }
    )


def _runs(experiment_id: int) -> list[StoredRun]:
    """A warm-up and 3 measured runs at each of 4 points, with a failed run
    and a 503 share, as a real experiment stores them."""
    out = []
    seq = 0
    for cpus in (1, 2):
        for mpm, scale in (("a", 1.0), ("b", 1.4)):
            for rep in range(4):
                seq += 1
                ok = int(1000 * cpus * scale * (1 + 0.01 * rep))
                result = load_result(status_counts={200: ok, 503: 5}, p50_us=900 + rep, p99_us=2000 + 10 * rep)
                failed = cpus == 2 and mpm == "a" and rep == 3
                run = stored_run(
                    {"cpus": cpus, "mpm": mpm},
                    None if failed else result,
                    seq=seq,
                    repetition=rep,
                    warmup=rep == 0,
                    status="failed" if failed else "ok",
                    error="the target exited" if failed else None,
                    monitor={"samples": 10, "target_cpu": 0.9 * cpus, "generator_cpu": 0.2, "cores": []},
                    layout={"method": "affinity", "target_cpus": list(range(cpus)), "generator_cpus": [1]},
                )
                out.append(run.model_copy(update={"id": None, "experiment_id": experiment_id}))
    return out


def _current(path: Path) -> int:
    s = Store(path)
    try:
        exp_id = s.new_experiment(_experiment())
        for run in _runs(exp_id):
            s.add_run(run)
    finally:
        s.close()
    return exp_id


def _downgrade(path: Path, schema: int) -> None:
    """The store as schema `schema` wrote it."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=DELETE")
    db.execute("PRAGMA legacy_alter_table=ON")  # a renamed table's references stay as the old schema had them
    # The experiments of schema 3 had calibration_json, not yet baseline_json.
    kept = EXPERIMENT_COLUMNS + (", calibration_json" if schema == 3 else "")
    db.execute("ALTER TABLE experiments RENAME TO experiments_new")
    db.execute(OLD_EXPERIMENTS.format(calibration=", calibration_json TEXT" if schema == 3 else ""))
    db.execute(f"INSERT INTO experiments ({kept}) SELECT {kept} FROM experiments_new")
    db.execute("DROP TABLE experiments_new")
    if schema <= 2:
        kept = COLUMNS_1 + (", search_json" if schema == 2 else "")
        db.execute("ALTER TABLE runs RENAME TO runs_new")
        db.execute(OLD_RUNS.format(search=", search_json TEXT" if schema == 2 else ""))
        # Schema 2's numbering: 0-based over each point's runs, warm-ups first.
        warmups = "(SELECT count(*) FROM runs_new w WHERE w.point_key = r.point_key AND w.warmup)"
        renumbered = kept.replace("repetition", f"repetition - 1 + {warmups} AS repetition")
        db.execute(
            f"INSERT INTO runs ({kept}) SELECT {renumbered} FROM runs_new r WHERE NOT warmup"
            f" UNION ALL SELECT {kept} FROM runs_new WHERE warmup"
        )
        db.execute("DROP TABLE runs_new")
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(schema),))
    db.close()


@pytest.fixture(scope="module")
def current(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("stores") / "current.sqlite"
    _current(path)
    return path


@pytest.mark.parametrize("schema", [1, 2, 3])
def test_an_old_store_reports_as_a_current_one(current, tmp_path, schema):
    old = tmp_path / f"schema-{schema}.sqlite"
    shutil.copy(current, old)
    _downgrade(old, schema)
    columns = {r[1] for r in sqlite3.connect(old).execute("PRAGMA table_info(runs)")}
    assert ("search_json" in columns) == (schema >= 2) and ("round" in columns) == (schema >= 3)
    want = load(current)
    got = load(old)  # read-only: the file stays as it was
    assert got.verdicts == want.verdicts
    assert [(p.label(), p.goodput_rps.mean, p.error_share) for p in got.points] == [
        (p.label(), p.goodput_rps.mean, p.error_share) for p in want.points
    ]
    assert [(r.seq, r.repetition, r.warmup) for r in got.runs] == [(r.seq, r.repetition, r.warmup) for r in want.runs]
    assert Markdown().render(got) == Markdown().render(want)
    version = sqlite3.connect(old).execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    assert version == str(schema), "a report leaves an old store as it is"
    # Opened for writing, it is migrated, keeps every run, and takes new ones.
    s = Store(old)
    try:
        runs = s.runs(1)
        assert [r.model_dump(exclude={"stored_throughput_rps"}) for r in runs] == [
            r.model_dump(exclude={"stored_throughput_rps"}) for r in Store(current, read_only=True).runs(1)
        ]
        assert s.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
        s.add_run(runs[0].model_copy(update={"id": None, "seq": 99}))  # a warm-up made again
    finally:
        s.close()
    assert analyse(*_read(old)).verdicts == want.verdicts


def _read(path: Path) -> tuple[StoredExperiment, list[StoredRun]]:
    s = Store(path, read_only=True)
    try:
        exp = s.experiment(1)
        assert exp is not None
        return exp, [r for r in s.runs(1) if r.seq != 99]
    finally:
        s.close()


def test_a_damaged_run_is_named_not_a_traceback(current, tmp_path):
    broken = tmp_path / "broken.sqlite"
    shutil.copy(current, broken)
    db = sqlite3.connect(broken)
    db.execute("UPDATE runs SET result_json = '{\"schema\": 1}' WHERE seq = 2")
    db.commit()
    db.close()
    from corebench.errors import UsageError

    with pytest.raises(UsageError, match=r"run 2: its result_json cannot be read \(.*\); the store was written"):
        load(broken)


def test_a_result_older_than_its_figures_reads_with_what_their_absence_meant(current, tmp_path):
    """The engine added figures over time (linger, io, HTTP version, rate
    arrivals, an open loop's uncorrected latencies, the agents' lag...): a
    result stored before reads with the meaning each absence had then."""
    old = tmp_path / "old-results.sqlite"
    shutil.copy(current, old)
    db = sqlite3.connect(old)
    added = ("linger", "linger_percent", "linger_probes", "held_waits", "io", "http_version", "streams")
    added += ("rate", "think_s", "random_order", "seed", "schedule", "urls", "replay")
    for rid, text in db.execute("SELECT id, result_json FROM runs WHERE result_json IS NOT NULL").fetchall():
        doc = {k: v for k, v in json.loads(text).items() if k not in added}
        doc["latency_us"].pop("uncorrected")
        doc["rate"] = {"rps": 100.0, "end_rps": None, "ramp_s": None}  # before arrivals could be chosen
        db.execute("UPDATE runs SET result_json = ? WHERE id = ?", (json.dumps(doc), rid))
    db.commit()
    db.close()
    _, runs = _read(old)
    results = [r.result for r in runs if r.result is not None]
    assert len(results) == 15
    for r in results:
        assert (r.linger, r.io, r.http_version, r.streams, r.held_waits) == ("always", "epoll", "1.1", 1, 0)
        assert r.rate is not None and r.rate.arrivals == "uniform" and r.latency_us.uncorrected is None
        assert r.schedule is None and r.urls == [] and r.replay is None and r.agents == []
    assert Markdown().render(load(old)).count("\n") > 10
