"""Runs from the store, grouped by point: what each point measured over its
repetitions (warm-ups and failed runs left out), and how its monitor saw it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from corebench.analysis.knee import LITTLE_TOLERANCE, little_ratio
from corebench.analysis.stats import Summary, summarize


@dataclass
class PointStats:
    levels: dict[str, Any]
    runs: list[dict[str, Any]]  # every run of the point, warm-ups and failures included
    measured: list[dict[str, Any]]
    throughput: Summary
    p50_us: Summary
    p99_us: Summary
    failed_runs: int
    error_share: float  # failed requests over requests, measured runs
    target_cpu: float | None  # cores' worth, mean over measured runs
    generator_cpu: float | None
    client_bound: bool
    little: float | None  # X·R / N, closed loop only
    # The generator ran on the target's cores: the target's figures are understated.
    shared: bool = False

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
        requests = sum(x["requests"] for x in results)
        little = None
        closed = [x for x in results if x.get("model") == "closed"]
        if closed:
            little = _mean(
                [
                    little_ratio(x["concurrency"], x["throughput_rps"], x["latency_us"]["total"]["mean_us"] / 1e6)
                    for x in closed
                ]
            )
        out.append(
            PointStats(
                levels=json.loads(rs[0]["point_json"]),
                runs=rs,
                measured=measured,
                throughput=summarize([r["throughput_rps"] for r in measured]),
                p50_us=summarize([r["p50_us"] for r in measured]),
                p99_us=summarize([r["p99_us"] for r in measured]),
                failed_runs=sum(r["status"] == "failed" for r in rs),
                error_share=sum(x["failed"] for x in results) / requests if requests else 0.0,
                target_cpu=_mean([m["target_cpu"] for m in monitors if "target_cpu" in m]),
                generator_cpu=_mean([m["generator_cpu"] for m in monitors if "generator_cpu" in m]),
                client_bound=any(m.get("client_bound") for m in monitors),
                little=little,
                shared=any(
                    json.loads(r["layout_json"]).get("shared") and json.loads(r["layout_json"]).get("method") != "none"
                    for r in measured
                    if r["layout_json"]
                ),
            )
        )
    return out


def little_fails(p: PointStats) -> bool:
    return p.little is not None and abs(p.little - 1) > LITTLE_TOLERANCE
