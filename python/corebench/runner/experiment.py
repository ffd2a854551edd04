"""An experiment as it runs: `ExperimentRun` holds what every step needs
(the plan, the store, where the load comes from, where the target runs,
the progress display, the tally) and visits the schedule's runs in order.
For each run the target is up on its CPUs (a `TargetSession` from the
`TargetHost`), the load runs on the other cores with the monitor beside
it, and the run is committed to the store the moment it ends."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Literal, NamedTuple

from corebench import __version__
from corebench.analysis import precision
from corebench.config.settings import LoadConfig
from corebench.errors import UsageError
from corebench.machine import Claim
from corebench.monitor import RunMonitor
from corebench.monitor.exporter import Exporter
from corebench.plan import ExperimentPlan
from corebench.plan.experiment import run_config
from corebench.result import LoadResult
from corebench.runner import baseline, calibrate, capacity, schedule
from corebench.runner.backend import LoadBackend, LoadFailed, Local, open_backend
from corebench.runner.calibrate_hosts import calibrate_hosts
from corebench.runner.preflight import Checked
from corebench.runner.progress import Progress
from corebench.runner.remote import RayHost
from corebench.store import (
    Baseline,
    Capacity,
    Ceiling,
    HostFacts,
    MonitorSummary,
    PlanRecord,
    Store,
    Stored,
    StoredExperiment,
    StoredRun,
    StoreWriteError,
)
from corebench.system import check
from corebench.targets.cpus import CpuControl, plan_layout
from corebench.targets.session import LocalHost, TargetHost, TargetSession


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
    # The signal that stopped it (SIGINT for Ctrl-C), for the exit status.
    signal: int | None = None
    # Why the store could not take a run (a full disk): the experiment stopped there.
    store_error: str | None = None


@dataclass
class Measured:
    """What one run measured: its result, why it failed (when it did), the
    monitor that watched it, and the capacity search it was."""

    began_unix: float
    ended_unix: float
    result: LoadResult | None = None
    error: str | None = None
    # Other corebench measurements on this machine when the run began.
    sharing: list[str] = field(default_factory=list)
    monitor: RunMonitor | None = None
    # A running server's host, through node_exporter ([target] monitor).
    exporter: Exporter | None = None
    search: Capacity | None = None


@dataclass
class ExperimentRun:
    """One experiment in the store, run by `visit`ing its schedule's runs."""

    exp: ExperimentPlan
    store: Store
    backend: LoadBackend
    host: TargetHost
    show: Progress
    out: Outcome
    ceilings: list[Ceiling] = field(default_factory=list)
    # The target as it runs for the current configuration.
    target: TargetSession | None = None
    # The invocation's session, and where a new session's numbering goes
    # on from (`--session`: seq, round and repetitions after the stored ones).
    session: int = 1
    after: Stored | None = None
    # This process's claim on the machine (`runner.machine`): who else
    # measured beside a run marks it.
    machine: Claim | None = None
    # Each point's latest capacity answer, where a search found one: a
    # later round's search starts from it (capacity.seeded).
    answers: dict[str, float] | None = None

    def visit(self, run: schedule.Run) -> None:
        target = self._target_for(run)
        self._store(run, self._measure(run, target))
        if self.exp.plan.experiment.cooldown_s:
            time.sleep(self.exp.plan.experiment.cooldown_s)

    def next_round(self, rnd: int) -> tuple[list[schedule.Run], int]:
        """An adaptive experiment's next round with runs to make, while some
        point's mean is not yet known within the precision asked and rounds
        are left; a resumed experiment skips rounds already stored."""
        e = self.exp.plan.experiment
        exp_id = self.out.experiment_id
        while e.repetitions == "auto" and rnd <= e.rounds_max:
            by_point = precision.goodput_by_point(self.store.runs(exp_id))
            if precision.enough(by_point, e.target_precision, e.rounds_min):
                break
            todo = schedule.remaining(schedule.round_runs(self.exp, rnd), self.store.done(exp_id))
            if todo:
                return todo, rnd
            rnd += 1
        return [], rnd

    def close(self) -> None:
        """Stops the target of the last configuration visited."""
        if self.target is not None:
            self.target.stop()
            self.target = None

    def _target_for(self, run: schedule.Run) -> TargetSession:
        """The target, started afresh where the schedule says (each visit of
        an interleaved round), when a target factor changes, or when it died."""
        key = run.point.target_key(self.exp.target_factors)
        t = self.target
        if t is not None and t.key == key and (run.point.target.url or (not run.start and t.serves())):
            return t
        self.close()
        t = self.host.start(run.point, key, self.exp.path.parent)
        self.target = t
        if run.point.target.url is None:
            # The plan's own starts (the host's count has the calibration's too).
            self.out.starts += 1
            self.out.starts_s += 0.0 if t.error else t.start_s
        if t.error:
            Progress.note(t.error)
        return t

    def _measure(self, run: schedule.Run, t: TargetSession) -> Measured:
        """The run's load with the monitor beside it."""
        e = self.exp.plan.experiment
        self.show.begin(run.label(e.repetitions))
        began = time.time()
        sharing = self.machine.others() if self.machine is not None else []
        if t.error is not None:
            return Measured(began, time.time(), error=t.error)
        assert t.base_url is not None  # started, or a server already running
        cfg = run_config(self.exp.plan, run.point.load, t.base_url, self.exp.path.parent, warmup=run.warmup)
        if t.layout.method != "none":
            os.sched_setaffinity(0, t.layout.generator_cpus)
        if e.drop_caches and not run.warmup:
            check.drop_caches()
        result, error, found = None, None, None
        watch = Exporter(run.point.target.monitor) if run.point.target.monitor else None
        with t.monitor(len(t.layout.generator_cpus)) as monitor, watch or contextlib.nullcontext():
            try:
                if self.exp.plan.search is None or run.warmup:
                    result = self.backend.run(cfg, self.show.tick)
                else:
                    found = self._search(run, cfg)
                    if found.outcome == "interrupted":
                        raise Interrupted
                    result = found.sustained() or (found.results[-1] if found.results else None)
                    if found.outcome not in ("found", "above-max"):
                        error = f"capacity search: {found.sentence()}"
            except LoadFailed as x:
                error = str(x)
        if result is not None and result.interrupted:
            raise Interrupted
        if result is not None and result.successes == 0:
            # Measured and kept, but not a healthy run: nothing succeeded.
            error = f"no request succeeded: {result.requests:,} sent; {result.failures()}"
        error = t.exited() or error
        return Measured(
            began, time.time(), result, error, monitor=monitor, exporter=watch, search=found, sharing=sharing
        )

    def _search(self, run: schedule.Run, cfg: LoadConfig) -> Capacity:
        """The run's capacity search, started from the point's latest answer
        (this invocation's, or the store's on --resume or --session) where
        the plan's [search] says from_previous."""
        settings = self.exp.plan.search
        assert settings is not None
        key = run.point.key
        previous = self._answers().get(key) if settings.from_previous else None
        seed = f"{self.exp.plan.experiment.seed}:{key}:{self.session}:{run.round}:{run.repetition}"
        mine = capacity.seeded(settings, previous, random.Random(seed)) if previous else settings
        near = previous if mine is not settings else None
        found = capacity.search(
            cfg, mine, lambda c, live=None: self.backend.run(c, self.show.tick, live), near_rps=near
        )
        if mine is not settings:
            found = found.model_copy(update={"seeded_from_rps": previous, "start_rps": mine.start_rps})
        if found.rate_rps is not None and found.outcome == "found":
            self._answers()[key] = found.rate_rps
        return found

    def _answers(self) -> dict[str, float]:
        if self.answers is None:
            self.answers = {}
            for r in sorted(self.store.runs(self.out.experiment_id), key=lambda r: r.seq):
                if r.search is not None and r.search.outcome == "found" and r.search.rate_rps is not None:
                    self.answers[r.point_key] = r.search.rate_rps
        return self.answers

    def _store(self, run: schedule.Run, m: Measured) -> None:
        """The run committed to the store, and its line on the display."""
        t = self.target
        assert t is not None  # _target_for set it
        result, error = m.result, m.error
        summary = self._summary(run, m, result)
        ceiling = calibrate.ceiling_for(self.ceilings, t.layout, run.point.load)
        layout = self.backend.layout(t.layout.record())
        if ceiling is not None:
            held = {"generator_ceiling_rps": round(ceiling.ceiling_rps)}
            spread = {"generator_ceiling_high_rps": round(ceiling.highest_rps)}
            layout = layout.model_copy(update=held | spread | {"generator_ceiling_low_rps": round(ceiling.lowest_rps)})
        sharing = set(m.sharing) | set(self.machine.others(m.began_unix) if self.machine is not None else [])
        if sharing:
            layout = layout.model_copy(update={"sharing": sorted(sharing)})
        bound = None
        if result is not None and t.layout.method != "none":
            bound = calibrate.lower_bound(result.throughput_rps, layout, summary, ceiling)
        if result is not None and layout.sharing:
            beside = f"another corebench measured on this machine meanwhile ({'; '.join(layout.sharing)})"
            bound = f"{bound}; {beside}" if bound else beside
        after = self.after or Stored(0, 0, 0, {})
        stored = StoredRun(
            experiment_id=self.out.experiment_id,
            seq=run.seq + after.seq,
            point=run.point.levels,
            point_key=run.point.key,
            repetition=run.repetition + (0 if run.warmup else after.repetitions.get(run.point.key, 0)),
            warmup=run.warmup,
            status="failed" if error else "ok",
            error=error,
            started_unix=m.began_unix,
            ended_unix=m.ended_unix,
            layout=layout,
            target=t.info,
            monitor=summary,
            result=result,
            search=m.search,
            round=run.round + after.round,
            position=run.position,
            lower_bound=bound,
            session=self.session,
        )
        self.store.add_run(stored, [s.to_json() for s in (m.monitor.samples if m.monitor else [])])
        if error:
            self.out.failed += 1
            self.show.end(f"FAILED: {error.splitlines()[0]}")
            return
        assert result is not None  # a load without an error has its result
        self.out.ok += 1
        self.out.measured_s += result.duration_s
        self.show.end(ran_line(result, bound))

    def _summary(self, run: schedule.Run, m: Measured, result: LoadResult | None) -> MonitorSummary | None:
        if m.monitor is None:
            return None
        summary = m.monitor.summary(busy_poll=(run.point.load.busy_poll or 0) > 0)
        if m.exporter is not None:
            summary = m.exporter.summary(summary)
        return self.backend.monitor(summary, result) if result is not None else summary


