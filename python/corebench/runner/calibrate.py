"""The load generator's own ceiling, measured before the first run.

A run can only show a server as fast as the generator that loads it. For
each CPU layout of the plan (the target's cores, the generator's), the
built-in server answers a 64-byte page on the target's cores while the
generator, on its own cores, loads it in a closed loop with the plan's
largest connection count for CALIBRATION_S. The rate reached, divided by the
share of its cores the generator used, is its ceiling there: what it would
reach with every core busy, at that CPU cost per request (the generator's
cost per request is what bench/generator-cost measures against wrk). A run
at or above NEAR_CEILING of it, on a generator that was CPU-bound, or on a
generator sharing the target's cores, shows the generator's limit as much as
the server's: it is stored and reported as a lower bound."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from corebench import engine
from corebench.config.settings import LoadSettings, engine_config
from corebench.errors import EngineFailure, UsageError
from corebench.plan import Experiment
from corebench.plan.model import Builtin, Target
from corebench.targets import process
from corebench.targets.cpus import CpuControl, Layout, plan_layout

CALIBRATION_S = 1.0
# A run at this share of the generator's ceiling measured the generator too.
NEAR_CEILING = 0.8
PAGE = "/static/64"
DEFAULT_CONNECTIONS = 64


@dataclass(frozen=True)
class Ceiling:
    target_cpus: list[int]
    generator_cpus: list[int]
    shared: bool
    connections: int
    rps: float  # reached against the built-in page
    generator_cpu: float  # cores' worth the generator used meanwhile
    ceiling_rps: float  # rps at every generator core busy
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(d: dict[str, Any]) -> Ceiling:
        return Ceiling(**d)

    def sentence(self) -> str:
        where = f"generator on {_cpus(self.generator_cpus)}, built-in server on {_cpus(self.target_cpus)}"
        if self.error:
            return f"generator calibration ({where}) failed: {self.error}"
        shared = "; they share cores" if self.shared else ""
        return (
            f"generator ceiling: {self.ceiling_rps:,.0f} req/s ({self.rps:,.0f} req/s reached at "
            f"{self.generator_cpu:.2f} of its {_cores(len(self.generator_cpus))}, {self.connections} connections; "
            f"{where}{shared})"
        )


def _cpus(cpus: list[int]) -> str:
    return ("CPU " if len(cpus) == 1 else "CPUs ") + ",".join(map(str, cpus))


def calibrate(exp: Experiment, control: CpuControl, work_dir: Path) -> list[Ceiling]:
    """One ceiling per distinct layout of the plan's points."""
    connections = max((p.load.concurrency or 0 for p in exp.points), default=0) or DEFAULT_CONNECTIONS
    threads = max((p.load.threads or 0 for p in exp.points), default=0) or None
    seen: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[float | None, dict[str, float]]] = {}
    for p in exp.points:
        cpus = p.target.cpus if p.target.url is None else None
        # Services with cores of their own leave the generator fewer.
        own = {n: s.cpus for n, s in p.target.services.items() if s.cpus is not None}
        target, generator = _layout_cpus(control, cpus, own)
        seen.setdefault((tuple(target), tuple(generator)), (cpus, own))
    return [_measure(control, cpus, own, connections, threads, work_dir) for cpus, own in seen.values()]


def _layout_cpus(control: CpuControl, cpus: float | None, own: dict[str, float]) -> tuple[list[int], list[int]]:
    target, generator, _ = plan_layout(cpus, control.online, own)
    return target, generator


def _measure(
    control: CpuControl, cpus: float | None, own: dict[str, float], connections: int, threads: int | None, work: Path
) -> Ceiling:
    try:
        layout = control.layout(cpus, own)
    except (OSError, RuntimeError, ValueError) as e:
        target, generator = _layout_cpus(control, cpus, own)
        return Ceiling(target, generator, generator == control.online, connections, 0.0, 0.0, 0.0, str(e))
    server = Target(builtin=Builtin(model="async", workers=max(1, len(layout.target_cpus))))
    affinity = os.sched_getaffinity(0)
    started = None
    shared = layout.shared
    try:
        started = process.start(server, {}, layout, Path("."), work / f"calibration-{time.monotonic_ns()}", PAGE)
        if layout.method != "none":
            os.sched_setaffinity(0, layout.generator_cpus)
        settings = LoadSettings(
            url=started.base_url.rstrip("/") + PAGE,
            concurrency=connections,
            duration=CALIBRATION_S,
            keep_alive=True,
            threads=threads,
        )
        result = engine.run(engine_config(settings))
        used = result.generator_cpu_s / max(result.duration_s, 1e-9)
    except (process.TargetError, UsageError, EngineFailure, OSError) as e:
        return Ceiling(layout.target_cpus, layout.generator_cpus, shared, connections, 0.0, 0.0, 0.0, str(e))
    finally:
        os.sched_setaffinity(0, affinity)
        if started is not None:
            process.stop(started.proc, server)
        CpuControl.release(layout)
    rps = result.successes / result.duration_s if result.duration_s else 0.0
    cores = len(layout.generator_cpus)
    ceiling = rps * cores / used if used > 0 else rps
    return Ceiling(layout.target_cpus, layout.generator_cpus, shared, connections, rps, used, max(ceiling, rps))


def ceiling_for(ceilings: list[Ceiling], layout: Layout) -> Ceiling | None:
    for c in ceilings:
        if c.generator_cpus == layout.generator_cpus and c.target_cpus == layout.target_cpus and not c.error:
            return c
    return None


def lower_bound(
    throughput_rps: float, layout: dict[str, Any], monitor: dict[str, Any] | None, ceiling: Ceiling | None
) -> str | None:
    """Why a run's figures understate the target, in words; None when they do not."""
    why = []
    if layout.get("shared"):
        why.append("the generator shared the target's cores")
    if monitor and monitor.get("client_bound"):
        why.append("the generator was CPU-bound")
    if ceiling is not None and throughput_rps >= NEAR_CEILING * ceiling.ceiling_rps:
        why.append(f"{throughput_rps / ceiling.ceiling_rps:.0%} of the generator's ceiling")
    return "; ".join(why) or None


def _cores(n: int) -> str:
    return f"{n} core" if n == 1 else f"{n} cores"
