"""Everything a report shows, derived from the store alone."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corebench.analysis.anova import Anova, anova
from corebench.analysis.baseline import BaselineRow
from corebench.analysis.baseline import rows as baseline_rows
from corebench.analysis.baseline import sentence as baseline_sentence
from corebench.analysis.capacity import capacities, cores_needed
from corebench.analysis.capacity import table as capacity_table
from corebench.analysis.diagnose import Diagnosis, diagnose
from corebench.analysis.drift import drift
from corebench.analysis.gates import Judged, judge
from corebench.analysis.gates import lines as gate_lines
from corebench.analysis.knee import kneedle, saturation
from corebench.analysis.points import PointStats, as_logged, failed_requests, goodput_rps, point_stats
from corebench.analysis.processes import ProcessRow, processes
from corebench.analysis.scaling import Fit, ScalingRow, scaling_table
from corebench.analysis.scaling_model import ScalingModel, below_saturation, choose
from corebench.analysis.verdict import Slo, load_factors, verdicts
from corebench.errors import UsageError
from corebench.plan.model import DEFAULT_PRECISION
from corebench.plan.thresholds import parse as parse_threshold
from corebench.result import agent_successful_rps
from corebench.runner import adaptive
from corebench.runner.calibrate import NEAR_CEILING, Ceiling
from corebench.store import Store


@dataclass
class ScalingFit:
    """The law one series of points supports (or why none), over one factor
    with the other factors held at `fixed`."""

    factor: str
    fixed: str  # the other factors' levels the fit holds
    model: ScalingModel
    left_out: list[tuple[float, float]] = field(default_factory=list)  # (N, X) not fitted

    @property
    def fit(self) -> Fit | None:
        return self.model.chosen


@dataclass
class Knee:
    fixed: str
    knee: float | None
    saturation: float | None


@dataclass
class ReportData:
    store_path: Path
    experiment: dict[str, Any]
    plan: dict[str, Any]
    host: dict[str, Any]
    runs: list[dict[str, Any]]
    points: list[PointStats]
    factors: dict[str, list[Any]]
    diagnoses: list[Diagnosis]
    verdicts: list[str]
    fits: list[ScalingFit] = field(default_factory=list)
    scaling: list[ScalingRow] = field(default_factory=list)
    # The clock per-core-GHz figures use, and where it came from.
    clock_ghz: float | None = None
    clock_source: str = ""
    # Each process of the stack (target and services) at each point.
    processes: list[ProcessRow] = field(default_factory=list)
    # The plan's CPU baseline (hackbench) at each cpus level.
    baseline: list[BaselineRow] = field(default_factory=list)
    knees: list[Knee] = field(default_factory=list)
    anova: list[Anova] = field(default_factory=list)
    thresholds: list[Judged] = field(default_factory=list)
    # Plans with [search]: each configuration's sustained rate within the objective.
    capacity: list[dict[str, Any]] = field(default_factory=list)

    def run_figures(self, run: dict[str, Any]) -> dict[str, Any]:
        """A stored run's rate and failures as the analysis counts them: the
        rate of successes, and errors with unsuccessful statuses (less a
        replay's as its log recorded them). The store's own columns keep ab's
        counts: every response, and transport errors only."""
        if not run["result_json"]:
            return {"rps": run["throughput_rps"], "failed": run["failed_requests"]}
        result = json.loads(run["result_json"])
        return {"rps": goodput_rps(result), "failed": failed_requests(result)}

    def agent_rows(self) -> list[dict[str, Any]]:
        """Distributed runs: one row per agent of each stored result."""
        out = []
        for r in self.runs:
            agents = json.loads(r["result_json"]).get("agents", []) if r["result_json"] else []
            out += [{"seq": r["seq"], "point": r["point_json"], "warmup": r["warmup"], **a} for a in agents]
        for a in out:
            # Failures are never throughput: successes per second, and errors with unsuccessful statuses.
            a["successful_rps"] = agent_successful_rps(a)
            a["failures"] = int(a["failed"]) + int(a.get("unsuccessful", 0))
            # What each agent's `--linger auto` probes found (none before they were kept).
            p = a.get("linger_probes") or {}
            a["probes_held"] = f"{p['held']} of {p['probes']}" if p.get("probes") else None
        return out


def load(
    store_path: Path, experiment_id: int | None = None, slo: Slo | None = None, traffic_rps: float | None = None
) -> ReportData:
    """`traffic_rps`: with capacity searches, say how many cores serve it."""
    if not store_path.exists():
        raise UsageError(f"{store_path}: no such store")
    try:
        store = Store(store_path, read_only=True)
    except ValueError as e:
        raise UsageError(str(e)) from None
    try:
        if experiment_id is None:
            experiment_id = store.newest_experiment()
        if experiment_id is None:
            raise UsageError(f"{store_path}: the store holds no experiment yet")
        exp = store.experiment(experiment_id)
        if exp is None:
            raise UsageError(f"{store_path}: no experiment {experiment_id}")
        runs = store.runs(experiment_id)
    finally:
        store.close()
    plan = json.loads(exp["plan_json"])
    points = sorted(point_stats(runs), key=lambda p: _order(p, plan.get("factors", {})))
    host = json.loads(exp["host_json"])
    diagnoses = [diagnose(p, _cpus_given(p), host.get("cpus_usable") or host.get("cpus")) for p in points]
    prices = plan["plan"].get("machine", {}).get("price_per_hour", {})
    factors = plan.get("factors", {})
    data = ReportData(
        store_path,
        exp,
        plan,
        json.loads(exp["host_json"]),
        runs,
        points,
        factors,
        diagnoses,
        verdicts(
            points,
            prices,
            slo,
            factors,
            load_factors(factors, plan["plan"].get("load")),
            plan["plan"].get("search") is not None,
        ),
    )
    data.fits = scaling_fits(points, data.factors)
    data.clock_ghz, data.clock_source = clock(plan["plan"], host)
    data.scaling = cores_table(points, data.factors, data.clock_ghz)
    if data.scaling and data.clock_ghz is None:
        data.verdicts.append(
            "Requests per second per core-GHz: unknown, this machine's clock was not readable (cpufreq, "
            "/proc/cpuinfo); give it as [machine] clock_ghz."
        )
    data.knees = knees(points, data.factors)
    data.processes = processes(points)
    data.anova = factor_anova(points, data.factors)
    criteria = [parse_threshold(f"{k}{v}") for k, v in plan["plan"].get("thresholds", {}).items()]
    data.thresholds = judge(criteria, points)
    data.verdicts[:0] = gate_lines(data.thresholds)
    caps = capacities(points)
    data.capacity = capacity_table(caps)
    if caps:
        found = "; ".join(f"{r['point']}: {r['sustained_rps']:,.0f} req/s" for r in data.capacity)
        said = [f"Capacity within {caps[0].objective} ({caps[0].arrivals} arrivals), by capacity search: {found}."]
        if traffic_rps is not None:
            said += cores_needed(caps, traffic_rps)
        data.verdicts[:0] = said
    elif traffic_rps is not None:
        data.verdicts.insert(0, "--traffic needs an experiment of capacity searches (a plan with [search]).")
    data.verdicts += schedule_lines(plan["plan"].get("experiment", {}), runs, points)
    data.verdicts += generator_lines(exp, points)
    data.verdicts += replay_lines(runs)
    found = json.loads(exp.get("baseline_json") or "null")
    data.baseline = baseline_rows(found)
    yardstick = baseline_sentence(found, data.scaling)
    if yardstick:
        data.verdicts.append(yardstick)
    cpus = data.factors.get("cpus", [])
    if 0 < len(cpus) < 3 and not caps:
        data.verdicts.append(
            f"Not shown here: a scaling-law fit over CPUs, and its prediction for larger machines, needs 3 or "
            f"more CPU levels; this experiment has {len(cpus)} ({', '.join(map(str, cpus))})."
        )
    return data


def schedule_lines(experiment: dict[str, Any], runs: list[dict[str, Any]], points: list[PointStats]) -> list[str]:
    """How far the repetitions got: an adaptive experiment's precision, and
    whether throughput drifted across rounds."""
    out = []
    if experiment.get("repetitions") == "auto":
        target = experiment.get("precision") or DEFAULT_PRECISION
        by_point = adaptive.goodput_by_point(runs)
        got = {
            p.label(): adaptive.precision(by_point.get(json.dumps(p.levels, sort_keys=True), []), target)
            for p in points
        }
        rounds = max((r.get("round") or 0 for r in runs), default=0)
        wide = {k: v for k, v in got.items() if not v.met and v.n >= 2}
        worst = max((v.relative for v in got.values() if v.n >= 2), default=math.nan)
        how = (
            f"Adaptive repetitions (Chow & Robbins' sequential rule, target ±{target:.1%}, at most "
            f"{experiment.get('max_repetitions', 10)} rounds): {rounds} rounds; "
        )
        if not wide:
            out.append(how + f"every point's mean throughput is known within ±{worst:.1%} (95% CI half-width).")
        else:
            named = ", ".join(f"{k} ±{v.relative:.1%}" for k, v in list(wide.items())[:4])
            out.append(
                how + f"{len(wide)} point(s) still wider than the target ({named}{', ...' if len(wide) > 4 else ''})."
            )
    pairs: dict[str, list[tuple[int, float]]] = {}
    for r in runs:
        if r["status"] == "ok" and not r["warmup"] and r.get("round") and r["result_json"]:
            pairs.setdefault(r["point_key"], []).append((r["round"], goodput_rps(json.loads(r["result_json"]))))
    found = drift(pairs)
    if found is not None and found.rounds >= 3:
        out.append(found.sentence())
    return out


def replay_lines(runs: list[dict[str, Any]]) -> list[str]:
    """Say it when a replay's unsuccessful responses were the log's own."""
    results = [json.loads(r["result_json"]) for r in runs if r["result_json"] and not r["warmup"]]
    same = sum(as_logged(x) for x in results)
    if not same:
        return []
    return [
        f"Replay: {same:,} unsuccessful responses (4xx, 5xx) over the measured runs had the status the log "
        "recorded for the same request (the site answered as it did then); they are not counted as failures, "
        "nor as throughput."
    ]


def _io_said(ios: Counter[str]) -> str:
    """Which transport the measured runs' load threads ran on, counted in runs."""
    if len(ios) == 1:
        ((io, n),) = ios.items()
        runs = "the measured run ran its" if n == 1 else f"all {n:,} measured runs ran their"
        return f"{runs} load threads on {io}"
    (first, n), *rest = sorted(ios.items())
    said = ", ".join(f"{k:,} on {io}" for io, k in rest)
    return f"of the measured runs, {n:,} ran their load threads on {first} and {said}"


def generator_lines(exp: dict[str, Any], points: list[PointStats]) -> list[str]:
    """The generator's calibrated ceiling, and the points that came near it."""
    cal = [Ceiling.from_json(c) for c in json.loads(exp.get("calibration_json") or "[]")]
    out = ["Generator " + c.sentence().removeprefix("generator ") + "." for c in cal]
    near = [p.label() for p in points if any("generator's ceiling" in (r.get("lower_bound") or "") for r in p.measured)]
    if near:
        out.append(
            f"Lower bounds: at {len(near)} point(s) ({', '.join(near[:3])}{', ...' if len(near) > 3 else ''}) a run "
            f"reached {NEAR_CEILING:.0%} or more of the generator's calibrated ceiling, so the generator, not only "
            "the server, set the figure: the server can do at least that much."
        )
    results = [json.loads(r["result_json"]) for p in points for r in p.measured if r.get("result_json")]
    ios = Counter(r.get("io", "epoll") for r in results)
    if ios:
        out.append(f"Load I/O: {_io_said(ios)} (corebench load --io; docs/load.md).")
    protocols = Counter(_protocol(r) for r in results)
    if any(p.startswith("HTTP/2") for p in protocols):
        said = " and ".join(f"{p} in {n:,}" for p, n in sorted(protocols.items()))
        out.append(f"Protocol: the measured runs spoke {said} (HTTP/2 runs on epoll; docs/http2.md).")
    return out


def _protocol(result: dict[str, Any]) -> str:
    streams = result.get("streams", 1)
    name = f"HTTP/{result.get('http_version', '1.1')}"
    return name + (f" with {streams} streams per connection" if streams > 1 else "")


def clock(plan: dict[str, Any], host: dict[str, Any]) -> tuple[float | None, str]:
    """The plan's [machine] clock_ghz, else the clock the host reported when
    the experiment began (cpufreq or /proc/cpuinfo, through psutil)."""
    given = plan.get("machine", {}).get("clock_ghz")
    if given:
        return float(given), "the plan's [machine] clock_ghz"
    if host.get("mhz"):
        return round(float(host["mhz"]) / 1000, 3), "the host's reported clock (cpufreq or /proc/cpuinfo)"
    return None, ""


def cores_table(points: list[PointStats], factors: dict[str, list[Any]], ghz: float | None) -> list[ScalingRow]:
    """The first field report's table: each CPU level's best point, its
    speedup and efficiency over the fewest CPUs, and req/s per core-GHz."""
    levels = factors.get("cpus", [])
    if len(levels) < 2 or not all(isinstance(v, (int, float)) for v in levels):
        return []
    best: dict[float, PointStats] = {}
    for p in points:
        if p.measured and not p.failing and "cpus" in p.levels:
            c = float(p.levels["cpus"])
            if c not in best or p.throughput.mean > best[c].throughput.mean:
                best[c] = p
    if not best:
        return []
    low = min(best)
    base = best[low].throughput.mean / low  # per CPU at the lowest level
    rows = [(best[c].label(), c, best[c].throughput.mean, ghz) for c in sorted(best)]
    return scaling_table(rows, base)


def knees(points: list[PointStats], factors: dict[str, list[Any]]) -> list[Knee]:
    """Kneedle and the 95%-of-peak saturation point of throughput against concurrency."""
    if len(factors.get("concurrency", [])) < 3:
        return []
    groups: dict[str, list[PointStats]] = {}
    for p in points:
        if p.measured:
            rest = " ".join(f"{k}={v}" for k, v in p.levels.items() if k != "concurrency") or "all"
            groups.setdefault(rest, []).append(p)
    out = []
    for rest, ps in groups.items():
        xs = [float(p.levels["concurrency"]) for p in ps]
        ys = [p.throughput.mean for p in ps]
        out.append(Knee(rest, kneedle(xs, ys), saturation(xs, ys)))
    return out


RESPONSES = {
    "log_goodput": "log throughput (goodput)",
    "demand_ms": "CPU ms per request",
    "log_p99": "log p99",
}


def factor_anova(points: list[PointStats], factors: dict[str, list[Any]]) -> list[Anova]:
    """Type II ANOVA of every measured run over the plan's factors, on log
    throughput, on service demand (where every run has it) and on log p99."""
    rows = []
    for p in points:
        if p.failing:
            continue
        demand = p.demand_ms if len(p.demand_ms) == len(p.measured) else [math.nan] * len(p.measured)
        for rps, r, d in zip(p.rps, p.measured, demand, strict=True):
            if rps > 0 and r["p99_us"]:
                rows.append(
                    {**p.levels, "log_goodput": math.log(rps), "demand_ms": d, "log_p99": math.log(r["p99_us"])}
                )
    out = []
    for response in RESPONSES:
        usable = [r for r in rows if not math.isnan(r[response])]
        a = anova(usable, [f for f in factors if all(f in r for r in usable)], response) if usable else None
        if a is not None:
            out.append(a)
    return out


def _order(p: PointStats, factors: dict[str, list[Any]]) -> tuple[int, ...]:
    """Points in the plan's order of factor levels, not the runs' random one."""
    return tuple(
        factors[k].index(v) if k in factors and v in factors[k] else len(factors.get(k, []))
        for k, v in p.levels.items()
    )


def _cpus_given(p: PointStats) -> float | None:
    """The CPUs the target had, from the layout stored with its runs
    (whatever the plan called the factor); None for a server not started here."""
    for r in p.measured:
        layout = json.loads(r["layout_json"]) if r["layout_json"] else {}
        if layout.get("method") not in (None, "none"):
            return layout.get("quota_cpus") or float(len(layout.get("target_cpus", []))) or None
    return None


def scaling_fits(points: list[PointStats], factors: dict[str, list[Any]]) -> list[ScalingFit]:
    """The scaling law over cpus and over concurrency, for each combination
    of the other factors, wherever a factor has 3 or more numeric levels;
    fitted only to points that can carry it (`analysis.scaling_model`)."""
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
            ps = sorted((p for p in ps if p.measured), key=lambda p: p.levels[factor])
            if not ps:
                continue
            fixed = " ".join(f"{k}={v}" for k, v in json.loads(key).items())
            model = _model(factor, ps)
            left = {n for n, _ in model.dropped}
            points_out = [(float(p.levels[factor]), p.throughput.mean) for p in ps if p.levels[factor] in left]
            out.append(ScalingFit(factor, fixed, model, points_out))
    return out


def _model(factor: str, ps: list[PointStats]) -> ScalingModel:
    """Failing points, and points whose generator shared the target's cores
    (they understate the target), are left out; so are load levels past saturation, where a
    closed loop only queues."""
    dropped = [(float(p.levels[factor]), "more than 1% of its requests failed") for p in ps if p.failing]
    ps = [p for p in ps if not p.failing]
    dropped += [(float(p.levels[factor]), "the load generator shared the target's cores") for p in ps if p.shared]
    ps = [p for p in ps if not p.shared]
    if ps and factor == "concurrency":
        kept, past = below_saturation([float(p.levels[factor]) for p in ps], [p.throughput.mean for p in ps])
        dropped += [(float(ps[i].levels[factor]), "past saturation") for i in past]
        ps = [ps[i] for i in kept]
    ns, xs = [float(p.levels[factor]) for p in ps], [p.throughput.mean for p in ps]
    return choose(ns, xs, dropped)
