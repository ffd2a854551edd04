"""Steps in CPUs: what each added CPU gave, at matched load and
configuration, against what ideal scaling and the target's own CPU demand
say it could have given."""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass

from corebench.analysis.effect import Effect, counted, effect, held_together, held_words
from corebench.analysis.factor_effects import could_see, limited_note, tally
from corebench.analysis.family import Family
from corebench.analysis.finding import Figure, Finding, Interval, caveats
from corebench.analysis.points import PointStats
from corebench.analysis.pooled import pool, poolable, said

# Beyond this many matched groups a step is summarised in one line.
DETAIL_GROUPS = 4


@dataclass(frozen=True)
class Step:
    lo: float
    hi: float
    a: PointStats
    b: PointStats
    at: str  # the other factors' levels (load and configuration), "" for none
    gain: Effect

    @property
    def ideal(self) -> float:
        return self.hi / self.lo


def core_steps(points: list[PointStats], family: Family, lines: int = 0) -> list[Finding]:
    """Each step from one CPU level to the next, for each combination of the
    other factors: never a CPU level's best point against another's, which
    would compare load levels. Each step is the family's comparison of its
    two points (`analysis.family`), held to the family's level; a
    summary's average is held over `lines` combined lines (0: its own)."""
    groups, by_pair = _steps(points, family)
    lines = lines or combined(by_pair)
    out = []
    for these in by_pair:
        if len(these) <= DETAIL_GROUPS:
            # Their CPU-per-request changes held together, as their count would be (_demand_effects).
            size = sum(e.tested for e in _demand_effects(these))
            out += [_detail(s, size) for s in these]
        else:
            out.append(_summary(these, lines))
            out += [Finding("verdict", line, subject=_subject(s)) for s in these if (line := _superlinear(s).strip())]
    for by_cpus in groups.values():
        levels = sorted(by_cpus)
        out += [Finding("verdict", line) for line in _odd_demand([by_cpus[c] for c in levels], levels)]
    return out


def combined(by_pair: list[list[Step]]) -> int:
    """How many averages the steps' summaries give: throughput and CPU per
    request, each one line of the report's family."""
    summarised = [these for these in by_pair if len(these) > DETAIL_GROUPS]
    return sum(poolable([s.gain for s in these]) + poolable(_demand_effects(these)) for these in summarised)


def _demand_effects(steps: list[Step]) -> list[Effect]:
    return held_together(
        [effect(s.a.demand_ms, s.b.demand_ms) for s in steps if len(s.a.demand_ms) >= 2 and len(s.b.demand_ms) >= 2]
    )


def step_groups(points: list[PointStats], family: Family) -> list[list[Step]]:
    """The steps, one list per pair of CPU levels."""
    return _steps(points, family)[1]


def _steps(points: list[PointStats], family: Family) -> tuple[dict[str, dict[float, PointStats]], list[list[Step]]]:
    if not points or not all("cpus" in p.levels for p in points):
        return {}, []
    groups: dict[str, dict[float, PointStats]] = {}
    for p in points:
        rest = {k: v for k, v in p.levels.items() if k != "cpus"}
        groups.setdefault(json.dumps(rest), {})[float(p.levels["cpus"])] = p
    steps = []
    for key, by_cpus in groups.items():
        at = " ".join(f"{k}={v}" for k, v in json.loads(key).items())
        levels = sorted(by_cpus)
        for lo, hi in zip(levels, levels[1:], strict=False):
            a, b = by_cpus[lo], by_cpus[hi]
            steps.append(Step(lo, hi, a, b, at, family.get(a, b)))
    pairs = list(dict.fromkeys((s.lo, s.hi) for s in steps))
    return groups, [[s for s in steps if (s.lo, s.hi) == pair] for pair in pairs]


def _subject(s: Step) -> str:
    return f"cpus={s.hi:g} against cpus={s.lo:g}" + (f" at {s.at}" if s.at else "")


def _mean_ratio(s: Step) -> float:
    a, b = s.a.goodput_rps.mean, s.b.goodput_rps.mean
    return b / a if a > 0 else math.nan


def _detail(s: Step, demand_family: int = 1) -> Finding:
    at = f" at {s.at}" if s.at else ""
    line = (
        f"From {s.lo:g} to {s.hi:g} CPUs{at}: {s.gain.words()}; ideal scaling would give "
        f"{(s.ideal - 1) * 100:.0f}% more ({s.a.goodput_rps.mean:,.0f} → {s.b.goodput_rps.mean:,.0f} req/s, "
        f"means of {len(s.a.measured)} and {len(s.b.measured)} runs)."
    )
    figures = [
        Figure(f"goodput at {s.lo:g} CPUs", s.a.goodput_rps.mean, "req/s"),
        Figure(f"goodput at {s.hi:g} CPUs", s.b.goodput_rps.mean, "req/s"),
        Figure("ideal ratio", s.ideal, "ratio"),
    ]
    if s.gain.verdict == "inconclusive":
        figures.append(Figure("detectable change", s.gain.detectable, "share"))
    return Finding(
        "verdict",
        line + _superlinear(s) + _demand_step(s, demand_family),
        subject=_subject(s),
        figures=tuple(figures),
        interval=Interval.of(s.gain),
        outcome=s.gain.verdict,
        caveats=caveats(caveat([s.a, s.b])),
    )


