"""Where distributed load comes from: a setting of plans and of the CLI's
`--cluster`, read before Ray (an optional extra) is ever imported."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from corebench.units import parse_duration_s


class ClusterConfig(BaseModel):
    """Where the agents run: a Ray cluster's address (`HOST:PORT` of its
    head, `ray://HOST:PORT` for Ray Client, or `auto` for the cluster this
    machine belongs to) and how many agents."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    address: str = Field(min_length=1)
    agents: int = Field(2, ge=1, le=1024)
    # Every agent on a node of its own, or an error before any load.
    strict_spread: bool = False
    # The CPUs each agent reserves on its node (Ray resources).
    agent_cpus: float = Field(1.0, gt=0)
    # How long an agent may stay silent (beyond a run's length and request
    # timeout) before it counts as lost or stalled and the run fails.
    agent_timeout_s: float = Field(30.0, gt=0, le=3600, alias="agent_timeout")

    @field_validator("agent_timeout_s", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> Any:
        return parse_duration_s(v) if isinstance(v, str) else v
