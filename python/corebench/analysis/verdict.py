"""Plain-language verdicts, each with its figures."""

from __future__ import annotations

import math
from typing import Any

from corebench.analysis.best import best_at_matched_load, think_p99_words
from corebench.analysis.factor_effects import combined as rows_combined
from corebench.analysis.factor_effects import factor_effects, factor_rows
from corebench.analysis.family import Family
from corebench.analysis.finding import Figure, Finding, Interval, caveats, said
from corebench.analysis.lines import short_lines
from corebench.analysis.load import at_matched_load, load_factors, split, where
from corebench.analysis.points import FAILING_SHARE, PointStats
from corebench.analysis.sessions import replication, sessions
from corebench.analysis.slo import Slo, judge, shown_meeting, slo_verdicts
from corebench.analysis.steps import caveat, core_steps, step_groups
from corebench.analysis.steps import combined as steps_combined
from corebench.system.check import CLOCK_NOTABLE_SHARE


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
    """The sentences of `compare`'s findings, in order."""
    return [f.sentence for f in compare(points, prices, slo, factors, load, searched)]


def compare(
    points: list[PointStats],
    prices: dict[str, dict[str, float]] | None = None,
    slo: Slo | None = None,
    factors: dict[str, list[Any]] | None = None,
    load: set[str] | None = None,
    searched: bool = False,
) -> list[Finding]:
    """The verdicts: what failed, what limited the measurement, and each
    comparison of configurations at matched load. `searched`: the runs
    were capacity searches, whose sustained rates carry the comparison
    (analysis.capacity); the throughput of the step stored for each is not
    compared again here."""
    measured = [p for p in points if p.measured and not math.isnan(p.goodput_rps.mean) and p.goodput_rps.mean > 0]
    ok = [p for p in measured if not p.failing]
    failing = [p for p in points if p.failing and any(not r.warmup for r in p.runs)]
    out = said("verdict", _failing(failing))
    if not ok:
        return [
            *out,
            Finding("verdict", "No point has a successful measured run without failures: nothing to conclude."),
        ]
    load = load if load is not None else load_factors(factors or {})
    out += said("verdict", short_lines(ok) + _limited(ok))
    if not searched:
        # Where users' think time sets the rate, throughput says nothing of
        # the configuration: those points are left out of its comparisons.
        rated = [p for p in ok if not p.think_s]
        family = Family(rated, load)
        if family.size:
            left = len(ok) - len(rated)
            apart = (
                f" Throughput comparisons leave out the {left} point(s) where users' think time sets the rate "
                f"({think_p99_words(ok, load)})."
                if left
                else ""
            )
            out.append(Finding("verdict", f"Comparisons: {family.method()}.{apart}"))
        if rated:
            # Every average of a report is held together: the steps' and the factors'.
            rows = factor_rows(rated, factors or {}, load, family)
            lines = steps_combined(step_groups(rated, family)) + rows_combined(rows)
            out += core_steps(rated, family, lines) + factor_effects(rated, factors or {}, load, family, lines)
        out += best_at_matched_load(ok, load, failing, family)
        if slo is not None:
            out += slo_verdicts(ok, slo, load)
        out += _costs(ok, prices or {}, slo, load, family)
    machine = _steal(measured) + _clock(measured) + _interference(measured)
    return out + said("verdict", machine + replication(ok, load) + _covers(ok))


def _failing(failing: list[PointStats]) -> list[str]:
    """Points left out for their errors, or for having no run that ended
    well (a dead server, one answering only errors): said first, never
    silently dropped."""
    if not failing:
        return []
    dead = [p for p in failing if not p.measured]
    erring = [p for p in failing if p.measured]
    said = []
    if erring:
        worst = max(erring, key=lambda p: p.error_share)
        said.append(
            f"{_which(erring)} answered more than {FAILING_SHARE:.0%} of requests with an error or an unsuccessful "
            f"status (worst: {worst.label()}, {worst.error_share:.1%})"
        )
    if dead:
        worst = max(dead, key=lambda p: p.error_share)
        said.append(
            f"{_which(dead)} had no run that ended well ({worst.error_share:.1%} of requests failed at "
            f"{worst.label()}; first error: {dead[0].failure or 'no result'})"
        )
    return [
        f"Failing: {'; '.join(said)}. They are left out of every verdict below, and their failures were never "
        "counted as throughput."
    ]


