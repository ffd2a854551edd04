"""Types of `corebench._engine`, the compiled load engine (crates/python/src/lib.rs).

Configs go in and results come out as JSON text; the Python side builds and
parses them."""

from collections.abc import Callable
from typing import Any

__all__ = [
    "run",
    "run_agent",
    "merge",
    "check",
    "serve",
    "load_config_schema",
    "load_result_schema",
    "io_uring_unavailable",
    "UsageError",
    "EngineFailure",
    "__version__",
    "RESULT_SCHEMA",
    "PART_SCHEMA",
    "LINGER_MIN_IN_FLIGHT",
    "MAX_LIVE_BOUNDS",
]

__version__: str
# The `schema` of a result from `run` and `merge`, and of a part from `run_agent`.
RESULT_SCHEMA: str
PART_SCHEMA: str
# The fewest requests in flight on a thread with which its waits hold responses.
LINGER_MIN_IN_FLIGHT: int
# The most latency bounds whose exceedances a live watcher counts per second.
MAX_LIVE_BOUNDS: int

class EngineFailure(Exception):
    """The engine failed (a bug or a resource limit)."""

class UsageError(EngineFailure):
    """The load configuration is wrong: the message says how. When one setting
    is at fault, the instance also has a `key` attribute naming it (a str; read
    it with getattr(e, "key", None), as other instances lack it)."""

def run(
    config_json: str,
    body: bytes | None = None,
    progress: Callable[[int], object] | None = None,
    live: Callable[[dict[str, Any]], object] | None = None,
) -> str:
    """Runs one load and returns its result (JSON). `progress(finished)` is
    called about four times a second; returning False stops the run.
    `live(figures)`, as often, gets a dict: `finished` and `failed` requests;
    `elapsed_s`, `requests` and `length_s` (None before the start, the last
    two None when the run is not bounded by them); `second`, the last whole
    second (None before one is over) as a dict of `second`, `completed`,
    `errors`, `p50_us` and `p99_us`."""

def run_agent(
    config_json: str,
    body: bytes | None = None,
    progress: Callable[[int], object] | None = None,
) -> str:
    """Runs one agent's share of a distributed load; returns its part (JSON) for `merge`."""

def check(config_json: str) -> None:
    """Checks a load's config as a run would before its first request."""

def merge(config_json: str, parts: list[str]) -> str:
    """Merges the agents' parts (JSON from `run_agent`) into one result (JSON)."""

def serve(config_json: str) -> None:
    """Runs the built-in target server until SIGTERM or SIGINT."""

def load_config_schema() -> str:
    """The JSON Schema of the load configuration (JSON)."""

def load_result_schema() -> str:
    """The JSON Schema of a load's result as the engine writes it (JSON)."""

def io_uring_unavailable() -> str | None:
    """None when the load threads can run on io_uring here (`io = "auto"`
    then uses it); otherwise the reason, e.g. the kernel's refusal."""
