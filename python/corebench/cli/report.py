"""`corebench report STORE`, `corebench export STORE`, `corebench compare A B`:
everything from the store alone."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from corebench.cli import app
from corebench.cli.common import write
from corebench.errors import UsageError

if TYPE_CHECKING:
    from corebench.analysis.slo import Slo

EXPERIMENT = typer.Option(None, "--experiment", "-e", help="Experiment id in the store (default: the latest).")


def _slo(text: str | None) -> Slo | None:
    if text is None:
        return None
    from corebench.analysis.slo import parse_slo

    try:
        return parse_slo(text)
    except ValueError as e:
        raise UsageError(f"--slo: {e}") from None


@app.command("report")
def report(
    store: Path = typer.Argument(..., help="The experiment's store (SQLite)."),
    out: Path | None = typer.Option(
        None, "-o", "--output", help="Where to write (default: report.html, or stdout for md and json)."
    ),
    fmt: str = typer.Option(
        "html",
        "--format",
        help="html (self-contained, offline), md (Markdown summary) or json (the findings as records).",
    ),
    experiment: int | None = EXPERIMENT,
    slo: str | None = typer.Option(
        None,
        "--slo",
        help="A latency objective, e.g. p99<=200ms: who meets it at each load level (with prices: the cheapest).",
    ),
    traffic: float | None = typer.Option(
        None,
        "--traffic",
        help="With capacity searches ([search] in the plan): how many cpus serve this many req/s within the objective.",
    ),
) -> None:
    """Write the experiment's report: statistics, scaling fits, diagnosis and verdicts."""
    from corebench import report as rep

    if fmt not in rep.formats():
        raise UsageError(f"--format {fmt!r}: choose one of {', '.join(rep.formats())}")
    if traffic is not None and not traffic > 0:
        raise UsageError(f"--traffic {traffic:g}: give a positive rate in requests per second")
    data = rep.load(store, experiment, _slo(slo), traffic)
    text = rep.get(fmt).render(data)
    dest = str(out) if out else ("report.html" if fmt == "html" else "-")
    write(dest, text, "-o")
    if dest != "-":
        print(f"corebench: report written to {dest}")
        for v in data.verdicts:
            print(f"  {v}")


@app.command("export")
def export(
    store: Path = typer.Argument(..., help="The experiment's store (SQLite)."),
    csv_out: bool = typer.Option(False, "--csv", help="CSV, one row per run."),
    json_out: bool = typer.Option(False, "--json", help="JSON: the experiment, the host and the runs."),
    parquet: bool = typer.Option(False, "--parquet", help="Parquet (needs pyarrow)."),
    out: Path | None = typer.Option(
        None, "-o", "--output", help="File to write (default: stdout; required for parquet)."
    ),
    experiment: int | None = EXPERIMENT,
) -> None:
    """Export the runs for a notebook."""
    from corebench import report as rep
    from corebench.report import table

    chosen = [n for n, on in (("csv", csv_out), ("json", json_out), ("parquet", parquet)) if on]
    if len(chosen) != 1:
        raise UsageError("export: give one of --csv, --json or --parquet")
    data = rep.load(store, experiment)
    if chosen[0] == "parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise UsageError("--parquet needs pyarrow: pip install pyarrow (or use --csv)") from None
        if out is None:
            raise UsageError("--parquet: give the file with -o FILE")
        pq.write_table(pa.Table.from_pylist(table.rows(data)), out)
        return
    text = table.to_csv(data) if chosen[0] == "csv" else table.to_json(data)
    write(str(out) if out else "-", text, "-o")


@app.command("compare")
def compare(
    a: Path = typer.Argument(..., help="A store (the baseline)."),
    b: str = typer.Argument(..., help="Another store, or within A: two selectors like cpus=1 cpus=2."),
    c: str | None = typer.Argument(None, help="The second selector, when comparing within one store."),
    fail_if_slower: str | None = typer.Option(
        None,
        "--fail-if-slower",
        help="Regression gate: exit 99 when B's throughput is significantly lower than A's by more than this (5%).",
    ),
    svg: Path | None = typer.Option(
        None, "--svg", help="Also write the compared points' latency distributions, A and B overlaid, to FILE (SVG)."
    ),
) -> None:
    """A benchstat-like table: each point's throughput and p99, B against A, held to α over the tests (Bonferroni)."""
    from corebench.report.compare import compare_points, compare_stores

    margin = _margin(fail_if_slower)
    if c is not None:
        table = compare_points(a, b, c)
    elif Path(b).exists():
        table = compare_stores(a, Path(b))
    else:
        raise UsageError(
            f"{b}: neither a store nor a selector pair; "
            "use: compare A.sqlite B.sqlite, or compare A.sqlite cpus=1 cpus=2"
        )
    sys.stdout.write("\n".join(table.lines()) + "\n")
    if svg is not None:
        drawn = table.svg()
        if drawn is None:
            print("corebench: no latency distributions to overlay: --svg not written", file=sys.stderr)
        else:
            write(str(svg), drawn, "--svg")
    if margin is not None:
        slower = table.slower(margin)
        for r in slower:
            change = r.c.relative * 100 if r.c else math.nan
            print(f"slower: {r.label}: {change:+.1f}% (Bonferroni-adjusted p = {r.c.p if r.c else math.nan:.3g})")
        verdict = f"{len(slower)} point(s) significantly slower by more than {margin:.0%}" if slower else "no point"
        print(f"gate --fail-if-slower {fail_if_slower}: {verdict}" + ("" if slower else " failed it"))
        if slower:
            raise typer.Exit(99)


def _margin(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text.strip().removesuffix("%")) / 100
    except ValueError:
        value = -1.0
    if not text.strip().endswith("%") or not 0 <= value < 1:
        raise UsageError(f"--fail-if-slower {text!r}: give a share of throughput, like 5%")
    return value
