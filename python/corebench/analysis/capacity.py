"""Capacity per configuration, from plans whose runs are capacity searches
(`[search]`): the rate each configuration sustains within the objective,
with its interval over repetitions, and the answer to "to serve R req/s
within the objective, how many cores?".

The cores answer reads the measured levels first: the smallest cpus level
whose sustained rate reaches R (by the lower end of its 95% interval when
there are repetitions, so "enough" is not a coin toss). Between two
measured levels, a scaling law fitted to the sustained rates (linear,
Amdahl or the USL, chosen as in `scaling_model`) may say whether an
unmeasured level in between would do, but only inside the measured range;
beyond the largest level it predicts at most up to MAX_EXTRAPOLATION times
that level, and says it is a prediction."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as st

from corebench.analysis.points import PointStats
from corebench.analysis.scaling_model import choose
from corebench.analysis.stats import Summary, summarize
from corebench.plan.objective import Objective
from corebench.store import Step

# Levels a law is fitted to before it may speak between or beyond them.
MIN_FIT_LEVELS = 3


@dataclass
class PointCapacity:
    point: PointStats
    sustained: Summary  # the rate each measured run's search sustained, req/s
    brackets: list[tuple[float | None, float | None]]
    outcomes: list[str]
    objective: str
    arrivals: str

    @property
    def floor_rps(self) -> float:
        """What the point can be counted on for: its interval's lower end,
        or the one search's sustained rate."""
        s = self.sustained
        return s.ci_low if s.n >= 2 and not math.isnan(s.ci_low) else s.mean

    @property
    def above_max(self) -> bool:
        return any(o == "above-max" for o in self.outcomes)


def capacities(points: list[PointStats]) -> list[PointCapacity]:
    """Points whose measured runs were capacity searches."""
    out = []
    for p in points:
        searches = [r.search for r in p.measured if r.search is not None]
        rates = [s.rate_rps for s in searches if s.rate_rps is not None]
        if not rates:
            continue
        out.append(
            PointCapacity(
                point=p,
                sustained=summarize(rates),
                brackets=[s.bracket for s in searches],
                outcomes=[s.outcome for s in searches],
                objective=searches[0].objective,
                arrivals=searches[0].arrivals,
            )
        )
    return out


def _others(p: PointStats, factor: str) -> str:
    return " ".join(f"{k}={v}" for k, v in p.levels.items() if k != factor)


def cores_needed(caps: list[PointCapacity], traffic_rps: float, factor: str = "cpus") -> list[str]:
    """One sentence per configuration of the other factors."""
    groups: dict[str, list[PointCapacity]] = {}
    for c in caps:
        if isinstance(c.point.levels.get(factor), (int, float)):
            groups.setdefault(_others(c.point, factor), []).append(c)
    if not groups:
        return [f"No answer for {traffic_rps:,.0f} req/s: the experiment has no numeric {factor} factor."]
    return [
        _one(sorted(g, key=lambda c: c.point.levels[factor]), traffic_rps, factor, where) for where, g in groups.items()
    ]