def _summary(steps: list[Step], lines: int) -> Finding:
    lo, hi = steps[0].lo, steps[0].hi
    gains = [s.gain for s in steps]
    ratios = [_mean_ratio(s) for s in steps if not math.isnan(_mean_ratio(s))]
    median = f"median change {(statistics.median(ratios) - 1) * 100:+.1f}%; ".replace("-", "−") if ratios else ""
    together = pool(gains, lines)
    figures = [*tally(gains), Figure("ideal ratio", hi / lo, "ratio")]
    return Finding(
        "verdict",
        f"From {lo:g} to {hi:g} CPUs, at each of {len(steps)} matched combinations of the other factors: throughput "
        f"{counted(gains)} ({median}ideal scaling +{(hi / lo - 1) * 100:.0f}%){said(together)}."
        + could_see(gains)
        + _summary_demand(steps, lines),
        subject=f"cpus={hi:g} against cpus={lo:g}",
        figures=tuple(figures),
        interval=together.interval() if together else None,
        outcome=together.outcome if together else "",
        caveats=caveats(limited_note([(s.a, s.b) for s in steps])),
    )


def _summary_demand(steps: list[Step], lines: int) -> str:
    """The steps' effect on the target's CPU per request, combined as the
    throughput's is, where the monitor measured it at both levels."""
    es = _demand_effects(steps)
    ratios = [e.ratio for e in es if e.tested]
    if not ratios:
        return ""
    median = f"{(statistics.median(ratios) - 1) * 100:+.1f}%".replace("-", "−")
    return (
        f" CPU per request (service demand; {held_words(es)}): {counted(es)}, median change {median}"
        f"{said(pool(es, lines))}."
    )


def _superlinear(s: Step) -> str:
    """More than ideal is flagged whether or not a test could show it."""
    ratio = _mean_ratio(s)
    if not ratio > s.ideal:
        return ""
    at = f" at {s.at}" if s.at else ""
    if s.gain.tested and s.gain.low > s.ideal:
        how = "beyond its interval"
    elif s.gain.tested:
        how = "though within its interval"
    else:
        how = f"from {len(s.a.measured)} and {len(s.b.measured)} run(s), untested"
    return (
        f" Superlinear from {s.lo:g} to {s.hi:g} CPUs{at}: {ratio:.2f}× for an ideal {s.ideal:g}× ({how}): look twice "
        "before trusting it (caches that now fit, clock rates, a setup that differs between the runs, or a "
        "lower point held back by its generator)."
    )


def _demand_step(s: Step, family: int = 1) -> str:
    """With D the CPU-seconds per request, C CPUs sustain at most C / D
    requests per second (the utilization law, Denning & Buzen 1978), so
    the ratio of the ceilings is what the server itself could do if nothing
    else limited it: a projection, with its interval from the demands',
    held over the `family` of such changes the report gives for this step
    in CPUs (Bonferroni)."""
    a, b, lo, hi = s.a, s.b, s.lo, s.hi
    if len(a.demand_ms) < 2 or len(b.demand_ms) < 2:
        return ""
    da, db = statistics.fmean(a.demand_ms), statistics.fmean(b.demand_ms)
    change = effect(a.demand_ms, b.demand_ms).in_family(family)
    if not change.tested:
        return ""
    ceiling = (hi / lo) / change.ratio
    low, high = (hi / lo) / change.high, (hi / lo) / change.low
    measured = _mean_ratio(s)
    text = (
        f" CPU per request {da:.3f} → {db:.3f} ms ({change.words('service demand')}), so the projected CPU "
        f"ceiling of {hi:g} CPUs is {ceiling:.2f}× that of {lo:g} ({change.held()} {low:.2f}–{high:.2f}×); measured "
        f"{measured:.2f}×"
    )
    # Measured over projected is (X_b / X_a) · (D_b / D_a) · (lo / hi) = U_b/hi
    # over U_a/lo: the share of its CPUs the target kept busy at each level
    # (the utilization law). Tested on the runs' own shares, the demands'
    # noise cancels, which two overlapping intervals would not show.
    # Held to the same level as the demands' changes (α over the steps), so
    # its "simultaneous over N" holds among the shares; the two sets of
    # tests together are held to at most 2α (Bonferroni).
    shares = effect(_shares(a, lo), _shares(b, hi)).in_family(family)
    if not shares.tested:
        return text + "."
    kept = (
        f"the target kept {statistics.fmean(_shares(b, hi)):.0%} of its {hi:g} CPUs busy against "
        f"{statistics.fmean(_shares(a, lo)):.0%} of {lo:g}, a ratio of {shares.ratio:.2f} ({shares.held()} "
        f"{shares.low:.2f}–{shares.high:.2f}; Welch's t on the runs' shares)"
    )
    if shares.high >= 1:
        return text + f", not shown below the projection: {kept}."
    x_a, x_b = a.goodput_rps.mean, b.goodput_rps.mean
    missing = (ceiling * x_a - x_b, low * x_a - x_b, high * x_a - x_b)
    return text + f", below the projection: {kept}; " + _why_short(b, missing, db) + "."


