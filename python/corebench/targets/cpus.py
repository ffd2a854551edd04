"""CPU control for the target: whole cores through a cgroup cpuset (v2 or
v1, whichever this kernel offers and lets us write), otherwise CPU
affinity; fractional CPUs through a CPU quota (cgroup v2 cpu.max or v1
cfs_quota_us). A service with cores of its own gets the next ones; the
generator gets the cores nobody else has.

Each process group (the target, each service) also joins cgroups of its
own that only measure it (monitor/cgroups.py): on cgroup v2 a leaf under
its CPU group, on a v1 + v2 hybrid a group in the v2 hierarchy (cpu.stat,
io.pressure)."""

from __future__ import annotations

import contextlib
import math
import os
import re
import signal
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from corebench.store import RunLayout
from corebench.system.topology import Numa, Smt, Topology, TopologyError, apart_of, choose, share_cores
from corebench.system.topology import read as read_topology
from corebench.targets import owned

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
    # Groups it joins only to be measured apart from the other processes.
    accounting: list[str] = field(default_factory=list)
    # Each service's placement: its own cores, or the target's.
    services: dict[str, Layout] = field(default_factory=dict)
    # The physical cores and NUMA nodes the target's CPUs are on (None, []
    # where the topology could not be read).
    target_physical_cores: int | None = None
    target_nodes: list[int] = field(default_factory=list)
    # The physical cores asked for (cpus = N, rounded up): more than
    # target_physical_cores where the machine had too few and siblings filled in.
    cores_asked: int | None = None
    # The host the target ran on, when not this machine (a Ray node's address).
    target_host: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def record(self) -> RunLayout:
        """As stored with each run."""
        return RunLayout.model_validate(asdict(self))

    def of(self, service: str) -> Layout:
        return self.services.get(service, self)


def online_cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


def check(
    cpus: float | None,
    online: list[int],
    services: Mapping[str, float] | None = None,
    smt: Smt = "off",
    numa: Numa = "one",
    topo: Topology | None = None,
) -> None:
    """Refuses a layout this machine cannot give (ValueError, in words)."""
    own = dict(services or {})
    if cpus is not None and (smt != "off" or numa != "one"):
        _place(cpus, online, own, topo, smt, numa)
    if cpus is not None and cpus > len(online):
        raise ValueError(f"cpus = {cpus:g} is more than the {len(online)} CPUs this machine lets corebench use")
    need = math.ceil(cpus or 0) + sum(math.ceil(c) for c in own.values())
    if own and need > len(online):
        each = ", ".join(f"{n} {c:g}" for n, c in own.items())
        raise ValueError(
            f"cpus = {cpus:g} for the target and {each} for its services need {need} cores; this machine lets "
            f"corebench use {len(online)}"
        )


def topology(online: list[int]) -> Topology | None:
    """This machine's topology over the CPUs corebench may use; None where
    the kernel does not give it (the CPUs are then taken in their order)."""
    try:
        return read_topology(allowed=online)
    except (TopologyError, OSError):
        return None


def plan_layout(
    cpus: float | None,
    online: list[int],
    services: Mapping[str, float] | None = None,
    topo: Topology | None = None,
    smt: Smt = "off",
    numa: Numa = "one",
) -> tuple[list[int], list[int], float | None]:
    """The target takes ceil(cpus) distinct physical cores (one NUMA node
    first, `system.topology`; with `smt` on, with their sibling threads),
    services with cores of their own the next ones, the generator the CPUs
    on no core of theirs (all of them, shared, when nothing is left)."""
    if cpus is None:
        return online, online, None
    target, _, used = _place(cpus, online, services or {}, topo, smt, numa)
    quota = cpus if cpus != math.ceil(cpus) else None
    # Off the target's cores; where none is left, its free siblings; else shared.
    rest = apart_of(topo, online, used) or [c for c in online if c not in used]
    return target, rest or online, quota


