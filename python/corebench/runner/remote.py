"""Targets on another host: a Ray node starts, pins and measures the target
there (`[target] node`), through a target agent (`targets.remote_agent`)
that runs this machine's `LocalHost` and `Monitor` on that node. The runner
sees a `TargetHost` like the local one.

What differs from a local target: its CPU layout is the node's (the
generator is never on its cores unless a load agent runs on that node);
the per-core figures, the target's CPU and the clock come from the node;
the generator's CPU from where the load ran (this process, or the agents)."""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import psutil

from corebench.cluster import ClusterError
from corebench.cluster.session import _reason
from corebench.errors import UsageError
from corebench.monitor.sampler import Monitor, Sample
from corebench.plan import Point
from corebench.plan.model import Target
from corebench.store import MonitorSummary, RaySpent
from corebench.targets.cpus import Layout, online_cpus
from corebench.targets.session import TargetSession

# A target's start waits for it to be ready (its ready_timeout) and for its
# services; beyond that, the node is lost.
START_GRACE_S = 120.0
CALL_TIMEOUT_S = 60.0
# What a stop or a close may wait beyond the target's own stop timeout: a
# signal's cleanup is bounded.
EXIT_TIMEOUT_S = 2.0
# A close stops the target (its stop_timeout, 10 s by default) and removes its folder.
STOP_GRACE_S = 15.0


class RemoteMonitor:
    """A run's monitor on the target's node; the generator's CPU is this
    process's (the local engine), counted here over the same span. A node
    lost meanwhile leaves the run without samples (and the run fails with
    the reason: `RemoteSession.exited`)."""

    def __init__(self, host: RayHost, generator_cores: int) -> None:
        self.host, self.generator_cores = host, generator_cores
        self.samples: list[Sample] = []
        self._clock: dict[str, object] = {}
        self._devices: list[str] = []
        self._groups: dict[str, int] = {}
        self._ray: RaySpent | None = None

    def __enter__(self) -> RemoteMonitor:
        self.host.call("monitor_begin", self.generator_cores, default=None)
        self._began = time.monotonic()
        self._cpu = _my_cpu_s()
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        wall = max(time.monotonic() - self._began, 1e-9)
        generator = (_my_cpu_s() - self._cpu) / wall
        # Leaving on a signal: the run is discarded, and the exit must be quick.
        timeout_s = EXIT_TIMEOUT_S if kind is not None else CALL_TIMEOUT_S
        said = self.host.call("monitor_end", default=None, timeout_s=timeout_s)
        if said is None:
            return
        samples, self._clock, self._devices, self._groups, self._ray = said
        # The node's monitor counts its own process as the generator: the load ran here.
        self.samples = [dataclasses.replace(s, generator_cpu=generator) for s in samples]

    def summary(self, busy_poll: bool = False) -> MonitorSummary:
        m = _Fetched(None, self.generator_cores, self._devices, self._groups, samples=self.samples)
        m.clock = self._clock
        return m.summary(busy_poll).model_copy(update={"ray": self._ray})


class _Fetched(Monitor):
    """A monitor's samples taken elsewhere, summarized here."""

    clock: dict[str, object] = {}

    def clock_summary(self) -> dict[str, object]:
        return self.clock


def _my_cpu_s() -> float:
    t = psutil.Process().cpu_times()
    return float(t.user + t.system)


class RemoteSession(TargetSession):
    """One start of the target on the node, driven from here."""

    def __init__(self, host: RayHost, key: str, target: Target, layout: Layout, error: str | None = None) -> None:
        super().__init__(key, target, layout, error)
        self.host = host
        self.url: str | None = None

    @property
    def base_url(self) -> str | None:
        return self.url

    @property
    def pid(self) -> int | None:
        return None

    def alive(self) -> bool:
        return self.host.call("alive", default=False) is True

    def serves(self) -> bool:
        return self.error is not None or self.alive()

    def exited(self) -> str | None:
        lost = self.host.lost()
        if lost:
            return lost
        said = self.host.call("exited", default=None)
        return said if isinstance(said, str) else None

    def monitor(self, generator_cores: int) -> RemoteMonitor:
        return RemoteMonitor(self.host, generator_cores)

    def stop(self) -> None:
        self.host.call("stop", default=None, timeout_s=self.target.stop_timeout_s + EXIT_TIMEOUT_S)


