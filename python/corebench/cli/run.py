"""`corebench run plan.toml`: an experiment across cores and configurations,
every run stored as it ends; and `corebench sweep URL -c 1,5,10`, a
concurrency sweep against a running server without a plan."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tomli_w
import typer

from corebench.cli import app, common
from corebench.errors import UsageError

if TYPE_CHECKING:
    from corebench.plan import ExperimentPlan
    from corebench.runner.experiment import Again
    from corebench.store import Store

STORE = typer.Option(None, "--store", help="SQLite store (default: PLAN's name with .sqlite, in the current folder).")
RESUME = typer.Option(
    False, "--resume", help="Continue the latest experiment of this exact plan in the store: run only what is missing."
)
SESSION = typer.Option(
    False,
    "--session",
    help="Run every run of the plan again as a new session of its latest experiment in the store: the report "
    "then says whether each effect replicated across sessions.",
)
DRY_RUN = typer.Option(False, "--dry-run", help="Print the runs in their order and exit.")
QUIET = typer.Option(False, "--quiet", "-q", help="No live progress line.")


def _open_store(path: Path) -> Store:
    from corebench.store import Store

    try:
        return Store(path)
    except ValueError as e:
        raise UsageError(f"--store {e}") from None


def _execute(exp: ExperimentPlan, store_path: Path, again: Again, dry_run: bool, quiet: bool, force: bool) -> None:
    from corebench import runner
    from corebench.runner import preflight

    checked = preflight.check(exp)
    for note in checked.notes:
        print(f"corebench: {note}")
    if dry_run:
        e = exp.plan.experiment
        runs = checked.runs
        for r in runs:
            start = "start " if r.start else "      "
            print(f"{r.seq:4d}  round {r.round:<3d} {start} {r.label(e.repetitions)}")
        more = (
            f" (the first {e.rounds_min} rounds; then a round at a time, up to {e.rounds_max}, until every point's "
            f"mean throughput is known within ±{e.target_precision:.0%})"
            if e.repetitions == "auto"
            else ""
        )
        print(f"{len(runs)} runs{more}")
        return
    store = _open_store(store_path)
    try:
        out = runner.run_experiment(checked, store, again=again, quiet=quiet, force=force)
    finally:
        store.close()
    stored = out.ok + out.failed
    print(
        f"corebench: experiment {out.experiment_id} in {store_path}: {stored} runs stored "
        f"({out.ok} ok, {out.failed} failed)"
        + (f", {out.skipped} already there" if out.skipped else "")
        + f"; measured {out.measured_s:.1f} s in {out.wall_s:.1f} s of wall time "
        f"({out.starts} target starts, {out.starts_s:.1f} s)"
    )
    if out.store_error:
        print(
            f"corebench: error: {out.store_error}; the experiment stopped there: that run is lost, every run before "
            f"it is stored; free space and continue with: corebench run {exp.path} --store {store_path} --resume",
            file=sys.stderr,
        )
        raise typer.Exit(1)
    if out.interrupted:
        go_on = (
            f"corebench run {exp.path} --store {store_path} --resume"
            if exp.path.exists()
            else "the same command, into a new store"
        )
        print(f"corebench: interrupted; the run in progress was discarded. Continue with: {go_on}")
        raise typer.Exit(128 + (out.signal or signal.SIGINT))
    gate_failed = _gates(exp, store_path, out.experiment_id)
    if out.failed:
        raise typer.Exit(1)
    if gate_failed:
        raise typer.Exit(99)


def _gates(exp: ExperimentPlan, store_path: Path, experiment_id: int) -> bool:
    """The plan's [thresholds], point by point; True when one failed."""
    if not exp.plan.thresholds:
        return False
    from corebench.analysis.analyse import analyse, read

    found = analyse(*read(store_path, experiment_id))
    gates = found.of("threshold")
    for finding in gates:
        print(f"corebench: {finding.sentence}")
    return any(f.outcome == "fail" for f in gates)


@app.command("run")
def run(
    plan: Path = typer.Argument(..., help="The experiment's plan (TOML)."),
    store: Path | None = STORE,
    resume: bool = RESUME,
    session: bool = SESSION,
    dry_run: bool = DRY_RUN,
    seed: int | None = typer.Option(None, "--seed", help="Seed of the run order (overrides the plan's)."),
    duration: str | None = typer.Option(
        None, "--duration", "-t", help="Length of each run (overrides the plan's, e.g. 2s for a quick pass)."
    ),
    repetitions: str | None = typer.Option(
        None, "--repetitions", "-r", help='Measured runs per point, or "auto" (overrides the plan\'s).'
    ),
    quiet: bool = QUIET,
    force: bool = common.FORCE,
) -> None:
    """Run an experiment: every point of the plan's factors, repeated, on the CPUs asked for, monitored and stored."""
    from corebench.plan import load_plan

    reps: int | str | None = repetitions
    if repetitions is not None and repetitions != "auto":
        try:
            reps = int(repetitions)
        except ValueError:
            raise UsageError(f"-r {repetitions!r}: give a number of measured runs per point, or auto") from None
    overrides = {k: v for k, v in (("seed", seed), ("duration", duration), ("repetitions", reps)) if v is not None}
    store_path = store or Path(plan.stem + ".sqlite")
    if resume and session:
        raise UsageError("--resume and --session: give one (--resume runs what is missing, --session every run again)")
    if resume or session:
        overrides = _resumed_overrides(plan, store_path, overrides, "--session" if session else "--resume")
    exp = load_plan(plan, overrides)
    if session and exp.plan.experiment.repetitions == "auto":
        raise UsageError(
            '--session with repetitions = "auto": a session repeats a fixed schedule; give -r N (or resume with '
            "--resume)"
        )
    _execute(exp, store_path, "session" if session else "resume" if resume else "new", dry_run, quiet, force)


