//! CPU work in microseconds of this machine: a busy loop calibrated at
//! start, so "work_us=500" costs about 500 µs of one core wherever it runs.

use std::hint::black_box;
use std::time::Instant;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Work {
    iterations_per_us: f64,
}

fn spin(iterations: u64) -> u64 {
    // An LCG step per iteration: cheap, not vectorizable, not optimized away.
    let mut x = black_box(0x9E37_79B9_7F4A_7C15u64);
    for _ in 0..iterations {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    }
    black_box(x)
}

impl Work {
    /// Times the loop a few times and keeps the fastest rate: the least
    /// disturbed measurement of what one core does.
    pub(crate) fn calibrate() -> Work {
        let n = 2_000_000;
        let best_us = (0..5)
            .map(|_| {
                let t = Instant::now();
                spin(n);
                t.elapsed().as_secs_f64() * 1e6
            })
            .fold(f64::INFINITY, f64::min)
            .max(1.0);
        Work { iterations_per_us: n as f64 / best_us }
    }

    pub(crate) fn run_us(&self, us: u64) -> u64 {
        spin((us as f64 * self.iterations_per_us) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_costs_about_what_was_asked() {
        let w = Work::calibrate();
        let t = Instant::now();
        w.run_us(20_000);
        let took_us = t.elapsed().as_micros();
        // Only a lower bound: a busy machine makes it slower, never faster.
        assert!(took_us >= 15_000, "{took_us} µs");
    }
}
