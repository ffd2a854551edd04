//! Server-side HTTP/1.x: request heads parsed with httparse, responses
//! serialized into a reused buffer.

use std::time::Duration;

use super::queue::Ticket;

pub(crate) const MAX_HEAD_BYTES: usize = 16 * 1024;
const MAX_HEADERS: usize = 64;
/// Request bodies are read and discarded; larger ones are refused.
pub(crate) const MAX_BODY_BYTES: u64 = 16 * 1024 * 1024;

/// The parts of a request head the server uses, as offsets into the buffer
/// so nothing is copied.
#[derive(Debug, Clone, Default)]
pub(crate) struct Head {
    pub len: usize,
    pub method: (usize, usize),
    pub target: (usize, usize),
    pub request_line: (usize, usize),
    pub version: u8,
    pub keep_alive: bool,
    pub content_length: u64,
    pub user_agent: Option<(usize, usize)>,
    pub referer: Option<(usize, usize)>,
}

pub(crate) enum Parsed {
    Partial,
    Complete(Head),
    /// A response to send before closing: the request cannot be served.
    Bad(u16, &'static str),
}

fn span(buf: &[u8], part: &[u8]) -> (usize, usize) {
    let start = part.as_ptr() as usize - buf.as_ptr() as usize;
    (start, start + part.len())
}

pub(crate) fn parse(buf: &[u8]) -> Parsed {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) if n > MAX_HEAD_BYTES => return Parsed::Bad(431, "request head too large"),
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD_BYTES => {
            return Parsed::Bad(431, "request head too large")
        }
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(httparse::Error::TooManyHeaders) => return Parsed::Bad(431, "too many request headers"),
        Err(_) => return Parsed::Bad(400, "malformed request"),
    };
    let (Some(method), Some(target), Some(version)) = (req.method, req.path, req.version) else {
        return Parsed::Bad(400, "malformed request line");
    };
    let method = span(buf, method.as_bytes());
    // From the method: httparse skips empty lines before the request line.
    let line_end = buf[method.0..].iter().position(|&b| b == b'\r' || b == b'\n').map_or(method.1, |i| method.0 + i);
    let mut head = Head {
        len,
        method,
        target: span(buf, target.as_bytes()),
        request_line: (method.0, line_end),
        version,
        keep_alive: version == 1,
        ..Head::default()
    };
    let mut length = None;
    for h in req.headers.iter() {
        let value = h.value;
        if h.name.eq_ignore_ascii_case("connection") {
            let v = String::from_utf8_lossy(value).to_ascii_lowercase();
            if v.contains("close") {
                head.keep_alive = false;
            } else if v.contains("keep-alive") {
                head.keep_alive = true;
            }
        } else if h.name.eq_ignore_ascii_case("content-length") {
            // 1*DIGIT, the same in every field (RFC 9112 §6.3): otherwise
            // where the next request starts is unknown.
            let v = value.trim_ascii();
            let digits = !v.is_empty() && v.iter().all(u8::is_ascii_digit);
            match digits.then(|| std::str::from_utf8(v).ok()?.parse::<u64>().ok()).flatten() {
                Some(n) if n > MAX_BODY_BYTES => return Parsed::Bad(413, "request body too large"),
                Some(n) if length.is_some_and(|m| m != n) => return Parsed::Bad(400, "conflicting Content-Length"),
                Some(n) => (head.content_length, length) = (n, Some(n)),
                None => return Parsed::Bad(400, "invalid Content-Length"),
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return Parsed::Bad(501, "chunked request bodies are not supported");
        } else if h.name.eq_ignore_ascii_case("user-agent") {
            head.user_agent = Some(span(buf, value));
        } else if h.name.eq_ignore_ascii_case("referer") {
            head.referer = Some(span(buf, value));
        }
    }
    Parsed::Complete(head)
}

pub(crate) enum Body {
    Static(&'static [u8]),
    Owned(Vec<u8>),
}

impl Body {
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Body::Static(b) => b,
            Body::Owned(v) => v,
        }
    }
}

pub(crate) struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Body,
    /// Answer only after a while, without using CPU.
    pub delay: Option<Delay>,
}