# A new experiment; the latest experiment of the plan, its missing runs
# (--resume); or every run of it again, as a new session (--session).
Again = Literal["new", "resume", "session"]


def run_experiment(
    checked: Checked, store: Store, *, again: Again = "new", quiet: bool = False, force: bool = False
) -> Outcome:
    """Runs a plan that passed `preflight.check`, storing each run as it
    ends. Ctrl-C or SIGTERM discards the run in progress, stops the target
    and keeps everything committed (`--resume` goes on from there). A
    session (`analysis.sessions` compares them) is each invocation. The
    machine is claimed first (`corebench.machine`): refused while another
    corebench measures, unless `force`."""
    with (
        Claim(f"corebench run {checked.exp.path.name}", force) as claim,
        open_backend(checked.exp.plan.cluster) as backend,
    ):
        return _run_all(checked, store, backend, claim, again=again, quiet=quiet)


def _run_all(
    checked: Checked,
    store: Store,
    backend: LoadBackend,
    claim: Claim,
    *,
    again: Again,
    quiet: bool,
) -> Outcome:
    exp, runs = checked.exp, checked.runs
    control = CpuControl()
    with target_host(exp, control) as local:
        exp_id = open_experiment(exp, store, runs, control, Hosts(local, backend), again != "new")
        # Every invocation is a session of its own: a resume on another day too.
        stored = store.sessions(exp_id)
        done = store.done(exp_id) if again == "resume" else set()
        todo = schedule.remaining(runs, done)
        out = Outcome(exp_id, skipped=sum(not r.warmup and (r.point.key, r.repetition) in done for r in runs))
        e = exp.plan.experiment
        show = Progress(todo, exp, quiet)
        show.console.print(show.plan_line(e.rounds_max if e.repetitions == "auto" else None))
        xr = ExperimentRun(
            exp,
            store,
            backend,
            local,
            show,
            out,
            session=stored.session + 1,
            after=stored if again == "session" else None,
            machine=claim,
        )
        # The generator's ceiling: against a target on this machine's other
        # cores, or where the load and the target are on different hosts.
        calibration = (
            (lambda: calibrate.calibrate(exp, control, local.work_dir))
            if isinstance(backend, Local) and isinstance(local, LocalHost)
            else (lambda: calibrate_hosts(exp, backend, local))
        )
        rnd = max((r.round for r in runs), default=0)
        _visit_all(xr, todo, rnd, calibration, lambda: baseline.measure(exp, control))
    return out


