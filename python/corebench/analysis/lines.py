"""Findings about how the experiment was measured rather than what it
measured: how far adaptive repetitions got and whether throughput drifted,
the generator's ceiling and the points near it, the load's I/O and
protocol, and a replay's failures as its log recorded them."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Mapping

from corebench.analysis.drift import drift, too_few
from corebench.analysis.points import PointStats, ceiling_interval, refuting
from corebench.analysis.precision import goodput_by_point, precision
from corebench.plan.model import DEFAULT_PRECISION
from corebench.result import NEAR_CEILING, LoadResult
from corebench.store import Ceiling, LoadNode, StoredExperiment, StoredRun


def schedule_lines(experiment: Mapping[str, object], runs: list[StoredRun], points: list[PointStats]) -> list[str]:
    """How far the repetitions got: an adaptive experiment's precision, and
    whether throughput drifted across rounds. `experiment`: the plan's
    [experiment] table."""
    out = []
    if experiment.get("repetitions") == "auto":
        given = experiment.get("precision")
        target = float(given) if isinstance(given, (int, float)) and given else DEFAULT_PRECISION
        by_point = goodput_by_point(runs)
        got = {p.label(): precision(by_point.get(p.runs[0].point_key, []), target) for p in points}
        rounds = max((r.round or 0 for r in runs), default=0)
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
    # Each configuration's runs are held against their own session's mean:
    # a step between sessions (another day, another machine state) is not a
    # drift while the experiment ran.
    pairs: dict[str, list[tuple[int, float]]] = {}
    for r in runs:
        if r.measured and r.round and r.result is not None:
            pairs.setdefault(f"{r.session or 1}|{r.point_key}", []).append((r.round, r.result.goodput_rps))
    found = drift(pairs)
    if found is not None:
        several = len({k.split("|")[0] for k in pairs}) > 1
        out.append(
            found.sentence() + (" (Within each session: each run against its session's mean.)" if several else "")
        )
    else:
        rounds = len({r for pairs_ in pairs.values() for r, _ in pairs_})
        if rounds >= 2:
            out.append(too_few(rounds))
    return out


# A think time (or start-up) this share of a run or more makes the run too
# short for its load model: each user completes few requests, and the start,
# every user's first request at once, weighs on the figures.
SHORT_SHARE = 0.1


def short_lines(points: list[PointStats]) -> list[str]:
    """Runs too short for their users' think time (ANSWERS.md §7)."""
    short: dict[str, tuple[float, float]] = {}
    for p in points:
        for x in p.results():
            if x.think_s is not None and x.duration_s > 0:
                think = sum(x.think_s) / 2
                if think >= SHORT_SHARE * x.duration_s:
                    short[p.label()] = (think, x.duration_s)
    if not short:
        return []
    think, duration = max(short.values())
    names = ", ".join(list(short)[:3]) + (", ..." if len(short) > 3 else "")
    return [
        f"Too short for the load model: at {len(short)} point(s) ({names}) the users' mean think time "
        f"({think:g} s) is {think / duration:.0%} of a {duration:.3g} s run, so each user made only a few requests and "
        f"the start, every user's first request at once, weighs on the figures. Run for {1 / SHORT_SHARE:g}× the "
        f"mean think time or more ({think / SHORT_SHARE:g} s)."
    ]


def replay_lines(runs: list[StoredRun]) -> list[str]:
    """Say it when a replay's unsuccessful responses were the log's own."""
    same = sum(r.result.as_logged for r in runs if r.result is not None and not r.warmup)
    if not same:
        return []
    return [
        f"Replay: {same:,} unsuccessful responses (4xx, 5xx) over the measured runs had the status the log "
        "recorded for the same request (the site answered as it did then); they are not counted as failures, "
        "nor as throughput."
    ]


def io_said(ios: Counter[str]) -> str:
    """Which transport the measured runs' load threads ran on, counted in runs."""
    if len(ios) == 1:
        ((io, n),) = ios.items()
        runs = "the measured run ran its" if n == 1 else f"all {n:,} measured runs ran their"
        return f"{runs} load threads on {io}"
    (first, n), *rest = sorted(ios.items())
    said = ", ".join(f"{k:,} on {io}" for io, k in rest)
    return f"of the measured runs, {n:,} ran their load threads on {first} and {said}"


def _mean_ci(c: Ceiling) -> str:
    """The projected ceiling's interval, in the words of its sentence."""
    ci = ceiling_interval(c.ceiling_rps, c.ceiling_low_rps, c.ceiling_high_rps, c.repeats)
    if ci is None:
        return ""
    return (
        f"; their mean's 95% CI {max(ci[0], 0):,.0f}–{ci[1]:,.0f}, Student's t, which covers their spread, not the "
        "projection's"
    )


def generator_lines(exp: StoredExperiment, points: list[PointStats]) -> list[str]:
    """The generator's calibrated ceiling, and the points that came near it."""
    out = ["Generator " + c.sentence(_mean_ci(c)).removeprefix("generator ") + "." for c in exp.calibration or []]
    out += above_ceiling(points)
    near = [p.label() for p in points if p.near_ceiling]
    if near:
        out.append(
            f"Lower bounds: at {len(near)} point(s) ({', '.join(near[:3])}{', ...' if len(near) > 3 else ''}) a run "
            f"reached {NEAR_CEILING:.0%} or more of the lowest of the generator's calibrations, so the generator "
            "may have set the figure (being near its ceiling does not show that it did): the server can do at "
            "least that much."
        )
    out += hosts_lines(exp, points)
    results = [x for p in points for x in p.results()]
    ios = Counter(r.io for r in results)
    if ios:
        out.append(f"Load I/O: {io_said(ios)} (corebench load --io; docs/load.md).")
    protocols = Counter(_protocol(r) for r in results)
    if any(p.startswith("HTTP/2") for p in protocols):
        said = " and ".join(f"{p} in {n:,}" for p, n in sorted(protocols.items()))
        out.append(f"Protocol: the measured runs spoke {said} (HTTP/2 runs on epoll; docs/http2.md).")
    return out


