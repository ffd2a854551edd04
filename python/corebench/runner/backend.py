"""Where a run's load comes from: this process's engine, or a Ray cluster's
agents. The runner asks a `LoadBackend` for a load and never branches on
which one it has."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

from corebench import engine
from corebench.errors import EngineFailure, UsageError
from corebench.result import CLIENT_BOUND_SHARE
from corebench.store import LoadNode, MonitorSummary, RunLayout

Live = Callable[[engine.Figures], object]

if TYPE_CHECKING:
    from corebench.cluster.session import Session
    from corebench.config.cluster import ClusterConfig
    from corebench.config.settings import LoadConfig
    from corebench.result import LoadResult


class LoadFailed(Exception):
    """The load could not be run or did not end well: the run failed, with
    this reason stored."""


class LoadBackend(Protocol):
    def run(self, cfg: LoadConfig, progress: Callable[[int], None], live: Live | None = None) -> LoadResult:
        """One load; raises LoadFailed with the reason when there is no result.
        `live`: engine.run's watcher of whole seconds, where the backend has one."""
        ...

    def layout(self, layout: RunLayout) -> RunLayout:
        """The run's CPU layout as stored: who generated the load, and whether
        it shared the target's cores."""
        ...

    def monitor(self, summary: MonitorSummary, result: LoadResult) -> MonitorSummary:
        """The monitor's summary, with the generator's CPU from where the load
        actually ran."""
        ...

    def hosts(self) -> list[LoadNode]:
        """The hosts the load runs on besides this machine, for the
        experiment's record."""
        ...


class Local:
    """The engine in this process, on the generator cores of the layout."""

    def run(self, cfg: LoadConfig, progress: Callable[[int], None], live: Live | None = None) -> LoadResult:
        try:
            return engine.run(cfg, progress=progress, live=live)
        except (UsageError, EngineFailure) as x:
            raise LoadFailed(f"engine: {x}") from x

    def layout(self, layout: RunLayout) -> RunLayout:
        return layout

    def monitor(self, summary: MonitorSummary, _result: LoadResult) -> MonitorSummary:
        return summary  # this process's CPU is the generator's

    def hosts(self) -> list[LoadNode]:
        return []


class Cluster:
    """A Ray cluster's agents, connected and placed once for the experiment."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def run(self, cfg: LoadConfig, progress: Callable[[int], None], live: Live | None = None) -> LoadResult:  # noqa: ARG002
        # Agents report at the end only: a watched step runs its whole length.
        from corebench.cluster import AgentFailed, ClusterError

        try:
            return self.session.run(cfg, progress=progress)
        except (AgentFailed, ClusterError) as x:
            raise LoadFailed(f"agents: {x}") from x
        except (UsageError, EngineFailure) as x:
            raise LoadFailed(f"engine: {x}") from x

    def layout(self, layout: RunLayout) -> RunLayout:
        # Not this machine's generator cores: agents beside the target (on
        # its host) may use its cores, as nothing confines them.
        host = layout.target_host or self.session.driver_ip
        shared = self.session.agents_on(host) and bool(layout.target_cpus)
        if layout.target_host is not None and layout.shared:
            # The target's node is this very machine (a lab): agents on it
            # share the target's CPUs where theirs are on its cores, as a
            # generator on one machine does.
            shared = shared or self.session.agents_beside(layout.target_cpus)
        return layout.model_copy(update={"shared": shared, "generator": "ray agents"})

    def monitor(self, summary: MonitorSummary, result: LoadResult) -> MonitorSummary:
        # The agents' CPU, not this process's, says whether the generator
        # was the limit.
        busy = [a.index for a in result.agents if a.cpu_utilization >= CLIENT_BOUND_SHARE]
        agents_cpu = sum(a.run_cpu_s for a in result.agents) / result.duration_s if result.duration_s else None
        return summary.model_copy(
            update={"client_bound": bool(busy), "client_bound_agents": busy, "generator_cpu": agents_cpu}
        )

    def hosts(self) -> list[LoadNode]:
        return [
            LoadNode.model_validate(
                {"node": a.node, "agent": a.index, "cores": a.info["cores"]} | a.info.get("facts", {})
            )
            for a in self.session.agents
        ]


@contextmanager
def open_backend(cluster: ClusterConfig | None) -> Iterator[LoadBackend]:
    """The plan's cluster, connected and its agents placed before the first
    run (a cluster that cannot serve is an error before any load); or the
    engine in this process."""
    if cluster is None:
        yield Local()
        return
    from corebench.cluster.session import Session

    with Session(cluster) as session:
        yield Cluster(session)
