"""One finding as a record: what it is about, its figures, the interval
it rests on, what it concludes, how it was found and what limits it. The
sentence every report prints is written from the same values, so a gate
or a notebook reads the record and never parses the prose."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from corebench.analysis.effect import Effect


@dataclass(frozen=True)
class Figure:
    """A number a finding states, with its unit (`ratio`: B over A, 1 for
    no change; `share`: a fraction of 1)."""

    name: str
    value: float
    unit: str


@dataclass(frozen=True)
class Interval:
    """A confidence interval of the finding's estimate, in `unit`.
    `level`: its coverage as the sentence states it (a family's 95%
    intervals hold together over `simultaneous_over` comparisons, by
    Bonferroni; a TOST interval, 1 − 2α, is at its own level);
    `simultaneous_over`: 1 for an interval of its own."""

    estimate: float
    low: float
    high: float
    unit: str
    level: float = 0.95
    simultaneous_over: int = 1
    method: str = ""

    @classmethod
    def of(cls, e: Effect) -> Interval | None:
        """An effect's ratio of means with its (simultaneous) interval,
        the delta method on the log scale, Welch's t (`analysis.effect`)."""
        if not e.tested:
            return None
        method = (
            "ratio of geometric means, Welch's t on the logs"
            if e.geometric
            else "ratio of means, delta method on the log scale, Welch's t"
        )
        if e.verdict == "equivalent":
            # Equivalence is shown by the (1 − 2α) interval inside the margin (Schuirmann's TOST).
            method += f"; the TOST interval, inside ±{e.margin:.0%}"
            return cls(e.ratio, e.eq_low, e.eq_high, "ratio", 1 - 2 * e.alpha, e.family, method)
        return cls(e.ratio, e.low, e.high, "ratio", 1 - e.alpha * e.family, e.family, method)


@dataclass(frozen=True)
class Finding:
    """`text` is the claim; `caveats` what limits it, said after it
    (`sentence`). `outcome` is the conclusion a gate or a tally reads:
    higher, lower, equivalent or inconclusive for a comparison (the
    classes of `analysis.effect`), met or missed for an objective, pass or
    fail for a threshold; empty for a finding that concludes nothing."""

    kind: str  # one of findings.KINDS
    text: str
    method: str = ""  # how it was found, with its source, where the sentence does not say it
    subject: str = ""  # what it is about: a comparison ("mpm=worker against mpm=prefork"), a point, a threshold
    figures: tuple[Figure, ...] = ()
    interval: Interval | None = None
    outcome: str = ""
    caveats: tuple[str, ...] = ()
    # The claim and its caveats, as every report prints them: a field, not a
    # property, so that the JSON report carries it beside the parts.
    sentence: str = field(init=False, default="")

    def __post_init__(self) -> None:
        object.__setattr__(self, "sentence", " ".join((self.text, *self.caveats)))

    def figure(self, name: str) -> float:
        """The figure of that name; NaN where the finding has none."""
        return next((f.value for f in self.figures if f.name == name), math.nan)


def caveats(*texts: str) -> tuple[str, ...]:
    """The caveat clauses the verdicts build (each "" where none applies)."""
    return tuple(t.strip() for t in texts if t.strip())


def said(kind: str, texts: list[str]) -> list[Finding]:
    """Sentences that state no figure of their own, as findings."""
    return [Finding(kind, t) for t in texts]
