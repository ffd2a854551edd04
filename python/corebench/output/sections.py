"""The parts of the text report that ab has no place for: how an open-loop
schedule was kept (with latency corrected for coordinated omission beside
the uncorrected figures), siege's summary for users, the slowest URLs of a
list or a log, and what a replay skipped."""

from __future__ import annotations

from corebench.result import CLIENT_BOUND_SHARE, LoadResult, UrlSummary

SLOWEST = 10
_TAIL = (50.0, 90.0, 99.0, 99.9, 100.0)


def _ms(us: float) -> str:
    return f"{us / 1000:.3f}"


def _successful(r: LoadResult) -> str:
    """Where some responses had a status other than 2xx or 3xx: failures
    are never throughput."""
    ok = r.successes / r.duration_s if r.duration_s else 0.0
    return f"; {ok:.2f} successful"


def schedule(r: LoadResult) -> list[str]:
    s = r.schedule
    if s is None:
        return []
    out = [
        "",
        "Open-loop schedule",
        f"  Target rate:          {s.target_rps:.2f} [#/sec] over {s.window_s:.3f} s{_arrivals(r)}",
        f"  Achieved rate:        {r.throughput_rps:.2f} [#/sec] (responses over the run)"
        + (_successful(r) if r.successes != r.responses else ""),
        f"  Sent on schedule:     {s.sent - s.late} of {s.sent + s.dropped}; late {s.late}, dropped {s.dropped}",
        f"  Send lag (ms):        p50 {_ms(s.send_lag_p50_us)}, p99 {_ms(s.send_lag_p99_us)}, "
        f"max {_ms(s.send_lag_max_us)}",
        f"  In flight:            mean {s.mean_in_flight:.1f} (Little's law), "
        f"{_peak(r)} of {r.concurrency} connections",
    ]
    if not s.kept and not r.interrupted:
        out.append(
            f"  WARNING: the rate was not kept: {s.dropped} sends dropped and {s.late} late because all "
            f"{r.concurrency} connections were busy. Raise -c, or the server cannot take this rate."
        )
    corrected, raw = r.latency_us.total, r.latency_us.uncorrected
    if raw is not None and corrected.count:
        out += ["", "Latency (ms)     from intended send   from actual send (uncorrected)"]
        for p in _TAIL:
            label = "max" if p == 100.0 else f"p{p:g}"
            out.append(f"  {label:<8}{_ms(corrected.at(p)):>20}{_ms(raw.at(p)):>33}")
    return out


def _peak(r: LoadResult) -> str:
    assert r.schedule is not None
    # Each thread keeps its own peak, and they need not coincide.
    bound = "peak" if r.threads == 1 else "peak at most"
    return f"{bound} {r.schedule.peak_in_flight}"


def _statuses(u: UrlSummary) -> str:
    seen = ",".join(f"{c}" for c in u.status_seen)
    if not u.status_logged:
        return seen
    logged = ",".join(f"{c}" for c in u.status_logged)
    return f"{seen} (log {logged})" if u.status_mismatches else seen


def urls(r: LoadResult) -> list[str]:
    if len(r.urls) < 2 and r.replay is None:
        return []
    # By mean: a URL requested once would top a ranking by p99 on one sample.
    slowest = sorted(r.urls, key=lambda u: u.mean_us, reverse=True)[:SLOWEST]
    out = [
        "",
        f"Slowest URLs (of {len(r.urls)}, by mean; ms)",
        "   count   errors     mean      p50      p99      max  status      URL",
    ]
    for u in slowest:
        out.append(
            f"{u.responses + u.errors:8d} {u.errors:8d} {_ms(u.mean_us):>8} {_ms(u.p50_us):>8} {_ms(u.p99_us):>8} "
            f"{_ms(u.max_us):>8}  {_statuses(u):<10}  {u.method} {u.target[:80]}"
        )
    mismatched = sum(u.status_mismatches for u in r.urls)
    if r.replay is not None:
        out.append(f"Status differs from the log: {mismatched} responses (e.g. a logged 304 needs the client's cache)")
    return out


def replay(r: LoadResult) -> list[str]:
    src = r.replay
    if src is None:
        return []
    skipped = sum(s.count for s in src.skipped)
    out = [
        "",
        f"Replayed log:           {src.path} ({src.log_format})",
        f"  Lines read:           {src.lines}"
        + (" (stopped there: the rest of the log was not needed for --limit or -n)" if src.stopped_at_limit else ""),
        f"  Replayed:             {src.replayed}",
        f"  Skipped:              {skipped}",
    ]
    out += [f"    {s.count:8d}  {s.reason}" for s in src.skipped]
    out += [f"    line {e.line}: {e.reason}" + (f": {e.text}" if e.text else "") for e in src.skipped_examples]
    if r.schedule is not None:
        out.append(
            f"  Log span:             {src.span_s:.0f} s; {src.out_of_order} lines stamped earlier than a line "
            "before them, sent at their own time"
        )
    return out


def siege(r: LoadResult) -> list[str]:
    if r.model != "users":
        return []
    from corebench.output.siege import SiegeText

    return ["", "siege summary"] + SiegeText().render(r, None).rstrip("\n").split("\n")  # type: ignore[arg-type]


# Agents start at one agreed instant; later than this is worth a word.
AGENT_LATE_S = 0.05


def agents(r: LoadResult) -> list[str]:
    if not r.agents:
        return []
    nodes = len({a.node for a in r.agents})
    # Which agents held responses, where the default's probes ran.
    probed = r.linger_probes.probes > 0
    out = [
        "",
        f"Agents: {len(r.agents)} on {nodes} node(s)",
        f"  agent  conns  requests   failed      req/s   p99 ms  CPU use{'  probes held' if probed else ''}  node",
    ]
    for a in r.agents:
        held = f"  {f'{a.linger_probes.held} of {a.linger_probes.probes}':>11}" if probed else ""
        out.append(
            f"  {a.index:5d} {a.concurrency:6d} {a.requests:9d} {a.failures:8d} {a.goodput_rps:10.2f} "
            f"{_ms(a.p99_us):>8} {a.cpu_utilization:8.0%}{held}  {a.node}"
        )
    for a in r.agents:
        if a.start_lag_s > AGENT_LATE_S:
            out.append(
                f"  WARNING: agent {a.index} began {a.start_lag_s:.3f} s after the agreed start (slow to "
                "prepare, or its clock ahead of this one): its first second carried less load."
            )
        if a.cpu_utilization >= CLIENT_BOUND_SHARE:
            out.append(
                f"  WARNING: agent {a.index} used {a.cpu_utilization:.0%} of its {min(a.threads, a.cores)} "
                "core(s): it, not the server, may have been the limit; add agents or nodes."
            )
    return out


def model_sections(r: LoadResult) -> list[str]:
    return schedule(r) + siege(r) + urls(r) + replay(r) + agents(r)


def _arrivals(r: LoadResult) -> str:
    if r.rate is None:
        return ""
    return ", Poisson arrivals" if r.rate.arrivals == "poisson" else ", evenly spaced"
