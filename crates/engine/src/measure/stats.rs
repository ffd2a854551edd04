//! Per-worker measurements, allocated before the load starts and merged once
//! when it ends, so the hot path takes no lock and shares no cache line.

use std::time::Duration;

use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Latencies are recorded in microseconds, 3 significant digits, up to an
/// hour (docs/architecture.md#terms: HDR histograms, never a list of samples).
pub const LATENCY_MAX_US: u64 = 3_600_000_000;
pub const LATENCY_SIGFIG: u8 = 3;

pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, LATENCY_MAX_US, LATENCY_SIGFIG).expect("static histogram bounds")
}

pub fn micros(d: Duration) -> u64 {
    (d.as_micros() as u64).clamp(1, LATENCY_MAX_US)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_keeps_rows_up_to_its_limit_and_counts_the_rest() {
        let row =
            |us| TraceRow { start_us: us, connect_us: 1, waiting_us: 2, processing_us: 3, total_us: us, status: 200 };
        let mut a = Trace::default();
        for us in [10, 20, 30] {
            a.record(row(us), 2);
        }
        assert_eq!((a.len(), a.left_out), (2, 1));
        let mut b = Trace::default();
        b.record(row(u64::MAX), 5);
        assert_eq!(b.total_us, vec![u32::MAX], "a time past u32 saturates");
        a.merge(b);
        assert_eq!((a.total_us, a.start_us.len(), a.status.len(), a.left_out), (vec![10, 20, u32::MAX], 3, 3, 1));
    }

    #[test]
    fn small_histograms_grow_to_any_latency() {
        let mut h = small_histogram();
        for v in [2, 5_000, LATENCY_MAX_US] {
            record_small(&mut h, v);
        }
        assert_eq!(h.len(), 3);
        assert!(h.max() >= LATENCY_MAX_US - LATENCY_MAX_US / 100, "{}", h.max());
        assert!((4_950..=5_050).contains(&h.value_at_quantile(0.5)), "{}", h.value_at_quantile(0.5));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The TCP connection (or TLS handshake) could not be established.
    Connect,
    /// A socket error while sending or receiving, or the connection closed
    /// before a complete response head arrived.
    Receive,
    /// The body ended before its declared length, or (ab's rule, unless
    /// `variable_length`) differed from the first response's length.
    Length,
    /// The bytes received were not valid HTTP/1.x.
    Exception,
    /// No complete response within the per-request timeout.
    Timeout,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorCounts {
    pub connect: u64,
    pub receive: u64,
    pub length: u64,
    pub exceptions: u64,
    pub timeout: u64,
}

impl ErrorCounts {
    pub fn total(&self) -> u64 {
        self.connect + self.receive + self.length + self.exceptions + self.timeout
    }
    fn add(&mut self, o: &ErrorCounts) {
        self.connect += o.connect;
        self.receive += o.receive;
        self.length += o.length;
        self.exceptions += o.exceptions;
        self.timeout += o.timeout;
    }
}

#[derive(Serialize, Deserialize)]
pub struct Second {
    pub completed: u64,
    pub errors: u64,
    #[serde(with = "crate::measure::wire::small")]
    pub total_us: Histogram<u64>,
}

impl Second {
    pub(crate) fn new() -> Second {
        // Auto-resizing, 2 digits: a per-second p50/p99 needs no more, and a
        // long run must not hold a full-size histogram for every second.
        Second { completed: 0, errors: 0, total_us: small_histogram() }
    }
}

pub const ERROR_SAMPLES: usize = 5;

/// An auto-resizing histogram, 2 digits: for figures kept per second or per
/// URL, where a full-size histogram each would cost too much memory.
pub(crate) fn small_histogram() -> Histogram<u64> {
    let mut h = Histogram::new(2).expect("static histogram precision");
    h.auto(true);
    h
}

/// Records into a `small_histogram`. Not `saturating_record`: that clamps
/// to the range allocated so far instead of growing it.
pub fn record_small(h: &mut Histogram<u64>, value_us: u64) {
    h.record(value_us).expect("an auto-resizing histogram takes any latency");
}

/// Status codes and their counts, in order of first appearance: a URL sees
/// one or two codes, so a short list beats a map.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StatusList(pub Vec<(u16, u64)>);

impl StatusList {
    pub fn add(&mut self, status: u16, n: u64) {
        match self.0.iter_mut().find(|(s, _)| *s == status) {
            Some((_, c)) => *c += n,
            None => self.0.push((status, n)),
        }
    }
}

/// The figures of one distinct request (a URL of a list or a log).
#[derive(Serialize, Deserialize)]
pub struct UrlStats {
    pub responses: u64,
    pub errors: u64,
    /// Made at the URL's first response: a log of millions of distinct
    /// requests must not cost each worker a histogram (2 KB) for every one
    /// it never sent (10 GB for 2,000,000 URLs on two threads, before).
    #[serde(with = "crate::measure::wire::small_lazy")]
    pub total_us: Option<Histogram<u64>>,
    pub status_seen: StatusList,
    /// The statuses the access log recorded for the requests made.
    pub status_logged: StatusList,
    /// Responses whose status differs from the one their log line recorded.
    pub status_mismatches: u64,
}

impl UrlStats {
    fn new() -> UrlStats {
        UrlStats {
            responses: 0,
            errors: 0,
            total_us: None,
            status_seen: StatusList::default(),
            status_logged: StatusList::default(),
            status_mismatches: 0,
        }
    }

    fn merge(&mut self, o: &UrlStats) {
        self.responses += o.responses;
        self.errors += o.errors;
        if let Some(h) = &o.total_us {
            self.total_us.get_or_insert_with(small_histogram).add(h).expect("auto-resizing histogram");
        }
        for &(s, n) in &o.status_seen.0 {
            self.status_seen.add(s, n);
        }
        for &(s, n) in &o.status_logged.0 {
            self.status_logged.add(s, n);
        }
        self.status_mismatches += o.status_mismatches;
    }
}

/// How an open-loop schedule was kept.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduleCounts {
    pub sent: u64,
    /// Sent after waiting for a free connection.
    pub late: u64,
    /// Due before the end of the run but never sent: no connection was free.
    pub dropped: u64,
    /// The most requests in flight at once on one worker. Merged as a sum,
    /// so across workers it bounds the simultaneous peak from above (exact
    /// with one worker): a shared counter would put an atomic on every send.
    #[serde(default)]
    pub peak_in_flight: u64,
}

/// What `--linger auto`'s probes found (`load::linger`), summed over the
/// workers (each probes its own connections).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ProbeCounts {
    /// Probes that came to a decision.
    pub probes: u64,
    /// Those that found holding cost the server no load, and held after.
    pub held: u64,
}

