"""Plain-language verdicts, each with its figures."""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from corebench.analysis.anova import MARGIN, tost
from corebench.analysis.points import FAILING_SHARE, PointStats
from corebench.analysis.stats import ALPHA, Comparison, Summary, compare, dispersion_differs, holm, mcb

_SLO = re.compile(r"^\s*p(\d+(?:\.\d+)?)\s*(<=?)\s*(\d+(?:\.\d+)?)\s*(us|ms|s)\s*$")
_SCALE_US = {"us": 1, "ms": 1000, "s": 1_000_000}


@dataclass(frozen=True)
class Slo:
    percentile: float
    limit_us: float
    inclusive: bool = False  # <= rather than <

    def __str__(self) -> str:
        return f"p{self.percentile:g} {'≤' if self.inclusive else '<'} {self.limit_us / 1000:g} ms"

    def met(self, value_us: float) -> bool:
        return value_us <= self.limit_us if self.inclusive else value_us < self.limit_us


def parse_slo(text: str) -> Slo:
    m = _SLO.match(text)
    if not m or float(m.group(1)) not in (50.0, 99.0):
        raise ValueError(f"{text!r} is not a latency target: write p99<=200ms or p50<20ms (p50 or p99)")
    return Slo(float(m.group(1)), float(m.group(3)) * _SCALE_US[m.group(4)], m.group(2) == "<=")


def _tail(p: PointStats, percentile: float) -> float:
    return (p.p99_us if percentile == 99.0 else p.p50_us).median


def cost_per_million(p: PointStats, price_per_hour: float) -> float:
    """Price of an hour over the requests an hour serves, per million."""
    if not p.goodput_rps.mean > 0:
        return math.inf
    return price_per_hour / (p.goodput_rps.mean * 3600) * 1e6


def price_of(p: PointStats, prices: dict[str, dict[str, float]]) -> float | None:
    for factor, by_level in prices.items():
        if factor in p.levels and str(p.levels[factor]) in by_level:
            return by_level[str(p.levels[factor])]
    return None


# Factors that set how much load is offered, not what is measured: their
# levels give curves (throughput and latency against load, the knee), and
# configurations are compared at matched load, never across it.
LOAD_FACTORS = ("concurrency", "rate", "users")


def load_factors(factors: Mapping[str, Sequence[object]], load: Mapping[str, object] | None = None) -> set[str]:
    """The plan's load factors: those named as one, and any factor whose
    placeholder sets a [load] concurrency, rate or users."""
    names = {f for f in factors if f in LOAD_FACTORS}
    for key in LOAD_FACTORS:
        value = str((load or {}).get(key, ""))
        names |= {f for f in factors if "{" + f + "}" in value}
    return names


def verdicts(
    points: list[PointStats],
    prices: dict[str, dict[str, float]] | None = None,
    slo: Slo | None = None,
    factors: dict[str, list[Any]] | None = None,
    load: set[str] | None = None,
    searched: bool = False,
) -> list[str]:
    """`searched`: the runs were capacity searches, whose sustained rates
    carry the comparison (analysis.capacity); the throughput of the step
    stored for each is not compared again here."""
    measured = [p for p in points if p.measured and not math.isnan(p.goodput_rps.mean) and p.goodput_rps.mean > 0]
    ok = [p for p in measured if not p.failing]
    failing = [p for p in measured if p.failing]
    out = []
    if failing:
        worst = max(failing, key=lambda p: p.error_share)
        out.append(
            f"Failing: {len(failing)} point(s) ({', '.join(p.label() for p in failing[:3])}"
            f"{', ...' if len(failing) > 3 else ''}) answered more than {FAILING_SHARE:.0%} of requests with an "
            f"error or an unsuccessful status (worst: {worst.label()}, {worst.error_share:.1%}); they are left out "
            "of every verdict below, and their failures were never counted as throughput."
        )
    if not ok:
        return [*out, "No point has a successful measured run without failures: nothing to conclude."]
    load = load if load is not None else load_factors(factors or {})
    if not searched:
        out += _core_steps(ok) + _factor_effects(ok, factors or {}, load) + best_at_matched_load(ok, load, failing)
        if slo is not None:
            out += slo_verdicts(ok, slo, load)
        out += _costs(ok, prices or {}, slo)
    out += _steal(measured)
    shared = sorted({p.label() for p in ok if p.shared})
    if shared:
        out.append(
            f"Not shown here: at {len(shared)} point(s) ({', '.join(shared[:3])}{', ...' if len(shared) > 3 else ''}) "
            "the generator had no core of its own and shared the target's: those figures understate the server. "
            "Measure them on a machine with cores to spare, or with the load from other machines "
            "(a [cluster] of load agents in the plan)."
        )
    return out


