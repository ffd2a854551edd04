"""The runner stage: for each run of the plan, the target on its CPUs, the
load on the other cores, the monitor beside it, and the run committed to
the store the moment it ends. A failing target or engine fails that run,
never the experiment; Ctrl-C or SIGTERM discards the run in progress, stops
the target and keeps everything committed (`--resume` goes on from there)."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from corebench import __version__
from corebench.analysis import precision
from corebench.config.load import LoadConfig
from corebench.errors import UsageError
from corebench.monitor import Monitor
from corebench.plan import Experiment
from corebench.plan.engine_config import run_config
from corebench.plan.model import Target
from corebench.plan.objective import SearchSettings
from corebench.result import LoadResult
from corebench.runner import baseline, calibrate, capacity, host, schedule
from corebench.runner.backend import LoadBackend, LoadFailed, Local, open_backend
from corebench.runner.preflight import Checked
from corebench.runner.progress import Progress
from corebench.store import Capacity, Ceiling, HostFacts, PlanRecord, Store, StoredExperiment, StoredRun, TargetInfo
from corebench.targets import filesystem, process, recipes, services
from corebench.targets.cpus import CpuControl, Layout


class Interrupted(Exception):
    """Ctrl-C or SIGTERM: the run in progress was discarded."""


@dataclass
class Outcome:
    experiment_id: int
    ok: int = 0
    failed: int = 0
    starts: int = 0
    skipped: int = 0
    measured_s: float = 0.0
    starts_s: float = 0.0
    wall_s: float = 0.0
    interrupted: bool = False


@dataclass
class _Running:
    """The target as it runs for one configuration."""

    key: str
    target: Target
    layout: Layout
    started: process.Started | None = None
    mounted: filesystem.Mounted | None = None
    services: list[services.StartedService] = field(default_factory=list)
    error: str | None = None
    info: TargetInfo = field(default_factory=TargetInfo)


def plan_record(exp: Experiment) -> PlanRecord:
    """The plan as run: validated, its factors' levels, and the command
    line's overrides (which --resume applies again)."""
    return PlanRecord(
        plan=exp.plan.model_dump(mode="json", by_alias=True), factors=exp.factors, overrides=exp.overrides
    )


def run_experiment(checked: Checked, store: Store, *, resume: bool = False, quiet: bool = False) -> Outcome:
    """Runs a plan that passed `preflight.check`, storing each run as it ends."""
    control = CpuControl()
    with open_backend(checked.exp.plan.cluster) as backend:
        return _run_all(checked.exp, store, checked.runs, control, backend, resume=resume, quiet=quiet)


def _run_all(
    exp: Experiment,
    store: Store,
    runs: list[schedule.Run],
    control: CpuControl,
    backend: LoadBackend,
    *,
    resume: bool,
    quiet: bool,
) -> Outcome:
    e = exp.plan.experiment
    if resume:
        exp_id = store.latest_experiment(exp.digest)
        if exp_id is None:
            raise UsageError(
                f"{store.path}: no experiment of {exp.path} (this exact plan) to resume; run it without --resume"
            )
        done = store.done(exp_id)
    else:
        t = recipes.expand(exp.points[0].target)
        server = host.server_version(t.version_command, t.builtin is not None)
        exp_id = store.new_experiment(
            StoredExperiment(
                name=e.name,
                plan_path=str(exp.path),
                plan_toml=exp.text,
                plan_digest=exp.digest,
                plan=plan_record(exp),
                host=HostFacts.model_validate(host.facts(control.method, server)),
                runs_planned=len(runs),
                created_unix=time.time(),
                corebench_version=__version__,
            )
        )
        done = set()
    todo = schedule.remaining(runs, done)
    out = Outcome(exp_id, skipped=sum(not r.warmup and (r.point.key, r.repetition) in done for r in runs))
    show = Progress(todo, exp, quiet)
    show.console.print(show.plan_line(e.rounds_max if e.repetitions == "auto" else None))
    work_dir = Path(tempfile.mkdtemp(prefix=filesystem.WORK_PREFIX))
    os.chmod(work_dir, 0o755)  # servers that drop privileges read their folders in it
    filesystem.claim(work_dir)  # its images are not a killed run's leftovers
    affinity = os.sched_getaffinity(0)
    previous_term = signal.signal(signal.SIGTERM, _raise_interrupt)
    running: _Running | None = None
    started = time.monotonic()
    try:
        ceilings = _ceilings(exp, store, exp_id, control, backend, work_dir)
        _baseline(exp, store, exp_id, control)
        rnd = max((r.round for r in runs), default=0)
        while True:
            for run in todo:
                running = _ensure_target(exp, run, running, control, work_dir, out)
                _one(exp, run, running, store, show, out, backend, ceilings)
                if e.cooldown_s:
                    time.sleep(e.cooldown_s)
            todo, rnd = _next_round(exp, store, exp_id, rnd + 1)
            if not todo:
                break
            show.add(todo)
    except (KeyboardInterrupt, Interrupted):
        out.interrupted = True
    finally:
        # A second Ctrl-C or SIGTERM must not cut the cleanup short: the
        # target would outlive us. Signals wait until it is done.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            _stop(exp, running)
            os.sched_setaffinity(0, affinity)
            show.close()
            shutil.rmtree(work_dir, ignore_errors=True)
        finally:
            signal.signal(signal.SIGTERM, previous_term)
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        out.wall_s = time.monotonic() - started
    return out