def _service_cores(
    cpus: float,
    online: list[int],
    services: Mapping[str, float],
    topo: Topology | None = None,
    smt: Smt = "off",
    numa: Numa = "one",
) -> dict[str, list[int]]:
    return _place(cpus, online, services, topo, smt, numa)[1]


def _place(
    cpus: float, online: list[int], services: Mapping[str, float], topo: Topology | None, smt: str, numa: str
) -> tuple[list[int], dict[str, list[int]], list[int]]:
    """The target's CPUs, each service's, and all of them: each set on
    physical cores none of the others uses (`system.topology.choose`)."""
    whole = math.ceil(cpus)
    asked = (smt, numa) != ("off", "one")
    if topo is None:
        if asked:
            raise ValueError(f"smt = {smt!r}, numa = {numa!r} need the CPU topology, which this kernel does not give")
        # The CPUs in their order: the target first, each service next.
        at, own = whole, {}
        for name, c in services.items():
            own[name] = online[at : at + math.ceil(c)]
            at += math.ceil(c)
        return online[:whole], own, online[:at]
    taken: set[int] = set()
    placed = []
    for n in [whole, *(math.ceil(c) for c in services.values())]:
        s = choose(topo, n, "on" if smt == "on" else "off", "spread" if numa == "spread" else "one", taken)
        if s.notes and asked:
            raise ValueError(f"cpus = {n} with smt = {smt!r}: {s.notes[0]}")
        placed.append(s.cpus)
        taken |= set(s.cpus)
    return placed[0], dict(zip(services, placed[1:], strict=True)), sorted(taken)


def _writable_v2() -> bool:
    try:
        controllers = (CGROUP / "cgroup.controllers").read_text().split()
    except OSError:
        return False
    return "cpuset" in controllers and "cpu" in controllers and os.access(CGROUP / "cgroup.subtree_control", os.W_OK)


def _writable_v1() -> bool:
    return os.access(CGROUP / "cpuset" / "cpuset.cpus", os.W_OK) and os.access(CGROUP / "cpu", os.W_OK)


# A v1 + v2 hybrid mounts the v2 hierarchy here, without controllers: its
# cpu.stat and io.pressure still measure each group.
V2_HYBRID = CGROUP / "unified"


