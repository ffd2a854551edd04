#!/usr/bin/env python3
"""Does the built-in server's dynamic page scale with cores?

For each process model: 1 worker pinned to 1 core, then 2 workers pinned
to 2 cores, loaded with `corebench load` on the dynamic page with a CPU
cost per request (default 2,000 µs) that makes the generator's own share
negligible. Prints the throughputs and their ratio (goal: at least 1.7).

    .venv/bin/python bench/serve_scaling.py [--work-us 2000] [--seconds 5] [--rounds 3]
"""

import argparse
import os
import statistics
import sys

import corebench
from corebench.targets.builtin import Served


def measure(cpus: set[int], model: str, workers: int, a) -> tuple[float, float]:
    with Served("--model", model, "--workers", str(workers), cpus=cpus) as s:
        r = corebench.load(
            f"{s.url}dynamic?work_us={a.work_us}",
            concurrency=8,
            duration=a.seconds,
            keep_alive=True,
            variable_length=True,
            threads=1,
        )
    if r.failed:
        sys.exit(f"serve_scaling: {r.failed} errors: {r.error_samples}")
    return r.throughput_rps, r.generator_cpu_s / r.duration_s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work-us", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--models", default="prefork,threads,async")
    a = ap.parse_args()
    if (os.cpu_count() or 1) < 2:
        sys.exit("serve_scaling: needs 2 cores")
    print(f"dynamic page, work_us={a.work_us}, 8 keep-alive connections, {a.seconds:g}s x {a.rounds} rounds")
    print(f"{'model':8s} {'1w/1core rps':>13s} {'2w/2cores rps':>14s} {'ratio':>6s} {'gen_cores':>9s}")
    for model in a.models.split(","):
        one, two, gen = [], [], []
        for _ in range(a.rounds):
            rps, g = measure({0}, model, 1, a)
            one.append(rps)
            rps, g2 = measure({0, 1}, model, 2, a)
            two.append(rps)
            gen += [g, g2]
        ratio = statistics.median(two) / statistics.median(one)
        print(f"{model:8s} {statistics.median(one):13.0f} {statistics.median(two):14.0f} {ratio:6.2f} {max(gen):9.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
