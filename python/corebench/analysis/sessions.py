"""Sessions as blocks: does an effect replicate across sessions?

The runs of one session share its machine state, its day and its builds,
so the interval of a comparison within a session covers run-to-run noise
only: the demo's 1 → 2 CPU gain came out +70%, +101% and +87% in three
sessions, each with an interval a few points wide. Where a store holds
several sessions (`corebench run --session`, or a `--resume` on another
occasion), each comparison is made within each session, and the
sessions' effects are combined as a random-effects meta-analysis
(DerSimonian & Laird 1986, "Meta-analysis in clinical trials", Controlled
Clinical Trials 7(3)): the between-session variance τ² is estimated by the
method of moments from Cochran's Q, each session weighted by 1/(v_i + τ²),
so the combined interval is the one a reader can expect to see again in
another session. An effect replicated when every session's interval lies
on the same side of no change; it is inconclusive across sessions when
the combined interval holds no change."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np
from scipy import stats as st

from corebench.analysis.effect import effect, safe_exp
from corebench.analysis.load import at_matched_load
from corebench.analysis.points import PointStats
from corebench.analysis.stats import ALPHA
from corebench.store import StoredRun


@dataclass(frozen=True)
class Combined:
    """Per-session log ratios combined by DerSimonian & Laird."""

    estimate: float  # log ratio
    low: float
    high: float
    tau2: float  # between-session variance of the log ratio
    q: float  # Cochran's Q
    sessions: int
    per_session: tuple[tuple[float, float, float], ...]  # (ratio, low, high) in each session

    @property
    def ratio(self) -> float:
        return safe_exp(self.estimate)

    @property
    def shown(self) -> tuple[int, int]:
        """Sessions whose own interval excludes no change: above, below."""
        return sum(lo > 1 for _, lo, _ in self.per_session), sum(hi < 1 for _, _, hi in self.per_session)

    @property
    def pattern(self) -> str:
        """What the sessions' own comparisons say together: "every" (each
        shows it, on one side), "conflicting" (shown on both sides), "some"
        (shown in some, the others inconclusive) or "none"."""
        up, down = self.shown
        if up and down:
            return "conflicting"
        if max(up, down) == self.sessions:
            return "every"
        return "some" if up or down else "none"

    @property
    def replicated(self) -> bool:
        """Every session's own interval excludes no change, on the same side."""
        return self.pattern == "every"

    def sentence(self, what: str) -> str:
        each = ", ".join(f"{(r - 1) * 100:+.1f}%" for r, _, _ in self.per_session).replace("-", "−")
        up, down = self.shown
        said = {
            "every": "shown in every session, on the same side: replicated",
            "conflicting": f"shown on opposite sides ({up} higher, {down} lower): conflicting",
            "some": f"shown in {max(up, down)} of {self.sessions} sessions, inconclusive in the rest: not replicated",
            "none": "inconclusive in every session: nothing to replicate",
        }[self.pattern]
        if self.sessions < MIN_COMBINED:
            # Two sessions give the between-session variance one degree of
            # freedom: no interval to expect again is claimed from them.
            return f"{what}: {each} in the {self.sessions} sessions; {said}."
        low, high = safe_exp(self.low) - 1, safe_exp(self.high) - 1
        combined = f"{(self.ratio - 1) * 100:+.1f}% (95% CI {low * 100:+.1f}% to {high * 100:+.1f}%)".replace("-", "−")
        return (
            f"{what}: {each} in the {self.sessions} sessions; {said}; combined {combined}, between-session spread "
            f"τ = {math.sqrt(self.tau2) * 100:.1f}% (DerSimonian–Laird random effects, Hartung–Knapp interval on "
            f"{self.sessions - 1} df)."
        )


# Sessions combined into an interval only from this many (as strata are:
# analysis.factor_effects.MIN_STRATA).
MIN_COMBINED = 3