def _next_round(exp: Experiment, store: Store, exp_id: int, rnd: int) -> tuple[list[schedule.Run], int]:
    """An adaptive experiment's next round with runs to make, while some
    point's mean is not yet known within the precision asked and rounds are
    left; a resumed experiment skips rounds already stored."""
    e = exp.plan.experiment
    while e.repetitions == "auto" and rnd <= e.rounds_max:
        if precision.enough(precision.goodput_by_point(store.runs(exp_id)), e.target_precision, e.rounds_min):
            break
        todo = schedule.remaining(schedule.round_runs(exp, rnd), store.done(exp_id))
        if todo:
            return todo, rnd
        rnd += 1
    return [], rnd


def _ceilings(
    exp: Experiment, store: Store, exp_id: int, control: CpuControl, backend: LoadBackend, work_dir: Path
) -> list[Ceiling]:
    """The generator's ceiling per CPU layout: measured before the first run,
    or read back when the experiment is resumed."""
    stored = store.experiment(exp_id)
    if stored is not None and stored.calibration:
        return stored.calibration
    if not isinstance(backend, Local) or not exp.plan.experiment.calibrate:
        return []
    found = calibrate.calibrate(exp, control, work_dir)
    store.set_calibration(exp_id, found)
    for c in found:
        Progress.note(c.sentence())
    return found


def _baseline(exp: Experiment, store: Store, exp_id: int, control: CpuControl) -> None:
    """The plan's CPU baseline at each cpus level, once per experiment (a
    resumed one keeps what it stored)."""
    stored = store.experiment(exp_id)
    if exp.plan.baseline is None or (stored is not None and stored.baseline is not None):
        return
    found = baseline.measure(exp, control)
    store.set_baseline(exp_id, found)
    for level in found.levels:
        at = "no limit" if level.cpus is None else f"cpus={level.cpus:g}"
        times = ", ".join(f"{t:.3f}" for t in level.seconds) or "none"
        why = f"; {level.error}" if level.error else ""
        Progress.note(f"baseline {' '.join(found.argv)} at {at}: {times} s{why}")


def _search(
    cfg: LoadConfig, settings: SearchSettings, backend: LoadBackend, show: Progress
) -> tuple[Capacity, LoadResult | None, str | None]:
    """A run that is a capacity search: stored with the measurement at the
    rate it sustained (or its last step), failed when it found no rate."""
    found = capacity.search(cfg, settings, lambda c: backend.run(c, show.tick))
    result = found.sustained() or (found.results[-1] if found.results else None)
    error = None if found.outcome in ("found", "above-max") else f"capacity search: {found.sentence()}"
    return found, result, error


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _ensure_target(
    exp: Experiment, run: schedule.Run, running: _Running | None, control: CpuControl, work_dir: Path, out: Outcome
) -> _Running:
    """Starts the target afresh where the schedule says (each visit of an
    interleaved round), when a target factor changes, or when it died."""
    point = run.point
    key = point.target_key(exp.target_factors)
    alive = running is not None and running.started is not None and running.started.proc.poll() is None
    # A target that failed to start is not retried within its visit: its
    # runs fail at once with the same reason.
    same = running is not None and running.key == key
    if same and running is not None and (point.target.url or (not run.start and (alive or running.error))):
        return running
    _stop(exp, running)
    t = point.target
    try:
        own = {name: svc.cpus for name, svc in t.services.items()}
        layout = control.layout(t.cpus, own) if t.url is None else control.layout(None)
    except (OSError, RuntimeError) as e:
        running = _Running(key, t, control.layout(None))
        running.error = f"CPU layout: {e}"
        Progress.note(running.error)
        return running
    running = _Running(key, t, layout)
    if t.url is not None:
        running.info = TargetInfo(kind="url", base_url=t.url)
        return running
    try:
        began = time.monotonic()
        run_dir = work_dir / f"target-{out.starts}"
        out.starts += 1
        try:
            if t.filesystem is not None:
                running.mounted = filesystem.mount(t.filesystem, run_dir)
                running.info.filesystem = dict(running.mounted.facts)
            if t.services:
                running.services = services.start_all(t.services, point.levels, layout, exp.path.parent, run_dir)
                running.info.services = {s.name: s.facts() for s in running.services}
            values = point.levels | services.values_of(running.services)
            running.started = process.start(t, values, layout, exp.path.parent, run_dir, point.load.path)
        except BaseException:
            _stop(exp, running)  # start() stopped the process; its cgroups and filesystem go too
            raise
        out.starts_s += time.monotonic() - began
        running.info = running.info.model_copy(
            update={
                "kind": "builtin" if t.builtin else t.recipe or "command",
                "pid": running.started.proc.pid,
                "argv": running.started.argv,
                "base_url": running.started.base_url,
                "ready_s": running.started.ready_s,
                "cpus_allowed": process.cpus_allowed(running.started.proc.pid),
            }
        )
    except (process.TargetError, filesystem.FilesystemError) as e:
        running.error = f"target not started: {e}"
        Progress.note(running.error)
    return running


