"""`corebench system`: this machine's CPU topology as the kernel gives it
(sockets, NUMA nodes, physical cores, SMT siblings, shared caches, the
clock governor), the CPU set a plan's `cpus = N` would get; `system check`:
what will make its numbers noisy, each with its fix; `system tune` applies
the fixes, `--reset` undoes them."""

from __future__ import annotations

import json
import os

import typer

from corebench.cli import app
from corebench.errors import UsageError
from corebench.system import check as checks
from corebench.system.topology import ROOT_ENV, Topology, TopologyError, apart, choose, format_list, read

system_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
app.add_typer(system_app, name="system")

CPUS_HELP = "The target's cores, as a plan's cpus = N takes them (default: 1)."


def _topology() -> Topology:
    try:
        return read(allowed=sorted(os.sched_getaffinity(0)) if not os.environ.get(ROOT_ENV) else None)
    except TopologyError as e:
        raise UsageError(f"{e} ({ROOT_ENV} names another sysfs root)") from None


def _target(t: Topology, cpus: int | None) -> list[int]:
    if cpus is not None and cpus > len(t.cpus):
        raise UsageError(f"--cpus {cpus}: this machine lets corebench use {len(t.cpus)} CPUs")
    return choose(t, cpus or 1).cpus


@system_app.callback(invoke_without_command=True)
def system(
    ctx: typer.Context,
    cpus: int | None = typer.Option(None, "--cpus", min=1, help="The CPU set a target of this many cores would get."),
    smt: str = typer.Option("off", "--smt", help="off: one thread per physical core; on: with its sibling threads."),
    numa: str = typer.Option("one", "--numa", help="one: on one NUMA node where it fits; spread: over the nodes."),
    as_json: bool = typer.Option(False, "--json", help="JSON instead of text."),
) -> None:
    """This machine's CPU topology, and the CPU set each `cpus` level would get (check, tune: its noise)."""
    if ctx.invoked_subcommand is not None:
        return
    if smt not in ("off", "on"):
        raise UsageError(f"--smt {smt!r}: give off or on")
    if numa not in ("one", "spread"):
        raise UsageError(f"--numa {numa!r}: give one or spread")
    t = _topology()
    _target(t, cpus)
    levels = [cpus] if cpus is not None else _levels(len(t.cores))
    sets = {n: choose(t, n, "on" if smt == "on" else "off", "spread" if numa == "spread" else "one") for n in levels}
    if as_json:
        cpu_rows = [
            {
                "cpu": c.id,
                "socket": c.package,
                "core": c.core,
                "node": c.node,
                "siblings": list(c.siblings),
                "l3": list(c.l3),
            }
            for c in t.cpus
        ]
        set_rows = [
            {"cpus_asked": n, "smt": smt, "numa": numa, **s.to_json(), "generator": apart(t, s.cpus)}
            for n, s in sets.items()
        ]
        out = {"root": t.root, "summary": t.describe(), "governor": t.governor, "max_mhz": t.max_mhz}
        print(json.dumps(out | {"cpus": cpu_rows, "sets": set_rows}, indent=2))
        return
    print(t.describe())
    print(f"{'cpu':>4} {'socket':>6} {'node':>4} {'core':>5}  siblings  last-level cache")
    for c in t.cpus:
        siblings, l3 = format_list(list(c.siblings)), format_list(list(c.l3)) or "-"
        print(f"{c.id:>4} {c.package:>6} {c.node:>4} {c.core:>5}  {siblings:<8}  {l3}")
    print(f"\nCPU sets (smt {smt}, numa {numa}): target | generator (no core shared with the target)")
    for n, s in sets.items():
        gen = format_list(apart(t, s.cpus)) or "none left: shared"
        note = f"  ({'; '.join(s.notes)})" if s.notes else ""
        print(f"  cpus = {n}: {format_list(s.cpus)} ({s.cores} core(s), node(s) {format_list(s.nodes)}) | {gen}{note}")


@system_app.command("check")
def check(cpus: int | None = typer.Option(None, "--cpus", min=1, help=CPUS_HELP)) -> None:
    """What will make this machine's numbers noisy or unlike production, each with its fix."""
    t = _topology()
    target = _target(t, cpus)
    print(f"{t.describe()}; target CPUs {format_list(target)}")
    for c in checks.check(t, target):
        print(c.line())


@system_app.command("tune")
def tune(
    cpus: int | None = typer.Option(None, "--cpus", min=1, help=CPUS_HELP),
    smt_off: bool = typer.Option(False, "--smt-off", help="Also turn SMT off (every sibling thread offline)."),
    reset: bool = typer.Option(False, "--reset", help="Put back every setting the last tune changed."),
) -> None:
    """Apply the fixes this machine has knobs for (governor, turbo, IRQs off the target's CPUs; SMT with --smt-off)."""
    roots = [bool(os.environ.get(ROOT_ENV)), bool(os.environ.get(checks.PROC_ENV))]
    if any(roots) and not all(roots):
        # One tree of a copy and the other the machine's would write this machine's settings from the copy's CPUs.
        raise UsageError(f"system tune: set both {ROOT_ENV} and {checks.PROC_ENV}, or neither")
    if os.geteuid() != 0 and not any(roots):
        raise UsageError("system tune writes kernel settings: run it as root")
    try:
        if reset:
            restored = checks.reset()
            print("\n".join(f"restored {d}" for d in restored) if restored else "Nothing to reset: no tune is saved.")
            return
        t = _topology()
        done, failed = checks.tune(t, _target(t, cpus), smt_off=smt_off)
    except checks.TuneError as e:
        raise UsageError(f"system tune: {e}; nothing was changed") from None
    for line in done + [f"could not: {f}" for f in failed]:
        print(line)
    if not done and not failed:
        print("Nothing to tune: this machine has no knob left to set (see corebench system check).")
    elif done:
        print(f"Saved what each setting held in {checks.state_file()}: corebench system tune --reset puts it back.")


def _levels(cores: int) -> list[int]:
    """1, 2, 4, ... up to the machine's physical cores."""
    out, n = [], 1
    while n <= cores:
        out.append(n)
        n *= 2
    if out[-1] != cores:
        out.append(cores)
    return out
