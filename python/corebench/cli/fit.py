"""`corebench fit TABLE.csv`: the Universal Scalability Law and Amdahl's law
fitted to any two-column table of (cores or load, throughput)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import typer

from corebench.cli import app
from corebench.errors import UsageError


def read_table(path: Path) -> tuple[list[float], list[float]]:
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{path}: cannot read the table ({getattr(e, 'strerror', None) or e})") from None
    ns: list[float] = []
    xs: list[float] = []
    for no, row in enumerate(csv.reader(lines), 1):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        if len(row) < 2:
            raise UsageError(f"{path}:{no}: a row needs two columns: N (cores or load) and throughput")
        try:
            n, x = float(row[0]), float(row[1])
        except ValueError:
            if no == 1 or not ns:
                continue  # a header
            raise UsageError(f"{path}:{no}: {row[0]!r}, {row[1]!r} are not numbers") from None
        if n <= 0 or x < 0:
            raise UsageError(f"{path}:{no}: N must be positive and throughput not negative")
        ns.append(n)
        xs.append(x)
    if len(ns) < 3:
        raise UsageError(f"{path}: {len(ns)} data rows; a fit needs at least 3")
    return ns, xs


def _predict_at(text: str | None, ns: list[float]) -> list[float]:
    if text is None:
        top = max(ns)
        return [top * 2, top * 4]
    try:
        return [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"--predict {text!r}: give N values like 32,64") from None


@app.command("fit")
def fit_command(
    table: Path = typer.Argument(..., help="CSV of N (cores or load) and throughput; a header row is allowed."),
    json_out: bool = typer.Option(False, "--json", help="Print the fits as JSON."),
    predict: str | None = typer.Option(
        None, "--predict", help="N values to predict throughput at (default: 2x and 4x the largest N)."
    ),
) -> None:
    """Fit the Universal Scalability Law and Amdahl's law to a table of (N, throughput)."""
    from corebench.analysis.scaling import fit

    ns, xs = read_table(table)
    at = _predict_at(predict, ns)
    fits = [fit(ns, xs, law, at) for law in ("usl", "amdahl")]
    if json_out:
        print(json.dumps([f.__dict__ for f in fits], indent=2, default=str))
        return
    print(f"{table}: {len(ns)} points, N from {min(ns):g} to {max(ns):g}")
    print(f"method: {fits[0].method}")
    for f in fits:
        print(f"\n{'Universal Scalability Law' if f.law == 'usl' else 'Amdahl (USL with κ = 0)'}   R² = {f.r2:.4f}")
        for k, v in f.params.items():
            lo, hi = f.intervals[k]
            print(f"  {k:<7} {v:12.6g}   95% CI {lo:.6g} .. {hi:.6g}")
        if f.law == "usl":
            print(
                f"  peak    N* = {f.peak_n:.1f}, X = {f.peak_x:.4g}"
                if f.peak_n
                else "  peak    none (κ = 0: throughput keeps rising)"
            )
        print("  predicted: " + ", ".join(f"X({n:g}) = {x:.4g}" for n, x in f.predictions.items()))
