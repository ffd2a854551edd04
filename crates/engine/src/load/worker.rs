//! One worker thread: an event loop over a fixed set of connection slots,
//! on epoll or io_uring (`io`). The pacing decides when a free slot sends
//! again: at once (closed loop), after a think time (users), or when the
//! schedule says (open loop); everything else is the same loop.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use mio::Token;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::control::{Control, Ended};
use super::io::{Driver, EventLoop, Peer, TICK};
use super::linger::Probe;
use super::pacing::{Cursor, Schedule, TicketBook, Tickets};
use crate::client::conn::{Conn, Phase, Step};
use crate::client::target::Target;
use crate::client::transport::TlsContext;
use crate::config::LINGER_MIN_IN_FLIGHT;
use crate::measure::stats::{micros, ErrorKind, Stats};
use crate::workload::{Entry, Workload};

mod record;

const READ_BUFFER_BYTES: usize = 64 * 1024;
/// How long requests still in flight when a timed run ends may take to
/// finish: past it they count as timeouts, so that a stalled server cannot
/// hold the run beyond its end for the whole per-request timeout.
pub(crate) const DRAIN: Duration = Duration::from_secs(1);
/// A lingering wait wakes once this share of the requests in flight has
/// answered (or at its deadline).
const LINGER_WANT_DIVISOR: usize = 4;
// The fewest in flight whose quarter is more than one response.
const _: () = assert!(LINGER_MIN_IN_FLIGHT / LINGER_WANT_DIVISOR > 1);
const _: () = assert!((LINGER_MIN_IN_FLIGHT - 1) / LINGER_WANT_DIVISOR <= 1);

pub(crate) enum PacingSpec<'a> {
    Closed { tickets: &'a Tickets, think: Option<(Duration, Duration)> },
    Open { schedule: &'a Schedule<'a>, first: u64, step: u64 },
}

pub(crate) struct WorkerSpec<'a> {
    /// This worker's number in this process (for `control`'s live figures).
    pub index: usize,
    pub target: &'a Target,
    pub workload: &'a Workload,
    pub pacing: PacingSpec<'a>,
    pub tls: Option<&'a TlsContext>,
    pub connections: usize,
    pub timeout: Duration,
    pub run_start: Instant,
    /// The end of a timed run (`-t`): no request starts after it, and none
    /// is waited for longer than `DRAIN` after it.
    pub end: Option<Instant>,
    pub variable_length: bool,
    pub control: &'a Control,
    pub expected_seconds: usize,
    pub want_server: bool,
    pub busy_poll: Duration,
    /// The share of the recent response time a wait may hold responses for
    /// (`LoadConfig::linger_percent`); 0: none.
    pub linger_share: f64,
    /// Hold only where a probe finds it free (`Linger::Auto`; closed loop).
    pub linger_probe: bool,
    pub seed: u64,
    /// The most responses this worker keeps in its trace; 0: no trace.
    pub trace_limit: usize,
    /// Keep the first response's head (with `want_server`).
    pub want_head: bool,
}

enum After {
    Busy,
    Free,
    Retry,
}

/// The pacing's state in one worker.
enum Pace<'a> {
    Closed(TicketBook<'a>),
    Think { book: TicketBook<'a>, min: Duration, span: Duration, wakeups: BinaryHeap<Reverse<(Instant, usize)>> },
    Open(OpenPace<'a>),
}

struct OpenPace<'a> {
    cursor: Cursor<'a>,
    /// Free slots: those with an open connection are used first.
    free_open: Vec<usize>,
    free_idle: Vec<usize>,
    /// The last due request found no free slot: it and those after it,
    /// until the schedule is caught up, are late.
    behind: bool,
}

struct Worker<'a, D: Driver> {
    spec: &'a WorkerSpec<'a>,
    pace: Pace<'a>,
    // Before `io` (fields drop in order): the sockets are shut down before
    // the driver goes, so no receive of an io_uring can still be writing
    // into its buffers when they are freed.
    conns: Vec<Conn>,
    io: D,
    peer: Peer<'a>,
    /// What the last wait reported, handled one by one.
    events: Vec<D::Event>,
    /// The slots' steps an event (or a flush) brought, handled in order.
    done: Vec<(usize, Step)>,
    buf: Vec<u8>,
    stats: Stats,
    rng: SmallRng,
    in_flight: usize,
    /// Requests in flight on connections they opened: a hold would delay
    /// their connect or TLS handshake, timed by this thread's clock.
    opening: usize,
    /// The recent mean response time, the request sent to its last byte.
    recent_response_s: f64,
    /// Whether holding costs the server load (`--linger auto`).
    probe: Option<Probe>,
    unpublished: u64,
    /// Failed requests already published to `control`.
    published_failed: u64,
    published_unsuccessful: u64,
    /// Slots whose next step waits for the end of the event batch.
    deferred: Vec<(usize, bool)>,
    /// The other half of `deferred`'s double buffer: slots deferred while
    /// the deferred ones start go to the next loop turn, with no allocation.
    deferring: Vec<(usize, bool)>,
}

