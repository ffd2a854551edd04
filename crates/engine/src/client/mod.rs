//! The HTTP/1.x client: target, transport (TCP, TLS), connection slots,
//! response parsing.

pub(crate) mod conn;
pub(crate) mod h2;
pub(crate) mod response;
pub(crate) mod stamp;
pub(crate) mod target;
pub(crate) mod transport;
