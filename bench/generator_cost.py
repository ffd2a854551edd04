#!/usr/bin/env python3
"""The generator-cost table with its spread: runs ../shared/bench/generator-cost
(one nginx worker on CPU 0, each generator on CPU 1, the server counting the
requests, the peers wrk, ab and h2load beside corebench) once per round, each
round interleaving every generator, and prints per generator the median CPU
per request over the rounds, its range, and the median and range of the
per-round ratio to wrk (adjacent runs share the machine's drift, so the
per-round ratio is the steadier figure). Beside them, the geometric mean of
the per-round ratios with its 90% interval (a t interval on their logs, the
paired form of corebench.analysis.anova.tost_paired): its upper bound under a
goal (0.80 for io_uring, 1.00 for epoll) is a one-sided test at 5% that the
generator costs less than that share of wrk's CPU. And per corebench
generator that probes (`--linger auto`), in how many runs its probes held:
each corebench command's report goes to a file of its own (`sh -c 'exec
COMMAND > FILE'`; the shell's start, about a millisecond of CPU, is counted
with it), whose Generator CPU line says how many probes ran and held.

    .venv/bin/python bench/generator_cost.py TOOL SECONDS ROUNDS CONNS NAME=COMMAND ...
"""

import re
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from corebench.analysis.anova import tost_paired


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


def logged(generators: list[str], logs: Path) -> list[str]:
    """Each NAME=COMMAND with the command's report sent to logs/NAME."""
    out = []
    for g in generators:
        name, _, cmd = g.partition("=")
        out.append(f"{name}=sh -c {shlex.quote(f'exec {cmd} > {logs / name}')}")
    return out


def probes_of(report: Path) -> tuple[int, int] | None:
    """(held, probes) from a text report's Generator CPU line; None where
    the run did not probe (holding off, or always)."""
    found = re.search(r"(\d+) of (\d+) probes showed", report.read_text()) if report.exists() else None
    return (int(found[1]), int(found[2])) if found else None


def main() -> int:
    tool, seconds, rounds, conns, *generators = sys.argv[1:]
    rows: dict[str, list[float]] = {}
    ratios: dict[str, list[float]] = {}
    per_round = []
    probes: dict[str, list[tuple[int, int]]] = {}
    with tempfile.TemporaryDirectory(prefix="generator-cost-reports-") as tmp:
        logs = Path(tmp)
        for _ in range(int(rounds)):
            for f in logs.iterdir():
                f.unlink()
            us = one_round(tool, seconds, conns, logged(generators, logs))
            for name in us:
                if (found := probes_of(logs / name)) is not None:
                    probes.setdefault(name, []).append(found)
            per_round.append(us)
            for name, v in us.items():
                rows.setdefault(name, []).append(v)
                if "wrk" in us:
                    ratios.setdefault(name, []).append(v / us["wrk"])
    print(f"# {conns} keep-alive connections, {seconds}s x {rounds} rounds (each round every generator in turn)")
    print(
        f"{'generator':20s} {'us_cpu/req':>10s} {'range':>13s} {'vs_wrk':>7s} {'vs_wrk range':>13s} "
        f"{'geo_mean':>8s} {'90% interval':>13s}"
    )
    for name, xs in rows.items():
        r = ratios.get(name, [])
        ratio = f"{statistics.median(r):7.2f} {min(r):6.2f}-{max(r):.2f}" if r else f"{'-':>7s}"
        spread = f"{min(xs):6.2f}-{max(xs):6.2f}"
        print(f"{name:20s} {statistics.median(xs):10.2f} {spread} {ratio}{interval(name, per_round)}")
    for name, found in probes.items():
        held = sum(h == p > 0 for h, p in found)
        print(
            f"{name}: every probe held in {held} of {len(found)} runs "
            f"({sum(h for h, _ in found)} of {sum(p for _, p in found)} probes)"
        )
    return 0


def interval(name: str, per_round: list[dict[str, float]]) -> str:
    """The geometric mean ratio to wrk over the rounds that ran both, its 90%
    interval, and whether it shows the generator under its goal."""
    pairs = [(us["wrk"], us[name]) for us in per_round if "wrk" in us and name in us]
    eq = tost_paired([w for w, _ in pairs], [g for _, g in pairs]) if name != "wrk" else None
    if eq is None:
        return ""
    goal = GOALS.get(name)
    shown = f" (under {goal:.2f} at 5%)" if goal is not None and eq.high < goal else ""
    return f" {eq.ratio:8.2f} {eq.low:6.2f}-{eq.high:.2f}{shown}"


# The goals for the defaults, CPU per request as a share of wrk's: io_uring
# at most 0.80, epoll at most 1.00 (bench/generator-cost.sh names them).
GOALS = {"corebench-uring": 0.80, "corebench-epoll": 1.00}


if __name__ == "__main__":
    sys.exit(main())
