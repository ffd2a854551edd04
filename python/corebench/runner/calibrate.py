"""The load generator's own ceiling, measured before the first run.

A run can only show a server as fast as the generator that loads it. For
each CPU layout of the plan (the target's cores, the generator's), the
built-in server answers a 64-byte page on the target's cores while the
generator, on its own cores, loads it in a closed loop with the plan's
largest connection count for CALIBRATION_S. The rate reached, divided by the
share of its cores the generator used, is its ceiling there: what it would
reach with every core busy, at that CPU cost per request (the generator's
cost per request is what bench/generator-cost measures against wrk). A
ceiling holds for the load it was measured with, so each protocol and
connection use of the plan (HTTP version, keep-alive or a connection per
request) gets its own: a new connection per request costs the generator
several times what a kept one does, HTTP/2's streams less. So does each
page size the plan asks of the built-in server's /static/N (a 200 kB page
costs the generator several times a 64-byte one's CPU): the calibration
loads that page; any other path is calibrated on the 64-byte page, said so,
and the runs' own generator CPU then shows where the generator was at its
limit. Each ceiling is measured CALIBRATION_REPEATS times and given as
their mean and their range: a run is near the ceiling from NEAR_CEILING of
the lowest calibration, so a noisy calibration marks more runs, never
fewer, and a run refutes the ceiling only past the calibrations' one-sided
95% prediction bound for the largest of the runs it holds
(`analysis.points.refuted_above`; Hahn & Meeker 1991). (A t interval of
the mean on 2 degrees of freedom reaches 0 at a CV of 40% and is the
mean's uncertainty, not the ceiling's: a statistician's review.) So does each
load model: an open loop paces its requests by timers and users pause
between theirs, which a closed loop does not; those are measured at half
the closed loop's rate (an open loop) or with users pausing up to
USERS_THINK, below saturation, and the ceiling is the rate over the CPU
share as before. Every ceiling is thus a projection from CPU per request,
said as such. A run
at or above NEAR_CEILING of it, on a generator that was CPU-bound, or on a
generator sharing the target's cores, shows the generator's limit as much as
the server's: it is stored and reported as a lower bound."""

from __future__ import annotations

import os
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from corebench import engine
from corebench.config.settings import LoadConfig, LoadSettings, engine_config
from corebench.errors import EngineFailure, UsageError
from corebench.plan import ExperimentPlan
from corebench.plan.model import Builtin, Load, Target
from corebench.result import CALIBRATION_REPEATS, NEAR_CEILING, LoadResult
from corebench.store import Ceiling, LoopModel, MonitorSummary, RunLayout
from corebench.system.topology import Numa, Smt, share_cores
from corebench.targets.cpus import CpuControl, Layout, plan_layout
from corebench.targets.process import TargetError
from corebench.targets.session import TargetSession
from corebench.units import parse_size_bytes, parse_span_s

# Three half-second measurements: an interval over them for 0.5 s more
# than one 1-second measurement took.
CALIBRATION_S = 0.5
# Users' think time in a users-model calibration: long enough that each
# request waits on a timer, short enough that many are made in CALIBRATION_S.
USERS_THINK = "1ms"
# An open loop is calibrated at this share of the closed loop's rate: a
# rate the generator and the server sustain, so what is measured is the
# pacing's CPU per request, not a queue.
OPEN_SHARE = 0.9
PAGE = "/static/64"
# The built-in server's pages: a plan path of this form is calibrated on it.
_STATIC = re.compile(r"^/?static/(\d+[km]?b?)$", re.IGNORECASE)
DEFAULT_CONNECTIONS = 64


def calibrate(exp: ExperimentPlan, control: CpuControl, work_dir: Path) -> list[Ceiling]:
    """One ceiling per distinct layout and protocol of the plan's points."""
    connections, threads = sizes(exp)
    seen: dict[tuple[tuple[int, ...], tuple[int, ...], bool, str, LoopModel, str], Asked] = {}
    for p in exp.points:
        cpus = p.target.cpus if p.target.url is None else None
        # Services with cores of their own leave the generator fewer.
        own = {n: s.cpus for n, s in p.target.services.items() if s.cpus is not None}
        asked = Asked(cpus, own, p.target.smt, p.target.numa)
        target, generator = _layout_cpus(control, asked)
        key = (tuple(target), tuple(generator), *protocol(p.load), loop_model(p.load), page(p.load))
        seen.setdefault(key, asked)
    return [
        _measure(control, asked, Calibration(connections, threads, keep_alive, http, model, path), work_dir)
        for (_, _, keep_alive, http, model, path), asked in seen.items()
    ]


