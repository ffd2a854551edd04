"""Runs from the store, grouped by point: what each point measured over its
repetitions (warm-ups and failed runs left out), and how its monitor saw it."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from scipy import stats as st

from corebench.analysis.interference import NOTABLE_SHARE, share
from corebench.analysis.knee import LITTLE_TOLERANCE, little_ratio
from corebench.analysis.stats import Summary, summarize
from corebench.result import CALIBRATION_REPEATS, NEAR_CEILING, LoadResult
from corebench.result import FAILING_SHARE as FAILING_SHARE  # re-exported: the analysis's name for it
from corebench.store import Level, MonitorSummary, RunLayout, StoredRun
from corebench.system.check import CLOCK_NOTABLE_SHARE, off_share

# A response this share of its run long waited most of the run, not for the CPU.
STALLED_SHARE = 0.5
# A target using this share of the CPUs it was given was CPU-bound.
CPU_BOUND_SHARE = 0.85
# A ceiling is refuted only past a prediction bound at this level over the
# runs it held (refuted_above).
PREDICTION_ALPHA = 0.05


@dataclass
class PointStats:
    levels: dict[str, Level]
    runs: list[StoredRun]  # every run of the point, warm-ups and failures included
    measured: list[StoredRun]
    goodput_rps: Summary  # successful responses per second, over the measured runs
    p50_us: Summary
    p99_us: Summary
    failed_runs: int
    # Failed requests (errors, 4xx, 5xx) over requests, in every run that was
    # not a warm-up: a run where nothing succeeded is failed, not measured,
    # and its errors must still count against the point.
    error_share: float
    target_cpu: float | None  # cores' worth, mean over measured runs
    generator_cpu: float | None
    client_bound: bool
    little: float | None  # X·R / N, closed loop only
    # The generator ran on the target's cores: the target's figures are understated.
    shared: bool = False
    run_goodput_rps: list[float] = field(default_factory=list)  # each measured run's
    # The target's CPU service demand per request, each measured run: D = U/X,
    # U in cores (Denning & Buzen 1978, the service demand law).
    demand_ms: list[float] = field(default_factory=list)
    # Each service's (a database's) own CPU per request, each measured run
    # its monitor measured: the same law over the service's cgroup.
    service_demand_ms: dict[str, list[float]] = field(default_factory=dict)
    # Closed loop only: the clients (N) and the mean response time (R, s).
    clients: int | None = None
    response_s: float | None = None
    # The runs were capacity searches: the monitor's figures span every
    # step of a search, so they are no one rate's CPU or demand.
    searched: bool = False
    # Measured runs whose monitor saw notable steal time (a VM's vCPUs
    # runnable but not run), and the most CPU-seconds stolen in one.
    steal_runs: int = 0
    steal_max_s: float = 0.0
    # A measured run reached the generator's calibrated ceiling (or passed it).
    near_ceiling: bool = False
    # Measured runs whose target cores lost a notable share to neither the
    # target nor the generator (analysis.interference), and the largest share.
    interference_runs: int = 0
    interference_max: float = 0.0
    # The share of every core of the machine busy (iowait idle), mean over runs.
    machine_busy: float | None = None
    # Users' mean think time between requests (s), where the load model has it.
    think_s: float | None = None
    # Measured runs during which another corebench measured on this machine.
    sharing_runs: int = 0
    # The first line of the first failed run's error, where a run failed.
    failure: str | None = None
    # Measured runs whose generator was CPU-bound (its monitor said so).
    client_bound_runs: int = 0
    # The target's busy share of the CPUs its layout gave it, mean over the
    # measured runs where both are known (None: not placed or not measured).
    target_share: float | None = None
    # A host measured through node_exporter ([target] monitor): its cores,
    # and why a run got no figures from it, where one did not.
    exporter_cores: int | None = None
    exporter_error: str | None = None
    # The target's CPUs' clock (system.check): the mean over the runs that
    # measured it, MHz; runs more than CLOCK_NOTABLE_SHARE from the median
    # of the point's runs, and the farthest one's distance.
    clock_mhz: float | None = None
    clock_runs: int = 0  # measured runs with a clock reading
    clock_off_runs: int = 0
    clock_off_max: float = 0.0

    @property
    def failing(self) -> bool:
        return self.error_share > FAILING_SHARE or not self.measured

    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.levels.items()) or "(one point)"

    @property
    def users_offer_rps(self) -> float | None:
        """The most N users pausing Z s between requests offer: N/(Z + R)
        per second in a steady state (the interactive response time law,
        Denning & Buzen 1978); None without think time or its figures."""
        if not self.think_s or not self.clients or self.response_s is None:
            return None
        return self.clients / (self.think_s + self.response_s)

    def limits(self) -> list[str]:
        """Why this point measured the generator or the machine at least in
        part, in words; empty where its figures are the server's (ANSWERS.md §3)."""
        why = []
        if self.client_bound:
            why.append(f"generator CPU-bound in {self.client_bound_runs} of {len(self.measured)} runs")
        if little_fails(self) and not self.cpu_saturated:
            # A target at its CPUs' limit set the rate whatever the clients
            # did between requests: the failure does not bound its figures.
            why.append(f"Little's law fails (X·R/N = {self.little:.2f}: the concurrency was not held)")
        if self.near_ceiling:
            why.append(f"at {NEAR_CEILING:.0%} or more of the lowest of the generator's calibrations")
        if self.shared:
            why.append("generator on the target's cores")
        if self.sharing_runs:
            why.append(f"another corebench measured on this machine during {self.sharing_runs} run(s)")
        if self.interference_runs:
            why.append(f"others on the target's cores (up to {self.interference_max:.0%} of their time)")
        return why

    @property
    def cpu_saturated(self) -> bool:
        """The target used CPU_BOUND_SHARE or more of the CPUs it was given."""
        return self.target_share is not None and self.target_share >= CPU_BOUND_SHARE

    def stalled(self) -> tuple[float, float] | None:
        """The run whose slowest response took the largest share of it,
        as (that response's seconds, the run's), where the share reaches
        STALLED_SHARE: requests that waited most of a run (a server with
        fewer workers than connections leaves some so), which a p99 over
        the rest does not show."""
        spans = [(x.latency_us.total.max_us / 1e6, x.duration_s) for x in self.results() if x.duration_s]
        longest = max(spans, key=lambda t: t[0] / t[1], default=None)
        return longest if longest is not None and longest[0] >= STALLED_SHARE * longest[1] else None

    def results(self) -> list[LoadResult]:
        """The measured runs' results, in run order."""
        return [r.result for r in self.measured if r.result is not None]

    def ceiling_rps(self) -> float | None:
        """The generator's calibrated ceiling its measured runs ran under
        (for their protocol, load model and page), the median over them."""
        found = [r.layout.generator_ceiling_rps for r in self.measured if r.layout and r.layout.generator_ceiling_rps]
        return float(statistics.median(found)) if found else None


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def point_stats(runs: list[StoredRun]) -> list[PointStats]:
    """`runs` as `Store.runs` returns them; points in order of first run."""
    groups: dict[str, list[StoredRun]] = {}
    for r in runs:
        groups.setdefault(r.point_key, []).append(r)
    refuted = refuted_ceilings(runs)
    return [_point(rs, refuted) for rs in groups.values()]


