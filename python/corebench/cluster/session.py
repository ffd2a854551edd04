"""A connection to a Ray cluster holding K placed agents, reused run after
run: connect → place → (run → merge)* → close. Agents lost in a run are
replaced before the next."""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Optional

from corebench import _engine
from corebench.cluster import AgentFailed, ClusterConfig, ClusterError
from corebench.errors import EngineUsageError, UsageError

# How far ahead the agreed start lies: time for every agent to receive its
# part of the load, so that all begin at the same instant.
START_AHEAD_S = 1.0
# Beyond its duration and per-request timeout, how long a run may take
# before its silent agents count as lost.
GRACE_S = 30.0
CONNECT_TIMEOUT_S = 60.0
PLACE_TIMEOUT_S = 60.0
POLL_S = 0.25


def _ray():
    try:
        import ray
    except ImportError:
        raise UsageError("--ray: distributed load needs Ray: pip install 'corebench[ray]'") from None
    return ray


@dataclass
class _Agent:
    handle: Any
    index: int
    info: dict

    @property
    def node(self) -> str:
        return f"{self.info['hostname']}/{self.info['node_ip']}/{self.info['node_id'][:8]}"


class Session:
    def __init__(self, cluster: ClusterConfig) -> None:
        self.cluster = cluster
        self.ray = _ray()
        self._own_connection = False
        self._pg = None
        self.agents: list[_Agent] = []
        # The agents' parts (JSON) of the last run, as merged: for checks
        # and debugging.
        self.last_parts: list[str] = []

    def __enter__(self) -> "Session":
        try:
            self._connect()
            self._place()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- connect and place -------------------------------------------------

    def _connect(self) -> None:
        ray, addr = self.ray, self.cluster.address
        if ray.is_initialized():
            return  # the caller's own connection (the Python API inside a driver)
        _probe(addr)
        failure: list[BaseException] = []

        def init() -> None:
            try:
                ray.init(address=addr, namespace="corebench", log_to_driver=False, logging_level="ERROR",
                         configure_logging=True)
            except BaseException as e:  # reported below, in the caller's thread
                failure.append(e)

        # ray.init retries for minutes against something that is not a
        # Ray head; a thread bounds the wait.
        t = threading.Thread(target=init, daemon=True)
        t.start()
        t.join(CONNECT_TIMEOUT_S)
        if t.is_alive() or failure:
            why = f"{type(failure[0]).__name__}: {str(failure[0]).splitlines()[0]}" if failure else f"no answer in {CONNECT_TIMEOUT_S:.0f} s"
            raise ClusterError(f"--ray {addr}: cannot connect to a Ray cluster there ({why}); "
                               "give the head's address as printed by `ray start --head`")
        self._own_connection = True

    def _place(self) -> None:
        ray, c = self.ray, self.cluster
        from ray.util.placement_group import placement_group

        nodes = [n for n in ray.nodes() if n.get("Alive")]
        if c.strict_spread and len(nodes) < c.agents:
            raise ClusterError(f"--strict-spread: the cluster has {len(nodes)} node(s), fewer than the {c.agents} "
                               "agents asked for; add nodes (ray start --address) or lower --agents")
        total = ray.cluster_resources().get("CPU", 0)
        if total < c.agents * c.agent_cpus:
            raise ClusterError(f"--agents {c.agents}: the cluster has {total:g} CPUs in all, fewer than {c.agents} agents "
                               f"of {c.agent_cpus:g} CPU each need; lower --agents or add nodes")
        strategy = "STRICT_SPREAD" if c.strict_spread else "SPREAD"
        self._pg = placement_group([{"CPU": c.agent_cpus}] * c.agents, strategy=strategy)
        if not self._pg.wait(PLACE_TIMEOUT_S):
            free = ray.available_resources().get("CPU", 0)
            raise ClusterError(f"--agents {c.agents}: the cluster could not place {c.agents} agents of {c.agent_cpus:g} "
                               f"CPU each within {PLACE_TIMEOUT_S:.0f} s ({free:g} CPUs free on {len(nodes)} node(s): "
                               "busy with other work?); lower --agents or add nodes")
        self.agents = [self._start_agent(i) for i in range(c.agents)]

    def _start_agent(self, index: int) -> _Agent:
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        from corebench.cluster.agent import LoadAgent

        strategy = PlacementGroupSchedulingStrategy(placement_group=self._pg, placement_group_bundle_index=index)
        handle = LoadAgent.options(num_cpus=self.cluster.agent_cpus, scheduling_strategy=strategy).remote()
        try:
            info = self.ray.get(handle.describe.remote(), timeout=PLACE_TIMEOUT_S)
        except Exception as e:
            raise ClusterError(f"agent {index} did not start: {_reason(e)} "
                               "(is corebench[ray] installed on every node?)") from None
        if info["version"] != _engine.__version__:
            raise ClusterError(f"agent {index} on {info['hostname']} runs corebench {info['version']}, this is "
                               f"{_engine.__version__}: install the same version on every node")
        return _Agent(handle, index, info)

    def close(self) -> None:
        ray = self.ray
        for a in self.agents:
            try:
                ray.kill(a.handle)
            except Exception:
                pass
        self.agents = []
        if self._pg is not None:
            from ray.util.placement_group import remove_placement_group

            try:
                remove_placement_group(self._pg)
            except Exception:
                pass
            self._pg = None
        if self._own_connection:
            ray.shutdown()
            self._own_connection = False

    # -- run -----------------------------------------------------------------

    def run(self, config, progress: Optional[Callable[[int], object]] = None):
        """Runs `config` (a LoadConfig) on every agent and merges their parts
        into one LoadResult. An agent that dies or falls silent fails the
        run (AgentFailed) within its duration, timeout and a grace."""
        from corebench.result import LoadResult

        self._replace_lost()
        whole = json.loads(config.engine_json())
        run_id = uuid.uuid4().hex
        start_at = time.time() + START_AHEAD_S
        refs = {}
        for a in self.agents:
            share = {"index": a.index, "count": len(self.agents), "node": a.node}
            part_config = json.dumps({**whole, "agent": share, "start_at_unix_s": start_at})
            refs[a.handle.run.remote(run_id, part_config, config.body or None)] = a
        deadline = None
        if config.duration_s is not None:
            deadline = start_at + config.duration_s + config.timeout_s + GRACE_S
        parts = self._collect(refs, run_id, deadline, config.timeout_s, progress)
        self.last_parts = parts
        try:
            raw = _engine.merge(config.engine_json(), parts)
        except EngineUsageError as e:
            raise UsageError(str(e)) from None
        return LoadResult.model_validate_json(raw)

    def _collect(self, refs: dict, run_id: str, deadline: Optional[float], timeout_s: float,
                 progress: Optional[Callable[[int], object]]) -> list[str]:
        """Every agent's part; the first failure stops the others, waits for
        them (bounded) so none loads the target into the next run, and is
        raised."""
        ray = self.ray
        parts: dict[int, str] = {}
        failure: Optional[Exception] = None
        pending = list(refs)
        stopping = False

        def stop_all(within_s: float) -> None:
            nonlocal stopping, deadline
            if not stopping:
                stopping = True
                self._stop(refs.values(), run_id)
            deadline = min(deadline or float("inf"), time.time() + within_s)

        while pending:
            try:
                done, pending = ray.wait(pending, num_returns=len(pending), timeout=POLL_S)
                for ref in done:
                    agent = refs[ref]
                    try:
                        parts[agent.index] = ray.get(ref)
                    except Exception as e:
                        failure = failure or _failure(agent, e)
                        stop_all(timeout_s + 5)
                if pending and deadline is not None and time.time() > deadline:
                    silent = ", ".join(f"agent {refs[r].index} on {refs[r].node}" for r in pending)
                    self._abandon(refs[r] for r in pending)
                    failure = failure or AgentFailed(
                        f"{silent} did not finish within the run's duration, timeout and {GRACE_S:.0f} s: lost or stalled")
                    break
                if progress is not None and pending and not stopping and progress(self._finished(refs)) is False:
                    stop_all(timeout_s + GRACE_S)
            except KeyboardInterrupt:
                # Ctrl-C: the agents stop and report what they measured.
                stop_all(timeout_s + GRACE_S)
        if failure is not None:
            raise failure
        return [parts[i] for i in sorted(parts)]

    def _finished(self, refs: dict) -> int:
        try:
            return sum(self.ray.get([a.handle.finished.remote() for a in refs.values()], timeout=POLL_S))
        except Exception:
            return 0

    def _stop(self, agents, run_id: str) -> None:
        for a in agents:
            try:
                a.handle.stop.remote(run_id)
            except Exception:
                pass

    def _abandon(self, agents) -> None:
        """Silent agents are killed, so that none still loads the target
        during the next run; they are replaced before it."""
        for a in agents:
            try:
                self.ray.kill(a.handle)
            except Exception:
                pass

    def _replace_lost(self) -> None:
        """A new actor for each agent that died in an earlier run."""
        ray = self.ray
        for i, a in enumerate(self.agents):
            try:
                ray.get(a.handle.finished.remote(), timeout=10)
            except Exception:
                self.agents[i] = self._start_agent(a.index)


