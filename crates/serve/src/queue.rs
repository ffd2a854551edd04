//! `/queue?service_us=N`: an exact M/M/1 queue, for testing what corebench
//! concludes about queues against what queueing theory says they do.
//!
//! Every request joins one first-come-first-served queue with one server
//! whose service times are exponential with mean N µs; the request leaves
//! at its departure time, computed by Lindley's recursion (Lindley 1952,
//! "The theory of queues with a single server"): departure = max(arrival,
//! previous departure) + service. The handler answers at that instant
//! without using CPU, so the simulated server's speed does not depend on
//! the machine. With Poisson arrivals it is an M/M/1 queue: the sojourn
//! time is exponential with rate μ − λ (Kleinrock, "Queueing Systems",
//! vol. 1, 1975, §3.2). One queue per server process: use the threads
//! model, whose sleeps are precise to tens of microseconds (the async
//! model's timers round up to the millisecond).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

pub(crate) struct Queue {
    state: Mutex<State>,
}

struct State {
    last_departure: Option<Instant>,
    rng: SmallRng,
}

impl Queue {
    pub(crate) fn new(seed: u64) -> Queue {
        Queue { state: Mutex::new(State { last_departure: None, rng: SmallRng::seed_from_u64(seed) }) }
    }

    /// How long a request arriving `now` waits and is served before it leaves.
    pub(crate) fn sojourn(&self, now: Instant, mean_service: Duration) -> Duration {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        // Exponential by inversion; 1 − U lies in (0, 1], so ln is finite.
        let service = mean_service.mul_f64(-(1.0 - s.rng.random::<f64>()).ln());
        let start = s.last_departure.map_or(now, |d| d.max(now));
        let departure = start + service;
        s.last_departure = Some(departure);
        departure - now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_queue_serves_at_once_and_a_busy_one_queues() {
        let q = Queue::new(1);
        let t0 = Instant::now();
        let mean = Duration::from_millis(1);
        let first = q.sojourn(t0, mean);
        // A second arrival at the same instant waits for the first.
        let second = q.sojourn(t0, mean);
        assert!(second > first);
        // Long after, the queue is empty again: only service.
        let later = t0 + Duration::from_secs(10);
        let third = q.sojourn(later, mean);
        assert!(third < Duration::from_secs(1));
    }

    #[test]
    fn mean_sojourn_matches_m_m_1() {
        // Poisson arrivals at λ = 0.8/ms into μ = 1/ms: mean sojourn
        // 1/(μ − λ) = 5 ms (Kleinrock §3.2). 200,000 customers.
        let q = Queue::new(2);
        let mut rng = SmallRng::seed_from_u64(3);
        let t0 = Instant::now();
        let mut at = 0.0f64;
        let n = 200_000;
        let mut total_ms = 0.0;
        for _ in 0..n {
            at += -(1.0 - rng.random::<f64>()).ln() / 0.8;
            let now = t0 + Duration::from_secs_f64(at / 1000.0);
            total_ms += q.sojourn(now, Duration::from_millis(1)).as_secs_f64() * 1000.0;
        }
        let mean = total_ms / n as f64;
        assert!((mean - 5.0).abs() < 0.25, "mean sojourn {mean} ms");
    }
}