def _which(points: list[PointStats]) -> str:
    if not points[0].levels:
        return "the plan's one point"
    names = ", ".join(p.label() for p in points[:3]) + (", ..." if len(points) > 3 else "")
    return f"{len(points)} point(s) ({names})"


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
            f"the generator's or the machine's ({'; '.join(reasons)}). Every throughput below is a lower bound of the "
            f"server's under this generator, every latency an upper bound, and an effect between them may be partly "
            f"the generator's or the machine's, in a share these runs cannot separate. {fix}"
        ]
    names = ", ".join(p.label() for p in limited[:3]) + (", ..." if len(limited) > 3 else "")
    return [
        f"Caveat: at {len(limited)} of {len(points)} points ({names}) the figures are partly the generator's or the "
        f"machine's ({'; '.join(reasons)}): verdicts naming them say so (their throughput a lower bound of the "
        f"server's, their latency an upper bound). {fix}"
    ]


def _covers(points: list[PointStats]) -> list[str]:
    """What the intervals cover (ANSWERS.md §5)."""
    if not any(len(p.measured) >= 2 for p in points):
        return []
    held = sessions(points)
    if len(held) > 1:
        return [
            f"What the intervals cover: the comparisons above pool the runs of {len(held)} sessions; the Sessions "
            "lines say, for comparisons made within each session, whether the effect replicated across them."
        ]
    return [
        "What the intervals cover: the run-to-run noise of this session only, whose runs share its machine, its "
        "day and its builds. Another session may differ by more: to see whether an effect replicates, run the "
        "plan again as a new session on another occasion (corebench run PLAN --store S --session)."
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
        "than they were given, so their points' throughput is a lower bound of the server's and their latency an "
        "upper bound, and a comparison naming them may be off in either direction (verdicts naming them carry a "
        "caveat). "
        "Find what else ran (top, pidstat), stop it, and repeat them."
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


def _clock(points: list[PointStats]) -> list[str]:
    runs = sum(p.clock_off_runs for p in points)
    if not runs:
        return []
    total = sum(p.clock_runs for p in points)
    worst = max(p.clock_off_max for p in points)
    named = ", ".join(p.label() for p in points if p.clock_off_runs)
    return [
        f"Clock: in {runs} of {total} runs with a clock reading, the target's CPUs' mean clock was more than "
        f"{CLOCK_NOTABLE_SHARE:.0%} from the median of their point's runs (with two runs, from each other; up to "
        f"{worst:.0%}; {named}): turbo, the governor or heat, or a different load on those CPUs (the reading "
        "averages idle CPUs too). A CPU-bound throughput moves about as much, so these points' comparisons may mix "
        "two clocks. Fix the clock (corebench system tune: performance governor, turbo off) and repeat them."
    ]


def _costs(
    points: list[PointStats], prices: dict[str, dict[str, float]], slo: Slo | None, load: set[str], family: Family
) -> list[Finding]:
    """The cheapest configuration per request at each load level: a pick
    among configurations serving the same load, never among loads, with the
    runner-up's cost against it: the price ratio over the family's
    throughput ratio, whose interval it carries."""
    out = []
    for at, ps in at_matched_load(points, load):
        priced = [(p, c) for p in ps if (c := price_of(p, prices)) is not None and p.goodput_rps.mean > 0]
        if len(priced) < 2:
            continue
        here = where(at)
        ranked = sorted(priced, key=lambda pc: cost_per_million(*pc))
        (p, c), (q, d) = ranked[0], ranked[1]
        dearer, interval, shown = _dearer((p, c), (q, d), [x for x, _ in ranked[1:]], load, family)
        out.append(
            Finding(
                "verdict",
                f"{here}, lowest cost per request at mean throughput: {split(p, load)[1]} at "
                f"${cost_per_million(p, c):.4g} per million requests (price per hour from the plan); {dearer}.",
                subject=f"lowest cost per request {here.lower()}: {split(p, load)[1]}",
                figures=tuple(
                    Figure(split(x, load)[1], cost_per_million(x, y), "$ per million requests") for x, y in ranked
                ),
                interval=interval,
                outcome=""
                if interval is None
                else "shown cheaper than the runner-up"
                if shown
                else "not shown cheaper than the runner-up",
                caveats=caveats(caveat([p, q])),
            )
        )
        if slo is not None:
            ok = set(map(id, shown_meeting([p for p, _ in priced], slo)))
            meeting = [(p, c) for p, c in priced if id(p) in ok]
            if meeting:
                p, c = min(meeting, key=lambda pc: cost_per_million(*pc))
                out.append(
                    Finding(
                        "verdict",
                        f"{here}, lowest cost shown to meet {slo} (its one-sided 95% bound within it): "
                        f"{split(p, load)[1]} at ${cost_per_million(p, c):.4g} per million requests (by mean "
                        "throughput; the line above says whether it is shown cheaper).",
                        subject=f"lowest cost meeting {slo} {here.lower()}: {split(p, load)[1]}",
                        figures=(Figure(split(p, load)[1], cost_per_million(p, c), "$ per million requests"),),
                        outcome="met",
                        caveats=caveats(caveat([p], latency=True)),
                    )
                )
            else:
                out.append(
                    Finding(
                        "verdict",
                        f"{here}, no configuration is shown to meet {slo} (its one-sided 95% bound within it).",
                        subject=f"{slo} {here.lower()}",
                        # "missed" only where every one is shown to miss it.
                        outcome="missed" if all(judge(p, slo).shown == "missed" for p, _ in priced) else "not shown",
                    )
                )
    return out


def _dearer(
    pick: tuple[PointStats, float],
    runner_up: tuple[PointStats, float],
    rest: list[PointStats],
    load: set[str],
    family: Family,
) -> tuple[str, Interval | None, bool]:
    """The runner-up's cost per request over the pick's, with the interval
    the throughput comparison gives it (None untested), and whether the
    pick is shown cheaper. A configuration ranked after the pick whose
    throughput is a lower bound (ANSWERS.md §3) has a cost that is an upper
    bound: it may truly be cheaper, so the pick is then not shown, whatever
    the interval (as `best._ranked` withholds "shown best"). The pick's own
    bound cannot undo it: its cost is, if anything, lower still."""
    (p, c), (q, d) = pick, runner_up
    e = family.get(q, p)  # p's throughput over q's
    name = split(q, load)[1]
    if not e.tested:
        text = f"{name} costs {_sign(cost_per_million(q, d) / cost_per_million(p, c) - 1)} per request, untested"
        return text, None, False
    prices = d / c
    low, high = prices * e.low, prices * e.high
    cheapest = split(p, load)[1]
    bound_ones = [split(x, load)[1] for x in rest if x.limits()]
    bounded = low > 1 and bool(bound_ones)
    if bounded:
        whose = " and ".join(bound_ones[:3]) + (" and others" if len(bound_ones) > 3 else "")
        one = len(bound_ones) == 1
        what = f"{whose}'s throughput is a lower bound" if one else f"the throughput of {whose} is a lower bound each"
        shown = (
            f"but {what} (partly the generator's or the machine's), so "
            f"{'its cost is an upper bound' if one else 'their costs are upper bounds'}: {cheapest} is not shown "
            "cheaper"
        )
    elif low > 1:
        shown = f"so {cheapest} is shown cheaper"
    else:
        shown = f"so {cheapest} is not shown cheaper: the interval holds equal costs"
    text = (
        f"{name} costs {_sign(prices * e.ratio - 1)} per request against it ({e.held('95% CI')} "
        f"{_sign(low - 1)} to {_sign(high - 1)}, from the throughput comparison's interval), {shown}"
    )
    method = "the price ratio over the family's throughput ratio and its simultaneous interval"
    interval = Interval(prices * e.ratio, low, high, "ratio", simultaneous_over=e.family, method=method)
    return text, interval, low > 1 and not bounded


def _sign(share: float) -> str:
    """A change in percent with a true minus sign; a name's hyphens stay."""
    return f"{share:+.0%}".replace("-", "−")
