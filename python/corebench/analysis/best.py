"""The best configuration at each load level, by throughput and by p99:
what the family of comparisons (`analysis.family`) says of every other
configuration against it, never a load level against another; and the
fourth field report's trade-off of speed against per-request steadiness."""

from __future__ import annotations

import math

from corebench.analysis.effect import Effect, change_size, effect, log_effect, pct
from corebench.analysis.family import Family, p99_ms, throughput
from corebench.analysis.finding import Figure, Finding, Interval, caveats
from corebench.analysis.load import at_matched_load, split, where
from corebench.analysis.points import PointStats, little_fails
from corebench.analysis.stats import ALPHA, Summary, dispersion_differs, geometric, holm, p_is
from corebench.analysis.steps import caveat

# A per-request latency spread (sd) this much smaller is worth weighing
# against throughput.
TRADE_OFF = 0.1


# Responses a run needs for its p99 to be ranked by: 10 beyond it.
P99_MIN_RESPONSES = 1000


def untested(points: list[PointStats]) -> list[PointStats]:
    """The points no comparison can test: fewer than 2 measured runs."""
    return [p for p in points if len(p.measured) < 2]


def best_at_matched_load(
    points: list[PointStats],
    load: set[str],
    failing: list[PointStats] | None = None,
    family: Family | None = None,
) -> list[Finding]:
    """Configurations compared at each load level, never load levels with
    each other: the best by goodput and by p99, each other configuration
    shown below it or not told from it by the family's comparisons, and a
    steadier configuration where a test of spread says so. Where users'
    think time sets the rate, throughput is not compared at all."""
    if not any(k not in load for p in points for k in p.levels):
        return [
            Finding(
                "verdict",
                "No configuration to compare: the factors set the load only; its effect is in the throughput and "
                "latency curves and the knee below.",
            )
        ]
    # Each family counts only the comparisons the report makes: no p99 at a
    # level whose runs are too short for one (_thin_tail), no steadiness
    # where think time sets the rate or nothing is tested.
    levels_of = at_matched_load(points, load)
    tails = [p for _, ps in levels_of if _fewest_responses(ps) >= P99_MIN_RESPONSES for p in ps]
    families = {True: family or Family(points, load), False: Family(tails, load, p99_ms, geometric=True)}
    # Steadiness is asked at every such level with two configurations or more: held over them all.
    levels = max(1, sum(_steadiness_asked(ps) for _, ps in levels_of))
    out = []
    for at, ps in levels_of:
        here = where(at)
        lost = [p for p in failing or [] if split(p, load)[0] == at]
        if len(ps) == 1 and lost:
            only = ps[0]
            out.append(
                Finding(
                    "verdict",
                    f"{here}, best throughput: {split(only, load)[1]} at {only.goodput_rps.mean:,.0f} req/s, the "
                    f"only configuration without failures ({', '.join(split(p, load)[1] for p in lost)} failing).",
                    subject=f"best throughput {here.lower()}",
                    figures=(Figure(split(only, load)[1], only.goodput_rps.mean, "req/s"),),
                    outcome="only one",
                    caveats=caveats(caveat([only])),
                )
            )
        if len(ps) < 2:
            continue
        if len(untested(ps)) >= len(ps) - 1:
            out.append(_unranked(here, ps, load))
            continue
        thinking = [p for p in ps if p.think_s]
        if len(thinking) == len(ps):
            out.append(_set_by_think(here, ps))
        else:
            best, line, tied = _best(ps, load, True, families[True])
            out.append(_ranked(here, (best, line, tied), ps, load, families[True], True))
            slower = [p for p in ps if p is not best and p not in tied and p not in untested(ps)]
            out += _steadier(best, ps, here, load) + _tradeoff(best, slower, here, load, levels)
            out += _steadiest(best, tied, here, load, levels)
        thin = _thin_tail(here, ps)
        out.append(thin or _ranked(here, _best(ps, load, False, families[False]), ps, load, families[True], False))
    return out


def _fewest_responses(ps: list[PointStats]) -> int:
    return min((x.responses for p in ps for x in p.results()), default=0)


