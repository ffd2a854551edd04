"""The analysis stage's entry point: an experiment and its runs in,
`Findings` out. Every report (text, Markdown, HTML) renders its findings,
and `corebench run`'s threshold gate reads them without building a report."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import cast

from corebench.analysis.anova import Anova, anova, scope
from corebench.analysis.baseline import rows as baseline_rows
from corebench.analysis.baseline import sentence as baseline_sentence
from corebench.analysis.best import P99_MIN_RESPONSES
from corebench.analysis.capacity import capacities, cores_needed
from corebench.analysis.capacity import table as capacity_table
from corebench.analysis.diagnose import diagnose
from corebench.analysis.finding import Figure, Finding
from corebench.analysis.findings import Findings, Knee, ScalingFit
from corebench.analysis.gates import judge
from corebench.analysis.gates import lines as gate_lines
from corebench.analysis.knee import kneedle, saturation
from corebench.analysis.lines import generator_lines, replay_lines, schedule_lines
from corebench.analysis.load import load_factors
from corebench.analysis.points import PointStats, point_stats
from corebench.analysis.processes import processes
from corebench.analysis.scaling import ScalingRow, scaling_table
from corebench.analysis.scaling_model import ScalingModel, below_saturation, choose
from corebench.analysis.slo import Slo
from corebench.analysis.verdict import compare
from corebench.errors import UsageError
from corebench.plan.thresholds import parse as parse_threshold
from corebench.store import HostFacts, Level, Store, StoredExperiment, StoredRun, StoreError

# The responses the factor ANOVA explains, and how reports name them.
RESPONSES = {
    "log_goodput": "log throughput (goodput)",
    "demand_ms": "CPU ms per request",
    "log_p99": "log p99",
}
Table = dict[str, object]


def analyse(
    experiment: StoredExperiment,
    runs: list[StoredRun],
    slo: Slo | None = None,
    traffic_rps: float | None = None,
) -> Findings:
    """`slo`: judge each point against a latency objective; `traffic_rps`:
    with capacity searches, say how many cores serve that rate."""
    plan = experiment.plan
    factors = plan.factors
    points = sorted(point_stats(runs), key=lambda p: _order(p, factors))
    host = experiment.host
    usable = host.cpus_usable or host.cpus
    found = Findings(experiment, runs, points, factors, [diagnose(p, _cpus_given(p), usable) for p in points])
    settings = _table(plan.plan)
    prices = cast(dict[str, dict[str, float]], _table(settings.get("machine")).get("price_per_hour") or {})
    load = _table(settings.get("load"))
    searched = settings.get("search") is not None
    found.add("verdict", *compare(points, prices, slo, factors, load_factors(factors, load), searched))
    found.fits = scaling_fits(points, factors)
    found.clock_ghz, found.clock_source = clock(settings, host, points)
    found.scaling = cores_table(points, factors, found.clock_ghz)
    if found.scaling and found.clock_ghz is None:
        found.add(
            "clock",
            "Requests per second per core-GHz: unknown, this machine's clock was not readable (cpufreq, "
            "/proc/cpuinfo); give it as [machine] clock_ghz.",
        )
    elif found.scaling and not any(p.clock_mhz for p in points):
        found.add(
            "clock",
            f"The Cores table's requests per second per core-GHz (HTML and JSON reports) use {found.clock_source}: "
            "the clock was not measured per run.",
        )
    found.add("machine", *(f"Before the first run, corebench system check warned: {c}" for c in host.checks))
    found.add("machine", *_not_cores(points))
    found.knees = knees(points, factors)
    found.processes = processes(points)
    found.anova = factor_anova(points, factors)
    found.anova_scope = scope(bool(load_factors(factors, load) & {t.name for a in found.anova for t in a.terms}))
    thresholds = _table(settings.get("thresholds"))
    found.thresholds = judge([parse_threshold(f"{k}{v}") for k, v in thresholds.items()], points)
    found.add("threshold", *gate_lines(found.thresholds))
    _capacity(found, traffic_rps)
    found.add("schedule", *schedule_lines(_table(settings.get("experiment")), runs, points))
    found.add("generator", *generator_lines(experiment, points))
    found.add("replay", *replay_lines(runs))
    found.add("scope", *_exporter_lines(runs))
    found.baseline = baseline_rows(experiment.baseline)
    yardstick = baseline_sentence(experiment.baseline, found.scaling)
    if yardstick:
        found.add("baseline", yardstick, method="Jain 1991: fixed work, speedup as the ratio of times")
    cpus = factors.get("cpus", [])
    if 0 < len(cpus) < 3 and not found.capacity:
        found.add(
            "scope",
            f"Not shown here: a scaling-law fit over CPUs, and its prediction for larger machines, needs 3 or "
            f"more CPU levels; this experiment has {len(cpus)} ({', '.join(map(str, cpus))}).",
        )
    found.ordered()
    return found


def read(store_path: Path, experiment_id: int | None = None) -> tuple[StoredExperiment, list[StoredRun]]:
    """The newest experiment of a store, or `experiment_id`, and its runs;
    the store opened read-only (a file that is not one stays untouched)."""
    if not store_path.exists():
        raise UsageError(f"{store_path}: no such store")
    try:
        store = Store(store_path, read_only=True)
    except StoreError as e:
        raise UsageError(str(e)) from None
    try:
        if experiment_id is None:
            experiment_id = store.newest_experiment()
        if experiment_id is None:
            raise UsageError(f"{store_path}: the store holds no experiment yet")
        exp = store.experiment(experiment_id)
        if exp is None:
            raise UsageError(f"{store_path}: no experiment {experiment_id}")
        return exp, store.runs(experiment_id)
    except StoreError as e:
        raise UsageError(str(e)) from None
    finally:
        store.close()


def _exporter_lines(runs: list[StoredRun]) -> list[str]:
    """How a host corebench does not control was measured ([target] monitor)."""
    watched = [m for r in runs if not r.warmup and (m := r.monitor) is not None and m.source != "local"]
    if not watched:
        return []
    failed = sum(m.scrape_errors for m in watched)
    resets = sum(m.counter_resets for m in watched)
    blind = sum(not m.cores for m in watched)
    said = (
        f"The target's host was measured through {watched[0].source.split(' ', 1)[0]} "
        f"({watched[0].source.split(' ', 1)[-1]}): {sum(m.scrapes for m in watched)} scrapes over "
        f"{len(watched)} measured runs, {failed} failed, {resets} interval(s) cut by a counter going back or a "
        "change of its CPUs. "
        "Its CPU is everything that ran on that host, so the CPU per request (service demand) is an upper bound "
        "of the server's own, and the diagnosis weighs it against all of the host's CPUs: a server held to fewer "
        "(a container, a cpuset) or single-threaded is not seen as such."
    )
    if any(m.exporter_local for m in watched):
        said += (
            f" That host ({watched[0].exporter_host}) is the one that generated the load: its CPU holds the "
            "generator's too, so the CPU per request is not the server's."
        )
    if blind:
        first = next((m.scrape_error for m in watched if m.scrape_error), None)
        said += f" {blind} run(s) got no figures from it" + (f" (first error: {first})." if first else ".")
    return [said]


def _capacity(found: Findings, traffic_rps: float | None) -> None:
    caps = capacities(found.points)
    found.capacity = capacity_table(caps)
    if caps:
        rates = "; ".join(r.sentence() for r in found.capacity)
        found.add(
            "capacity",
            Finding(
                "capacity",
                f"Capacity within {caps[0].objective} ({caps[0].arrivals} arrivals), by capacity search, the mean "
                f"sustained rate over each configuration's searches: {rates}.",
                method="a bracketing search of open-loop rates, each step judged against the objective "
                "(docs/capacity.md)",
                subject=f"capacity within {caps[0].objective}",
                figures=tuple(Figure(r.point, r.sustained_rps, "req/s") for r in found.capacity),
            ),
            "A closed loop (a fixed number of clients) can show more throughput at the same latency than this "
            "open-loop capacity: its clients wait for each response, so its queue never grows past them, while "
            "open-loop arrivals keep coming whatever the latency (Schroeder, Wierman & Harchol-Balter 2006, "
            "'Open versus closed: a cautionary tale', NSDI).",
        )
        if traffic_rps is not None:
            found.add("capacity", *cores_needed(caps, traffic_rps))
    elif traffic_rps is not None:
        found.add("capacity", "--traffic needs an experiment of capacity searches (a plan with [search]).")


def _table(value: object) -> Table:
    """A table of the stored plan (its TOML tables as JSON objects), or an
    empty one where the plan has none."""
    return cast(Table, value) if isinstance(value, dict) else {}


def clock(plan: Mapping[str, object], host: HostFacts, points: Sequence[PointStats] = ()) -> tuple[float | None, str]:
    """The clock measured during the runs (system.check), their mean; else
    the plan's [machine] clock_ghz; else the clock the host reported when
    the experiment began (cpufreq or /proc/cpuinfo, through psutil: in a VM
    without cpufreq, the nominal rate)."""
    measured = [p.clock_mhz for p in points if p.clock_mhz]
    if measured:
        return round(sum(measured) / len(measured) / 1000, 3), "the clock measured during each run (mean)"
    given = _table(plan.get("machine")).get("clock_ghz")
    if isinstance(given, (int, float)) and given:
        return float(given), "the plan's [machine] clock_ghz"
    if host.mhz:
        return round(host.mhz / 1000, 3), "the host's reported clock at the start (cpufreq or /proc/cpuinfo)"
    return None, ""


def cores_table(points: list[PointStats], factors: Mapping[str, list[Level]], ghz: float | None) -> list[ScalingRow]:
    """The first field report's table, at matched load and configuration:
    for each combination of the other factors, each CPU level's point, its
    speedup and efficiency over that combination's fewest CPUs (Jain 1991),
    and req/s per core-GHz. Never a CPU level's best point over the others,
    which would pick load levels (analysis.load)."""
    levels = factors.get("cpus", [])
    if len(levels) < 2 or not all(isinstance(v, (int, float)) for v in levels):
        return []
    if any(p.searched for p in points):
        return []  # a search's stored step is no rate of the point's: the capacity table has its rates
    groups: dict[str, dict[float, PointStats]] = {}
    for p in points:
        if p.measured and not p.failing and "cpus" in p.levels:
            at = " ".join(f"{k}={v}" for k, v in p.levels.items() if k != "cpus")
            groups.setdefault(at, {})[float(p.levels["cpus"])] = p
    rows = []
    for at, by_cpus in groups.items():
        low = min(by_cpus)
        base = by_cpus[low].goodput_rps.mean / low  # per CPU at the lowest level
        # Each point's measured clock where it has one: turbo runs fewer cores faster.
        table = [(p.label(), c, p.goodput_rps.mean, _ghz(p) or ghz) for c, p in sorted(by_cpus.items())]
        # Where users' think time set the rate, the CPUs did not: no speedup, as the verdicts compare none.
        by_load = any(p.users_offer_rps is not None for p in by_cpus.values())
        for r, p in zip(scaling_table(table, base), (by_cpus[c] for c in sorted(by_cpus)), strict=True):
            ci = (p.goodput_rps.ci_low, p.goodput_rps.ci_high)
            note = "the users' think time set the rate (N/(Z+R)), not the CPUs" if by_load else _bound_note(p)
            rows.append(
                replace(
                    r,
                    # Speedup over the lowest level, not over one CPU.
                    speedup=math.nan if by_load else r.speedup / low,
                    efficiency=math.nan if by_load else r.efficiency,
                    per_core_ghz=None if by_load else r.per_core_ghz,
                    at=at,
                    throughput_ci=ci if all(math.isfinite(x) for x in ci) else None,
                    note=note,
                )
            )
    return rows


def _bound_note(p: PointStats) -> str:
    """A lower bound's row says so, as its verdicts do (ANSWERS.md §3)."""
    limits = p.limits()
    return f"a lower bound of the server: {'; '.join(limits)}" if limits else ""


