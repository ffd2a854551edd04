//! A response's record: its times into the worker's histograms, its
//! status, bytes and URL into the counts, and its connection back to idle
//! (or closed).

use std::time::{Duration, Instant};

use super::{Pace, Worker};
use crate::client::conn::Phase;
use crate::load::io::Driver;
use crate::measure::stats::{micros, record_small, ErrorKind, TraceRow};

/// The weight of each response in the recent response time: an
/// exponentially weighted mean over about this many responses.
const RECENT_RESPONSES: f64 = 64.0;

impl<D: Driver> Worker<'_, D> {
    pub(super) fn record_response(&mut self, i: usize, now: Instant) {
        let second = self.second(now);
        let open = matches!(self.pace, Pace::Open(_));
        let c = &mut self.conns[i];
        let t = &c.times;
        // The response ended when its last byte arrived, not when this
        // thread got to it (see `client::stamp`).
        let end = t.last_byte.unwrap_or(now);
        let first = t.first_byte.unwrap_or(end);
        let response_s = end.saturating_duration_since(t.sent).as_secs_f64();
        self.recent_response_s = match self.recent_response_s {
            0.0 => response_s,
            r => r + (response_s - r) / RECENT_RESPONSES,
        };
        if let Some(p) = &mut self.probe {
            p.response(t.sent, end, now);
        }
        let s = &mut self.stats;
        s.connect_us.saturating_record(micros(t.connected - t.begun));
        s.waiting_us.saturating_record(micros(first.saturating_duration_since(t.sent)));
        s.processing_us.saturating_record(micros(end - t.connected));
        let total = micros(end - t.start);
        s.total_us.saturating_record(total);
        if open {
            s.uncorrected_us.saturating_record(micros(end - t.begun));
        }
        if self.spec.trace_limit > 0 {
            let us = |d: Duration| d.as_micros() as u64;
            let row = TraceRow {
                start_us: us(t.start.saturating_duration_since(self.spec.run_start)),
                connect_us: us(t.connected - t.begun),
                waiting_us: us(first.saturating_duration_since(t.sent)),
                processing_us: us(end - t.connected),
                total_us: us(end - t.start),
                status: c.parser.status,
            };
            s.trace.record(row, self.spec.trace_limit);
        }
        let sec = s.second(second);
        sec.completed += 1;
        record_small(&mut sec.total_us, total);
        s.responses += 1;
        // ab's "Keep-Alive requests": responses that kept the connection open.
        if c.parser.reusable {
            s.keep_alive_requests += 1;
        }
        let status = c.parser.status;
        s.status_count(status);
        let url = s.urls.row(c.entry.request);
        url.respond(total);
        url.status_seen.add(status, 1);
        if c.entry.status != 0 {
            url.status_logged.add(c.entry.status, 1);
            url.status_mismatches += u64::from(c.entry.status != status);
        }
        s.header_bytes += c.parser.header_bytes;
        s.body_bytes += c.parser.body_bytes;
        if !D::COUNTS_SENT_BYTES {
            s.sent_bytes += self.spec.workload.requests.get(c.entry.request).bytes.len() as u64;
        }
        if c.parser.want_server {
            s.server_software = c.parser.server.take();
            c.parser.want_server = false;
        }
        if c.parser.want_head {
            s.response_head = c.parser.head_text.take();
            c.parser.want_head = false;
        }
        let len = c.parser.body_bytes;
        let doc = *s.document_length.get_or_insert(len);
        if doc != len && !self.spec.variable_length {
            s.mismatched_responses += 1;
            s.error(ErrorKind::Length, second, || {
                format!("document length {len} differs from the first, {doc} (ab's rule; -l accepts variable lengths)")
            });
        }
        c.served += 1;
        if c.parser.reusable {
            // Idle until its next request: while a user thinks or the slot
            // waits in the free list, events on it (the server closing an idle
            // connection) and the old deadline mean nothing; a dead
            // connection shows as Stale when it is next used.
            c.phase = Phase::Idle;
        } else {
            c.close();
        }
    }
}
