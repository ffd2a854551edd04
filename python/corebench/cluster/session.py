"""A connection to a Ray cluster holding K placed agents, reused run after
run: connect → place → (check → run → merge)* → close. Agents lost in a
run are replaced before the next."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from corebench import _engine
from corebench.cluster import AgentFailed, ClusterConfig, ClusterError
from corebench.errors import EngineUsageError, UsageError

if TYPE_CHECKING:
    from ray.util.placement_group import PlacementGroup

    from corebench.config.settings import LoadConfig
    from corebench.result import LoadResult

# How far ahead of now the agreed start lies, beyond twice the time this
# machine took to check the load (reading a log, say): time for every agent
# to receive and prepare its part, so that all begin at the same instant.
START_AHEAD_S = 1.0
CONNECT_TIMEOUT_S = 60.0
PLACE_TIMEOUT_S = 60.0
POLL_S = 0.25


def _ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise UsageError("--ray: distributed load needs Ray: pip install 'corebench[ray]'") from None
    return ray


@dataclass
class _Agent:
    handle: Any
    index: int
    info: dict[str, Any]

    @property
    def node(self) -> str:
        return f"{self.info['hostname']}/{self.info['node_ip']}/{self.info['node_id'][:8]}"


def agent_config(config: LoadConfig, cluster: ClusterConfig) -> dict[str, Any]:
    """The whole load as the agents get it: without --threads, each agent
    runs as many load threads as the CPUs it reserves."""
    whole: dict[str, Any] = json.loads(config.engine_json())
    if not whole.get("threads"):
        whole["threads"] = max(1, int(cluster.agent_cpus))
    return whole


def check(config: LoadConfig, cluster: ClusterConfig) -> float:
    """Checks the load as agent 0 of K would, before any cluster is
    contacted: a bad setting is the user's error here, not K agents'
    failures there. Returns the seconds it took."""
    share = {**agent_config(config, cluster), "agent": {"index": 0, "count": cluster.agents, "node": ""}}
    began = time.monotonic()
    try:
        _engine.check(json.dumps(share))
    except EngineUsageError as e:
        raise UsageError(str(e).replace("concurrency:", "-c/--concurrency:")) from None
    return time.monotonic() - began


class Session:
    def __init__(self, cluster: ClusterConfig) -> None:
        self.cluster = cluster
        self.ray = _ray()
        self._own_connection = False
        self._pg: PlacementGroup | None = None
        self.agents: list[_Agent] = []
        self.driver_ip = ""
        # The agents' parts (JSON) of the last run, as merged: for checks
        # and debugging.
        self.last_parts: list[str] = []

    def __enter__(self) -> Session:
        try:
            self._connect()
            self._place()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def agents_here(self) -> bool:
        """True when an agent runs on this machine, beside the target."""
        return self.agents_on(self.driver_ip)

    def agents_on(self, node_ip: str) -> bool:
        """True when an agent runs on the host at `node_ip`."""
        return any(a.info["node_ip"] == node_ip for a in self.agents)

    def agents_beside(self, cpus: list[int]) -> bool:
        """True when an agent on this machine may run on a physical core of
        `cpus` (one that did not say which CPUs it may use may)."""
        from corebench.system import topology
        from corebench.system.check import boot_id

        here = boot_id()
        try:
            topo: topology.Topology | None = topology.read()
        except (OSError, topology.TopologyError):
            topo = None
        return any(
            "cpus" not in a.info or topology.share_cores(topo, cpus, a.info["cpus"])
            for a in self.agents
            if a.info.get("boot_id") == here
        )

    # -- connect and place -------------------------------------------------

    def _connect(self) -> None:
        ray, addr = self.ray, self.cluster.address
        if not ray.is_initialized():
            _probe(addr)
            self._init(addr)
            self._own_connection = True
        self.driver_ip = ray.util.get_node_ip_address()

    def _init(self, addr: str) -> None:
        connect(self.ray, addr)

    def _place(self) -> None:
        ray, c = self.ray, self.cluster
        from ray.util.placement_group import placement_group

        nodes = [n for n in ray.nodes() if n.get("Alive")]
        if c.strict_spread and len(nodes) < c.agents:
            raise ClusterError(
                f"--strict-spread: the cluster has {len(nodes)} node(s), fewer than the {c.agents} "
                "agents asked for; add nodes (ray start --address) or lower --agents"
            )
        total = ray.cluster_resources().get("CPU", 0)
        if total < c.agents * c.agent_cpus:
            raise ClusterError(
                f"--agents {c.agents}: the cluster has {total:g} CPUs in all, fewer than {c.agents} "
                f"agents of {c.agent_cpus:g} CPU each need; lower --agents or add nodes"
            )
        strategy = "STRICT_SPREAD" if c.strict_spread else "SPREAD"
        self._pg = placement_group([{"CPU": c.agent_cpus}] * c.agents, strategy=strategy)
        if not self._pg.wait(PLACE_TIMEOUT_S):
            free = ray.available_resources().get("CPU", 0)
            raise ClusterError(
                f"--agents {c.agents}: the cluster could not place {c.agents} agents of "
                f"{c.agent_cpus:g} CPU each within {PLACE_TIMEOUT_S:.0f} s ({free:g} CPUs free on "
                f"{len(nodes)} node(s): busy with other work?); lower --agents or add nodes"
            )
        self.agents = [self._start_agent(i) for i in range(c.agents)]

    def _start_agent(self, index: int) -> _Agent:
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        from corebench.cluster.agent import LoadAgent

        # Ray's annotation wants a PlacementGroup, but it documents None (no group) as allowed; _place sets one.
        strategy = PlacementGroupSchedulingStrategy(
            placement_group=self._pg,  # type: ignore[arg-type]
            placement_group_bundle_index=index,
        )
        # A Ray actor class, but mypy sees the plain class: Ray's `remote` overloads miss max_concurrency (agent.py).
        handle = LoadAgent.options(  # type: ignore[attr-defined]
            num_cpus=self.cluster.agent_cpus, scheduling_strategy=strategy
        ).remote()
        try:
            info = self.ray.get(handle.describe.remote(), timeout=PLACE_TIMEOUT_S)
        except Exception as e:
            _kill(self.ray, handle)
            raise ClusterError(
                f"agent {index} did not start: {_reason(e)} (is corebench[ray] installed on every node?)"
            ) from None
        if info["version"] != _engine.__version__:
            _kill(self.ray, handle)
            raise ClusterError(
                f"agent {index} on {info['hostname']} runs corebench {info['version']}, this is "
                f"{_engine.__version__}: install the same version on every node"
            )
        return _Agent(handle, index, info)

    def _replace_lost(self) -> None:
        """A new actor for each agent that died or stopped answering."""
        ray = self.ray
        asks = {a.handle.finished.remote(""): a for a in self.agents}
        ready, _ = ray.wait(list(asks), num_returns=len(asks), timeout=10)
        for ref, a in asks.items():
            try:
                alive = ref in ready and ray.get(ref) is not None
            except Exception:
                alive = False
            if not alive:
                _kill(ray, a.handle)  # frees its bundle for the new one
                self.agents[a.index] = self._start_agent(a.index)

    def close(self) -> None:
        for a in self.agents:
            _kill(self.ray, a.handle)
        self.agents = []
        if self._pg is not None:
            from ray.util.placement_group import remove_placement_group

            with contextlib.suppress(Exception):
                remove_placement_group(self._pg)
            self._pg = None
        if self._own_connection:
            self.ray.shutdown()
            self._own_connection = False

    # -- run -----------------------------------------------------------------

    def run(self, config: LoadConfig, progress: Callable[[int], object] | None = None) -> LoadResult:
        """Runs `config` (a LoadConfig) on every agent and merges their parts
        into one LoadResult. An agent that dies or falls silent fails the
        run (AgentFailed) within its duration, timeout and a grace."""
        from corebench.result import LoadResult

        checked_s = check(config, self.cluster)
        self._check_reach(config.url)
        self._replace_lost()
        whole = agent_config(config, self.cluster)
        run_id = uuid.uuid4().hex
        start_at = time.time() + START_AHEAD_S + 2 * checked_s
        refs: dict[Any, _Agent] = {}
        for a in self.agents:
            share = {"index": a.index, "count": len(self.agents), "node": a.node}
            part_config = json.dumps({**whole, "agent": share, "start_at_unix_s": start_at})
            refs[a.handle.run.remote(run_id, part_config, config.body or None)] = a
        deadline = None
        if config.duration_s is not None:
            deadline = start_at + config.duration_s + config.timeout_s + self.cluster.agent_timeout_s
        parts = _Collect(self, refs, run_id, deadline, config.timeout_s, progress).parts()
        self.last_parts = parts
        try:
            raw = _engine.merge(json.dumps(whole), parts)
        except EngineUsageError as e:
            raise UsageError(str(e)) from None
        return LoadResult.model_validate_json(raw)

    def _check_reach(self, url: str) -> None:
        """A loopback target is this machine's: agents elsewhere would load
        their own loopback instead."""
        host = urlsplit(url).hostname or ""
        try:
            loopback = all(ipaddress.ip_address(ai[4][0]).is_loopback for ai in socket.getaddrinfo(host, None))
        except (OSError, ValueError):
            return  # the engine's check said what it could not resolve
        away = [a for a in self.agents if a.info["node_ip"] != self.driver_ip]
        if loopback and away:
            a = away[0]
            raise UsageError(
                f"{url} is on a loopback address, but agent {a.index} runs on {a.info['node_ip']} "
                "(another machine), where it would load its own loopback: give the target's address "
                "that every node reaches, with --allow-remote"
            )


class _Collect:
    """Waits for every agent's part. The first failure stops the others and
    waits for them (bounded), so that none still loads the target during
    the next run, then is raised. Ctrl-C stops the agents, which report
    what they measured; a second Ctrl-C abandons them."""

    def __init__(
        self,
        s: Session,
        refs: dict[Any, _Agent],
        run_id: str,
        deadline: float | None,
        timeout_s: float,
        progress: Callable[[int], object] | None,
    ) -> None:
        self.s, self.refs, self.run_id = s, refs, run_id
        self.deadline, self.timeout_s, self.progress = deadline, timeout_s, progress
        self.pending = list(refs)
        self.got: dict[int, str] = {}
        self.failure: Exception | None = None
        self.stopping = False
        self.answered = {a.index: time.time() for a in refs.values()}

    def parts(self) -> list[str]:
        interrupted = False
        while self.pending:
            try:
                self._step()
            except KeyboardInterrupt:
                if interrupted:
                    self._abandon(self.pending)
                    raise
                interrupted = True
                print("corebench: stopping the agents; Ctrl-C again abandons them", file=sys.stderr)
                self._stop_all(self.timeout_s + self.s.cluster.agent_timeout_s)
            except self.s.ray.exceptions.RayError as e:  # the cluster itself failed (head lost)
                self._abandon(self.pending)
                raise AgentFailed(f"the Ray cluster failed during the run: {_reason(e)}") from None
        if self.failure is not None:
            raise self.failure
        return [self.got[i] for i in sorted(self.got)]

    def _step(self) -> None:
        ray = self.s.ray
        done, rest = ray.wait(self.pending, num_returns=len(self.pending), timeout=POLL_S)
        for ref in done:
            agent = self.refs[ref]
            try:
                self.got[agent.index] = ray.get(ref)
            except Exception as e:
                self.failure = self.failure or _failure(agent, e)
                self._stop_all(self.timeout_s + 5)
        self.pending = rest
        if not self.pending:
            return
        finished = self._ask()
        now = time.time()
        grace = self.s.cluster.agent_timeout_s
        silent = [r for r in self.pending if now - self.answered[self.refs[r].index] > grace]
        late = self.deadline is not None and now > self.deadline
        if silent or late:
            lost = silent or self.pending
            names = ", ".join(f"agent {self.refs[r].index} on {self.refs[r].node}" for r in lost)
            why = (
                f"did not answer for {grace:g} s"
                if silent
                else f"did not finish within the run's duration, timeout and {grace:g} s"
            )
            self.failure = self.failure or AgentFailed(f"{names} {why}: lost or stalled")
            self._abandon(self.pending)
            self.pending = []
            return
        if self.progress is not None and not self.stopping and self.progress(finished) is False:
            self._stop_all(self.timeout_s + self.s.cluster.agent_timeout_s)

    def _ask(self) -> int:
        """Requests finished so far over the running agents; notes which
        agents answered (a live agent answers even while it loads)."""
        ray = self.s.ray
        asks = {self.refs[r].handle.finished.remote(self.run_id): self.refs[r] for r in self.pending}
        ready, _ = ray.wait(list(asks), num_returns=len(asks), timeout=POLL_S)
        total = 0
        for ref in ready:
            try:
                total += ray.get(ref)
                self.answered[asks[ref].index] = time.time()
            except Exception:
                pass  # its run's own reference reports the failure
        return total

    def _stop_all(self, within_s: float) -> None:
        if not self.stopping:
            for a in self.refs.values():
                with contextlib.suppress(Exception):
                    a.handle.stop.remote(self.run_id)
            self.stopping = True
        end = time.time() + within_s
        self.deadline = end if self.deadline is None else min(self.deadline, end)

    def _abandon(self, refs: Iterable[Any]) -> None:
        """Silent agents are killed, so that none still loads the target
        during the next run; they are replaced before it."""
        for r in refs:
            _kill(self.s.ray, self.refs[r].handle)


def connect(ray: ModuleType, addr: str) -> None:
    """ray.init at `addr`, bounded: ray.init retries for minutes against
    something that is not a Ray head, so a thread bounds the wait."""
    failure: list[BaseException] = []

    def init() -> None:
        try:
            ray.init(address=addr, namespace="corebench", log_to_driver=False, logging_level="ERROR")
        except BaseException as e:  # reported below, in the caller's thread
            failure.append(e)

    t = threading.Thread(target=init, daemon=True)
    t.start()
    t.join(CONNECT_TIMEOUT_S)
    if t.is_alive() or failure:
        why = _reason(failure[0]) if failure else f"no answer in {CONNECT_TIMEOUT_S:.0f} s"
        raise ClusterError(
            f"--ray {addr}: cannot connect to a Ray cluster there ({why}); "
            "give the head's address as printed by `ray start --head`"
        )


def _kill(ray: ModuleType, handle: Any) -> None:
    with contextlib.suppress(Exception):
        ray.kill(handle)


def _probe(address: str) -> None:
    """A quick TCP check of HOST:PORT, so an address where nothing listens
    is one clear line at once instead of minutes of retries."""
    if address == "auto":
        return
    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        raise ClusterError(
            f"--ray {address}: give the cluster's address as HOST:PORT (the head's GCS port, 6379 "
            "by default), ray://HOST:PORT, or auto"
        )
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as e:
        raise ClusterError(
            f"--ray {address}: cannot reach a Ray cluster there ({e.strerror or e}); "
            "start one with `ray start --head` and give the address it prints"
        ) from None


def _failure(agent: _Agent, e: Exception) -> Exception:
    """The agent's own error in the user's terms (a bad setting there is a
    UsageError), or the run's failure with Ray's reason."""
    cause = getattr(e, "cause", None)
    if isinstance(cause, EngineUsageError) or isinstance(e, EngineUsageError):
        return UsageError(f"agent {agent.index} on {agent.node}: {_reason(e)}")
    return AgentFailed(f"agent {agent.index} on {agent.node} failed: {_reason(e)}")


def _reason(e: BaseException) -> str:
    """One line: the error's first line and, from Ray's longer messages,
    the sentence that says why (the worker's exit, a node's death)."""
    cause = getattr(e, "cause", None)
    if cause is not None and cause is not e:
        e = cause
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    why = [line for line in lines[1:] if "because" in line or "exit detail" in line.lower()]
    text = " ".join(lines[:1] + why[:1]).split(" Some common causes")[0] or "no message"
    return f"{type(e).__name__}: {text[:300]}"