def _not_cores(points: list[PointStats]) -> list[str]:
    """Points whose target got fewer physical cores than asked, SMT
    siblings filling in: a CPU there is not a core (system.topology)."""
    out = []
    for p in points:
        layouts = [r.layout for r in p.measured if r.layout is not None and r.layout.target_physical_cores]
        if not layouts:
            continue
        asked, cores = layouts[0].cores_asked, min(x.target_physical_cores or 0 for x in layouts)
        if asked is not None and cores < asked:
            out.append(
                f"{p.label()}: {asked} physical cores asked, the target's {len(layouts[0].target_cpus)} CPUs were "
                f"on {cores} (SMT siblings, which share a core's units, filled in): its figures are not those of "
                f"{asked} cores."
            )
    return out


def _ghz(p: PointStats) -> float | None:
    return p.clock_mhz / 1000 if p.clock_mhz else None


def knees(points: list[PointStats], factors: Mapping[str, list[Level]]) -> list[Knee]:
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
        ys = [p.goodput_rps.mean for p in ps]
        why = _no_knee(ps)
        bounded = any(p.limits() for p in ps)  # the generator's or the machine's saturation, not the server's
        out.append(Knee(rest, None if why else kneedle(xs, ys), None if bounded else saturation(xs, ys), why))
    return out


