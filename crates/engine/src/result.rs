//! The result of one load run: every figure, versioned, serializable.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::RateConfig;
use crate::measure::cpu::CpuTimes;
use crate::measure::stats::{ErrorCounts, ProbeCounts, Trace};
use crate::measure::summary::LatencySummary;
use crate::workload::replay::ReplaySource;

pub const SCHEMA: &str = "corebench.load/1";

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Bytes {
    pub header: u64,
    pub body: u64,
    /// Headers and bodies received: the transfer rate's numerator.
    pub received: u64,
    pub sent: u64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Latencies {
    pub connect: LatencySummary,
    pub waiting: LatencySummary,
    pub processing: LatencySummary,
    pub total: LatencySummary,
    /// Open loop only: from the actual send rather than the intended one,
    /// as a closed-loop tool would report (coordinated omission uncorrected).
    pub uncorrected: Option<LatencySummary>,
}

/// How an open-loop schedule was kept.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ScheduleSummary {
    /// The mean rate the schedule asked for over `window_s`.
    pub target_rps: f64,
    pub window_s: f64,
    pub sent: u64,
    /// Sent after waiting for a free connection (all `concurrency` busy).
    pub late: u64,
    /// Due within the window but never sent: no connection became free.
    pub dropped: u64,
    /// How long after its intended time each request left.
    pub send_lag_p50_us: u64,
    pub send_lag_p99_us: u64,
    pub send_lag_max_us: u64,
    /// The most requests in flight at once: the sum of the workers' peaks,
    /// an upper bound of the simultaneous peak (exact with one thread).
    pub peak_in_flight: u64,
    /// The mean number in flight over the window, by Little's law (L = λW;
    /// Little 1961): the sum of response times from the actual send over
    /// the window's length.
    pub mean_in_flight: f64,
    /// Nothing dropped, at most 1% late, not interrupted.
    pub kept: bool,
}

/// The figures of one distinct request of a URL list or a log.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct UrlSummary {
    pub method: String,
    pub target: String,
    pub responses: u64,
    pub errors: u64,
    pub mean_us: f64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    pub status_seen: BTreeMap<u16, u64>,
    /// What the access log recorded for the same requests (replay only).
    pub status_logged: BTreeMap<u16, u64>,
    pub status_mismatches: u64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TimelineSecond {
    pub second: u64,
    pub completed: u64,
    pub errors: u64,
    pub p50_us: u64,
    pub p99_us: u64,
}

/// The responses of a whole run over one latency bound, from its total
/// latency histogram and read as its percentiles are (`summary::count_over`):
/// "p99 <= L" holds where at most 1% are over L, so the counts of several
/// runs at one rate judge a percentile on all their responses together.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BoundCount {
    pub bound_us: u64,
    pub over: u64,
}

/// One load run: what it was (`run`) and every figure it measured, as
/// written for the Python side and the store (`SCHEMA`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LoadResult {
    pub schema: &'static str,
    pub engine_version: &'static str,
    #[serde(flatten)]
    pub run: RunFacts,
    /// Requests that ended, with a response or an error.
    pub requests: u64,
    /// Complete responses, whatever their status.
    pub responses: u64,
    pub failed: u64,
    pub non_2xx: u64,
    pub keep_alive_requests: u64,
    pub connections_opened: u64,
    /// What `linger = "auto"`'s probes found (none otherwise).
    pub linger_probes: ProbeCounts,
    /// Waits that held responses (`linger`). A wait holds only with
    /// `LINGER_MIN_IN_FLIGHT` or more requests in flight on its thread,
    /// none on a connection it is opening, and not in a busy-poll's spin,
    /// so a run with few connections per thread holds none whatever
    /// `linger` says.
    pub held_waits: u64,
    pub errors: ErrorCounts,
    pub error_samples: Vec<String>,
    pub status_counts: BTreeMap<u16, u64>,
    pub bytes: Bytes,
    pub server_software: Option<String>,
    pub document_length: Option<u64>,
    /// Complete responses per second over `duration_s`, failures included:
    /// ab's "Requests per second". Goodput, the rate of successes, is
    /// computed from `status_counts` (docs/architecture.md#terms).
    pub throughput_rps: f64,
    pub transfer_rate_bytes_s: f64,
    pub latency_us: Latencies,
    pub timeline: Vec<TimelineSecond>,
    /// Per `live_bounds_us`, in order: the run's responses over it (absent
    /// where the load asked for none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("default" = []))]
    pub over_bounds: Vec<BoundCount>,
    pub schedule: Option<ScheduleSummary>,
    /// Per distinct request, in the order first requested.
    pub urls: Vec<UrlSummary>,
    pub replay: Option<ReplaySource>,
    /// A distributed run: each agent's share, in agent order (absent, not
    /// empty, when the run was not distributed: the schema says so).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("default" = []))]
    pub agents: Vec<AgentSummary>,
    /// Each response's figures, when the config asked for a trace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<Trace>,
    /// The request's and the first response's heads, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heads: Option<Heads>,
    /// HTTP/2 only: how the connections carried the streams.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http2: Option<Http2Summary>,
}

