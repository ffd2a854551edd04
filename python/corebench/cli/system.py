"""`corebench system`: this machine's CPU topology as the kernel gives it
(sockets, NUMA nodes, physical cores, SMT siblings, shared caches, the
clock governor), and the CPU set a plan's `cpus = N` would get."""

from __future__ import annotations

import json
import os

import typer

from corebench.cli import app
from corebench.errors import UsageError
from corebench.system.cpusets import apart, choose
from corebench.system.topology import ROOT_ENV, TopologyError, format_list, read


@app.command("system")
def system(
    cpus: int | None = typer.Option(None, "--cpus", min=1, help="The CPU set a target of this many cores would get."),
    smt: str = typer.Option("off", "--smt", help="off: one thread per physical core; on: with its sibling threads."),
    numa: str = typer.Option("one", "--numa", help="one: on one NUMA node where it fits; spread: over the nodes."),
    as_json: bool = typer.Option(False, "--json", help="JSON instead of text."),
) -> None:
    """This machine's CPU topology, and the CPU set each `cpus` level would get."""
    if smt not in ("off", "on"):
        raise UsageError(f"--smt {smt!r}: give off or on")
    if numa not in ("one", "spread"):
        raise UsageError(f"--numa {numa!r}: give one or spread")
    try:
        t = read(allowed=sorted(os.sched_getaffinity(0)) if not os.environ.get(ROOT_ENV) else None)
    except TopologyError as e:
        raise UsageError(f"{e} ({ROOT_ENV} names another sysfs root)") from None
    if cpus is not None and cpus > len(t.cpus):
        raise UsageError(f"--cpus {cpus}: this machine lets corebench use {len(t.cpus)} CPUs")
    levels = [cpus] if cpus is not None else _levels(len(t.cores))
    sets = {n: choose(t, n, "on" if smt == "on" else "off", "spread" if numa == "spread" else "one") for n in levels}
    if as_json:
        out = {
            "root": t.root,
            "summary": t.describe(),
            "governor": t.governor,
            "max_mhz": t.max_mhz,
            "cpus": [
                {
                    "cpu": c.id,
                    "socket": c.package,
                    "core": c.core,
                    "node": c.node,
                    "siblings": list(c.siblings),
                    "l3": list(c.l3),
                }
                for c in t.cpus
            ],
            "sets": [
                {"cpus_asked": n, "smt": smt, "numa": numa, **s.to_json(), "generator": apart(t, s.cpus)}
                for n, s in sets.items()
            ],
        }
        print(json.dumps(out, indent=2))
        return
    print(t.describe())
    print(f"{'cpu':>4} {'socket':>6} {'node':>4} {'core':>5}  siblings  last-level cache")
    for c in t.cpus:
        print(
            f"{c.id:>4} {c.package:>6} {c.node:>4} {c.core:>5}  {format_list(list(c.siblings)):<8}  "
            f"{format_list(list(c.l3)) or '-'}"
        )
    print(f"\nCPU sets (smt {smt}, numa {numa}): target | generator (no core shared with the target)")
    for n, s in sets.items():
        gen = apart(t, s.cpus)
        note = f"  ({'; '.join(s.notes)})" if s.notes else ""
        print(
            f"  cpus = {n}: {format_list(s.cpus)} ({s.cores} core(s), node(s) {format_list(s.nodes)}) | "
            f"{format_list(gen) or 'none left: shared'}{note}"
        )


def _levels(cores: int) -> list[int]:
    """1, 2, 4, ... up to the machine's physical cores."""
    out, n = [], 1
    while n <= cores:
        out.append(n)
        n *= 2
    if out[-1] != cores:
        out.append(cores)
    return out
