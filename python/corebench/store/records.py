"""What the store keeps, as typed records: an experiment (`StoredExperiment`),
each of its runs (`StoredRun`) and the parts a run carries (its CPU layout,
its monitor's summary, its target, its capacity search, the generator's
ceiling). The store decodes its JSON columns into these once; every later
stage reads their fields, never the columns.

Each part accepts what older stores wrote: fields added since default to
"not known" (None, 0 or empty), and keys a record does not declare are kept
(`extra="allow"`), so an export shows everything that was measured."""

from __future__ import annotations

import json
import math
from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, JsonValue

from corebench.result import LoadResult

# A factor's level as a plan gives it: a TOML scalar.
Level = bool | int | float | str
# Why an experiment's or a run's figures are what they are; a run's status.
Status = Literal["ok", "failed"]


# A NaN or an infinity is stored as JSON's NaN and Infinity, as json.dumps
# wrote them (pydantic's default, null, would not read back as a float).
_STORED = ConfigDict(ser_json_inf_nan="constants")


class _Record(BaseModel):
    model_config = _STORED


class _Part(BaseModel):
    """A part of a stored record: open to the keys older or newer versions
    wrote, so nothing stored is dropped on the way to a report."""

    model_config = ConfigDict(extra="allow", ser_json_inf_nan="constants")


class LoadNode(_Part):
    """A load agent's host (`cluster.agent`), as the experiment stores it."""

    node: str  # the agent's host name, IP and Ray node id
    agent: int
    cores: int  # the CPUs the agent's process could use
    cpu_model: str | None = None
    cpus: int | None = None
    kernel: str | None = None

    def line(self) -> str:
        facts = f": {self.cpu_model}, {self.cpus} CPUs, kernel {self.kernel}" if self.cpu_model else ""
        return f"{self.node}{facts}"


class HostFacts(_Part):
    """What the numbers were measured on (`system.check.facts`)."""

    cpu_model: str | None = None
    cpus: int | None = None
    cpus_usable: int | None = None
    mhz: float | None = None
    kernel: str | None = None
    machine: str | None = None
    python: str | None = None
    corebench_version: str | None = None
    cpu_control: str | None = None
    server_version: str | None = None
    memory_bytes: int | None = None
    # What `corebench system check` warned of before the first run, one line each with its fix.
    checks: list[str] = []
    # Where the target ran on a Ray node of its own ([target] node): that
    # node's facts, read there, with its address as `node`.
    target_node: dict[str, JsonValue] | None = None
    # Where the load came from Ray agents ([cluster]): each agent's host,
    # read there when it was placed.
    load_nodes: list[LoadNode] = []

    def shown(self) -> dict[str, JsonValue]:
        """The facts this experiment stored, in its order (an older store's
        missing facts are left out rather than shown as unknown)."""
        out: dict[str, JsonValue] = self.model_dump(exclude_unset=True)
        if self.load_nodes:
            out["load_nodes"] = [n.line() for n in self.load_nodes]
        return out


class PlanRecord(_Part):
    """The plan as run: validated (`plan`, the model's JSON), its factors'
    levels, and the command line's overrides, which `--resume` applies again."""

    plan: dict[str, JsonValue] = {}
    factors: dict[str, list[Level]] = {}
    overrides: dict[str, JsonValue] = {}


LoopModel = Literal["closed", "open", "users"]


class AgentCeiling(_Part):
    """One load host's part of a ceiling measured across hosts
    (`runner.calibrate_hosts`): a Ray load agent, or this machine's engine
    loading a target on another host."""

    node: str  # where it ran: an agent's host/IP/node id, or "this machine"
    cores: int  # the CPUs its load threads could use
    rps: float  # its successes per second against the built-in page
    cpu_utilization: float  # its CPU time over those cores' wall time
    ceiling_rps: float  # rps at every one of those cores busy