def _their_p99(ps: list[PointStats]) -> str:
    """Whether the p99 of think-time points is compared, as the p99 lines
    that follow decide (`_thin_tail`): never said where it is not."""
    if _fewest_responses(ps) >= P99_MIN_RESPONSES:
        return "their p99 is (the next line)"
    return "nor is their p99, their runs too short for one (the next line)"


def think_p99_words(points: list[PointStats], load: set[str]) -> str:
    """For the report's head: whether the p99 of the think-time points,
    left out of the throughput comparisons, is compared anywhere."""
    thinking = [ps for _, ps in at_matched_load(points, load) if all(p.think_s for p in ps) and len(ps) >= 2]
    compared = sum(_fewest_responses(ps) >= P99_MIN_RESPONSES for ps in thinking)
    if not thinking or compared == len(thinking):
        return "their p99 is compared"
    if not compared:
        return "nor is their p99: their runs hold too few responses for one"
    return f"their p99 is compared at {compared} of their {len(thinking)} load levels, where the runs allow one"


def _steadiness_asked(ps: list[PointStats]) -> bool:
    """Whether a load level's configurations are compared for steadiness:
    as the loop below decides, two or more with runs to test, and a rate
    not set by think time."""
    return len(ps) >= 2 and len(untested(ps)) < len(ps) - 1 and not all(p.think_s for p in ps)


def _thin_tail(here: str, ps: list[PointStats]) -> Finding | None:
    """Runs too short for a p99 to rank by: with fewer than
    P99_MIN_RESPONSES responses, fewer than 10 lie beyond a run's 99th
    percentile, which is then one of its few largest responses (a run's
    start-up, one stall) rather than an estimate of the tail."""
    fewest = _fewest_responses(ps)
    if fewest >= P99_MIN_RESPONSES:
        return None
    return Finding(
        "verdict",
        f"{here}, p99 not ranked: a run held only {fewest:,} responses, so fewer than 10 lie beyond its 99th "
        f"percentile, which is one of its few largest responses, not an estimate of the tail; runs of "
        f"{P99_MIN_RESPONSES:,} responses or more give one.",
        subject=f"lowest p99 {here.lower()}",
        outcome="not tested",
    )


def _ranked(
    here: str,
    ranked: tuple[PointStats, str, list[PointStats]],
    ps: list[PointStats],
    load: set[str],
    rates: Family,
    higher: bool,
) -> Finding:
    """The best at one load level (`_best`'s answer) as a record: its mean
    with the t interval over its runs, and whether the family's comparisons
    show it best (not where an untested configuration's mean is better)."""
    best, line, tied = ranked
    # A configuration behind the best whose figures are bounds (partly the
    # generator's) may truly be ahead of it: the pick is then not shown.
    bounded = [split(p, load)[1] for p in ps if p is not best and p not in tied and p.limits()]
    if bounded:
        head = "best throughput: " if higher else "lowest p99: "
        shown = "no configuration shown best in throughput" if higher else "no configuration shown lowest in p99"
        line = line.replace(head, f"{shown}; {'the highest mean' if higher else 'the lowest'}: ", 1)
    text = f"{here}, {line}{_untested_note(ps, load)}."
    if bounded:
        what = "throughput a lower bound" if higher else "latency an upper bound"
        bias = (
            "and so had the pick: which way that biases the ranking is unknown"
            if best.limits()
            else "which favours the pick"
        )
        text += (
            f" Not shown best: {', '.join(bounded)} had its {what} (partly the generator's or the machine's), {bias}."
        )
    name = split(best, load)[1]
    s = best.goodput_rps if higher else best.p99_us
    unit = "req/s" if higher else "ms"
    what = "throughput" if higher else "p99"
    interval = None
    centre, low, high = (
        (s.mean, s.ci_low, s.ci_high) if higher else (s.geomean / 1e3, s.geo_low / 1e3, s.geo_high / 1e3)
    )
    if s.n >= 2 and not math.isnan(low):
        # As stats.summarize and stats.geometric compute them.
        method = (
            "the mean of its runs, Student's t interval (by the delta method on the log scale where every run "
            "is above 0)"
            if higher
            else "the geometric mean of its runs' p99, Student's t interval on the logs"
        )
        interval = Interval(centre, low, high, unit, method=method)
    return Finding(
        "verdict",
        text,
        subject=f"best {what} {here.lower()}: {name}",
        figures=(Figure(name, centre, unit),),
        interval=interval,
        outcome="not shown best" if tied or bounded or _untested_better(best, ps, higher) else "shown best",
        caveats=caveats(caveat(ps, latency=not higher), "" if higher else _closed_loop_note(ps, rates)),
    )