CeilingKey = tuple[tuple[int, int | None, int | None], tuple[int, ...], tuple[int, ...]]


def each_run(p: PointStats) -> list[PointStats]:
    """The point's measured runs, each as a point of its own (the same
    rules, one run's figures): for readings that a mean over runs could
    blur, such as a diagnosis where some runs filled the CPU and others did
    not."""
    refuted = refuted_ceilings(p.runs)
    return [_point([r], refuted) for r in p.measured]


def _ceiling_key(r: StoredRun) -> CeilingKey | None:
    layout = r.layout
    if layout is None or not layout.generator_ceiling_rps:
        return None
    # Its calibrations' range too: the refuting bound is one per key (refuting).
    ceiling = (layout.generator_ceiling_rps, layout.generator_ceiling_low_rps, layout.generator_ceiling_high_rps)
    return ceiling, tuple(layout.target_cpus), tuple(layout.generator_cpus)


def refuted_ceilings(runs: list[StoredRun]) -> set[CeilingKey]:
    """The calibrated ceilings a measured run went past: they do not hold
    for this plan's load (a "Calibration error", said by analysis.lines),
    so a run near one is not marked a lower bound by it."""
    return {key for r in refuting(runs) if (key := _ceiling_key(r)) is not None}


def refuting(runs: list[StoredRun]) -> list[StoredRun]:
    """The measured runs past their ceiling's `refuted_above`, each held to
    the number of measured runs that ceiling held (one ceiling is refuted
    by any one of them, so the bound is for the largest)."""
    held: dict[CeilingKey, list[tuple[float, RunLayout, StoredRun]]] = {}
    for r in runs:
        key = _ceiling_key(r)
        if r.measured and key is not None and r.result is not None and r.layout is not None:
            held.setdefault(key, []).append((r.result.goodput_rps, r.layout, r))
    out = []
    for rs in held.values():
        bound = refuted_above(rs[0][1], len(rs))  # one ceiling, one bound: its runs share the layout's figures
        out += [r for rps, _, r in rs if rps > bound]
    return out


