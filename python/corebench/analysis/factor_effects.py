"""Each configuration factor's effect, level by level, at matched load and
configuration: the family's comparisons counted by class, and one answer
over them where they agree.

The matched comparisons of a level against the first are each tested at
the family's level, which with 3 runs a side and dozens of comparisons
detects only large changes. Where they agree (Cochran's Q test of
homogeneity not rejected), their log ratios are combined, each weighted by
its precision, as strata of one effect (DerSimonian & Laird 1986, the same
combination `analysis.sessions` uses across sessions), its interval by
Hartung & Knapp (2001) on k − 1 degrees of freedom, so that a few strata
whose variances come from 2 runs each do not claim a precision they do not
have: one estimate with its interval, stated as an effect.
Where they disagree, no single effect is given: the range is."""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from typing import Any

from scipy import stats as st

from corebench.analysis.anova import MARGIN
from corebench.analysis.effect import POWER, VERDICTS, Effect, bound, change_size, counted, effect, safe_exp
from corebench.analysis.family import Family
from corebench.analysis.finding import Figure, Finding, Interval, caveats
from corebench.analysis.points import PointStats
from corebench.analysis.sessions import combine
from corebench.analysis.stats import ALPHA

# Strata combined into one effect only from this many: with two, the
# Hartung–Knapp interval rests on 1 degree of freedom (t = 12.7) and says
# less than either comparison; their own classes are given instead.
MIN_STRATA = 3


@dataclass(frozen=True)
class Compared:
    a: PointStats
    b: PointStats
    gain: Effect


def factor_effects(
    points: list[PointStats], factors: dict[str, list[Any]], load: set[str], family: Family
) -> list[Finding]:
    """Each level of each configuration factor (cpus and load factors aside)
    against the factor's first level, at each combination of the other
    factors (load included, so always at matched load)."""
    names = [n for n in points[0].levels if n != "cpus" and n not in load]
    out = []
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
                out.append(row(f"{name}={lv} against {name}={levels[0]}", pairs))
    return out


def row(label: str, compared: list[Compared]) -> Finding:
    es = [c.gain for c in compared]
    ratios = [e.mean_b / e.mean_a for e in es if e.mean_a > 0 and e.mean_b > 0]
    median = f"; median change {_pct(statistics.median(ratios) - 1)}" if ratios else ""
    n = len(es)
    measured = [c for c in compared if len(c.a.demand_ms) >= 2 and len(c.b.demand_ms) >= 2]
    demand_es = [effect(c.a.demand_ms, c.b.demand_ms) for c in measured]
    services = sorted(
        {n for c in measured for p in (c.a, c.b) for r in p.measured if r.monitor for n in r.monitor.services}
    )
    demand = _demand(demand_es, services) + "".join(_service_demands(measured, services))
    together = pool(es)
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
        caveats=caveats(limited_note([(c.a, c.b) for c in compared]), _transport_note(compared)),
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
    """How many of these comparisons name a point that measured the generator or the machine."""
    limited = sum(bool(a.limits() or b.limits()) for a, b in pairs)
    if not limited:
        return ""
    return (
        f" Caveat: {'all' if limited == len(pairs) else limited} of these comparisons involve a point whose figures "
        "are partly the generator's or the machine's (above): an effect of the load generator as much as of the "
        "server."
    )


@dataclass(frozen=True)
class Pooled:
    """Matched comparisons as strata of one effect (the module's note):
    the combined ratio and its interval, and Cochran's Q of their agreement."""

    ratio: float
    low: float
    high: float
    q: float
    p_q: float
    k: int  # the comparisons combined
    spread: tuple[float, float]  # the lowest and highest of their ratios

    @property
    def agree(self) -> bool:
        return self.p_q >= ALPHA

    @property
    def outcome(self) -> str:
        """The combined effect's class, or "disagree" where Q rejects one effect."""
        if not self.agree:
            return "disagree"
        bound = 1 + MARGIN
        if self.low > 1 or self.high < 1:
            return "higher" if self.low > 1 else "lower"
        return "equivalent" if 1 / bound < self.low and self.high < bound else "inconclusive"

    def interval(self) -> Interval | None:
        if not self.agree:
            return None
        method = f"DerSimonian–Laird over {self.k} comparisons, Hartung–Knapp interval on {self.k - 1} df"
        return Interval(self.ratio, self.low, self.high, "ratio", method=method)


def pool(es: list[Effect]) -> Pooled | None:
    """The comparisons that can be combined (tested, with a spread), as one effect."""
    usable = [e for e in es if e.tested and e.se > 0]
    if len(usable) < MIN_STRATA:
        return None
    c = combine([math.log(e.ratio) for e in usable], [e.se**2 for e in usable], [], knapp=True)
    p_q = float(st.chi2.sf(c.q, len(usable) - 1))
    ratios = [e.ratio for e in usable]
    return Pooled(c.ratio, safe_exp(c.low), safe_exp(c.high), c.q, p_q, len(usable), (min(ratios), max(ratios)))


def said(c: Pooled | None, what: str = "over them") -> str:
    """The pooled effect as a clause of a verdict, "" where there is none."""
    if c is None:
        return ""
    if not c.agree:
        lo, hi = c.spread
        return (
            f"; the comparisons disagree (Cochran's Q = {c.q:.1f}, p ≈ {c.p_q:.2g}, approximate: each variance is "
            f"from a few runs), from {_pct(lo - 1)} to "
            f"{_pct(hi - 1)}: no one effect summarises them"
        )
    kind = f"within ±{MARGIN:.0%}" if c.outcome == "equivalent" else c.outcome
    lo, hi = c.spread
    return (
        f"; combined {what} (Cochran's Q does not reject their agreement, p ≈ {c.p_q:.2g}, though with a few runs "
        f"a stratum it has little power: they range from {_pct(lo - 1)} to {_pct(hi - 1)}; DerSimonian–Laird "
        f"weights, Hartung–Knapp interval on {c.k - 1} df, truncated; one test per line, not adjusted): "
        f"{_pct(c.ratio - 1)} (95% CI {bound(c.low - 1)} to {bound(c.high - 1)}), {kind}"
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


def _demand(es: list[Effect], services: list[str]) -> str:
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
        f" CPU per request (service demand{apart}): {counted(es)} of {len(es)}, median change "
        f"{_pct(statistics.median(ratios) - 1)}{said(pool(es))}."
    )


def _service_demands(compared: list[Compared], services: list[str]) -> list[str]:
    """Each service's own CPU per request, the same level against the
    first, where its cgroup was measured in both: the second field report's
    question (did tuning the database cut its CPU?) asked of the database,
    not only of the web server."""
    out = []
    for name in services:
        es = [
            effect(c.a.service_demand_ms[name], c.b.service_demand_ms[name])
            for c in compared
            if len(c.a.service_demand_ms.get(name, [])) >= 2 and len(c.b.service_demand_ms.get(name, [])) >= 2
        ]
        ratios = [e.ratio for e in es if e.tested]
        # D = U/X: the service's background work (a database's checkpoints,
        # vacuum) is spread over the web server's successes.
        what = f" {name}'s own CPU per request (its cgroup's CPU over the successes, background work included"
        if ratios:
            out.append(
                f"{what}; each comparison unadjusted): {counted(es)} of {len(es)}, median change "
                f"{_pct(statistics.median(ratios) - 1)}{said(pool(es))}."
            )
        elif es:
            out.append(f"{what}): {counted(es)} of {len(es)}.")
    return out


def _pct(share: float) -> str:
    return f"{share * 100:+.1f}%".replace("-", "−")
