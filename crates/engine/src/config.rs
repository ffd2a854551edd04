//! The typed configuration of one load run. The CLI and the Python API build
//! it; the engine validates what only it can check (URL, addresses).

use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum HttpVersion {
    #[serde(rename = "1.0")]
    Http10,
    #[default]
    #[serde(rename = "1.1")]
    Http11,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LoadConfig {
    pub url: String,
    /// Concurrent connections (closed loop: requests in flight).
    pub concurrency: u32,
    /// Total requests to make; `None` means bounded by `duration_s` alone.
    pub requests: Option<u64>,
    /// Stop sending after this many seconds; in-flight requests then finish.
    pub duration_s: Option<f64>,
    pub keep_alive: bool,
    pub http_version: HttpVersion,
    pub method: String,
    /// Extra request headers, in order, as given (`Name: value`).
    pub headers: Vec<(String, String)>,
    #[serde(skip)]
    pub body: Vec<u8>,
    pub content_type: Option<String>,
    /// Per-request timeout, from the moment the request was due to its last byte.
    pub timeout_s: f64,
    /// Worker threads, each with its own event loop; 0 = one per available CPU.
    pub threads: u32,
    /// ab counts a response whose body length differs from the first one as a
    /// "Length" failure; ab's -l turns that off for dynamic pages.
    pub variable_length: bool,
    /// Load is only sent to loopback addresses unless this is set.
    pub allow_remote: bool,
    pub user_agent: String,
    /// After each batch of events a worker keeps polling without sleeping for
    /// this long. 0 (the default) sleeps at once. With generator and server
    /// on one machine, every time the generator sleeps the server pays for
    /// waking it (a cross-CPU wake-up), which lowers the throughput measured;
    /// busy polling removes that cost at the price of a generator core that
    /// looks fully busy, so use it only with the generator on cores of its own.
    pub busy_poll_us: u64,
}

impl Default for LoadConfig {
    fn default() -> Self {
        LoadConfig {
            url: String::new(),
            concurrency: 1,
            requests: Some(1),
            duration_s: None,
            keep_alive: false,
            http_version: HttpVersion::Http11,
            method: "GET".into(),
            headers: Vec::new(),
            body: Vec::new(),
            content_type: None,
            timeout_s: 30.0,
            threads: 0,
            variable_length: false,
            allow_remote: false,
            user_agent: concat!("corebench/", env!("CARGO_PKG_VERSION")).into(),
            busy_poll_us: 0,
        }
    }
}

/// Longer spins only burn CPU: the next response is due within microseconds.
pub const MAX_BUSY_POLL_US: u64 = 10_000;

fn bad(key: &'static str, reason: impl Into<String>) -> EngineError {
    EngineError::BadConfig { key, reason: reason.into() }
}

impl LoadConfig {
    pub fn validate(&self) -> Result<()> {
        if self.concurrency == 0 {
            return Err(bad("concurrency", "must be at least 1"));
        }
        match (self.requests, self.duration_s) {
            (None, None) => return Err(bad("requests", "give a request count or a duration")),
            (Some(0), _) => return Err(bad("requests", "must be at least 1")),
            (Some(n), None) if u64::from(self.concurrency) > n => {
                return Err(bad(
                    "concurrency",
                    format!("{} is greater than the {} requests to make", self.concurrency, n),
                ))
            }
            _ => {}
        }
        if let Some(d) = self.duration_s {
            if !(d.is_finite() && d > 0.0) {
                return Err(bad("duration_s", format!("{d} is not a positive number of seconds")));
            }
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0) {
            return Err(bad("timeout_s", format!("{} is not a positive number of seconds", self.timeout_s)));
        }
        if self.busy_poll_us > MAX_BUSY_POLL_US {
            return Err(bad("busy_poll_us", format!("{} is more than {MAX_BUSY_POLL_US} µs", self.busy_poll_us)));
        }
        let token = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic() && b != b':');
        if !token(&self.method) {
            return Err(bad("method", format!("{:?} is not an HTTP method token", self.method)));
        }
        for (name, value) in &self.headers {
            if !token(name) || value.bytes().any(|b| b == b'\r' || b == b'\n') {
                return Err(bad("headers", format!("{name:?}: {value:?} is not a valid header")));
            }
        }
        Ok(())
    }

    pub fn worker_threads(&self) -> u32 {
        let avail = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1);
        let wanted = if self.threads == 0 { avail } else { self.threads };
        wanted.clamp(1, self.concurrency)
    }
}