class Ceiling(_Record):
    """The load generator's own ceiling on one CPU layout, measured before
    the first run (`runner.calibrate`)."""

    target_cpus: list[int]
    generator_cpus: list[int]
    shared: bool
    connections: int
    rps: float  # reached against the built-in page
    generator_cpu: float  # cores' worth the generator used meanwhile
    ceiling_rps: float  # rps at every generator core busy
    error: str | None = None
    # The protocol it was measured with (before: always HTTP/1.1 keep-alive).
    keep_alive: bool = True
    http: str = "1.1"
    # The load model it was measured with (before: always a closed loop).
    model: LoopModel = "closed"
    # The built-in page it was measured on (before: always 64 bytes), and
    # the lowest and highest of its repeated calibrations (before: one
    # measurement, no range).
    page_bytes: int = 64
    ceiling_low_rps: float | None = None
    ceiling_high_rps: float | None = None
    repeats: int = 1
    # Measured across hosts (the load from Ray agents, or the target on a
    # node of its own; `runner.calibrate_hosts`): each load host's part,
    # means over the repeats. Such a ceiling is the generator's whatever
    # the target's CPUs.
    across: bool = False
    agents: list[AgentCeiling] = []

    @property
    def lowest_rps(self) -> float:
        """The lowest calibration (the one measurement where there was one):
        what a run is held near, so a noisy calibration marks more runs."""
        low = self.ceiling_low_rps
        return low if low is not None and math.isfinite(low) and low > 0 else self.ceiling_rps

    @property
    def highest_rps(self) -> float:
        """The highest calibration: a run past it refutes the ceiling."""
        high = self.ceiling_high_rps
        return high if high is not None and math.isfinite(high) else self.ceiling_rps

    def interval(self, mean_ci: str = "") -> str:
        low, high = self.ceiling_low_rps, self.ceiling_high_rps
        if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
            return ""
        return f" ({self.repeats} calibrations ranged {low:,.0f}–{high:,.0f}{mean_ci})"

    def sentence(self, mean_ci: str = "") -> str:
        """The ceiling in words; `mean_ci`, the analysis's interval of its
        calibrations' mean, goes inside their range's parentheses."""
        where = f"generator on {_cpus(self.generator_cpus)}, built-in server on {_cpus(self.target_cpus)}"
        if self.across:
            on = _cpus(self.target_cpus) if self.target_cpus else "all its CPUs"
            where = f"the load hosts to the built-in server on the target's host, {on}"
        if self.error:
            return f"generator calibration ({where}) failed: {self.error}"
        shared = "; they share cores" if self.shared else ""
        how = f"HTTP/{self.http}, {'keep-alive' if self.keep_alive else 'a new connection per request'}"
        loop = {"closed": "a closed loop", "open": "an open loop", "users": "users with think time"}[self.model]
        if self.across:
            parts = "; ".join(
                f"{a.node}: {a.ceiling_rps:,.0f} from {a.rps:,.0f} req/s at {a.cpu_utilization:.0%} of its "
                f"{_cores(a.cores)}"
                for a in self.agents
            )
            return (
                f"generator ceiling for {how}, {loop}: about {self.ceiling_rps:,.0f} req/s"
                f"{self.interval(mean_ci)}, the sum of each load host's rate projected to all of its load threads' "
                f"cores ({parts}; "
                f"{self.connections} connections to the built-in server's {self.page_bytes:,}-byte page; "
                f"{where}{shared}); it holds for that protocol, load model and page size only"
            )
        return (
            f"generator ceiling for {how}, {loop}: about {self.ceiling_rps:,.0f} req/s{self.interval(mean_ci)}, "
            f"projected to all of its {_cores(len(self.generator_cpus))} from {self.rps:,.0f} req/s at "
            f"{self.generator_cpu:.2f} of them ({self.connections} connections to the built-in server's "
            f"{self.page_bytes:,}-byte page; {where}{shared}); it holds for that protocol, load model and page size "
            "only"
        )


class BaselineLevel(_Part):
    cpus: float | None = None
    seconds: list[float] = []
    error: str | None = None


class Baseline(_Part):
    """The plan's CPU baseline (hackbench) at each cpus level (`runner.baseline`)."""

    argv: list[str] = []
    levels: list[BaselineLevel] = []


class StoredExperiment(_Record):
    """One experiment: its plan, the host it ran on, and what was measured
    once before its runs."""

    id: int | None = None  # set by the store
    name: str
    plan_path: str
    plan_toml: str
    plan_digest: str
    plan: PlanRecord
    host: HostFacts
    runs_planned: int
    created_unix: float
    corebench_version: str
    calibration: list[Ceiling] | None = None
    baseline: Baseline | None = None


