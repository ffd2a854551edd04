"""`corebench capacity URL --slo "p99<=20ms"`: the highest rate the server
sustains within the objective, with the steps that found it."""

from __future__ import annotations

import json
import math
import signal
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from corebench.cli import app, common
from corebench.errors import UsageError
from corebench.plan.objective import SearchSettings

if TYPE_CHECKING:
    from corebench.analysis.capacity import Crossing
    from corebench.store import Step


def _default(field: str) -> Any:
    """Defaults are SearchSettings' own, shown in the help."""
    return SearchSettings.model_fields[field].default


# The search's own flags, for errors in the user's words.
_FLAGS = {**common.FLAGS, "arrivals": "--arrivals"}


@app.command(no_args_is_help=True)
def capacity(
    url: str = typer.Argument(..., help="The URL to load (on a loopback address unless --allow-remote)."),
    slo: str = typer.Option(
        ...,
        "--slo",
        help="The objective: p99<=20ms; parts joined by commas (p50<=5ms,p99<=20ms,errors<=0.1%). Errors default to "
        "at most 1%.",
    ),
    arrivals: str | None = typer.Option(
        None, "--arrivals", help=f"poisson (many independent users) or uniform; default {_default('arrivals')}."
    ),
    precision: str | None = typer.Option(
        None,
        "--precision",
        help=f"Stop when the limit is bracketed within ± this share (default {_default('precision'):.0%}).",
    ),
    start_rate: float | None = typer.Option(
        None, "--start-rate", help="The first rate (req/s); default: 3/4 of what a short closed-loop probe reaches."
    ),
    min_rate: float | None = typer.Option(
        None, "--min-rate", help=f"The lowest rate tried (req/s, default {_default('min_rps'):g})."
    ),
    max_rate: float | None = typer.Option(
        None, "--max-rate", help=f"The highest rate tried (req/s, default {_default('max_rps'):,.0f})."
    ),
    step: str | None = typer.Option(
        None,
        "--step",
        help=f"Shortest step (default {_default('min_step_s'):g}s); a step lasts long enough for its percentile "
        "(5,000 requests for a p99).",
    ),
    max_step: str | None = typer.Option(
        None, "--max-step", help=f"Longest step (default {_default('max_step_s'):g}s)."
    ),
    max_steps: int | None = typer.Option(
        None, "--max-steps", help=f"Give up (exit 1) after this many steps (default {_default('max_steps')})."
    ),
    sequential: bool | None = typer.Option(
        None,
        "--sequential/--fixed-steps",
        help="End a step once its misses exceed what its whole length allows (the default), or run every "
        "step its whole length.",
    ),
    concurrency: int | None = typer.Option(
        None, "-c", "--concurrency", help="The most connections a step may open (default 1000)."
    ),
    keep_alive: bool = common.KEEP_ALIVE,
    header: list[str] = common.HEADER,
    timeout: str | None = typer.Option(
        None, "-s", "--timeout", help="Per-request timeout (default 20 × the objective's latency, 1s to 30s)."
    ),
    threads: int | None = common.THREADS,
    allow_remote: bool = common.ALLOW_REMOTE,
    json_out: str | None = typer.Option(None, "--json", help="Write the search as JSON to FILE ('-' for stdout)."),
    force: bool = common.FORCE,
    monitor: str | None = typer.Option(
        None,
        "--monitor",
        help="The target's host measured through Prometheus node_exporter during each step (its /metrics URL): "
        "its CPU at the limit, and whether the CPU was full where the objective was missed.",
    ),
    report: Path | None = typer.Option(
        None, "-o", "--report", help="Write an HTML report: the answer, the steps, latency vs offered rate."
    ),
) -> None:
    """Find the highest open-loop rate that meets a latency objective (and at most 1% errors)."""
    import pydantic

    from corebench import engine
    from corebench.analysis.capacity import limit_estimate
    from corebench.analysis.host_steps import host_lines
    from corebench.machine import Claim
    from corebench.runner import capacity as cap
    from corebench.runner.host_watch import HostWatch

    # By the plan's [search] keys, so errors name one vocabulary, mapped to flags.
    given_search = {
        "slo": slo,
        "precision": precision,
        "arrivals": arrivals,
        "start_rate": start_rate,
        "min_rate": min_rate,
        "max_rate": max_rate,
        "step": step,
        "max_step": max_step,
        "max_steps": max_steps,
        "sequential": sequential,
    }
    try:
        settings = SearchSettings(**{k: v for k, v in given_search.items() if v is not None})
    except pydantic.ValidationError as e:
        raise UsageError(_search_error(e)) from None
    given = common.settings(
        _FLAGS,
        url=url,
        # Validated as the open loop each step is; the search sets rate and length.
        rate=settings.min_rps,
        arrivals=settings.arrivals,
        duration=1.0,
        concurrency=concurrency,
        keep_alive=keep_alive,
        headers=common.headers(header),
        timeout=timeout if timeout is not None else settings.timeout_s(),
        threads=threads,
        allow_remote=allow_remote,
    )
    base = common.to_config(given, _FLAGS)
    quiet = json_out == "-"
    common.monitor_url(monitor)
    watch = HostWatch(engine.run, monitor) if monitor else None

    def on_step(s: Step) -> None:
        if watch is not None:
            watch.mark(s)
        if not quiet:
            _print_step(s)

    with common.stopped_by_signals() as got, Claim("corebench capacity", force) as claim:
        result = cap.search(base, settings, watch or engine.run, on_step)
        sharing = claim.others(claim.began_unix)
    common.said_sharing(sharing, "searched")
    out = sys.stderr if quiet else sys.stdout
    out.write(_table(result) + "\n" + result.sentence() + "\n")
    for line in host_lines(result, watch is not None and watch.local):
        out.write(line + "\n")
    estimate = limit_estimate(result.steps, settings.objective) if result.outcome == "found" else None
    said = _estimate_line(estimate) if estimate is not None else None
    if said is not None:
        out.write(said + "\n")
    if json_out:
        doc = result.model_dump(mode="json") | {"estimate": asdict(estimate) if estimate else None}
        common.write(json_out, json.dumps(doc, indent=2) + "\n", "--json")
    if report is not None:
        from corebench.report.capacity import html

        common.write(str(report), html(result, said, url), "--report")
    if result.outcome == "interrupted":
        raise typer.Exit(128 + (got[0] if got else signal.SIGINT))
    if result.outcome not in ("found", "above-max"):
        raise typer.Exit(1)