def combine(
    effects: list[float],
    variances: list[float],
    per_session: list[tuple[float, float, float]],
    knapp: bool = False,
) -> Combined:
    """DerSimonian & Laird's random-effects combination of per-session
    effects (log ratios) with their within-session variances. `knapp`:
    the interval by Hartung & Knapp (2001, Stat. Med. 20(24)) and Sidik &
    Jonkman (2002): the variance from the effects' own weighted spread, with
    t on k − 1 degrees of freedom (statsmodels' "random effect wls" with
    use_t), its scale truncated at 1 (below), which keeps a few strata
    with run-to-run variances from 2 runs each from claiming a precision
    they do not have."""
    y, v = np.asarray(effects, float), np.asarray(variances, float)
    k = len(y)
    w = 1 / v
    fixed = float(np.sum(w * y) / np.sum(w))
    q = float(np.sum(w * (y - fixed) ** 2))
    c = float(np.sum(w) - np.sum(w**2) / np.sum(w))
    tau2 = max(0.0, (q - (k - 1)) / c) if c > 0 else 0.0
    wr = 1 / (v + tau2)
    mu = float(np.sum(wr * y) / np.sum(wr))
    if knapp and k > 1:
        # Truncated at the DerSimonian–Laird variance: where the effects
        # agree more closely than their own variances predict (Q < k − 1),
        # the untruncated scale would shrink the interval below even the
        # fixed-effect one (Knapp & Hartung 2003's ad hoc modification;
        # Röver, Knapp & Friede 2015, BMC Med. Res. Methodol. 15:99).
        scale = max(1.0, float(np.sum(wr * (y - mu) ** 2)) / (k - 1))
        se = math.sqrt(scale / float(np.sum(wr)))
        z = float(st.t.ppf(1 - ALPHA / 2, k - 1))
    else:
        se = math.sqrt(1 / float(np.sum(wr)))
        z = float(st.norm.ppf(1 - ALPHA / 2))
    return Combined(mu, mu - z * se, mu + z * se, tau2, q, k, tuple(per_session))


def session_of(run: StoredRun) -> int:
    """A run's session; runs stored before sessions were recorded are the first."""
    return run.session or 1


def sessions(points: list[PointStats]) -> list[int]:
    return sorted({session_of(r) for p in points for r in p.measured})


def replication(points: list[PointStats], load: set[str]) -> list[str]:
    """Where the store holds 2 sessions or more: each pair of configurations
    at matched load that differ in one factor, compared within each session
    that measured both 2 or more times, and the sessions combined."""
    held = sessions(points)
    if len(held) < 2:
        return []
    found: list[tuple[str, Combined]] = []
    for at, ps in at_matched_load(points, load):
        # Where users' think time sets the rate, throughput is the load's, not compared (analysis.best).
        ps = [p for p in ps if p.users_offer_rps is None]
        for i, a in enumerate(ps):
            for b in ps[i + 1 :]:
                differ = [k for k in a.levels if a.levels[k] != b.levels.get(k)]
                if len(differ) != 1:
                    continue
                combined = _across(a, b, held)
                if combined is not None:
                    k = differ[0]
                    where_ = f" at {at}" if at else ""
                    rest = " ".join(f"{n}={v}" for n, v in a.levels.items() if n != k and n not in load)
                    label = f"{k}={b.levels[k]} against {k}={a.levels[k]}{where_}{' ' + rest if rest else ''}"
                    found.append((label, combined))
    how = (
        "the sessions combined as blocks (random effects), so its interval is one to expect again in another session"
        if len(held) >= MIN_COMBINED
        else f"with {len(held)} sessions no combined interval is claimed (the between-session variance would rest on "
        "one degree of freedom): each session's own class is given"
    )
    head = (
        f"Sessions: this store holds {len(held)} sessions of the experiment; each comparison of two configurations "
        f"that differ in one factor (throughput, at matched load) is made within each session that measured both; "
        f"{how}."
    )
    if not found:
        return [head + " No pair was measured 2 or more times on both sides in 2 sessions: nothing to compare."]
    if len(found) <= DETAIL:
        return [head, *(c.sentence(label) for label, c in found)]
    counts = Counter(c.pattern for _, c in found)
    said = {
        "every": "shown in every session on the same side (replicated)",
        "some": "shown in some sessions, inconclusive in the others",
        "none": "inconclusive in every session",
        "conflicting": "shown on opposite sides (conflicting)",
    }
    return [
        head
        + f" Of {len(found)} such comparisons: "
        + "; ".join(f"{counts[k]} {v}" for k, v in said.items() if counts[k])
        + "."
    ]


# Beyond this many comparisons, replication is counted rather than listed.
DETAIL = 6


def _across(a: PointStats, b: PointStats, held: list[int]) -> Combined | None:
    ys, vs, each = [], [], []
    for s in held:
        xa = _rps(a, s)
        xb = _rps(b, s)
        e = effect(xa, xb)
        if e.tested and e.se > 0:
            ys.append(math.log(e.ratio))
            vs.append(e.se**2)
            each.append((e.ratio, e.low, e.high))
    # Hartung–Knapp (truncated): with two sessions
    # the between-session variance rests on one degree of freedom, and a
    # normal interval would claim the next session is known.
    return combine(ys, vs, each, knapp=True) if len(ys) >= 2 else None


def _rps(p: PointStats, session: int) -> list[float]:
    return [r.result.goodput_rps for r in p.measured if r.result is not None and session_of(r) == session]