/// Each response's own figures, kept only when asked (`LoadConfig::trace`,
/// ab's -g): columns of equal length, one row per response, in the order
/// each worker recorded them. Times are µs; `start_us` counts from the
/// run's start.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Trace {
    pub start_us: Vec<u64>,
    pub connect_us: Vec<u32>,
    pub waiting_us: Vec<u32>,
    pub processing_us: Vec<u32>,
    pub total_us: Vec<u32>,
    pub status: Vec<u16>,
    /// Responses not kept, past the limit.
    pub left_out: u64,
}

/// One response's row of a `Trace`.
#[derive(Debug, Clone, Copy)]
pub struct TraceRow {
    pub start_us: u64,
    pub connect_us: u64,
    pub waiting_us: u64,
    pub processing_us: u64,
    pub total_us: u64,
    pub status: u16,
}

impl Trace {
    pub fn len(&self) -> usize {
        self.total_us.len()
    }

    pub fn is_empty(&self) -> bool {
        self.total_us.is_empty()
    }

    /// Keeps the row while fewer than `limit` are kept; counts it otherwise.
    pub fn record(&mut self, row: TraceRow, limit: usize) {
        if self.len() >= limit {
            self.left_out += 1;
            return;
        }
        let narrow = |us: u64| u32::try_from(us).unwrap_or(u32::MAX);
        self.start_us.push(row.start_us);
        self.connect_us.push(narrow(row.connect_us));
        self.waiting_us.push(narrow(row.waiting_us));
        self.processing_us.push(narrow(row.processing_us));
        self.total_us.push(narrow(row.total_us));
        self.status.push(row.status);
    }

    fn merge(&mut self, o: Trace) {
        self.start_us.extend(o.start_us);
        self.connect_us.extend(o.connect_us);
        self.waiting_us.extend(o.waiting_us);
        self.processing_us.extend(o.processing_us);
        self.total_us.extend(o.total_us);
        self.status.extend(o.status);
        self.left_out += o.left_out;
    }
}

