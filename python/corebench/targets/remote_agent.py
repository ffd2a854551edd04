"""The target agent: a Ray actor on the target's node that starts, pins and
measures the target there, with this machine's `LocalHost` and `Monitor`
(`targets.remote` drives it). Threaded (max_concurrency) so that `stop`
and `alive` are answered while a start waits for the target to be ready."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path
from typing import Any

import ray

from corebench import _engine
from corebench.monitor.sampler import Monitor, Sample
from corebench.plan import Point
from corebench.plan.model import Target
from corebench.store import RaySpent, TargetInfo
from corebench.system import check
from corebench.targets.cpus import CpuControl, Layout
from corebench.targets.ray_procs import KeptOff, Spent, keep_off
from corebench.targets.session import LocalHost, TargetSession


# Ray's overloads of `remote` leave out the actor options (max_concurrency among them).
@ray.remote(max_concurrency=4)  # type: ignore[call-overload]
class TargetAgent:
    def __init__(self) -> None:
        self.control = CpuControl()
        self.host = LocalHost(self.control).__enter__()
        self.session: TargetSession | None = None
        self.monitor: Monitor | None = None
        # Ray's processes here, moved off the target's CPUs while it runs, and their CPU per run.
        self.kept: KeptOff | None = None
        self.spent = Spent()
        # A start in progress holds it: close waits for it, then stops what it made.
        self._lock = threading.Lock()
        self._closing = False

    def describe(self) -> dict[str, Any]:
        ctx = ray.get_runtime_context()
        return {
            "node_id": ctx.get_node_id(),
            "node_ip": ray.util.get_node_ip_address(),
            "hostname": socket.gethostname(),
            "cpus": len(self.control.online),
            "version": _engine.__version__,
            "pid": os.getpid(),
            "boot_id": check.boot_id(),
            "facts": check.facts(self.control.method, None),
        }

    def server_version(self, target: Target) -> str | None:
        return self.host.server_version(target)

    def start(self, point: Point, key: str, plan_dir: str) -> tuple[Layout, TargetInfo, str | None, float, str | None]:
        """The target started: its layout on this node, its facts, why it
        did not start (or None), how long the start took and its URL."""
        with self._lock:
            if self._closing:
                raise RuntimeError("the target agent is closing")
            self._stop()
            s = self.host.start(point, key, Path(plan_dir))
            self.session = s
            self.kept = keep_off(_spare(s.layout))
            return s.layout, s.info, s.error, s.start_s, s.base_url

    def alive(self) -> bool:
        return self.session is not None and self.session.alive()

    def exited(self) -> str | None:
        return self.session.exited() if self.session is not None else None

    def stop(self) -> None:
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        if self.kept is not None:
            self.kept.restore()
            self.kept = None
        if self.session is not None:
            self.session.stop()
            self.session = None

    def monitor_begin(self, generator_cores: int) -> None:
        s = self.session
        assert s is not None, "start the target first"
        m = s.monitor(generator_cores)
        assert isinstance(m, Monitor), "a node's own target is local to it"
        self.monitor = m.__enter__()
        self.spent.begin()

    def monitor_end(self) -> tuple[list[Sample], dict[str, object], list[str], dict[str, int], RaySpent]:
        """The run's samples, the clock of the target's CPUs here, the
        devices and services they cover, and what Ray's processes here
        used and where they were kept."""
        m = self.monitor
        assert m is not None, "begin the monitor first"
        m.__exit__(None, None, None)
        self.monitor = None
        ray = RaySpent(cpu=self.spent.cores(), cpus=self.kept.cpus if self.kept is not None else None)
        return m.samples, m.clock_summary(), m.devices, m.groups, ray

    def close(self) -> None:
        """Stops the target (after a start in progress, which it waits
        for) and removes the work folder."""
        self._closing = True
        with self._lock:
            self._stop()
            self.host.close()


def _spare(layout: Layout) -> list[int]:
    """The node's CPUs that neither the target nor a service of it uses."""
    used = set(layout.target_cpus).union(*(sub.target_cpus for sub in layout.services.values()))
    return sorted(set(layout.generator_cpus) - used)