# Rates closer than this are one offered rate for the p99 caveat.
SAME_RATE = 1.1


def _closed_loop_note(ps: list[PointStats], rates: Family) -> str:
    """In a closed loop (users or connections that wait for their reply)
    each configuration sets its own arrival rate: by Little's law
    R = N/X − Z (Denning & Buzen 1978), at the same N a configuration that
    serves more answers sooner on average, so a p99 ranking at matched
    users is expected to follow the throughput ranking rather than compare
    latency at one offered rate. Said where the fastest and the slowest
    configuration's rates are 10% or more apart and differ by Welch's t,
    and every point's loop held its concurrency (where Little's law fails,
    its own caveat says more). The rates are "different" only where the
    family's throughput comparison shows it, so the report gives one answer
    to one question (ANSWERS.md §6); apart by Welch's t at α alone, they
    "may" differ, said as the caveat it is."""
    looped = [p for p in ps if p.results() and all(x.model in ("closed", "users") for x in p.results())]
    if len(looped) < len(ps) or len(ps) < 2 or any(little_fails(p) for p in ps):
        return ""
    slow, fast = min(ps, key=_goodput), max(ps, key=_goodput)
    apart = fast.goodput_rps.mean >= SAME_RATE * slow.goodput_rps.mean
    if not apart:
        return ""
    rates_apart = f"{slow.goodput_rps.mean:,.0f}–{fast.goodput_rps.mean:,.0f} req/s"
    # Where think time sets the rate, throughput is not compared (the
    # family leaves those points out): no comparison to cite.
    compared = not slow.think_s and not fast.think_s
    if compared and rates.get(slow, fast).significant:
        offered = f"they were offered different rates ({rates_apart}, shown by the throughput comparison)"
    elif effect(throughput(slow), throughput(fast)).significant:
        offered = (
            f"they may have been offered different rates ({rates_apart}: apart by Welch's t at α = {ALPHA} alone, "
            + ("not shown at the family's level)" if compared else "throughput not compared where think time sets it)")
        )
    else:
        return ""
    return (
        f"Closed loop: each configuration's clients waited for its replies, so {offered}; by Little's law "
        "(R = N/X − Z, mean response time) the faster one answers sooner on average at the same users, and this "
        "p99 ranking is expected to follow the throughput's rather than compare latency at one offered rate. For "
        "that: an open-loop rate ([load] rate, docs/load.md) or corebench capacity."
    )


def _untested_better(best: PointStats, ps: list[PointStats], higher: bool) -> bool:
    """An untested configuration (one run) whose mean beats the best's."""
    if higher:
        return any(p.goodput_rps.mean > best.goodput_rps.mean for p in untested(ps))
    return any(p.p99_us.geomean < best.p99_us.geomean for p in untested(ps) if p.p99_us.n)


def _set_by_think(here: str, ps: list[PointStats]) -> Finding:
    """Users who pause Z s between requests offer at most N / (Z + R)
    requests per second (the interactive response time law, Denning & Buzen
    1978): their rate is the load's, whatever the configuration."""
    p = ps[0]
    offered = ""
    if (bound := p.users_offer_rps) is not None:
        offered = f", at most N/(Z+R) = {p.clients}/({p.think_s:g} + {p.response_s:.3f}) ≈ "
        offered += f"{bound:,.0f} req/s in a steady state"
        measured = max(q.goodput_rps.mean for q in ps)
        if measured > 1.05 * bound:
            offered += (
                f"; measured up to {measured:,.0f}, above it: every user's first request leaves at once, which a "
                "run this short does not outlast"
            )
    return Finding(
        "verdict",
        f"{here}, throughput is set by the users' think time (the interactive response time law{offered}), not "
        f"by the configuration: it is not compared here; {_their_p99(ps)}.",
        subject=f"throughput {here.lower()}",
        figures=() if bound is None else (Figure("users' offered rate", bound, "req/s"),),
        outcome="load-limited",
    )