def refuted_above(layout: RunLayout, runs: int = 1) -> float:
    """The rate past which one of `runs` runs refutes its ceiling: the
    one-sided 95% prediction bound for the largest of them, were they of
    the calibrations' own distribution (Student's t on the calibrations'
    CALIBRATION_REPEATS − 1 degrees of freedom, Bonferroni over the runs;
    Hahn & Meeker, "Statistical Intervals", 1991, ch. 4). "Past the
    highest calibration" refuted ceilings by noise (one run of their
    spread passes the highest of 3 a quarter of the time) and dropped the
    lower-bound marks of exactly the runs held at them. From the mean,
    lowest and highest of 3 calibrations their middle one, and so their
    sd, is known; stores from before the lowest was kept take the largest
    sd that mean and highest allow (so refute less); from before the
    highest, the ceiling itself."""
    assert layout.generator_ceiling_rps
    mean, high = float(layout.generator_ceiling_rps), layout.generator_ceiling_high_rps
    if high is None:
        return mean
    n = CALIBRATION_REPEATS
    top = float(high)
    low = layout.generator_ceiling_low_rps
    # Without the lowest (an old store): the widest three with that mean and highest.
    values = [n * mean - (n - 1) * top, top, top] if low is None else calibrations(mean, float(low), top, n)
    sd = statistics.stdev(values)
    if not sd > 0:
        return top
    t = float(st.t.ppf(1 - PREDICTION_ALPHA / max(1, runs), n - 1))
    return mean + t * sd * math.sqrt(1 + 1 / n)


def calibrations(mean: float, low: float, high: float, n: int) -> list[float]:
    """The calibrations behind a stored ceiling: of 2, its lowest and
    highest; of 3, the middle one too, which their mean fixes. Empty for
    other counts (one, or more than the mean and range pin down)."""
    if n == 2:
        return [low, high]
    if n == 3:
        return [low, n * mean - low - high, high]
    return []


