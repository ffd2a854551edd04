"""Time to answer of a capacity search, with fixed-length steps and with
sequential steps (a step clearly over its objective ends once its seconds
show it), in one run, side by side.

Simulated: the product's search (runner.capacity) over exact M/M/1 and
D/M/1 queues (Lindley's recursion, corebench.testing.queues), μ = 200/s,
p99 ≤ 100 ms, whose limits theory gives (153.9 and 176.0 req/s). Search
time is the simulated seconds of load (probe and steps; draining after a
missed step is not simulated and costs both rules alike). The error is the
answer's ("sustains", the highest rate whose steps met) against theory,
and the interpolated limit's (analysis.capacity), mean ± sd over the
searches. "old fixed" and "old ramp" are the search as it started before
(half the probe's rate, doubling and halving), with fixed and with
sequential steps: the issue's starting point, and the start's share of
the saving. "seeded" is a later round's search (runner.capacity.seeded):
started from the sequential search's answer with the same seed, on a queue
of its own seed, its time and error beside the unseeded ones; then, over
--pairs pairs of rounds, whether seeding ties a round's answer to the one
before: the correlation of the two answers and the sd of their
difference, seeded against a second round searched afresh.

"Estimates": how often the interpolated limit is given, and its error.
"Pooled": searches whose steps --max-step cuts short, their thin steps
judged alone or measured again and judged together (runner.pool).

With --real [MU ...]: the same two searches against the built-in
server's /queue (an exact M/M/1 queue, μ = 200/s or the MUs given), in
wall time; --no-sim runs those alone.

    .venv/bin/python bench/capacity_search.py [--searches 40] [--pairs 200] [--real [MU ...]] [--no-sim]
        [--pooled] [--estimates]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.support: the simulated runner

from tests.support.queue_runner import QueueRunner  # noqa: E402

from corebench.analysis.capacity import limit_estimate  # noqa: E402
from corebench.config.settings import LoadConfig  # noqa: E402
from corebench.plan.objective import SearchSettings  # noqa: E402
from corebench.runner import capacity, pool  # noqa: E402
from corebench.store import Capacity  # noqa: E402
from corebench.testing.queues import limit_rps  # noqa: E402

MU, SLO, PERCENTILE, BOUND_S = 200.0, "p99<=100ms", 99, 0.1
RULES = {"fixed": False, "sequential": True}


def _pct(xs: list[float]) -> str:
    return f"{statistics.mean(xs):+5.1f}% ± {statistics.stdev(xs):4.1f}" if len(xs) > 1 else "-"


def simulated(searches: int) -> None:
    print(f"# simulated queue, μ = {MU:g}/s, {SLO}, {searches} searches per case (seeds 0-{searches - 1})")
    print(
        f"{'arrivals':<9} {'rule':<11} {'median s':>8} {'steps':>5} {'ended early':>11} "
        f"{'sustains error':>15} {'interpolated error':>18}"
    )
    base = LoadConfig(url="http://127.0.0.1:1/queue", concurrency=512, keep_alive=True)
    for arrivals in ("poisson", "uniform"):
        truth = limit_rps(MU, PERCENTILE, BOUND_S, arrivals)
        medians = {}
        for rule, seq in RULES.items():
            settings = SearchSettings(slo=SLO, arrivals=arrivals, sequential=seq)
            tally = _Tally(truth)
            for seed in range(searches):
                q = QueueRunner(MU, seed)
                tally.add(capacity.search(base, settings, q), q)
            medians[rule] = tally.print(arrivals, rule)
        medians["seeded"] = _seeded(base, arrivals, truth, searches)
        medians["old fixed"] = _old_ramp(base, arrivals, truth, searches, sequential=False)
        medians["old ramp"] = _old_ramp(base, arrivals, truth, searches, sequential=True)
        print(f"{arrivals:<9} sequential/fixed median time: {medians['sequential'] / medians['fixed']:.2f}")
        print(f"{arrivals:<9} sequential/old ramp median time: {medians['sequential'] / medians['old ramp']:.2f}")
        print(f"{arrivals:<9} sequential/old fixed median time: {medians['sequential'] / medians['old fixed']:.2f}")
        print(f"{arrivals:<9} seeded/fixed median time: {medians['seeded'] / medians['fixed']:.2f}")
        print(f"{arrivals:<9} seeded/sequential median time: {medians['seeded'] / medians['sequential']:.2f}")


def _old_ramp(base: LoadConfig, arrivals: str, truth: float, searches: int, sequential: bool) -> float:
    """The first search as it started before 29 Nov's afternoon: at half the
    probe's rate, doubling and halving; with fixed steps ("old fixed", the
    issue's starting point) or sequential ones ("old ramp")."""
    saved = capacity.PROBED_START, capacity.FINE_GROWTH
    capacity.PROBED_START, capacity.FINE_GROWTH = 0.5, 2.0
    try:
        settings = SearchSettings(slo=SLO, arrivals=arrivals, sequential=sequential)
        tally = _Tally(truth)
        for seed in range(searches):
            q = QueueRunner(MU, seed)
            tally.add(capacity.search(base, settings, q), q)
        return tally.print(arrivals, "old ramp" if sequential else "old fixed")
    finally:
        capacity.PROBED_START, capacity.FINE_GROWTH = saved


