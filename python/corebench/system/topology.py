"""What "a core" is on this machine, read from the kernel: sockets, NUMA
nodes, physical cores and their SMT siblings, the caches they share, and
the clock governor where cpufreq is there (many VMs have none).

The sysfs root is a setting (COREBENCH_SYSFS_ROOT, default /sys) so that
trees recorded on other machines can be read in tests
(tests/data/sysfs/). The files are the kernel's ABI
(Documentation/ABI/stable/sysfs-devices-system-cpu,
Documentation/admin-guide/cputopology.rst): topology/physical_package_id,
topology/core_id, topology/thread_siblings_list, cache/index*/level and
shared_cpu_list, node/node*/cpulist, cpu/online.

The CPU sets chosen on it mean what they say: `cpus = N` is N distinct
physical cores, on one NUMA node where one holds them, and the generator
gets only CPUs whose physical core the target does not use.

Two SMT siblings share one core's execution units and caches: on most
servers the first two CPUs the kernel lists are two cores, but on many
(AMD's numbering, several VMs) they are one core's two threads, and a
"2-CPU" result is then about one core. Spreading a set over NUMA nodes
adds remote memory accesses. So the set is chosen by physical core, and
its siblings and nodes are said with it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

ROOT_ENV = "COREBENCH_SYSFS_ROOT"


class TopologyError(Exception):
    """The tree cannot be read as a CPU topology."""


def sysfs_root() -> Path:
    return Path(os.environ.get(ROOT_ENV) or "/sys")


def parse_list(text: str) -> list[int]:
    """A kernel CPU list, "0-3,8,10-11" (cputopology.rst), as numbers."""
    out: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, dash, hi = part.partition("-")
        try:
            out += list(range(int(lo), int(hi) + 1)) if dash else [int(lo)]
        except ValueError:
            raise TopologyError(f"{text.strip()!r} is not a CPU list") from None
    return out


def format_list(cpus: list[int]) -> str:
    """The kernel's own notation: runs as ranges."""
    out: list[str] = []
    run: list[int] = []
    for c in sorted(cpus):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [c]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


@dataclass(frozen=True)
class Cpu:
    """One logical CPU (a hardware thread)."""

    id: int
    package: int
    core: int  # core_id, unique within its package only
    node: int
    siblings: tuple[int, ...]  # the threads of its physical core, itself included
    l3: tuple[int, ...] = ()  # the CPUs sharing its last-level cache

    @property
    def physical(self) -> tuple[int, int]:
        """Its physical core, unique on the machine."""
        return (self.package, self.core)


@dataclass(frozen=True)
class Topology:
    cpus: tuple[Cpu, ...]  # online CPUs, by id
    governor: str | None = None  # cpufreq's scaling governor of cpu0; None without cpufreq
    max_mhz: float | None = None
    root: str = "/sys"
    notes: tuple[str, ...] = field(default=())

    @property
    def packages(self) -> list[int]:
        return sorted({c.package for c in self.cpus})

    @property
    def nodes(self) -> list[int]:
        return sorted({c.node for c in self.cpus})

    @property
    def cores(self) -> list[tuple[int, int]]:
        """Physical cores, in the order of their first CPU."""
        return list(dict.fromkeys(c.physical for c in self.cpus))

    @property
    def smt(self) -> bool:
        return any(len(c.siblings) > 1 for c in self.cpus)

    def cpu(self, n: int) -> Cpu:
        return next(c for c in self.cpus if c.id == n)

    def threads(self, core: tuple[int, int], among: set[int] | None = None) -> list[int]:
        return [c.id for c in self.cpus if c.physical == core and (among is None or c.id in among)]

    def describe(self) -> str:
        """One line: "2 sockets, 2 NUMA nodes, 16 cores, 32 CPUs (SMT: 2 threads per core)"."""
        per = max((len(c.siblings) for c in self.cpus), default=1)
        smt = f"SMT: {per} threads per core" if per > 1 else "no SMT"
        clock = f"; governor {self.governor}" if self.governor else "; no cpufreq (clock not readable here)"
        return (
            f"{len(self.packages)} socket(s), {len(self.nodes)} NUMA node(s), {len(self.cores)} physical cores, "
            f"{len(self.cpus)} CPUs ({smt}){clock}"
        )


def read(root: Path | None = None, allowed: list[int] | None = None) -> Topology:
    """The topology under `root` (default: sysfs_root()); `allowed`: only
    these CPUs (this process's affinity), the others left out."""
    root = root or sysfs_root()
    base = root / "devices" / "system" / "cpu"
    online = parse_list(_text(base / "online")) if (base / "online").exists() else _listed(base)
    if not online:
        raise TopologyError(f"{base}: no online CPU")
    nodes = _nodes(root / "devices" / "system" / "node")
    cpus = []
    for n in online:
        if allowed is not None and n not in allowed:
            continue
        d = base / f"cpu{n}" / "topology"
        if not d.is_dir():
            raise TopologyError(f"{d}: missing (is {root} a sysfs tree?)")
        siblings = tuple(parse_list(_text(d / "thread_siblings_list"))) or (n,)
        cpus.append(
            Cpu(
                id=n,
                package=max(0, _int(d / "physical_package_id", 0)),
                core=_int(d / "core_id", n),
                node=nodes.get(n, 0),
                siblings=siblings,
                l3=tuple(_last_cache(base / f"cpu{n}" / "cache")),
            )
        )
    freq = base / "cpu0" / "cpufreq"
    khz = _int(freq / "cpuinfo_max_freq", 0) if freq.is_dir() else 0
    return Topology(tuple(cpus), governors(root).get(0), khz / 1000 or None, str(root))