def ceiling_interval(mean: float, low: float | None, high: float | None, n: int) -> tuple[float, float] | None:
    """The 95% interval of the mean of a ceiling's calibrations (Student's
    t on n − 1 degrees of freedom): a projection carries its interval
    (ANSWERS.md §4). None where the calibrations cannot be recovered."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return None
    values = calibrations(mean, low, high, n)
    if len(values) < 2:
        return None
    half = float(st.t.ppf(0.975, len(values) - 1)) * statistics.stdev(values) / math.sqrt(len(values))
    return mean - half, mean + half


def _target_share(r: StoredRun) -> float | None:
    """The target's CPU over the CPUs its run's layout gave it (its quota
    where it had one)."""
    m, layout = r.monitor, r.layout
    if m is None or m.target_cpu is None or layout is None or not layout.controlled or m.source != "local":
        return None
    given = layout.quota_cpus or len(layout.target_cpus)
    return m.target_cpu / given if given else None


def _near_ceiling(r: StoredRun, refuted: set[CeilingKey]) -> bool:
    return "generator's ceiling" in (r.lower_bound or "") and _ceiling_key(r) not in refuted


def _point(rs: list[StoredRun], refuted: set[CeilingKey] | None = None) -> PointStats:
    measured = [r for r in rs if r.measured]
    results = [r.result for r in measured if r.result is not None]
    monitors = [r.monitor for r in measured if r.monitor is not None]
    all_monitors = list(monitors)
    # A failed capacity search stores its last step, overloaded on purpose:
    # its errors are the search's, not the point's.
    tried = [r.result for r in rs if not r.warmup and r.result is not None and (r.measured or r.search is None)]
    requests = sum(x.requests for x in tried)
    failed = [r.error for r in rs if r.status == "failed" and r.error]
    rps = [x.goodput_rps for x in results]
    searched = any(r.search is not None for r in measured)
    demand = [
        r.monitor.target_cpu / x * 1000
        for r, x in zip(measured, rps, strict=True)
        if x > 0 and r.monitor is not None and r.monitor.target_cpu is not None
    ]
    services = _service_demand(measured, rps)
    if searched:
        demand, monitors, services = [], [], {}
    closed = [x for x in results if x.model == "closed"]
    # Users (a closed loop with think time) have their clients too; Little's
    # X·R/N is for a loop without pauses.
    looped = [x for x in results if x.model in ("closed", "users")]
    little = None
    if closed:
        little = _mean(
            [
                little_ratio(x.concurrency, x.throughput_rps, x.latency_us.total.mean_us / 1e6, x.duration_s)
                for x in closed
            ]
        )
    others = [x for x in (share(r) for r in measured) if x is not None]
    clocks = [m.clock_mhz for m in all_monitors if m.clock_mhz is not None]
    off = [off_share(c, clocks) for c in clocks] if len(clocks) >= 2 else []
    return PointStats(
        levels=dict(rs[0].point),
        runs=rs,
        measured=measured,
        goodput_rps=summarize(rps),
        p50_us=summarize([float(r.p50_us) for r in measured if r.p50_us is not None]),
        p99_us=summarize([float(r.p99_us) for r in measured if r.p99_us is not None]),
        failed_runs=sum(r.status == "failed" for r in rs),
        error_share=sum(x.failed_requests for x in tried) / requests if requests else 0.0,
        target_cpu=_mean(_known(m.target_cpu for m in monitors)),
        generator_cpu=_mean(_known(m.generator_cpu for m in monitors)),
        client_bound=any(m.client_bound for m in monitors),
        client_bound_runs=sum(m.client_bound for m in monitors),
        target_share=_mean([x for x in (_target_share(r) for r in measured) if x is not None]),
        little=little,
        shared=any(r.shared for r in measured),
        run_goodput_rps=rps,
        demand_ms=demand,
        service_demand_ms=services,
        clients=looped[0].concurrency if looped else None,
        response_s=_mean([x.latency_us.total.mean_us / 1e6 for x in looped]),
        searched=searched,
        steal_runs=sum(m.steal_notable for m in all_monitors),
        steal_max_s=max((m.steal_s for m in all_monitors), default=0.0),
        near_ceiling=any(_near_ceiling(r, refuted or set()) for r in measured),
        interference_runs=sum(x >= NOTABLE_SHARE for x in others),
        interference_max=max(others, default=0.0),
        machine_busy=_mean([sum(c.busy for c in m.cores) / len(m.cores) for m in all_monitors if m.cores]),
        think_s=_mean([sum(x.think_s) / 2 for x in results if x.think_s is not None]),
        failure=failed[0].splitlines()[0] if failed else None,
        sharing_runs=sum(bool(r.layout is not None and r.layout.sharing) for r in measured),
        exporter_cores=next((len(m.cores) for m in all_monitors if m.source != "local" and m.cores), None),
        exporter_error=next((m.scrape_error for m in all_monitors if m.scrape_error), None),
        clock_mhz=_mean(clocks),
        clock_runs=len(clocks),
        clock_off_runs=sum(x > CLOCK_NOTABLE_SHARE for x in off),
        clock_off_max=max(off, default=0.0),
    )


def _known(values: Iterable[float | None]) -> list[float]:
    return [v for v in values if v is not None]


def monitors_of(p: PointStats) -> list[MonitorSummary]:
    """The measured runs' monitor summaries."""
    return [r.monitor for r in p.measured if r.monitor is not None]


def little_fails(p: PointStats) -> bool:
    return p.little is not None and abs(p.little - 1) > LITTLE_TOLERANCE


def _service_demand(measured: list[StoredRun], rps: list[float]) -> dict[str, list[float]]:
    """Each service's CPU (cores) over the run's goodput, in ms per request."""
    out: dict[str, list[float]] = {}
    for r, x in zip(measured, rps, strict=True):
        if x <= 0 or r.monitor is None:
            continue
        for name, s in r.monitor.services.items():
            cpu = s.cpu
            if cpu is None and (s.user_cpu is not None or s.system_cpu is not None):
                cpu = (s.user_cpu or 0.0) + (s.system_cpu or 0.0)
            if cpu is not None:
                out.setdefault(name, []).append(cpu / x * 1000)
    return out