def target_host(exp: ExperimentPlan, control: CpuControl) -> LocalHost | RayHost:
    """Where the plan's targets run: this machine, or the Ray node its
    [target] names (one node for the whole plan)."""
    nodes = {p.target.node for p in exp.points}
    if nodes == {None}:
        return LocalHost(control)
    if len(nodes) > 1:
        raise UsageError(
            f"{exp.path}: [target] node: one node for every point of a plan (found {sorted(map(str, nodes))})"
        )
    t = exp.points[0].target
    if exp.plan.baseline is not None:
        raise UsageError(f"{exp.path}: [baseline] runs on this machine; it cannot measure a target on [target] node")
    address = t.ray or (exp.plan.cluster.address if exp.plan.cluster is not None else None)
    if address is None:
        raise UsageError(
            f"{exp.path}: [target] node = {t.node!r} needs the Ray cluster it belongs to: "
            'give ray = "HEAD:PORT" in [target], or a [cluster] table'
        )
    assert t.node is not None
    return RayHost(address, t.node)


def _visit_all(
    xr: ExperimentRun,
    todo: list[schedule.Run],
    rnd: int,
    calibration: Callable[[], list[Ceiling]],
    hackbench: Callable[[], Baseline],
) -> None:
    """The generator's ceiling and the CPU baseline, then every run of the
    schedule and of the rounds adaptive repetitions add. Ctrl-C or SIGTERM
    ends it with the run in progress discarded; the cleanup after it
    cannot be cut short."""
    affinity = os.sched_getaffinity(0)

    def stop(signum: int, _frame: FrameType | None) -> None:
        xr.out.signal = signum
        raise KeyboardInterrupt

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    started = time.monotonic()
    exp_id = xr.out.experiment_id
    try:
        xr.ceilings = ceilings(xr.exp, xr.store, exp_id, calibration)
        cpu_baseline(xr.exp, xr.store, exp_id, hackbench)
        while True:
            for run in todo:
                xr.visit(run)
            todo, rnd = xr.next_round(rnd + 1)
            if not todo:
                break
            xr.show.add(todo)
    except (KeyboardInterrupt, Interrupted):
        xr.out.interrupted = True
    except StoreWriteError as e:
        xr.out.store_error = str(e)
    finally:
        # A second Ctrl-C or SIGTERM must not cut the cleanup short: the
        # target would outlive us. Signals wait until it is done.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        try:
            xr.close()
            xr.host.close()
            os.sched_setaffinity(0, affinity)
            xr.show.close()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        xr.out.wall_s = time.monotonic() - started


