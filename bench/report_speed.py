"""How long the HTML report of a 1,000-run store takes to build (goal: under
5 s). The runs carry a real load result (one short run against the built-in
server), with throughput varied by point, and a 16-core monitor summary.

    .venv/bin/python bench/report_speed.py [--runs 1000]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import corebench
from corebench import report
from corebench.store import Store, StoredExperiment, StoredRun
from corebench.targets.builtin import Served


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    runs = ap.parse_args().runs
    with Served("--workers", "1") as srv:
        template = corebench.load(srv.url, concurrency=4, duration=0.5, keep_alive=True).model_dump(
            mode="json", by_alias=True
        )
    tmp = Path(tempfile.mkdtemp())
    store = Store(tmp / "big.sqlite")
    factors = {"cpus": [1, 2, 4, 8], "concurrency": list(range(25, 275, 25))}
    plan = {
        "plan": {"experiment": {"name": "bench"}, "machine": {}, "factors": factors, "target": {}, "load": {}},
        "factors": factors,
    }
    exp = store.new_experiment(
        StoredExperiment.model_validate(
            {
                "name": "bench",
                "plan_path": "bench.toml",
                "plan_toml": "# synthetic\n",
                "plan_digest": "bench",
                "plan": plan,
                "host": {"cpu_model": "synthetic", "cpus": 16},
                "runs_planned": runs,
                "created_unix": time.time(),
                "corebench_version": corebench.__version__,
            }
        )
    )
    rng = random.Random(1)
    points = [{"cpus": c, "concurrency": n} for c in factors["cpus"] for n in factors["concurrency"]]
    reps = runs // len(points)
    seq = 0
    for p in points:
        for rep in range(reps):
            seq += 1
            x = 1000 * p["cpus"] / (1 + 0.05 * (p["cpus"] - 1)) * min(1.0, p["concurrency"] / 100) * rng.gauss(1, 0.03)
            # Goodput is the successes over the duration: the 200s carry the point's rate.
            ok = round(x * template["duration_s"])
            result = {**template, "throughput_rps": x, "status_counts": {"200": ok}, "concurrency": p["concurrency"]}
            monitor = {
                "samples": 50,
                "cores": [{"user": 0.5, "system": 0.2, "iowait": 0.0, "softirq": 0.05, "idle": 0.25}] * 16,
                "target_cpu": p["cpus"] * 0.9,
                "generator_cpu": 0.4,
                "generator_cores": 8,
                "client_bound": False,
            }
            store.add_run(
                StoredRun.model_validate(
                    {
                        "experiment_id": exp,
                        "seq": seq,
                        "point": p,
                        "point_key": json.dumps(p, sort_keys=True),
                        "repetition": rep,
                        "warmup": rep == 0,
                        "status": "ok",
                        "started_unix": 0.0,
                        "ended_unix": 1.0,
                        "layout": {"method": "cgroup1", "shared": False},
                        "target": {},
                        "monitor": monitor,
                        "result": result,
                    }
                )
            )
    store.close()
    started = time.perf_counter()
    data = report.load(tmp / "big.sqlite")
    loaded = time.perf_counter()
    html = report.get("html").render(data)
    done = time.perf_counter()
    (tmp / "report.html").write_text(html)
    print(
        f"{seq} runs, {len(points)} points: load + analysis {loaded - started:.2f} s, HTML {done - loaded:.2f} s, "
        f"total {done - started:.2f} s (goal < 5 s); {len(html) / 1e6:.1f} MB at {tmp / 'report.html'}"
    )


if __name__ == "__main__":
    main()
