//! corebench's load engine: an HTTP/1.x load generator on an edge-triggered
//! event loop per thread, measuring into HDR histograms.
//!
//! One entry point, `run(config) -> result`, used by the Python binding
//! (`corebench._engine`) and by this crate's own tests.

pub mod accesslog;
pub mod agent;
pub mod client;
pub mod config;
pub mod error;
pub mod load;
pub mod measure;
pub mod result;
pub mod serve;
pub mod workload;

pub use config::{HttpVersion, LoadConfig};
pub use error::{EngineError, Result};
pub use load::control::Control;
pub use agent::{merge, run_agent, AgentPart};
pub use load::{check, run, run_with};
pub use result::LoadResult;
