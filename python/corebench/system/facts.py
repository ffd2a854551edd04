"""What a machine is: the facts stored with an experiment, of the machine
that ran the plan and, where the target ran on a Ray node, of that node."""

from __future__ import annotations

import os
import platform
from typing import Any

import psutil

from corebench import __version__


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


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


def boot_id() -> str:
    """This host's boot id: two processes with the same one run on one machine."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""