def _steal(points: list[PointStats]) -> list[str]:
    runs = sum(p.steal_runs for p in points)
    if not runs:
        return []
    total = sum(len(p.measured) for p in points)
    worst = max(p.steal_max_s for p in points)
    return [
        f"Steal time: {runs} of {total} measured runs lost notable CPU time to the hypervisor (up to {worst:.1f} "
        "CPU-seconds in one run): this VM's vCPUs were ready but not run, so those figures are below what the machine "
        "gives unshared. Repeat them, or measure on dedicated hosts."
    ]


def _split(p: PointStats, load: set[str]) -> tuple[str, str]:
    """(the point's load levels, its configuration), as labels."""
    at = " ".join(f"{k}={v}" for k, v in p.levels.items() if k in load)
    config = " ".join(f"{k}={v}" for k, v in p.levels.items() if k not in load)
    return at, config


def best_set(points: list[PointStats], higher: bool = True) -> tuple[PointStats, list[PointStats]]:
    """The best point by mean goodput (or by mean p99 over its runs when not
    `higher`), and every other point not shown worse than the best of the
    rest: Hsu's multiple comparisons with the best (Hsu 1981, Ann. Statist.
    9(5); Hsu 1996, "Multiple Comparisons", ch. 4), simultaneous at 1 − α,
    `corebench.analysis.stats.mcb`. Points with fewer than 2 measured runs
    cannot be tested and stay in the set (`untested` names them)."""
    groups = [_best_values(p, higher) for p in points]
    found = mcb(groups, higher)
    means = [statistics.fmean(g) if g else (-math.inf if higher else math.inf) for g in groups]
    # The observed best by the same means the comparisons use, so the best is
    # always in its own set.
    at = max(range(len(points)), key=means.__getitem__) if higher else min(range(len(points)), key=means.__getitem__)
    tied = [p for i, p in enumerate(points) if i != at and found.in_set[i]]
    return points[at], tied


def _best_values(p: PointStats, higher: bool) -> list[float]:
    return list(p.run_goodput_rps) if higher else [float(r.p99_us) for r in p.measured if r.p99_us is not None]


def untested(points: list[PointStats]) -> list[PointStats]:
    """The points `best_set` cannot test: fewer than 2 measured runs."""
    return [p for p in points if len(p.measured) < 2]


def best_at_matched_load(
    points: list[PointStats], load: set[str], failing: list[PointStats] | None = None
) -> list[str]:
    """Configurations compared at each load level, never load levels with
    each other: the best by goodput and by p99, with the set not shown worse,
    and a steadier configuration where a test of spread says so."""
    if not any(k not in load for p in points for k in p.levels):
        return [
            "No configuration to compare: the factors set the load only; its effect is in the throughput and "
            "latency curves and the knee below."
        ]
    groups: dict[str, list[PointStats]] = {}
    for p in points:
        groups.setdefault(_split(p, load)[0], []).append(p)
    out = []
    for at, ps in sorted(groups.items(), key=lambda kv: _level_order(kv[1][0], load)):
        where = f"At {at}" if at else "Over all points"
        lost = [p for p in failing or [] if _split(p, load)[0] == at]
        if len(ps) == 1 and lost:
            only = ps[0]
            out.append(
                f"{where}, best throughput: {_split(only, load)[1]} at {only.goodput_rps.mean:,.0f} req/s, the only "
                f"configuration without failures ({', '.join(_split(p, load)[1] for p in lost)} failing)."
            )
        if len(ps) < 2:
            continue
        best, tied = best_set(ps)
        also = f"; not significantly worse: {', '.join(_split(p, load)[1] for p in tied)}" if tied else ""
        out.append(
            f"{where}, best throughput: {_split(best, load)[1]} at {best.goodput_rps.mean:,.0f} req/s "
            f"({_ci(best.goodput_rps)}){also} "
            f"(Hsu's multiple comparisons with the best, α = {ALPHA}){_untested_note(ps, load)}."
        )
        low, tied = best_set(ps, higher=False)
        also = f"; not significantly higher: {', '.join(_split(p, load)[1] for p in tied)}" if tied else ""
        out.append(
            f"{where}, lowest p99: {_split(low, load)[1]} at {low.p99_us.mean / 1000:.2f} ms (mean of its runs){also}."
        )
        out += _steadier(best, ps, where, load)
    return out


def _ci(s: Summary) -> str:
    if s.n < 2 or math.isnan(s.ci_low):
        return "one measured run: no confidence interval"
    return f"95% CI {s.ci_low:,.0f}–{s.ci_high:,.0f}"


def _untested_note(ps: list[PointStats], load: set[str]) -> str:
    few = untested(ps)
    if not few:
        return ""
    return f"; not tested, fewer than 2 measured runs, so kept in the set: {', '.join(_split(p, load)[1] for p in few)}"


