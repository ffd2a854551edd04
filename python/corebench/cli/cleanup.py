"""`corebench cleanup`: what a killed corebench left behind (loop-mounted
filesystem images of targets, and the targets still using them), stopped,
unmounted, detached and deleted. A running corebench's images are left be."""

from __future__ import annotations

from pathlib import Path

from corebench.cli import app, fail
from corebench.targets import filesystem


def _orphans() -> list[dict[str, str]]:
    return [left for left in filesystem.leftovers() if filesystem.owner(Path(left["image"])) is None]


@app.command("cleanup")
def cleanup() -> None:
    """Stop the targets, unmount and delete the filesystem images a killed corebench left behind."""
    busy = sorted({o for left in filesystem.leftovers() if (o := filesystem.owner(Path(left["image"])))})
    if busy:
        print(f"Left alone: the images of the running corebench {', '.join(map(str, busy))}.")
    if not _orphans():
        print("Nothing to clean up: no filesystem image of a killed corebench is mounted or attached.")
        return
    try:
        found = filesystem.cleanup()
    except OSError as e:
        raise fail(f"cleanup: {e}; run it as root") from None
    for left in found:
        where = f" (mounted on {left['mounted_on']})" if left["mounted_on"] else ""
        stopped = f"; stopped the processes using it: {left['stopped']}" if left["stopped"] else ""
        print(f"Removed {left['device']}: {left['image']}{where}{stopped}")
    still = _orphans()
    if still:
        raise fail(f"{len(still)} image(s) still attached, e.g. {still[0]['device']}; is a process using them?", 1)
