"""The CPU baseline: hackbench at each cpus level of the plan, on exactly the
cores (and quota) the target gets there, before the first run. Its speedup
is what a CPU-bound, scheduler-heavy program reaches on the same cores, the
yardstick the third field report calibrated with: a server that scales
worse than it is limited by something other than the cores.

Times are wall-clock seconds as hackbench prints them; the repetitions are
interleaved over the levels (level order shuffled per round by the plan's
seed), so drift does not pose as a difference between levels."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
from dataclasses import dataclass

from corebench.plan import ExperimentPlan
from corebench.plan.model import Hackbench
from corebench.store import Baseline, BaselineLevel
from corebench.targets.cpus import CpuControl

_TIME = re.compile(r"^Time:\s*([0-9.]+)\s*$", re.MULTILINE)
TIMEOUT_S = 600.0


class BaselineError(Exception):
    """hackbench could not run or said nothing usable."""


def argv(h: Hackbench) -> list[str]:
    flags = (["-T"] if h.threads else []) + (["-p"] if h.pipe else [])
    return ["hackbench", "-g", str(h.groups), "-l", str(h.loops), *flags]


def missing() -> str | None:
    if shutil.which("hackbench") is None:
        return "hackbench is not installed: install Debian's rt-tests (make test does)"
    return None


def seconds(output: str) -> float:
    """The run's time from hackbench's output ("Time: 1.234")."""
    m = _TIME.search(output)
    if m is None:
        last = output.strip().splitlines()[-1:] or ["no output"]
        raise BaselineError(f"hackbench printed no time: {last[0]}")
    return float(m.group(1))


@dataclass
class Level:
    cpus: float | None
    target_cpus: list[int]
    seconds: list[float]
    error: str | None = None

    @property
    def median_s(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds else None

    def record(self) -> BaselineLevel:
        return BaselineLevel(cpus=self.cpus, target_cpus=self.target_cpus, seconds=self.seconds, error=self.error)


def cpus_levels(exp: ExperimentPlan) -> list[float | None]:
    """The distinct CPU limits of the targets the plan starts, in order."""
    seen: list[float | None] = []
    for p in exp.points:
        if p.target.url is None and p.target.cpus not in seen:
            seen.append(p.target.cpus)
    return sorted(seen, key=lambda c: -1.0 if c is None else c)


def measure(exp: ExperimentPlan, control: CpuControl) -> Baseline:
    """hackbench's times at each cpus level."""
    assert exp.plan.baseline is not None
    h = exp.plan.baseline.hackbench
    levels = {c: Level(c, [], []) for c in cpus_levels(exp)}
    rng = random.Random(f"{exp.plan.experiment.seed}:baseline")
    for _ in range(h.repetitions):
        order = list(levels)
        rng.shuffle(order)
        for c in order:
            level = levels[c]
            if level.error is None:
                _once(h, control, level)
    return Baseline(argv=argv(h), levels=[lv.record() for lv in levels.values()])


def _once(h: Hackbench, control: CpuControl, level: Level) -> None:
    try:
        layout = control.layout(level.cpus)
    except (OSError, RuntimeError) as e:
        level.error = f"CPU layout: {e}"
        return
    level.target_cpus = layout.target_cpus
    placed = [sys.executable, "-m", "corebench.targets.enter", json.dumps(layout.to_json()), "--", *argv(h)]
    # Its own process group: hackbench forks its senders and receivers, and
    # all of them go when it is stopped early (a timeout, Ctrl-C).
    proc = subprocess.Popen(placed, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=TIMEOUT_S)
        if proc.returncode != 0:
            raise BaselineError(f"hackbench exited with status {proc.returncode}: {out.strip()[-200:]}")
        level.seconds.append(seconds(out))
    except subprocess.TimeoutExpired:
        level.error = f"hackbench ran past {TIMEOUT_S:g} s: lower its groups or loops"
    except BaselineError as e:
        level.error = str(e)
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        CpuControl.release(layout)