def _stop(exp: Experiment, running: _Running | None) -> None:
    if running is None:
        return
    if running.started is not None:
        process.stop(running.started.proc, running.target)
        running.started = None
    services.stop_all(running.services)
    running.services = []
    CpuControl.release(running.layout)
    if running.mounted is not None:
        # The target's log lives on the image: kept beside it, for the record.
        filesystem.unmount(running.mounted, keep=("target.log",))
        running.mounted = None


def _one(
    exp: Experiment,
    run: schedule.Run,
    running: _Running,
    store: Store,
    show: Progress,
    out: Outcome,
    backend: LoadBackend,
    ceilings: list[Ceiling],
) -> None:
    e = exp.plan.experiment
    show.begin(run.label(e.repetitions))
    began = time.time()
    result, error = None, running.error
    monitor = None
    found: Capacity | None = None
    if error is None:
        base_url = running.started.base_url if running.started else str(run.point.target.url)
        cfg = run_config(exp.plan, run.point.load, base_url, exp.path.parent, warmup=run.warmup)
        if running.layout.method != "none":
            os.sched_setaffinity(0, running.layout.generator_cpus)
        pid = running.started.proc.pid if running.started else None
        if e.drop_caches and not run.warmup:
            host.drop_caches()
        devices = [Path(running.mounted.facts["device"]).name] if running.mounted and running.mounted.facts else []
        groups = {s.name: s.proc.pid for s in running.services}
        accounting = {"target": running.layout.accounting} | {
            s.name: running.layout.of(s.name).accounting for s in running.services
        }
        with Monitor(pid, len(running.layout.generator_cpus), devices, groups, accounting) as monitor:
            try:
                if exp.plan.search is None or run.warmup:
                    result = backend.run(cfg, show.tick)
                else:
                    found, result, error = _search(cfg, exp.plan.search, backend, show)
            except LoadFailed as x:
                error = str(x)
        if result is not None and result.interrupted:
            raise Interrupted
        if result is not None and result.successes == 0:
            # Measured and kept, but not a healthy run: nothing succeeded.
            error = f"no request succeeded: {result.requests:,} sent; {result.failures()}"
        if running.started is not None and running.started.proc.poll() is not None:
            code = running.started.proc.returncode
            error = (
                f"the target exited with status {code} during the run; its output ends:\n"
                f"{process.tail(running.started.log_path)}"
            )
            process.stop(running.started.proc, running.target)  # its group's stragglers too
            running.started = None  # restarted before the next run
    ended = time.time()
    summary = monitor.summary(busy_poll=(run.point.load.busy_poll or 0) > 0) if monitor else None
    if summary is not None and result is not None:
        summary = backend.monitor(summary, result)
    ceiling = calibrate.ceiling_for(ceilings, running.layout)
    layout = backend.layout(running.layout.record())
    if ceiling is not None:
        layout = layout.model_copy(update={"generator_ceiling_rps": round(ceiling.ceiling_rps)})
    bound = None
    if result is not None and running.layout.method != "none":
        bound = calibrate.lower_bound(result.throughput_rps, layout, summary, ceiling)
    stored = StoredRun(
        experiment_id=out.experiment_id,
        seq=run.seq,
        point=run.point.levels,
        point_key=run.point.key,
        repetition=run.repetition,
        warmup=run.warmup,
        status="failed" if error else "ok",
        error=error,
        started_unix=began,
        ended_unix=ended,
        layout=layout,
        target=running.info,
        monitor=summary,
        result=result,
        search=found,
        round=run.round,
        position=run.position,
        lower_bound=bound,
    )
    store.add_run(stored, [s.to_json() for s in (monitor.samples if monitor else [])])
    if error:
        out.failed += 1
        show.end(f"FAILED: {error.splitlines()[0]}")
        return
    assert result is not None  # a load without an error has its result
    out.ok += 1
    out.measured_s += result.duration_s
    show.end(ran_line(result, bound))


def ran_line(result: LoadResult, bound: str | None) -> str:
    """A measured run in one line, with the figures the analysis takes from
    it: throughput is successes (docs/analysis.md), and the failures are
    errors and unsuccessful statuses (less a replay's as its log recorded them)."""
    p99 = result.latency_us.total.at(99.0) / 1000
    flag = f" [lower bound: {bound}]" if bound else ""
    return f"{result.goodput_rps:,.0f} req/s, p99 {p99:.2f} ms, {result.failed_requests:,} failed{flag}"
