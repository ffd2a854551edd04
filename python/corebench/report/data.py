"""Everything a report shows: the analysis's findings for one stored
experiment (`analysis.analyse`), with the rows the reports' tables add."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from corebench.analysis.analyse import RESPONSES as RESPONSES  # re-exported: the reports name the responses
from corebench.analysis.analyse import analyse, read
from corebench.analysis.findings import Findings
from corebench.analysis.findings import ScalingFit as ScalingFit  # re-exported for the charts
from corebench.analysis.slo import Slo
from corebench.result import AgentSummary
from corebench.store import HostFacts, PlanRecord, StoredRun


@dataclass(frozen=True)
class RunFigures:
    """A stored run's rate and failures as the analysis counts them."""

    rps: float | None
    failed: int | None


@dataclass(frozen=True)
class AgentRow:
    """One agent's share of a stored distributed run."""

    seq: int
    point: str
    warmup: bool
    agent: AgentSummary

    @property
    def probes_held(self) -> str | None:
        """What the agent's `--linger auto` probes found (none before they were kept)."""
        p = self.agent.linger_probes
        return f"{p.held} of {p.probes}" if p.probes else None


@dataclass
class ReportData(Findings):
    store_path: Path = Path()

    @property
    def host(self) -> HostFacts:
        return self.experiment.host

    @property
    def plan(self) -> PlanRecord:
        """The plan as run: its validated tables (`plan`), factors and overrides."""
        return self.experiment.plan

    def run_figures(self, run: StoredRun) -> RunFigures:
        """A stored run's rate and failures as the analysis counts them: the
        rate of successes, and errors with unsuccessful statuses (less a
        replay's as its log recorded them). The store's own columns keep ab's
        counts: every response, and transport errors only."""
        if run.result is None:
            return RunFigures(run.stored_throughput_rps, None)
        return RunFigures(run.result.goodput_rps, run.result.failed_requests)

    def as_logged_note(self) -> str:
        """Where replays' 4xx and 5xx were left out of the failed requests
        because their log recorded the same status (the site answered as it
        did then), how many: "" where none were."""
        results = [r.result for r in self.runs if r.measured and r.result is not None and r.result.replay is not None]
        logged = sum(x.as_logged for x in results)
        if not logged:
            return ""
        unsuccessful = sum(x.unsuccessful for x in results)
        return (
            f" In replays, a 4xx or 5xx the log recorded for the same request is the site answering as it did then, "
            f"not a failure of the run: {logged:,} of the {unsuccessful:,} 4xx and 5xx responses here were so, and "
            "are not in the failed requests."
        )

    @staticmethod
    def placement(run: StoredRun) -> str:
        """Where the run's target and generator ran: "0,2 (2 cores, node 0) | 4-11"."""
        from corebench.system.topology import format_list

        layout = run.layout
        if layout is None or not layout.controlled:
            return "not placed (a server corebench did not start, or no cpus asked)"
        cores = layout.target_physical_cores
        where = f" ({cores} core{'s' if cores != 1 else ''}, node {format_list(layout.target_nodes)})" if cores else ""
        return f"{format_list(layout.target_cpus)}{where} | {format_list(layout.generator_cpus)}"

    @staticmethod
    def clock(run: StoredRun) -> str:
        """The target's CPUs' clock over the run: "2,594 MHz (2,400–2,800), performance, turbo off",
        or why it was not measured ("" in a store from before it was)."""
        m = run.monitor
        if m is None or not m.clock:
            return ""
        if m.clock_mhz is None:
            return "not measured"
        spread = f" ({m.clock_min_mhz:,.0f}–{m.clock_max_mhz:,.0f})" if m.clock_min_mhz != m.clock_max_mhz else ""
        turbo = {True: ", turbo on", False: ", turbo off", None: ""}[m.turbo]
        return f"{m.clock_mhz:,.0f} MHz{spread}" + (f", {m.governor}" if m.governor else "") + turbo

    def agent_rows(self) -> list[AgentRow]:
        """Distributed runs: one row per agent of each stored result."""
        return [
            AgentRow(r.seq, r.levels_json(), r.warmup, a)
            for r in self.runs
            if r.result is not None
            for a in r.result.agents
        ]


def load(
    store_path: Path, experiment_id: int | None = None, slo: Slo | None = None, traffic_rps: float | None = None
) -> ReportData:
    """The newest experiment of the store, or `experiment_id`, analysed.
    `traffic_rps`: with capacity searches, say how many cores serve it."""
    exp, runs = read(store_path, experiment_id)
    found = analyse(exp, runs, slo, traffic_rps)
    return ReportData(**{f.name: getattr(found, f.name) for f in fields(Findings)}, store_path=store_path)
