"""CPU sets that mean what they say: `cpus = N` is N distinct physical
cores, on one NUMA node where one holds them, and the generator gets only
CPUs whose physical core the target does not use.

Two SMT siblings share one core's execution units and caches: on most
servers the first two CPUs the kernel lists are two cores, but on many
(AMD's numbering, several VMs) they are one core's two threads, and a
"2-CPU" result is then about one core. Spreading a set over NUMA nodes
adds remote memory accesses. So the set is chosen by physical core, and
its siblings and nodes are said with it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from corebench.system.topology import Topology

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
