"""`corebench fit TABLE`: the scaling table (speedup, efficiency, throughput
per core-GHz) and the scaling law the measurements support (linear, Amdahl
or the USL), for any table of (cores or load, throughput)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from corebench.cli import app
from corebench.cli.table import Row, Table, read_table
from corebench.errors import UsageError

if TYPE_CHECKING:
    from corebench.analysis.scaling import ScalingRow
    from corebench.analysis.scaling_model import ScalingModel


def _predict_at(text: str | None, model: ScalingModel, flag: str = "--predict") -> list[float]:
    if text is None:
        return []
    try:
        at = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"{flag} {text!r}: give N values like 32,64") from None
    beyond = [v for v in at if v > model.limit]
    if beyond:
        raise UsageError(
            f"{flag} {beyond[0]:g}: beyond twice the largest measured N ({max(model.ns):g}); a law fitted "
            f"to the measurements says nothing reliable past N = {model.limit:g}"
        )
    return at


def _analyse(rows: list[Row], where: str) -> tuple[list[ScalingRow], ScalingModel]:
    from corebench.analysis.scaling import scaling_table
    from corebench.analysis.scaling_model import choose

    low = min(rows, key=lambda r: r.n)
    if not low.x > 0:
        raise UsageError(
            f"{where}: the throughput at the lowest N ({low.n:g}) is {low.x:g}: speedups and efficiency are relative "
            "to it, so nothing can be fitted; give a positive throughput there, or drop that row"
        )
    base = low.x / low.n  # per core (or per unit of load) at the lowest level
    table = scaling_table([(r.group, r.n, r.x, r.ghz) for r in sorted(rows, key=lambda r: r.n)], base)
    return table, choose([r.n for r in rows], [r.x for r in rows])


def _num(v: float, digits: int = 4) -> str:
    return "–" if v is None or not math.isfinite(v) else f"{v:.{digits}g}"


def _print_model(name: str, m: ScalingModel) -> None:
    print(f"\n{name}{m.why}")
    f = m.chosen
    if f is None:
        return
    for k, v in f.params.items():
        lo, hi = f.intervals[k]
        print(f"  {k:<7} {v:12.6g}   95% CI {_num(lo, 6)} .. {_num(hi, 6)}")
    print(f"  R² = {f.r2:.4f}")
    if f.law == "usl":
        print(
            f"  peak    N* = {f.peak_n:.1f}, X = {f.peak_x:.4g}"
            if f.peak_n and f.peak_x
            else "  peak    none claimed: κ is not significantly above 0"
        )
    print(
        f"  predicted (up to 2× the largest N = {m.limit:g}): "
        + ", ".join(
            f"X({n:g}) = {x:.4g} (95% {_num(f.bands[n][0])}–{_num(f.bands[n][1])})" for n, x in f.predictions.items()
        )
    )


def _print(t: Table, results: dict[str, tuple[list[ScalingRow], ScalingModel]]) -> None:
    first = next(iter(results.values()))[1].chosen
    print(
        f"{t.path}: {len(t.rows)} rows; N = {t.x}, "
        + (f"X = N / {t.y} (Little's law, closed loop)" if t.latency_scale is not None else f"X = {t.y}")
        + (f", clock = {t.clock}" if t.clock else "")
        + (f"; one group per {t.by}" if t.by else "")
    )
    width = max([len(g) for g in results] + [5])
    head = f"{'':<{width}} {'N':>6} {'X':>10} {'speedup':>8} {'efficiency':>10}"
    print("\n" + head + (f" {'X per core-GHz':>15}" if t.clock else ""))
    for group, (rows, _) in results.items():
        for r in rows:
            line = (
                f"{group:<{width}} {r.cores:>6g} {r.throughput:>10.4g} {r.speedup:>7.2f}× {r.efficiency * 100:>9.1f}%"
            )
            print(line + (f" {r.per_core_ghz:>15.0f}" if t.clock and r.per_core_ghz is not None else ""))
    print("\n(speedup and efficiency against each group's lowest N, per unit of N)")
    if first is not None:
        print(f"Fits: {first.method}; the law chosen by F tests between linear, Amdahl and the USL (α = 0.05)")
    for group, (_, m) in results.items():
        _print_model(f"{group}: " if group else "", m)


def _json(m: ScalingModel, rows: list[ScalingRow]) -> dict[str, Any]:
    fits = {law: {k: v for k, v in asdict(f).items() if k != "cov"} for law, f in m.fits.items()}
    for f in fits.values():
        f["predictions"] = {str(k): v for k, v in f["predictions"].items()}
        f["bands"] = {str(k): v for k, v in f["bands"].items()}
    return {
        "rows": [asdict(r) for r in rows],
        "law": m.law,
        "why": m.why,
        "tests": [asdict(t) for t in m.tests],
        "fits": fits,
    }


@app.command("fit")
def fit_command(
    table: Path = typer.Argument(..., help="CSV, TSV or JSON of N (cores or load) and throughput, with named columns."),
    x: str | None = typer.Option(None, "--x", help="The N column (default: one named cores, cpus, n, load, users...)."),
    y: str | None = typer.Option(None, "--y", help="The throughput column (default: one named rps, throughput, x...)."),
    by: str | None = typer.Option(
        None, "--by", help="A column of labels: one table and fit per label (default: the first column of text)."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the tables and fits as JSON."),
    predict: str | None = typer.Option(
        None, "--predict", help="More N values to predict throughput at, up to 2x the largest N."
    ),
) -> None:
    """The scaling table and the scaling law (linear, Amdahl or USL) that a table of (N, throughput) supports."""
    t = read_table(table, x, y, by)
    results = {
        group: _analyse(rows, f"{t.path}" + (f" ({t.by} = {group})" if t.by else ""))
        for group, rows in t.groups().items()
    }
    for _, m in results.values():
        f = m.chosen
        for at in _predict_at(predict, m):
            if f is not None:
                f.predictions[at], f.bands[at] = f.predict(at), f.band(at)
    if json_out:
        out: dict[str, Any] = {"table": str(t.path), "x": t.x, "y": t.y, "clock": t.clock, "by": t.by}
        out["groups"] = {g: _json(m, rows) for g, (rows, m) in results.items()}
        print(json.dumps(out, indent=2, default=str))
        return
    _print(t, results)
