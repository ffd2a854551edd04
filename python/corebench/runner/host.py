"""The host facts stored with an experiment: what the numbers were measured on."""

from __future__ import annotations

import os
import platform
from typing import Any

import psutil

from corebench import __version__
from corebench.system.topology import Topology


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


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


def facts(cpu_method: str, server: str | None) -> dict[str, Any]:
    freq = psutil.cpu_freq()
    return {
        "cpu_model": _cpu_model(),
        "cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "mhz": round(freq.current, 1) if freq else None,
        "kernel": platform.release(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "corebench_version": __version__,
        "cpu_control": cpu_method,
        "server_version": server,
        "memory_bytes": psutil.virtual_memory().total,
    }


DROP_CACHES = "/proc/sys/vm/drop_caches"


def drop_caches() -> None:
    """Writes dirty pages out, then drops the clean page cache, dentries and
    inodes (3: both kinds; the kernel's Documentation/admin-guide/sysctl/vm.rst)."""
    os.sync()
    with open(DROP_CACHES, "w") as f:
        f.write("3\n")
