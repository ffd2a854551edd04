"""Figures for the load models: how exactly an open-loop rate is kept
against nginx, and what coordinated omission hides on a stalling server.

    .venv/bin/python bench/load_models.py [--seconds 10] [--rates 1000,10000,30000]
"""

from __future__ import annotations

import argparse

import corebench
from corebench.targets.builtin import Served
from corebench.testing.nginx import Nginx


def rate_accuracy(rates: list[int], seconds: float) -> None:
    print(f"# open-loop rate against nginx (1 worker), {seconds:g} s each, -c 1000 -k")
    print(
        f"{'target':>8} {'achieved':>10} {'error':>7} {'sent':>8} {'late':>6} {'dropped':>7} "
        f"{'lag_p99_us':>10} {'p50_ms':>7} {'p99_ms':>7} {'nginx_count':>11} {'gen_cpu':>7}"
    )
    with Nginx(connections=4000) as n:
        for rps in rates:
            before = n.served()
            r = corebench.load(n.url, rate=rps, duration=seconds, concurrency=1000, keep_alive=True)
            s, t = r.schedule, r.latency_us.total
            err = (r.throughput_rps - rps) / rps * 100
            print(
                f"{rps:8d} {r.throughput_rps:10.1f} {err:+6.2f}% {s.sent:8d} {s.late:6d} {s.dropped:7d} "
                f"{s.send_lag_p99_us:10d} {t.at(50.0) / 1000:7.3f} {t.at(99.0) / 1000:7.3f} "
                f"{n.served_since(before):11d} {r.generator_cpu_s / r.duration_s:7.2f}"
            )


def coordinated_omission(seconds: float) -> None:
    pause_s, every_s = 0.5, 2.0
    expected_ms = pause_s * (1 - 0.01 / (pause_s / every_s)) * 1000
    print(f"\n# built-in server, 1 async worker, --stall 500ms/2s, {seconds:g} s per run, -k")
    print(f"# expected p99 from the stall pattern: {expected_ms:.0f} ms; max {pause_s * 1000:.0f} ms")
    print(f"{'run':<34} {'rps':>8} {'p50_ms':>8} {'p99_ms':>8} {'max_ms':>8} {'p99 uncorr.':>11}")
    with Served("--model", "async", "--workers", "1", "--stall", "500ms/2s") as srv:
        url = srv.url + "static/100"
        for label, settings in (
            ("open loop 1000/s, -c 1000", dict(rate=1000, concurrency=1000)),
            ("open loop 1000/s, -c 10", dict(rate=1000, concurrency=10)),
            ("closed loop, -c 10", dict(concurrency=10)),
        ):
            r = corebench.load(url, duration=seconds, keep_alive=True, **settings)
            t, u = r.latency_us.total, r.latency_us.uncorrected
            raw = f"{u.at(99.0) / 1000:11.1f}" if u else f"{'-':>11}"
            print(
                f"{label:<34} {r.throughput_rps:8.0f} {t.at(50.0) / 1000:8.3f} {t.at(99.0) / 1000:8.1f} "
                f"{t.max_us / 1000:8.1f} {raw}"
            )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--rates", default="1000,10000,30000")
    a = p.parse_args()
    rate_accuracy([int(x) for x in a.rates.split(",")], a.seconds)
    coordinated_omission(max(6.0, a.seconds - a.seconds % 2))


if __name__ == "__main__":
    main()
