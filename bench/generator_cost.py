#!/usr/bin/env python3
"""The generator-cost table with its spread: runs ../shared/bench/generator-cost
(one nginx worker on CPU 0, each generator on CPU 1, the server counting the
requests, the peers wrk, ab and h2load beside corebench) once per round, each
round interleaving every generator, and prints per generator the median CPU
per request over the rounds, its range, and the median and range of the
per-round ratio to wrk (adjacent runs share the machine's drift, so the
per-round ratio is the steadier figure).

    .venv/bin/python bench/generator_cost.py TOOL SECONDS ROUNDS CONNS NAME=COMMAND ...
"""

import statistics
import subprocess
import sys


def one_round(tool: str, seconds: str, conns: str, generators: list[str]) -> dict[str, float]:
    p = subprocess.run(
        [sys.executable, tool, "--seconds", seconds, "--rounds", "1", "--conns", conns, *generators],
        capture_output=True,
        text=True,
        check=True,
    )
    sys.stderr.write(p.stderr)
    us = {}
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) == 5 and not line.startswith(("#", "generator")):
            us[parts[0]] = float(parts[1])
    return us


def main() -> int:
    tool, seconds, rounds, conns, *generators = sys.argv[1:]
    rows: dict[str, list[float]] = {}
    ratios: dict[str, list[float]] = {}
    for _ in range(int(rounds)):
        us = one_round(tool, seconds, conns, generators)
        for name, v in us.items():
            rows.setdefault(name, []).append(v)
            if "wrk" in us:
                ratios.setdefault(name, []).append(v / us["wrk"])
    print(f"# {conns} keep-alive connections, {seconds}s x {rounds} rounds (each round every generator in turn)")
    print(f"{'generator':16s} {'us_cpu/req':>10s} {'range':>13s} {'vs_wrk':>7s} {'vs_wrk range':>13s}")
    for name, xs in rows.items():
        r = ratios.get(name, [])
        ratio = f"{statistics.median(r):7.2f} {min(r):6.2f}-{max(r):.2f}" if r else f"{'-':>7s}"
        print(f"{name:16s} {statistics.median(xs):10.2f} {min(xs):6.2f}-{max(xs):6.2f} {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