class RunLayout(_Part):
    """Where the target and the generator ran (`targets.cpus.Layout`, with
    the backend's word on who generated the load)."""

    method: str = "none"  # cgroup2, cgroup1, affinity, or none (no limit asked)
    target_cpus: list[int] = []
    generator_cpus: list[int] = []
    quota_cpus: float | None = None
    shared: bool = False
    groups: list[str] = []
    accounting: list[str] = []
    services: dict[str, RunLayout] = {}
    generator_ceiling_rps: int | None = None
    # The highest and lowest of that ceiling's calibrations, whose spread
    # says how far past the highest a run must go to refute it
    # (analysis.points.refuted_above).
    generator_ceiling_high_rps: int | None = None
    generator_ceiling_low_rps: int | None = None
    generator: str | None = None  # "ray agents" when the load came from a cluster
    # Other corebench measurements on this machine during the run (--force).
    sharing: list[str] = []
    # The physical cores and NUMA nodes of the target's CPUs (system.topology).
    target_physical_cores: int | None = None
    target_nodes: list[int] = []
    # The physical cores asked for (cpus = N, rounded up); more than
    # target_physical_cores where SMT siblings filled in for missing cores.
    cores_asked: int | None = None
    # The host the target ran on, when not the one that ran the plan (a
    # Ray node's address, `[target] node`); its CPUs are that host's.
    target_host: str | None = None

    @property
    def controlled(self) -> bool:
        """corebench placed the target on CPUs of its choosing."""
        return self.method != "none"

    @property
    def target_cores(self) -> float | None:
        """The CPUs the target had: its quota, else its cores; None when not placed."""
        if not self.controlled:
            return None
        return self.quota_cpus or float(len(self.target_cpus)) or None


class CoreTimes(_Part):
    """One core's mean shares of the run (the fields of /proc/stat)."""

    user: float = 0.0
    system: float = 0.0
    iowait: float = 0.0
    softirq: float = 0.0
    idle: float = 1.0
    steal: float = 0.0

    @property
    def busy(self) -> float:
        """The share not idle: iowait is idle time with a disk request out."""
        return max(0.0, 1.0 - self.idle - self.iowait)


class ServiceSummary(_Part):
    """One service's process tree over a run (a monitor's means)."""

    cpu: float | None = None
    user_cpu: float | None = None
    system_cpu: float | None = None
    rss_max_bytes: float | None = None
    read_bps: float | None = None
    write_bps: float | None = None
    io_wait: float | None = None
    system_share: float | None = None


class RaySpent(_Part):
    """Ray's own processes on the target's node over a run
    (targets.ray_procs): their CPU, and the CPUs they were kept on (None:
    the node had none to spare, so they shared the target's)."""

    cpu: float | None = None  # cores' worth
    cpus: list[int] | None = None


class MonitorSummary(_Part):
    """The monitor's means over a run (`monitor.Monitor.summary`); CPU in cores' worth."""

    samples: int = 0
    interval_s: float | None = None
    cores: list[CoreTimes] = []
    target_cpu: float | None = None
    target_user_cpu: float | None = None
    target_system_cpu: float | None = None
    # The kernel's share of the target's CPU (the second field report's "sys time").
    target_system_share: float | None = None
    target_read_bps: float | None = None
    target_write_bps: float | None = None
    target_io_wait: float | None = None
    target_dev_read_bps: float | None = None
    target_dev_write_bps: float | None = None
    disk_devices: list[str] = []
    disk_read_bps: float | None = None
    disk_write_bps: float | None = None
    disk_busy: float | None = None
    services: dict[str, ServiceSummary] = {}
    target_rss_max_bytes: float | None = None
    generator_cpu: float | None = None
    generator_cores: int | None = None
    ctx_switches_per_s: float | None = None
    client_bound: bool = False
    client_bound_agents: list[int] = []
    # Steal time (Linux /proc/stat): cores' worth, and CPU-seconds over the run.
    steal_cpu: float | None = None
    steal_s: float = 0.0
    steal_notable: bool = False
    # Where the figures of the target's host came from: "local" (this
    # machine's /proc, the target's process tree), or "node_exporter URL"
    # for a host corebench does not control (`monitor.exporter`): then the
    # cores are that host's, and the target's CPU is the whole host's.
    source: str = "local"
    host_cpu: float | None = None  # the monitored host's busy cores' worth (node_exporter)
    scrapes: int = 0
    scrape_errors: int = 0
    scrape_error: str | None = None  # the first failed scrape's reason
    counter_resets: int = 0  # intervals a counter going back, or a change of the CPUs, cut out
    exporter_host: str | None = None  # the exporter's host name (node_uname_info), where it gives one
    exporter_local: bool | None = None  # that host is the one that generated the load
    net_rx_bps: float | None = None
    net_tx_bps: float | None = None
    memory_available_min_bytes: float | None = None
    # The target's CPUs' clock over the run (system.check): the mean of the
    # samples and their range, MHz; `clock` says where it came from, or why
    # it was not measured ("" in stores from before it was).
    clock_mhz: float | None = None
    clock_min_mhz: float | None = None
    clock_max_mhz: float | None = None
    clock: str = ""
    governor: str | None = None
    turbo: bool | None = None
    ray: RaySpent | None = None  # the target ran on a Ray node ([target] node)