def _best(
    ps: list[PointStats], load: set[str], higher: bool, family: Family
) -> tuple[PointStats, str, list[PointStats]]:
    """The best configuration by mean throughput (or by the mean of its
    runs' p99 by their geometric mean, the tables' figure and the statistic
    its comparisons test), what the family's
    comparisons say of each other one against it, and those that cannot be
    told from it."""
    # A p99 is ranked by its runs' geometric mean: not where a run's is 0 (none).
    tested = [p for p in ps if p not in untested(ps) and (higher or math.isfinite(p.p99_us.geomean))]
    best = max(tested, key=_goodput) if higher else min(tested, key=lambda p: p.p99_us.geomean)
    what = "throughput" if higher else "p99"
    said, tied = [], []
    for p in tested:
        if p is best:
            continue
        e = family.get(p, best)
        if e.verdict in ("higher", "lower"):
            said.append(
                f"{split(p, load)[1]} {'lower' if higher else 'higher'}: the best's {what} {effect_said(e)} against it"
            )
        else:
            tied.append((p, e))
    if tied:
        names = ", ".join(
            f"{split(p, load)[1]} (the best {pct(e.relative)}, {e.interval()}, {e.verdict})" for p, e in tied
        )
        said.append(f"cannot be told from it: {names} (each interval holds no change{_could(tied)})")
    head = "best throughput" if higher else "lowest p99"
    if len(tied) == len(tested) - 1:
        head = (
            "no configuration shown best in throughput; the highest mean"
            if higher
            else "no configuration shown lowest in p99; the lowest"
        )
    return best, f"{head}: {_figure(best, load, higher)}; " + "; ".join(said), [p for p, _ in tied]


def _figure(p: PointStats, load: set[str], higher: bool) -> str:
    if higher:
        return f"{split(p, load)[1]} at {p.goodput_rps.mean:,.0f} req/s ({_ci(p.goodput_rps)})"
    return f"{split(p, load)[1]} at {p.p99_us.geomean / 1000:.2f} ms (the geometric mean of its runs' p99, as tabled)"


def effect_said(e: Effect) -> str:
    """An effect in a clause: its change, interval and test, and what an
    inconclusive one could have detected."""
    said = f"{pct(e.relative)} ({e.interval()}; {e.test()}"
    if e.verdict == "inconclusive":
        said += f"; this design could detect {change_size(e.detectable)}"
    return said + ")"


def _request_spread(p: PointStats) -> tuple[float, float] | None:
    """Per-request latency at a point, in µs: the mean of its runs'
    requests, and the geometric mean of each run's own sd (ab's "±sd" of a
    run), the quantity its comparisons test (the log-sd ratio: a ratio of
    spreads, symmetric on the log scale, each run's sd one replicate): a
    pooled sd would add the
    drift of the runs' means, which is run-to-run variation, another
    question."""
    parts = [(x.latency_us.total.count, x.latency_us.total.mean_us) for x in p.results()]
    n = sum(c for c, _ in parts)
    sds = _run_sds(p)
    if n < 2 or not sds:
        return None
    return sum(c * m for c, m in parts) / n, geometric(sds)[0]


def _run_sds(p: PointStats) -> list[float]:
    """Each measured run's own sd of per-request latency, in µs: the runs are
    the units a comparison of spread replicates over."""
    return [s for x in p.results() if x.latency_us.total.count > 1 and (s := x.latency_us.total.stdev_us) > 0]


def _spread_effect(a: PointStats, b: PointStats, family: int = 1) -> Effect:
    """b's per-request latency sd against a's, as the ratio of their runs'
    geometric mean sds (Welch's t on the log sds) with its interval and
    class (analysis.effect: the run is the unit, as for throughput)."""
    return log_effect(_run_sds(a), _run_sds(b)).in_family(family)