def _resumed_overrides(plan: Path, store_path: Path, given: dict[str, Any], flag: str) -> dict[str, Any]:
    """--resume and --session go on with the overrides the experiment was
    started with; other ones would make it another experiment."""
    try:
        text = plan.read_text()
    except (OSError, UnicodeDecodeError):
        return given  # load_plan says what is wrong with the file
    if not store_path.exists():
        return given  # the runner says there is nothing to resume
    s = _open_store(store_path)
    try:
        exp = s.latest_of_plan(text)
    finally:
        s.close()
    if exp is None:
        return given
    stored = exp.plan.overrides if "overrides" in exp.plan.model_fields_set else None
    if stored is None:  # stored before overrides were kept: only the same ones find it
        return given
    if given and given != stored:
        was = " ".join(f"--{k} {v}" for k, v in stored.items()) or "no overrides"
        raise UsageError(
            f"{flag}: experiment {exp.id} in {store_path} was started with {was}; give the same options or none "
            f"(they are stored with it), or start a new experiment without {flag}"
        )
    return dict(stored)


def _levels(text: str) -> list[int]:
    """-c's levels, each a number once: the plan sweep builds is internal,
    so its errors would name a file the user never wrote."""
    try:
        levels = [int(x) for x in text.split(",")]
    except ValueError:
        raise UsageError(f"-c {text!r}: give concurrency levels as numbers, like 1,5,10,20,50") from None
    if min(levels) < 1:
        raise UsageError(f"-c {text!r}: give concurrency levels of at least 1, like 1,5,10,20,50")
    twice = sorted({n for n in levels if levels.count(n) > 1})
    if twice:
        raise UsageError(f"-c {text!r}: level {twice[0]} is given twice (more runs of each: raise -r)")
    return levels


@app.command("sweep")
def sweep(
    url: str = typer.Argument(..., help="A running server's URL (loopback)."),
    concurrency: str = typer.Option(..., "-c", "--concurrency", help="Concurrency levels: 1,5,10,20,50."),
    duration: str = typer.Option("10s", "-t", "--duration", help="Length of each run."),
    # 3 measured runs per level: the fewest that give a spread worth reading.
    repetitions: int = typer.Option(3, "--repetitions", "-r", help="Measured runs per level."),
    warmup: int = typer.Option(1, "--warmup", help="Warm-up runs before each round's visit (stored, never counted)."),
    keep_alive: bool = typer.Option(True, "--keep-alive/--no-keep-alive", "-k", help="Reuse connections."),
    store: Path | None = STORE,
    dry_run: bool = DRY_RUN,
    quiet: bool = QUIET,
    force: bool = common.FORCE,
) -> None:
    """Sweep the concurrency against a running server: the last field report's experiment in one command."""
    from corebench.plan import build

    levels = _levels(concurrency)
    table = {
        "experiment": {"name": "sweep", "repetitions": repetitions, "warmup": warmup, "duration": duration},
        "factors": {"concurrency": levels},
        "target": {"url": url},
        "load": {"url": url, "concurrency": "{concurrency}", "keep_alive": keep_alive},
    }
    # The plan as a user would have written it: stored beside the results.
    text = tomli_w.dumps(table)
    exp = build(Path("sweep.toml"), text, table, {})
    store_path = store or Path("sweep.sqlite")
    _execute(exp, store_path, "new", dry_run, quiet, force)
    if not dry_run:
        _table(store_path)


def _table(store_path: Path) -> None:
    """Per level, over the measured runs: median goodput and latency."""
    import statistics

    from corebench.result import LoadResult

    s = _open_store(store_path)
    try:
        exp_id = s.newest_experiment()
        runs = s.runs(exp_id) if exp_id is not None else []
    finally:
        s.close()
    by: dict[int, list[LoadResult]] = {}
    for r in runs:
        if r.measured and r.result is not None:
            by.setdefault(int(r.point["concurrency"]), []).append(r.result)
    print(f"{'concurrency':>11} {'runs':>4} {'good req/s':>15} {'p50 ms':>8} {'p99 ms':>8} {'failed':>7}")
    for c in sorted(by):
        rs = by[c]
        print(
            f"{c:11d} {len(rs):4d} {statistics.median(x.goodput_rps for x in rs):15,.0f} "
            f"{statistics.median(x.latency_us.total.at(50.0) for x in rs) / 1000:8.3f} "
            f"{statistics.median(x.latency_us.total.at(99.0) for x in rs) / 1000:8.3f} "
            f"{sum(x.failed_requests for x in rs):7d}"
        )
