"""The load agent: a Ray actor that runs its share of a load in-process.
Threaded (max_concurrency) so that `stop` and `finished` are answered while
`run` works; the engine releases the GIL."""

from __future__ import annotations

import os
import socket
from typing import Any

import ray

from corebench import _engine
from corebench.system import check


# Ray's overloads of `remote` leave out the actor options (max_concurrency among them).
@ray.remote(max_concurrency=4)  # type: ignore[call-overload]
class LoadAgent:
    def __init__(self) -> None:
        self._run_id = ""
        self._finished = 0
        # The run asked to stop: a stop that arrives before its run begins
        # still stops it, and one for an older run stops nothing.
        self._stop_id = ""

    def describe(self) -> dict[str, Any]:
        ctx = ray.get_runtime_context()
        return {
            "node_id": ctx.get_node_id(),
            "node_ip": ray.util.get_node_ip_address(),
            "hostname": socket.gethostname(),
            "cores": len(os.sched_getaffinity(0)),
            "version": _engine.__version__,
            "pid": os.getpid(),
            "facts": host_facts(),
            # Which machine and which of its CPUs: an agent on the target's
            # machine (a lab) shares its CPUs only where these overlap them.
            "boot_id": check.boot_id(),
            "cpus": sorted(os.sched_getaffinity(0)),
        }

    def run(self, run_id: str, config_json: str, body: bytes | None) -> str:
        self._run_id, self._finished = run_id, 0

        def progress(finished: int) -> bool:
            self._finished = finished
            return self._stop_id != run_id

        return _engine.run_agent(config_json, body, progress)

    def stop(self, run_id: str) -> None:
        self._stop_id = run_id

    def finished(self, run_id: str) -> int:
        """Requests finished so far in run `run_id` (0 before it begins)."""
        return self._finished if self._run_id == run_id else 0


def host_facts() -> dict[str, Any]:
    """What a report says of a load host: its CPU model, CPUs and kernel."""
    found = check.facts("none", None)
    return {k: found[k] for k in ("cpu_model", "cpus", "kernel")}
