"""wrk, ab and corebench on the same stalling server: what each reports for
a server that stops answering for 500 ms every 2 s, measured in the same
run, in interleaved rounds.

    .venv/bin/python bench/co_peers.py [--seconds 10] [--rounds 3] [--json FILE]

Needs wrk and ab (scripts/install-system-deps). Each tool is run for the
same time against the built-in server (`corebench serve --model async
--workers 1 --stall 500ms/2s`), on /static/100 with keep-alive; a round runs
every tool once, in the same order. The table gives the median of the
rounds, and the spread (min-max) of the p99.

Besides the tools' own figures, two computed rows explain the differences:
wrk's coordinated-omission correction (its `stats_correct`, wrk 4.0+,
src/stats.c and src/wrk.c) replayed on corebench's closed-loop histogram,
and the p99 expected from the stall pattern, for an open loop and for wrk's
correction.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import statistics
import subprocess
import sys
from collections import Counter
from typing import Any

import corebench
from corebench.result import LoadResult
from corebench.targets.builtin import Served

PAUSE_S, EVERY_S = 0.5, 2.0
STALL = f"{PAUSE_S * 1000:.0f}ms/{EVERY_S:g}s"
CONNECTIONS = 10

_UNIT_US = {"us": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6, "h": 3600e6}


def _us(text: str) -> float:
    m = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", text)
    if not m:
        raise ValueError(f"not a wrk duration: {text!r}")
    return float(m.group(1)) * _UNIT_US[m.group(2)]


def wrk(url: str, seconds: float) -> dict[str, float]:
    """`wrk -t 2 -c 10 -d S --latency`: its printed p50, p99 (after its own
    correction) and max; wrk prints them to two decimals in its own unit."""
    cmd = ["wrk", "-t", "2", "-c", str(CONNECTIONS), "-d", f"{seconds:g}s", "--latency", url]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=seconds + 30).stdout
    latency = re.search(r"^\s+Latency\s+(\S+)\s+(\S+)\s+(\S+)", out, re.M)
    p50 = re.search(r"^\s+50%\s+(\S+)", out, re.M)
    p99 = re.search(r"^\s+99%\s+(\S+)", out, re.M)
    done = re.search(r"(\d+) requests in (\S+),", out)
    if not (latency and p50 and p99 and done):
        raise RuntimeError(f"unexpected wrk output:\n{out}")
    requests = float(done.group(1))
    return {
        "requests": requests,
        # wrk's expected interval: runtime / (complete / connections), in whole us.
        "expected_interval_us": float(int(_us(done.group(2))) // (int(requests) // CONNECTIONS)),
        "p50_us": _us(p50.group(1)),
        "p99_us": _us(p99.group(1)),
        "max_us": _us(latency.group(3)),
    }


def ab(url: str, seconds: float) -> dict[str, float]:
    """`ab -k -c 10 -t S`: its percentile table is in whole milliseconds,
    its 100% line the longest request. (`-t` alone caps the run at 50,000
    requests; the `-n` after it lifts that.)"""
    cmd = ["ab", "-k", "-c", str(CONNECTIONS), "-t", f"{seconds:g}", "-n", "5000000", url]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=seconds + 30).stdout
    pct = {int(p): float(v) * 1000 for p, v in re.findall(r"^\s+(\d+)%\s+(\d+)", out, re.M)}
    done = re.search(r"^Complete requests:\s+(\d+)", out, re.M)
    if not done or 50 not in pct or 99 not in pct or 100 not in pct:
        raise RuntimeError(f"unexpected ab output:\n{out}")
    return {"requests": float(done.group(1)), "p50_us": pct[50], "p99_us": pct[99], "max_us": pct[100]}


def corebench_run(url: str, seconds: float, **settings: Any) -> tuple[dict[str, float], LoadResult]:
    r = corebench.load(url, duration=seconds, keep_alive=True, **settings)
    t = r.latency_us.total
    row = {"requests": float(r.responses), "p50_us": t.at(50.0), "p99_us": t.at(99.0), "max_us": t.max_us}
    if r.latency_us.uncorrected is not None:
        row["p99_from_send_us"] = r.latency_us.uncorrected.at(99.0)
    return row, r


def wrk_correction(r: LoadResult) -> dict[str, float]:
    """wrk's `stats_correct` on a closed-loop histogram. The expected
    interval is the run's mean time per request on one connection
    (runtime / (completed / connections)); every latency n of at least twice
    that adds, with n's count, the values n - e, n - 2e, ... down to just
    above e: the requests a connection sending every e would have sent
    during the wait. The maximum is left as measured."""
    from hdrh.histogram import HdrHistogram

    h = HdrHistogram.decode(r.latency_us.total.histogram)
    counts: Counter[int] = Counter()
    for item in h.get_recorded_iterator():
        counts[item.value_iterated_to] += item.count_at_value_iterated_to
    completed = sum(counts.values())
    if completed // r.concurrency == 0:
        return {}
    e = int(r.duration_s * 1e6) // (completed // r.concurrency)
    # What was corrected: the stalls (a fifth of the pause or more), and the
    # rest (scheduling delays of a few ms, on a busy machine).
    stall_us = PAUSE_S * 1e6 / 5
    corrected = {"stalled": 0.0, "other": 0.0}
    added = {"stalled": 0.0, "other": 0.0}
    for n, count in list(counts.items()):
        if n >= 2 * e:
            kind = "stalled" if n >= stall_us else "other"
            corrected[kind] += count
            for m in range(n - e, e, -e):
                counts[m] += count
                added[kind] += count
    values = sorted(counts)
    total = sum(counts.values())

    def at(p: float) -> float:
        rank = round(p / 100 * total + 0.5)  # wrk's stats_percentile
        seen = 0
        for v in values:
            seen += counts[v]
            if seen >= rank:
                return float(v)
        return float(values[-1])

    return {
        "expected_interval_us": float(e),
        "added": float(total - completed),
        "corrected_stalled": corrected["stalled"],
        "corrected_other": corrected["other"],
        "added_stalled": added["stalled"],
        "added_other": added["other"],
        "p50_us": at(50.0),
        "p99_us": at(99.0),
        "max_us": float(values[-1]),
    }


def expected_p99_ms() -> tuple[float, float]:
    """A quarter of the time stalled (f = pause / period). An open loop at a
    constant rate sends a share f of its requests into stalls, each waiting
    uniformly 0-500 ms: p99 = 500 (1 - 0.01 / f). wrk's correction adds,
    per stall and connection, pause / e values spread over the stall, which
    is f N in all against the N measured: a share f / (1 + f) of the
    corrected histogram: p99 = 500 (1 - 0.01 (1 + f) / f)."""
    f = PAUSE_S / EVERY_S
    pause_ms = PAUSE_S * 1000
    return pause_ms * (1 - 0.01 / f), pause_ms * (1 - 0.01 * (1 + f) / f)


RUNS = (
    ("wrk -c 10 --latency", "wrk"),
    ("ab -k -c 10", "ab"),
    ("corebench closed loop, -c 10", dict(concurrency=CONNECTIONS)),
    ("corebench open loop 1000/s, -c 1000", dict(rate=1000, concurrency=1000)),
    ("corebench open loop 1000/s, -c 10", dict(rate=1000, concurrency=CONNECTIONS)),
)
REPLAYED = "wrk's correction on corebench's closed loop"


def measure(seconds: float, rounds: int) -> dict[str, list[dict[str, float]]]:
    rows: dict[str, list[dict[str, float]]] = {label: [] for label, _ in RUNS}
    rows[REPLAYED] = []
    with Served("--model", "async", "--workers", "1", "--stall", STALL) as srv:
        url = srv.url + "static/100"
        for k in range(rounds):
            for label, how in RUNS:
                if how == "wrk":
                    row = wrk(url, seconds)
                elif how == "ab":
                    row = ab(url, seconds)
                else:
                    assert isinstance(how, dict)
                    row, r = corebench_run(url, seconds, **how)
                    if "rate" not in how:
                        rows[REPLAYED].append(wrk_correction(r))
                rows[label].append(row)
                print(f"# round {k + 1}: {label}: {_fmt_row(row)}", file=sys.stderr, flush=True)
    return rows


def _fmt_row(row: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:,.0f}" for k, v in row.items())


def _ms(us: float) -> str:
    ms = us / 1000
    return f"{ms:.3f}" if ms < 10 else f"{ms:.1f}"


def table(rows: dict[str, list[dict[str, float]]], seconds: float, rounds: int) -> str:
    med = lambda label, key: statistics.median(r[key] for r in rows[label])  # noqa: E731
    open_ms, wrk_ms = expected_p99_ms()
    lines = [
        f"# built-in server, 1 async worker, --stall {STALL}; {seconds:g} s per run, keep-alive, "
        f"{rounds} interleaved rounds: medians (p99 range over the rounds)",
        f"# expected p99: open loop {open_ms:.0f} ms; wrk's correction {wrk_ms:.0f} ms; max {PAUSE_S * 1000:.0f} ms",
        f"{'run':<46} {'requests':>9} {'p50_ms':>8} {'p99_ms':>8} {'p99 range':>13} {'max_ms':>7} "
        f"{'p99 from send':>13}",
    ]
    for label in [label for label, _ in RUNS] + [REPLAYED]:
        got = [r for r in rows[label] if r]
        if not got:
            continue
        p99s = [r["p99_us"] for r in got]
        req = f"{med(label, 'requests'):9,.0f}" if "requests" in got[0] else f"{'-':>9}"
        send = f"{_ms(med(label, 'p99_from_send_us')):>13}" if "p99_from_send_us" in got[0] else f"{'-':>13}"
        span = f"{_ms(min(p99s))}-{_ms(max(p99s))}"
        lines.append(
            f"{label:<46} {req} {_ms(med(label, 'p50_us')):>8} {_ms(med(label, 'p99_us')):>8} {span:>13} "
            f"{_ms(med(label, 'max_us')):>7} {send}"
        )
    lines.append("# ab prints whole milliseconds (0: under 1 ms); wrk two decimals of its unit")
    replayed = [r for r in rows[REPLAYED] if r]
    if replayed:
        wrk_e = [r["expected_interval_us"] for r in rows[RUNS[0][0]] if r]
        lines.append(f"# wrk's expected interval e over the rounds: {', '.join(f'{e:.0f}' for e in wrk_e)} us")
        for r in replayed:
            lines.append(
                f"# wrk's correction replayed: expected interval e {r['expected_interval_us']:.0f} us "
                f"(runtime x connections / completed); latencies >= 2e: {r['corrected_stalled']:,.0f} of 100 ms "
                f"or more (stalled), adding {r['added_stalled']:,.0f} values; {r['corrected_other']:,.0f} shorter, "
                f"adding {r['added_other']:,.0f}"
            )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--json", help="also write every round's figures to this file")
    a = p.parse_args()
    missing = [tool for tool in ("wrk", "ab") if shutil.which(tool) is None]
    if missing:
        sys.exit(f"co_peers: {' and '.join(missing)} not found: run scripts/install-system-deps")
    if a.seconds < 2 * EVERY_S or not math.isfinite(a.seconds):
        sys.exit(f"co_peers: --seconds must be at least {2 * EVERY_S:g} (two stall periods)")
    rows = measure(a.seconds, a.rounds)
    print(table(rows, a.seconds, a.rounds))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
