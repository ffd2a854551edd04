"""Follow a plan through `run_experiment`, as issue 39 asked to count it.

    .venv/bin/python scripts/walk_plan.py run PLAN --store S.sqlite

runs `corebench run` under a profiler (main thread only) and, from
`run_experiment`'s entry to its return, counts the corebench modules whose
code ran, the distinct calls from one module's function to another's, and
the calls that were handed the plan object itself (the old
`plan.Experiment`, today's `ExperimentPlan`): how often the plan is passed
by hand. Then the same for the plan and the companions the issue found
passed with it to every helper (the store, the CPU control, the load
backend, the target host or the running target, the progress, the outcome,
and today's `ExperimentRun`, which holds them), `self` and the entry call
left out: a method's own object is not handed by hand. (The plan's own
count keeps both, as the walks before it counted.) With PYTHONPATH pointing at an older checkout (and its engine
built), the same counts for that version. With WALK_LIST=1 it also lists
the modules and the edges, one a line."""

from __future__ import annotations

import os
import sys
from types import FrameType
from typing import Any

# The plan object by module and name: the old `corebench.plan.Experiment`
# and today's `ExperimentPlan`, not the [experiment] table's model
# (`corebench.plan.model.Experiment`), which shares the old name.
PLAN_TYPES = {("corebench.plan", "Experiment"), ("corebench.plan.experiment", "ExperimentPlan")}

# The companions by class name (each corebench's, old names and new).
COMPANIONS = {
    "Store",
    "CpuControl",
    "Local",
    "Cluster",
    "LocalHost",
    "RayHost",
    "_Running",
    "TargetSession",
    "Progress",
    "Outcome",
    "ExperimentRun",
}

modules: set[str] = set()
edges: set[tuple[str, str]] = set()
plan_calls: list[str] = []
context_calls = 0  # calls handed the plan or a companion
context_args = 0  # how many of them, summed over those calls
inside = 0  # run_experiment frames open


def _module(frame: FrameType) -> str:
    return str(frame.f_globals.get("__name__", ""))


def _kind(value: object) -> tuple[str, str]:
    return type(value).__module__, type(value).__name__


def _ours(frame: FrameType) -> bool:
    return _module(frame).startswith("corebench")


def _context(value: object) -> bool:
    module, name = _kind(value)
    return (module, name) in PLAN_TYPES or (module.startswith("corebench") and name in COMPANIONS)


def _profile(frame: FrameType, event: str, _arg: Any) -> None:
    global inside, context_calls, context_args
    is_entry = frame.f_code.co_name == "run_experiment" and _ours(frame)
    if event == "return" and is_entry:
        inside -= 1
    if event != "call":
        return
    inside += is_entry
    if not inside or not _ours(frame):
        return
    here = _module(frame)
    modules.add(here)
    code = frame.f_code
    args = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
    if any(_kind(frame.f_locals.get(a)) in PLAN_TYPES for a in args):
        plan_calls.append(f"{here}:{code.co_name}")
    handed = sum(_context(frame.f_locals.get(a)) for a in args if a not in ("self", "cls"))
    if handed and not is_entry:
        context_calls += 1
        context_args += handed
    caller = frame.f_back
    while caller is not None and not _ours(caller):
        caller = caller.f_back
    if caller is not None and _module(caller) != here:
        edges.add((f"{_module(caller)}:{caller.f_code.co_name}", f"{here}:{code.co_name}"))


def main() -> None:
    from corebench.cli import main as corebench

    sys.setprofile(_profile)
    try:
        corebench(sys.argv[1:])
    finally:
        sys.setprofile(None)
    plan_modules = {c.split(":")[0] for c in plan_calls}
    print(
        f"modules run: {len(modules)}; cross-module call edges: {len(edges)}; the plan passed as an argument: "
        f"{len(plan_calls)} calls to {len(set(plan_calls))} functions in {len(plan_modules)} modules; "
        f"the plan and its companions: {context_args} handed in {context_calls} calls",
        file=sys.stderr,
    )
    if os.environ.get("WALK_LIST"):
        for m in sorted(modules):
            print("module", m, file=sys.stderr)
        for caller, callee in sorted(edges):
            print("edge", caller, "->", callee, file=sys.stderr)


if __name__ == "__main__":
    main()
