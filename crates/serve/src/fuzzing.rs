//! The request parser as the fuzz targets in `fuzz/` drive it (cargo
//! feature `fuzzing`, off in every build of corebench itself): a thin
//! wrapper over `http::parse`, the parser every process model calls on the
//! bytes a connection has received, so that none of its items has to
//! become public. The access-log writer's escaping and calendar too: the
//! access-log target writes lines with them, so what the server logs is
//! what the replay parser is checked to read back.

use std::ops::Range;

use crate::{clf, http};

/// Longer heads are refused with 431.
pub const MAX_HEAD_BYTES: usize = http::MAX_HEAD_BYTES;
/// Longer bodies (by their Content-Length) are refused with 413.
pub const MAX_BODY_BYTES: u64 = http::MAX_BODY_BYTES;

/// The parts of a request head the server uses, as byte ranges of the
/// buffer parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// The head's length, its blank line included; the body follows.
    pub len: usize,
    pub method: Range<usize>,
    pub target: Range<usize>,
    /// What the access log writes between its quotes.
    pub request_line: Range<usize>,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub version: u8,
    pub keep_alive: bool,
    pub content_length: u64,
    pub user_agent: Option<Range<usize>>,
    pub referer: Option<Range<usize>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    Partial,
    Complete(Head),
    /// The status and reason the server answers with before it closes.
    Bad(u16, &'static str),
}

/// The request head at the start of `buf`, exactly as the server parses it.
pub fn parse_request(buf: &[u8]) -> Parsed {
    let range = |(a, b): (usize, usize)| a..b;
    match http::parse(buf) {
        http::Parsed::Partial => Parsed::Partial,
        http::Parsed::Bad(status, why) => Parsed::Bad(status, why),
        http::Parsed::Complete(h) => Parsed::Complete(Head {
            len: h.len,
            method: range(h.method),
            target: range(h.target),
            request_line: range(h.request_line),
            version: h.version,
            keep_alive: h.keep_alive,
            content_length: h.content_length,
            user_agent: h.user_agent.map(range),
            referer: h.referer.map(range),
        }),
    }
}

/// Days since 1970-01-01 to (year, month, day), as the access log dates lines.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    clf::civil_from_days(days)
}

/// A quoted field of the access log, escaped as the server writes it
/// (Apache's `ap_escape_logitem`).
pub fn escape_log_item(raw: &[u8]) -> String {
    let mut out = Vec::with_capacity(raw.len());
    clf::escape(&mut out, raw);
    String::from_utf8(out).expect("escaped bytes are ASCII")
}