def _tradeoff(best: PointStats, slower: list[PointStats], here: str, load: set[str], levels: int = 1) -> list[Finding]:
    """The fourth field report's trade-off, where there is one: the fastest
    configuration against the one, among those shown slower, whose
    requests' latency varies least (the sd of every request, ab's ±sd), when
    that sd is at least TRADE_OFF smaller; the runs' own sds compared say
    whether it is shown. Run-to-run variation of throughput is another
    question, named as such."""
    spread = {id(p): s for p in [best, *slower] if (s := _request_spread(p)) is not None}
    candidates = [p for p in slower if id(p) in spread]
    if id(best) not in spread or not candidates:
        return []
    steady = min(candidates, key=lambda p: spread[id(p)][1])
    (mb, sb), (ms, ss) = spread[id(best)], spread[id(steady)]
    if ss >= (1 - TRADE_OFF) * sb:
        return []
    faster = best.goodput_rps.mean / steady.goodput_rps.mean - 1
    # The steadiest was picked among the candidates, at each of the load
    # levels: held over all of them (Bonferroni), as throughput's family is.
    e = _spread_effect(best, steady, len(candidates) * levels)
    fast_name, steady_name = split(best, load)[1], split(steady, load)[1]
    bounded = _bounded([best, steady], load)
    shown = e.verdict == "lower" and not bounded
    vary = "vary less" if shown else "varied less in these runs, not shown" + bounded
    return [
        Finding(
            "verdict",
            f"{here}, speed against steadiness: {fast_name} serves the most ({faster:+.0%} over "
            f"{steady_name}, shown above), but {steady_name}'s requests {vary}: latency "
            f"{ms / 1000:.2f} ± {ss / 1000:.2f} ms against {mb / 1000:.2f} ± {sb / 1000:.2f} ms (mean ± sd of "
            f"every request, the sd each run's own, its geometric mean over runs; {e.words('latency sd')}). "
            + ("Which to run weighs the two; the" if shown else "The")
            + f" run-to-run variation of throughput (CV {steady.goodput_rps.cv:.1%} and "
            f"{best.goodput_rps.cv:.1%}) is another question.",
            subject=f"{steady_name} against {fast_name} {here.lower()}",
            figures=(
                Figure(f"latency sd of {steady_name}", ss / 1000, "ms"),
                Figure(f"latency sd of {fast_name}", sb / 1000, "ms"),
            ),
            interval=Interval.of(e),
            outcome="trade-off" if shown else ("not shown" if bounded else e.verdict),
            caveats=caveats(caveat([best, steady], latency=True)),
        )
    ]


def _steadiest(best: PointStats, tied: list[PointStats], here: str, load: set[str], levels: int = 1) -> list[Finding]:
    """Where throughput cannot tell the best from others, there is no
    speed to trade: which of them serves requests with the least spread
    (the sd of every request, the fourth field report's measure), and
    whether the runs' own sds show it, against each other one (held
    together: Bonferroni over them)."""
    spread = {id(p): s for p in [best, *tied] if (s := _request_spread(p)) is not None}
    if id(best) not in spread or not any(id(p) in spread for p in tied):
        return []
    steady = min((p for p in [best, *tied] if id(p) in spread), key=lambda p: spread[id(p)][1])
    others = [p for p in [best, *tied] if p is not steady and id(p) in spread]
    if not others or spread[id(steady)][1] >= (1 - TRADE_OFF) * min(spread[id(p)][1] for p in others):
        return []
    effects = [_spread_effect(p, steady, len(others) * levels) for p in others]
    said = ", ".join(
        f"{spread[id(p)][0] / 1000:.2f} ± {spread[id(p)][1] / 1000:.2f} ms for {split(p, load)[1]}" for p in others
    )
    per_run = "; ".join(
        f"against {split(p, load)[1]}, {e.words('latency sd')}" for p, e in zip(others, effects, strict=True)
    )
    bounded = _bounded([steady, *others], load)
    tested_lower = all(e.verdict == "lower" for e in effects)
    shown = tested_lower and not bounded
    m, sd = spread[id(steady)]
    if shown:
        vary = "vary least"
    elif tested_lower:
        # The tests did show it: what is not shown is that the spread is the server's.
        vary = "varied least in these runs, lower against every other, but not shown to be the server's" + bounded
    else:
        vary = "varied least in these runs, not shown against every other" + bounded
    names = ", ".join(split(p, load)[1] for p in [best, *tied])
    return [
        Finding(
            "verdict",
            f"{here}, steadiness per request among the configurations throughput cannot tell apart ({names}): "
            f"{split(steady, load)[1]}'s requests {vary}: latency {m / 1000:.2f} ± {sd / 1000:.2f} ms against "
            f"{said} (mean ± sd of every request, the sd each run's own, its geometric mean over runs); {per_run}.",
            subject=f"steadiest {here.lower()}: {split(steady, load)[1]}",
            figures=tuple(
                Figure(f"latency sd of {split(p, load)[1]}", spread[id(p)][1] / 1000, "ms") for p in [steady, *others]
            ),
            # The record's interval is the comparison nearest to no change
            # (the largest p): the one that decides whether it is shown.
            interval=Interval.of(max(effects, key=lambda e: e.p_value if e.tested else math.inf)),
            outcome="steadier" if shown else ("not shown" if bounded else "inconclusive"),
            caveats=caveats(caveat([steady, *others], latency=True)),
        )
    ]


