//! HTTP/2 (RFC 9113) for the client: requests restated as HTTP/2 fields, and
//! nghttp2 sessions driven through memory by the worker's event loop.

pub(crate) mod probe;
pub(crate) mod request;
pub(crate) mod session;