def _widest_target(exp: ExperimentPlan, control: CpuControl) -> list[int]:
    """The CPUs the plan's largest target would get (all, where none is placed)."""
    levels = [p.target.cpus for p in exp.points if p.target.cpus is not None and p.target.url is None]
    if not levels:
        return control.online
    return plan_layout(max(levels), control.online, topo=control.topology)[0]


class Hosts(NamedTuple):
    """Where the plan's targets run and where its load comes from."""

    target: TargetHost
    load: LoadBackend


def open_experiment(
    exp: ExperimentPlan, store: Store, runs: list[schedule.Run], control: CpuControl, where: Hosts, again: bool
) -> int:
    """The experiment's id in the store: a new one, or the last of this
    exact plan (with its overrides) when resuming it or adding a session.
    What `system check` warns of is said first, and stored with a new one."""
    # This machine's noise; a target on a Ray node is on another machine.
    on_node = any(p.target.node for p in exp.points)
    checks = [] if on_node else check.machine_checks(control.topology, _widest_target(exp, control))
    for line in checks:
        Progress.note(f"machine check: {line}")
    if again:
        exp_id = store.latest_experiment(exp.digest)
        if exp_id is None:
            raise UsageError(
                f"{store.path}: no experiment of {exp.path} (this exact plan) to go on with; run it without "
                "--resume or --session"
            )
        return exp_id
    server = where.target.server_version(exp.points[0].target)
    return store.new_experiment(
        StoredExperiment(
            name=exp.plan.experiment.name,
            plan_path=str(exp.path),
            plan_toml=exp.text,
            plan_digest=exp.digest,
            plan=plan_record(exp),
            host=_host_facts(control, server, checks, where),
            runs_planned=len(runs),
            created_unix=time.time(),
            corebench_version=__version__,
        )
    )


