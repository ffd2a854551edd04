//! One worker thread: an edge-triggered event loop (mio) over a fixed set of
//! connection slots. Closed loop: a slot starts its next request as soon as
//! its previous one ends, while the budget lasts.

use std::time::{Duration, Instant};

use mio::{Events, Poll, Token};

use super::budget::Budget;
use super::control::Control;
use crate::client::conn::{Conn, Phase, Step};
use crate::client::target::Target;
use crate::client::transport::TlsContext;
use crate::measure::stats::{micros, ErrorKind, Stats};

const READ_BUFFER_BYTES: usize = 64 * 1024;
/// How often timeouts are checked and progress published.
const TICK: Duration = Duration::from_millis(10);

pub struct WorkerSpec<'a> {
    pub target: &'a Target,
    pub tls: Option<&'a TlsContext>,
    pub connections: usize,
    pub budget: Budget,
    pub timeout: Duration,
    pub run_start: Instant,
    pub variable_length: bool,
    pub control: &'a Control,
    pub expected_seconds: usize,
    pub want_server: bool,
    pub busy_poll: Duration,
}

enum After {
    Busy,
    Free,
    Retry,
}

struct Worker<'a> {
    spec: WorkerSpec<'a>,
    poll: Poll,
    conns: Vec<Conn>,
    buf: Vec<u8>,
    stats: Stats,
    in_flight: usize,
    unpublished: u64,
    /// Slots whose next request waits for the end of the event batch.
    deferred: Vec<(usize, bool)>,
}

pub fn run_worker(spec: WorkerSpec<'_>) -> std::io::Result<Stats> {
    let now = Instant::now();
    let mut w = Worker {
        poll: Poll::new()?,
        conns: (0..spec.connections).map(|i| Conn::new(Token(i), now)).collect(),
        buf: vec![0; READ_BUFFER_BYTES],
        stats: Stats::new(spec.expected_seconds),
        in_flight: 0,
        unpublished: 0,
        deferred: Vec::with_capacity(spec.connections),
        spec,
    };
    if let Some(c) = w.conns.first_mut() {
        c.parser.want_server = w.spec.want_server;
    }
    w.run();
    Ok(w.stats)
}

