//! What the caller can see and do while a run is in progress.
//!
//! Workers publish at their tick (every 10 ms), never per request: the
//! requests finished and failed since their last tick, and, once per second,
//! the figures of the second that just ended (merged here, under a lock taken
//! once per worker per second), for live displays.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use crate::config::MAX_LIVE_BOUNDS;
use crate::measure::stats::Second;

/// What a worker ended since its last tick: requests, of those the failed
/// ones, and the responses whose status was not 2xx or 3xx.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Ended {
    pub(crate) finished: u64,
    pub(crate) failed: u64,
    pub(crate) unsuccessful: u64,
}

#[derive(Debug, Default)]
pub struct Control {
    stop: AtomicBool,
    /// The caller has what it needed (a step's verdict is settled): stop,
    /// and the result is whole as far as it went, not interrupted.
    settled: AtomicBool,
    /// Requests finished so far, published by workers in batches (not per
    /// request, to keep the hot path free of shared writes).
    finished: AtomicU64,
    /// Of those, the requests that failed (the report's failed requests).
    failed: AtomicU64,
    /// And the responses whose status is not 2xx or 3xx: failures too, and
    /// never goodput (docs/architecture.md#terms), counted apart as the
    /// report counts them.
    unsuccessful: AtomicU64,
    /// The run's start and what it is to do, once it has started.
    plan: OnceLock<Plan>,
    live: Mutex<Live>,
}

/// What a run is to do, known when it starts: for a display's "done / total"
/// and "remaining".
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub start: Instant,
    /// The requests this process is to make, when a count bounds the run
    /// (`-n`, or a log replayed once).
    pub requests: Option<u64>,
    /// How long the run is to last, when known: `-t`, or the time the last
    /// request of a schedule (a timed replay, a rate with `-n`) is due.
    pub length_s: Option<f64>,
}

/// The figures of one whole second of the run, all workers together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SecondFigures {
    /// The second's index from the start of the run (0: the first).
    pub second: u64,
    pub completed: u64,
    pub errors: u64,
    /// Total latency percentiles of the second's responses (0 when none).
    pub p50_us: u64,
    pub p99_us: u64,
    /// Responses slower than each of the load's `live_bounds_us`, in order
    /// (within the per-second histogram's 1% precision).
    pub over: [u64; MAX_LIVE_BOUNDS],
}

/// The seconds being merged: a second is whole once every worker still
/// running has reported it.
#[derive(Debug, Default)]
struct Live {
    /// Per worker, the first second it has not reported yet; `u64::MAX`
    /// once it has ended.
    next: Vec<u64>,
    /// The seconds from `base` on, as reported so far.
    pending: std::collections::VecDeque<Pending>,
    base: u64,
    last: Option<SecondFigures>,
    bounds_us: Vec<u64>,
}

#[derive(Default)]
struct Pending {
    completed: u64,
    errors: u64,
    total_us: Option<hdrhistogram::Histogram<u64>>,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending").field("completed", &self.completed).field("errors", &self.errors).finish()
    }
}

impl Control {
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
    /// Stops the load because the caller has what it needed.
    pub fn settle(&self) {
        self.settled.store(true, Ordering::Relaxed);
        self.stop();
    }
    /// Stopped by `settle`, not by a signal or a failing watcher.
    pub fn settled(&self) -> bool {
        self.settled.load(Ordering::Relaxed)
    }
    pub fn finished(&self) -> u64 {
        self.finished.load(Ordering::Relaxed)
    }
    /// Requests that failed so far (counted in `finished` too).
    pub fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }
    /// Responses so far whose status is not 2xx or 3xx (in `finished` too).
    pub fn unsuccessful(&self) -> u64 {
        self.unsuccessful.load(Ordering::Relaxed)
    }
    /// The run's start and plan; `None` until the first request may go.
    pub fn plan(&self) -> Option<Plan> {
        self.plan.get().copied()
    }
    /// The last second that all workers have reported; `None` before the
    /// first second of the run is over.
    pub fn last_second(&self) -> Option<SecondFigures> {
        self.live.lock().map_or(None, |l| l.last)
    }
    pub(crate) fn publish(&self, n: u64) {
        self.finished.fetch_add(n, Ordering::Relaxed);
    }

    /// Called once, before the workers start.
    pub(crate) fn begin(&self, plan: Plan, workers: usize, bounds_us: &[u64]) {
        if let Ok(mut l) = self.live.lock() {
            *l = Live { next: vec![0; workers], bounds_us: bounds_us.to_vec(), ..Live::default() };
        }
        let _ = self.plan.set(plan);
    }

    /// A worker's tick: what it finished, failed and answered without
    /// success since the last, and the seconds before `now_second` that it
    /// has not reported yet.
    pub(crate) fn tick(&self, worker: usize, ended: Ended, timeline: &[Second], now_second: u64) {
        self.publish(ended.finished);
        if ended.failed > 0 {
            self.failed.fetch_add(ended.failed, Ordering::Relaxed);
        }
        if ended.unsuccessful > 0 {
            self.unsuccessful.fetch_add(ended.unsuccessful, Ordering::Relaxed);
        }
        let Ok(mut l) = self.live.lock() else { return };
        let Some(&from) = l.next.get(worker) else { return };
        if from >= now_second {
            return;
        }
        for s in from..now_second {
            if let Some(sec) = timeline.get(s as usize) {
                l.add(s, sec);
            }
        }
        l.next[worker] = now_second;
        l.settle();
    }

    /// A worker's last tick: it reports no more seconds.
    pub(crate) fn end(&self, worker: usize, ended: Ended, timeline: &[Second], now_second: u64) {
        self.tick(worker, ended, timeline, now_second);
        if let Ok(mut l) = self.live.lock() {
            if let Some(n) = l.next.get_mut(worker) {
                *n = u64::MAX;
            }
            l.settle();
        }
    }
}

