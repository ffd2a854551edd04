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

The verdicts compare each corebench variant with wrk, and, when it ran, with
corebench --busy-poll 20us (a generator that polls between batches rather
than sleeping makes the server pay for few wake-ups, and remote clients cost
it none: the reference nearest to not sharing the machine). Per comparison,
the geometric mean of the rounds' paired ratios with its 90% interval, and
four one-sided paired t-tests on their logs: not 3% or more under the
reference (the half of Schuirmann's (1987) TOST that says a generator does
not hold the server back), not 3% or more over it (both: equivalent within
±3%), over it, under it; Holm's (1979) adjustment over every test of the
table keeps the chance of any false claim at 5%. "Cannot tell" is what few
rounds on a noisy machine give. wrk's own spread across rounds is printed
beside it.

    .venv/bin/python bench/agreement.py [--conns 50] [--seconds 5] [--rounds 3] [--page-bytes 44]
        [--tools corebench,corebench-busy,wrk]
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

from corebench.analysis.anova import tost_paired
from corebench.analysis.stats import holm
from corebench.testing.nginx import Nginx

WARMUP_S = 1.0
# The goal: throughput within 3% of wrk's.
MARGIN = 0.03


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
    ap.add_argument(
        "--tools",
        type=lambda v: v.split(","),
        default=["corebench", "corebench-off", "corebench-epoll", "corebench-epoll-off", "wrk", "corebench-busy"],
        help="which to run, comma-separated (wrk always among them)",
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
    unknown = set(a.tools) - set(tools)
    if unknown or "wrk" not in a.tools:
        sys.exit(f"agreement: --tools takes wrk and any of {', '.join(n for n in tools if n != 'wrk')}")
    tools = {name: cmd for name, cmd in tools.items() if name in a.tools}
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
                    result = json.loads(m["out"])
                    exact &= result["responses"] == m["total"]
                    note = f", completed {result['responses']}, nginx counted {m['total']}"
                    if (probes := result.get("linger_probes")) and probes["probes"]:
                        note += f", probes held {probes['held']} of {probes['probes']}"
                print(
                    f"round {r} {name:14s} {m['rps']:9.0f} req/s, nginx {m['nginx_us']:5.2f} us/req, "
                    f"generator sleeps {m['sleeps']:.3f}/req{note}"
                )
    summarize(a, rows)
    print(f"counts equal to nginx's in every round: {exact}")
    return 0 if exact else 1


WHAT = {
    "corebench": "the defaults",
    "corebench-off": "without holding (--linger off)",
    "corebench-epoll": "on epoll (--io epoll)",
    "corebench-epoll-off": "on epoll without holding (--io epoll --linger off)",
    "corebench-busy": "with --busy-poll 20us",
}


def summarize(a: argparse.Namespace, rows: dict[str, list[dict]]) -> None:
    print(
        f"\n{a.page_bytes}-byte page{f', gzip level {a.gzip}' if a.gzip else ''}, {a.conns} keep-alive connections, "
        f"{a.seconds}s x {a.rounds} rounds, "
        "1 thread each on CPU 1, nginx on CPU 0"
    )
    print(f"{'tool':14s} {'req/s':>9s} {'nginx_us/req':>12s} {'gen_sleeps/req':>14s}")
    for name, xs in rows.items():
        m = {k: statistics.median(x[k] for x in xs) for k in ("rps", "nginx_us", "sleeps")}
        print(f"{name:14s} {m['rps']:9.0f} {m['nginx_us']:12.2f} {m['sleeps']:14.3f}")
    wrk = [w["rps"] for w in rows["wrk"]]
    if len(wrk) > 1:
        sd = statistics.stdev(wrk) / statistics.mean(wrk)
        print(f"wrk's own spread: {min(wrk):.0f} to {max(wrk):.0f} req/s, sd {sd:.1%} of its mean")
    comparisons = [(name, "wrk") for name in rows if name != "wrk"]
    if "corebench-busy" in rows:
        # A generator that polls rather than sleeps costs the server few
        # wake-ups, remote clients none: the reference nearest to them.
        comparisons += [
            (name, "corebench-busy") for name in rows if name.startswith("corebench") and name != "corebench-busy"
        ]
    found = verdicts(
        {pair: ([x["rps"] for x in rows[pair[1]]], [x["rps"] for x in rows[pair[0]]]) for pair in comparisons}
    )
    print(
        f"throughput, per-round pairs: geometric mean ratio, 90% interval; what Holm's adjustment over all "
        f"{4 * len(comparisons)} one-sided paired t-tests on log ratios shows at 5% (±{MARGIN:.0%}: Schuirmann's TOST)"
    )
    for (name, ref), words in found.items():
        print(f"  {WHAT[name]}, against {ref}: {words}")


def verdicts(pairs: dict[tuple[str, str], tuple[list[float], list[float]]]) -> dict[tuple[str, str], str]:
    """Per comparison (runs, reference runs, paired by round), four one-sided
    t-tests on the log ratios: not 3% or more under the reference (the half
    of Schuirmann's TOST that says a generator does not hold the server
    back), not 3% or more over it (both: equivalent), over it, under it.
    Holm's (1979) step-down adjustment over every test of every comparison
    keeps the chance of any false claim at 5%."""
    tests, words = [], {}
    for key, (ref, ours) in pairs.items():
        eq = tost_paired(ref, ours, margin=MARGIN)
        if eq is None:
            # One round, or a round in which a tool served nothing (no ratio).
            words[key] = "no interval: fewer than 2 rounds, or a round at 0 req/s"
            continue
        words[key] = f"{eq.ratio:.3f} ({eq.low:.3f}-{eq.high:.3f})"
        # The same two one-sided tests with no margin: over, under.
        diff = tost_paired(ref, ours, margin=0.0)
        assert diff is not None
        tests += [
            (key, f"not {MARGIN:.0%} or more under", eq.p_not_below),
            (key, f"not {MARGIN:.0%} or more over", eq.p_not_above),
            (key, "over", diff.p_not_below),
            (key, "under", diff.p_not_above),
        ]
    adjusted = holm([p for _, _, p in tests])
    shown: dict[tuple[str, str], list[str]] = {}
    for (key, claim, _), p in zip(tests, adjusted, strict=True):
        if p < 0.05:
            shown.setdefault(key, []).append(f"{claim} (p = {p:.3f})")
    for key in {key for key, _, _ in tests}:
        claims = shown.get(key, [])
        if sum(c.startswith("not") for c in claims) == 2:
            claims.insert(0, f"within ±{MARGIN:.0%}")
        words[key] += ": " + ("; ".join(claims) or "cannot tell at this noise")
    return words


if __name__ == "__main__":
    sys.exit(main())
