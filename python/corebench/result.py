"""The typed result of one load run, parsed from the engine's versioned JSON
(schema `corebench.load/1`). Later stages (runner, store, report) use it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Percentile(_Model):
    percentile: float
    value_us: int


class SpectrumPoint(_Model):
    value_us: int
    percentile: float
    total_count: int


class LatencySummary(_Model):
    count: int
    min_us: int
    max_us: int
    mean_us: float
    stdev_us: float
    median_us: int
    percentiles: list[Percentile]
    spectrum: list[SpectrumPoint]
    histogram: str  # HdrHistogram V2 compressed, base64
    hdr_buckets: int
    hdr_sub_buckets: int

    def at(self, percentile: float) -> int:
        for p in self.percentiles:
            if p.percentile == percentile:
                return p.value_us
        raise KeyError(f"percentile {percentile} not summarized")


class Latencies(_Model):
    connect: LatencySummary
    waiting: LatencySummary
    processing: LatencySummary
    total: LatencySummary
    # Open loop only: measured from the actual send, not the intended one.
    uncorrected: LatencySummary | None = None


# A response is a success when its status is 2xx or 3xx (RFC 9110 §15: a
# redirect completed the exchange the client asked for); transport errors,
# 4xx and 5xx are failures, and failures are never throughput.
SUCCESS = range(200, 400)
# A point or a load where more than this share of requests failed (errors or
# unsuccessful statuses) is failing: reported, never offered as best, never
# counted as sustaining its load.
FAILING_SHARE = 0.01
# A generator that used this share of its cores' time (its threads', or an
# agent's) was the limit rather than the server: client-bound. The monitor,
# the load command's warning and the agents' report all judge by it.
CLIENT_BOUND_SHARE = 0.9
# A run at this share of the generator's calibrated ceiling measured the
# generator too: a lower bound of the server (runner.calibrate).
NEAR_CEILING = 0.8
# A run shorter than this is mostly its load threads' start (spawning them,
# the first connects): its share of the cores says nothing of a limit.
CLIENT_BOUND_MIN_S = 0.1


class ErrorCounts(_Model):
    connect: int
    receive: int
    length: int
    exceptions: int
    timeout: int


class Bytes(_Model):
    header: int
    body: int
    received: int
    sent: int


class TimelineSecond(_Model):
    second: int
    completed: int
    errors: int
    p50_us: int
    p99_us: int


class ScheduleSummary(_Model):
    target_rps: float
    window_s: float
    sent: int
    late: int
    dropped: int
    send_lag_p50_us: int
    send_lag_p99_us: int
    send_lag_max_us: int
    # The sum of the worker threads' peaks: an upper bound of the
    # simultaneous peak, exact with one thread.
    peak_in_flight: int = 0
    # Little's law (L = λW; Little 1961) over the window.
    mean_in_flight: float = 0.0
    kept: bool


class UrlSummary(_Model):
    method: str
    target: str
    responses: int
    errors: int
    mean_us: float
    p50_us: int
    p90_us: int
    p99_us: int
    max_us: int
    status_seen: dict[int, int]
    status_logged: dict[int, int]
    status_mismatches: int


class SkipCount(_Model):
    reason: str
    count: int


class SkippedLine(_Model):
    line: int
    reason: str
    text: str


class ReplaySource(_Model):
    path: str
    log_format: str
    lines: int
    replayed: int
    skipped: list[SkipCount]
    skipped_examples: list[SkippedLine]
    stopped_at_limit: bool
    out_of_order: int
    span_s: float


class RateConfig(_Model):
    rps: float
    end_rps: float | None = None
    ramp_s: float | None = None
    # Results stored before arrivals could be chosen were evenly spaced.
    arrivals: Literal["uniform", "poisson"] = "uniform"


class CpuTimes(_Model):
    user_s: float
    system_s: float


class ProbeCounts(_Model):
    # What `linger = "auto"`'s probes found: those that decided, and those
    # that found holding cost the server no load (summed over the workers).
    probes: int = 0
    held: int = 0


class AgentSummary(_Model):
    """One agent's share of a distributed run."""

    index: int
    node: str
    cores: int
    threads: int
    concurrency: int
    started_unix_s: float
    # After the agreed start: slow to prepare, or a clock ahead (None in
    # results stored before it was measured).
    start_lag_s: float | None = None
    duration_s: float
    interrupted: bool
    io: str = "epoll"
    requests: int
    responses: int
    failed: int
    throughput_rps: float
    sent: int
    late: int
    dropped: int
    p50_us: int
    p99_us: int
    cpu: CpuTimes
    # CPU time over the wall time of the cores it could use: near 1, the
    # agent rather than the server was the limit.
    cpu_utilization: float
    # This agent's probes (the run's `linger_probes` sums them).
    linger_probes: ProbeCounts = ProbeCounts()
    # Of its responses, those with a status other than 2xx or 3xx (0 in
    # results stored before they were counted).
    unsuccessful: int = 0

    @property
    def goodput_rps(self) -> float:
        """Successes per second: `throughput_rps` counts every response,
        `unsuccessful` those that failed; failures are never throughput."""
        ok = self.responses - self.unsuccessful
        return ok / self.duration_s if self.duration_s else 0.0

    @property
    def failures(self) -> int:
        """Errors and responses with a status other than 2xx or 3xx."""
        return self.failed + self.unsuccessful

    @property
    def run_cpu_s(self) -> float:
        return self.cpu.user_s + self.cpu.system_s


