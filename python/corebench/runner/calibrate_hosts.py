"""The load generator's ceiling where the load and the target are on
different hosts: the load from a Ray cluster's agents (`[cluster]`), or the
target on a Ray node of its own (`[target] node`).

The measurement of `runner.calibrate`, made where the plan's runs are made:
the built-in server, started by the plan's own target host (this machine or
the target's node) on the widest CPU set of the plan, is loaded by the
plan's own load backend (the agents, or this process's engine) with the
plan's largest connection count, for CALIBRATION_S, CALIBRATION_REPEATS
times. Each load host's ceiling is its successes per second over the share
of its load threads' cores it used (an agent's `cpu_utilization`): what it
would reach with them all busy, at that CPU cost per request. The
generator's ceiling is the sum over the hosts, given as the mean and range
of its repeats. One ceiling per protocol, load model and page of the plan:
a load host's ceiling does not depend on the target's CPUs (a run whose
agents shared the target's host says so itself)."""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from corebench.config.settings import LoadConfig
from corebench.errors import EngineFailure, UsageError
from corebench.plan import ExperimentPlan, Point
from corebench.plan.model import Builtin, Target
from corebench.result import CALIBRATION_REPEATS, LoadResult
from corebench.runner.backend import LoadBackend, LoadFailed
from corebench.runner.calibrate import (
    Calibration,
    failed,
    loop_model,
    measure_once,
    page,
    page_bytes,
    protocol,
    sizes,
)
from corebench.store import AgentCeiling, Ceiling
from corebench.targets.session import TargetHost, TargetSession

# The calibration's start of the built-in server, among the plan's targets' starts.
KEY = "calibration"


class Part(NamedTuple):
    """One load host's figures in one repeat."""

    agent: int  # its index (0 for this process's own load)
    node: str
    cores: int  # the CPUs its load threads could use
    rps: float  # successes per second
    share: float  # its CPU time over those cores' wall time


def calibrate_hosts(exp: ExperimentPlan, backend: LoadBackend, host: TargetHost) -> list[Ceiling]:
    """One ceiling per distinct protocol, load model and page of the plan."""
    connections, threads = sizes(exp)
    asked = {(*protocol(p.load), loop_model(p.load), page(p.load)): None for p in exp.points}
    server, plan_dir = _server(exp), exp.path.parent
    hows = [Calibration(connections, threads, keep_alive, http, model, path) for keep_alive, http, model, path in asked]
    if exp.points[0].target.url is not None:
        # Nothing of ours runs on a running server's host to load instead.
        why = "the target is a server already running (url): no built-in server can be started on its host"
        return [_failed([], how, why) for how in hows]
    return [_measure(backend, host, server, how, plan_dir) for how in hows]


def _server(exp: ExperimentPlan) -> Point:
    """The built-in server where the plan's targets go, on its widest CPU set."""
    first = exp.points[0].target
    cpus = max((p.target.cpus for p in exp.points if p.target.cpus is not None), default=None)
    server = Target(
        builtin=Builtin(model="async"),
        cpus=cpus,
        smt=first.smt,
        numa=first.numa,
        address=first.address,
        node=first.node,
        ray=first.ray,
    )
    return Point(levels={}, target=server, load=exp.points[0].load)


def _measure(backend: LoadBackend, host: TargetHost, server: Point, how: Calibration, plan_dir: Path) -> Ceiling:
    session: TargetSession | None = None
    try:
        session = host.start(server, KEY, plan_dir)
        if session.error is not None or session.base_url is None:
            return _failed(session.layout.target_cpus, how, f"the built-in server did not start: {session.error}")
        settings = how.settings(session.base_url, server.load.allow_remote)
        load: Callable[[LoadConfig], LoadResult] = lambda cfg: backend.run(cfg, _quiet)  # noqa: E731
        repeats = [_parts(measure_once(settings, how.model, load)) for _ in range(CALIBRATION_REPEATS)]
    except (LoadFailed, UsageError, EngineFailure, OSError) as e:
        return _failed(session.layout.target_cpus if session is not None else [], how, str(e))
    finally:
        if session is not None:
            session.stop()
    return _ceiling(repeats, session, backend, how)


def _ceiling(repeats: list[list[Part]], session: TargetSession, backend: LoadBackend, how: Calibration) -> Ceiling:
    target_cpus = session.layout.target_cpus
    hosts = [(p.agent, p.node) for p in repeats[0]]
    if any([(p.agent, p.node) for p in parts] != hosts for parts in repeats):
        return _failed(target_cpus, how, "a load agent was lost or replaced between the calibration's repeats")
    if not all(p.rps > 0 for parts in repeats for p in parts):
        why = f"a load host had no successful response from the built-in server's {how.page} in a calibration"
        return _failed(target_cpus, how, why)
    totals = [sum(_projected(p) for p in parts) for parts in repeats]
    return Ceiling(
        target_cpus=target_cpus,
        generator_cpus=[],
        shared=backend.layout(session.layout.record()).shared,
        connections=how.connections,
        rps=statistics.fmean(sum(p.rps for p in parts) for parts in repeats),
        generator_cpu=statistics.fmean(sum(p.cores * p.share for p in parts) for parts in repeats),
        ceiling_rps=statistics.fmean(totals),
        ceiling_low_rps=min(totals),
        ceiling_high_rps=max(totals),
        repeats=len(totals),
        page_bytes=page_bytes(how.page),
        keep_alive=how.keep_alive,
        http=how.http,
        model=how.model,
        across=True,
        agents=[_per_host([parts[i] for parts in repeats]) for i in range(len(hosts))],
    )


def _failed(target_cpus: list[int], how: Calibration, why: str) -> Ceiling:
    return failed(target_cpus, [], False, how, why).model_copy(update={"across": True})


def _parts(result: LoadResult) -> list[Part]:
    """Each load host's figures in one repeat: the agents', or this
    process's (over the CPUs its load threads could use) where the load is
    its own."""
    if result.agents:
        return [Part(a.index, a.node, min(a.threads, a.cores), a.goodput_rps, a.cpu_utilization) for a in result.agents]
    seconds = max(result.duration_s, 1e-9)
    cores = min(result.threads, len(os.sched_getaffinity(0)))
    rps = result.successes / seconds if result.duration_s else 0.0
    return [Part(0, "this machine", cores, rps, result.generator_cpu_s / seconds / cores)]


def _projected(p: Part) -> float:
    """A host's rate with all its load threads' cores busy; never below what it reached."""
    return max(p.rps / p.share, p.rps) if p.share > 0 else p.rps


def _per_host(repeats: list[Part]) -> AgentCeiling:
    """One host's means over the repeats."""
    return AgentCeiling(
        node=repeats[0].node,
        cores=repeats[0].cores,
        rps=statistics.fmean(p.rps for p in repeats),
        cpu_utilization=statistics.fmean(p.share for p in repeats),
        ceiling_rps=statistics.fmean(_projected(p) for p in repeats),
    )


def _quiet(_finished: int) -> None:
    """A calibration shows no progress of its own."""