def _measuring_parents(sub: Layout) -> list[str]:
    if (CGROUP / "cgroup.controllers").exists():  # cgroup v2 alone
        return [sub.groups[0]] if sub.method == "cgroup2" and sub.groups else [str(CGROUP)]
    return [str(V2_HYBRID)] if (V2_HYBRID / "cgroup.procs").exists() else []


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
        self.topology = topology(self.online)

    def layout(
        self,
        cpus: float | None,
        services: Mapping[str, float | None] | None = None,
        smt: Smt = "off",
        numa: Numa = "one",
    ) -> Layout:
        """Where the target and each of `services` (name: its own cpus, or
        None to share the target's) run, their groups made; `smt`, `numa`:
        `system.topology.choose`."""
        online, names = self.online, list(services or {})
        own = {n: c for n, c in (services or {}).items() if c is not None}
        check(cpus, online, own, smt, numa, self.topology)
        target, generator, quota = plan_layout(cpus, online, own, self.topology, smt, numa)
        self._made: list[str] = []  # for cleaning up a half-made layout
        if cpus is None:
            layout = Layout("none", target, generator, None, shared=True)
        else:
            shared = share_cores(self.topology, target, generator)
            layout = Layout(self.method, target, generator, quota, shared=shared)
        if self.topology is not None:
            on = [c for c in self.topology.cpus if c.id in target]
            layout.target_physical_cores = len({c.physical for c in on})
            layout.cores_asked = math.ceil(cpus) if cpus is not None else None
            layout.target_nodes = sorted({c.node for c in on})
        try:
            if layout.method in ("cgroup2", "cgroup1"):
                layout.groups = self._groups(target, quota)
            for name, cores in _service_cores(cpus or 0, online, own, self.topology, smt, numa).items():
                c = own[name]
                sub = Layout(layout.method, cores, generator, c if c != math.ceil(c) else None, layout.shared)
                if sub.method in ("cgroup2", "cgroup1"):
                    sub.groups = self._groups(cores, sub.quota_cpus)
                layout.services[name] = sub
        except OSError:
            self.release(Layout(self.method, [], [], groups=self._made))
            # A kernel that lists the controllers but refuses us: affinity still works.
            self.method = layout.method = "affinity"
            layout.groups, layout.services = [], {}
        if layout.method == "affinity":
            self._affinity(layout, cpus, own, online, (self.topology, smt, numa))
        for name in names:
            layout.services.setdefault(name, Layout(**{**asdict(layout), "services": {}}))
        self._accounting(layout, names)
        return layout

    @staticmethod
    def _affinity(
        layout: Layout,
        cpus: float | None,
        own: dict[str, float],
        online: list[int],
        how: tuple[Topology | None, Smt, Numa],
    ) -> None:
        if layout.quota_cpus is not None or any(c != math.ceil(c) for c in own.values()):
            raise RuntimeError(f"cpus = {cpus:g} needs a CPU quota, and this machine's cgroups cannot be written")
        for name, cores in _service_cores(cpus or 0, online, own, *how).items():
            layout.services[name] = Layout("affinity", cores, layout.generator_cpus, None, layout.shared)

    def _accounting(self, layout: Layout, services: list[str]) -> None:
        """A measuring group for the target and each service, where this
        machine lets us make one; measuring is best effort, never a failure."""
        self.counter += 1
        base = f"corebench-{os.getpid()}-{self.counter}"
        for who, sub in [("target", layout), *((n, layout.services[n]) for n in services)]:
            sub.accounting = []
            for parent in _measuring_parents(sub):
                g = Path(parent) / (who if parent in sub.groups else f"{base}-{who}")
                # enter.py joins the CPU groups first, then these: on cgroup v2,
                # where a process is in one group, it ends in the leaf under its CPU group.
                with contextlib.suppress(OSError):
                    g.mkdir()
                    sub.accounting.append(str(g))

    def _groups(self, target: list[int], quota: float | None) -> list[str]:
        self.counter += 1
        name = f"corebench-{os.getpid()}-{self.counter}"
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
        """Removes the target's and its services' cgroups, leaves first; a
        group is busy until the last killed process in it is gone, so
        removal is retried for a moment."""
        subs = [layout, *layout.services.values()]
        made = [g for sub in subs for g in sub.accounting] + [g for sub in subs for g in sub.groups]
        for g in dict.fromkeys(made):
            for _ in range(50):
                try:
                    os.rmdir(g)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


_OURS = re.compile(r"corebench-(\d+)-\d+(-\w+)?$")


def leftover_groups() -> list[Path]:
    """The cgroups of corebench processes that are gone (killed before they
    removed them), leaves before their parents."""
    roots = [CGROUP, CGROUP / "cpuset", CGROUP / "cpu", V2_HYBRID]
    found = []
    for root in roots:
        with contextlib.suppress(OSError):
            for g in root.iterdir():
                m = _OURS.match(g.name)
                if m and g.is_dir() and not owned.alive(int(m.group(1))):
                    found += [*(c for c in g.iterdir() if (c / "cgroup.procs").exists()), g]
    return found


def remove_groups(groups: list[Path]) -> list[int]:
    """Kills what still runs in `groups` (a killed corebench's targets),
    then removes them; returns the pids killed."""
    pids = []
    for g in groups:
        with contextlib.suppress(OSError, ValueError):
            pids += [int(p) for p in (g / "cgroup.procs").read_text().split()]
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    CpuControl.release(Layout("cleanup", [], [], groups=[str(g) for g in groups]))
    return pids
