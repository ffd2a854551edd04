"""Plain-language verdicts, each with its figures."""

from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import dataclass
from typing import Any

from corebench.analysis.anova import MARGIN
from corebench.analysis.effect import POWER, VERDICTS, Effect, effect
from corebench.analysis.load import at_matched_load, load_factors, split, where
from corebench.analysis.points import FAILING_SHARE, PointStats
from corebench.analysis.stats import ALPHA, Summary, dispersion_differs, holm, mcb
from corebench.analysis.steps import caveat, core_steps

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
    out += _limited(ok)
    if not searched:
        out += core_steps(ok) + _factor_effects(ok, factors or {}, load) + best_at_matched_load(ok, load, failing)
        if slo is not None:
            out += slo_verdicts(ok, slo, load)
        out += _costs(ok, prices or {}, slo, load)
    return out + _steal(measured) + _interference(measured) + _covers(ok)


def _limited(points: list[PointStats]) -> list[str]:
    """First, which points measured the generator or the machine at least
    in part; every point so: the experiment measured the generator."""
    limited = [p for p in points if p.limits()]
    if not limited:
        return []
    reasons = sorted({why.split(" up to ")[0] for p in limited for why in p.limits()})
    fix = (
        "To measure the server, give the generator cores of its own (a machine with more cores than the "
        "target's, or fewer target CPUs), or send the load from other machines (a [cluster] of load agents in "
        "the plan)."
    )
    if len(limited) == len(points):
        return [
            f"Measured the generator, not only the server: at every point ({len(points)}) the figures are partly "
            f"the generator's or the machine's ({'; '.join(reasons)}). Every verdict below is a lower bound of the "
            f"server under this generator, not its capacity. {fix}"
        ]
    names = ", ".join(p.label() for p in limited[:3]) + (", ..." if len(limited) > 3 else "")
    return [
        f"Caveat: at {len(limited)} of {len(points)} points ({names}) the figures are partly the generator's or the "
        f"machine's ({'; '.join(reasons)}): verdicts naming them say so, and are lower bounds of the server. {fix}"
    ]


def _covers(points: list[PointStats]) -> list[str]:
    """What the intervals cover (ANSWERS.md §5)."""
    if not any(len(p.measured) >= 2 for p in points):
        return []
    return [
        "What the intervals cover: the run-to-run noise of this session only, whose runs share its machine, its "
        "day and its builds. Another session may differ by more: to see whether an effect replicates, run the "
        "plan again into another store, on another occasion, and compare the two (corebench compare A B)."
    ]


def _interference(points: list[PointStats]) -> list[str]:
    runs = sum(p.interference_runs for p in points)
    if not runs:
        return []
    total = sum(len(p.measured) for p in points)
    worst = max(p.interference_max for p in points)
    return [
        f"Interference: in {runs} of {total} measured runs, processes other than the target and the generator "
        f"used a notable share of the target's cores (up to {worst:.0%} of their time): those runs had less CPU "
        "than they were given, and their comparisons are void. Find what else ran (top, pidstat), stop it, and "
        "repeat them."
    ]


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
    out = []
    for at, ps in at_matched_load(points, load):
        here = where(at)
        lost = [p for p in failing or [] if split(p, load)[0] == at]
        if len(ps) == 1 and lost:
            only = ps[0]
            out.append(
                f"{here}, best throughput: {split(only, load)[1]} at {only.goodput_rps.mean:,.0f} req/s, the only "
                f"configuration without failures ({', '.join(split(p, load)[1] for p in lost)} failing)."
                + caveat([only])
            )
        if len(ps) < 2:
            continue
        if len(untested(ps)) >= len(ps) - 1:
            out.append(_unranked(here, ps, load))
            continue
        best, tied = best_set(ps)
        tied = [p for p in tied if p not in untested(ps)]
        also = f"; cannot be told from it: {', '.join(split(p, load)[1] for p in tied)}" if tied else ""
        out.append(
            f"{here}, best throughput: {split(best, load)[1]} at {best.goodput_rps.mean:,.0f} req/s "
            f"({_ci(best.goodput_rps)}){also} "
            f"(Hsu's multiple comparisons with the best, α = {ALPHA}){_untested_note(ps, load)}."
            + caveat([best, *tied])
        )
        low, tied = best_set(ps, higher=False)
        tied = [p for p in tied if p not in untested(ps)]
        also = f"; cannot be told from it: {', '.join(split(p, load)[1] for p in tied)}" if tied else ""
        out.append(
            f"{here}, lowest p99: {split(low, load)[1]} at {low.p99_us.mean / 1000:.2f} ms (mean of its runs' p99)"
            f"{also} (Hsu's multiple comparisons with the best)."
        )
        out += _steadier(best, ps, here, load)
    return out


def _unranked(here: str, ps: list[PointStats], load: set[str]) -> str:
    """Too few runs to rank: the means, said as means, with no pick."""
    means = ", ".join(f"{split(p, load)[1]} {p.goodput_rps.mean:,.0f}" for p in sorted(ps, key=_goodput, reverse=True))
    return (
        f"{here}, throughput (req/s, mean of each configuration's runs): {means}; not ranked: a comparison needs 2 "
        f"or more measured runs a side, and at most one configuration here has them." + caveat(ps)
    )


def _goodput(p: PointStats) -> float:
    return p.goodput_rps.mean