def _bounded(ps: list[PointStats], load: set[str]) -> str:
    """Where a compared point's latency is partly the generator's or the
    machine's (an upper bound), the spread of its requests is too: a
    steadier one is then not shown, as a lower p99 or a cheaper one is not."""
    named = [split(p, load)[1] for p in ps if p.limits()]
    if not named:
        return ""
    return f" ({', '.join(named)}: latency partly the generator's or the machine's, so its spread is too)"


def _steadier(fast: PointStats, ps: list[PointStats], here: str, load: set[str]) -> list[Finding]:
    """A configuration steadier run to run than the fastest, only where
    Brown–Forsythe's test of spread says their spreads differ (Holm-adjusted)."""
    rest = [p for p in ps if p is not fast]
    adjusted = holm([dispersion_differs(fast.run_goodput_rps, p.run_goodput_rps) for p in rest])
    out = []
    for p, q in zip(rest, adjusted, strict=True):
        if not math.isnan(q) and q < ALPHA and p.goodput_rps.cv < fast.goodput_rps.cv:
            out.append(
                Finding(
                    "verdict",
                    f"{here}, {split(p, load)[1]} is steadier run to run than {split(fast, load)[1]} (coefficient "
                    f"of variation {p.goodput_rps.cv:.1%} vs {fast.goodput_rps.cv:.1%}; Brown–Forsythe test, "
                    f"Holm-adjusted p {p_is(q)}).",
                    subject=f"{split(p, load)[1]} against {split(fast, load)[1]} {here.lower()}",
                    figures=(
                        Figure(f"CV of {split(p, load)[1]}", p.goodput_rps.cv, "share"),
                        Figure(f"CV of {split(fast, load)[1]}", fast.goodput_rps.cv, "share"),
                        Figure("adjusted p", q, "p"),
                    ),
                    outcome="steadier",
                    caveats=caveats(caveat([p, fast])),
                )
            )
    return out


def _unranked(here: str, ps: list[PointStats], load: set[str]) -> Finding:
    """Too few runs to rank: the means, said as means, with no pick."""
    means = ", ".join(f"{split(p, load)[1]} {p.goodput_rps.mean:,.0f}" for p in sorted(ps, key=_goodput, reverse=True))
    return Finding(
        "verdict",
        f"{here}, throughput (req/s, mean of each configuration's runs): {means}; not ranked: a comparison needs 2 "
        f"or more measured runs a side, and at most one configuration here has them.",
        subject=f"throughput {here.lower()}",
        figures=tuple(Figure(split(p, load)[1], p.goodput_rps.mean, "req/s") for p in ps),
        outcome="not tested",
        caveats=caveats(caveat(ps)),
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


def _could(tied: list[tuple[PointStats, Effect]]) -> str:
    """What the design could detect against the best: the range over the
    inconclusive pairs, not their most precise alone, which would overstate
    how sensitive it was for the others."""
    detect = sorted(e.detectable for _, e in tied if e.verdict == "inconclusive")
    if not detect:
        return ""
    if len(detect) == 1 or change_size(detect[0]) == change_size(detect[-1]):
        return f"; the smallest change this design could detect: {change_size(detect[0])}"
    return (
        f"; the smallest change this design could detect: {change_size(detect[0])} for the most precise of them, "
        f"{change_size(detect[-1])} for the least"
    )
