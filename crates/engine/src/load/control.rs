//! What the caller can see and do while a run is in progress.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct Control {
    stop: AtomicBool,
    /// Requests finished so far, published by workers in batches (not per
    /// request, to keep the hot path free of shared writes).
    finished: AtomicU64,
}

impl Control {
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
    pub fn finished(&self) -> u64 {
        self.finished.load(Ordering::Relaxed)
    }
    pub(crate) fn publish(&self, n: u64) {
        self.finished.fetch_add(n, Ordering::Relaxed);
    }
}