def governors(root: Path) -> dict[int, str]:
    """Each CPU's cpufreq governor, by CPU number; empty without cpufreq.
    The one reader of the knob: the topology's description, `system
    check`, `tune` and the clock measured during runs all ask it."""
    out = {}
    for p in sorted((root / "devices" / "system" / "cpu").glob("cpu[0-9]*/cpufreq/scaling_governor")):
        if g := _text(p).strip():
            out[int(p.parent.parent.name[3:])] = g
    return out


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _int(path: Path, default: int) -> int:
    try:
        return int(_text(path).strip())
    except ValueError:
        return default


def _listed(base: Path) -> list[int]:
    return sorted(int(p.name[3:]) for p in base.glob("cpu[0-9]*") if p.name[3:].isdigit())


def _nodes(base: Path) -> dict[int, int]:
    """CPU -> NUMA node; a machine without the node folder is one node."""
    out = {}
    for d in sorted(base.glob("node[0-9]*")):
        for c in parse_list(_text(d / "cpulist")):
            out[c] = int(d.name[4:])
    return out


def _last_cache(base: Path) -> list[int]:
    """The CPUs sharing this CPU's highest-level data or unified cache."""
    best: tuple[int, list[int]] = (0, [])
    for d in base.glob("index[0-9]*"):
        if _text(d / "type").strip() == "Instruction":
            continue
        level = _int(d / "level", 0)
        if level > best[0]:
            best = (level, parse_list(_text(d / "shared_cpu_list")))
    return best[1]


Smt = Literal["off", "on"]
Numa = Literal["one", "spread"]


@dataclass(frozen=True)
class CpuSet:
    cpus: list[int]  # logical CPUs, sorted
    cores: int  # physical cores they are on
    nodes: list[int]  # NUMA nodes they are on
    notes: list[str]  # where the set is not what was asked (too few cores)

    def to_json(self) -> dict[str, object]:
        return {"cpus": self.cpus, "cores": self.cores, "nodes": self.nodes, "notes": self.notes}


def choose(t: Topology, n: int, smt: Smt = "off", numa: Numa = "one", taken: set[int] | None = None) -> CpuSet:
    """N physical cores not in `taken` (their CPUs), with their sibling
    threads when `smt` is on. `numa = "one"`: the first node with N free
    cores, else the nodes with the most free cores first; `"spread"`: one
    core from each node in turn. Where too few physical cores are free,
    the rest are their free siblings, said in `notes`."""
    taken = taken or set()
    free = {core: t.threads(core, {c.id for c in t.cpus} - taken) for core in t.cores}
    free = {core: threads for core, threads in free.items() if threads and not set(t.threads(core)) & taken}
    by_node: dict[int, list[tuple[int, int]]] = {}
    for core in free:
        by_node.setdefault(t.cpu(free[core][0]).node, []).append(core)
    picked = _pick(by_node, n, numa)
    cpus = [c for core in picked for c in (free[core] if smt == "on" else free[core][:1])]
    notes = []
    if len(picked) < n:
        spare = [c.id for c in t.cpus if c.id not in taken and c.id not in cpus]
        extra = spare[: n - len(picked)]
        cpus += extra
        notes.append(
            f"{n} physical cores asked, {len(picked)} free: {len(extra)} more CPU(s) are SMT siblings or shared "
            "cores, which give less than a core each"
        )
    cores = len({t.cpu(c).physical for c in cpus})
    return CpuSet(sorted(cpus), cores, sorted({t.cpu(c).node for c in cpus}), notes)


def _pick(by_node: dict[int, list[tuple[int, int]]], n: int, numa: Numa) -> list[tuple[int, int]]:
    if numa == "spread":
        out: list[tuple[int, int]] = []
        queues = [list(cores) for _, cores in sorted(by_node.items())]
        while len(out) < n and any(queues):
            for q in queues:
                if q and len(out) < n:
                    out.append(q.pop(0))
        return out
    fits = [node for node, cores in sorted(by_node.items()) if len(cores) >= n]
    order = fits[:1] or sorted(by_node, key=lambda node: (-len(by_node[node]), node))
    out = []
    for node in order:
        out += by_node[node][: n - len(out)]
    return out


def apart(t: Topology, used: list[int]) -> list[int]:
    """The CPUs whose physical core none of `used` is on: where the
    generator runs without sharing a core with the target."""
    cores = {t.cpu(c).physical for c in used}
    return [c.id for c in t.cpus if c.physical not in cores]


def apart_of(t: Topology | None, online: list[int], used: list[int]) -> list[int]:
    """The CPUs of `online` on physical cores none of `used` is on."""
    if t is None:
        return [c for c in online if c not in used]
    cores = {t.cpu(c).physical for c in used if any(x.id == c for x in t.cpus)}
    known = {c.id for c in t.cpus}
    return [c for c in online if c in known and t.cpu(c).physical not in cores]


def share_cores(t: Topology | None, a: list[int], b: list[int]) -> bool:
    """Whether some CPU of `a` and some of `b` are on one physical core
    (the same CPU, or SMT siblings)."""
    if set(a) & set(b):
        return True
    if t is None:
        return False
    known = {c.id for c in t.cpus}
    return bool({t.cpu(c).physical for c in a if c in known} & {t.cpu(c).physical for c in b if c in known})