def _no_knee(ps: list[PointStats]) -> str:
    """Why Kneedle's knee would say nothing of the server: it rescales any
    curve to [0, 1], so three means within 0.3% of each other (noise) get a
    knee as readily as a real rise, and points the generator or the machine
    set are not the server's curve. A knee is given only where the highest
    mean's 95% interval lies above the lowest's."""
    if any(p.limits() for p in ps):
        return "not given, nor saturation: some points are lower bounds (the generator or the machine set them)"
    low = min(ps, key=lambda p: p.goodput_rps.mean)
    high = max(ps, key=lambda p: p.goodput_rps.mean)
    if any(math.isnan(x) for x in (low.goodput_rps.ci_high, high.goodput_rps.ci_low)):
        return "not given: a point of one run has no interval to tell a rise from noise"
    if not high.goodput_rps.ci_low > low.goodput_rps.ci_high:
        return "not given: throughput does not rise beyond its 95% intervals over these concurrencies"
    if float(high.levels["concurrency"]) < float(low.levels["concurrency"]):
        return "not given: throughput falls with load here"
    return ""


def factor_anova(points: list[PointStats], factors: Mapping[str, list[Level]]) -> list[Anova]:
    """Type II ANOVA of every measured run over the plan's factors, on log
    throughput, on service demand (where every run has it) and on log p99.
    A response leaves out the runs the verdicts do not read it from: the
    throughput and CPU per request of users whose think time sets the rate,
    and the p99 of every run of a point where one is too short to hold a
    tail (best.P99_MIN_RESPONSES). Whole points: in a closed loop the short
    runs are the slow ones, and dropping them alone would bias the point's
    p99 down."""
    rows = []
    for p in points:
        if p.failing:
            continue
        demand = p.demand_ms if len(p.demand_ms) == len(p.measured) else [math.nan] * len(p.measured)
        thin = min((x.responses for x in p.results()), default=0) < P99_MIN_RESPONSES
        for rps, r, d in zip(p.run_goodput_rps, p.measured, demand, strict=True):
            if rps > 0 and r.p99_us:
                rows.append(
                    {
                        **p.levels,
                        "log_goodput": math.nan if p.think_s else math.log(rps),
                        "demand_ms": math.nan if p.think_s else d,
                        "log_p99": math.nan if thin else math.log(r.p99_us),
                    }
                )
    why = {
        "log_goodput": "users' think time set their rate, which the verdicts do not compare",
        "log_p99": (
            f"their point has a run of fewer than {P99_MIN_RESPONSES:,} responses, too few for a p99 (the verdicts "
            "do not rank it)"
        ),
        "demand_ms": "users' think time set their rate, or the CPU per request was not measured in every run",
    }
    out = []
    for response in RESPONSES:
        usable = [r for r in rows if not math.isnan(float(r[response]))]
        a = anova(usable, [f for f in factors if all(f in r for r in usable)], response) if usable else None
        if a is not None:
            left = len(rows) - len(usable)
            out.append(replace(a, left_out=left, left_out_why=why[response] if left else ""))
    return out