def _ci(s: Summary) -> str:
    if s.n < 2 or math.isnan(s.ci_low):
        return "one measured run: no confidence interval"
    return f"95% CI {s.ci_low:,.0f}–{s.ci_high:,.0f}"


def _untested_note(ps: list[PointStats], load: set[str]) -> str:
    few = untested(ps)
    if not few:
        return ""
    return f"; not ranked, fewer than 2 measured runs: {', '.join(split(p, load)[1] for p in few)}"


def slo_verdicts(points: list[PointStats], slo: Slo, load: set[str]) -> list[str]:
    """At each load level, which configurations meet the latency objective
    (the median over runs of the percentile it names) and by what margin;
    prices are not needed."""
    out = []
    for at, ps in at_matched_load(points, load):
        met: list[str] = []
        missed: list[str] = []
        for p in sorted(ps, key=lambda p: _tail(p, slo.percentile)):
            value = _tail(p, slo.percentile)
            name = split(p, load)[1] or "the target"
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
                f"{where}, {split(p, load)[1]} is steadier than {split(fast, load)[1]} (coefficient of variation "
                f"{p.goodput_rps.cv:.1%} vs {fast.goodput_rps.cv:.1%}; Brown–Forsythe test, Holm-adjusted p = {q:.2g})."
            )
    return out


def _factor_effects(points: list[PointStats], factors: dict[str, list[Any]], load: set[str]) -> list[str]:
    """Each level of each configuration factor (cpus and load factors aside)
    against the factor's first level, at each combination of the other
    factors (load included, so always at matched load): each comparison an
    `Effect`, counted by its class. Holm's adjustment runs over every
    comparison made here, so the chance of any false "higher" or "lower"
    stays at α."""
    names = [n for n in points[0].levels if n != "cpus" and n not in load]
    rows: list[tuple[str, list[tuple[PointStats, PointStats]]]] = []
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
            if pairs:
                rows.append((f"{name}={lv} against {name}={levels[0]}", pairs))
    effects = [_pair(a, b) for _, pairs in rows for a, b in pairs]
    adjusted = iter(holm([e.p_value for e in effects]))
    found = iter([e.adjusted(next(adjusted)) if e.tested else e for e in effects])
    total_tests = sum(e.tested for e in effects)
    return [_effect_row(label, [(a, b, next(found)) for a, b in pairs], total_tests) for label, pairs in rows]


def _pair(a: PointStats, b: PointStats) -> Effect:
    return effect(a.run_goodput_rps, b.run_goodput_rps)


def _effect_row(label: str, compared: list[tuple[PointStats, PointStats, Effect]], total_tests: int) -> str:
    es = [e for _, _, e in compared]
    counts = {v: sum(e.verdict == v for e in es) for v in VERDICTS}
    said = ", ".join(f"{v} in {n}" for v, n in counts.items() if n)
    ratios = [e.mean_b / e.mean_a for e in es if e.mean_a > 0 and e.mean_b > 0]
    median = f"median change {(statistics.median(ratios) - 1) * 100:+.1f}%; " if ratios else ""
    detect = [e.detectable for e in es if e.verdict == "inconclusive"]
    could = (
        f" Where inconclusive, this design could detect changes of about ±{statistics.median(detect):.0%} "
        f"(median over those comparisons; {POWER:.0%} power at the observed run-to-run variance): a smaller "
        "effect may be there unseen."
        if detect
        else ""
    )
    limited = sum(bool(a.limits() or b.limits()) for a, b, _ in compared)
    caveat_ = (
        f" Caveat: {'all' if limited == len(es) else limited} of these comparisons involve a point whose figures "
        "are partly the generator's or the machine's (above): a lower bound of the server, and an effect of the "
        "load generator as much as of the server."
        if limited
        else ""
    )
    return (
        f"{label}: throughput {said} of {len(es)} matched comparison{'s' if len(es) != 1 else ''} ({median}ratio "
        f"of means, 95% CI on the log scale, Welch's t, Holm-adjusted over {total_tests}, α = {ALPHA}; "
        f"equivalent: Schuirmann's TOST within ±{MARGIN:.0%}).{could}{caveat_}"
    )


def _costs(points: list[PointStats], prices: dict[str, dict[str, float]], slo: Slo | None, load: set[str]) -> list[str]:
    """The cheapest configuration per request at each load level: a pick
    among configurations serving the same load, never among loads."""
    out = []
    for at, ps in at_matched_load(points, load):
        priced = [(p, c) for p in ps if (c := price_of(p, prices)) is not None and p.goodput_rps.mean > 0]
        if len(priced) < 2:
            continue
        here = where(at)
        p, c = min(priced, key=lambda pc: cost_per_million(*pc))
        out.append(
            f"{here}, cheapest per request: {split(p, load)[1]} at ${cost_per_million(p, c):.4g} per million "
            f"requests (mean throughput; price per hour from the plan)." + caveat([p])
        )
        if slo is not None:
            meeting = [(p, c) for p, c in priced if slo.met(_tail(p, slo.percentile))]
            if meeting:
                p, c = min(meeting, key=lambda pc: cost_per_million(*pc))
                out.append(
                    f"{here}, cheapest meeting {slo}: {split(p, load)[1]} at ${cost_per_million(p, c):.4g} per "
                    "million requests."
                )
            else:
                out.append(f"{here}, no configuration meets {slo}.")
    return out
