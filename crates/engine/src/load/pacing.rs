//! When requests start. Closed loop: a connection sends its next request
//! when its previous one ends (after a think time, for users). Open loop: a
//! schedule says when each request is due, whatever the responses do.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::config::Arrivals;
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
/// and an end, so every open loop ends. `due` is the even spacing, which is
/// also the expected schedule of Poisson arrivals (a `Cursor` draws those).
#[derive(Debug, Clone)]
pub(crate) struct Schedule<'a> {
    pub shape: Shape<'a>,
    pub limit: Option<u64>,
    pub end: Option<Duration>,
    pub arrivals: Arrivals,
}

impl Schedule<'_> {
    pub(crate) fn due(&self, k: u64) -> Option<Duration> {
        self.due_at_count(k, k as f64)
    }

    /// Request `k`, due when the schedule has scheduled `count` requests
    /// (`count` = k for even spacing, a random point near it otherwise).
    fn due_at_count(&self, k: u64, count: f64) -> Option<Duration> {
        if self.limit.is_some_and(|l| k >= l) {
            return None;
        }
        let at = match self.shape {
            Shape::Rate { start_rps, end_rps, ramp_s } => {
                Duration::from_secs_f64(rate_due_s(count, start_rps, end_rps, ramp_s))
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
fn rate_due_s(k: f64, start: f64, end: f64, ramp_s: f64) -> f64 {
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

/// One worker's place in an open-loop schedule: it sends requests `first`,
/// `first + step`, ... of the whole load, and knows when the next is due.
///
/// Poisson arrivals: the worker's requests form a Poisson process of
/// 1/step of the rate, so the workers' superposition is a Poisson process
/// of the whole rate (superposition of independent Poisson processes,
/// Kingman, "Poisson Processes", 1993, §2.2). The gaps are drawn in the
/// schedule's own count (a unit-rate process with exponential gaps of mean
/// `step`) and mapped to time through the same inverse of the cumulative
/// rate as even spacing, so a ramp gives a non-homogeneous Poisson process
/// by time change (Çinlar, "Introduction to Stochastic Processes", 1975,
/// §4.7). The request count bounds the load as before; only times move.
pub(crate) struct Cursor<'a> {
    schedule: &'a Schedule<'a>,
    next: u64,
    step: u64,
    due: Option<Duration>,
    poisson: Option<(SmallRng, f64)>,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(schedule: &'a Schedule<'a>, first: u64, step: u64, seed: u64) -> Cursor<'a> {
        let poisson = match schedule.arrivals {
            Arrivals::Poisson => Some((SmallRng::seed_from_u64(seed ^ 0x5851_f42d_4c95_7f2d), 0.0)),
            Arrivals::Uniform => None,
        };
        let mut c = Cursor { schedule, next: first, step: step.max(1), due: None, poisson };
        c.due = c.draw();
        c
    }

    /// When the next request is due, from the start of the run.
    pub(crate) fn due(&self) -> Option<Duration> {
        self.due
    }

    /// Whether `elapsed` is past the end of the run's window.
    pub(crate) fn past_end(&self, elapsed: Duration) -> bool {
        self.schedule.end.is_some_and(|end| elapsed >= end)
    }

    /// Takes the next request: its number in the whole load.
    pub(crate) fn take(&mut self) -> u64 {
        let k = self.next;
        self.next += self.step;
        self.due = self.draw();
        k
    }

    /// Skips every request still due (the run's end passed while behind)
    /// and says how many there were.
    pub(crate) fn skip_rest(&mut self) -> u64 {
        if self.poisson.is_none() {
            let left = self.schedule.remaining(self.next, self.step);
            self.next += left * self.step;
            self.due = self.draw();
            return left;
        }
        // Bounded: the draws pass the schedule's end (or its count).
        let mut left = 0;
        while self.due.is_some() {
            self.take();
            left += 1;
        }
        left
    }

    fn draw(&mut self) -> Option<Duration> {
        let Some((rng, count)) = &mut self.poisson else {
            return self.schedule.due(self.next);
        };
        // An exponential gap by inversion; 1 − U lies in (0, 1], so ln is finite.
        *count -= self.step as f64 * (1.0 - rng.random::<f64>()).ln();
        self.schedule.due_at_count(self.next, *count)
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
            arrivals: Arrivals::Uniform,
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
            arrivals: Arrivals::Uniform,
        };
        let t = |k| s.due(k).unwrap().as_secs_f64();
        assert!((t(250) - 5.0).abs() < 1e-9, "half way through the ramp: 20·t²/2 = 250 at t = 5");
        assert!((t(1000) - 10.0).abs() < 1e-9);
        assert!((t(1100) - 10.5).abs() < 1e-9);
        assert_eq!(s.due(1200), None);
        assert!((s.mean_rps(20.0) - 150.0).abs() < 1e-9);
        let down = Schedule {
            shape: Shape::Rate { start_rps: 200.0, end_rps: 100.0, ramp_s: 10.0 },
            limit: None,
            end: None,
            arrivals: Arrivals::Uniform,
        };
        assert!((down.due(1500).unwrap().as_secs_f64() - 10.0).abs() < 1e-6);
    }

    #[test]
    fn log_schedule_cycles_by_period() {
        let offsets = [0, 10, 30];
        let s = Schedule {
            shape: Shape::Log { offsets_us: &offsets, period_us: 100, cycle: true },
            limit: Some(5),
            end: None,
            arrivals: Arrivals::Uniform,
        };
        let due: Vec<_> = (0..6).map(|k| s.due(k).map(|d| d.as_micros())).collect();
        assert_eq!(due, vec![Some(0), Some(10), Some(30), Some(100), Some(110), None]);
        let once = Schedule {
            shape: Shape::Log { offsets_us: &offsets, period_us: 100, cycle: false },
            limit: None,
            end: None,
            arrivals: Arrivals::Uniform,
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
            arrivals: Arrivals::Uniform,
        };
        assert_eq!(s.remaining(0, 1), 1000);
        assert_eq!(s.remaining(1, 2), 500, "1, 3, ..., 999");
        assert_eq!(s.remaining(990, 3), 4, "990, 993, 996, 999");
        assert_eq!(s.remaining(1000, 1), 0);
        let tiny = Schedule {
            shape: Shape::Rate { start_rps: 1e7, end_rps: 1e7, ramp_s: 0.0 },
            limit: None,
            end: Some(Duration::from_secs(3600)),
            arrivals: Arrivals::Uniform,
        };
        assert_eq!(tiny.remaining(0, 1), 36_000_000_000);
    }

    #[test]
    fn a_fast_ramp_keeps_microsecond_precision() {
        let s = Schedule {
            shape: Shape::Rate { start_rps: 1e7, end_rps: 1.0001e7, ramp_s: 1.0 },
            limit: None,
            end: None,
            arrivals: Arrivals::Uniform,
        };
        assert_eq!(s.due(1).unwrap().as_nanos(), 100);
    }

    fn poisson(rps: f64, end_s: u64) -> Schedule<'static> {
        Schedule {
            shape: Shape::Rate { start_rps: rps, end_rps: rps, ramp_s: 0.0 },
            limit: None,
            end: Some(Duration::from_secs(end_s)),
            arrivals: Arrivals::Poisson,
        }
    }

    /// Every due time of `workers` cursors sharing one schedule, merged.
    fn arrivals(s: &Schedule, workers: u64) -> Vec<f64> {
        let mut all = Vec::new();
        for w in 0..workers {
            let mut c = Cursor::new(s, w, workers, 7 + w);
            while let Some(d) = c.due() {
                all.push(d.as_secs_f64());
                c.take();
            }
        }
        all.sort_by(f64::total_cmp);
        all
    }

    #[test]
    fn poisson_arrivals_have_exponential_gaps_across_workers() {
        // 4 workers at 10,000/s over 10 s: the merged stream must be a
        // Poisson process of the whole rate. Count ~ N(100000, 316²); gaps
        // exponential with mean 100 µs: P(gap > 200 µs) = e^-2, and their
        // coefficient of variation is 1 (0 for even spacing).
        let s = poisson(10_000.0, 10);
        let t = arrivals(&s, 4);
        assert!((t.len() as f64 - 100_000.0).abs() < 5.0 * 316.0, "{} arrivals", t.len());
        let gaps: Vec<f64> = t.windows(2).map(|w| w[1] - w[0]).collect();
        let n = gaps.len() as f64;
        let mean = gaps.iter().sum::<f64>() / n;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n).sqrt();
        assert!((mean - 1e-4).abs() < 2e-6, "mean gap {mean}");
        assert!((sd / mean - 1.0).abs() < 0.02, "cv {}", sd / mean);
        let over = gaps.iter().filter(|&&g| g > 2e-4).count() as f64 / n;
        assert!((over - (-2.0f64).exp()).abs() < 0.005, "P(gap > 2/rate) = {over}");
        // Counts per 10 ms window: Poisson(100), variance equal to the mean.
        let mut per = vec![0.0f64; 1000];
        for x in &t {
            per[((x * 100.0) as usize).min(999)] += 1.0;
        }
        let m = per.iter().sum::<f64>() / 1000.0;
        let v = per.iter().map(|c| (c - m).powi(2)).sum::<f64>() / 999.0;
        assert!((v / m - 1.0).abs() < 0.15, "index of dispersion {}", v / m);
    }

    #[test]
    fn poisson_arrivals_follow_a_ramp_and_stop_at_the_end() {
        // 0 -> 2000/s over 10 s: 2,500 expected in the first 5 s, 7,500 after.
        let s = Schedule {
            shape: Shape::Rate { start_rps: 0.0, end_rps: 2000.0, ramp_s: 10.0 },
            limit: None,
            end: Some(Duration::from_secs(10)),
            arrivals: Arrivals::Poisson,
        };
        let t = arrivals(&s, 2);
        let early = t.iter().filter(|&&x| x < 5.0).count() as f64;
        assert!((early - 2500.0).abs() < 5.0 * 50.0, "{early} in the first half");
        assert!((t.len() as f64 - 10_000.0).abs() < 5.0 * 100.0, "{} in all", t.len());
        assert!(t.iter().all(|&x| x < 10.0));
    }

    #[test]
    fn poisson_cursors_keep_the_count_and_skip_what_is_left() {
        let s = Schedule { limit: Some(10), ..poisson(1000.0, 3600) };
        assert_eq!(arrivals(&s, 3).len(), 10, "the count bounds a Poisson load as an even one");
        let s = poisson(1000.0, 1);
        let mut c = Cursor::new(&s, 0, 1, 1);
        c.take();
        let left = c.skip_rest();
        assert!((left as f64 - 1000.0).abs() < 5.0 * 32.0, "{left} skipped");
        assert_eq!(c.due(), None);
        let even = Schedule { arrivals: Arrivals::Uniform, ..poisson(1000.0, 1) };
        let mut c = Cursor::new(&even, 1, 2, 1);
        assert_eq!(c.due(), Some(Duration::from_millis(1)));
        assert_eq!(c.take(), 1);
        assert_eq!(c.skip_rest(), 499);
    }
}
