"""`corebench capacity URL --slo "p99<=20ms"`: the highest rate the server
sustains within the objective, with the steps that found it."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import typer

from corebench.cli import app, common
from corebench.errors import UsageError
from corebench.units import parse_duration_s

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
    arrivals: str = typer.Option("poisson", "--arrivals", help="poisson (default: many independent users) or uniform."),
    precision: str = typer.Option("2%", "--precision", help="Stop when the limit is bracketed within ± this share."),
    start_rate: float | None = typer.Option(
        None, "--start-rate", help="The first rate (req/s); default: half what a short closed-loop probe reaches."
    ),
    min_rate: float = typer.Option(1.0, "--min-rate", help="The lowest rate tried (req/s)."),
    max_rate: float = typer.Option(1_000_000.0, "--max-rate", help="The highest rate tried (req/s)."),
    step: str = typer.Option(
        "2s", "--step", help="Shortest step; a step lasts long enough for its percentile (5,000 requests for a p99)."
    ),
    max_step: str = typer.Option("60s", "--max-step", help="Longest step."),
    max_steps: int = typer.Option(30, "--max-steps", help="Give up (exit 1) after this many steps."),
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
    report: Path | None = typer.Option(
        None, "-o", "--report", help="Write an HTML report: the answer, the steps, latency vs offered rate."
    ),
) -> None:
    """Find the highest open-loop rate that meets a latency objective (and at most 1% errors)."""
    from corebench import engine
    from corebench.plan.objective import parse_objective
    from corebench.runner import capacity as cap

    try:
        objective = parse_objective(slo)
    except ValueError as e:
        raise UsageError(f"--slo {e}") from None
    settings = cap.SearchSettings(
        precision=_share("--precision", precision),
        start_rps=_positive("--start-rate", start_rate) if start_rate is not None else None,
        min_rps=_positive("--min-rate", min_rate),
        max_rps=_positive("--max-rate", max_rate),
        min_step_s=_seconds("--step", step),
        max_step_s=_seconds("--max-step", max_step),
        arrivals=arrivals,
        max_steps=max_steps,
    )
    if max_steps < 1:
        raise UsageError(f"--max-steps {max_steps}: give at least 1")
    if settings.min_rps > settings.max_rps:
        raise UsageError(f"--min-rate {min_rate:g} is above --max-rate {max_rate:g}")
    if settings.min_step_s > settings.max_step_s:
        raise UsageError(f"--step {step} is longer than --max-step {max_step}")
    limit_s = objective.latency_limit_us / 1e6
    given = common.settings(
        _FLAGS,
        url=url,
        # Validated as the open loop each step is; the search sets rate and length.
        rate=settings.min_rps,
        arrivals=arrivals,
        duration=1.0,
        concurrency=concurrency,
        keep_alive=keep_alive,
        headers=common.headers(header),
        timeout=timeout if timeout is not None else min(30.0, max(1.0, 20 * limit_s)),
        threads=threads,
        allow_remote=allow_remote,
    )
    base = common.to_config(given, _FLAGS)
    quiet = json_out == "-"
    result = cap.search(base, objective, settings, engine.run, None if quiet else _print_step)
    out = sys.stderr if quiet else sys.stdout
    out.write(_table(result) + "\n" + result.sentence() + "\n")
    if json_out:
        common.write(json_out, json.dumps(asdict(result), indent=2) + "\n", "--json")
    if report is not None:
        from corebench.report.capacity import html

        common.write(str(report), html(result), "--report")
    if result.outcome not in ("found", "above-max"):
        raise typer.Exit(1)


def _print_step(s: object) -> None:
    from corebench.runner.capacity import Step

    assert isinstance(s, Step)
    verdict = "meets" if s.meets else f"misses: {s.why}"
    print(f"  {s.rate_rps:>12,.1f} req/s for {s.duration_s:.1f}s: {verdict}", flush=True)


def _table(c: object) -> str:
    from corebench.runner.capacity import Capacity

    assert isinstance(c, Capacity)
    if not c.steps:
        return f"Capacity search, {c.objective}, {c.arrivals} arrivals: no step measured."
    head = f"{'offered':>12} {'achieved':>12} {'p50 ms':>9}  " + "  ".join(f"{t:>14}" for t, _, _ in c.steps[0].judged)
    lines = [f"Capacity search, {c.objective}, {c.arrivals} arrivals:", head + "  verdict"]
    for s in c.steps:
        cells = "  ".join(f"{v:>14}" for _, v, _ in s.judged)
        verdict = "meets" if s.meets else "misses"
        if s.few_samples:
            verdict += " (fewer samples than the percentile needs: --max-step)"
        lines.append(f"{s.rate_rps:>12,.1f} {s.achieved_rps:>12,.1f} {s.p50_us / 1000:>9.3f}  {cells}  {verdict}")
    return "\n".join(lines)


def _share(flag: str, text: str) -> float:
    try:
        v = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise UsageError(f"{flag} {text!r}: give a share like 2% or 0.02") from None
    if not 0 < v < 0.5:
        raise UsageError(f"{flag} {text!r}: give a share between 0 and 50%, like 2%")
    return v


def _positive(flag: str, v: float) -> float:
    if not v > 0:
        raise UsageError(f"{flag} {v:g}: give a positive rate in requests per second")
    return v


def _seconds(flag: str, text: str) -> float:
    try:
        v = parse_duration_s(text)
    except ValueError as e:
        raise UsageError(f"{flag} {text!r}: {e}") from None
    if not v > 0:
        raise UsageError(f"{flag} {text!r}: give a positive duration, like 2s")
    return v
