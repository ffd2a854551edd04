#!/usr/bin/env python3
"""HTTP/2 load generators' CPU cost per request, side by side: corebench
beside h2load (Debian's nghttp2-client, the reference HTTP/2 generator), oha
(crates.io; hyper's HTTP/2) and a minimal client on the h2 crate
(bench/h2-crate-client: the library's own cost, for the choice of library).

One nginx worker on CPU 0 serves a 44-byte page over h2c (prior knowledge);
each generator runs on CPU 1 for the same time with the same connections and
streams per connection. nginx counts the requests it answered (stub_status,
on its HTTP/1.1 port), so no generator's own count is trusted; a generator's
CPU is the kernel's accounting of its finished process. Rounds interleave
the generators (A B C A B C ...); printed per generator: the median CPU per
request, its range, the throughput, nginx's CPU per request and the
generator's sleeps per request (its voluntary context switches: on one
machine the server pays for waking a sleeping generator), and the median and
range of the per-round ratio to h2load (adjacent runs share the machine's
drift). corebench runs twice: by default, and kept awake (--busy-poll).

    .venv/bin/python bench/h2_cost.py [--seconds 5] [--rounds 7] [--shape 10x10 --shape 100x10]
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from corebench.testing.nginx import Nginx  # noqa: E402

CRATE_CLIENT = ROOT / "bench" / "h2-crate-client" / "target" / "release" / "h2-crate-client"
OHA = shutil.which("oha") or str(Path(os.environ.get("OHA_ROOT", ROOT / "bench" / ".tools")) / "bin" / "oha")
GENERATORS = {
    "h2load": "h2load -t1 -c{c} -m{m} -D{s} {url}",
    "oha": OHA + " --http2 --no-tui -c {c} -p {m} -z {s}s {url}",
    "h2-crate": f"{CRATE_CLIENT} {{url}} {{c}} {{m}} {{s}}",
    "corebench": f"{ROOT}/.venv/bin/corebench load --http2 --threads 1 -c {{c}} --streams {{m}} -t {{s}}s {{url}}",
    # The same engine kept awake between batches: on one machine the server
    # no longer pays for waking it (docs/benchmarks-history.md, "who pays for the wake-ups").
    "corebench-busy": f"{ROOT}/.venv/bin/corebench load --http2 --threads 1 -c {{c}} --streams {{m}} -t {{s}}s "
    "--busy-poll 20us {url}",
}


def available() -> dict[str, str]:
    out = {}
    for name, tmpl in GENERATORS.items():
        exe = shlex.split(tmpl)[0]
        if shutil.which(exe) or Path(exe).is_file():
            out[name] = tmpl
        else:
            print(f"# {name}: {exe} not found, left out", file=sys.stderr)
    return out


@dataclass
class Run:
    served: int
    cpu_s: float
    wall_s: float
    nginx_cpu_s: float
    sleeps: int


def run_one(n: Nginx, cmd: list[str]) -> Run | None:
    before_n, nginx_before = n.served(), n.workers_cpu_s()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(["taskset", "-c", "1", *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    nginx_cpu = n.workers_cpu_s() - nginx_before
    served = n.served_since(before_n)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if p.returncode != 0 or served <= 0:
        print(f"# {cmd[0]}: exit {p.returncode}: {p.stderr.decode(errors='replace')[-300:]}", file=sys.stderr)
        return None
    return Run(served, cpu, wall, nginx_cpu, after.ru_nvcsw - before.ru_nvcsw)


def table(shape: str, seconds: int, rounds: int, gens: dict[str, str]) -> None:
    c, m = (int(x) for x in shape.split("x"))
    rows: dict[str, list[Run]] = {name: [] for name in gens}
    ratios: dict[str, list[float]] = {name: [] for name in gens}
    with Nginx(workers=1, cpu_affinity="01", http2=True, connections=4000) as n:
        for _ in range(rounds):
            this: dict[str, float] = {}
            for name, tmpl in gens.items():
                run = run_one(n, shlex.split(tmpl.format(url=n.h2_url, c=c, m=m, s=seconds)))
                if run is not None:
                    this[name] = run.cpu_s / run.served * 1e6
                    rows[name].append(run)
            for name, us in this.items():
                if "h2load" in this:
                    ratios[name].append(us / this["h2load"])
    print(f"# HTTP/2 (h2c), {c} connections x {m} streams, {seconds}s x {rounds} rounds, 44-byte page,")
    print("# nginx 1 worker on CPU 0, each generator on CPU 1; requests counted by nginx;")
    print("# nginx_us/req: the server's CPU per request; sleeps/req: the generator's voluntary context switches")
    print(
        f"{'generator':14s} {'us_cpu/req':>10s} {'range':>13s} {'req/s':>9s} {'nginx_us/req':>12s} "
        f"{'sleeps/req':>10s} {'vs_h2load':>9s} {'range':>11s}"
    )
    for name, runs in rows.items():
        if not runs:
            print(f"{name:14s} {'failed':>10s}")
            continue
        us = [r.cpu_s / r.served * 1e6 for r in runs]
        r = ratios[name]
        ratio = f"{statistics.median(r):9.2f} {min(r):5.2f}-{max(r):.2f}" if r else f"{'-':>9s}"
        rps = statistics.median(r.served / r.wall_s for r in runs)
        nginx_us = statistics.median(r.nginx_cpu_s / r.served * 1e6 for r in runs)
        sleeps = statistics.median(r.sleeps / r.served for r in runs)
        print(
            f"{name:14s} {statistics.median(us):10.2f} {min(us):6.2f}-{max(us):6.2f} {rps:9.0f} "
            f"{nginx_us:12.2f} {sleeps:10.3f} {ratio}"
        )
    print()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--shape", action="append", help="CONNECTIONSxSTREAMS (default 10x10 and 100x10)")
    a = ap.parse_args()
    if not shutil.which("taskset") or os.cpu_count() is None or os.cpu_count() < 2:  # type: ignore[operator]
        print("h2_cost: needs taskset and 2 CPUs", file=sys.stderr)
        return 2
    gens = available()
    for shape in a.shape or ["10x10", "100x10"]:
        table(shape, a.seconds, a.rounds, gens)
    return 0


if __name__ == "__main__":
    sys.exit(main())
