//! One request-response exchange, shared by every process model: parse the
//! head, skip the body, route, log, and the bytes to send.

use std::io::{self, IoSlice, Write};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::clf::{AccessLog, Entry};
use super::db::Db;
use super::h2;
use super::http::{parse, write_head, Body, Delay, Parsed, Response};
use super::routes::Router;

/// The stall switch: the whole server stops answering for `pause` every
/// `every`, on a schedule counted from one start instant shared by all
/// workers (taken before a prefork server forks).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stall {
    pub start: Instant,
    pub pause: Duration,
    pub every: Duration,
}

impl Stall {
    /// When the stall in progress at `now` ends, if one is.
    pub(crate) fn ends_at(&self, now: Instant) -> Option<Instant> {
        let into = now.saturating_duration_since(self.start).as_nanos() % self.every.as_nanos();
        let into = Duration::from_nanos(into as u64);
        (into < self.pause).then(|| now + (self.pause - into))
    }
}

/// What each worker (thread or process) owns: its log buffer and its
/// database connection.
#[derive(Default)]
pub(crate) struct Local {
    pub log: Option<AccessLog>,
    pub db: Option<Db>,
}

pub(crate) struct Ctx {
    pub router: Router,
    pub stall: Option<Stall>,
    pub keep_alive_timeout: Duration,
    /// HTTPS: every connection's TLS settings.
    pub tls: Option<std::sync::Arc<rustls::ServerConfig>>,
}

/// A response on its way out: the head, then the body, written together.
pub(crate) struct Outgoing {
    pub head: Vec<u8>,
    pub body: Body,
    pub sent: usize,
}

impl Outgoing {
    fn total(&self) -> usize {
        self.head.len() + self.body.bytes().len()
    }

    /// Writes as much as the socket takes; Ok(true) when all is sent.
    pub(crate) fn write_to(&mut self, w: &mut impl Write) -> io::Result<bool> {
        while self.sent < self.total() {
            let body = self.body.bytes();
            let n = if self.sent < self.head.len() {
                w.write_vectored(&[IoSlice::new(&self.head[self.sent..]), IoSlice::new(body)])?
            } else {
                w.write(&body[self.sent - self.head.len()..])?
            };
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            self.sent += n;
        }
        Ok(true)
    }
}

pub(crate) enum Handled {
    NeedMore,
    Respond { out: Outgoing, keep_alive: bool, delay: Option<Delay>, consumed: usize },
}

/// Answers an HTTP/2 request: routed and logged as an HTTP/1.x one is. The
/// access log's request line says HTTP/2.0, as Apache's and nginx's do.
pub(crate) fn answer_h2(ctx: &Ctx, r: &h2::Request, peer: Option<SocketAddr>, local: &mut Local) -> Response {
    let response = match std::str::from_utf8(&r.target) {
        Ok(target) => ctx.router.respond(target, &mut local.db),
        Err(_) => Response::text(400, "request target is not UTF-8"),
    };
    if let Some(log) = &mut local.log {
        let line = [r.method.as_slice(), b" ", &r.target, b" HTTP/2.0"].concat();
        log.log(&Entry {
            peer,
            request_line: &line,
            status: response.status,
            body_bytes: if r.method == b"HEAD" { 0 } else { response.body.bytes().len() as u64 },
            referer: r.referer.as_deref(),
            user_agent: r.user_agent.as_deref(),
        });
    }
    response
}

/// Handles the request at the start of `buf`, if it is all there.
pub(crate) fn handle(ctx: &Ctx, buf: &[u8], peer: Option<SocketAddr>, local: &mut Local) -> Handled {
    let (head, response) = match parse(buf) {
        Parsed::Partial => return Handled::NeedMore,
        Parsed::Bad(status, why) => (None, Response::text(status, why)),
        Parsed::Complete(h) => {
            if (buf.len() as u64) < h.len as u64 + h.content_length {
                return Handled::NeedMore;
            }
            let response = match std::str::from_utf8(&buf[h.target.0..h.target.1]) {
                Ok(target) => ctx.router.respond(target, &mut local.db),
                Err(_) => Response::text(400, "request target is not UTF-8"),
            };
            (Some(h), response)
        }
    };
    let head_request = head.as_ref().is_some_and(|h| &buf[h.method.0..h.method.1] == b"HEAD");
    // A request that did not parse ends the connection: the framing of what
    // follows is unknown. Any other status keeps it, as the client asked.
    let keep_alive = head.as_ref().is_some_and(|h| h.keep_alive);
    let version = head.as_ref().map_or(1, |h| h.version);
    let mut head_bytes = Vec::with_capacity(256);
    write_head(&mut head_bytes, &response, keep_alive, version);
    let body = if head_request { Body::Static(b"") } else { response.body };
    let out = Outgoing { head: head_bytes, body, sent: 0 };
    if let Some(log) = &mut local.log {
        let slice = |s: Option<(usize, usize)>| s.map(|(a, b)| &buf[a..b]);
        let line_end = buf.iter().position(|&b| b == b'\r' || b == b'\n').unwrap_or(buf.len().min(8192));
        log.log(&Entry {
            peer,
            request_line: head.as_ref().map_or(&buf[..line_end], |h| &buf[h.request_line.0..h.request_line.1]),
            status: response.status,
            body_bytes: out.body.bytes().len() as u64,
            referer: slice(head.as_ref().and_then(|h| h.referer)),
            user_agent: slice(head.as_ref().and_then(|h| h.user_agent)),
        });
    }
    let consumed = head.as_ref().map_or(buf.len(), |h| h.len + h.content_length as usize);
    Handled::Respond { out, keep_alive, delay: response.delay, consumed }
}
