//! From a run's merged figures to its `LoadResult`: the summaries a report
//! reads (status counts, percentiles, the timeline, how a schedule was kept).

use std::collections::BTreeMap;

use crate::client::h2::request::H2Request;
use crate::config::LoadConfig;
use crate::load::pacing::{Schedule, Shape};
use crate::measure::stats::{Http2Counts, Stats, StatusList, UrlLatency, UrlTable};
use crate::measure::summary::{count_over, summarize};
use crate::result::{
    BoundCount, Bytes, Heads, Http2Summary, Latencies, LoadResult, RunFacts, ScheduleSummary, TimelineSecond,
    UrlSummary, SCHEMA,
};
use crate::workload::Workload;

pub(crate) fn build(
    config: &LoadConfig,
    f: RunFacts,
    mut s: Stats,
    w: &Workload,
    schedule: Option<&Schedule>,
) -> LoadResult {
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
    let trace = config.trace.then(|| std::mem::take(&mut s.trace));
    let heads = config.capture_heads.then(|| Heads {
        request: if config.http2() { h2_request_head(w, config.url.starts_with("https")) } else { request_head(w) },
        response: s.response_head.take(),
    });
    LoadResult {
        schema: SCHEMA,
        engine_version: env!("CARGO_PKG_VERSION"),
        requests: s.requests(),
        responses: s.responses,
        failed,
        non_2xx,
        keep_alive_requests: s.keep_alive_requests,
        connections_opened: s.connections_opened,
        linger_probes: s.linger_probes,
        held_waits: s.held_waits,
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
            uncorrected: schedule.map(|_| summarize(&s.uncorrected_us)),
        },
        timeline,
        over_bounds: config
            .live_bounds_us
            .iter()
            .map(|&b| BoundCount { bound_us: b, over: count_over(&s.total_us, b) })
            .collect(),
        schedule: schedule.map(|sch| schedule_summary(sch, &s, f.interrupted)),
        urls: url_summaries(&s.urls, w),
        replay: w.source.clone(),
        agents: Vec::new(),
        trace,
        heads,
        http2: s.http2.as_ref().map(http2_summary),
        run: f,
    }
}

fn http2_summary(c: &Http2Counts) -> Http2Summary {
    Http2Summary {
        connections: c.connections,
        requests_per_connection_min: c.requests_min,
        requests_per_connection_mean: if c.connections == 0 {
            0.0
        } else {
            c.requests_total as f64 / c.connections as f64
        },
        requests_per_connection_max: c.requests_max,
        peak_streams: c.peak_streams,
        server_max_streams: c.server_max_streams,
        flow_control_stalls: c.flow_control_stalls,
        goaways: c.goaways,
        resets: c.resets,
    }
}

/// The first request's head, as written (up to and with its blank line).
fn request_head(w: &Workload) -> String {
    let Some(r) = w.requests.first() else { return String::new() };
    let end = r.bytes.windows(4).position(|b| b == b"\r\n\r\n").map_or(r.bytes.len(), |i| i + 4);
    String::from_utf8_lossy(&r.bytes[..end]).into_owned()
}

/// Over HTTP/2: the first request's fields as sent (pseudo-headers first;
/// no response head is kept).
fn h2_request_head(w: &Workload, tls: bool) -> String {
    let Some(r) = w.requests.first() else { return String::new() };
    H2Request::from_http1(r.bytes, tls).map_or_else(|e| e, |h| h.describe())
}

fn schedule_summary(sch: &Schedule, s: &Stats, interrupted: bool) -> ScheduleSummary {
    let c = &s.schedule;
    let scheduled = c.sent + c.dropped;
    // The window: the run's end or, when a count or the log ran out first,
    // the last due time and one mean interval after it.
    let unbounded = Schedule { end: None, ..sch.clone() };
    let ran_out = unbounded.due(scheduled).is_none();
    let by_count = match scheduled {
        0 | 1 => 0.0,
        n => unbounded.due(n - 1).map_or(0.0, |d| d.as_secs_f64()) * n as f64 / (n - 1) as f64,
    };
    let window_s = match sch.end {
        Some(end) if ran_out => by_count.min(end.as_secs_f64()),
        Some(end) => end.as_secs_f64(),
        None => by_count,
    };
    let target_rps = match sch.shape {
        Shape::Rate { .. } => sch.mean_rps(window_s),
        Shape::Log { .. } if window_s > 0.0 => scheduled as f64 / window_s,
        Shape::Log { .. } => 0.0,
    };
    let wire = &s.uncorrected_us;
    let mean_in_flight = match window_s > 0.0 {
        true => wire.mean() * wire.len() as f64 / 1e6 / window_s,
        false => 0.0,
    };
    let lag = &s.send_lag_us;
    let at = |q: f64| if lag.is_empty() { 0 } else { lag.value_at_quantile(q) };
    ScheduleSummary {
        target_rps,
        window_s,
        sent: c.sent,
        late: c.late,
        dropped: c.dropped,
        send_lag_p50_us: at(0.5),
        send_lag_p99_us: at(0.99),
        send_lag_max_us: if lag.is_empty() { 0 } else { lag.max() },
        peak_in_flight: c.peak_in_flight,
        mean_in_flight,
        kept: !interrupted && c.dropped == 0 && c.late * 100 <= c.sent,
    }
}

fn statuses(l: &StatusList) -> BTreeMap<u16, u64> {
    l.0.iter().copied().collect()
}

fn url_summaries(urls: &UrlTable, w: &Workload) -> Vec<UrlSummary> {
    urls.rows()
        .into_iter()
        .filter(|(_, u)| u.responses + u.errors > 0)
        .map(|(i, u)| {
            let r = w.requests.get(i);
            // Errors only: no latency to tell.
            let l = u.latency().unwrap_or(UrlLatency { mean_us: 0.0, p50_us: 0, p90_us: 0, p99_us: 0, max_us: 0 });
            UrlSummary {
                method: r.method(),
                target: r.target(),
                responses: u.responses,
                errors: u.errors,
                mean_us: l.mean_us,
                p50_us: l.p50_us,
                p90_us: l.p90_us,
                p99_us: l.p99_us,
                max_us: l.max_us,
                status_seen: statuses(&u.status_seen),
                status_logged: statuses(&u.status_logged),
                status_mismatches: u.status_mismatches,
            }
        })
        .collect()
}
