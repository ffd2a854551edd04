//! Measurement: per-worker statistics, HDR summaries, the generator's CPU.

pub mod cpu;
pub mod stats;
pub mod summary;
pub mod wire;
