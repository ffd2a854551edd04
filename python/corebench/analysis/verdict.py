"""Plain-language verdicts, each with its figures."""

from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import dataclass
from typing import Any

from corebench.analysis.anova import MARGIN
from corebench.analysis.effect import POWER, Effect, counted
from corebench.analysis.family import Family, p99_ms
from corebench.analysis.load import at_matched_load, load_factors, split, where
from corebench.analysis.points import FAILING_SHARE, PointStats
from corebench.analysis.stats import ALPHA, Summary, dispersion_differs, holm
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
        family = Family(ok, load)
        out += core_steps(ok, family) + _factor_effects(ok, factors or {}, load, family)
        out += best_at_matched_load(ok, load, failing, family)
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
    reasons = sorted({why.split(" (")[0] for p in limited for why in p.limits()})
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


def untested(points: list[PointStats]) -> list[PointStats]:
    """The points no comparison can test: fewer than 2 measured runs."""
    return [p for p in points if len(p.measured) < 2]


def best_at_matched_load(
    points: list[PointStats],
    load: set[str],
    failing: list[PointStats] | None = None,
    family: Family | None = None,
) -> list[str]:
    """Configurations compared at each load level, never load levels with
    each other: the best by goodput and by p99, each other configuration
    shown below it or not told from it by the family's comparisons, and a
    steadier configuration where a test of spread says so."""
    if not any(k not in load for p in points for k in p.levels):
        return [
            "No configuration to compare: the factors set the load only; its effect is in the throughput and "
            "latency curves and the knee below."
        ]
    families = {True: family or Family(points, load), False: Family(points, load, p99_ms)}
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
        best, line, tied = _best(ps, load, True, families[True])
        out.append(f"{here}, best throughput: {line}{_untested_note(ps, load)}." + caveat([best, *tied]))
        out.append(f"{here}, lowest p99: {_best(ps, load, False, families[False])[1]}.")
        slower = [p for p in ps if p is not best and p not in tied and p not in untested(ps)]
        out += _steadier(best, ps, here, load) + _tradeoff(best, slower, here, load)
    return out


def _best(
    ps: list[PointStats], load: set[str], higher: bool, family: Family
) -> tuple[PointStats, str, list[PointStats]]:
    """The best configuration by mean throughput (or by the median of its
    runs' p99, as the tables show it), what the family's comparisons say of
    each other one against it, and those that cannot be told from it."""
    tested = [p for p in ps if p not in untested(ps)]
    best = max(tested, key=_goodput) if higher else min(tested, key=lambda p: p.p99_us.median)
    what = "throughput" if higher else "p99 (ratio of the runs' means)"
    tied, below = [], []
    for p in tested:
        if p is best:
            continue
        e = family.get(p, best)
        ours = f"the best's {what} {_effect_said(e)} against it"
        if e.verdict in ("higher", "lower"):
            below.append(f"{split(p, load)[1]} {'lower' if higher else 'higher'}: {ours}")
        else:
            tied.append(p)
            below.append(f"{split(p, load)[1]} cannot be told from it, {e.verdict}: {ours}")
    line = f"{_figure(best, load, higher)}; " + "; ".join(below) + f" ({family.method()})"
    return best, line, tied


def _figure(p: PointStats, load: set[str], higher: bool) -> str:
    if higher:
        return f"{split(p, load)[1]} at {p.goodput_rps.mean:,.0f} req/s ({_ci(p.goodput_rps)})"
    return f"{split(p, load)[1]} at {p.p99_us.median / 1000:.2f} ms (the median of its runs' p99, as in the tables)"


def _effect_said(e: Effect) -> str:
    """An effect in a clause: its change, interval and test, and what an
    inconclusive one could have detected."""
    span = f"{e.relative * 100:+.1f}% (95% CI {(e.low - 1) * 100:+.1f}% to {(e.high - 1) * 100:+.1f}%".replace("-", "−")
    said = f"{span}; {e.test()}"
    if e.verdict == "inconclusive":
        said += f"; this design could detect about ±{e.detectable:.0%}"
    return said + ")"


# A spread of request latency this much lower (as a coefficient of
# variation) is worth weighing against throughput.
TRADE_OFF = 0.1


def _request_spread(p: PointStats) -> tuple[float, float] | None:
    """Per-request latency over the point's runs: (mean, standard deviation)
    in µs, pooled over the runs' responses (ab's "mean ± sd")."""
    parts = [(x.latency_us.total.count, x.latency_us.total.mean_us, x.latency_us.total.stdev_us) for x in p.results()]
    n = sum(c for c, _, _ in parts)
    if n < 2:
        return None
    mean = sum(c * m for c, m, _ in parts) / n
    # Within-run and between-run parts of the pooled variance.
    var = sum(c * (sd * sd + (m - mean) ** 2) for c, m, sd in parts) / n
    return mean, math.sqrt(var)


def _tradeoff(best: PointStats, slower: list[PointStats], here: str, load: set[str]) -> list[str]:
    """The fourth field report's trade-off: the fastest configuration against
    the one whose requests' latency varies least (its coefficient of
    variation, ab's sd over the mean), among those shown slower than it, and
    only where that spread is at least TRADE_OFF lower. Run-to-run
    variation of throughput is another question, named as such."""
    spread = {id(p): s for p in [best, *slower] if (s := _request_spread(p)) is not None and s[0] > 0}
    if id(best) not in spread or len(spread) < 2:
        return []
    candidates = [p for p in slower if id(p) in spread]
    if not candidates:
        return []
    steady = min(candidates, key=lambda p: spread[id(p)][1] / spread[id(p)][0])
    (mb, sb), (ms, ss) = spread[id(best)], spread[id(steady)]
    if ss / ms >= (1 - TRADE_OFF) * sb / mb:
        return []
    faster = best.goodput_rps.mean / steady.goodput_rps.mean - 1
    calmer = 1 - (ss / ms) / (sb / mb)
    return [
        f"{here}, speed against steadiness (per request): {split(best, load)[1]} has the best throughput, "
        f"{faster:+.0%} over {split(steady, load)[1]}, whose requests vary least (latency {ms / 1000:.2f} ± "
        f"{ss / 1000:.2f} ms against {mb / 1000:.2f} ± {sb / 1000:.2f} ms, mean ± sd of every request as ab gives "
        f"it; coefficient of variation {calmer:.0%} lower). Which to run weighs the two; the run-to-run variation "
        f"of throughput (CV {steady.goodput_rps.cv:.1%} and {best.goodput_rps.cv:.1%}) is another question."
    ]


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


def _factor_effects(
    points: list[PointStats], factors: dict[str, list[Any]], load: set[str], family: Family
) -> list[str]:
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
    return [_effect_row(label, [(a, b, family.get(a, b)) for a, b in pairs], family) for label, pairs in rows]


def _effect_row(label: str, compared: list[tuple[PointStats, PointStats, Effect]], family: Family) -> str:
    es = [e for _, _, e in compared]
    said = counted(es)
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
        f"{label}: throughput {said} of {len(es)} matched comparison{'s' if len(es) != 1 else ''} ({median}"
        f"{family.method()}, α = {ALPHA}; equivalent: Schuirmann's TOST within ±{MARGIN:.0%}).{could}{caveat_}"
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