class RequestTrace(_Model):
    """Each response's own figures (µs; `start_us` from the run's start), one
    row across the columns per response, kept only when the load asked for a
    trace (ab's -g); `left_out` responses past the engine's limit were not kept."""

    start_us: list[int]
    connect_us: list[int]
    waiting_us: list[int]
    processing_us: list[int]
    total_us: list[int]
    status: list[int]
    left_out: int


class Heads(_Model):
    """The first request's head as sent and the first response's as received
    (ab's -v 2), kept only when asked for."""

    request: str
    response: str | None


class Http2Summary(_Model):
    """How an HTTP/2 load's connections carried its requests."""

    # Connections opened over the run (a server's GOAWAY after so many
    # requests, nginx's keepalive_requests, makes more than asked).
    connections: int
    requests_per_connection_min: int
    requests_per_connection_mean: float
    requests_per_connection_max: int
    # The most streams open at once on one connection.
    peak_streams: int
    # The server's SETTINGS_MAX_CONCURRENT_STREAMS (lowest seen); below the
    # streams asked, the rest wait in the client, inside their latency.
    server_max_streams: int | None
    # Requests whose body waited for the server's flow-control window.
    flow_control_stalls: int
    goaways: int
    resets: int


class LoadResult(_Model):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    result_schema: str = Field(alias="schema")
    engine_version: str
    url: str
    host: str
    port: int
    path: str
    address: str
    model: str
    concurrency: int
    threads: int
    keep_alive: bool
    started_unix_s: float
    duration_s: float
    interrupted: bool
    requests: int
    responses: int
    failed: int
    non_2xx: int
    keep_alive_requests: int
    connections_opened: int
    errors: ErrorCounts
    error_samples: list[str]
    status_counts: dict[int, int]
    bytes: Bytes
    server_software: str | None
    document_length: int | None
    throughput_rps: float
    transfer_rate_bytes_s: float
    latency_us: Latencies
    timeline: list[TimelineSecond]
    cpu: CpuTimes
    busy_poll_us: int
    # When waits held responses (`linger`, HTTP/1.x: "auto", "always" or
    # "off"), and for up to what share of the response time, in percent (0:
    # off); results stored before `auto` existed held always where the
    # percent is not 0.
    linger: str = "always"
    linger_percent: int = 0
    linger_probes: ProbeCounts = ProbeCounts()
    # Waits that held responses; None in results stored before it was counted.
    held_waits: int | None = None
    # How the load threads reached the kernel: "io_uring" or "epoll" (results
    # stored before corebench had io_uring ran on epoll).
    io: str = "epoll"
    # The protocol ("1.0", "1.1", "2") and the requests in flight per
    # connection (HTTP/2's streams; 1 otherwise).
    http_version: str = "1.1"
    streams: int = 1
    rate: RateConfig | None = None
    think_s: tuple[float, float] | None = None
    random_order: bool = False
    seed: int = 1
    schedule: ScheduleSummary | None = None
    urls: list[UrlSummary] = []
    replay: ReplaySource | None = None
    # A distributed run (Ray): each agent's share, in agent order.
    agents: list[AgentSummary] = []
    trace: RequestTrace | None = None
    heads: Heads | None = None
    http2: Http2Summary | None = None

    @model_serializer(mode="wrap")
    def _without_unasked(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A trace and the heads are kept only when asked for: absent, not null,
        # otherwise, as the engine writes them.
        data: dict[str, Any] = handler(self)
        for key in ("trace", "heads", "http2"):
            if data.get(key, 0) is None:
                del data[key]
        return data

    @property
    def generator_cpu_s(self) -> float:
        return self.cpu.user_s + self.cpu.system_s

    @property
    def successes(self) -> int:
        """Responses with a successful status (2xx, 3xx)."""
        return sum(n for code, n in self.status_counts.items() if code in SUCCESS)

    @property
    def goodput_rps(self) -> float:
        """Successful responses per second: failures are never throughput."""
        return self.successes / self.duration_s if self.duration_s else 0.0

    @property
    def failed_requests(self) -> int:
        """Transport errors plus responses with an unsuccessful status, less
        a replay's responses that had the status its log recorded for the
        same request (the site answered as it did then: not a failure of
        this run)."""
        return self.failed + self.unsuccessful - self.as_logged

    @property
    def unsuccessful(self) -> int:
        """Responses with a status other than 2xx or 3xx, as logged or not."""
        return sum(n for code, n in self.status_counts.items() if code not in SUCCESS)

    @property
    def as_logged(self) -> int:
        """A replay's unsuccessful (4xx, 5xx) responses whose status the log
        also recorded for that method and target, up to the share of the
        target's log lines that had it: a page logged 200 nine times and 500
        once, answered 500 every time, has one tenth of its 500s as logged."""
        if self.replay is None:
            return 0
        n = 0
        for u in self.urls:
            lines, answered = sum(u.status_logged.values()), sum(u.status_seen.values())
            for code, c in u.status_seen.items():
                if code not in SUCCESS and code in u.status_logged and lines:
                    n += min(c, round(answered * u.status_logged[code] / lines))
        return n

    def failures(self) -> str:
        """What went wrong, most frequent first: error classes and statuses."""
        counts = {k: v for k, v in self.errors.model_dump().items() if v}
        counts |= {f"status {code}": n for code, n in self.status_counts.items() if code not in SUCCESS and n}
        return ", ".join(f"{k}: {v:,}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])) or "none"
