"""What a killed corebench left on this machine, stopped and removed
(`corebench cleanup`, here or on each node of a Ray cluster): only what a
corebench recorded as its own (`targets.owned`, the experiment folders it
made, its cgroups). A running corebench's are left be."""

from __future__ import annotations

import shutil
from pathlib import Path

from corebench.targets import cpus, filesystem, owned


class SweepError(Exception):
    """The sweep could not finish: what it said so far, and why."""

    def __init__(self, said: list[str], why: str) -> None:
        super().__init__(why)
        self.said = said


def sweep() -> list[str]:
    """Stops, unmounts and removes a killed corebench's leftovers; returns
    what it did, a line each. Raises SweepError (with the lines so far)
    where it could not."""
    said = []
    busy = sorted({o for left in filesystem.leftovers() if (o := filesystem.owner(Path(left["image"])))})
    if busy:
        said.append(f"Left alone: the images of the running corebench {', '.join(map(str, busy))}.")
    for left in filesystem.foreign():
        said.append(
            f"Left alone: {left['image']} ({left['device']}): named like corebench's, but no corebench made it."
        )
    dead, groups = filesystem.dead_work_dirs(), cpus.leftover_groups()
    if not filesystem.orphans() and not dead and not groups:
        said.append(
            "Nothing to clean up: no process, folder, cgroup or filesystem image of a killed corebench is left."
        )
        return said
    try:
        for left in filesystem.cleanup():
            where = f" (mounted on {left['mounted_on']})" if left["mounted_on"] else ""
            stopped = f"; stopped the processes it started there: {left['stopped']}" if left["stopped"] else ""
            said.append(f"Removed {left['device']}: {left['image']}{where}{stopped}")
        for work_dir in dead:
            pids = owned.stop(work_dir)
            if pids:
                said.append(
                    f"Stopped the processes a killed corebench started in {work_dir}: {', '.join(map(str, pids))}"
                )
            shutil.rmtree(work_dir, ignore_errors=True)
            said.append(f"Removed {work_dir}")
        if groups:
            pids = cpus.remove_groups(groups)
            killed = f"; stopped the processes in them: {', '.join(map(str, pids))}" if pids else ""
            said.append(f"Removed {len(groups)} cgroup(s) of a killed corebench{killed}")
    except OSError as e:
        raise SweepError(said, f"cleanup: {e}; run it as root") from None
    still = filesystem.orphans()
    if still:
        raise SweepError(
            said, f"{len(still)} image(s) still attached, e.g. {still[0]['device']}; is a process using them?"
        )
    return said