class RayHost:
    """Targets on one Ray node, reached through the cluster at `address`."""

    def __init__(self, address: str, node: str) -> None:
        self.address, self.node = address, node
        self.starts = 0
        self.agent: Any = None
        self.info: dict[str, Any] = {}
        self._own = False
        self._lost: str | None = None
        # The node runs on this very machine (a lab, or the head's own address):
        # the load shares its CPUs.
        self.same_machine = False
        try:
            import ray
        except ImportError:
            raise UsageError("[target] node: a target on a Ray node needs Ray: pip install 'corebench[ray]'") from None
        self.ray = ray

    def __enter__(self) -> RayHost:
        from corebench.cluster.session import _probe, connect

        try:
            if not self.ray.is_initialized():
                _probe(self.address)
                connect(self.ray, self.address)
                self._own = True
            else:
                self._same_cluster()
            self._place()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def _same_cluster(self) -> None:
        """Already connected (the [cluster]'s agents): to the cluster `ray` names."""
        connected = self.ray.get_runtime_context().gcs_address
        asked = self.address.removeprefix("ray://")
        if asked != "auto" and ":" in asked and connected and asked.split(":")[0] != connected.split(":")[0]:
            raise ClusterError(
                f"[target] ray = {self.address!r}, but this plan's [cluster] is the Ray cluster at {connected}: "
                "the target's node must be a node of that cluster (leave ray out)"
            )

    def _place(self) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from corebench import _engine
        from corebench.targets.remote_agent import TargetAgent

        nodes = {n["NodeManagerAddress"]: n["NodeID"] for n in self.ray.nodes() if n.get("Alive")}
        if self.node not in nodes:
            raise ClusterError(
                f"[target] node {self.node}: no live node of the Ray cluster at {self.address} has that address "
                f"(its nodes: {', '.join(sorted(nodes)) or 'none'}); start one there with ray start --address"
            )
        strategy = NodeAffinitySchedulingStrategy(node_id=nodes[self.node], soft=False)
        # No CPU reserved: the target's CPUs are the layout's, not Ray's.
        self.agent = TargetAgent.options(num_cpus=0, scheduling_strategy=strategy).remote()  # type: ignore[attr-defined]
        try:
            self.info = self.ray.get(self.agent.describe.remote(), timeout=CALL_TIMEOUT_S)
        except Exception as e:
            raise ClusterError(f"[target] node {self.node}: its target agent did not start ({e})") from None
        from corebench.system.check import boot_id

        # As the cluster's agents are told apart (cluster.session.Session.agents_beside):
        # two unreadable ids count as one machine, which marks the runs
        # shared rather than leave a shared machine unsaid.
        self.same_machine = self.info.get("boot_id") == boot_id()
        if self.info["version"] != _engine.__version__:
            raise ClusterError(
                f"[target] node {self.node} runs corebench {self.info['version']}, this is {_engine.__version__}: "
                "install the same version on every node"
            )

    def lost(self) -> str | None:
        """Why the node's agent no longer answers, once it has not."""
        return self._lost

    def call(self, method: str, *args: Any, default: Any, timeout_s: float = CALL_TIMEOUT_S) -> Any:
        """The agent's answer, or `default` once the node is lost."""
        if self.agent is None or self._lost:
            return default
        try:
            return self.ray.get(getattr(self.agent, method).remote(*args), timeout=timeout_s)
        except self.ray.exceptions.RayTaskError as e:
            # The agent answered with an exception of ours: a bug, not a lost node.
            raise e.as_instanceof_cause() from None
        except Exception as e:  # a dead actor or node, or no answer: the node is lost
            self._lost = f"the target's node {self.node} was lost ({_reason(e)})"
            return default

    def close(self) -> None:
        """Stops the target there and removes the agent, whatever the node
        says: even a node marked lost (a slow answer) is asked once, briefly."""
        try:
            if self.agent is not None:
                with contextlib.suppress(Exception):
                    self.ray.get(self.agent.close.remote(), timeout=STOP_GRACE_S)
        finally:
            if self.agent is not None:
                with contextlib.suppress(Exception):
                    self.ray.kill(self.agent)
                self.agent = None
            if self._own:
                with contextlib.suppress(Exception):
                    self.ray.shutdown()
                self._own = False

    def server_version(self, target: Target) -> str | None:
        said = self.call("server_version", target, default=None)
        return said if isinstance(said, str) else None

    def facts(self) -> dict[str, Any] | None:
        """The node's own facts (its CPU model, CPUs, kernel, memory), as
        its agent read them there."""
        found = self.info.get("facts")
        return dict(found) | {"node": self.node} if isinstance(found, dict) else None

    def start(self, point: Point, key: str, plan_dir: Path) -> TargetSession:
        t = point.target
        where = ipaddress.ip_address(t.address)
        if where.is_loopback or where.is_unspecified:
            # Listening where the load can reach it, and sent there: the node's address.
            t = t.model_copy(update={"address": self.node})
            point = dataclasses.replace(point, target=t)
        self.starts += 1
        here = online_cpus()
        started = self.call(
            "start", point, key, str(plan_dir), default=None, timeout_s=t.ready_timeout_s + START_GRACE_S
        )
        if started is None:
            none = Layout("none", [], here, target_host=self.node)
            return RemoteSession(self, key, t, none, self._lost or "the target's node did not answer")
        layout, info, error, start_s, url = started
        # The node's CPUs are the target's; the generator is this machine's.
        # Unless the node is this machine: then the load shares every CPU it has.
        layout = dataclasses.replace(layout, generator_cpus=here, shared=self.same_machine, target_host=self.node)
        session = RemoteSession(self, key, t, layout, error)
        session.info, session.start_s, session.url = info, start_s, url
        return session


def _sweep_here() -> tuple[list[str], str | None]:
    from corebench.targets.sweep import SweepError, sweep

    try:
        return sweep(), None
    except SweepError as e:
        return e.said, str(e)


def sweep_nodes(address: str) -> list[tuple[str, list[str], str | None]]:
    """`corebench cleanup` on every live node of the Ray cluster at
    `address`: (node address, what it did, why it could not finish)."""
    try:
        import ray
    except ImportError:
        raise UsageError("--ray: cleaning up a cluster's nodes needs Ray: pip install 'corebench[ray]'") from None
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from corebench.cluster.session import _probe, connect

    _probe(address)
    connect(ray, address)
    try:
        task = ray.remote(num_cpus=0)(_sweep_here)
        nodes = {n["NodeManagerAddress"]: n["NodeID"] for n in ray.nodes() if n.get("Alive")}
        asks = {
            ip: task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=nid, soft=False)).remote()
            for ip, nid in sorted(nodes.items())
        }
        # One deadline for all: hung nodes do not add up.
        ray.wait(list(asks.values()), num_returns=len(asks), timeout=CALL_TIMEOUT_S)
        out = []
        for ip, ref in asks.items():
            try:
                said, why = ray.get(ref, timeout=0)
            except Exception as e:  # a node lost meanwhile, or no answer by the deadline
                said, why = [], f"cleanup: no answer ({_reason(e)})"
            out.append((ip, said, why))
        return out
    finally:
        ray.shutdown()
