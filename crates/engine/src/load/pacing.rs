//! When requests start. Closed loop: a connection sends its next request
//! when its previous one ends (after a think time, for users). Open loop: a
//! schedule says when each request is due, whatever the responses do.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::load::share::Deal;

/// Request numbers handed out to closed-loop workers in blocks, so the
/// workers share one counter without touching it on every request, a worker
/// with faster connections takes more, and a list is sent in (nearly) its
/// own order.
pub(crate) struct Tickets {
    next: AtomicU64,
    limit: Option<u64>,
    deadline: Option<Instant>,
    workers: u64,
    /// Which requests of the whole load the tickets stand for (an agent's
    /// share of a distributed load; all of them otherwise).
    deal: Deal,
}

const BLOCK: u64 = 8;

impl Tickets {
    pub(crate) fn new(limit: Option<u64>, deadline: Option<Instant>, workers: u64) -> Tickets {
        debug_assert!(limit.is_some() || deadline.is_some(), "unbounded load loop");
        Tickets { next: AtomicU64::new(0), limit, deadline, workers: workers.max(1), deal: Deal::whole() }
    }

    /// An agent's tickets: `limit` is then its share of the requests.
    pub(crate) fn dealt(self, deal: Deal) -> Tickets {
        Tickets { deal, ..self }
    }

    fn claim(&self) -> Range<u64> {
        let Some(limit) = self.limit else {
            let start = self.next.fetch_add(BLOCK, Ordering::Relaxed);
            return start..start + BLOCK;
        };
        // Near the limit the blocks shrink, so the last requests are shared
        // out and every worker's connections get one.
        let mut start = self.next.load(Ordering::Relaxed);
        loop {
            if start >= limit {
                return limit..limit;
            }
            let size = ((limit - start) / self.workers).clamp(1, BLOCK);
            match self.next.compare_exchange_weak(start, start + size, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return start..start + size,
                Err(now) => start = now,
            }
        }
    }

    pub(crate) fn book(&self) -> TicketBook<'_> {
        TicketBook { tickets: self, block: 0..0 }
    }
}

/// One worker's share of the tickets.
pub(crate) struct TicketBook<'a> {
    tickets: &'a Tickets,
    block: Range<u64>,
}

impl TicketBook<'_> {
    /// The number of the next request, if the run has one left at `now`.
    pub(crate) fn take(&mut self, now: Instant) -> Option<u64> {
        if self.tickets.deadline.is_some_and(|d| now >= d) {
            return None;
        }
        if self.block.is_empty() {
            self.block = self.tickets.claim();
        }
        let deal = self.tickets.deal;
        self.block.next().map(|t| deal.request(t))
    }

    pub(crate) fn exhausted(&self, now: Instant) -> bool {
        let t = self.tickets;
        t.deadline.is_some_and(|d| now >= d)
            || (self.block.is_empty() && t.limit.is_some_and(|l| t.next.load(Ordering::Relaxed) >= l))
    }
}

/// The shape of an open-loop schedule.
#[derive(Debug, Clone)]
pub(crate) enum Shape<'a> {
    /// A constant rate, or a linear ramp from `start_rps` to `end_rps`
    /// over `ramp_s`, then `end_rps`.
    Rate { start_rps: f64, end_rps: f64, ramp_s: f64 },
    /// A timed replay: one offset per log line; with `cycle`, the log
    /// starts over every `period_us`.
    Log { offsets_us: &'a [u64], period_us: u64, cycle: bool },
}

/// When request `k` is due, from the start of the run; bounded by a count
/// and an end, so every open loop ends.
#[derive(Debug, Clone)]
pub(crate) struct Schedule<'a> {
    pub shape: Shape<'a>,
    pub limit: Option<u64>,
    pub end: Option<Duration>,
}

impl Schedule<'_> {
    pub(crate) fn due(&self, k: u64) -> Option<Duration> {
        if self.limit.is_some_and(|l| k >= l) {
            return None;
        }
        let at = match self.shape {
            Shape::Rate { start_rps, end_rps, ramp_s } => {
                Duration::from_secs_f64(rate_due_s(k, start_rps, end_rps, ramp_s))
            }
            Shape::Log { offsets_us, period_us, cycle } => {
                let n = offsets_us.len() as u64;
                if !cycle && k >= n {
                    return None;
                }
                Duration::from_micros(offsets_us[(k % n) as usize] + (k / n) * period_us)
            }
        };
        self.end.map_or(Some(at), |end| (at < end).then_some(at))
    }

    /// How many of the requests `first`, `first + step`, ... are still due:
    /// due times only grow with k, so an exponential then a binary search
    /// finds the end without stepping through every request.
    pub(crate) fn remaining(&self, first: u64, step: u64) -> u64 {
        let due = |j: u64| first.checked_add(j.saturating_mul(step)).and_then(|k| self.due(k)).is_some();
        if !due(0) {
            return 0;
        }
        let mut hi = 1u64;
        while due(hi) {
            hi = hi.saturating_mul(2);
            if hi == u64::MAX {
                return u64::MAX;
            }
        }
        let mut lo = hi / 2; // due(lo), not due(hi)
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if due(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        hi
    }

    /// The mean rate the schedule asks for over its window, for reports.
    pub(crate) fn mean_rps(&self, window_s: f64) -> f64 {
        match self.shape {
            Shape::Rate { start_rps, end_rps, ramp_s } => {
                if window_s <= 0.0 {
                    return start_rps;
                }
                let ramped = ramp_s.min(window_s);
                let at_end = start_rps + (end_rps - start_rps) * ramped / ramp_s.max(f64::MIN_POSITIVE);
                ((start_rps + at_end) / 2.0 * ramped + end_rps * (window_s - ramped)) / window_s
            }
            Shape::Log { .. } => 0.0,
        }
    }
}