def sizes(exp: ExperimentPlan) -> tuple[int, int | None]:
    """The plan's largest connection count and thread count, which every
    calibration loads with."""
    connections = max((p.load.concurrency or 0 for p in exp.points), default=0) or DEFAULT_CONNECTIONS
    return connections, max((p.load.threads or 0 for p in exp.points), default=0) or None


@dataclass(frozen=True)
class Asked:
    """The CPUs a point's target asks for: its cpus, its services' own, and how they are chosen."""

    cpus: float | None
    own: dict[str, float]
    smt: Smt = "off"
    numa: Numa = "one"


def protocol(load: LoadSettings) -> tuple[bool, str]:
    """(keep-alive, HTTP version) of a load, as the calibration varies them."""
    return load.keep_alive is not False, load.http or "1.1"


def page(load: Load) -> str:
    """The built-in page a load's ceiling is measured on: its own where it
    asks for /static/N by path, else the 64-byte one."""
    m = _STATIC.match(load.path) if load.url is None else None
    return f"/static/{m.group(1)}" if m else PAGE


def page_bytes(path: str) -> int:
    """/static/2k's 2,048 bytes, as the built-in server reads the size."""
    return parse_size_bytes(path.rsplit("/", 1)[1])


def loop_model(load: LoadSettings) -> LoopModel:
    """How a load makes its requests, as the calibration varies it. Users
    who never think (think = "0") send as a closed loop does: no timer
    between requests, so no users' calibration."""
    if load.open_loop:
        return "open"
    if load.think is None:
        return "closed"
    try:
        return "closed" if parse_span_s(str(load.think)) == (0.0, 0.0) else "users"
    except ValueError:
        return "users"  # refused with its own message when the load is built


@dataclass(frozen=True)
class Calibration:
    connections: int
    threads: int | None
    keep_alive: bool
    http: str
    model: LoopModel = "closed"
    page: str = PAGE

    def settings(self, base_url: str, allow_remote: bool | None = None) -> LoadSettings:
        """The load of one measurement against the built-in server at `base_url`."""
        return LoadSettings(
            url=base_url.rstrip("/") + self.page,
            concurrency=self.connections,
            duration=CALIBRATION_S,
            keep_alive=self.keep_alive,
            http=self.http,
            threads=self.threads,
            think=USERS_THINK if self.model == "users" else None,
            allow_remote=allow_remote,
        )


def _layout_cpus(control: CpuControl, a: Asked) -> tuple[list[int], list[int]]:
    target, generator, _ = plan_layout(a.cpus, control.online, a.own, control.topology, a.smt, a.numa)
    return target, generator