class TargetInfo(_Part):
    """The target as it ran: how it was started and where it listened."""

    kind: str | None = None  # builtin, a recipe's name, command, or url
    base_url: str | None = None
    pid: int | None = None
    argv: list[str] = []
    ready_s: float | None = None
    cpus_allowed: str | None = None
    filesystem: dict[str, JsonValue] | None = None
    services: dict[str, dict[str, JsonValue]] = {}


class Step(_Record):
    """One rate of a capacity search, judged against the objective."""

    rate_rps: float
    duration_s: float
    meets: bool
    # Successes per second (stored as achieved_rps before it had the one name).
    goodput_rps: float = Field(validation_alias=AliasChoices("goodput_rps", "achieved_rps"))
    sent: int
    scheduled: int
    late: int
    p50_us: int
    judged: list[tuple[str, str, bool]]  # (threshold, measured, met)
    measured: dict[str, float]  # metric -> value: latencies in µs, errors as a share or a count
    why: str = ""  # what missed, in words
    settle_s: float = 0.0  # time the server took to drain after this step
    few_samples: bool = False
    # Where the step ended early, its verdict settled (runner.sequential): the seconds it ran.
    settled_s: float | None = None
    # Its responses, and of those, how many were over each percentile bound
    # of the objective, from its whole latency histogram (the engine's
    # `over_bounds`): what pools its verdict with the next step's. 0 and []
    # where not counted.
    counted: int = 0
    over: list[int] = Field(default_factory=list)
    # How many steps before it at its rate its verdict was judged together
    # with (runner.pool; 0: judged alone).
    pooled: int = 0
    # The target's host over the step, through node_exporter (`capacity
    # --monitor`): its busy CPUs (all of its processes: an upper bound of
    # the server's) and how many it has; None where not watched or no figures.
    host_cpu: float | None = None
    host_cpus: int | None = None
    host_busiest: float | None = None  # the busiest of its CPUs, a share: one thread's limit shows here
    host_error: str = ""  # why a watched step has no host figures


class Capacity(_Record):
    """A capacity search's answer: the highest rate whose steps met the
    objective, the bracket it was found in, and every step."""

    objective: str
    arrivals: str
    precision: float
    # The highest rate whose steps met the objective (by majority, confirmed).
    rate_rps: float | None = None
    bracket: tuple[float | None, float | None] = (None, None)  # (lo, hi): the limit lies between
    outcome: str  # "found", "above-max", "none", "unfinished", "dead", "interrupted"
    steps: list[Step]
    probe_rps: float | None = None
    # A later round's search started from an earlier round's answer
    # (runner.capacity.seeded): that answer, and the start drawn below it.
    seeded_from_rps: float | None = None
    start_rps: float | None = None
    elapsed_s: float = 0.0
    # Why the search ended "dead": the failures of the probe or step that got
    # no answer (stored as probe_failures by the first stores with searches).
    failures: str = Field("", validation_alias=AliasChoices("failures", "probe_failures"))
    # Each step's whole measurement, in step order: not stored with the
    # search (the store keeps the sustained rate's result as the run's).
    results: list[LoadResult] = Field(default_factory=list, exclude=True, repr=False)

    def sustained(self) -> LoadResult | None:
        """The last measurement at the sustained rate."""
        at = [r for s, r in zip(self.steps, self.results, strict=True) if s.rate_rps == self.rate_rps]
        return at[-1] if at else None

    def sentence(self) -> str:
        lo, hi = self.bracket
        if self.outcome == "found" and lo is not None and hi is not None:
            half = (hi - lo) / (hi + lo)
            return (
                f"Sustains {lo:,.0f} req/s within {self.objective} ({self.arrivals} arrivals); the steps' verdicts "
                f"change between {lo:,.0f} and {hi:,.0f} req/s (the search's resolution, ±{half:.1%}, not a "
                f"confidence interval).{self._thin(lo, hi)}"
            )
        if self.outcome == "above-max" and lo is not None:
            return (
                f"Sustains at least {lo:,.0f} req/s within {self.objective}, the highest rate tried (--max-rate)."
                f"{self._thin(lo)}"
            )
        if self.outcome == "dead":
            return f"No request succeeded: the server stopped answering ({self.failures}); the search ended there."
        if self.outcome == "none":
            return (
                f"No rate tried meets {self.objective}: even {hi:,.0f} req/s missed (the search goes down to "
                "--min-rate, or 64 times below its start)."
            )
        where = f"between {lo:,.0f} and {hi:,.0f}" if lo is not None and hi is not None else "not bracketed"
        if self.outcome == "interrupted":
            so_far = f"the limit is {where} req/s so far" if lo is not None and hi is not None else "no bracket yet"
            return (
                f"Search interrupted after {len(self.steps)} whole step(s) (the step under way was not judged): "
                f"{so_far}."
            )
        return f"Search unfinished after {len(self.steps)} steps (--max-steps): the limit is {where} req/s."

    def verdicts(self) -> list[Step]:
        """The steps whose verdicts the search counted: each one not judged
        again together with the step after it (runner.pool)."""
        after = [*self.steps[1:], None]
        return [
            s
            for s, n in zip(self.steps, after, strict=True)
            if n is None or not (n.pooled and n.rate_rps == s.rate_rps)
        ]

    def _thin(self, *rates: float) -> str:
        """Where a verdict at the answer's rates rests on fewer responses
        than its percentile needs (--max-step cut its steps, even pooled):
        that verdict is undecided, read from a thin tail, and said so."""
        thin = sorted({s.rate_rps for s in self.verdicts() if s.few_samples and s.rate_rps in rates})
        if not thin:
            return ""
        at = " and ".join(f"{r:,.0f}" for r in thin)
        return (
            f" Undecided at {at} req/s: a verdict there rests on fewer responses than the percentile needs "
            "(--max-step ended its steps), so it is from a thin tail; a longer --max-step decides it."
        )


