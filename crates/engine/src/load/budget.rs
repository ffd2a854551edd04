//! How many requests a worker may still start, and until when. Every load
//! loop is bounded by a count, a deadline, or both.

use std::time::Instant;

pub struct Budget {
    remaining: Option<u64>,
    deadline: Option<Instant>,
}

impl Budget {
    pub fn new(requests: Option<u64>, deadline: Option<Instant>) -> Budget {
        debug_assert!(requests.is_some() || deadline.is_some(), "unbounded load loop");
        Budget { remaining: requests, deadline }
    }

    /// Takes one request from the budget, if any is left at `now`.
    pub fn take(&mut self, now: Instant) -> bool {
        if self.deadline.is_some_and(|d| now >= d) {
            self.remaining = Some(0);
        }
        match &mut self.remaining {
            Some(0) => false,
            Some(n) => {
                *n -= 1;
                true
            }
            None => true,
        }
    }

    pub fn exhausted(&self, now: Instant) -> bool {
        self.remaining == Some(0) || self.deadline.is_some_and(|d| now >= d)
    }

    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }
}

/// Splits `total` into `parts` shares that differ by at most one.
pub fn split(total: u64, parts: u64, index: u64) -> u64 {
    total / parts + u64::from(index < total % parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn count_budget_runs_out() {
        let now = Instant::now();
        let mut b = Budget::new(Some(2), None);
        assert!(b.take(now) && b.take(now) && !b.take(now));
        assert!(b.exhausted(now));
    }

    #[test]
    fn deadline_budget_stops_at_deadline() {
        let now = Instant::now();
        let mut b = Budget::new(None, Some(now + Duration::from_secs(1)));
        assert!(b.take(now));
        assert!(!b.take(now + Duration::from_secs(1)));
    }

    #[test]
    fn split_is_exact() {
        for (total, parts) in [(10, 3), (1, 4), (1000, 7)] {
            assert_eq!((0..parts).map(|i| split(total, parts, i)).sum::<u64>(), total);
        }
    }
}