def _level_order(p: PointStats, load: set[str]) -> tuple[tuple[int, float, str], ...]:
    """Load levels in ascending order: numbers by value, the rest by name."""
    key = []
    for k, v in p.levels.items():
        if k in load:
            key.append((0, float(v), "") if isinstance(v, (int, float)) else (1, 0.0, str(v)))
    return tuple(key)


def slo_verdicts(points: list[PointStats], slo: Slo, load: set[str]) -> list[str]:
    """At each load level, which configurations meet the latency objective
    (the median over runs of the percentile it names) and by what margin;
    prices are not needed."""
    groups: dict[str, list[PointStats]] = {}
    for p in points:
        groups.setdefault(_split(p, load)[0], []).append(p)
    out = []
    for at, ps in sorted(groups.items(), key=lambda kv: _level_order(kv[1][0], load)):
        met: list[str] = []
        missed: list[str] = []
        for p in sorted(ps, key=lambda p: _tail(p, slo.percentile)):
            value = _tail(p, slo.percentile)
            name = _split(p, load)[1] or "the target"
            margin = (1 - value / slo.limit_us) * 100
            (met if slo.met(value) else missed).append(
                f"{name} ({value / 1000:.2f} ms, {abs(margin):.0f}% {'under' if margin >= 0 else 'over'})"
            )
        where = f" at {at}" if at else ""
        out.append(
            f"{slo}{where}: "
            + (f"met by {', '.join(met)}" if met else "met by no configuration")
            + (f"; missed by {', '.join(missed)}" if missed else "")
            + "."
        )
    return out


def _steadier(fast: PointStats, ps: list[PointStats], where: str, load: set[str]) -> list[str]:
    """A configuration steadier than the fastest, only where Brown–Forsythe's
    test of spread says their spreads differ (Holm-adjusted)."""
    rest = [p for p in ps if p is not fast]
    adjusted = holm([dispersion_differs(fast.run_goodput_rps, p.run_goodput_rps) for p in rest])
    out = []
    for p, q in zip(rest, adjusted, strict=True):
        if not math.isnan(q) and q < ALPHA and p.goodput_rps.cv < fast.goodput_rps.cv:
            out.append(
                f"{where}, {_split(p, load)[1]} is steadier than {_split(fast, load)[1]} (coefficient of variation "
                f"{p.goodput_rps.cv:.1%} vs {fast.goodput_rps.cv:.1%}; Brown–Forsythe test, Holm-adjusted p = {q:.2g})."
            )
    return out


def _core_steps(points: list[PointStats]) -> list[str]:
    """The gain of each step in CPUs, at each CPU level's best point, and
    what the target's CPU service demand says it could have gained: with D
    the CPU-seconds per request, C CPUs sustain at most C / D requests per
    second (the utilization law, Denning & Buzen 1978), so the ratio of the
    ceilings is what the server itself would do if nothing else limited it."""
    if not all("cpus" in p.levels for p in points):
        return []
    best: dict[float, PointStats] = {}
    for p in points:
        c = float(p.levels["cpus"])
        if c not in best or p.goodput_rps.mean > best[c].goodput_rps.mean:
            best[c] = p
    levels = sorted(best)
    out = []
    for lo, hi in zip(levels, levels[1:], strict=False):
        a, b = best[lo], best[hi]
        cmp = compare(a.run_goodput_rps, b.run_goodput_rps)
        ideal = hi / lo
        line = (
            f"From {lo:g} to {hi:g} CPUs: {cmp.words()}; ideal scaling would give {(ideal - 1) * 100:.0f}% more "
            f"({a.goodput_rps.mean:,.0f} → {b.goodput_rps.mean:,.0f} req/s at their best points)."
        )
        if cmp.rel_low > ideal - 1:
            line += (
                f" More than ideal beyond the interval (superlinear): look twice before trusting it (caches that "
                f"now fit, clock rates, or a setup that differs between the {lo:g}- and {hi:g}-CPU runs)."
            )
        out.append(line + _demand_step(lo, hi, a, b))
    out += _odd_demand([best[c] for c in levels], levels)
    return out


def _odd_demand(points: list[PointStats], levels: list[float]) -> list[str]:
    """A CPU level whose service demand is significantly below (or above)
    both its neighbours': the work per request does not change that way with
    cores, so that level's runs are suspect (a different server state, a
    warmer or colder start)."""
    out = []
    for i in range(1, len(points) - 1):
        mid = points[i]
        sides = [compare(points[j].demand_ms, mid.demand_ms) for j in (i - 1, i + 1)]
        if any(len(points[j].demand_ms) < 2 for j in (i - 1, i, i + 1)):
            continue
        if all(c.significant and c.relative < 0 for c in sides) or all(c.significant and c.relative > 0 for c in sides):
            way = "less" if sides[0].relative < 0 else "more"
            out.append(
                f"Implausible: at {levels[i]:g} CPUs the target spent {way} CPU per request "
                f"({statistics.fmean(mid.demand_ms):.3f} ms) than at both {levels[i - 1]:g} and {levels[i + 1]:g} "
                f"CPUs, beyond their intervals; its figures (and any efficiency above 100%) need a second look."
            )
    return out


