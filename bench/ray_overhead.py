#!/usr/bin/env python3
"""What does spreading the load over Ray agents cost? On one machine, a
2-agent run (Ray actors, `corebench.cluster`) against a single-process run
with the same total connections and the same total load threads, in
alternating rounds against one private nginx. Throughput is each result's
own (responses over the run); nginx's count is checked against the merged
result every round.

Issue 8's goal: the 2-agent run reaches at least 90% of the single run.

    .venv/bin/python bench/ray_overhead.py [--conns 50] [--seconds 5] [--rounds 5]
"""

import argparse
import statistics
import sys

from ray.cluster_utils import Cluster

import corebench
from corebench.cluster import ClusterConfig
from corebench.cluster.session import Session
from corebench.testing.nginx import Nginx


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--conns", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1}, connect=False)
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    rows = []
    try:
        with Nginx(workers=1) as n, Session(ClusterConfig(address=cluster.address, agents=2)) as s:
            single = dict(url=n.url, concurrency=a.conns, duration=a.seconds, keep_alive=True, threads=2)
            split = corebench.load_config(**{**single, "threads": 1})
            print(
                f"nginx 1 worker, {a.conns} keep-alive connections, {a.seconds:g} s per run; "
                "single process with 2 threads vs 2 agents with 1 thread each"
            )
            print(f"{'round':>5} {'single req/s':>14} {'2 agents req/s':>16} {'ratio':>7}")
            for i in range(a.rounds):
                one = corebench.load(**single)
                before = n.served()
                two = s.run(split)
                if n.served_since(before) != two.responses or two.failed:
                    sys.exit(
                        f"round {i + 1}: nginx counted {n.served_since(before)}, the merge {two.responses} "
                        f"({two.failed} failed)"
                    )
                rows.append((one.throughput_rps, two.throughput_rps))
                print(
                    f"{i + 1:5d} {one.throughput_rps:14,.0f} {two.throughput_rps:16,.0f} "
                    f"{two.throughput_rps / one.throughput_rps:7.3f}"
                )
    finally:
        cluster.shutdown()
    ratios = [b / a_ for a_, b in rows]
    print(
        f"median ratio (2 agents / single): {statistics.median(ratios):.3f}; "
        f"ratio of medians: {statistics.median(b for _, b in rows) / statistics.median(x for x, _ in rows):.3f}"
    )


if __name__ == "__main__":
    main()
