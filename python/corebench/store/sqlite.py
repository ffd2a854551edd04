"""The store's SQLite access: records in, records out. WAL mode, and one
transaction per run, committed the moment the run ends, so nothing
measured is lost. Each JSON column is decoded once, here, into its record."""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from corebench.result import LoadResult
from corebench.store.migrate import migrate, renumbered, upgraded_result
from corebench.store.records import (
    Baseline,
    Capacity,
    Ceiling,
    HostFacts,
    MonitorSummary,
    PlanRecord,
    RunLayout,
    StoredExperiment,
    StoredRun,
    TargetInfo,
)
from corebench.store.schema import SCHEMA, SCHEMA_VERSION

_T = TypeVar("_T")


class StoreError(ValueError):
    """A file that is not a store, or a stored value that cannot be read."""


class StoreWriteError(Exception):
    """A run could not be written (a full disk, an I/O error): the
    machine's trouble, not the user's input; what was stored before stays."""


class Store:
    def __init__(self, path: Path, read_only: bool = False) -> None:
        """`read_only` for reports: a file that is not a store stays untouched."""
        self.path = path
        try:
            if read_only:
                self.db = _read_only(Path(path))
                self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                return
            _writable(Path(path))
            self.db = sqlite3.connect(path, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
            migrate(self.db)
            self.db.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{path}: not a corebench store ({e})") from None

    def close(self) -> None:
        self.db.close()

    def new_experiment(self, exp: StoredExperiment) -> int:
        cur = self.db.execute(
            "INSERT INTO experiments (name, plan_path, plan_toml, plan_digest, plan_json, host_json, runs_planned,"
            " created_unix, corebench_version) VALUES (?,?,?,?,?,?,?,?,?)",
            (
                exp.name,
                exp.plan_path,
                exp.plan_toml,
                exp.plan_digest,
                exp.plan.model_dump_json(),
                exp.host.model_dump_json(exclude_unset=True),
                exp.runs_planned,
                exp.created_unix or time.time(),
                exp.corebench_version,
            ),
        )
        assert cur.lastrowid is not None  # set by the INSERT
        return cur.lastrowid

    def set_calibration(self, experiment_id: int, calibration: Sequence[Ceiling]) -> None:
        text = json.dumps([c.model_dump(mode="json") for c in calibration])
        self.db.execute("UPDATE experiments SET calibration_json = ? WHERE id = ?", (text, experiment_id))

    def set_baseline(self, experiment_id: int, found: Baseline) -> None:
        self.db.execute(
            "UPDATE experiments SET baseline_json = ? WHERE id = ?", (found.model_dump_json(), experiment_id)
        )

    def latest_of_plan(self, plan_toml: str) -> StoredExperiment | None:
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

    def experiment(self, experiment_id: int) -> StoredExperiment | None:
        """An experiment: its plan, host facts and versions, and what was
        measured before its runs."""
        self.db.row_factory = sqlite3.Row
        try:
            row = self.db.execute("SELECT * FROM experiments WHERE id = ?", (experiment_id,)).fetchone()
        finally:
            self.db.row_factory = None
        return self._experiment(row) if row else None

    def sessions(self, experiment_id: int) -> Stored:
        """How far the experiment's sessions got: the last session (0 with no
        run), seq and round, and each point's last repetition, so that a new
        session numbers its runs on from them."""
        session, seq, rnd = self.db.execute(
            "SELECT coalesce(max(coalesce(session, 1)), 0), coalesce(max(seq), 0), coalesce(max(round), 0)"
            " FROM runs WHERE experiment_id = ?",
            (experiment_id,),
        ).fetchone()
        reps = dict(
            self.db.execute(
                "SELECT point_key, max(repetition) FROM runs WHERE experiment_id = ? GROUP BY point_key",
                (experiment_id,),
            ).fetchall()
        )
        return Stored(session, seq, rnd, reps)

    def done(self, experiment_id: int) -> set[tuple[str, int]]:
        """(point, repetition) of the measured runs stored, ok or failed."""
        rows = self.db.execute(
            "SELECT point_key, repetition FROM runs WHERE experiment_id = ? AND NOT warmup", (experiment_id,)
        )
        return {(k, r) for k, r in rows}

    def add_run(self, run: StoredRun, samples: Sequence[Mapping[str, object]] = ()) -> int:
        """One transaction: the run and its monitor's samples are stored
        together or not at all. ab's columns (rate, percentiles, failures)
        are kept beside the result, for SQL over the store."""
        try:
            return self._add_run(run, samples)
        except sqlite3.OperationalError as e:
            raise StoreWriteError(f"{self.path}: cannot store the run ({e})") from None

    def _add_run(self, run: StoredRun, samples: Sequence[Mapping[str, object]]) -> int:
        result = run.result
        with self.db:
            self.db.execute("BEGIN")
            cur = self.db.execute(
                "INSERT INTO runs (experiment_id, seq, point_key, point_json, repetition, warmup, status, error,"
                " started_unix, ended_unix, duration_s, throughput_rps, p50_us, p99_us, failed_requests, client_bound,"
                " layout_json, target_json, monitor_json, result_json, search_json, round, position, lower_bound,"
                " session) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run.experiment_id,
                    run.seq,
                    run.point_key,
                    json.dumps(run.point),
                    run.repetition,
                    int(run.warmup),
                    run.status,
                    run.error,
                    run.started_unix,
                    run.ended_unix,
                    run.duration_s,
                    run.throughput_rps,
                    run.p50_us,
                    run.p99_us,
                    result.failed if result is not None else None,
                    int(run.client_bound),
                    _json(run.layout),
                    _json(run.target),
                    _json(run.monitor),
                    result.model_dump_json(by_alias=True) if result is not None else None,
                    _json(run.search),
                    run.round,
                    run.position,
                    run.lower_bound,
                    run.session,
                ),
            )
            assert cur.lastrowid is not None  # set by the INSERT
            run_id = cur.lastrowid
            self.db.executemany(
                "INSERT INTO samples VALUES (?,?,?)", ((run_id, s["t_s"], json.dumps(s)) for s in samples)
            )
        return run_id

    def runs(self, experiment_id: int) -> list[StoredRun]:
        """The experiment's runs in the order they ran, warm-ups and failures included."""
        self.db.row_factory = sqlite3.Row
        try:
            rows = self.db.execute(
                "SELECT * FROM runs WHERE experiment_id = ? ORDER BY seq, id", (experiment_id,)
            ).fetchall()
        finally:
            self.db.row_factory = None
        out = [dict(r) for r in rows]
        if out and "round" not in out[0]:
            renumbered(out)  # an older store, opened read-only
        # Thousands of records kept alive at once would set off the cyclic
        # collector again and again over all of them (a 1,000-run store: 1.4 s
        # decoding instead of 0.35 s); records hold no cycles to collect.
        collecting = gc.isenabled()
        gc.disable()
        try:
            return [self._run(r) for r in out]
        finally:
            if collecting:
                gc.enable()

    def _run(self, row: Mapping[str, object]) -> StoredRun:
        where = f"run {row['id']}"
        # The plain columns as they are (pydantic reads 0/1 as a bool); the
        # rounds and lower bound are absent from a schema-2 store read as it is.
        plain = {k: row.get(k) for k in _PLAIN_RUN_COLUMNS}
        return StoredRun.model_validate(
            plain
            | {
                "point": json.loads(str(row["point_json"])),
                "layout": self._part(row, "layout_json", _LAYOUT, where),
                "target": self._part(row, "target_json", _TARGET, where),
                "monitor": self._part(row, "monitor_json", _MONITOR, where),
                "result": self._part(row, "result_json", _RESULT, where, upgraded_result),
                "search": self._part(row, "search_json", _SEARCH, where),
                "stored_throughput_rps": row["throughput_rps"],
            }
        )

    def _experiment(self, row: sqlite3.Row) -> StoredExperiment:
        where = f"experiment {row['id']}"
        fields = dict(row)
        return StoredExperiment(
            id=row["id"],
            name=row["name"],
            plan_path=row["plan_path"],
            plan_toml=row["plan_toml"],
            plan_digest=row["plan_digest"],
            plan=self._part(fields, "plan_json", _PLAN, where) or PlanRecord(),
            host=self._part(fields, "host_json", _HOST, where) or HostFacts(),
            runs_planned=row["runs_planned"],
            created_unix=row["created_unix"],
            corebench_version=row["corebench_version"],
            calibration=self._part(fields, "calibration_json", _CEILINGS, where),
            baseline=self._part(fields, "baseline_json", _BASELINE, where),
        )

    def _part(
        self,
        row: Mapping[str, object],
        column: str,
        kind: TypeAdapter[_T],
        where: str,
        upgrade: Callable[[dict[str, object]], dict[str, object]] | None = None,
    ) -> _T | None:
        """The column's record; one an older corebench wrote is read through
        `upgrade`, tried only when the current form does not fit (the fast
        path stays JSON straight into the record)."""
        text = row.get(column)
        if not text:
            return None
        try:
            try:
                return kind.validate_json(str(text))
            except ValidationError:
                if upgrade is None:
                    raise
                try:
                    doc = json.loads(str(text))
                except ValueError:
                    doc = None
                if not isinstance(doc, dict):
                    raise
                return kind.validate_python(upgrade(doc))
        except ValidationError as e:
            first = e.errors()[0]
            at = ".".join(map(str, first["loc"]))
            raise StoreError(
                f"{self.path}: {where}: its {column} cannot be read ({at}: {first['msg']}); the store was written "
                "by another corebench or damaged"
            ) from None


