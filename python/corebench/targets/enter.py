"""`python -m corebench.targets.enter LAYOUT_JSON -- COMMAND...`: puts itself
in the target's cgroups and on its CPUs, then becomes the command (exec),
so every process the target forks inherits the placement. A separate
program rather than a `preexec_fn`: corebench runs threads (the live
display), and Python code between fork and exec in a threaded process can
deadlock."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m corebench.targets.enter LAYOUT_JSON -- COMMAND...", file=sys.stderr)
        return 2
    layout = json.loads(argv[0])
    try:
        # The CPU groups, then the measuring ones (on cgroup v2 a leaf of the first).
        for group in [*layout.get("groups", []), *layout.get("accounting", [])]:
            Path(group, "cgroup.procs").write_text(str(os.getpid()))
        if layout.get("method") not in (None, "none"):
            os.sched_setaffinity(0, layout["target_cpus"])
        os.execvp(argv[2], argv[2:])
    except OSError as e:
        print(f"corebench: cannot start {argv[2]} on its CPUs: {e}", file=sys.stderr)
        return 127
    return 0  # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