def _one(g: list[PointCapacity], r: float, factor: str, where: str) -> str:
    objective = g[0].objective
    at = f" ({where})" if where else ""
    head = f"To serve {r:,.0f} req/s within {objective}{at}"

    def level(c: PointCapacity) -> float:
        return float(c.point.levels[factor])

    enough = [c for c in g if c.floor_rps >= r]
    # As the report's scaling fits: levels whose generator shared the
    # target's cores understate it, and a law needs 3 levels to be told apart.
    usable = [c for c in g if not c.point.shared]
    ns = [float(level(c)) for c in usable]
    model = choose(ns, [c.sustained.mean for c in usable]) if len(set(ns)) >= MIN_FIT_LEVELS else None
    law = model.chosen if model else None
    if enough:
        first = enough[0]
        below = [c for c in g if level(c) < level(first)]
        said = f"{head} you need {_count(level(first), factor)}: measured {_rate(first)}"
        if not below:
            return said + ", the fewest measured."
        prev = below[-1]
        said += f"; {_count(level(prev), factor)} {'sustains' if level(prev) == 1 else 'sustain'} {_rate(prev)}"
        between = [n for n in range(int(level(prev)) + 1, int(level(first)))]
        if between and law is not None:
            fit_ok = [n for n in between if law.predict(n) >= r]
            said += (
                f". Inside the measured range the fitted {law.law} law predicts {_count(fit_ok[0], factor)} would do "
                f"({law.predict(fit_ok[0]):,.0f} req/s, not measured)"
                if fit_ok
                else f". Inside the measured range the fitted {law.law} law predicts no level in between would do"
            )
        return said + "."
    top = g[-1]
    said = f"{head}: no measured level is enough; the most, {_count(level(top), factor)}, sustains {_rate(top)}"
    if top.above_max:
        said += " (its search reached --max-rate: it may sustain more)"
    if law is None or model is None:
        why = (
            model.why
            if model
            else f"it needs {MIN_FIT_LEVELS} or more {factor} levels whose load generator had cores of its own; "
            f"this experiment has {len(set(ns))}"
        )
        return said + f". No scaling law to extrapolate with: {why}."
    need = next((n for n in range(int(max(ns)) + 1, int(model.limit) + 1) if law.predict(n) >= r), None)
    if need is None:
        return (
            said + f". The fitted {law.law} law does not reach it within {model.limit:g} {factor} "
            f"(predictions stop at {model.limit / max(ns):g}× the largest level measured)."
        )
    lo, hi = law.band(need)
    return (
        said
        + f". The fitted {law.law} law predicts {_count(need, factor)} would sustain {law.predict(need):,.0f} req/s "
        f"(95% band {lo:,.0f}–{hi:,.0f}): a prediction beyond what was measured, to be checked."
    )


def _count(n: float, factor: str) -> str:
    """`2 cores` for the cpus factor, `workers=8` for any other."""
    if factor == "cpus":
        return f"{n:g} core{'' if n == 1 else 's'}"
    return f"{factor}={n:g}"


def _rate(c: PointCapacity) -> str:
    s = c.sustained
    shared = "; the load generator shared its cores, so a lower bound" if c.point.shared else ""
    if s.n >= 2 and not math.isnan(s.ci_low):
        return f"{s.mean:,.0f} req/s (95% CI {s.ci_low:,.0f}–{s.ci_high:,.0f}, {s.n} searches{shared})"
    return f"{s.mean:,.0f} req/s (one search{shared})"


@dataclass(frozen=True)
class CapacityRow:
    """A configuration's sustained rate, as the report shows it."""

    point: str
    sustained_rps: float
    ci: tuple[float, float] | None  # over the searches, when there are 2 or more
    searches: int
    bracket: tuple[float | None, float | None]  # the widest over the searches
    outcomes: str
    # Verdicts over all the searches that met the objective, and that missed
    # it: a step's, or a pool's of steps at one rate (runner.pool).
    steps_met: int = 0
    steps_missed: int = 0

    def sentence(self) -> str:
        """The row as the verdict says it: the same figures as the table."""
        ci = f"95% CI {self.ci[0]:,.0f}–{self.ci[1]:,.0f}, " if self.ci else ""
        lo, hi = self.bracket
        bracket = f"; bracket {lo:,.0f}–{hi:,.0f}" if lo is not None and hi is not None else ""
        return (
            f"{self.point}: {self.sustained_rps:,.0f} req/s ({ci}{self.searches} search"
            f"{'es' if self.searches != 1 else ''}{bracket}; steps met {self.steps_met}, missed {self.steps_missed})"
        )


def table(caps: list[PointCapacity]) -> list[CapacityRow]:
    """Rows for the report: each configuration's sustained rate."""
    rows = []
    for c in caps:
        los = [b[0] for b in c.brackets if b[0] is not None]
        his = [b[1] for b in c.brackets if b[1] is not None]
        steps = [s for r in c.point.measured if r.search is not None for s in r.search.verdicts()]
        rows.append(
            CapacityRow(
                point=c.point.label(),
                sustained_rps=c.sustained.mean,
                ci=(c.sustained.ci_low, c.sustained.ci_high) if c.sustained.n >= 2 else None,
                searches=c.sustained.n,
                bracket=(min(los) if los else None, max(his) if his else None),
                outcomes=", ".join(sorted(set(c.outcomes))),
                steps_met=sum(s.meets for s in steps),
                steps_missed=sum(not s.meets for s in steps),
            )
        )
    return rows


