"""The load agent: a Ray actor that runs its share of a load in-process.
Threaded (max_concurrency) so that `stop` and `finished` are answered while
`run` works; the engine releases the GIL."""

from __future__ import annotations

import os
import socket
from typing import Optional

import ray

from corebench import _engine


@ray.remote(max_concurrency=4)
class LoadAgent:
    def __init__(self) -> None:
        self._finished = 0
        self._stopped: set[str] = set()

    def describe(self) -> dict:
        ctx = ray.get_runtime_context()
        return {
            "node_id": ctx.get_node_id(),
            "node_ip": ray.util.get_node_ip_address(),
            "hostname": socket.gethostname(),
            "cores": len(os.sched_getaffinity(0)),
            "version": _engine.__version__,
            "pid": os.getpid(),
        }

    def run(self, run_id: str, config_json: str, body: Optional[bytes]) -> str:
        self._finished = 0

        def progress(finished: int) -> bool:
            self._finished = finished
            return run_id not in self._stopped

        try:
            return _engine.run_agent(config_json, body, progress)
        finally:
            self._stopped.discard(run_id)

    def stop(self, run_id: str) -> None:
        """Stops run `run_id` (now, or as soon as it begins)."""
        self._stopped.add(run_id)

    def finished(self) -> int:
        return self._finished
