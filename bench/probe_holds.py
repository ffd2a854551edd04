#!/usr/bin/env python3
"""How often the default's probe holds responses, and what that costs: where
generator-cost puts `--linger auto` between always holding (`--linger 10`)
and not holding (`--linger off`), this says whether its probes declined in
some runs or holding began late. One private nginx (1 worker on CPU 0, a
44-byte page); corebench with one thread on CPU 1, the three settings in
turn, each run's CPU per response from the kernel's accounting of the whole
process (Python's start included, as generator-cost counts it), the probes
it ran and held on (`linger_probes` in its JSON), and nginx's count against
corebench's.

    .venv/bin/python bench/probe_holds.py [--runs 7] [--seconds 5] [--conns 50] [--io uring]
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys

from corebench.testing.nginx import Nginx

SETTINGS = ("auto", "10", "off")


def one_run(cli: str, n: Nginx, a: argparse.Namespace, linger: str) -> dict:
    before_n, before = n.served(), resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = ["taskset", "-c", "1", cli, "load", "-k", "--io", a.io, "--threads", "1", "--linger", linger]
    cmd += ["-c", str(a.conns), "-t", f"{a.seconds}s", "--json", "-", n.url]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.seconds + 60)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit(f"probe_holds: --linger {linger} failed: {p.stderr.strip()[-300:]}")
    r = json.loads(p.stdout)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    served = n.served_since(before_n)
    return {
        "us": cpu_s / r["responses"] * 1e6,
        "rps": r["throughput_rps"],
        "probes": r["linger_probes"]["probes"],
        "held": r["linger_probes"]["held"],
        "exact": served == r["responses"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--conns", type=int, default=50)
    ap.add_argument("--io", default="uring", choices=("uring", "epoll"))
    a = ap.parse_args()
    cli = os.path.join(os.path.dirname(sys.executable), "corebench")
    rows: dict[str, list[dict]] = {s: [] for s in SETTINGS}
    with Nginx(cpu_affinity="01") as n:
        for i in range(a.runs):
            for linger in SETTINGS:
                m = one_run(cli, n, a, linger)
                rows[linger].append(m)
                print(
                    f"run {i} --linger {linger:4s} {m['us']:6.2f} us/response {m['rps']:8.0f} req/s "
                    f"probes held {m['held']} of {m['probes']}  counts equal: {m['exact']}",
                    flush=True,
                )
    print(f"\n# {a.conns} keep-alive connections, {a.seconds} s x {a.runs} runs, --io {a.io}, medians")
    auto = rows["auto"]
    held = sum(1 for m in auto if m["held"] > 0)
    always = statistics.median(m["us"] for m in rows["10"])
    for linger, ms in rows.items():
        us = statistics.median(m["us"] for m in ms)
        print(f"--linger {linger:4s} {us:6.2f} us/response  vs always {us / always:.2f}")
    exact = all(m["exact"] for ms in rows.values() for m in ms)
    print(f"auto: held in {held} of {len(auto)} runs; every count equal to nginx's: {exact}")
    if held and held < len(auto):
        on = statistics.median(m["us"] for m in auto if m["held"] > 0)
        off = statistics.median(m["us"] for m in auto if m["held"] == 0)
        print(f"auto runs that held: {on:.2f} us/response; that did not: {off:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
