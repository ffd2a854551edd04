//! The configuration of the built-in target server (`corebench serve`).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Result, ServeError};

/// How the server runs its workers: the Apache MPM question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Model {
    /// N single-threaded processes sharing one listening socket.
    Prefork,
    /// One process; an acceptor hands each connection to a pool of N threads,
    /// a connection per thread at a time.
    Threads,
    /// One process; an event loop on each of N threads.
    Async,
}

impl Model {
    pub fn name(self) -> &'static str {
        match self {
            Model::Prefork => "prefork",
            Model::Threads => "threads",
            Model::Async => "async",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServeConfig {
    pub host: String,
    /// 0 picks a free port; the chosen one is reported when ready.
    pub port: u16,
    pub model: Model,
    pub workers: u32,
    /// The whole server stops answering for `stall_ms` every `stall_every_ms`.
    pub stall_ms: u64,
    pub stall_every_ms: u64,
    /// Combined Log Format access log, appended to.
    pub access_log: Option<String>,
    /// Idle keep-alive connections are closed after this long.
    pub keep_alive_timeout_s: f64,
    /// Articles in the database page's SQLite database; 0 leaves `/db` off.
    pub db_articles: u64,
    /// SQLite page cache per worker connection, in KiB (SQLite's default is 2000).
    pub db_cache_kb: u64,
    /// Where the database is kept; by default a file per size in the temp directory.
    pub db_file: Option<String>,
    /// Answer each path of this access log with the status and size it recorded.
    pub site_from_log: Option<String>,
    /// `/dynamic`'s work and `/sleep`'s pause are scaled, for this start, by a factor drawn once
    /// uniformly in [1 - jitter, 1 + jitter]: a target whose speed differs
    /// from start to start, as placement or a noisy neighbour make it.
    pub jitter: f64,
    /// HTTPS with a self-signed certificate made at start; ALPN offers h2
    /// and http/1.1.
    pub tls: bool,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            host: "127.0.0.1".into(),
            port: 0,
            model: Model::Async,
            workers: 1,
            stall_ms: 0,
            stall_every_ms: 0,
            access_log: None,
            keep_alive_timeout_s: 15.0,
            db_articles: 0,
            db_cache_kb: 2000,
            db_file: None,
            tls: false,
            site_from_log: None,
            jitter: 0.0,
        }
    }
}

fn bad(key: &'static str, reason: impl Into<String>) -> ServeError {
    ServeError::BadConfig { key, reason: reason.into() }
}

pub(crate) const MAX_WORKERS: u32 = 4096;
/// About 2.5 KB per article with its comments: a million is a 2.5 GB file.
pub(crate) const MAX_DB_ARTICLES: u64 = 1_000_000;
pub(crate) const MAX_DB_CACHE_KB: u64 = 16 * 1024 * 1024;

impl ServeConfig {
    pub fn validate(&self) -> Result<()> {
        if self.workers == 0 || self.workers > MAX_WORKERS {
            return Err(bad("workers", format!("{} is not between 1 and {MAX_WORKERS}", self.workers)));
        }
        if (self.stall_ms == 0) != (self.stall_every_ms == 0)
            || self.stall_ms >= self.stall_every_ms.max(1) && self.stall_ms > 0
        {
            return Err(bad("stall", "give a stall shorter than its period, e.g. 500ms every 2s"));
        }
        if self.db_articles > MAX_DB_ARTICLES {
            return Err(bad("db_articles", format!("{} is more than {MAX_DB_ARTICLES}", self.db_articles)));
        }
        if self.db_cache_kb == 0 || self.db_cache_kb > MAX_DB_CACHE_KB {
            return Err(bad("db_cache_kb", format!("{} is not between 1 and {MAX_DB_CACHE_KB} KiB", self.db_cache_kb)));
        }
        if !(0.0..1.0).contains(&self.jitter) {
            return Err(bad("jitter", "give a share from 0 to below 1, e.g. 0.2 for ±20%"));
        }
        if !(self.keep_alive_timeout_s.is_finite() && self.keep_alive_timeout_s > 0.0) {
            return Err(bad("keep_alive_timeout_s", "must be a positive number of seconds"));
        }
        Ok(())
    }

    pub fn stall(&self) -> Option<(Duration, Duration)> {
        (self.stall_ms > 0).then(|| (Duration::from_millis(self.stall_ms), Duration::from_millis(self.stall_every_ms)))
    }
}
