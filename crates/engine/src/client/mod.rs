//! The HTTP/1.x client: target, transport (TCP, TLS), connection slots,
//! response parsing.

pub mod conn;
pub mod response;
pub mod target;
pub mod transport;