def _measure(control: CpuControl, a: Asked, how: Calibration, work: Path) -> Ceiling:
    try:
        layout = control.layout(a.cpus, a.own, a.smt, a.numa)
    except (OSError, RuntimeError, ValueError) as e:
        target, generator = _layout_cpus(control, a)
        return failed(target, generator, share_cores(control.topology, target, generator), how, str(e))
    server = Target(builtin=Builtin(model="async", workers=max(1, len(layout.target_cpus))))
    affinity = os.sched_getaffinity(0)
    shared = layout.shared
    # Through the session the plan's targets start in: leaving it stops the
    # server and releases its CPUs, also on Ctrl-C.
    with TargetSession("calibration", server, layout) as session:
        try:
            started = session.serve({}, Path("."), work / f"calibration-{time.monotonic_ns()}", PAGE)
            if layout.method != "none":
                os.sched_setaffinity(0, layout.generator_cpus)
            settings = how.settings(started.base_url)
            measured = [_once(settings, how.model) for _ in range(CALIBRATION_REPEATS)]
        except (TargetError, UsageError, EngineFailure, OSError) as e:
            return failed(layout.target_cpus, layout.generator_cpus, shared, how, str(e))
        finally:
            os.sched_setaffinity(0, affinity)
    if not all(rps > 0 for rps, _ in measured):
        why = f"the built-in server's {how.page} gave no successful response in a calibration"
        return failed(layout.target_cpus, layout.generator_cpus, shared, how, why)
    cores = len(layout.generator_cpus)
    # Each repeat's projection: its rate over the share of the generator's cores it used.
    ceilings = [max(rps * cores / used, rps) if used > 0 else rps for rps, used in measured]
    return Ceiling(
        target_cpus=layout.target_cpus,
        generator_cpus=layout.generator_cpus,
        shared=shared,
        connections=how.connections,
        rps=statistics.fmean(rps for rps, _ in measured),
        generator_cpu=statistics.fmean(used for _, used in measured),
        ceiling_rps=statistics.fmean(ceilings),
        ceiling_low_rps=min(ceilings),
        ceiling_high_rps=max(ceilings),
        repeats=len(ceilings),
        page_bytes=page_bytes(how.page),
        keep_alive=how.keep_alive,
        http=how.http,
        model=how.model,
    )


def _once(settings: LoadSettings, model: LoopModel) -> tuple[float, float]:
    """One measurement: (successes per second, cores' worth of generator CPU)."""
    result = measure_once(settings, model, engine.run)
    seconds = max(result.duration_s, 1e-9)
    return result.successes / seconds if result.duration_s else 0.0, result.generator_cpu_s / seconds


def measure_once(settings: LoadSettings, model: LoopModel, load: Callable[[LoadConfig], LoadResult]) -> LoadResult:
    """One calibration load by `load` (this process's engine, or a
    backend's); an open loop is paced at OPEN_SHARE of a closed loop's rate."""
    result = _whole(load(engine_config(settings)))
    if model == "open":
        closed = result.successes / max(result.duration_s, 1e-9)
        paced = settings.model_copy(update={"rate": max(1.0, round(closed * OPEN_SHARE))})
        result = _whole(load(engine_config(paced)))
    return result


def _whole(result: LoadResult) -> LoadResult:
    """A calibration cut short by Ctrl-C or SIGTERM is no ceiling: the
    experiment stops, as it would during a run."""
    if result.interrupted:
        raise KeyboardInterrupt
    return result


def failed(target: list[int], generator: list[int], shared: bool, how: Calibration, error: str) -> Ceiling:
    return Ceiling(
        target_cpus=target,
        generator_cpus=generator,
        shared=shared,
        connections=how.connections,
        keep_alive=how.keep_alive,
        http=how.http,
        model=how.model,
        page_bytes=page_bytes(how.page),
        rps=0.0,
        generator_cpu=0.0,
        ceiling_rps=0.0,
        error=error,
    )


def ceiling_for(ceilings: list[Ceiling], layout: Layout, load: Load) -> Ceiling | None:
    """The ceiling measured on this layout with this load's protocol and model."""
    keep_alive, http = protocol(load)
    model, size = loop_model(load), page_bytes(page(load))
    for c in ceilings:
        # Measured across hosts: the load hosts' ceiling, whatever the target's CPUs.
        same = c.across or (c.generator_cpus == layout.generator_cpus and c.target_cpus == layout.target_cpus)
        if same and (c.keep_alive, c.http, c.model, c.page_bytes) == (keep_alive, http, model, size) and not c.error:
            return c
    return None


def lower_bound(
    throughput_rps: float, layout: RunLayout, monitor: MonitorSummary | None, ceiling: Ceiling | None
) -> str | None:
    """Why a run's figures understate the target, in words; None when they do not."""
    why = []
    if layout.shared:
        why.append("the generator shared the target's cores")
    if monitor is not None and monitor.client_bound:
        why.append("the generator was CPU-bound")
    if ceiling is not None and throughput_rps >= NEAR_CEILING * ceiling.lowest_rps:
        why.append(f"{throughput_rps / ceiling.ceiling_rps:.0%} of the generator's ceiling{ceiling.interval()}")
    return "; ".join(why) or None
