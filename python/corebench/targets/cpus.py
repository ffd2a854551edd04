"""CPU control for the target: whole cores through a cgroup cpuset (v2 or
v1, whichever this kernel offers and lets us write), otherwise CPU
affinity; fractional CPUs through a CPU quota (cgroup v2 cpu.max or v1
cfs_quota_us). The generator gets the cores the target does not."""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

CGROUP = Path("/sys/fs/cgroup")
PERIOD_US = 100_000


@dataclass
class Layout:
    """Where the target and the generator run; stored with every run."""

    method: str  # cgroup2, cgroup1, affinity, or none (no limit asked)
    target_cpus: list[int]
    generator_cpus: list[int]
    # The target's CPU limit when fractional (cores' worth), else None.
    quota_cpus: float | None = None
    # The generator has no core of its own: it competes with the target.
    shared: bool = False
    groups: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def online_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def check(cpus: float | None, online: list[int]) -> None:
    if cpus is not None and cpus > len(online):
        raise ValueError(f"cpus = {cpus:g} is more than the {len(online)} CPUs this machine lets corebench use")


def plan_layout(cpus: float | None, online: list[int]) -> tuple[list[int], list[int], float | None]:
    """The target takes the first ceil(cpus) cores, the generator the rest
    (all of them, shared, when nothing is left)."""
    if cpus is None:
        return online, online, None
    whole = math.ceil(cpus)
    target, rest = online[:whole], online[whole:]
    quota = cpus if cpus != whole else None
    return target, rest or online, quota


def _writable_v2() -> bool:
    try:
        controllers = (CGROUP / "cgroup.controllers").read_text().split()
    except OSError:
        return False
    return "cpuset" in controllers and "cpu" in controllers and os.access(CGROUP / "cgroup.subtree_control", os.W_OK)


def _writable_v1() -> bool:
    return os.access(CGROUP / "cpuset" / "cpuset.cpus", os.W_OK) and os.access(CGROUP / "cpu", os.W_OK)


def _cpulist(cpus: list[int]) -> str:
    return ",".join(str(c) for c in cpus)


def control_method() -> str:
    return "cgroup2" if _writable_v2() else "cgroup1" if _writable_v1() else "affinity"


class CpuControl:
    """Creates the target's cgroups before it starts and removes them after."""

    def __init__(self, prefer: str | None = None) -> None:
        self.method = prefer or control_method()
        self.counter = 0
        # Read once: the runner later narrows its own affinity to the generator's cores.
        self.online = online_cpus()

    def layout(self, cpus: float | None) -> Layout:
        online = self.online
        check(cpus, online)
        target, generator, quota = plan_layout(cpus, online)
        if cpus is None:
            return Layout("none", target, generator, None, shared=True)
        layout = Layout(self.method, target, generator, quota, shared=generator == online)
        if self.method == "affinity":
            if quota is not None:
                raise RuntimeError(f"cpus = {cpus:g} needs a CPU quota, and this machine's cgroups cannot be written")
            return layout
        try:
            layout.groups = self._groups(target, quota)
        except OSError:
            CpuControl.release(Layout(self.method, [], [], groups=self._made))
            # A kernel that lists the controllers but refuses us: affinity still works.
            self.method = layout.method = "affinity"
            if quota is not None:
                raise RuntimeError(
                    f"cpus = {cpus:g} needs a CPU quota, and this machine's cgroups cannot be written"
                ) from None
        return layout

    def _groups(self, target: list[int], quota: float | None) -> list[str]:
        self.counter += 1
        name = f"corebench-{os.getpid()}-{self.counter}"
        self._made: list[str] = []  # for cleaning up a half-made layout
        if self.method == "cgroup2":
            (CGROUP / "cgroup.subtree_control").write_text("+cpuset +cpu")
            g = CGROUP / name
            g.mkdir()
            self._made.append(str(g))
            (g / "cpuset.cpus").write_text(_cpulist(target))
            if quota is not None:
                (g / "cpu.max").write_text(f"{round(quota * PERIOD_US)} {PERIOD_US}")
            return [str(g)]
        cs, cpu = CGROUP / "cpuset" / name, CGROUP / "cpu" / name
        cs.mkdir()
        self._made.append(str(cs))
        (cs / "cpuset.mems").write_text((CGROUP / "cpuset" / "cpuset.mems").read_text())
        (cs / "cpuset.cpus").write_text(_cpulist(target))
        groups = [str(cs)]
        if quota is not None:
            cpu.mkdir()
            self._made.append(str(cpu))
            (cpu / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (cpu / "cpu.cfs_quota_us").write_text(str(round(quota * PERIOD_US)))
            groups.append(str(cpu))
        return groups

    @staticmethod
    def release(layout: Layout) -> None:
        """Removes the target's cgroups; a group is busy until the last
        killed process in it is gone, so removal is retried for a moment."""
        for g in layout.groups:
            for _ in range(50):
                try:
                    os.rmdir(g)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)
