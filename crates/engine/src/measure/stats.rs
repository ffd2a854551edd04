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

    fn quantiles(u: &UrlStats) -> (u64, u64, u64, u64) {
        let l = u.latency().unwrap();
        (l.p50_us, l.p99_us, l.max_us, l.mean_us.round() as u64)
    }

    #[test]
    fn a_url_answered_once_has_no_histogram_and_its_one_latency() {
        let mut u = UrlStats::new();
        assert!(u.latency().is_none());
        u.respond(700);
        assert!(u.total_us.is_none());
        assert_eq!(quantiles(&u), (700, 700, 700, 700));
        u.respond(100);
        let h = u.total_us.as_ref().expect("made at the second response");
        assert_eq!(h.len(), 2, "with the first response in it");
    }

    #[test]
    fn merged_urls_hold_every_latency_whatever_each_side_held() {
        let values = [[300u64].as_slice(), &[100, 900], &[], &[500], &[200, 400, 600]];
        let mut whole = UrlStats::new();
        values.iter().flat_map(|v| v.iter()).for_each(|&v| whole.respond(v));
        // Every order of merging, from an empty row.
        for first in 0..values.len() {
            let mut merged = UrlStats::new();
            for v in values[first..].iter().chain(&values[..first]) {
                let mut part = UrlStats::new();
                v.iter().for_each(|&x| part.respond(x));
                merged.merge(&part);
            }
            assert_eq!(merged.responses, 7);
            assert_eq!(quantiles(&merged), quantiles(&whole), "starting at part {first}");
        }
    }

    #[test]
    fn a_url_table_has_rows_only_for_urls_used_and_travels_without_its_index() {
        let mut t = UrlTable::new(1_000_000);
        t.row(999_999).respond(50);
        t.row(3).errors += 1;
        t.row(3).respond(80);
        assert_eq!((t.len(), t.rows.len()), (1_000_000, 2));
        let wire = serde_json::to_string(&t).unwrap();
        assert!(wire.len() < 1_000, "{} bytes", wire.len());
        let back: UrlTable = serde_json::from_str(&wire).unwrap();
        let rows: Vec<(u32, u64, u64)> = back.rows().iter().map(|(r, u)| (*r, u.responses, u.errors)).collect();
        assert_eq!((back.len(), rows), (1_000_000, vec![(3, 1, 1), (999_999, 1, 0)]));
        let mut sum = UrlTable::new(1_000_000);
        sum.merge(&t);
        sum.merge(&back);
        assert_eq!(sum.rows().iter().map(|(_, u)| u.responses).collect::<Vec<_>>(), [2, 2]);
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
    /// The only response's latency while there is one: most URLs of a log
    /// of distinct pages are requested once, and a histogram (1-2 KB) for
    /// one value would cost a replay of millions of them gigabytes.
    #[serde(default)]
    pub first_us: u64,
    /// Every response's latency, made at the URL's second response.
    #[serde(with = "crate::measure::wire::small_lazy")]
    pub total_us: Option<Box<Histogram<u64>>>,
    pub status_seen: StatusList,
    /// The statuses the access log recorded for the requests made.
    pub status_logged: StatusList,
    /// Responses whose status differs from the one their log line recorded.
    pub status_mismatches: u64,
}

/// A URL's latencies as the report gives them.
pub struct UrlLatency {
    pub mean_us: f64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

impl UrlStats {
    fn new() -> UrlStats {
        UrlStats {
            responses: 0,
            errors: 0,
            first_us: 0,
            total_us: None,
            status_seen: StatusList::default(),
            status_logged: StatusList::default(),
            status_mismatches: 0,
        }
    }

    /// Counts a response that took `total_us`.
    pub fn respond(&mut self, total_us: u64) {
        if self.responses == 0 {
            self.first_us = total_us;
        } else {
            record_small(self.histogram(), total_us);
        }
        self.responses += 1;
    }