def _demand_step(lo: float, hi: float, a: PointStats, b: PointStats) -> str:
    if len(a.demand_ms) < 2 or len(b.demand_ms) < 2:
        return ""
    da, db = statistics.fmean(a.demand_ms), statistics.fmean(b.demand_ms)
    change = compare(a.demand_ms, b.demand_ms)
    ceiling = (hi / db) / (lo / da)
    measured = b.goodput_rps.mean / a.goodput_rps.mean
    text = (
        f" CPU per request {da:.3f} → {db:.3f} ms ({change.words('service demand')}), so the CPU ceiling of "
        f"{hi:g} CPUs is {ceiling:.2f}× that of {lo:g}; measured {measured:.2f}×"
    )
    if measured >= ceiling * 0.97:
        return text + ": the target used the CPUs it was given."
    if b.shared or a.shared:
        return text + ", because the load generator shared the target's cores."
    if b.client_bound or a.client_bound:
        return text + ", because the load generator reached its own limit."
    return text + ": something other than the CPU limited the target (I/O, locks, too few clients)."


def _change(rel: float) -> str:
    return f"{1 + rel:.1f}×" if rel > 1 else f"{rel * 100:+.1f}%"


def _factor_effects(points: list[PointStats], factors: dict[str, list[Any]], load: set[str]) -> list[str]:
    """Each level of each configuration factor (cpus and load factors aside)
    against the factor's first level, configuration by configuration (the
    other factors held equal): in how many is it significantly higher,
    lower, or no different. Holm's adjustment runs over every comparison
    made here, so the chance of any false "significant" stays at α."""
    import json

    names = [n for n in points[0].levels if n != "cpus" and n not in load]
    rows: list[tuple[str, list[tuple[Comparison, bool]]]] = []
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
            pairs = [(base[k], b) for k, b in by_level[lv].items() if k in base]
            pairs = [(a, b) for a, b in pairs if len(a.measured) >= 2 and len(b.measured) >= 2]
            if pairs:
                rows.append((f"{name}={lv} against {name}={levels[0]}", [_pair(a, b) for a, b in pairs]))
    adjusted = iter(holm([c.p_value for _, cs in rows for c, _ in cs]))
    total_tests = sum(len(cs) for _, cs in rows)
    out = []
    for label, cs in rows:
        higher = lower = same = equivalent = 0
        for c, equal in cs:
            q = next(adjusted)
            equivalent += equal
            if math.isnan(q) or q >= ALPHA:
                same += 1
            elif c.relative > 0:
                higher += 1
            else:
                lower += 1
        median = _change(statistics.median(c.relative for c, _ in cs))
        out.append(
            f"{label}: throughput significantly higher in {higher}, lower in {lower}, no significant difference "
            f"in {same} of {len(cs)} configurations, and equivalent within ±{MARGIN:.0%} in {equivalent} "
            f"(Schuirmann's TOST) (median change {median}; "
            f"Welch's t-test, Holm-adjusted over {total_tests} comparisons, α = {ALPHA})."
        )
    return out


def _pair(a: PointStats, b: PointStats) -> tuple[Comparison, bool]:
    """Welch's test of B against A, and whether Schuirmann's TOST shows them
    equivalent within the margin."""
    eq = tost(a.run_goodput_rps, b.run_goodput_rps)
    return compare(a.run_goodput_rps, b.run_goodput_rps), eq is not None and eq.equivalent


def _costs(points: list[PointStats], prices: dict[str, dict[str, float]], slo: Slo | None) -> list[str]:
    all_priced = [(p, price_of(p, prices)) for p in points]
    priced = [(p, c) for p, c in all_priced if c is not None and p.goodput_rps.mean > 0]
    if not priced:
        return []
    cheapest = min(priced, key=lambda pc: cost_per_million(*pc))
    out = [f"Cheapest per request: {cheapest[0].label()} at ${cost_per_million(*cheapest):.4g} per million requests."]
    if slo is not None:
        meeting = [(p, c) for p, c in priced if slo.met(_tail(p, slo.percentile))]
        if meeting:
            p, c = min(meeting, key=lambda pc: cost_per_million(*pc))
            out.append(f"Cheapest meeting {slo}: {p.label()} at ${cost_per_million(p, c):.4g} per million requests.")
        else:
            out.append(f"No configuration meets {slo}.")
    return out