def _estimate_line(c: Crossing) -> str:
    lo, hi = c.ci
    ci = f"95% CI {lo:,.0f}–{hi:,.0f}" if math.isfinite(lo) and math.isfinite(hi) else "no finite 95% interval"
    return (
        f"Interpolated limit: {c.rate_rps:,.0f} req/s ({ci}), where the {c.metric} reaches its bound on a line "
        f"through 1/{c.metric} of the {c.steps} steps near it (a queue's latency grows as 1/(1 − ρ): Kingman 1961)."
    )


def _print_step(s: Step) -> None:
    verdict = "meets" if s.meets else f"misses: {s.why}"
    ran = f"{s.settled_s:.1f} of {s.duration_s:.0f}s" if s.settled_s is not None else f"{s.duration_s:.1f}s"
    if s.pooled:
        ran += f", judged with the {s.pooled} step(s) before it at this rate"
    host = f"; host CPU {s.host_cpu:.2f} of {s.host_cpus}" if s.host_cpu is not None else ""
    print(f"  {s.rate_rps:>12,.1f} req/s for {ran}: {verdict}{host}", flush=True)


def _table(c: object) -> str:
    from corebench.store import Capacity

    assert isinstance(c, Capacity)
    if not c.steps:
        return f"Capacity search, {c.objective}, {c.arrivals} arrivals: no step measured."
    watched = any(s.host_cpu is not None for s in c.steps)
    head = f"{'offered':>12} {'achieved':>12} {'p50 ms':>9}  " + "  ".join(f"{t:>14}" for t, _, _ in c.steps[0].judged)
    head += f"  {'host CPUs':>10}" if watched else ""
    lines = [f"Capacity search, {c.objective}, {c.arrivals} arrivals:", head + "  verdict"]
    for s in c.steps:
        cells = "  ".join(f"{v:>14}" for _, v, _ in s.judged)
        if watched:
            cells += f"  {s.host_cpu:>10.2f}" if s.host_cpu is not None else f"  {'-':>10}"
        verdict = "meets" if s.meets else "misses"
        if s.pooled:
            verdict += f" (with the {s.pooled} step(s) before)"
        if s.few_samples:
            verdict += " (fewer samples than the percentile needs: --max-step)"
        lines.append(f"{s.rate_rps:>12,.1f} {s.goodput_rps:>12,.1f} {s.p50_us / 1000:>9.3f}  {cells}  {verdict}")
    return "\n".join(lines)


# A [search] key -> the flag that sets it.
_SEARCH_FLAGS = {
    "slo": "--slo",
    "precision": "--precision",
    "arrivals": "--arrivals",
    "start_rate": "--start-rate",
    "min_rate": "--min-rate",
    "max_rate": "--max-rate",
    "max_steps": "--max-steps",
    "max_step": "--max-step",
    "step": "--step",
}


def _search_error(e: object) -> str:
    import pydantic

    assert isinstance(e, pydantic.ValidationError)
    err = e.errors()[0]
    key = str(err["loc"][0]) if err["loc"] else ""
    message = err["msg"].removeprefix("Value error, ")
    if key:
        return f"{_SEARCH_FLAGS.get(key, key)}: {message}"
    # A check across settings names them by their keys: say the flags.
    return " ".join(_SEARCH_FLAGS.get(w, w) for w in message.split(" "))