@dataclass(frozen=True)
class Crossing:
    """Where a latency percentile reaches its bound, interpolated from the
    steps near it: rate with its 95% interval, from `steps` steps."""

    metric: str
    rate_rps: float
    ci: tuple[float, float]
    steps: int


# Steps whose percentile lies within this factor of the bound carry the fit:
# far below it the queue is nearly empty, far above it the server is
# overloaded and the percentile is the length of the step, not the queue.
NEAR_BOUND = 3.0
MIN_CROSSING_STEPS = 3
# How far beyond the fitted steps' rates (a share of the nearest) the line
# is still read. A search ends with its steps near the limit a bracket
# apart (2% by default), and the noise of one step's percentile can put the
# crossing just past the highest of them (seen: 890.97 req/s, the top step
# at 890.82, theory 880): as well supported as one just inside. Further
# out the line is not read.
CROSSING_REACH = 0.02


def crossing(points: list[tuple[float, float]], limit_us: float, metric: str = "p99") -> Crossing | None:
    """The rate at which `metric` reaches `limit_us`, from (rate, value µs)
    steps. Below saturation a queue's waiting time grows as 1/(1 − ρ)
    (Kingman 1961, "The single server queue in heavy traffic", Proc. Camb.
    Phil. Soc. 57; exact for every percentile of M/M/1), so 1/latency is
    close to linear in the rate near the limit: the steps within a factor
    NEAR_BOUND of the bound are fitted by least squares on (rate,
    1/latency), and the line's crossing of 1/limit is the estimate. Its 95%
    interval is the inverse-regression (Fieller 1954) interval: the rates
    whose fitted line's confidence band contains 1/limit (Draper & Smith,
    "Applied Regression Analysis", 1998, §3.2). None when fewer than 3
    rates are near the bound, when latency does not rise with the rate
    there, or when the crossing lies more than CROSSING_REACH beyond the
    rates fitted. Every step counts, so the
    estimate averages the noise of a percentile from a few thousand
    autocorrelated requests, which single pass/fail verdicts cannot."""
    near = [(r, 1e6 / v) for r, v in points if v > 0 and limit_us / NEAR_BOUND <= v <= limit_us * NEAR_BOUND]
    rates = np.array([r for r, _ in near])
    if len(set(rates.tolist())) < MIN_CROSSING_STEPS or len(near) <= 2:
        return None
    y = np.array([q for _, q in near])
    x = np.column_stack([np.ones_like(rates), rates])
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    a, b = float(coef[0]), float(coef[1])
    dof = len(near) - 2
    s2 = float(np.sum((y - x @ coef) ** 2)) / dof
    cov = s2 * np.linalg.inv(x.T @ x)
    y0 = 1e6 / limit_us
    if b >= 0:
        return None  # latency not rising with the rate here: no crossing to read
    t = float(st.t.ppf(0.975, dof))
    estimate = (y0 - a) / b
    if not rates.min() * (1 - CROSSING_REACH) <= estimate <= rates.max() * (1 + CROSSING_REACH):
        return None  # the line would be read outside the steps that made it: no estimate
    # (a − y0 + b·x)² ≤ t²·(Vaa + 2x·Vab + x²·Vbb), a quadratic in x.
    qa = b * b - t * t * cov[1, 1]
    qb = 2 * ((a - y0) * b - t * t * cov[0, 1])
    qc = (a - y0) ** 2 - t * t * cov[0, 0]
    disc = qb * qb - 4 * qa * qc
    if qa <= 0 or disc < 0:
        ci = (-math.inf, math.inf)
    else:
        root = math.sqrt(disc)
        lo, hi = float((-qb - root) / (2 * qa)), float((-qb + root) / (2 * qa))
        # The interval is centred on the estimate; on points with no scatter
        # it is that point, and the quadratic's rounding may leave it an ulp
        # beside the estimate (seen with a newer numpy).
        ci = (min(lo, estimate), max(hi, estimate))
    return Crossing(metric, estimate, ci, len(near))


def limit_estimate(steps: list[Step], objective: Objective) -> Crossing | None:
    """The lowest crossing over the objective's latency bounds: the one
    that binds first, from the search's steps."""
    found = []
    for t in objective.latency:
        pts = [(s.rate_rps, s.measured[t.metric]) for s in steps]
        c = crossing(pts, t.limit, t.metric)
        if c is not None:
            found.append(c)
    return min(found, key=lambda c: c.rate_rps, default=None)