/// How an HTTP/2 load's connections carried its requests.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Http2Summary {
    /// Connections opened, whole run (a server's GOAWAY after so many
    /// requests, nginx's `keepalive_requests`, makes more than asked).
    pub connections: u64,
    /// Requests each connection carried to a response.
    pub requests_per_connection_min: u64,
    pub requests_per_connection_mean: f64,
    pub requests_per_connection_max: u64,
    /// The most streams open at once on one connection.
    pub peak_streams: u64,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (the lowest seen): when
    /// below `streams`, the rest of a connection's requests wait in the
    /// client, and their wait is part of their latency.
    pub server_max_streams: Option<u32>,
    /// Requests whose body waited for the server's flow-control window.
    pub flow_control_stalls: u64,
    /// GOAWAY frames the server sent, and RST_STREAM frames.
    pub goaways: u64,
    pub resets: u64,
}

/// What went over the wire, for ab's -v: the first request's head as sent
/// (its body left out) and the first response's head as received.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Heads {
    pub request: String,
    /// None when no response arrived on the connection that keeps it.
    pub response: Option<String>,
}

/// What the run was and how long it took, as opposed to what it measured.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RunFacts {
    pub url: String,
    pub host: String,
    pub port: u16,
    pub path: String,
    pub address: String,
    /// closed, users, rate or replay.
    pub model: &'static str,
    /// Closed loop: connections; open loop: the most connections in use.
    pub concurrency: u32,
    pub threads: u32,
    pub keep_alive: bool,
    pub started_unix_s: f64,
    /// From the first request to the end of the last one.
    pub duration_s: f64,
    /// Stopped early by the caller (Ctrl-C): the figures cover what was measured.
    pub interrupted: bool,
    /// The generator's own CPU time over the run.
    pub cpu: CpuTimes,
    /// Non-zero when the workers busy-polled: their CPU then reads as fully
    /// used whether or not they were the limit.
    pub busy_poll_us: u64,
    /// When waits held responses (`LoadConfig::linger_applied`: off where
    /// the load ran on epoll, or `auto` had no closed loop to probe).
    pub linger: crate::config::Linger,
    /// For up to what share of the response time, in percent (0: off).
    pub linger_percent: u32,
    /// How the workers reached the kernel: "io_uring" or "epoll".
    pub io: &'static str,
    /// The protocol: "1.0", "1.1" or "2".
    pub http_version: crate::config::HttpVersion,
    /// Requests in flight per connection (HTTP/2's streams; 1 otherwise).
    pub streams: u32,
    pub rate: Option<RateConfig>,
    pub think_s: Option<(f64, f64)>,
    pub random_order: bool,
    pub seed: u64,
}

/// How one agent ran: on what, when, and at what cost.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct AgentRun {
    /// The CPUs the agent's process could use.
    pub cores: u32,
    pub threads: u32,
    pub concurrency: u32,
    pub started_unix_s: f64,
    /// How long after the agreed start this agent could begin (slow to
    /// prepare, or its clock ahead of the coordinator's).
    pub start_lag_s: f64,
    pub duration_s: f64,
    pub interrupted: bool,
    pub cpu: CpuTimes,
    /// "io_uring" or "epoll".
    #[serde(default)]
    pub io: String,
}

/// One agent's line in a merged result: enough to see that each did its
/// share and whether any was short of CPU (client-bound).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AgentSummary {
    pub index: u32,
    pub node: String,
    #[serde(flatten)]
    pub run: AgentRun,
    pub requests: u64,
    pub responses: u64,
    pub failed: u64,
    /// Of `responses`, those whose status was not 2xx or 3xx: failures too.
    #[serde(default)]
    pub unsuccessful: u64,
    /// Every response per second, as `LoadResult::throughput_rps`.
    pub throughput_rps: f64,
    /// Open loop: this agent's sends, late sends and dropped sends.
    pub sent: u64,
    pub late: u64,
    pub dropped: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    /// CPU time over the wall time of the cores it could use
    /// (min(threads, cores)): near 1 means the agent was the limit.
    pub cpu_utilization: f64,
    /// What this agent's probes found (`linger = "auto"`): the merged
    /// result's `linger_probes` is the sum over the agents, which alone
    /// cannot say which agents held.
    pub linger_probes: ProbeCounts,
}

/// The JSON Schema of `LoadResult` as it is written (serialized): every
/// figure and its type. The Python side's result models are generated from
/// it (python/corebench/result_models.py), so the result's contract is
/// written once, here.
pub fn load_result_schema() -> String {
    let generator = schemars::generate::SchemaSettings::default().for_serialize().into_generator();
    serde_json::to_string_pretty(&generator.into_root_schema_for::<LoadResult>()).expect("a schema serializes")
}
