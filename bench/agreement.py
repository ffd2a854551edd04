#!/usr/bin/env python3
"""Does corebench count what the server counted, and measure what wrk measures?

One private nginx (1 worker on CPU 0, a 44-byte page, or --page-bytes). corebench and wrk take
turns, each with one thread on CPU 1, the same connections and duration.
For each run:
  - corebench's completed requests must equal nginx's own count (stub_status);
  - throughput is read from nginx's counter over a steady window (after a
    warm-up second, before the end), so no tool's start-up or report counts;
  - two figures explain a difference: nginx's CPU per request, and how often
    the generator went to sleep per request (voluntary context switches).
    On one machine the server pays for waking a sleeping generator (a
    cross-CPU wake-up, dear on a VM), a cost no remote client imposes.

    .venv/bin/python bench/agreement.py [--conns 50] [--seconds 5] [--rounds 3] [--page-bytes 44]
"""

import argparse
import contextlib
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from corebench.testing.nginx import Nginx

WARMUP_S = 1.0


def sleeps(pid: int) -> int:
    total = 0
    for path in glob.glob(f"/proc/{pid}/task/*/status"):
        with contextlib.suppress(OSError), open(path) as f:
            total += sum(int(line.split()[1]) for line in f if line.startswith("voluntary_ctxt"))
    return total


def measure(cmd: list[str], n: Nginx, seconds: int) -> dict:
    start_count = n.served()
    proc = subprocess.Popen(["taskset", "-c", "1"] + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(WARMUP_S)
    c0, cpu0, z0, t0 = n.served(), n.workers_cpu_s(), sleeps(proc.pid), time.monotonic()
    time.sleep(seconds - WARMUP_S - 0.5)
    req = n.served_since(c0)
    cpu1, z1, dt = n.workers_cpu_s(), sleeps(proc.pid), time.monotonic() - t0
    out, err = proc.communicate(timeout=60)
    if proc.returncode != 0:
        sys.exit(f"agreement: {cmd[0]} failed: {err.strip()[-300:]}")
    return {
        "rps": req / dt,
        "nginx_us": (cpu1 - cpu0) / req * 1e6,
        "sleeps": (z1 - z0) / req,
        # Less the two status requests this function made during the run.
        "total": n.served_since(start_count) - 2,
        "out": out,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conns", type=int, default=50)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--page-bytes", type=int, default=44)
    ap.add_argument(
        "--gzip",
        type=int,
        default=None,
        metavar="LEVEL",
        help="nginx compresses the page per request (CPU work, as a dynamic page has)",
    )
    a = ap.parse_args()
    if a.seconds < 3:
        sys.exit("agreement: --seconds must be at least 3 (1 s warm-up, a steady window, the end)")
    for tool in ("wrk", "taskset"):
        if not shutil.which(tool):
            sys.exit(f"agreement: {tool} not found (Debian: wrk, util-linux)")
    cli = os.path.join(os.path.dirname(sys.executable), "corebench")
    corebench = [cli, "load", "-k", "--threads", "1", "-c", str(a.conns), "-t", f"{a.seconds}s", "--json", "-"]
    tools = {
        # The defaults: io_uring where it works, holding responses where a
        # probe shows it costs the server no load (--linger auto).
        "corebench": corebench,
        # Waking at every response, as wrk does.
        "corebench-off": [*corebench, "--linger", "off"],
        # epoll's defaults hold where the probe allows, as io_uring's do.
        "corebench-epoll": [*corebench, "--io", "epoll"],
        # The loop wrk runs: epoll, waking at every response.
        "corebench-epoll-off": [*corebench, "--io", "epoll", "--linger", "off"],
        "wrk": ["wrk", "-t1", f"-c{a.conns}", f"-d{a.seconds}s"],
        # The same engine kept awake between batches: the server no longer pays for waking it.
        "corebench-busy": [*corebench, "--busy-poll", "20us"],
    }
    rows = {name: [] for name in tools}
    exact = True
    if a.gzip:
        for cmd in tools.values():
            cmd += ["-H", "Accept-Encoding: gzip"]
    with Nginx(page_bytes=a.page_bytes, cpu_affinity="01", gzip_level=a.gzip) as n:
        for r in range(a.rounds):
            for name, cmd in tools.items():
                m = measure(cmd + [n.url], n, a.seconds)
                rows[name].append(m)
                note = ""
                if name.startswith("corebench"):
                    completed = json.loads(m["out"])["responses"]
                    exact &= completed == m["total"]
                    note = f", completed {completed}, nginx counted {m['total']}"
                print(
                    f"round {r} {name:14s} {m['rps']:9.0f} req/s, nginx {m['nginx_us']:5.2f} us/req, "
                    f"generator sleeps {m['sleeps']:.3f}/req{note}"
                )
    med = {
        name: {k: statistics.median(x[k] for x in xs) for k in ("rps", "nginx_us", "sleeps")}
        for name, xs in rows.items()
    }
    # Adjacent runs share the machine's drift, so the per-round ratio is the steadier figure.
    paired = statistics.median(c["rps"] / w["rps"] for c, w in zip(rows["corebench"], rows["wrk"], strict=True))
    print(
        f"\n{a.page_bytes}-byte page{f', gzip level {a.gzip}' if a.gzip else ''}, {a.conns} keep-alive connections, "
        f"{a.seconds}s x {a.rounds} rounds, "
        "1 thread each on CPU 1, nginx on CPU 0"
    )
    print(f"{'tool':14s} {'req/s':>9s} {'nginx_us/req':>12s} {'gen_sleeps/req':>14s}")
    for name, m in med.items():
        print(f"{name:14s} {m['rps']:9.0f} {m['nginx_us']:12.2f} {m['sleeps']:14.3f}")
    print(
        f"throughput ratio corebench/wrk: {med['corebench']['rps'] / med['wrk']['rps']:.3f}, "
        f"median per-round ratio {paired:.3f}"
    )
    others = (
        ("corebench-off", "without holding (--linger off)"),
        ("corebench-epoll", "on epoll (--io epoll)"),
        ("corebench-epoll-off", "on epoll without holding (--io epoll --linger off)"),
        ("corebench-busy", "with --busy-poll 20us"),
    )
    for name, what in others:
        ratio = statistics.median(c["rps"] / w["rps"] for c, w in zip(rows[name], rows["wrk"], strict=True))
        print(f"{what}: median per-round ratio {ratio:.3f}")
    print(f"counts equal to nginx's in every round: {exact}")
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
