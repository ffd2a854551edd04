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

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

pub(crate) struct Queue {
    state: Mutex<State>,
}

/// One request in the queue, until it departs or its client leaves.
struct Customer {
    ticket: u64,
    arrival: Instant,
    service: Duration,
    departure: Instant,
}

struct State {
    /// Those not yet departed, in arrival (and so departure) order.
    waiting: VecDeque<Customer>,
    next_ticket: u64,
    rng: SmallRng,
}

/// A place in the queue: its departure can move earlier when a client
/// ahead leaves (`Queue::leave`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticket(u64);

impl Queue {
    pub(crate) fn new(seed: u64) -> Queue {
        let state = State { waiting: VecDeque::new(), next_ticket: 0, rng: SmallRng::seed_from_u64(seed) };
        Queue { state: Mutex::new(state) }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How long a request arriving `now` waits and is served before it leaves.
    #[cfg(test)]
    pub(crate) fn sojourn(&self, now: Instant, mean_service: Duration) -> Duration {
        let (_, departure) = self.join(now, mean_service);
        departure - now
    }

    /// A request arriving `now` joins the queue: its ticket and departure.
    pub(crate) fn join(&self, now: Instant, mean_service: Duration) -> (Ticket, Instant) {
        let mut s = self.state();
        while s.waiting.front().is_some_and(|c| c.departure <= now) {
            s.waiting.pop_front();
        }
        // Exponential by inversion; 1 − U lies in (0, 1], so ln is finite.
        let service = mean_service.mul_f64(-(1.0 - s.rng.random::<f64>()).ln());
        let start = s.waiting.back().map_or(now, |c| c.departure.max(now));
        let ticket = s.next_ticket;
        s.next_ticket += 1;
        let departure = start + service;
        s.waiting.push_back(Customer { ticket, arrival: now, service, departure });
        (Ticket(ticket), departure)
    }

    /// When `ticket` departs now (None once it has, or has left).
    pub(crate) fn departure(&self, ticket: Ticket) -> Option<Instant> {
        let s = self.state();
        s.waiting.iter().find(|c| c.ticket == ticket.0).map(|c| c.departure)
    }

    /// The client of `ticket` left at `now` (it closed the connection, or
    /// the server stops): a queue with impatient customers (reneging) does
    /// not serve those who left, so the server is free of it from `now` and
    /// everyone behind it moves up. Without this, requests whose clients
    /// had gone held the simulated server, and the workers sleeping for
    /// them, for as long as all their service added up.
    pub(crate) fn leave(&self, ticket: Ticket, now: Instant) {
        let mut s = self.state();
        let Some(i) = s.waiting.iter().position(|c| c.ticket == ticket.0) else { return };
        s.waiting.remove(i);
        let mut free = if i == 0 { now } else { s.waiting[i - 1].departure };
        for c in s.waiting.iter_mut().skip(i) {
            c.departure = c.arrival.max(free) + c.service;
            free = c.departure;
        }
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
    fn a_customer_who_leaves_frees_the_server_for_those_behind() {
        let q = Queue::new(1);
        let t0 = Instant::now();
        let mean = Duration::from_secs(10);
        let (first, d1) = q.join(t0, mean);
        let (second, d2) = q.join(t0, mean);
        let (third, d3) = q.join(t0, mean);
        assert!(d1 < d2 && d2 < d3);
        // The first leaves in service, half a second in: the second starts then.
        let left = t0 + Duration::from_millis(500);
        q.leave(first, left);
        assert_eq!(q.departure(first), None);
        let moved = q.departure(second).expect("still waiting");
        assert_eq!(moved, left + (d2 - d1));
        assert_eq!(q.departure(third).expect("still waiting"), moved + (d3 - d2));
        // One in the middle leaves: the last follows the first directly.
        q.leave(second, left);
        assert_eq!(q.departure(third).expect("still waiting"), left + (d3 - d2));
        // Leaving twice, or after departing, changes nothing.
        q.leave(second, left);
        assert_eq!(q.departure(third).expect("still waiting"), left + (d3 - d2));
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
