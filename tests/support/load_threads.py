"""When a corebench process's load began: its engine threads, by name."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest


def loading(proc: subprocess.Popen) -> float | None:
    """When the engine's load threads appeared; None if the process ended
    first (refused before any load, or a run too short to see)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            tasks = os.listdir(f"/proc/{proc.pid}/task")
            names = [Path(f"/proc/{proc.pid}/task/{t}/comm").read_text() for t in tasks]
        except OSError:
            names = []
        if any(n.startswith("corebench-load") for n in names):
            return time.monotonic()
        time.sleep(0.01)
    if proc.poll() is None:
        pytest.fail("no load started within 20 s")
    return None
