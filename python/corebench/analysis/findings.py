"""What the analysis found, as records the reports render and the gates
read: each finding a record (`analysis.finding`: its kind, subject,
figures, interval, outcome, method and caveats, with the sentence written
from them); `Findings` holds them in one declared order with the tables
they were drawn from."""

from __future__ import annotations

from dataclasses import dataclass, field

from corebench.analysis.anova import Anova
from corebench.analysis.baseline import BaselineRow
from corebench.analysis.capacity import CapacityRow
from corebench.analysis.diagnose import Diagnosis
from corebench.analysis.finding import Finding
from corebench.analysis.gates import Judged
from corebench.analysis.points import PointStats
from corebench.analysis.processes import ProcessRow
from corebench.analysis.scaling import Fit, ScalingRow
from corebench.analysis.scaling_model import ScalingModel
from corebench.store import Level, StoredExperiment, StoredRun

# The order reports say findings in: the answer asked for first (capacity,
# the plan's thresholds), then the comparisons, then how far to trust them.
KINDS = (
    "capacity",  # each configuration's sustained rate; cores needed for --traffic
    "threshold",  # the plan's [thresholds], point by point
    "verdict",  # comparisons of configurations, steadiness, cost (analysis.verdict)
    "clock",  # what the per-core-GHz figures could not use
    "machine",  # what system check warned of before the first run
    "schedule",  # adaptive precision reached; drift across rounds
    "generator",  # the generator's ceiling, lower bounds, load I/O and protocol
    "replay",  # a replay's failures as its log recorded them
    "baseline",  # the CPU baseline's speedup beside the server's
    "scope",  # what was not fitted, and why
)


@dataclass
class ScalingFit:
    """The law one series of points supports (or why none), over one factor
    with the other factors held at `fixed`."""

    factor: str
    fixed: str  # the other factors' levels the fit holds
    model: ScalingModel
    left_out: list[tuple[float, float]] = field(default_factory=list)  # (N, X) not fitted

    @property
    def fit(self) -> Fit | None:
        return self.model.chosen


@dataclass
class Knee:
    fixed: str
    knee: float | None
    saturation: float | None
    why_none: str = ""  # why no knee is given, where the curve cannot show one


@dataclass
class Findings:
    """An experiment's analysis: the stored experiment and runs it read,
    the points and tables, and the findings in KINDS order."""

    experiment: StoredExperiment
    runs: list[StoredRun]
    points: list[PointStats]
    factors: dict[str, list[Level]]
    diagnoses: list[Diagnosis]
    said: list[Finding] = field(default_factory=list)
    fits: list[ScalingFit] = field(default_factory=list)
    scaling: list[ScalingRow] = field(default_factory=list)
    # The clock per-core-GHz figures use, and where it came from.
    clock_ghz: float | None = None
    clock_source: str = ""
    # Each process of the stack (target and services) at each point.
    processes: list[ProcessRow] = field(default_factory=list)
    # The plan's CPU baseline (hackbench) at each cpus level.
    baseline: list[BaselineRow] = field(default_factory=list)
    knees: list[Knee] = field(default_factory=list)
    anova: list[Anova] = field(default_factory=list)
    anova_scope: str = ""  # what the table is beside the verdicts (anova.scope)
    thresholds: list[Judged] = field(default_factory=list)
    # Plans with [search]: each configuration's sustained rate within the objective.
    capacity: list[CapacityRow] = field(default_factory=list)

    def add(self, kind: str, *found: str | Finding, method: str = "") -> None:
        """Findings of `kind`; a bare sentence is one that states no figure of its own."""
        assert kind in KINDS, kind
        for f in found:
            record = f if isinstance(f, Finding) else Finding(kind, f, method=method)
            assert record.kind == kind, (record.kind, kind)
            self.said.append(record)

    def ordered(self) -> None:
        """Findings in KINDS order; within a kind, in the order found."""
        self.said.sort(key=lambda f: KINDS.index(f.kind))

    @property
    def verdicts(self) -> list[str]:
        """Every finding's sentence, in order."""
        return [f.sentence for f in self.said]

    def of(self, kind: str) -> list[Finding]:
        return [f for f in self.said if f.kind == kind]
