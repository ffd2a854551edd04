"""Load is not a configuration: the one rule every verdict, table and pick
uses to tell them apart.

Load is what the clients offer: how many (concurrency, users, streams),
how fast (rate, arrivals, ramp), with what pauses (think), and what they ask
for (the path, a URL list or scenario mix, a replayed log and its speed, the
method and body, the load model). A configuration is what the server is:
its cores, its model or MPM, its filesystem, its buffers, the protocol it
speaks, its build. Throughput depends on load by construction, so a "best"
over load levels ranks the offered load, not the server: configurations are
compared at matched load only, and load levels give curves (throughput and
latency against load, the knee), never a pick (Jain 1991, "The Art of
Computer Systems Performance Analysis", ch. 16: factors and workload
parameters; ANSWERS.md §2)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol, TypeVar

from corebench.store import Level

# Factors that are load by their name.
LOAD_FACTORS = ("concurrency", "rate", "users", "think", "arrivals", "streams", "mix", "scenario")
# The [load] settings that set the offered load: a factor whose placeholder
# one of them uses ({think}, /static/{size}) is load too.
LOAD_KEYS = (
    "concurrency",
    "rate",
    "users",
    "think",
    "arrivals",
    "streams",
    "ramp",
    "model",
    "path",
    "url",
    "urls",
    "log",
    "speed",
    "method",
    "body",
    "requests",
)


class HasLevels(Protocol):
    @property
    def levels(self) -> dict[str, Level]: ...


P = TypeVar("P", bound=HasLevels)


def load_factors(factors: Mapping[str, Sequence[object]], load: Mapping[str, object] | None = None) -> set[str]:
    """The plan's load factors: those named as one, and any factor whose
    placeholder a [load] setting of the offered load uses."""
    names = {f for f in factors if f in LOAD_FACTORS}
    for key in LOAD_KEYS:
        value = str((load or {}).get(key, ""))
        names |= {f for f in factors if "{" + f + "}" in value}
    return names


def split(p: HasLevels, load: set[str]) -> tuple[str, str]:
    """(the point's load levels, its configuration), as labels."""
    at = " ".join(f"{k}={v}" for k, v in p.levels.items() if k in load)
    config = " ".join(f"{k}={v}" for k, v in p.levels.items() if k not in load)
    return at, config


def level_order(p: HasLevels, load: set[str]) -> tuple[tuple[int, float, str], ...]:
    """Load levels in ascending order: numbers by value, the rest by name."""
    key = []
    for k, v in p.levels.items():
        if k in load:
            key.append((0, float(v), "") if isinstance(v, (int, float)) else (1, 0.0, str(v)))
    return tuple(key)


def at_matched_load(points: Sequence[P], load: set[str]) -> list[tuple[str, list[P]]]:
    """The points grouped by their load levels, lowest load first; the
    label is "" where the plan varies no load."""
    groups: dict[str, list[P]] = {}
    for p in points:
        groups.setdefault(split(p, load)[0], []).append(p)
    return sorted(groups.items(), key=lambda kv: level_order(kv[1][0], load))


def where(at: str) -> str:
    """A verdict's opening: the load it holds at."""
    return f"At {at}" if at else "At the plan's one load"
