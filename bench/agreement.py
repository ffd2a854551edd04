#!/usr/bin/env python3
"""Does corebench count what the server counted, and measure what wrk measures?

Against one private nginx (1 worker on CPU 0, 44-byte page): corebench and
wrk, each with one thread on CPU 1, run in alternation with the same
connections and duration, so the server is the limit for both. For each corebench run
the completed requests are compared with nginx's own count (stub_status),
which must be equal; the median throughputs of the two tools are compared,
and should agree within 3%.

    .venv/bin/python bench/agreement.py [--conns 50] [--seconds 5] [--rounds 3]
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys

import corebench
from corebench.target.nginx import Nginx


def wrk_rps(url: str, conns: int, seconds: int) -> float:
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", f"-c{conns}", f"-d{seconds}s", url],
                         capture_output=True, text=True, check=True).stdout
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--conns", type=int, default=50)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    if not shutil.which("wrk"):
        sys.exit("agreement: wrk not found (Debian: apt-get install wrk)")
    cb, wrk, exact = [], [], True
    os.sched_setaffinity(0, {1})
    with Nginx(cpu_affinity="01") as n:
        for r in range(a.rounds):
            before = n.served()
            res = corebench.load(n.url, concurrency=a.conns, duration_s=a.seconds, keep_alive=True, threads=1)
            counted = n.served_since(before)
            exact &= counted == res.responses
            print(f"round {r}: corebench {res.throughput_rps:9.0f} req/s, completed {res.responses}, "
                  f"nginx counted {counted} ({'equal' if counted == res.responses else 'DIFFERENT'})")
            cb.append(res.throughput_rps)
            w = wrk_rps(n.url, a.conns, a.seconds)
            print(f"round {r}: wrk       {w:9.0f} req/s")
            wrk.append(w)
    ratio = statistics.median(cb) / statistics.median(wrk)
    # Adjacent runs share the machine's drift, so the per-round ratio is the steadier figure.
    paired = statistics.median(c / w for c, w in zip(cb, wrk))
    print(f"\n{a.conns} keep-alive connections, {a.seconds}s x {a.rounds} rounds, 1 thread each on CPU 1, nginx on CPU 0")
    print(f"median throughput: corebench {statistics.median(cb):.0f}, wrk {statistics.median(wrk):.0f}, "
          f"ratio {ratio:.3f} ({abs(ratio - 1) * 100:.1f}% apart); median per-round ratio {paired:.3f}")
    print(f"counts equal to nginx's in every round: {exact}")
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