impl Live {
    fn add(&mut self, s: u64, sec: &Second) {
        if s < self.base {
            return;
        }
        let i = (s - self.base) as usize;
        while self.pending.len() <= i {
            self.pending.push_back(Pending::default());
        }
        let p = &mut self.pending[i];
        p.completed += sec.completed;
        p.errors += sec.errors;
        if !sec.total_us.is_empty() {
            match &mut p.total_us {
                Some(h) => {
                    let _ = h.add(&sec.total_us);
                }
                None => p.total_us = Some(sec.total_us.clone()),
            }
        }
    }

    /// Makes whole the seconds every running worker has reported.
    fn settle(&mut self) {
        let upto = self.next.iter().copied().min().unwrap_or(u64::MAX);
        while self.base < upto {
            if upto == u64::MAX && self.pending.is_empty() {
                return; // every worker ended: nothing more to settle
            }
            let p = self.pending.pop_front().unwrap_or_default();
            let at = |q: f64| p.total_us.as_ref().map_or(0, |h| h.value_at_quantile(q));
            let mut over = [0; MAX_LIVE_BOUNDS];
            for (o, &b) in over.iter_mut().zip(&self.bounds_us) {
                *o = p.total_us.as_ref().map_or(0, |h| h.len() - h.count_between(0, b));
            }
            self.last = Some(SecondFigures {
                second: self.base,
                completed: p.completed,
                errors: p.errors,
                p50_us: at(0.5),
                p99_us: at(0.99),
                over,
            });
            self.base += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::stats::record_small;

    #[test]
    fn a_settled_run_is_stopped_and_not_interrupted() {
        let c = Control::default();
        assert!(!c.stopped() && !c.settled());
        c.settle();
        assert!(c.stopped() && c.settled());
    }

    fn second(completed: u64, errors: u64, latencies: &[u64]) -> Second {
        let mut s = Second::new();
        s.completed = completed;
        s.errors = errors;
        for &us in latencies {
            record_small(&mut s.total_us, us);
        }
        s
    }

    #[test]
    fn a_second_is_whole_once_every_running_worker_reported_it() {
        let c = Control::default();
        c.begin(Plan { start: Instant::now(), requests: None, length_s: Some(2.0) }, 2, &[500]);
        let a = [second(3, 1, &[100, 100, 100]), second(0, 0, &[])];
        let b = [second(1, 0, &[10_000])];
        c.tick(0, Ended { finished: 4, failed: 1, unsuccessful: 2 }, &a, 1);
        assert_eq!(c.last_second(), None, "worker 1 has not reported second 0");
        assert_eq!((c.finished(), c.failed(), c.unsuccessful()), (4, 1, 2));
        c.tick(1, Ended { finished: 1, ..Ended::default() }, &b, 1);
        let last = c.last_second().expect("second 0 is whole");
        assert_eq!((last.second, last.completed, last.errors), (0, 4, 1));
        assert_eq!(last.p50_us, 100);
        assert!((9_900..=10_100).contains(&last.p99_us), "{}", last.p99_us);
        assert_eq!(last.over, [1, 0, 0, 0], "one response of the second over the 500 µs bound");
        // Worker 1 ends: second 1 then waits for worker 0 alone.
        c.end(1, Ended::default(), &b, 1);
        assert_eq!(c.last_second().map(|s| s.second), Some(0));
        c.tick(0, Ended::default(), &a, 2);
        assert_eq!(c.last_second().map(|s| (s.second, s.completed, s.p99_us)), Some((1, 0, 0)));
    }
}
