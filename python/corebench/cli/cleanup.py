"""`corebench cleanup`: what a killed corebench left behind (its targets and
services still running, its loop-mounted filesystem images, its folders,
its cgroups), stopped, unmounted, detached and deleted. Only what a
corebench recorded as its own: the processes of the sessions it started
(`targets.owned`), the images in the experiment folders it made. A running
corebench's are left be, and so is a user's file or shell that merely
looks like ours or works in our folders."""

from __future__ import annotations

import shutil
from pathlib import Path

from corebench.cli import app, fail
from corebench.targets import cpus, filesystem, owned


@app.command("cleanup")
def cleanup() -> None:
    """Stop the targets and services, unmount the images and delete the folders a killed corebench left."""
    busy = sorted({o for left in filesystem.leftovers() if (o := filesystem.owner(Path(left["image"])))})
    if busy:
        print(f"Left alone: the images of the running corebench {', '.join(map(str, busy))}.")
    for left in filesystem.foreign():
        print(f"Left alone: {left['image']} ({left['device']}): named like corebench's, but no corebench made it.")
    dead, groups = filesystem.dead_work_dirs(), cpus.leftover_groups()
    if not filesystem.orphans() and not dead and not groups:
        print("Nothing to clean up: no process, folder, cgroup or filesystem image of a killed corebench is left.")
        return
    try:
        found = filesystem.cleanup()
        for left in found:
            where = f" (mounted on {left['mounted_on']})" if left["mounted_on"] else ""
            stopped = f"; stopped the processes it started there: {left['stopped']}" if left["stopped"] else ""
            print(f"Removed {left['device']}: {left['image']}{where}{stopped}")
        for work_dir in dead:
            pids = owned.stop(work_dir)
            if pids:
                print(f"Stopped the processes a killed corebench started in {work_dir}: {', '.join(map(str, pids))}")
            shutil.rmtree(work_dir, ignore_errors=True)
            print(f"Removed {work_dir}")
        if groups:
            pids = cpus.remove_groups(groups)
            killed = f"; stopped the processes in them: {', '.join(map(str, pids))}" if pids else ""
            print(f"Removed {len(groups)} cgroup(s) of a killed corebench{killed}")
    except OSError as e:
        raise fail(f"cleanup: {e}; run it as root") from None
    still = filesystem.orphans()
    if still:
        raise fail(f"{len(still)} image(s) still attached, e.g. {still[0]['device']}; is a process using them?", 1)
