//! Errors of the built-in server: the ones a user fixes (a bad setting, a
//! port in use) are `BadConfig`, named by their key.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ServeError {
    #[error("invalid setting {key}: {reason}")]
    BadConfig { key: &'static str, reason: String },
    #[error("could not start the server: {0}")]
    Io(#[from] std::io::Error),
}

impl ServeError {
    /// True when the error is the caller's to fix (bad input).
    pub fn is_user_error(&self) -> bool {
        matches!(self, ServeError::BadConfig { .. })
    }
}

pub type Result<T> = std::result::Result<T, ServeError>;
