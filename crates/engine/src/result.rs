//! The result of one load run: every figure, versioned, serializable.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::measure::cpu::CpuTimes;
use crate::measure::stats::{ErrorCounts, Stats};
use crate::measure::summary::{summarize, LatencySummary};

pub const SCHEMA: &str = "corebench.load/1";

#[derive(Debug, Clone, Serialize)]
pub struct Bytes {
    pub header: u64,
    pub body: u64,
    /// Headers and bodies received: the transfer rate's numerator.
    pub received: u64,
    pub sent: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Latencies {
    pub connect: LatencySummary,
    pub waiting: LatencySummary,
    pub processing: LatencySummary,
    pub total: LatencySummary,
}

#[derive(Debug, Clone, Serialize)]
pub struct TimelineSecond {
    pub second: u64,
    pub completed: u64,
    pub errors: u64,
    pub p50_us: u64,
    pub p99_us: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct LoadResult {
    pub schema: &'static str,
    pub engine_version: &'static str,
    pub model: &'static str,
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
    pub errors: ErrorCounts,
    pub error_samples: Vec<String>,
    pub status_counts: BTreeMap<u16, u64>,
    pub bytes: Bytes,
    pub server_software: Option<String>,
    pub document_length: Option<u64>,
    /// Complete responses per second over `duration_s` (DESIGN.md's throughput).
    pub throughput_rps: f64,
    pub transfer_rate_bytes_s: f64,
    pub latency_us: Latencies,
    pub timeline: Vec<TimelineSecond>,
}

/// What the run was and how long it took, as opposed to what it measured.
#[derive(Debug, Clone, Serialize)]
pub struct RunFacts {
    pub url: String,
    pub host: String,
    pub port: u16,
    pub path: String,
    pub address: String,
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
}

impl LoadResult {
    pub fn build(f: RunFacts, s: Stats) -> LoadResult {
        let status_counts: BTreeMap<u16, u64> =
            s.status.iter().enumerate().filter(|(_, &n)| n > 0).map(|(code, &n)| (code as u16, n)).collect();
        let non_2xx = status_counts.iter().filter(|(c, _)| !(200..300).contains(*c)).map(|(_, n)| n).sum();
        let received = s.header_bytes + s.body_bytes;
        let per_s = |x: u64| if f.duration_s > 0.0 { x as f64 / f.duration_s } else { 0.0 };
        let failed = s.errors.total();
        let timeline = s
            .timeline
            .iter()
            .enumerate()
            .map(|(i, sec)| TimelineSecond {
                second: i as u64,
                completed: sec.completed,
                errors: sec.errors,
                p50_us: if sec.total_us.is_empty() { 0 } else { sec.total_us.value_at_quantile(0.5) },
                p99_us: if sec.total_us.is_empty() { 0 } else { sec.total_us.value_at_quantile(0.99) },
            })
            .collect::<Vec<_>>();
        let seconds_run = (f.duration_s.ceil() as usize).max(1);
        let timeline = timeline.into_iter().take(seconds_run).collect();
        LoadResult {
            schema: SCHEMA,
            engine_version: env!("CARGO_PKG_VERSION"),
            model: "closed",
            // A length mismatch by ab's rule still had a response; other errors did not.
            requests: s.responses + failed - s.mismatched_responses,
            responses: s.responses,
            failed,
            non_2xx,
            keep_alive_requests: s.keep_alive_requests,
            connections_opened: s.connections_opened,
            errors: s.errors.clone(),
            error_samples: s.error_samples.clone(),
            status_counts,
            bytes: Bytes { header: s.header_bytes, body: s.body_bytes, received, sent: s.sent_bytes },
            server_software: s.server_software.clone(),
            document_length: s.document_length,
            throughput_rps: per_s(s.responses),
            transfer_rate_bytes_s: per_s(received),
            latency_us: Latencies {
                connect: summarize(&s.connect_us),
                waiting: summarize(&s.waiting_us),
                processing: summarize(&s.processing_us),
                total: summarize(&s.total_us),
            },
            timeline,
            run: f,
        }
    }
}
