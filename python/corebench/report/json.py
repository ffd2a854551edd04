"""`corebench report STORE --format json`: the analysis's findings as
records (kind, subject, figures, interval, outcome, method, caveats, and the
sentence the other formats print, `analysis.finding`), with the points and capacity rows they
were drawn from, for a script or a dashboard that must not parse prose."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import TypeAdapter

from corebench.analysis.capacity import CapacityRow
from corebench.analysis.diagnose import Diagnosis
from corebench.analysis.finding import Finding
from corebench.analysis.findings import KINDS
from corebench.analysis.points import PointStats
from corebench.report.data import ReportData
from corebench.store import Level

# Raised when a field's meaning changes, not when one is added.
VERSION = 2


@dataclass(frozen=True)
class PointRow:
    """A point's figures as the report's table gives them (NaN as null)."""

    point: str
    levels: dict[str, Level]
    measured_runs: int
    goodput_rps_mean: float
    goodput_rps_ci: tuple[float, float] | None  # 95%, Student's t over the runs
    p50_ms_median: float
    p99_ms_median: float
    # exp(mean log) of the runs' percentile: the tables' figure, and what verdicts rank and test
    p50_ms_geomean: float
    p99_ms_geomean: float
    failed_share: float
    failing: bool
    limits: tuple[str, ...]  # why its figures are partly the generator's or the machine's
    # What limited it (analysis.diagnose): failing, generator-limited, CPU-bound, waiting, mixed, ...
    diagnosis: str
    diagnosis_evidence: str
    clock_mhz: float | None = None  # the target's CPUs' clock, measured during the runs (system.check)
    clock_off_runs: int = 0  # runs more than 5% from the median clock of the point's runs


@dataclass(frozen=True)
class Document:
    format: str
    version: int
    experiment_id: int | None
    experiment: str
    runs: int
    runs_planned: int
    kinds: tuple[str, ...]  # the order findings are given in
    findings: list[Finding]
    points: list[PointRow]
    capacity: list[CapacityRow]


class Json:
    name = "json"

    def render(self, d: ReportData) -> str:
        doc = Document(
            format="corebench.findings",
            version=VERSION,
            experiment_id=d.experiment.id,
            experiment=d.experiment.name,
            runs=len(d.runs),
            runs_planned=d.experiment.runs_planned,
            kinds=KINDS,
            findings=d.said,
            points=[_point(p, dg) for p, dg in zip(d.points, d.diagnoses, strict=True)],
            capacity=d.capacity,
        )
        # NaN and infinities (an untested effect, an interval open to one
        # side) are written as null: JSON has no number for them.
        return TypeAdapter(Document).dump_json(doc, indent=2).decode() + "\n"


def _point(p: PointStats, dg: Diagnosis) -> PointRow:
    t = p.goodput_rps
    ci = (t.ci_low, t.ci_high) if t.n >= 2 else None
    return PointRow(
        point=p.label(),
        levels=dict(p.levels),
        measured_runs=len(p.measured),
        goodput_rps_mean=t.mean,
        goodput_rps_ci=ci,
        p50_ms_median=p.p50_us.median / 1000,
        p99_ms_median=p.p99_us.median / 1000,
        p50_ms_geomean=p.p50_us.geomean / 1000,
        p99_ms_geomean=p.p99_us.geomean / 1000,
        failed_share=p.error_share,
        failing=p.failing,
        limits=tuple(p.limits()),
        diagnosis=dg.kind,
        diagnosis_evidence=dg.evidence,
        clock_mhz=p.clock_mhz,
        clock_off_runs=p.clock_off_runs,
    )