OBJECTIVES = (("p99<=30ms", 99, 0.03), ("p99<=50ms", 99, 0.05), (SLO, 99, 0.1), ("p99<=500ms", 99, 0.5))


def objectives(searches: int) -> None:
    """The new start against the old over objectives whose limits lie at
    0.23-0.95 of the probe's rate: where the start helps and where not."""
    print(f"\n# first searches (sequential steps), Poisson, {searches} per objective: old ramp against new start")
    print(f"{'objective':<11} {'limit':>12} {'old s':>6} {'new s':>6} {'new/old':>7} {'new error':>15}")
    base = LoadConfig(url="http://127.0.0.1:1/queue", concurrency=512, keep_alive=True)
    for slo, percentile, bound_s in OBJECTIVES:
        truth = limit_rps(MU, percentile, bound_s, "poisson")
        times = {}
        errs: list[float] = []
        for name, start, fine in (("old", 0.5, 2.0), ("new", capacity.PROBED_START, capacity.FINE_GROWTH)):
            saved = capacity.PROBED_START, capacity.FINE_GROWTH
            capacity.PROBED_START, capacity.FINE_GROWTH = start, fine
            try:
                clock = []
                for seed in range(searches):
                    q = QueueRunner(MU, seed)
                    found = capacity.search(base, SearchSettings(slo=slo), q)
                    clock.append(q.clock_s)
                    if name == "new" and found.rate_rps is not None:
                        errs.append((found.rate_rps / truth - 1) * 100)
                times[name] = statistics.median(clock)
            finally:
                capacity.PROBED_START, capacity.FINE_GROWTH = saved
        print(
            f"{slo:<11} {truth:6.1f} ({truth / MU:.2f}μ) {times['old']:6.0f} {times['new']:6.0f} "
            f"{times['new'] / times['old']:7.2f} {_pct(errs):>15}"
        )