pub(crate) fn run_worker(spec: WorkerSpec<'_>, event_loop: EventLoop) -> std::io::Result<Stats> {
    match event_loop {
        EventLoop::Epoll(io) => run_on(spec, io),
        EventLoop::Uring(io) => run_on(spec, *io),
        EventLoop::H2(io) => run_on(spec, *io),
    }
}

fn run_on<D: Driver>(spec: WorkerSpec<'_>, mut io: D) -> std::io::Result<Stats> {
    io.start()?;
    let now = Instant::now();
    let n = spec.connections;
    let pace = match spec.pacing {
        PacingSpec::Closed { tickets, think: None } => Pace::Closed(tickets.book()),
        PacingSpec::Closed { tickets, think: Some((min, max)) } => {
            Pace::Think { book: tickets.book(), min, span: max - min, wakeups: BinaryHeap::with_capacity(n) }
        }
        PacingSpec::Open { schedule, first, step } => Pace::Open(OpenPace {
            cursor: Cursor::new(schedule, first, step, spec.seed),
            free_open: Vec::with_capacity(n),
            free_idle: (0..n).rev().collect(),
            behind: false,
        }),
    };
    let mut w = Worker {
        pace,
        events: Vec::with_capacity(io.capacity()),
        done: Vec::with_capacity(n),
        io,
        peer: Peer { addr: spec.target.addr, tls: spec.tls },
        conns: (0..n).map(|i| Conn::new(Token(i), now)).collect(),
        buf: vec![0; READ_BUFFER_BYTES],
        stats: Stats::new(spec.expected_seconds, spec.workload.requests.len()),
        rng: SmallRng::seed_from_u64(spec.seed),
        in_flight: 0,
        opening: 0,
        recent_response_s: 0.0,
        probe: spec.linger_probe.then(|| Probe::new(spec.run_start)),
        unpublished: 0,
        published_failed: 0,
        published_unsuccessful: 0,
        deferred: Vec::with_capacity(n),
        deferring: Vec::with_capacity(n),
        spec: &spec,
    };
    if let Some(c) = w.conns.first_mut() {
        c.parser.want_server = spec.want_server;
        c.parser.want_head = spec.want_server && spec.want_head;
    }
    w.run();
    if let Some(p) = &w.probe {
        w.stats.linger_probes = p.counts;
    }
    w.io.finish(&mut w.stats);
    Ok(w.stats)
}