def _probe(address: str) -> None:
    """A quick TCP check of HOST:PORT, so an address where nothing listens
    is one clear line at once instead of minutes of retries."""
    if address == "auto":
        return
    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        raise ClusterError(f"--ray {address}: give the cluster's address as HOST:PORT (the head's GCS port, 6379 "
                           "by default), ray://HOST:PORT, or auto")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as e:
        raise ClusterError(f"--ray {address}: cannot reach a Ray cluster there ({e.strerror or e}); "
                           "start one with `ray start --head` and give the address it prints") from None


def _failure(agent: _Agent, e: Exception) -> Exception:
    """The agent's own error in the user's terms (a bad setting there is a
    UsageError), or the run's failure with Ray's reason."""
    cause = getattr(e, "cause", None)
    if isinstance(cause, EngineUsageError) or isinstance(e, EngineUsageError):
        return UsageError(f"agent {agent.index} on {agent.node}: {_reason(e)}")
    return AgentFailed(f"agent {agent.index} on {agent.node} failed: {_reason(e)}")


def _reason(e: BaseException) -> str:
    """The first line that says something, without Ray's traceback."""
    cause = getattr(e, "cause", None)
    if cause is not None and cause is not e:
        e = cause
    lines = [l.strip() for l in str(e).splitlines() if l.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else 'no message'}"
