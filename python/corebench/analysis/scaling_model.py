"""Which scaling law the measurements support, if any: linear, Amdahl or the
USL, chosen by extra-sum-of-squares F tests between the nested laws (Bates &
Watts, "Nonlinear Regression Analysis and Its Applications", 1988, §3.10;
Jain, "The Art of Computer Systems Performance Analysis", 1991, ch. 15),
fitted only where the data can carry the law: enough distinct levels, no
level past saturation, no level whose load generator shared the target's
cores. A fit is never extrapolated beyond twice the largest measured level."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from scipy import stats as st

from corebench.analysis.scaling import MIN_LEVELS, Fit, fit

# Predictions reach at most this multiple of the largest measured level:
# beyond it a law's parameters say more about the model than the machine.
MAX_EXTRAPOLATION = 2.0
# A fuller law is chosen only when it fits significantly better.
ALPHA = 0.05
# Nested: each law is the next one with a parameter held at 0.
ORDER = ("linear", "amdahl", "usl")


@dataclass(frozen=True)
class FTest:
    """The extra-sum-of-squares F test of `full` against `reduced`."""

    reduced: str
    full: str
    f: float
    p_value: float


@dataclass
class ScalingModel:
    ns: list[float]
    xs: list[float]
    law: str | None  # the law chosen; None when no law could be fitted
    why: str  # one sentence: why this law, or why none
    fits: dict[str, Fit] = field(default_factory=dict)
    tests: list[FTest] = field(default_factory=list)
    dropped: list[tuple[float, str]] = field(default_factory=list)  # (level, why left out)

    @property
    def chosen(self) -> Fit | None:
        return self.fits.get(self.law) if self.law else None

    @property
    def limit(self) -> float:
        """The largest N a prediction may be made at."""
        return MAX_EXTRAPOLATION * max(self.ns) if self.ns else 0.0


def f_test(reduced: Fit, full: Fit) -> FTest:
    """F = ((RSS_r − RSS_f) / (p_f − p_r)) / (RSS_f / (n − p_f)), with
    (p_f − p_r, n − p_f) degrees of freedom (Bates & Watts 1988, §3.10)."""
    pr, pf = len(reduced.params), len(full.params)
    dof = full.n - pf
    gain = max(reduced.rss - full.rss, 0.0)
    # No residual left to judge by, or nothing gained (a reduced law that
    # already goes through every point): the simpler law stands.
    if dof < 1 or gain <= 1e-9 * reduced.rss:
        return FTest(reduced.law, full.law, 0.0, 1.0)
    if full.rss <= 0:
        return FTest(reduced.law, full.law, math.inf, 0.0)
    f = (gain / (pf - pr)) / (full.rss / dof)
    return FTest(reduced.law, full.law, f, float(st.f.sf(f, pf - pr, dof)))


def choose(ns: list[float], xs: list[float], dropped: list[tuple[float, str]] | None = None) -> ScalingModel:
    """Fits every law the number of distinct levels allows and keeps the
    simplest one that no fuller law beats at level ALPHA."""
    out = ScalingModel(list(ns), list(xs), None, "", dropped=list(dropped or []))
    out.why = _choose(out)
    if out.dropped:
        out.why += "; left out: " + ", ".join(f"N = {n:g} ({why})" for n, why in out.dropped)
    return out


def _choose(out: ScalingModel) -> str:
    ns, xs = out.ns, out.xs
    levels = len(set(ns))
    allowed = [law for law in ORDER if levels >= MIN_LEVELS[law]]
    if not allowed:
        return (
            f"no scaling law fitted: {levels} usable level{'s' if levels != 1 else ''}, "
            f"and even a straight line needs {MIN_LEVELS['linear']}"
        )
    at = [max(ns) * 1.5, out.limit]
    for law in allowed:
        try:
            out.fits[law] = fit(ns, xs, law, at)
        except (ValueError, RuntimeError):
            continue  # the optimiser found no fit: that law is not offered
    if not out.fits:
        return "no scaling law fitted: the optimiser found no fit"
    law = next(iter(out.fits))
    for fuller in list(out.fits)[1:]:
        t = f_test(out.fits[law], out.fits[fuller])
        out.tests.append(t)
        if t.p_value < ALPHA:
            law = fuller
    out.law = law
    return _why(out, levels, allowed)


def _why(m: ScalingModel, levels: int, allowed: list[str]) -> str:
    said = {"linear": "linear (X = λN)", "amdahl": "Amdahl's law", "usl": "the USL"}
    parts = [f"{said[m.law or 'linear']} over {levels} levels"]
    for t in m.tests:
        verdict = "better" if t.p_value < ALPHA else "not significantly better"
        parts.append(f"{said[t.full]} {verdict} than {said[t.reduced]} (F test p = {t.p_value:.3g})")
    missing = [law for law in ORDER if law not in allowed]
    if missing:
        parts.append(f"{said[missing[0]]} not tried: it needs {MIN_LEVELS[missing[0]]} levels")
    return "; ".join(parts)


def below_saturation(ns: list[float], xs: list[float], share: float = 0.95) -> tuple[list[int], list[int]]:
    """Indices of the load levels up to the first that reaches `share` of
    the peak throughput, and of those beyond it. Past saturation a closed
    loop only queues: throughput is flat, and a law fitted there reads the
    queue as serialisation (σ → 1)."""
    top = max(xs)
    first = min((n for n, x in zip(ns, xs, strict=True) if x >= share * top), default=max(ns))
    kept = [i for i, n in enumerate(ns) if n <= first]
    return kept, [i for i in range(len(ns)) if i not in kept]


__all__ = ["ALPHA", "MAX_EXTRAPOLATION", "FTest", "ScalingModel", "below_saturation", "choose", "f_test"]
