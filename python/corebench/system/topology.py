"""What "a core" is on this machine, read from the kernel: sockets, NUMA
nodes, physical cores and their SMT siblings, the caches they share, and
the clock governor where cpufreq is there (many VMs have none).

The sysfs root is a setting (COREBENCH_SYSFS_ROOT, default /sys) so that
trees recorded on other machines can be read in tests
(tests/data/sysfs/). The files are the kernel's ABI
(Documentation/ABI/stable/sysfs-devices-system-cpu,
Documentation/admin-guide/cputopology.rst): topology/physical_package_id,
topology/core_id, topology/thread_siblings_list, cache/index*/level and
shared_cpu_list, node/node*/cpulist, cpu/online."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

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
    governor = _text(freq / "scaling_governor").strip() or None if freq.is_dir() else None
    khz = _int(freq / "cpuinfo_max_freq", 0) if freq.is_dir() else 0
    return Topology(tuple(cpus), governor, khz / 1000 or None, str(root))


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
