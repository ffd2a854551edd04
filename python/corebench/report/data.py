"""Everything a report shows, derived from the store alone."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corebench.analysis.diagnose import Diagnosis, diagnose
from corebench.analysis.points import PointStats, point_stats
from corebench.analysis.scaling import Fit, fit
from corebench.analysis.verdict import Slo, verdicts
from corebench.errors import UsageError
from corebench.store import Store


@dataclass
class ScalingFit:
    factor: str
    fixed: str  # the other factors' levels the fit holds
    ns: list[float]
    xs: list[float]
    fit: Fit


@dataclass
class ReportData:
    store_path: Path
    experiment: dict[str, Any]
    plan: dict[str, Any]
    host: dict[str, Any]
    runs: list[dict]
    points: list[PointStats]
    factors: dict[str, list]
    diagnoses: list[Diagnosis]
    verdicts: list[str]
    fits: list[ScalingFit] = field(default_factory=list)


def load(store_path: Path, experiment_id: int | None = None, slo: Slo | None = None) -> ReportData:
    if not store_path.exists():
        raise UsageError(f"{store_path}: no such store")
    try:
        store = Store(store_path)
    except ValueError as e:
        raise UsageError(str(e)) from None
    try:
        store.db.row_factory = None
        if experiment_id is None:
            row = store.db.execute("SELECT max(id) FROM experiments").fetchone()
            experiment_id = row[0] if row else None
        if experiment_id is None:
            raise UsageError(f"{store_path}: the store holds no experiment yet")
        cols = [d[1] for d in store.db.execute("PRAGMA table_info(experiments)")]
        row = store.db.execute("SELECT * FROM experiments WHERE id = ?", (experiment_id,)).fetchone()
        if row is None:
            raise UsageError(f"{store_path}: no experiment {experiment_id}")
        exp = dict(zip(cols, row))
        runs = store.runs(experiment_id)
    finally:
        store.close()
    plan = json.loads(exp["plan_json"])
    points = point_stats(runs)
    cpus_of = lambda p: p.levels.get("cpus", plan["plan"]["target"].get("cpus"))  # noqa: E731
    diagnoses = [diagnose(p, _float(cpus_of(p))) for p in points]
    prices = plan["plan"].get("machine", {}).get("price_per_hour", {})
    data = ReportData(store_path, exp, plan, json.loads(exp["host_json"]), runs, points, plan.get("factors", {}),
                      diagnoses, verdicts(points, prices, slo))
    data.fits = scaling_fits(points, data.factors)
    return data


def _float(v: Any) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def scaling_fits(points: list[PointStats], factors: dict[str, list]) -> list[ScalingFit]:
    """A USL fit over cpus and over concurrency, for each combination of the
    other factors, wherever a factor has 3 or more numeric levels."""
    out = []
    for factor in ("cpus", "concurrency"):
        levels = factors.get(factor, [])
        if len(levels) < 3 or not all(isinstance(v, (int, float)) for v in levels):
            continue
        groups: dict[str, list[PointStats]] = {}
        for p in points:
            rest = {k: v for k, v in p.levels.items() if k != factor}
            groups.setdefault(json.dumps(rest, sort_keys=True), []).append(p)
        for key, ps in groups.items():
            ps = [p for p in ps if p.measured]
            if len(ps) < 3:
                continue
            ps.sort(key=lambda p: p.levels[factor])
            ns, xs = [float(p.levels[factor]) for p in ps], [p.throughput.mean for p in ps]
            try:
                f = fit(ns, xs, "usl", [max(ns) * 2, max(ns) * 4])
            except (ValueError, RuntimeError):
                continue  # the optimizer found no fit: the report shows the points alone
            fixed = " ".join(f"{k}={v}" for k, v in json.loads(key).items())
            out.append(ScalingFit(factor, fixed, ns, xs, f))
    return out
