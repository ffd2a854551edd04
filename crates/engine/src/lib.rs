//! corebench's load engine: an HTTP/1.x load generator on an edge-triggered
//! event loop per thread, measuring into HDR histograms.
//!
//! One entry point, `run(config) -> result`, used by the Python binding
//! (`corebench._engine`) and by this crate's own tests.

#![warn(unreachable_pub)]

mod agent;
mod client;
pub mod config;
mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod load;
pub mod measure;
pub mod result;
mod workload;

pub use agent::{merge, run_agent, AgentPart, PART_SCHEMA};
pub use config::{
    load_config_schema, split, HttpVersion, IoBackend, Linger, LoadConfig, LINGER_MIN_IN_FLIGHT, MAX_LIVE_BOUNDS,
};
pub use error::{EngineError, Result};
pub use load::control::{Control, Plan, SecondFigures};
pub use load::io::io_uring_support;
pub use load::{check, run, run_with};
pub use result::{load_result_schema, LoadResult};