/// The time at which the rate r(t) = start + a·t (a = (end − start)/ramp)
/// has scheduled k requests: the root of start·t + a·t²/2 = k during the
/// ramp, then k/end after it.
fn rate_due_s(k: u64, start: f64, end: f64, ramp_s: f64) -> f64 {
    let k = k as f64;
    let a = if ramp_s > 0.0 { (end - start) / ramp_s } else { 0.0 };
    if a == 0.0 {
        return k / end;
    }
    let in_ramp = (start + end) / 2.0 * ramp_s;
    if k < in_ramp {
        // The root as 2k / (start + √(start² + 2ak)): the textbook form
        // (−start + √…)/a cancels digits when a is small.
        2.0 * k / (start + (start * start + 2.0 * a * k).max(0.0).sqrt())
    } else {
        ramp_s + (k - in_ramp) / end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_rate_spaces_requests_evenly() {
        let s = Schedule {
            shape: Shape::Rate { start_rps: 1000.0, end_rps: 1000.0, ramp_s: 0.0 },
            limit: None,
            end: Some(Duration::from_secs(1)),
        };
        assert_eq!(s.due(0), Some(Duration::ZERO));
        assert_eq!(s.due(500), Some(Duration::from_millis(500)));
        assert_eq!(s.due(1000), None, "the end bounds the schedule");
        assert!((s.mean_rps(1.0) - 1000.0).abs() < 1e-9);
    }

    #[test]
    fn ramp_schedules_the_integral_of_the_rate() {
        // 0 -> 200 rps over 10 s: 1000 requests in the ramp, then 200 per second.
        let s = Schedule {
            shape: Shape::Rate { start_rps: 0.0, end_rps: 200.0, ramp_s: 10.0 },
            limit: Some(1200),
            end: None,
        };
        let t = |k| s.due(k).unwrap().as_secs_f64();
        assert!((t(250) - 5.0).abs() < 1e-9, "half way through the ramp: 20·t²/2 = 250 at t = 5");
        assert!((t(1000) - 10.0).abs() < 1e-9);
        assert!((t(1100) - 10.5).abs() < 1e-9);
        assert_eq!(s.due(1200), None);
        assert!((s.mean_rps(20.0) - 150.0).abs() < 1e-9);
        let down =
            Schedule { shape: Shape::Rate { start_rps: 200.0, end_rps: 100.0, ramp_s: 10.0 }, limit: None, end: None };
        assert!((down.due(1500).unwrap().as_secs_f64() - 10.0).abs() < 1e-6);
    }

    #[test]
    fn log_schedule_cycles_by_period() {
        let offsets = [0, 10, 30];
        let s = Schedule {
            shape: Shape::Log { offsets_us: &offsets, period_us: 100, cycle: true },
            limit: Some(5),
            end: None,
        };
        let due: Vec<_> = (0..6).map(|k| s.due(k).map(|d| d.as_micros())).collect();
        assert_eq!(due, vec![Some(0), Some(10), Some(30), Some(100), Some(110), None]);
        let once = Schedule {
            shape: Shape::Log { offsets_us: &offsets, period_us: 100, cycle: false },
            limit: None,
            end: None,
        };
        assert_eq!(once.due(3), None);
    }

    #[test]
    fn tickets_are_shared_and_bounded() {
        let t = Tickets::new(Some(10), None, 2);
        let now = Instant::now();
        let (mut a, mut b) = (t.book(), t.book());
        let mut got: Vec<u64> = std::iter::from_fn(|| a.take(now)).take(3).collect();
        got.extend(std::iter::from_fn(|| b.take(now)));
        got.extend(std::iter::from_fn(|| a.take(now)));
        got.sort();
        assert_eq!(got, (0..10).collect::<Vec<_>>());
        assert!(a.exhausted(now) && b.exhausted(now));
    }

    #[test]
    fn the_last_tickets_are_shared_out() {
        // -n 10 on 2 workers: each gets 5 at once, so 5 connections each start.
        let t = Tickets::new(Some(10), None, 2);
        let now = Instant::now();
        let (mut a, mut b) = (t.book(), t.book());
        let first: Vec<u64> = std::iter::from_fn(|| a.take(now)).take(5).collect();
        assert_eq!(first, vec![0, 1, 2, 3, 4]);
        assert_eq!(std::iter::from_fn(|| b.take(now)).count(), 5);
    }

    #[test]
    fn remaining_counts_what_is_still_due() {
        let s = Schedule {
            shape: Shape::Rate { start_rps: 1000.0, end_rps: 1000.0, ramp_s: 0.0 },
            limit: None,
            end: Some(Duration::from_secs(1)),
        };
        assert_eq!(s.remaining(0, 1), 1000);
        assert_eq!(s.remaining(1, 2), 500, "1, 3, ..., 999");
        assert_eq!(s.remaining(990, 3), 4, "990, 993, 996, 999");
        assert_eq!(s.remaining(1000, 1), 0);
        let tiny = Schedule {
            shape: Shape::Rate { start_rps: 1e7, end_rps: 1e7, ramp_s: 0.0 },
            limit: None,
            end: Some(Duration::from_secs(3600)),
        };
        assert_eq!(tiny.remaining(0, 1), 36_000_000_000);
    }

    #[test]
    fn a_fast_ramp_keeps_microsecond_precision() {
        let s =
            Schedule { shape: Shape::Rate { start_rps: 1e7, end_rps: 1.0001e7, ramp_s: 1.0 }, limit: None, end: None };
        assert_eq!(s.due(1).unwrap().as_nanos(), 100);
    }
}
