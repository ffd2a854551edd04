//! CPU work in microseconds of the serving thread's own CPU time, so
//! "work_us=500" costs 500 µs of one core wherever and whenever it runs.
//!
//! The work spins until the thread's CPU clock (CLOCK_THREAD_CPUTIME_ID)
//! has advanced by the amount asked. A loop count calibrated once at start
//! would be off, for the whole life of the process, by whatever disturbed
//! the calibration (a start was seen off by a third); the clock measures
//! each request's own cost, and time the thread spends descheduled is not
//! counted. The calibration only sizes the chunk spun between clock reads.

use std::hint::black_box;
use std::time::Instant;

/// Microseconds of spinning between reads of the thread's CPU clock: the
/// most a request overshoots what it asked for.
const CHECK_EVERY_US: f64 = 5.0;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Work {
    iterations_per_us: f64,
    /// This start's speed: work asked is multiplied by it (1 unless jittered).
    scale: f64,
}

fn spin(iterations: u64) -> u64 {
    // An LCG step per iteration: cheap, not vectorizable, not optimized away.
    let mut x = black_box(0x9E37_79B9_7F4A_7C15u64);
    for _ in 0..iterations {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    }
    black_box(x)
}

/// This thread's CPU time, user and system, in nanoseconds.
pub(crate) fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Work {
    /// Times the loop a few times and keeps the fastest rate; it sets only
    /// how often the clock is read, not how much work is done.
    pub(crate) fn calibrate() -> Work {
        let n = 200_000;
        let best_us = (0..5)
            .map(|_| {
                let t = Instant::now();
                spin(n);
                t.elapsed().as_secs_f64() * 1e6
            })
            .fold(f64::INFINITY, f64::min)
            .max(1.0);
        Work { iterations_per_us: n as f64 / best_us, scale: 1.0 }
    }

    pub(crate) fn scale(&self) -> f64 {
        self.scale
    }

    /// The same work, costing `scale` times what is asked for this start.
    pub(crate) fn scaled(self, scale: f64) -> Work {
        Work { scale, ..self }
    }

    /// Spins until this thread has used `us` µs of CPU; returns a checksum
    /// so the work cannot be optimized away.
    pub(crate) fn run_us(&self, us: u64) -> u64 {
        if us == 0 {
            return 0;
        }
        let goal = thread_cpu_ns() + (us as f64 * self.scale * 1000.0) as u64;
        let chunk = (self.iterations_per_us * CHECK_EVERY_US).max(1.0) as u64;
        let mut sum = 0u64;
        loop {
            sum ^= spin(chunk);
            if thread_cpu_ns() >= goal {
                return sum;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CPU time `us` of work used, the least of 3 tries: on a VM the
    /// thread's CPU clock also runs while the hypervisor has taken its
    /// core (a CI run saw 140 µs over in one chunk), which no try avoids
    /// for certain but all three rarely meet.
    fn used_us(w: &Work, us: u64) -> f64 {
        (0..3)
            .map(|_| {
                let before = thread_cpu_ns();
                w.run_us(us);
                (thread_cpu_ns() - before) as f64 / 1000.0
            })
            .fold(f64::INFINITY, f64::min)
    }

    #[test]
    fn a_jittered_start_costs_its_factor() {
        let w = Work::calibrate().scaled(1.5);
        let used_us = used_us(&w, 2_000);
        assert!((3_000.0..=3_100.0).contains(&used_us), "asked 2000 µs at 1.5x, used {used_us} µs");
    }

    #[test]
    fn work_costs_the_cpu_time_asked() {
        // Exact by construction: at least what was asked, at most one chunk
        // (and a clock read) more, however busy the machine is.
        let w = Work::calibrate();
        for us in [100u64, 1_000, 20_000] {
            let used_us = used_us(&w, us);
            assert!(used_us >= us as f64 && used_us <= us as f64 + 100.0, "asked {us} µs, used {used_us} µs");
        }
        let before = thread_cpu_ns();
        assert_eq!(w.run_us(0), 0);
        assert!(thread_cpu_ns() - before < 50_000, "no work is no work");
    }
}
