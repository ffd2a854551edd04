"""Reading a table of measurements for `corebench fit`: CSV, TSV or JSON with
named columns; the N and X columns chosen by name (`--x`, `--y`) or found by
the names such tables use; an optional clock column (GHz or MHz) and an
optional column of labels that groups the rows (one machine per group)."""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corebench import files
from corebench.errors import UsageError

# Column names that mean N (cores or load) and X (throughput), compared in
# lower case with everything but letters and digits removed.
X_NAMES = ("cores", "cpus", "cpu", "vcpus", "n", "processors", "procs", "load", "users", "concurrency", "clients")
Y_NAMES = ("rps", "throughput", "x", "reqs", "reqpersec", "requestspersecond", "tps", "ops", "opspersec")
# Mean response time with its unit: with no throughput column, X = N / R
# (Little's law for a closed loop without think time), as usl4j does.
LATENCY_UNITS = {"ms": 1e-3, "us": 1e-6, "s": 1.0}
LATENCY_NAMES = ("latency", "responsetime", "r", "meanlatency", "rt")
GHZ_NAMES = ("ghz", "clockghz")
MHZ_NAMES = ("mhz", "clockmhz")


@dataclass
class Row:
    line: int
    n: float
    x: float
    ghz: float | None = None
    group: str = ""


@dataclass
class Table:
    path: Path
    x: str
    y: str
    clock: str | None
    by: str | None
    rows: list[Row] = field(default_factory=list)
    # X = N / R from a latency column, when the table has no throughput.
    latency_scale: float | None = None

    def groups(self) -> dict[str, list[Row]]:
        out: dict[str, list[Row]] = {}
        for r in self.rows:
            out.setdefault(r.group, []).append(r)
        return out


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _records(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """(column names, [(line, cells)]); a table without a header row gets
    the names 1, 2, ... and its first two columns are N and X."""
    try:
        text = files.read_text(path, files.TABLE_BYTES)
    except files.TooLarge as e:
        raise UsageError(f"{path}: the table is {e}; fit a summary of it (one row per N)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{path}: cannot read the table ({getattr(e, 'strerror', None) or e})") from None
    if path.suffix.lower() == ".json":
        return _json_records(path, text)
    lines = [(no, line) for no, line in enumerate(text.splitlines(), 1) if line.strip() and not line.startswith("#")]
    if not lines:
        raise UsageError(f"{path}: the table is empty")
    delimiter = "\t" if path.suffix.lower() == ".tsv" or "\t" in lines[0][1] else ("," if "," in lines[0][1] else ";")
    rows = [(no, [c.strip() for c in next(csv.reader([line], delimiter=delimiter))]) for no, line in lines]
    head = rows[0][1]
    if all(_number(c) is not None for c in head):
        return [str(i) for i in range(1, len(head) + 1)], rows
    return head, rows[1:]


def _json_records(path: Path, text: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}:{e.lineno}: not JSON ({e.msg})") from None
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise UsageError(f'{path}: give a JSON list of objects, like [{{"cores": 1, "rps": 332}}, ...]')
    names: list[str] = []
    for d in data:
        names += [k for k in d if k not in names]
    return names, [(i, [_cell(d.get(k)) for k in names]) for i, d in enumerate(data, 1)]


def _cell(v: Any) -> str:
    return "" if v is None else str(v)


def _number(text: str) -> float | None:
    """A finite number, or None: "nan" and "inf" are no measurement."""
    try:
        x = float(text)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def _pick(names: list[str], asked: str | None, known: tuple[str, ...], what: str, flag: str, path: Path) -> str:
    if asked is not None:
        if asked not in names:
            raise UsageError(f"{flag} {asked}: {path} has no such column; its columns: {', '.join(names)}")
        return asked
    for want in known:
        for name in names:
            if _key(name) == want:
                return name
    raise UsageError(
        f"{path}: no column is {what} (looked for {', '.join(known[:6])}, ...); its columns: "
        f"{', '.join(names)}; choose one with {flag} NAME"
    )


def _latency_column(names: list[str]) -> tuple[str, float] | None:
    """A mean-latency column whose name carries its unit: latency_ms, r_us..."""
    for name in names:
        key = _key(name)
        for unit, scale in LATENCY_UNITS.items():
            if key.endswith(unit) and key[: -len(unit)] in LATENCY_NAMES:
                return name, scale
    return None


def _row(table: Table, no: int, cells: list[str], ix: int, iy: int, ic: int | None) -> Row:
    """One data row: N, the throughput (N / R from a latency column), the clock in GHz."""
    xn, yn, clock, path = table.x, table.y, table.clock, table.path
    n, v = _number(cells[ix]), _number(cells[iy])
    if n is None or v is None:
        raise UsageError(f"{path}:{no}: {xn} = {cells[ix]!r}, {yn} = {cells[iy]!r}: give numbers")
    if n <= 0 or v < 0:
        raise UsageError(f"{path}:{no}: {xn} must be positive and {yn} not negative")
    ghz = _number(cells[ic]) if ic is not None else None
    if ghz is not None and clock and _key(clock) in MHZ_NAMES:
        ghz /= 1000
    if table.latency_scale is not None:
        if v <= 0:
            raise UsageError(f"{path}:{no}: {yn} must be positive to give a throughput N / R")
        v = n / (v * table.latency_scale)
    return Row(no, n, v, ghz)


def read_table(path: Path, x: str | None = None, y: str | None = None, by: str | None = None) -> Table:
    names, records = _records(path)
    if names[0] == "1":  # no header: N and X are the first two columns
        x, y = x or "1", y or "2"
        if len(names) < 2:
            raise UsageError(f"{path}: a row needs two columns: N (cores or load) and throughput")
    xn = _pick(names, x, X_NAMES, "N (cores or load)", "--x", path)
    latency = None if y is not None else _latency_column(names)
    yn = latency[0] if latency and not any(_key(n) in Y_NAMES for n in names) else None
    yn = yn or _pick(names, y, Y_NAMES, "the throughput", "--y", path)
    clock = next((n for n in names if _key(n) in GHZ_NAMES + MHZ_NAMES), None)
    if by is not None and by not in names:
        raise UsageError(f"--by {by}: {path} has no such column; its columns: {', '.join(names)}")
    table = Table(path, xn, yn, clock, by)
    if latency and yn == latency[0]:
        table.latency_scale = latency[1]
    ix, iy = names.index(xn), names.index(yn)
    ic = names.index(clock) if clock else None
    table.rows = [_row(table, no, cells + [""] * (len(names) - len(cells)), ix, iy, ic) for no, cells in records]
    if table.by is None:
        # A column of labels (a machine, a configuration) groups the rows.
        table.by = next(
            (
                name
                for i, name in enumerate(names)
                if i not in (ix, iy, ic) and any(_number(c[i]) is None and c[i] for _, c in records if i < len(c))
            ),
            None,
        )
    if table.by is not None:
        ib = names.index(table.by)
        for r, (_, cells) in zip(table.rows, records, strict=True):
            r.group = cells[ib] if ib < len(cells) else ""
    if not table.rows:
        raise UsageError(f"{path}: no data rows under the header ({', '.join(names)})")
    return table