def _order(p: PointStats, factors: Mapping[str, list[Level]]) -> tuple[int, ...]:
    """Points in the plan's order of factor levels, not the runs' random one."""
    return tuple(
        factors[k].index(v) if k in factors and v in factors[k] else len(factors.get(k, []))
        for k, v in p.levels.items()
    )


def _cpus_given(p: PointStats) -> float | None:
    """The CPUs the target had, from the layout stored with its runs
    (whatever the plan called the factor); None for a server not started here."""
    for r in p.measured:
        if r.layout is not None and r.layout.controlled:
            return r.layout.target_cores
    return None


def scaling_fits(points: list[PointStats], factors: Mapping[str, list[Level]]) -> list[ScalingFit]:
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
            points_out = [(float(p.levels[factor]), p.goodput_rps.mean) for p in ps if p.levels[factor] in left]
            out.append(ScalingFit(factor, fixed, model, points_out))
    return out


def _model(factor: str, ps: list[PointStats]) -> ScalingModel:
    """Failing points, and points whose generator shared the target's cores
    (they understate the target), are left out; so are load levels past
    saturation, where a closed loop only queues."""
    dropped = [(float(p.levels[factor]), "more than 1% of its requests failed") for p in ps if p.failing]
    ps = [p for p in ps if not p.failing]
    dropped += [(float(p.levels[factor]), "the load generator shared the target's cores") for p in ps if p.shared]
    ps = [p for p in ps if not p.shared]
    if ps and factor == "concurrency":
        kept, past = below_saturation([float(p.levels[factor]) for p in ps], [p.goodput_rps.mean for p in ps])
        dropped += [(float(ps[i].levels[factor]), "past saturation") for i in past]
        ps = [ps[i] for i in kept]
    ns, xs = [float(p.levels[factor]) for p in ps], [p.goodput_rps.mean for p in ps]
    return choose(ns, xs, dropped)