def rounds(pairs: int) -> None:
    """Pairs of rounds: does a seeded second round lean on the first?"""
    import numpy as np

    print(f"\n# {pairs} pairs of rounds (first round seeds 0-{pairs - 1}), sequential steps")
    print(f"{'arrivals':<9} {'second round':<13} {'corr':>6} {'sd of difference':>17} {'mean error':>11}")
    base = LoadConfig(url="http://127.0.0.1:1/queue", concurrency=512, keep_alive=True)
    for arrivals in ("poisson", "uniform"):
        truth = limit_rps(MU, PERCENTILE, BOUND_S, arrivals)
        settings = SearchSettings(slo=SLO, arrivals=arrivals)
        first, fresh, seeded = [], [], []
        for seed in range(pairs):
            a = capacity.search(base, settings, QueueRunner(MU, seed)).rate_rps
            b = capacity.search(base, settings, QueueRunner(MU, seed + 100_000)).rate_rps
            later = capacity.seeded(settings, a, random.Random(seed)) if a is not None else settings
            c = capacity.search(base, later, QueueRunner(MU, seed + 100_000), near_rps=a).rate_rps
            if a is not None and b is not None and c is not None:
                first.append(a)
                fresh.append(b)
                seeded.append(c)
        for name, second in (("afresh", fresh), ("seeded", seeded)):
            r = float(np.corrcoef(first, second)[0, 1])
            sd = statistics.stdev(np.subtract(first, second))
            err = (statistics.mean(second) / truth - 1) * 100
            print(f"{arrivals:<9} {name:<13} {r:+6.2f} {sd:13.1f} req/s {err:+10.1f}%")


def _seeded(base: LoadConfig, arrivals: str, truth: float, searches: int) -> float:
    """Second rounds: each started from the first round's answer."""
    settings = SearchSettings(slo=SLO, arrivals=arrivals, sequential=True)
    tally = _Tally(truth)
    for seed in range(searches):
        first = capacity.search(base, settings, QueueRunner(MU, seed))
        if first.rate_rps is None:
            continue
        q = QueueRunner(MU, seed + 100_000)
        later = capacity.seeded(settings, first.rate_rps, random.Random(seed))
        tally.add(capacity.search(base, later, q, near_rps=first.rate_rps), q)
    return tally.print(arrivals, "seeded")


class _Tally:
    """One row of the table: searches' times, steps and errors against theory."""

    def __init__(self, truth: float) -> None:
        self.truth = truth
        self.times: list[float] = []
        self.steps: list[int] = []
        self.early = 0
        self.errs: list[float] = []
        self.interp: list[float] = []

    def add(self, found: Capacity, q: QueueRunner) -> None:
        self.times.append(q.clock_s)
        self.steps.append(len(found.steps))
        self.early += q.steps_settled
        if found.rate_rps is not None:
            self.errs.append((found.rate_rps / self.truth - 1) * 100)
        est = limit_estimate(found.steps, SearchSettings(slo=SLO).objective)
        if est is not None:
            self.interp.append((est.rate_rps / self.truth - 1) * 100)

    def print(self, arrivals: str, rule: str) -> float:
        """Prints the row; returns the median search time."""
        median = statistics.median(self.times)
        print(
            f"{arrivals:<9} {rule:<11} {median:8.0f} {statistics.median(self.steps):5.0f} "
            f"{self.early:5d} steps {_pct(self.errs):>15} {_pct(self.interp):>18}"
        )
        return median


def pooled(searches: int) -> None:
    """Steps cut short by --max-step (10 s: about 1,500 responses near the
    limit, under a third of a p99's 5,000): judged alone (pool.POOL_STEPS = 1,
    as before 29 Nov 2026's pooling) and measured again, judged together."""
    print(f"\n# --max-step 10s, Poisson, {searches} searches: thin steps judged alone or pooled")
    print(f"{'steps judged':<13} {'median s':>8} {'steps':>5} {'undecided':>9} {'sustains error':>15}")
    base = LoadConfig(url="http://127.0.0.1:1/queue", concurrency=512, keep_alive=True)
    truth = limit_rps(MU, PERCENTILE, BOUND_S, "poisson")
    settings = SearchSettings(slo=SLO, max_step="10s", max_steps=100)
    most = pool.POOL_STEPS
    for name, at_most in (("alone", 1), ("pooled", most)):
        pool.POOL_STEPS = at_most
        try:
            times, steps, undecided, errs = [], [], 0, []
            for seed in range(searches):
                q = QueueRunner(MU, seed)
                found = capacity.search(base, settings, q)
                times.append(q.clock_s)
                steps.append(len(found.steps))
                undecided += "Undecided" in found.sentence()
                if found.rate_rps is not None:
                    errs.append((found.rate_rps / truth - 1) * 100)
        finally:
            pool.POOL_STEPS = most
        print(
            f"{name:<13} {statistics.median(times):8.0f} {statistics.median(steps):5.0f} {undecided:9d} "
            f"{_pct(errs):>15}"
        )


