"""The store's tables. Schema 5; what each version added is in
`migrate` (an older store gets it when opened for writing)."""

SCHEMA_VERSION = 5
RUNS = """
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
    lower_bound TEXT,
    -- The session (each invocation of corebench run: 1, 2, ...); NULL in older stores, the first (schema 5).
    session INTEGER
);
"""
# A measured run is stored once; a warm-up is made again after each start
# (a resumed visit warms its target up anew), so it may repeat its seq.
MEASURED_ONCE = (
    "CREATE UNIQUE INDEX IF NOT EXISTS runs_measured ON runs(experiment_id, point_key, repetition) WHERE NOT warmup"
)
SCHEMA = (
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
    + RUNS.format(name="IF NOT EXISTS runs")
    + """CREATE TABLE IF NOT EXISTS samples (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    t_s REAL NOT NULL,
    sample_json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS samples_run ON samples(run_id);
"""
)
