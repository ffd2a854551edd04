"""Where distributed load comes from: a setting of plans and of the CLI's
`--cluster`, read before Ray (an optional extra) is ever imported."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


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
