"""Distributed load on Ray: K agents (Ray actors, one per node where the
cluster has the nodes) each run the engine in-process with their share of
the load, start together at an agreed instant, and their measurements merge
exactly into one result (`corebench._engine.merge`).

Ray is an optional extra (`pip install 'corebench[ray]'`): nothing here
imports it until a cluster is asked for."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from corebench.errors import UsageError

if TYPE_CHECKING:
    from corebench.config.load import LoadConfig
    from corebench.result import LoadResult


class ClusterConfig(BaseModel):
    """Where the agents run: a Ray cluster's address (`HOST:PORT` of its
    head, `ray://HOST:PORT` for Ray Client, or `auto` for the cluster this
    machine belongs to) and how many agents."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    address: str = Field(min_length=1)
    agents: int = Field(2, ge=1, le=1024)
    # Every agent on a node of its own, or an error before any load.
    strict_spread: bool = False
    # The CPUs each agent reserves on its node (Ray resources).
    agent_cpus: float = Field(1.0, gt=0)


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