def hosts_lines(exp: StoredExperiment, points: list[PointStats]) -> list[str]:
    """Which host ran the target and which the load, where the target ran
    on a Ray node of its own (`[target] node`) or the load came from a Ray
    cluster's agents (`[cluster]`)."""
    layouts = [r.layout for p in points for r in p.measured if r.layout is not None]
    nodes = sorted({x.target_host for x in layouts if x.target_host})
    agents = any(x.generator == "ray agents" for x in layouts)
    if not nodes and not agents:
        return []
    running = sorted({t.base_url or "?" for p in points for r in p.measured if (t := r.target) and t.kind == "url"})
    if nodes:
        target = (
            f"the target ran on the Ray node {', '.join(nodes)} ([target] node), on CPUs of that host, measured there "
            "(its cores, the target's CPU, the clock)"
        )
    elif running:
        target = f"the target is a server already running at {', '.join(running)} (url), wherever that is"
    else:
        target = "the target ran on the machine that ran the plan (the host above)"
    load = "the machine that ran the plan (the host above)"
    if agents:
        load = f"the Ray cluster's load agents{_load_hosts(exp.host.load_nodes)}"
    shared = sum(x.shared for x in layouts)
    beside = (
        f"; in {shared} run(s) the load ran on the target's cores too (a load agent on its node, or load on "
        "the same machine on its cores, as in a lab)"
        if shared
        else "; no load ran on the target's cores"
    )
    across = [c for c in exp.calibration or [] if c.across]
    if any(c.error is None for c in across):
        ceiling = (
            " The generator's ceiling was measured from the load hosts against the built-in server on the target's "
            "host (above)."
        )
    elif across:
        ceiling = " The generator's ceiling could not be measured across these hosts (why: above)."
    else:
        ceiling = (
            " The generator's ceiling was not measured across these hosts ([experiment] calibrate = false, or a "
            "store from before such calibrations)."
        )
    return [f"Hosts: {target}; the load came from {load}{beside}.{ceiling}{_ray_spent(points)}"]


def _load_hosts(hosts: list[LoadNode]) -> str:
    """The agents' hosts as placed at the start, agents on one host counted together."""
    by_node: dict[str, list[LoadNode]] = {}
    for h in hosts:
        by_node.setdefault(h.node, []).append(h)
    said = [f"{f'{len(on)} agents' if len(on) > 1 else 'an agent'} on {on[0].line()}" for on in by_node.values()]
    return f" ({'; '.join(said)})" if said else ""


def _ray_spent(points: list[PointStats]) -> str:
    """What Ray's own processes on the target's node used, and where they ran."""
    rays = [r.monitor.ray for p in points for r in p.measured if r.monitor is not None and r.monitor.ray is not None]
    cpu = [x.cpu for x in rays if x.cpu is not None]
    if not cpu:
        return ""
    kept = [x.cpus for x in rays if x.cpus is not None]
    if len(kept) == len(rays) and all(k == kept[0] for k in kept):
        where = f"kept off the target's CPUs (on CPU {', '.join(map(str, kept[0]))} of that node)"
    elif len(kept) == len(rays):
        where = "kept off the target's CPUs"
    else:
        where = (
            f"kept off the target's CPUs in {len(kept)} of {len(rays)} runs; in the others the node had no CPU to "
            "spare and they shared the target's"
        )
    return (
        f" Ray's own processes on that node (its raylet and workers, corebench's target agent among them) used "
        f"{statistics.fmean(cpu):.3f} cores on average over a run (at most {max(cpu):.3f}), {where}; their CPU is "
        "not the target's."
    )


def above_ceiling(points: list[PointStats]) -> list[str]:
    """Runs faster than the highest calibration of the generator's ceiling
    for their protocol, beyond the calibrations' noise (points.refuted_above):
    a ceiling holds for the load it was measured with (the built-in
    server's page: the plan's /static/N, else 64 bytes), so a run above it
    says the calibration did not fit this load, not that the server beat
    the generator."""
    # Each run holds the ceiling of its own layout, protocol and load
    # model (runner.calibrate.ceiling_for), stored with its layout.
    above = [
        x.goodput_rps / r.layout.generator_ceiling_rps
        for r in refuting([r for p in points for r in p.measured])
        if (x := r.result) is not None and r.layout is not None and r.layout.generator_ceiling_rps
    ]
    if not above:
        return []
    protocols = sorted({_protocol(x) for p in points for x in p.results()})
    return [
        f"Calibration error: {len(above)} measured run(s) went faster than every calibration of the generator's "
        f"ceiling, past the 95% prediction bound of its calibrations for the runs it held (up to {max(above):.0%} "
        "of the ceiling). The ceiling was measured with the same protocol and load model "
        f"against the built-in server's page (the plan's /static/N, else 64 bytes) and projected from its CPU "
        f"per request; these runs' load ({', '.join(protocols)}, their pages) cost the generator less per "
        "request, or the projection fell short: "
        "either way the ceiling does not hold for them, so no run is marked a lower bound by it (the other marks, "
        "a CPU-bound generator or shared cores, stand)."
    ]


def _protocol(result: LoadResult) -> str:
    name = f"HTTP/{result.http_version}"
    return name + (f" with {result.streams} streams per connection" if result.streams > 1 else "")