def estimates(searches: int) -> None:
    """How often the interpolated limit is given, and its error, from all
    the steps (as the product reads it) or from the steps run whole alone
    (curtailed steps' percentiles come from their first seconds)."""
    print(f"\n# interpolated limit, {searches} searches per case: from all steps or those run whole")
    print(f"{'queue':<28} {'arrivals':<8} {'steps':<11} {'none':>5} {'error':>15}")
    base = LoadConfig(url="http://127.0.0.1:1/queue", concurrency=512, keep_alive=True)
    for mu, slo, bound_s, step in ((1000.0, "p99<=20ms", 0.02, "12s"), (MU, SLO, BOUND_S, "2s")):
        for arrivals in ("poisson", "uniform"):
            truth = limit_rps(mu, PERCENTILE, bound_s, arrivals)
            settings = SearchSettings(slo=slo, arrivals=arrivals, step=step)
            errs: dict[str, list[float]] = {"all": [], "whole only": []}
            for seed in range(searches):
                found = capacity.search(base, settings, QueueRunner(mu, seed))
                for name, steps in (
                    ("all", found.steps),
                    ("whole only", [s for s in found.steps if s.settled_s is None]),
                ):
                    est = limit_estimate(steps, settings.objective)
                    if est is not None:
                        errs[name].append((est.rate_rps / truth - 1) * 100)
            queue = f"μ={mu:g} {slo} {step} steps"
            for name, e in errs.items():
                print(f"{queue:<28} {arrivals:<8} {name:<11} {searches - len(e):5d} {_pct(e):>15}")


def real(mu: float) -> None:
    from corebench.targets.builtin import Served

    truth = limit_rps(mu, PERCENTILE, BOUND_S, "poisson")
    print(f"\n# built-in server's /queue (M/M/1, μ = {mu:g}/s), {SLO}, poisson; theory {truth:.1f} req/s")
    print(f"{'rule':<11} {'wall s':>7} {'steps':>5} {'sustains':>9} {'interpolated':>13}")
    with Served("--model", "threads", "--workers", "256") as srv:
        for rule, seq in RULES.items():
            out = Path(f"/tmp/corebench-capacity-{rule}.json")
            argv = [sys.executable, "-m", "corebench", "capacity", srv.url + f"queue?service_us={1e6 / mu:.0f}"]
            argv += ["--slo", SLO, "-k", "--json", str(out), "--sequential" if seq else "--fixed-steps"]
            began = time.monotonic()
            subprocess.run(argv, check=True, capture_output=True)
            wall = time.monotonic() - began
            found = json.loads(out.read_text())
            est = found.get("estimate")
            interpolated = f"{est['rate_rps']:13.1f}" if est else f"{'none':>13}"
            print(f"{rule:<11} {wall:7.0f} {len(found['steps']):5d} {found['rate_rps']:9.1f} {interpolated}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--searches", type=int, default=40)
    ap.add_argument("--real", type=float, nargs="*", metavar="MU", help="real /queue searches at these μ (200)")
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--no-sim", action="store_true", help="the real searches only")
    ap.add_argument("--pooled", action="store_true", help="the simulated thin steps' table only")
    ap.add_argument("--estimates", action="store_true", help="the simulated interpolated limits' table only")
    a = ap.parse_args()
    if a.pooled or a.estimates:
        if a.pooled:
            pooled(a.searches)
        if a.estimates:
            estimates(a.searches)
    elif not a.no_sim:
        simulated(a.searches)
        if a.pairs >= 2:  # a correlation needs two pairs
            rounds(a.pairs)
        objectives(a.searches)
        pooled(a.searches)
        estimates(a.searches)
    for mu in (a.real or [MU]) if a.real is not None else []:
        real(mu)


if __name__ == "__main__":
    main()