def _host_facts(control: CpuControl, server: str | None, checks: list[str], where: Hosts) -> HostFacts:
    """This machine's facts, the target's host's where it is another, and
    the load agents' hosts."""
    found = check.facts(control.method, server) | ({"checks": checks} if checks else {})
    node = where.target.facts()
    loads = where.load.hosts()
    found |= {"target_node": node} if node is not None else {}
    return HostFacts.model_validate(found | ({"load_nodes": loads} if loads else {}))


def plan_record(exp: ExperimentPlan) -> PlanRecord:
    """The plan as run: validated, its factors' levels, and the command
    line's overrides (which --resume applies again)."""
    return PlanRecord(
        plan=exp.plan.model_dump(mode="json", by_alias=True), factors=exp.factors, overrides=exp.overrides
    )


def ceilings(exp: ExperimentPlan, store: Store, exp_id: int, measure: Callable[[], list[Ceiling]]) -> list[Ceiling]:
    """The generator's ceiling per CPU layout (or, across hosts, per
    protocol): measured before the first run (`measure`), or read back when
    the experiment is resumed."""
    stored = store.experiment(exp_id)
    if stored is not None and stored.calibration:
        return stored.calibration
    if not exp.plan.experiment.calibrate:
        return []
    found = measure()
    store.set_calibration(exp_id, found)
    for c in found:
        Progress.note(c.sentence())
    return found


def cpu_baseline(exp: ExperimentPlan, store: Store, exp_id: int, measure: Callable[[], Baseline]) -> None:
    """The plan's CPU baseline at each cpus level, once per experiment (a
    resumed one keeps what it stored)."""
    stored = store.experiment(exp_id)
    if exp.plan.baseline is None or (stored is not None and stored.baseline is not None):
        return
    found = measure()
    store.set_baseline(exp_id, found)
    for level in found.levels:
        at = "no limit" if level.cpus is None else f"cpus={level.cpus:g}"
        times = ", ".join(f"{t:.3f}" for t in level.seconds) or "none"
        why = f"; {level.error}" if level.error else ""
        Progress.note(f"baseline {' '.join(found.argv)} at {at}: {times} s{why}")


def ran_line(result: LoadResult, bound: str | None) -> str:
    """A measured run in one line, with the figures the analysis takes from
    it: throughput is successes (docs/architecture.md#terms), and the
    failures are errors and unsuccessful statuses (less a replay's as its
    log recorded them)."""
    p99 = result.latency_us.total.at(99.0) / 1000
    flag = f" [lower bound: {bound}]" if bound else ""
    return f"{result.goodput_rps:,.0f} req/s, p99 {p99:.2f} ms, {result.failed_requests:,} failed{flag}"