/// Serializable (histograms encoded) so an agent's measurements can be
/// merged with others' elsewhere, as exactly as a worker's are here.
#[derive(Serialize, Deserialize)]
pub struct Stats {
    #[serde(with = "crate::measure::wire::latency")]
    pub connect_us: Histogram<u64>,
    #[serde(with = "crate::measure::wire::latency")]
    pub waiting_us: Histogram<u64>,
    #[serde(with = "crate::measure::wire::latency")]
    pub processing_us: Histogram<u64>,
    #[serde(with = "crate::measure::wire::latency")]
    pub total_us: Histogram<u64>,
    /// Open loop: latency from the actual send, as if the schedule had not
    /// slipped (what a closed-loop tool reports); `total_us` counts from the
    /// intended send time.
    #[serde(with = "crate::measure::wire::latency")]
    pub uncorrected_us: Histogram<u64>,
    /// Open loop: how long after its intended time each request was sent.
    #[serde(with = "crate::measure::wire::latency")]
    pub send_lag_us: Histogram<u64>,
    pub schedule: ScheduleCounts,
    #[serde(default)]
    pub linger_probes: ProbeCounts,
    /// Waits that held responses (`linger`).
    #[serde(default)]
    pub held_waits: u64,
    pub urls: Vec<UrlStats>,
    pub status: Vec<u64>,
    pub errors: ErrorCounts,
    pub error_samples: Vec<String>,
    pub responses: u64,
    /// Responses that also count as a Length failure (ab's rule).
    pub mismatched_responses: u64,
    pub keep_alive_requests: u64,
    pub connections_opened: u64,
    pub header_bytes: u64,
    pub body_bytes: u64,
    pub sent_bytes: u64,
    pub timeline: Vec<Second>,
    pub server_software: Option<String>,
    pub document_length: Option<u64>,
    /// Each response's figures, when the config asks for a trace.
    #[serde(default)]
    pub trace: Trace,
    /// The head of the first response, when the config asks for heads.
    #[serde(default)]
    pub response_head: Option<String>,
    /// What only HTTP/2 has: streams per connection, flow control, GOAWAY.
    #[serde(default)]
    pub http2: Option<Http2Counts>,
}

/// A worker's HTTP/2 connections, counted by its driver.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Http2Counts {
    pub connections: u64,
    /// Requests each connection carried to a response: fewest, most, sum.
    pub requests_min: u64,
    pub requests_max: u64,
    pub requests_total: u64,
    /// The most streams open at once on one connection.
    pub peak_streams: u64,
    /// The lowest SETTINGS_MAX_CONCURRENT_STREAMS a server set (RFC 9113
    /// §6.5.2); beyond it requests wait in the client for a stream.
    pub server_max_streams: Option<u32>,
    /// Requests whose body waited for the server's flow-control window.
    pub flow_control_stalls: u64,
    pub goaways: u64,
    /// RST_STREAM frames the server sent.
    pub resets: u64,
}

impl Http2Counts {
    /// One connection ended (or the run did) after carrying `requests`.
    pub(crate) fn connection_ended(&mut self, requests: u64) {
        self.requests_min = if self.connections == 0 { requests } else { self.requests_min.min(requests) };
        self.requests_max = self.requests_max.max(requests);
        self.requests_total += requests;
        self.connections += 1;
    }

    fn merge(&mut self, o: &Http2Counts) {
        match (self.connections, o.connections) {
            (_, 0) => {}
            (0, _) => self.requests_min = o.requests_min,
            _ => self.requests_min = self.requests_min.min(o.requests_min),
        }
        self.connections += o.connections;
        self.requests_max = self.requests_max.max(o.requests_max);
        self.requests_total += o.requests_total;
        self.peak_streams = self.peak_streams.max(o.peak_streams);
        self.server_max_streams = match (self.server_max_streams, o.server_max_streams) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.flow_control_stalls += o.flow_control_stalls;
        self.goaways += o.goaways;
        self.resets += o.resets;
    }
}

impl Stats {
    pub fn new(expected_seconds: usize, urls: usize) -> Stats {
        Stats {
            connect_us: latency_histogram(),
            waiting_us: latency_histogram(),
            processing_us: latency_histogram(),
            total_us: latency_histogram(),
            uncorrected_us: latency_histogram(),
            send_lag_us: latency_histogram(),
            schedule: ScheduleCounts::default(),
            linger_probes: ProbeCounts::default(),
            held_waits: 0,
            urls: (0..urls).map(|_| UrlStats::new()).collect(),
            status: vec![0; 600],
            errors: ErrorCounts::default(),
            error_samples: Vec::with_capacity(ERROR_SAMPLES),
            responses: 0,
            mismatched_responses: 0,
            keep_alive_requests: 0,
            connections_opened: 0,
            header_bytes: 0,
            body_bytes: 0,
            sent_bytes: 0,
            timeline: (0..expected_seconds).map(|_| Second::new()).collect(),
            server_software: None,
            document_length: None,
            trace: Trace::default(),
            response_head: None,
            http2: None,
        }
    }

