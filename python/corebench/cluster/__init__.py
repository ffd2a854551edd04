"""Distributed load on Ray: K agents (Ray actors, one per node where the
cluster has the nodes) each run the engine in-process with their share of
the load, start together at an agreed instant, and their measurements merge
exactly into one result (`corebench._engine.merge`).

Ray is an optional extra (`pip install 'corebench[ray]'`): nothing here
imports it until a cluster is asked for."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from corebench.config.cluster import ClusterConfig
from corebench.errors import UsageError

if TYPE_CHECKING:
    from corebench.config.settings import LoadConfig
    from corebench.result import LoadResult


class ClusterError(UsageError):
    """The cluster cannot be used as asked (unreachable, too few nodes or
    CPUs, a different corebench on a node): said before any load."""


class AgentFailed(Exception):
    """An agent died or did not answer during a run: the run failed."""


def run(config: LoadConfig, cluster: ClusterConfig, progress: Callable[[int], object] | None = None) -> LoadResult:
    """One distributed run: connects, places the agents, runs, merges."""
    from corebench.cluster.session import Session, check

    check(config, cluster)
    with Session(cluster) as s:
        return s.run(config, progress)


__all__ = ["ClusterConfig", "ClusterError", "AgentFailed", "run"]