def _shares(p: PointStats, cpus: float) -> list[float]:
    """Each measured run's target CPU over the CPUs it was given."""
    return [
        r.monitor.target_cpu / cpus for r in p.measured if r.monitor is not None and r.monitor.target_cpu is not None
    ]


def _why_short(b: PointStats, missing: tuple[float, float, float], demand_ms: float) -> str:
    """What measured figures say of the throughput missing at the larger
    point against the projection (its estimate, and its range over the
    projection's interval); "consistent with" where nothing measured
    accounts for it."""
    short, short_low, short_high = missing
    if b.shared and b.generator_cpu is not None and short > 0:
        served = b.generator_cpu / (demand_ms / 1000)
        part = f"accounts for {served / short:.0%} of it" + (" (more than all of it)" if served > short else "")
        most = "more than all of it" if short_low <= served else f"{served / short_low:.0%}"
        spread = (
            f" ({served / short_high:.0%} to {most} over the projection's interval, "
            f"{max(short_low, 0):,.0f}–{short_high:,.0f} req/s missing)"
        )
        return (
            f"the generator's {b.generator_cpu:.2f} cores of CPU on the target's cores would have served about "
            f"{served:,.0f} req/s at this demand, of the {short:,.0f} req/s missing: that {part}{spread}"
        )
    if b.interference_runs:
        return f"consistent with others taking up to {b.interference_max:.0%} of the target's cores"
    if b.client_bound:
        return "consistent with the generator reaching its own limit (it was CPU-bound)"
    return "the CPU figures do not explain it (consistent with I/O, locks, or too few clients)"


def _odd_demand(points: list[PointStats], levels: list[float]) -> list[str]:
    """A CPU level whose service demand is significantly below (or above)
    both its neighbours': the work per request does not change that way with
    cores, so that level's runs are suspect (a different server state, a
    warmer or colder start)."""
    out = []
    for i in range(1, len(points) - 1):
        mid = points[i]
        if any(len(points[j].demand_ms) < 2 for j in (i - 1, i, i + 1)):
            continue
        sides = [effect(points[j].demand_ms, mid.demand_ms) for j in (i - 1, i + 1)]
        if all(c.verdict == "lower" for c in sides) or all(c.verdict == "higher" for c in sides):
            way = "less" if sides[0].ratio < 1 else "more"
            out.append(
                f"Implausible: at {levels[i]:g} CPUs{_at(mid)} the target spent {way} CPU per request "
                f"({statistics.fmean(mid.demand_ms):.3f} ms) than at both {levels[i - 1]:g} and {levels[i + 1]:g} "
                f"CPUs, beyond their intervals; its figures (and any efficiency above 100%) need a second look."
            )
    return out


def _at(p: PointStats) -> str:
    rest = " ".join(f"{k}={v}" for k, v in p.levels.items() if k != "cpus")
    return f" ({rest})" if rest else ""


def caveat(points: list[PointStats], latency: bool = False) -> str:
    """The caveat a verdict carries when a point it names measured the
    generator or the machine at least in part (ANSWERS.md §3): its
    throughput is a lower bound of the server's, its latency an upper one."""
    said = [f"{p.label()}: {', '.join(p.limits())}" for p in points if p.limits()]
    # The bound is each named point's figure, not the comparison's: a ratio
    # of a bound to a figure is a bound one way, of two bounds neither.
    bound = "latency an upper bound of the server's" if latency else "throughput a lower bound of the server's"
    out = f" Caveat, each named point's {bound}: {'; '.join(said)}." if said else ""
    stalled = [(p.label(), s) for p in points if (s := p.stalled()) is not None]
    if stalled:
        out += (
            " Caution: requests waited most of a run at "
            + "; ".join(f"{name} (the slowest took {s[0]:.2f} s of a {s[1]:.2f} s run)" for name, s in stalled)
            + ": consistent with connections waiting for a worker (fewer workers or threads than connections); "
            "the figures describe the connections served."
        )
    return out
