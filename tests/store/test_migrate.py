"""A store written by schema 2 opens in schema 3 with every figure kept:
measured runs renumbered from 1, warm-ups 0, and only measured runs unique."""

import sqlite3

import pytest

from corebench.store import SCHEMA_VERSION, Store, StoredRun

V2 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('schema_version', '2');
CREATE TABLE experiments (id INTEGER PRIMARY KEY, name TEXT NOT NULL, plan_path TEXT NOT NULL,
    plan_toml TEXT NOT NULL, plan_digest TEXT NOT NULL, plan_json TEXT NOT NULL, host_json TEXT NOT NULL,
    runs_planned INTEGER NOT NULL, created_unix REAL NOT NULL, corebench_version TEXT NOT NULL);
CREATE TABLE runs (id INTEGER PRIMARY KEY, experiment_id INTEGER NOT NULL REFERENCES experiments(id),
    seq INTEGER NOT NULL, point_key TEXT NOT NULL, point_json TEXT NOT NULL, repetition INTEGER NOT NULL,
    warmup INTEGER NOT NULL, status TEXT NOT NULL CHECK (status IN ('ok', 'failed')), error TEXT,
    started_unix REAL NOT NULL, ended_unix REAL NOT NULL, duration_s REAL, throughput_rps REAL, p50_us INTEGER,
    p99_us INTEGER, failed_requests INTEGER, client_bound INTEGER, layout_json TEXT, target_json TEXT,
    monitor_json TEXT, result_json TEXT, search_json TEXT, UNIQUE (experiment_id, point_key, repetition));
CREATE TABLE samples (run_id INTEGER NOT NULL REFERENCES runs(id), t_s REAL NOT NULL, sample_json TEXT NOT NULL);
INSERT INTO experiments VALUES (1, 'e', 'p.toml', '', 'd', '{}', '{}', 6, 0, '0.1');
"""


def test_schema_2_is_renumbered_and_keeps_its_figures(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(V2)
    seq = 0
    for key in ("a", "b"):
        for rep in range(3):  # the old numbering: 0-based, warm-up first
            seq += 1
            db.execute(
                "INSERT INTO runs (experiment_id, seq, point_key, point_json, repetition, warmup, status,"
                " started_unix, ended_unix, throughput_rps) VALUES (1, ?, ?, '{}', ?, ?, 'ok', 0, 1, ?)",
                (seq, key, rep, int(rep == 0), 100.0 * seq),
            )
            db.execute("INSERT INTO samples VALUES (?, 0.5, '{}')", (seq,))
    db.commit()
    db.close()
    read_only = Store(path, read_only=True)  # a report of an old store leaves it as it is
    assert [(r.repetition, r.warmup) for r in read_only.runs(1)] == [(0, True), (1, False), (2, False)] * 2
    read_only.close()
    s = Store(path)
    rows = s.runs(1)
    assert [(r.point_key, r.repetition, r.warmup) for r in rows] == [
        ("a", 0, True),
        ("a", 1, False),
        ("a", 2, False),
        ("b", 0, True),
        ("b", 1, False),
        ("b", 2, False),
    ]
    assert [r.throughput_rps for r in rows] == [100.0 * i for i in range(1, 7)]
    assert all(r.round is None and r.lower_bound is None for r in rows)
    assert s.done(1) == {("a", 1), ("a", 2), ("b", 1), ("b", 2)}
    assert s.db.execute("SELECT count(*) FROM samples").fetchone()[0] == 6
    assert s.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    common = dict(experiment_id=1, point={}, status="ok", started_unix=0, ended_unix=1)
    s.add_run(StoredRun(seq=1, point_key="a", repetition=0, warmup=True, **common))  # a warm-up made again
    with pytest.raises(sqlite3.IntegrityError):
        s.add_run(StoredRun(seq=9, point_key="a", repetition=2, warmup=False, **common))
    s.close()
    old = Store(path).experiment(1)
    assert old is not None and old.calibration is None and old.baseline is None
