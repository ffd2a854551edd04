"""This machine before and during a plan: what `system check` warns of, and
the page cache dropped between runs (the facts stored with an experiment:
system.facts)."""

from __future__ import annotations

import os

from corebench.system.topology import Topology

# Short: the monitor measures steal and others' CPU during every run; this
# is only the warning before the first.
CHECK_SAMPLE_S = 0.25


def machine_checks(topo: Topology | None, target: list[int]) -> list[str]:
    """What `corebench system check` warns of on this machine, for a target
    on `target`, one line each with its fix (system.check)."""
    if topo is None:
        return []
    from corebench.system import check

    return [c.line().strip() for c in check.check(topo, target, sample_s=CHECK_SAMPLE_S) if c.ok is False]


DROP_CACHES = "/proc/sys/vm/drop_caches"


def drop_caches() -> None:
    """Writes dirty pages out, then drops the clean page cache, dentries and
    inodes (3: both kinds; the kernel's Documentation/admin-guide/sysctl/vm.rst)."""
    os.sync()
    with open(DROP_CACHES, "w") as f:
        f.write("3\n")