impl Worker<'_> {
    fn run(&mut self) {
        let mut events = Events::with_capacity(1024);
        for i in 0..self.conns.len() {
            self.start_next(i, Instant::now(), false);
        }
        let mut next_tick = Instant::now() + TICK;
        // Busy polling: after a batch, poll without sleeping for a while, so
        // the server does not pay for waking this thread (see LoadConfig).
        let spin = self.spec.busy_poll;
        let mut spin_until = Instant::now();
        while self.in_flight > 0 && !self.spec.control.stopped() {
            let now = Instant::now();
            let wait = if now < spin_until { Duration::ZERO } else { next_tick.saturating_duration_since(now) };
            if let Err(e) = self.poll.poll(&mut events, Some(wait)) {
                if e.kind() != std::io::ErrorKind::Interrupted {
                    self.abort_all(&format!("event loop: {e}"));
                    break;
                }
            }
            for ev in events.iter() {
                self.drive(ev.token().0, Instant::now(), ev.is_read_closed() || ev.is_error());
            }
            let now = Instant::now();
            if !events.is_empty() {
                spin_until = now + spin;
            }
            if now >= next_tick {
                self.expire(now);
                self.spec.control.publish(std::mem::take(&mut self.unpublished));
                next_tick = now + TICK;
            }
            self.start_deferred();
        }
        self.spec.control.publish(self.unpublished);
    }

    /// Starts requests on slot `i` until one is in flight or the budget is
    /// spent. A loop, not recursion: failures that come back at once (a
    /// refused connect) must not grow the stack.
    fn start_next(&mut self, i: usize, now: Instant, mut retry: bool) {
        loop {
            if !retry && !self.spec.budget.take(now) {
                self.conns[i].close();
                return;
            }
            let t = self.spec.target;
            let c = &mut self.conns[i];
            let reused = c.transport.is_some();
            let step = c.begin(now, now + self.spec.timeout, t.addr, self.spec.tls, self.poll.registry(), &t.request);
            if !reused && c.transport.is_some() {
                self.stats.connections_opened += 1;
            }
            self.in_flight += 1;
            match self.settle(i, step, now) {
                After::Busy => return,
                After::Free => retry = false,
                After::Retry => retry = true,
            }
        }
    }

    fn drive(&mut self, i: usize, now: Instant, peer_closed: bool) {
        let t = self.spec.target;
        let step = self.conns[i].ready(now, &mut self.buf, &t.request, t.head, peer_closed);
        self.follow(i, step, now);
    }

    /// A freed slot sends its next request after the whole batch of events
    /// is handled, as wrk's event loop does (its write handler runs on the
    /// next loop turn), so the server receives one batch's requests together.
    fn follow(&mut self, i: usize, step: Step, now: Instant) {
        match self.settle(i, step, now) {
            After::Busy => {}
            After::Free => self.deferred.push((i, false)),
            // The retried request is the same one: it takes no more budget.
            After::Retry => self.deferred.push((i, true)),
        }
    }

    fn start_deferred(&mut self) {
        let now = Instant::now();
        let mut slots = std::mem::take(&mut self.deferred);
        for &(i, retry) in &slots {
            self.start_next(i, now, retry);
        }
        slots.clear();
        self.deferred = slots;
    }

    /// Records the outcome of an I/O step and says what the slot does next.
    fn settle(&mut self, i: usize, step: Step, now: Instant) -> After {
        let after = match step {
            Step::Pending => return After::Busy,
            Step::Stale => {
                self.conns[i].close();
                After::Retry
            }
            Step::Done => {
                self.record_response(i, now);
                self.unpublished += 1;
                After::Free
            }
            Step::Failed(kind, why) => {
                let second = self.second(now);
                self.stats.error(kind, second, || why);
                self.conns[i].close();
                self.unpublished += 1;
                After::Free
            }
        };
        self.in_flight -= 1;
        after
    }

    fn second(&self, now: Instant) -> usize {
        now.saturating_duration_since(self.spec.run_start).as_secs() as usize
    }

    fn record_response(&mut self, i: usize, now: Instant) {
        let second = self.second(now);
        let c = &mut self.conns[i];
        let t = &c.times;
        let first = t.first_byte.unwrap_or(now);
        let s = &mut self.stats;
        s.connect_us.saturating_record(micros(t.connected - t.start));
        s.waiting_us.saturating_record(micros(first.saturating_duration_since(t.sent)));
        s.processing_us.saturating_record(micros(now - t.connected));
        let total = micros(now - t.start);
        s.total_us.saturating_record(total);
        let sec = s.second(second);
        sec.completed += 1;
        sec.total_us.saturating_record(total);
        s.responses += 1;
        // ab's "Keep-Alive requests": responses that kept the connection open.
        if c.parser.reusable {
            s.keep_alive_requests += 1;
        }
        s.status_count(c.parser.status);
        s.header_bytes += c.parser.header_bytes;
        s.body_bytes += c.parser.body_bytes;
        s.sent_bytes += self.spec.target.request.len() as u64;
        if c.parser.want_server {
            s.server_software = c.parser.server.take();
            c.parser.want_server = false;
        }
        let len = c.parser.body_bytes;
        let doc = *s.document_length.get_or_insert(len);
        if doc != len && !self.spec.variable_length {
            s.mismatched_responses += 1;
            s.error(ErrorKind::Length, second, || format!("document length {len} differs from the first, {doc} (ab's rule; -l accepts variable lengths)"));
        }
        c.served += 1;
        if !c.parser.reusable {
            c.close();
        }
    }

    fn expire(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            if c.phase != Phase::Idle && c.deadline <= now && c.transport.is_some() {
                let phase = c.phase;
                let secs = self.spec.timeout.as_secs_f64();
                let why = format!("no response within {secs}s ({phase:?})");
                self.follow(i, Step::Failed(ErrorKind::Timeout, why), now);
            }
        }
    }

    fn abort_all(&mut self, why: &str) {
        let now = Instant::now();
        for i in 0..self.conns.len() {
            if self.conns[i].phase != Phase::Idle {
                let second = self.second(now);
                self.stats.error(ErrorKind::Receive, second, || why.to_string());
                self.conns[i].close();
            }
        }
        self.in_flight = 0;
    }
}