    /// The histogram, made from the first response where there is none yet.
    fn histogram(&mut self) -> &mut Histogram<u64> {
        let (responses, first) = (self.responses, self.first_us);
        self.total_us.get_or_insert_with(|| {
            let mut h = small_histogram();
            if responses > 0 {
                record_small(&mut h, first);
            }
            Box::new(h)
        })
    }

    pub fn latency(&self) -> Option<UrlLatency> {
        match &self.total_us {
            Some(h) if !h.is_empty() => Some(UrlLatency {
                mean_us: h.mean(),
                p50_us: h.value_at_quantile(0.5),
                p90_us: h.value_at_quantile(0.9),
                p99_us: h.value_at_quantile(0.99),
                max_us: h.max(),
            }),
            None if self.responses == 1 => {
                let v = self.first_us;
                Some(UrlLatency { mean_us: v as f64, p50_us: v, p90_us: v, p99_us: v, max_us: v })
            }
            _ => None,
        }
    }

    fn merge(&mut self, o: &UrlStats) {
        match (&o.total_us, o.responses) {
            (Some(h), _) => self.histogram().add(h.as_ref()).expect("auto-resizing histogram"),
            (None, 1) if self.responses == 0 => self.first_us = o.first_us,
            (None, 1) => record_small(self.histogram(), o.first_us),
            _ => {}
        }
        self.responses += o.responses;
        self.errors += o.errors;
        for &(s, n) in &o.status_seen.0 {
            self.status_seen.add(s, n);
        }
        for &(s, n) in &o.status_logged.0 {
            self.status_logged.add(s, n);
        }
        self.status_mismatches += o.status_mismatches;
    }
}

const NO_ROW: u32 = u32::MAX;

/// Each distinct request's figures, a row only for those a worker sent: a
/// log of millions of distinct URLs costs each worker 4 bytes per URL and a
/// row per URL it sent, not a row for every URL of the log.
#[derive(Default, Deserialize)]
#[serde(from = "UrlRows")]
pub struct UrlTable {
    /// Per request: its row, or NO_ROW.
    index: Vec<u32>,
    rows: Vec<(u32, UrlStats)>,
}

/// On the wire: the number of requests and the rows, not the index.
#[derive(Deserialize)]
struct UrlRows {
    requests: usize,
    rows: Vec<(u32, UrlStats)>,
}

#[derive(Serialize)]
struct UrlRowsRef<'a> {
    requests: usize,
    rows: &'a [(u32, UrlStats)],
}

impl Serialize for UrlTable {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        UrlRowsRef { requests: self.index.len(), rows: &self.rows }.serialize(s)
    }
}

impl From<UrlRows> for UrlTable {
    fn from(w: UrlRows) -> UrlTable {
        let mut t = UrlTable::new(w.requests);
        for (request, stats) in w.rows {
            if (request as usize) < w.requests {
                t.row(request).merge(&stats);
            }
        }
        t
    }
}

impl UrlTable {
    pub fn new(requests: usize) -> UrlTable {
        UrlTable { index: vec![NO_ROW; requests], rows: Vec::new() }
    }

    /// The number of distinct requests of the load.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// The request's row, made at its first use.
    pub fn row(&mut self, request: u32) -> &mut UrlStats {
        let at = &mut self.index[request as usize];
        if *at == NO_ROW {
            *at = self.rows.len() as u32;
            self.rows.push((request, UrlStats::new()));
        }
        &mut self.rows[*at as usize].1
    }

    /// The rows, in the order of their requests.
    pub fn rows(&self) -> Vec<(u32, &UrlStats)> {
        let mut out: Vec<(u32, &UrlStats)> = self.rows.iter().map(|(r, u)| (*r, u)).collect();
        out.sort_unstable_by_key(|(r, _)| *r);
        out
    }

    fn merge(&mut self, o: &UrlTable) {
        for (request, stats) in &o.rows {
            self.row(*request).merge(stats);
        }
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
    pub urls: UrlTable,
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
            urls: UrlTable::new(urls),
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
        self.urls.merge(&o.urls);
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
