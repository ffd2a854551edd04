#!/usr/bin/env python3
"""What a Ray node costs the host it runs on: its processes' CPU and memory,
idle and while a plan runs, on the target's node (`[target] node`) and on a
load node, in a lab on this machine (corebench.testing.lab: each node in a
network namespace of its own). Each node's processes are found by their
namespace; on the target's node the server under test is left out (it is
the measurement), and the target agent (the Ray actor that runs the
target and the monitor there) is shown apart; on the load node the load
agent (the engine, generating the load) is shown apart from Ray's own.

    .venv/bin/python bench/ray_node_cost.py [--seconds 10]

Needs root and iproute2. The nodes share this machine's CPUs, so the
figures are what Ray's processes use, not what they would cost a
dedicated machine's throughput."""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from corebench.testing.lab import Lab


def _pids(ns: str) -> list[int]:
    out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, check=True).stdout
    return [int(p) for p in out.split()]


def _role(p: psutil.Process) -> str:
    """Which part of the node a process is."""
    line = " ".join(p.cmdline())
    if "corebench" in line and " serve" in line:
        return "server"
    if "TargetAgent" in line or "TargetAgent" in p.name():
        return "target agent"
    if "LoadAgent" in line or "LoadAgent" in p.name():
        return "load agent"
    return "ray"


def measure(ns: str, seconds: float, during: Callable[[], object] | None = None) -> dict[str, tuple[float, float]]:
    """Per role: (cores' worth of CPU over the span, RSS MiB at its end)."""
    procs = {pid: psutil.Process(pid) for pid in _pids(ns)}
    before = {}
    for pid, p in procs.items():
        try:
            t = p.cpu_times()
            before[pid] = t.user + t.system
        except psutil.Error:
            pass
    began = time.monotonic()
    if during is not None:
        during()
    else:
        time.sleep(seconds)
    wall = time.monotonic() - began
    # Processes started meanwhile (the server, workers) count from 0.
    for pid in _pids(ns):
        procs.setdefault(pid, psutil.Process(pid))
    out: dict[str, list[float]] = {}
    for pid, p in procs.items():
        try:
            t = p.cpu_times()
            cpu = t.user + t.system - before.get(pid, 0.0)
            rss = p.memory_info().rss / 2**20
            role = _role(p)
        except psutil.Error:
            continue
        acc = out.setdefault(role, [0.0, 0.0])
        acc[0] += cpu / wall
        acc[1] += rss
    return {k: (v[0], v[1]) for k, v in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    a = ap.parse_args()
    rows: list[tuple[str, str, str, float, float]] = []
    with Lab(nodes={"target": 0, "load": 1}, head_cpus=0) as lab, tempfile.TemporaryDirectory() as tmp:
        time.sleep(2)  # let the nodes settle after joining
        for node in ("target", "load"):
            for role, (cpu, rss) in measure(lab.namespace(node), a.seconds).items():
                rows.append(("idle", node, role, cpu, rss))
        plan = Path(tmp) / "plan.toml"
        plan.write_text(f"""
[experiment]
repetitions = 1
duration = "{a.seconds:g}s"

[target]
builtin = {{ model = "threads", workers = 4 }}
cpus = 1
node = "{lab.ip["target"]}"

[cluster]
address = "{lab.address}"
agents = 1

[load]
concurrency = 8
keep_alive = true
allow_remote = true
""")
        argv = [sys.executable, "-m", "corebench", "run", str(plan), "--store", str(Path(tmp) / "s.sqlite"), "-q"]
        run = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # Measured from the server's start to the run's end, both nodes at once.
        end = time.monotonic() + 120
        while not any(_role(psutil.Process(p)) == "server" for p in _pids(lab.namespace("target"))):
            if run.poll() is not None or time.monotonic() > end:
                raise SystemExit(f"the plan did not start its target: {run.communicate()[1]}")
            time.sleep(0.1)
        load_ns = lab.namespace("load")
        measured: dict[str, dict[str, tuple[float, float]]] = {}

        def load_side() -> None:
            measured["load"] = measure(load_ns, a.seconds)

        import threading

        t = threading.Thread(target=load_side)
        t.start()
        measured["target"] = measure(lab.namespace("target"), a.seconds)
        t.join()
        _, err = run.communicate(timeout=300)
        if run.returncode != 0:
            raise SystemExit(f"the plan failed: {err}")
        for node in ("target", "load"):
            for role, (cpu, rss) in measured[node].items():
                rows.append(("under load", node, role, cpu, rss))
    print(f"# a Ray node's processes, lab on this machine, {a.seconds:g} s spans")
    print(f"{'state':<11} {'node':<7} {'processes':<13} {'CPU (cores)':>11} {'RSS MiB':>8}")
    for state, node, role, cpu, rss in rows:
        print(f"{state:<11} {node:<7} {role:<13} {cpu:11.3f} {rss:8.0f}")


if __name__ == "__main__":
    main()