/// How long a response waits: the sleep page's fixed length, or a place in
/// the M/M/1 queue, whose departure moves up when a client ahead leaves
/// (the threads and prefork models follow it; the async model keeps the
/// departure its request was given).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Delay {
    pub length: Duration,
    pub queued: Option<Ticket>,
}

impl Delay {
    pub(crate) fn fixed(length: Duration) -> Delay {
        Delay { length, queued: None }
    }
}

impl Response {
    pub(crate) fn text(status: u16, text: impl Into<String>) -> Response {
        let mut body = text.into().into_bytes();
        body.push(b'\n');
        Response { status, content_type: "text/plain; charset=utf-8", body: Body::Owned(body), delay: None }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        401 => "Unauthorized",
        403 => "Forbidden",
        416 => "Range Not Satisfiable",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "Unknown",
    }
}

/// Writes the status line and headers; a HEAD response keeps the length of
/// the body it does not send (RFC 9110 §9.3.2).
pub(crate) fn write_head(out: &mut Vec<u8>, r: &Response, keep_alive: bool, version: u8) {
    use std::io::Write;
    let v = if version == 0 { "1.0" } else { "1.1" };
    let _ = write!(
        out,
        "HTTP/{v} {} {}\r\nServer: corebench/{}\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
        r.status,
        reason(r.status),
        env!("CARGO_PKG_VERSION"),
        r.content_type,
        r.body.bytes().len()
    );
    match (keep_alive, version) {
        (false, 1) => out.extend_from_slice(b"Connection: close\r\n"),
        (true, 0) => out.extend_from_slice(b"Connection: keep-alive\r\n"),
        _ => {}
    }
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_request() {
        let buf = b"GET /static/2k?x=1 HTTP/1.1\r\nHost: a\r\nUser-Agent: ua\r\n\r\n";
        let Parsed::Complete(h) = parse(buf) else { panic!() };
        assert_eq!(&buf[h.target.0..h.target.1], b"/static/2k?x=1");
        assert_eq!(&buf[h.request_line.0..h.request_line.1], b"GET /static/2k?x=1 HTTP/1.1");
        assert!(h.keep_alive && h.len == buf.len());
        assert_eq!(&buf[h.user_agent.unwrap().0..h.user_agent.unwrap().1], b"ua");
    }

    #[test]
    fn bad_requests_get_a_status() {
        assert!(matches!(parse(b"\x16\x03\x01 garbage\r\n\r\n"), Parsed::Bad(400, _)));
        assert!(matches!(parse(b"GET / HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n"), Parsed::Bad(413, _)));
        let long = [b'a'; MAX_HEAD_BYTES + 10];
        let mut req = b"GET /".to_vec();
        req.extend_from_slice(&long);
        assert!(matches!(parse(&req), Parsed::Bad(431, _)));
        assert!(matches!(parse(b"GET / HTTP/1.0\r\n"), Parsed::Partial));
    }

    // Found by fuzz/fuzz_targets/http_request.rs: httparse skips empty lines
    // before the request line, which the access log then wrote as "".
    #[test]
    fn request_line_after_empty_lines() {
        let buf = b"\r\n\nGET /a HTTP/1.0\r\n\r\n";
        let Parsed::Complete(h) = parse(buf) else { panic!() };
        assert_eq!(&buf[h.request_line.0..h.request_line.1], b"GET /a HTTP/1.0");
        assert_eq!(h.len, buf.len());
    }

    // Found by the same target: a signed length, or two that differ, leave
    // the next request's start unknown (RFC 9112 §6.3).
    #[test]
    fn content_length_is_digits_and_agrees() {
        let bad = |v: &str| {
            let req = format!("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: {v}\r\n\r\nabc");
            matches!(parse(req.as_bytes()), Parsed::Bad(400, _))
        };
        assert!(bad("+3") && bad("4") && bad("") && bad("3 3"));
        let Parsed::Complete(h) = parse(b"POST / HTTP/1.1\r\nContent-Length: 3\r\ncontent-length: 3\r\n\r\nabc") else {
            panic!()
        };
        assert_eq!(h.content_length, 3);
    }
}
