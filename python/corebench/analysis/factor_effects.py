"""Each configuration factor's effect, level by level, at matched load and
configuration: the family's comparisons counted by class, and their
average (`analysis.pooled`) with its interval, where there are three or
more."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from typing import Any

from corebench.analysis.effect import (
    POWER,
    VERDICTS,
    Effect,
    change_size,
    counted,
    effect,
    held_together,
    held_words,
    pct,
)
from corebench.analysis.family import Family
from corebench.analysis.finding import Figure, Finding, Interval, caveats
from corebench.analysis.points import PointStats
from corebench.analysis.pooled import pool, poolable, said


@dataclass(frozen=True)
class Compared:
    a: PointStats
    b: PointStats
    gain: Effect


def factor_effects(
    points: list[PointStats], factors: dict[str, list[Any]], load: set[str], family: Family, lines: int = 0
) -> list[Finding]:
    """Each level of each configuration factor (cpus and load factors aside)
    against the factor's first level, at each combination of the other
    factors (load included, so always at matched load); the averages held
    over `lines` combined lines (0: these rows' own)."""
    rows = factor_rows(points, factors, load, family)
    lines = lines or combined(rows)
    return [row(label, pairs, lines) for label, pairs in rows]


def combined(rows: list[tuple[str, list[Compared]]]) -> int:
    """How many averages these rows give: throughput, the target's CPU per
    request and each service's, each one line of the report's family."""
    count = 0
    for _, pairs in rows:
        demand, services = demand_effects(pairs)
        count += sum(poolable(es) for es in ([c.gain for c in pairs], demand, *services.values()))
    return count


def demand_effects(compared: list[Compared]) -> tuple[list[Effect], dict[str, list[Effect]]]:
    """The comparisons' effects on the target's CPU per request, and on
    each service's (a cgroup of its own), where each side has 2 runs."""
    measured = [c for c in compared if len(c.a.demand_ms) >= 2 and len(c.b.demand_ms) >= 2]
    names = sorted(
        {n for c in measured for p in (c.a, c.b) for r in p.measured if r.monitor for n in r.monitor.services}
    )
    services = {
        name: held_together(
            [
                effect(c.a.service_demand_ms[name], c.b.service_demand_ms[name])
                for c in measured
                if len(c.a.service_demand_ms.get(name, [])) >= 2 and len(c.b.service_demand_ms.get(name, [])) >= 2
            ]
        )
        for name in names
    }
    return held_together([effect(c.a.demand_ms, c.b.demand_ms) for c in measured]), services


def factor_rows(
    points: list[PointStats], factors: dict[str, list[Any]], load: set[str], family: Family
) -> list[tuple[str, list[Compared]]]:
    """Each level against the factor's first, as its matched comparisons."""
    names = [n for n in points[0].levels if n != "cpus" and n not in load]
    rows: list[tuple[str, list[Compared]]] = []
    for name in names:
        seen = list(dict.fromkeys(p.levels[name] for p in points))
        levels = [lv for lv in factors.get(name, []) if lv in seen] or seen
        if len(levels) < 2:
            continue

        def rest(p: PointStats, name: str = name) -> str:
            return json.dumps({k: v for k, v in p.levels.items() if k != name}, sort_keys=True)

        by_level = {lv: {rest(p): p for p in points if p.levels[name] == lv} for lv in levels}
        base = by_level[levels[0]]
        for lv in levels[1:]:
            pairs = [Compared(base[k], b, family.get(base[k], b)) for k, b in by_level[lv].items() if k in base]
            if pairs:
                rows.append((f"{name}={lv} against {name}={levels[0]}", pairs))
    return rows


def row(label: str, compared: list[Compared], lines: int = 1) -> Finding:
    """One level against the first: throughput, then the target's and
    each service's CPU per request, each combined over the comparisons
    and held over the report's `lines` combined lines."""
    es = [c.gain for c in compared]
    ratios = [e.mean_b / e.mean_a for e in es if e.mean_a > 0 and e.mean_b > 0]
    median = f"; median change {pct(statistics.median(ratios) - 1)}" if ratios else ""
    n = len(es)
    demand_es, services = demand_effects(compared)
    demand = _demand(demand_es, sorted(services), lines) + "".join(_service_demands(services, lines))
    together = pool(es, lines)
    figures = tally(es)
    if demand_ratios := [e.ratio for e in demand_es if e.tested]:
        figures.append(Figure("median CPU per request ratio", statistics.median(demand_ratios), "ratio"))
    if together is not None:
        interval, outcome = together.interval(), together.outcome
    elif n == 1:
        interval, outcome = Interval.of(es[0]), es[0].verdict
    else:
        interval, outcome = None, ""
    return Finding(
        "verdict",
        f"{label}: throughput {counted(es)} of {n} matched comparison{'s' if n != 1 else ''}{median}"
        f"{said(together)}.{could_see(es)}{demand}",
        subject=label,
        figures=tuple(figures),
        interval=interval,
        outcome=outcome,
        caveats=caveats(
            limited_note([(c.a, c.b) for c in compared]), _ceiling_note(compared), _transport_note(compared)
        ),
    )


# Ceilings closer than this are one generator limit for both sides.
CEILINGS_DIFFER = 0.05


def _ceiling_note(compared: list[Compared]) -> str:
    """Where both sides ran near the generator's ceiling and the ceilings
    differ between them (calibrated per protocol and page: HTTP/2 costs the
    generator less per request than HTTP/1.1), both figures are partly the
    generator's: their ratio cannot be split between the generator and the
    server (ANSWERS.md §4: no cause that was not measured)."""
    both = [
        (a, b)
        for c in compared
        if c.a.near_ceiling and c.b.near_ceiling
        if (a := c.a.ceiling_rps()) and (b := c.b.ceiling_rps())
    ]
    differ = [(a, b) for a, b in both if abs(b / a - 1) >= CEILINGS_DIFFER]
    if not differ:
        return ""
    a, b = differ[0]
    return (
        f" In {len(differ)} of these comparisons both sides ran near the generator's ceiling, and its ceilings differ "
        f"between the sides ({a:,.0f} against {b:,.0f} req/s, ×{b / a:.2f}, calibrated per protocol and page): "
        "the measured ratio there cannot be split between the generator and the server."
    )


def _transport_note(compared: list[Compared]) -> str:
    """Where the two sides' load ran on different I/O (HTTP/2 runs on
    epoll, HTTP/1.x on io_uring where it works), the generator's cost per
    request differed with the factor: the effect is confounded with it."""
    ios = [({x.io for x in c.a.results()}, {x.io for x in c.b.results()}) for c in compared]
    differ = [(a, b) for a, b in ios if a and b and a != b]
    if not differ:
        return ""
    a, b = differ[0]
    return (
        f" The generator's I/O differed between the sides ({'/'.join(sorted(a))} against {'/'.join(sorted(b))}; "
        "HTTP/2 runs on epoll, docs/http2.md): the effect is the server's and the generator's together, unless "
        "the generator was far from its ceiling on both."
    )


def could_see(es: list[Effect]) -> str:
    """What the inconclusive ones among `es` could have detected (median)."""
    detect = [e.detectable for e in es if e.verdict == "inconclusive"]
    if not detect:
        return ""
    return (
        f" Where inconclusive, this design could detect changes of {change_size(statistics.median(detect))} "
        f"(median over those comparisons; {POWER:.0%} power at the family's level): a smaller effect may be "
        "there unseen."
    )


def limited_note(pairs: list[tuple[PointStats, PointStats]]) -> str:
    """How many of these comparisons name a point that measured the
    generator or the machine; where both sides of every one did, the
    comparison may be partly of the generator's setups."""
    limited = sum(bool(a.limits() or b.limits()) for a, b in pairs)
    if not limited:
        return ""
    if all(a.limits() and b.limits() for a, b in pairs):
        return (
            f" Caveat: in {'each' if len(pairs) > 1 else 'this'} comparison both sides' figures are partly the "
            "generator's or the machine's (above): it may compare the generator's setups as well as the server, and "
            "a narrow interval says how repeatable that was, not what the server alone would do."
        )
    return (
        f" Caveat: {'all' if limited == len(pairs) else limited} of these comparisons involve a point whose figures "
        "are partly the generator's or the machine's (above): an effect partly of the load generator, in a share "
        "these runs cannot separate."
    )


def tally(es: list[Effect]) -> list[Figure]:
    """Comparisons as figures: how many, how many of each class, their
    median ratio, and what the inconclusive ones could have detected."""
    figures = [Figure("comparisons", len(es), "count")]
    figures += [Figure(f"comparisons {v}", k, "count") for v in VERDICTS if (k := sum(e.verdict == v for e in es))]
    if ratios := [e.mean_b / e.mean_a for e in es if e.mean_a > 0 and e.mean_b > 0]:
        figures.append(Figure("median ratio", statistics.median(ratios), "ratio"))
    if detect := [e.detectable for e in es if e.verdict == "inconclusive"]:
        figures.append(Figure("detectable change", statistics.median(detect), "share"))
    return figures


def _demand(es: list[Effect], services: list[str], lines: int) -> str:
    """The same level's effect on the target's CPU per request (service
    demand), where the monitor measured it: what a field report meant by
    one MPM using less CPU. The target's own processes only: a service
    (a database) is measured apart, and said to be."""
    if not es:
        return ""
    ratios = [e.ratio for e in es if e.tested]
    if not ratios:
        return ""
    apart = f", the target's own processes ({', '.join(services)} measured apart)" if services else ""
    return (
        f" CPU per request (service demand{apart}; {held_words(es)}): {counted(es)} of {len(es)}, "
        f"median change {pct(statistics.median(ratios) - 1)}{said(pool(es, lines))}."
    )


def _service_demands(services: dict[str, list[Effect]], lines: int) -> list[str]:
    """Each service's own CPU per request, the same level against the
    first, where its cgroup was measured in both: the second field report's
    question (did tuning the database cut its CPU?) asked of the database,
    not only of the web server."""
    out = []
    for name, es in services.items():
        ratios = [e.ratio for e in es if e.tested]
        # D = U/X: the service's background work (a database's checkpoints,
        # vacuum) is spread over the web server's successes.
        what = f" {name}'s own CPU per request (its cgroup's CPU over the successes, background work included"
        if ratios:
            out.append(
                f"{what}; {held_words(es)}): {counted(es)} of {len(es)}, median change "
                f"{pct(statistics.median(ratios) - 1)}{said(pool(es, lines))}."
            )
        elif es:
            out.append(f"{what}): {counted(es)} of {len(es)}.")
    return out