    /// Requests that ended, with a response or an error: a length mismatch
    /// by ab's rule still had a response; other errors did not.
    pub fn requests(&self) -> u64 {
        self.responses + self.errors.total() - self.mismatched_responses
    }

    pub fn second(&mut self, index: usize) -> &mut Second {
        while self.timeline.len() <= index {
            self.timeline.push(Second::new());
        }
        &mut self.timeline[index]
    }

    pub fn error(&mut self, kind: ErrorKind, second: usize, why: impl FnOnce() -> String) {
        let e = &mut self.errors;
        match kind {
            ErrorKind::Connect => e.connect += 1,
            ErrorKind::Receive => e.receive += 1,
            ErrorKind::Length => e.length += 1,
            ErrorKind::Exception => e.exceptions += 1,
            ErrorKind::Timeout => e.timeout += 1,
        }
        self.second(second).errors += 1;
        if self.error_samples.len() < ERROR_SAMPLES {
            self.error_samples.push(why());
        }
    }

    pub fn status_count(&mut self, status: u16) {
        let i = (status as usize).min(self.status.len() - 1);
        self.status[i] += 1;
    }

    /// Responses whose status is not a success (2xx, 3xx): failures, as a
    /// transport error is; goodput (docs/architecture.md#terms) counts
    /// neither. Summed from the status counts, at a tick rather than per
    /// response.
    pub(crate) fn unsuccessful(&self) -> u64 {
        let success = 200..400;
        self.status.iter().enumerate().filter(|(code, _)| !success.contains(code)).map(|(_, n)| n).sum()
    }

    /// Adds another worker's measurements; called once per worker at the end.
    pub fn merge(&mut self, o: Stats) {
        for (a, b) in [
            (&mut self.connect_us, &o.connect_us),
            (&mut self.waiting_us, &o.waiting_us),
            (&mut self.processing_us, &o.processing_us),
            (&mut self.total_us, &o.total_us),
            (&mut self.uncorrected_us, &o.uncorrected_us),
            (&mut self.send_lag_us, &o.send_lag_us),
        ] {
            a.add(b).expect("histograms share bounds");
        }
        for (a, b) in self.status.iter_mut().zip(&o.status) {
            *a += b;
        }
        self.errors.add(&o.errors);
        self.schedule.sent += o.schedule.sent;
        self.schedule.late += o.schedule.late;
        self.schedule.dropped += o.schedule.dropped;
        self.schedule.peak_in_flight += o.schedule.peak_in_flight;
        self.linger_probes.probes += o.linger_probes.probes;
        self.linger_probes.held += o.linger_probes.held;
        self.held_waits += o.held_waits;
        for (a, b) in self.urls.iter_mut().zip(&o.urls) {
            a.merge(b);
        }
        for s in o.error_samples {
            if self.error_samples.len() < ERROR_SAMPLES {
                self.error_samples.push(s);
            }
        }
        self.responses += o.responses;
        self.mismatched_responses += o.mismatched_responses;
        self.keep_alive_requests += o.keep_alive_requests;
        self.connections_opened += o.connections_opened;
        match (&mut self.http2, &o.http2) {
            (Some(a), Some(b)) => a.merge(b),
            (a @ None, b) => a.clone_from(b),
            (Some(_), None) => {}
        }
        self.header_bytes += o.header_bytes;
        self.body_bytes += o.body_bytes;
        self.sent_bytes += o.sent_bytes;
        for (i, s) in o.timeline.into_iter().enumerate() {
            let mine = self.second(i);
            mine.completed += s.completed;
            mine.errors += s.errors;
            mine.total_us.add(&s.total_us).expect("auto-resizing histogram");
        }
        self.server_software = self.server_software.take().or(o.server_software);
        self.document_length = self.document_length.or(o.document_length);
        self.trace.merge(o.trace);
        self.response_head = self.response_head.take().or(o.response_head);
    }
}
