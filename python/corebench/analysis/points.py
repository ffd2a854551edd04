"""Runs from the store, grouped by point: what each point measured over its
repetitions (warm-ups and failed runs left out), and how its monitor saw it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from corebench.analysis.knee import LITTLE_TOLERANCE, little_ratio
from corebench.analysis.stats import Summary, summarize
from corebench.result import FAILING_SHARE as FAILING_SHARE  # re-exported: the analysis's name for it
from corebench.result import as_logged as as_logged  # re-exported
from corebench.result import failed_requests as failed_requests  # re-exported
from corebench.result import goodput_rps as goodput_rps  # re-exported


@dataclass
class PointStats:
    levels: dict[str, Any]
    runs: list[dict[str, Any]]  # every run of the point, warm-ups and failures included
    measured: list[dict[str, Any]]
    throughput: Summary  # of goodput: successful responses per second
    p50_us: Summary
    p99_us: Summary
    failed_runs: int
    error_share: float  # failed requests (errors, 4xx, 5xx) over requests, measured runs
    target_cpu: float | None  # cores' worth, mean over measured runs
    generator_cpu: float | None
    client_bound: bool
    little: float | None  # X·R / N, closed loop only
    # The generator ran on the target's cores: the target's figures are understated.
    shared: bool = False
    rps: list[float] = field(default_factory=list)  # goodput of each measured run
    # The target's CPU service demand per request, each measured run: D = U/X,
    # U in cores (Denning & Buzen 1978, the service demand law).
    demand_ms: list[float] = field(default_factory=list)
    # Closed loop only: the clients (N) and the mean response time (R, s).
    clients: int | None = None
    response_s: float | None = None
    # The runs were capacity searches: the monitor's figures span every
    # step of a search, so they are no one rate's CPU or demand.
    searched: bool = False
    # Measured runs whose monitor saw notable steal time (a VM's vCPUs
    # runnable but not run), and the most CPU-seconds stolen in one.
    steal_runs: int = 0
    steal_max_s: float = 0.0

    @property
    def failing(self) -> bool:
        return self.error_share > FAILING_SHARE or not self.measured

    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.levels.items()) or "(one point)"


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def point_stats(runs: list[dict[str, Any]]) -> list[PointStats]:
    """`runs` as `Store.runs` returns them; points in order of first run."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault(r["point_key"], []).append(r)
    out = []
    for rs in groups.values():
        measured = [r for r in rs if r["status"] == "ok" and not r["warmup"]]
        results = [json.loads(r["result_json"]) for r in measured]
        monitors = [json.loads(r["monitor_json"]) for r in measured if r["monitor_json"]]
        all_monitors = list(monitors)
        requests = sum(x["requests"] for x in results)
        rps = [goodput_rps(x) for x in results]
        searched = any(r.get("search_json") for r in measured)
        demand = [
            json.loads(r["monitor_json"])["target_cpu"] / x * 1000
            for r, x in zip(measured, rps, strict=True)
            if x > 0 and r["monitor_json"] and json.loads(r["monitor_json"]).get("target_cpu") is not None
        ]
        if searched:
            demand, monitors = [], []
        little = None
        closed = [x for x in results if x.get("model") == "closed"]
        if closed:
            little = _mean(
                [
                    little_ratio(
                        x["concurrency"],
                        x["throughput_rps"],
                        x["latency_us"]["total"]["mean_us"] / 1e6,
                        x["duration_s"],
                    )
                    for x in closed
                ]
            )
        out.append(
            PointStats(
                levels=json.loads(rs[0]["point_json"]),
                runs=rs,
                measured=measured,
                throughput=summarize(rps),
                p50_us=summarize([r["p50_us"] for r in measured]),
                p99_us=summarize([r["p99_us"] for r in measured]),
                failed_runs=sum(r["status"] == "failed" for r in rs),
                error_share=sum(failed_requests(x) for x in results) / requests if requests else 0.0,
                target_cpu=_mean([m["target_cpu"] for m in monitors if "target_cpu" in m]),
                generator_cpu=_mean([m["generator_cpu"] for m in monitors if "generator_cpu" in m]),
                client_bound=any(m.get("client_bound") for m in monitors),
                little=little,
                shared=any(
                    json.loads(r["layout_json"]).get("shared") and json.loads(r["layout_json"]).get("method") != "none"
                    for r in measured
                    if r["layout_json"]
                ),
                rps=rps,
                demand_ms=demand,
                clients=closed[0]["concurrency"] if closed else None,
                response_s=_mean([x["latency_us"]["total"]["mean_us"] / 1e6 for x in closed]),
                searched=searched,
                steal_runs=sum(bool(m.get("steal_notable")) for m in all_monitors),
                steal_max_s=max((float(m.get("steal_s", 0.0)) for m in all_monitors), default=0.0),
            )
        )
    return out


def little_fails(p: PointStats) -> bool:
    return p.little is not None and abs(p.little - 1) > LITTLE_TOLERANCE
