//! Engine errors. User errors (a bad URL, an unreachable name) are distinct
//! variants so the Python boundary can turn them into one-line messages.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum EngineError {
    #[error("malformed URL {url:?}: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("unsupported scheme {scheme:?} in {url:?}: use http:// or https://")]
    BadScheme { url: String, scheme: String },
    #[error("cannot resolve host {host:?}: {reason}")]
    Resolve { host: String, reason: String },
    #[error("{host} resolves to {addr}, which is not a loopback address: pass allow_remote (CLI: --allow-remote) to load a remote server")]
    NotLoopback { host: String, addr: std::net::IpAddr },
    #[error("invalid setting {key}: {reason}")]
    BadConfig { key: &'static str, reason: String },
    #[error("TLS setup failed: {0}")]
    Tls(String),
    #[error("could not start the event loop: {0}")]
    Io(#[from] std::io::Error),
    /// The process or the system ran out of descriptors before the first
    /// request: the machine's limit, the user's to raise, not a bug.
    #[error("out of file descriptors starting {threads} load threads ({source}): raise the limit (ulimit -n), or use fewer connections or threads")]
    Descriptors { threads: usize, source: std::io::Error },
    #[error("a load worker panicked: {0}")]
    WorkerPanic(String),
    #[error("agent parts do not fit together: {0}")]
    Part(String),
    /// Stopped by the caller (Ctrl-C) before the first request.
    #[error("stopped before the first request, while {0}")]
    Stopped(String),
}

impl EngineError {
    /// True when the error is the caller's to fix (bad input), not a bug or
    /// a resource failure of this machine.
    pub fn is_user_error(&self) -> bool {
        !matches!(
            self,
            EngineError::Io(_) | EngineError::WorkerPanic(_) | EngineError::Part(_) | EngineError::Stopped(_)
        )
    }
}

pub type Result<T> = std::result::Result<T, EngineError>;