class StoredRun(_Record):
    """One run of an experiment as stored: where it sat in the schedule,
    how it ended, and everything measured."""

    id: int | None = None  # set by the store
    experiment_id: int
    seq: int
    point: dict[str, Level]  # the factors' levels
    point_key: str
    # 1, 2, ... for measured runs; 0 for warm-ups.
    repetition: int
    warmup: bool
    status: Status
    error: str | None = None
    started_unix: float
    ended_unix: float
    layout: RunLayout | None = None
    target: TargetInfo | None = None
    monitor: MonitorSummary | None = None
    result: LoadResult | None = None
    search: Capacity | None = None
    # The round of the schedule and the run's place in it; None in stores before schema 3.
    round: int | None = None
    position: int | None = None
    # Why the run's figures understate the target, when they do.
    lower_bound: str | None = None
    # The invocation of `corebench run` that made it (1, 2, ...); None in
    # stores before schema 5, where every run is of the first.
    session: int | None = None
    # ab's rate (every response per second) as stored, for a run without a result.
    stored_throughput_rps: float | None = None

    @property
    def measured(self) -> bool:
        """A measured run that ended well: what the analysis takes."""
        return self.status == "ok" and not self.warmup and self.result is not None

    @property
    def throughput_rps(self) -> float | None:
        """Every response per second, as ab counts them."""
        return self.result.throughput_rps if self.result is not None else self.stored_throughput_rps

    @property
    def goodput_rps(self) -> float | None:
        """Successes per second: failures are never throughput."""
        return self.result.goodput_rps if self.result is not None else None

    @property
    def failed_requests(self) -> int | None:
        return self.result.failed_requests if self.result is not None else None

    @property
    def duration_s(self) -> float | None:
        return self.result.duration_s if self.result is not None else None

    @property
    def p50_us(self) -> int | None:
        return self._percentile_us(50.0)

    @property
    def p99_us(self) -> int | None:
        return self._percentile_us(99.0)

    def _percentile_us(self, percentile: float) -> int | None:
        if self.result is None:
            return None
        return next((p.value_us for p in self.result.latency_us.total.percentiles if p.percentile == percentile), None)

    @property
    def client_bound(self) -> bool:
        return self.monitor is not None and self.monitor.client_bound

    @property
    def shared(self) -> bool:
        """The generator ran on the target's cores: the target's figures are
        understated. Told from the CPU sets, whether or not corebench placed
        the target (unplaced, both run on every core)."""
        layout = self.layout
        if layout is None or not layout.shared:
            return False
        if layout.target_host is not None:
            # Its CPUs are another host's: their numbers say nothing here; the runner decided.
            return True
        # Placed here, on SMT siblings of the target's cores: shared without a CPU in common.
        siblings = layout.controlled and layout.generator is None and layout.target_physical_cores is not None
        return siblings or bool(set(layout.target_cpus) & set(layout.generator_cpus))

    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.point.items())

    def levels_json(self) -> str:
        """The point's levels as stored (JSON, in the plan's order)."""
        return json.dumps(self.point)


def _cpus(cpus: list[int]) -> str:
    return ("CPU " if len(cpus) == 1 else "CPUs ") + ",".join(map(str, cpus))


def _cores(n: int) -> str:
    return f"{n} core" if n == 1 else f"{n} cores"