impl<D: Driver> Worker<'_, D> {
    fn run(&mut self) {
        let now = Instant::now();
        if matches!(self.pace, Pace::Open(_)) {
            self.dispatch(now);
        } else {
            for i in 0..self.conns.len() {
                self.start_next(i, now);
            }
        }
        let mut next_tick = now + TICK;
        // Busy polling: after a batch, poll without sleeping for a while, so
        // the server does not pay for waking this thread (see LoadConfig).
        let spin = self.spec.busy_poll;
        let mut spin_until = now;
        while !self.finished(Instant::now()) && !self.spec.control.stopped() {
            let now = Instant::now();
            let until = match self.next_wake() {
                _ if now < spin_until => now,
                Some(at) if at < next_tick => at,
                _ => next_tick,
            };
            let mut done = std::mem::take(&mut self.done);
            self.io.flush(&mut self.conns, now, &mut done);
            self.follow_all(&mut done, now);
            self.linger(now, until);
            let mut events = std::mem::take(&mut self.events);
            events.clear();
            if let Err(e) = self.io.wait(&mut events, until, next_tick, now) {
                self.abort_all(&format!("event loop: {e}"));
                break;
            }
            for &ev in &events {
                // The clock is read per event, as each response's bytes arrive.
                let now = Instant::now();
                let requests = &self.spec.workload.requests;
                self.io.advance(ev, &mut self.conns, &mut self.buf, requests, now, &mut done);
                self.follow_all(&mut done, now);
            }
            self.done = done;
            let seen = !events.is_empty();
            self.events = events;
            let now = Instant::now();
            if seen {
                spin_until = now + spin;
            }
            if now >= next_tick {
                self.expire(now);
                self.publish(now, false);
                next_tick = now + TICK;
            }
            self.start_deferred();
            self.wake_due(Instant::now());
        }
        self.publish(Instant::now(), true);
    }

    /// Lets the driver's next wait hold early responses for later ones.
    fn linger(&mut self, now: Instant, until: Instant) {
        let want = self.in_flight / LINGER_WANT_DIVISOR;
        let enough = self.in_flight >= LINGER_MIN_IN_FLIGHT;
        if self.spec.linger_share > 0.0 && enough && until > now && self.recent_response_s > 0.0 {
            if let Some(p) = &mut self.probe {
                if !p.holds(now, self.recent_response_s) {
                    return;
                }
            }
            if self.opening > 0 {
                return;
            }
            let by = now + Duration::from_secs_f64(self.recent_response_s * self.spec.linger_share);
            self.io.linger(want, by.min(until));
            self.stats.held_waits += 1;
        }
    }

    /// Progress for `control`, at a tick (not per request): the requests
    /// ended and failed since the last, and the seconds now over.
    fn publish(&mut self, now: Instant, last: bool) {
        let (failed, unsuccessful) = (self.stats.errors.total(), self.stats.unsuccessful());
        let ended = Ended {
            finished: std::mem::take(&mut self.unpublished),
            failed: failed - self.published_failed,
            unsuccessful: unsuccessful - self.published_unsuccessful,
        };
        (self.published_failed, self.published_unsuccessful) = (failed, unsuccessful);
        let (c, i, second) = (self.spec.control, self.spec.index, self.second(now) as u64);
        match last {
            false => c.tick(i, ended, &self.stats.timeline, second),
            true => c.end(i, ended, &self.stats.timeline, second),
        }
    }

    fn finished(&self, now: Instant) -> bool {
        // A deferred slot is not in flight, but has yet to take its next request.
        self.in_flight == 0
            && self.deferred.is_empty()
            && match &self.pace {
                Pace::Closed(_) => true,
                Pace::Think { book, wakeups, .. } => wakeups.is_empty() || book.exhausted(now),
                Pace::Open(o) => o.cursor.due().is_none(),
            }
    }

    /// When the pacing next needs the loop awake.
    fn next_wake(&self) -> Option<Instant> {
        match &self.pace {
            Pace::Closed(_) => None,
            Pace::Think { wakeups, .. } => wakeups.peek().map(|Reverse((at, _))| *at),
            // Behind schedule, a free slot (an I/O event) is what matters.
            Pace::Open(o) if o.behind => None,
            Pace::Open(o) => o.cursor.due().map(|d| self.spec.run_start + d),
        }
    }

    fn wake_due(&mut self, now: Instant) {
        if let Pace::Open(_) = self.pace {
            return self.dispatch(now);
        }
        while let Pace::Think { wakeups, .. } = &mut self.pace {
            match wakeups.peek() {
                Some(&Reverse((at, i))) if at <= now => {
                    wakeups.pop();
                    self.start_next(i, now);
                }
                _ => return,
            }
        }
    }

    /// Closed loop: starts a request on slot `i`, unless the run has none
    /// left. A request that failed at once, before any I/O (no descriptor
    /// or local port left: EMFILE, EADDRNOTAVAIL), is not retried here but
    /// on the next turn of the event loop, which sees the end of the run,
    /// Ctrl-C and the other connections in between; retrying in place spun
    /// on a stale clock, past `-t` and deaf to Ctrl-C.
    fn start_next(&mut self, i: usize, now: Instant) {
        let k = match &mut self.pace {
            Pace::Closed(book) | Pace::Think { book, .. } => book.take(now),
            Pace::Open(_) => unreachable!("open-loop slots are started by dispatch"),
        };
        let Some(k) = k else {
            self.conns[i].close();
            return;
        };
        let entry = self.spec.workload.entry(k, &mut self.rng);
        if !self.launch(i, k, entry, now, now) {
            return;
        }
        match self.pace {
            Pace::Think { .. } => self.think(i, now),
            _ => self.deferred.push((i, false)),
        }
    }

    /// Open loop: sends every request that is due by `now` on a free slot.
    fn dispatch(&mut self, now: Instant) {
        let start = self.spec.run_start;
        loop {
            let Pace::Open(o) = &mut self.pace else { return };
            let Some(due) = o.cursor.due().map(|d| start + d) else { return };
            if due > now {
                o.behind = false;
                return;
            }
            // Behind at the end of the window: what is still due would leave
            // after the run, so it is dropped, not sent late.
            if o.behind && o.cursor.past_end(now - start) {
                return self.drop_past_end();
            }
            let Some(i) = o.free_open.pop().or_else(|| o.free_idle.pop()) else {
                o.behind = true;
                return;
            };
            let k = o.cursor.take();
            let late = o.behind;
            let s = &mut self.stats;
            s.schedule.sent += 1;
            s.schedule.late += u64::from(late);
            s.send_lag_us.saturating_record(micros(now - due));
            let entry = self.spec.workload.entry(k, &mut self.rng);
            if self.launch(i, k, entry, due, now) {
                self.release(i);
            }
        }
    }

    /// Counts this worker's requests still due in the window as dropped.
    fn drop_past_end(&mut self) {
        let Pace::Open(o) = &mut self.pace else { return };
        self.stats.schedule.dropped += o.cursor.skip_rest();
    }

    /// Makes an open-loop slot available again.
    fn release(&mut self, i: usize) {
        if let Pace::Open(o) = &mut self.pace {
            match self.conns[i].transport.is_some() {
                true => o.free_open.push(i),
                false => o.free_idle.push(i),
            }
        }
    }

    fn think(&mut self, i: usize, now: Instant) {
        if let Pace::Think { min, span, wakeups, .. } = &mut self.pace {
            let pause = *min + span.mul_f64(self.rng.random::<f64>());
            wakeups.push(Reverse((now + pause, i)));
        }
    }

    /// Begins request `k`, due at `due`, on slot `i`. True when the slot is
    /// free again at once (the request ended, or failed, immediately).
    fn launch(&mut self, i: usize, k: u64, entry: Entry, due: Instant, now: Instant) -> bool {
        let mut retry = true;
        while retry {
            let req = self.spec.workload.requests.get(entry.request);
            let c = &mut self.conns[i];
            c.k = k;
            c.entry = entry;
            let reused = c.transport.is_some();
            c.prepare(due, now, now + self.spec.timeout);
            let step = self.io.begin(i, c, &self.peer, req.bytes, now);
            if !reused && c.transport.is_some() {
                self.stats.connections_opened += 1;
            }
            self.in_flight += 1;
            // A reused connection has answered before (`Conn::served`).
            self.opening += usize::from(self.conns[i].served == 0);
            let peak = &mut self.stats.schedule.peak_in_flight;
            *peak = (*peak).max(self.in_flight as u64);
            match self.settle(i, step, now) {
                After::Busy => return false,
                After::Free => retry = false,
                // The retried request is the same one, on a new connection.
                After::Retry => {}
            }
        }
        true
    }

    /// A freed slot moves on after the whole batch of events is handled, as
    /// wrk's event loop does (its write handler runs on the next loop turn),
    /// so the server receives one batch's requests together.
    fn follow(&mut self, i: usize, step: Step, now: Instant) {
        match self.settle(i, step, now) {
            After::Busy => {}
            After::Free => self.deferred.push((i, false)),
            After::Retry => self.deferred.push((i, true)),
        }
    }

    fn follow_all(&mut self, done: &mut Vec<(usize, Step)>, now: Instant) {
        for (i, step) in done.drain(..) {
            self.follow(i, step, now);
        }
    }

    fn start_deferred(&mut self) {
        if self.deferred.is_empty() {
            return;
        }
        let now = Instant::now();
        // Slots deferred again meanwhile (a failure at once) go into the
        // emptied buffer, for the next turn.
        std::mem::swap(&mut self.deferred, &mut self.deferring);
        let mut slots = std::mem::take(&mut self.deferring);
        for &(i, retry) in &slots {
            let c = &self.conns[i];
            if retry {
                let (k, entry, due) = (c.k, c.entry, c.times.start);
                if self.launch(i, k, entry, due, now) {
                    self.freed(i, now);
                }
            } else {
                self.freed(i, now);
            }
        }
        slots.clear();
        self.deferring = slots;
    }

    /// What a slot does once its request has ended.
    fn freed(&mut self, i: usize, now: Instant) {
        match self.pace {
            Pace::Closed(_) => self.start_next(i, now),
            Pace::Think { .. } => self.think(i, now),
            Pace::Open(_) => self.release(i),
        }
    }

    /// Records the outcome of an I/O step and says what the slot does next.
    fn settle(&mut self, i: usize, step: Step, now: Instant) -> After {
        debug_assert!(self.in_flight > 0 || matches!(step, Step::Pending), "settling a slot not in flight");
        if !matches!(step, Step::Pending) {
            self.opening -= usize::from(self.conns[i].served == 0);
        }
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
                self.stats.urls.row(self.conns[i].entry.request).errors += 1;
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

    /// Fails the requests past their timeout, and, once a timed run has
    /// been over for `DRAIN`, every request still in flight.
    fn expire(&mut self, now: Instant) {
        let over = self.spec.end.is_some_and(|end| now >= end + DRAIN);
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            let waiting = c.transport.is_some() || c.phase == Phase::Stream;
            if c.phase != Phase::Idle && (c.deadline <= now || over) && waiting {
                let phase = c.phase;
                let why = match c.deadline <= now {
                    true => format!("no response within {}s ({phase:?})", self.spec.timeout.as_secs_f64()),
                    false => format!("no response by {}s after the end of the run ({phase:?})", DRAIN.as_secs()),
                };
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
        (self.in_flight, self.opening) = (0, 0);
    }
}