@dataclass(frozen=True)
class Stored:
    """Where an experiment's stored runs end (`Store.sessions`)."""

    session: int
    seq: int
    round: int
    repetitions: dict[str, int]


_PLAIN_RUN_COLUMNS = (
    "id",
    "experiment_id",
    "seq",
    "point_key",
    "repetition",
    "warmup",
    "status",
    "error",
    "started_unix",
    "ended_unix",
    "round",
    "position",
    "lower_bound",
    "session",
)
_LAYOUT = TypeAdapter(RunLayout)
_TARGET = TypeAdapter(TargetInfo)
_MONITOR = TypeAdapter(MonitorSummary)
_RESULT = TypeAdapter(LoadResult)
_SEARCH = TypeAdapter(Capacity)
_PLAN = TypeAdapter(PlanRecord)
_HOST = TypeAdapter(HostFacts)
_CEILINGS = TypeAdapter(list[Ceiling])
_BASELINE = TypeAdapter(Baseline)


def _read_only(path: Path) -> sqlite3.Connection:
    """A store opened for reading. A store in WAL mode needs its -shm file,
    which SQLite makes in the store's folder: in a folder this user cannot
    write, it is opened immutable, which is safe only while its
    write-ahead log holds nothing not yet in the file; else it says so."""
    if not os.access(path, os.R_OK):
        raise StoreError(f"{path}: not readable by this user; give a store you may read")
    uri = path.resolve().as_uri()
    if os.access(path.parent, os.W_OK) or Path(f"{path}-shm").exists():
        return sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None)
    wal = Path(f"{path}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise StoreError(
            f"{path}: its folder is not writable by this user and its write-ahead log ({wal.name}) holds runs not "
            "yet in the file, which a reader here cannot see: copy the store with its -wal file to a folder you may "
            "write, or report it once as its owner"
        )
    return sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, isolation_level=None)


def _writable(path: Path) -> None:
    """Why a store cannot be written there, said as that (SQLite says
    "unable to open database file" for all of them)."""
    folder = path.parent
    if not folder.is_dir():
        raise StoreError(f"{path}: no such folder {folder}; create it or give the store another path")
    if path.exists() and not path.is_file():
        raise StoreError(f"{path}: not a file; give the store a file's path")
    if not os.access(path if path.exists() else folder, os.W_OK):
        raise StoreError(f"{path}: not writable by this user; give the store a writable path")


def _json(value: BaseModel | None) -> str | None:
    return None if value is None else value.model_dump_json()
