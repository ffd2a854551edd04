//! The built-in server's request parser (`corebench_serve`'s `http::parse`),
//! and the framing `exchange::handle` builds on it: a request is its head
//! plus `Content-Length` bytes, and the next pipelined request starts there.
//!
//! Each input is used twice:
//! - as raw bytes: every range the parser returns lies inside the head and
//!   says what it claims (the method is the request line's first word, the
//!   request line holds the target and no line break); the head is the
//!   same when parsed from exactly its own bytes and every shorter prefix is
//!   Partial; Content-Length is the value of every such field; Bad carries a
//!   status the server can send; then the same for each pipelined request;
//! - as a structured request (`arbitrary`) serialised with a body and a
//!   second request behind it: both parse back to what was written.

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use corebench_serve::fuzzing::{parse_request, Head, Parsed, MAX_BODY_BYTES, MAX_HEAD_BYTES};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    raw(data);
    if let Ok(pair) = Pair::arbitrary(&mut Unstructured::new(data)) {
        round_trip(&pair);
    }
});

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Checks one parse of `buf`; returns the bytes the request takes (head
/// and body) when it is complete and all there.
fn check(buf: &[u8]) -> Option<usize> {
    let parsed = parse_request(buf);
    let h = match parsed {
        Parsed::Partial => {
            assert!(buf.len() <= MAX_HEAD_BYTES, "{} bytes still Partial", buf.len());
            return None;
        }
        Parsed::Bad(status, why) => {
            assert!([400, 413, 431, 501].contains(&status), "status {status}");
            assert!(!why.is_empty());
            return None;
        }
        Parsed::Complete(h) => h,
    };
    assert!(h.len > 0 && h.len <= buf.len() && h.len <= MAX_HEAD_BYTES, "head length {} of {}", h.len, buf.len());
    let within = |r: &std::ops::Range<usize>, what: &str| {
        assert!(r.start <= r.end && r.end <= h.len, "{what} {r:?} outside the {}-byte head", h.len);
        &buf[r.clone()]
    };
    let method = within(&h.method, "method");
    let target = within(&h.target, "target");
    let line = within(&h.request_line, "request line");
    if let Some(ua) = &h.user_agent {
        within(ua, "user agent");
    }
    if let Some(referer) = &h.referer {
        within(referer, "referer");
    }
    assert!(!method.is_empty() && method.iter().all(|&b| is_tchar(b)), "method {method:?}");
    assert!(!target.is_empty() && !target.iter().any(|&b| b == b' ' || b == b'\r' || b == b'\n'), "target {target:?}");
    // What the access log writes as the request: it starts with the method,
    // holds the target and stays on one line.
    assert_eq!(h.request_line.start, h.method.start, "request line {line:?} does not start at the method");
    assert!(h.request_line.end >= h.target.end, "request line {line:?} does not hold the target {target:?}");
    assert!(!line.iter().any(|&b| b == b'\r' || b == b'\n'), "request line {line:?} spans lines");
    assert!(h.version <= 1);
    assert!(h.content_length <= MAX_BODY_BYTES);
    // Content-Length is every one of its fields (RFC 9112 §6.3: differing
    // values, or a value that is not digits, leave the framing unknown);
    // chunked bodies are refused, so no Transfer-Encoding is accepted.
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    assert_eq!(req.parse(&buf[..h.len]), Ok(httparse::Status::Complete(h.len)));
    for f in req.headers.iter() {
        assert!(!f.name.eq_ignore_ascii_case("transfer-encoding"));
        if f.name.eq_ignore_ascii_case("content-length") {
            let v = f.value.trim_ascii();
            assert!(!v.is_empty() && v.iter().all(u8::is_ascii_digit), "Content-Length {:?} accepted", f.value);
            assert_eq!(std::str::from_utf8(v).unwrap().parse::<u64>().ok(), Some(h.content_length), "Content-Length");
        }
    }
    // The head does not depend on what follows it, nor is it complete sooner.
    assert_eq!(parse_request(&buf[..h.len]), Parsed::Complete(h.clone()), "parsed from its own bytes");
    for cut in [h.len - 1, h.len / 2, h.len / 3, 1] {
        if cut < h.len {
            assert_eq!(parse_request(&buf[..cut]), Parsed::Partial, "a {cut}-byte prefix of a {}-byte head", h.len);
        }
    }
    let whole = h.len as u64 + h.content_length;
    (buf.len() as u64 >= whole).then_some(whole as usize)
}

fn raw(data: &[u8]) {
    // Pipelined requests, each consumed as `handle` consumes it.
    let mut at = 0;
    while at < data.len() {
        match check(&data[at..]) {
            Some(n) => at += n,
            None => break,
        }
    }
}

// ---------------------------------------------------------------------------
// Structured round trip.

#[derive(Arbitrary, Debug)]
enum ConnectionToken {
    Close,
    KeepAlive,
    Upgrade,
    Te,
}

/// Printable ASCII and obs-text, no whitespace at its edges.
#[derive(Arbitrary, Debug)]
struct Text(Vec<u8>);

impl Text {
    fn bytes(&self) -> Vec<u8> {
        let v: Vec<u8> =
            self.0.iter().map(|&b| if (0x20..0x7f).contains(&b) || b >= 0x80 { b } else { b'.' }).collect();
        v.trim_ascii().to_vec()
    }
}

#[derive(Arbitrary, Debug)]
struct Request {
    /// Empty lines before the request line, which RFC 9112 §2.2 lets a
    /// server skip.
    blank_lines: u8,
    method: Vec<u8>,
    target: Vec<u8>,
    http10: bool,
    user_agent: Option<Text>,
    referer: Option<Text>,
    connection: Vec<ConnectionToken>,
    /// Content-Length sent even when the body is empty.
    length_header: bool,
    body: Vec<u8>,
    headers: Vec<(u8, Text)>,
    lf: bool,
}

struct Written {
    bytes: Vec<u8>,
    head_len: usize,
    method: Vec<u8>,
    target: Vec<u8>,
    version: u8,
    keep_alive: bool,
    user_agent: Option<Vec<u8>>,
    referer: Option<Vec<u8>>,
}

impl Request {
    fn write(&self) -> Written {
        let eol: &[u8] = if self.lf { b"\n" } else { b"\r\n" };
        let mut method: Vec<u8> = self.method.iter().copied().filter(|&b| is_tchar(b)).take(20).collect();
        if method.is_empty() {
            method = b"GET".to_vec();
        }
        const PCHAR: &[u8] = b"abcxyzABCXYZ0189-._~!$&'()*+,;=:@/?%";
        let mut target = b"/".to_vec();
        target.extend(self.target.iter().take(200).map(|&b| PCHAR[b as usize % PCHAR.len()]));
        let mut w = Vec::new();
        for _ in 0..self.blank_lines % 3 {
            w.extend_from_slice(eol);
        }
        w.extend_from_slice(&method);
        w.push(b' ');
        w.extend_from_slice(&target);
        w.extend_from_slice(if self.http10 { b" HTTP/1.0" } else { b" HTTP/1.1" });
        w.extend_from_slice(eol);
        let mut header = |name: &[u8], value: &[u8]| {
            w.extend_from_slice(name);
            w.extend_from_slice(b": ");
            w.extend_from_slice(value);
            w.extend_from_slice(eol);
        };
        header(b"Host", b"127.0.0.1:8080");
        const OTHER: [&[u8]; 4] = [b"Accept", b"X-Forwarded-For", b"Cookie", b"Accept-Encoding"];
        for (i, (name, value)) in self.headers.iter().take(20).enumerate() {
            header(OTHER[usize::from(*name) % OTHER.len()], &value.bytes());
            if i == 3 {
                if let Some(ua) = &self.user_agent {
                    header(b"User-Agent", &ua.bytes());
                }
            }
        }
        if self.headers.len() <= 3 {
            if let Some(ua) = &self.user_agent {
                header(b"User-Agent", &ua.bytes());
            }
        }
        if let Some(r) = &self.referer {
            header(b"referer", &r.bytes());
        }
        let (mut close, mut keep_alive, mut tokens) = (false, false, Vec::<&[u8]>::new());
        for t in self.connection.iter().take(3) {
            let t: &[u8] = match t {
                ConnectionToken::Close => b"close",
                ConnectionToken::KeepAlive => b"Keep-Alive",
                ConnectionToken::Upgrade => b"upgrade",
                ConnectionToken::Te => b"TE",
            };
            close |= t == b"close";
            keep_alive |= t == b"Keep-Alive";
            tokens.push(t);
        }
        if !tokens.is_empty() {
            header(b"Connection", &tokens.join(&b", "[..]));
        }
        let body = &self.body[..self.body.len().min(300)];
        if self.length_header || !body.is_empty() {
            header(b"Content-Length", body.len().to_string().as_bytes());
        }
        w.extend_from_slice(eol);
        let head_len = w.len();
        w.extend_from_slice(body);
        Written {
            bytes: w,
            head_len,
            method,
            target,
            version: u8::from(!self.http10),
            keep_alive: !close && (keep_alive || !self.http10),
            user_agent: self.user_agent.as_ref().map(Text::bytes),
            referer: self.referer.as_ref().map(Text::bytes),
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Pair(Request, Request);

fn expect(buf: &[u8], w: &Written) -> usize {
    let Parsed::Complete(h) = parse_request(buf) else {
        panic!("{:?} did not parse: {:?}", String::from_utf8_lossy(&w.bytes), parse_request(buf))
    };
    let Head { len, method, target, request_line, version, keep_alive, content_length, user_agent, referer } = &h;
    let text = |r: &Option<std::ops::Range<usize>>| r.clone().map(|r| buf[r].to_vec());
    assert_eq!(*len, w.head_len);
    assert_eq!(&buf[method.clone()], &w.method[..]);
    assert_eq!(&buf[target.clone()], &w.target[..]);
    let version_text: &[u8] = if *version == 0 { b"HTTP/1.0" } else { b"HTTP/1.1" };
    assert_eq!(buf[request_line.clone()], [&w.method[..], b" ", &w.target, b" ", version_text].concat());
    assert_eq!(*version, w.version);
    assert_eq!(*keep_alive, w.keep_alive, "keep-alive");
    assert_eq!(*content_length as usize, w.bytes.len() - w.head_len);
    assert_eq!(text(user_agent), w.user_agent);
    assert_eq!(text(referer), w.referer);
    assert_eq!(check(buf), Some(w.bytes.len()));
    w.bytes.len()
}

fn round_trip(pair: &Pair) {
    let (first, second) = (pair.0.write(), pair.1.write());
    let wire = [&first.bytes[..], &second.bytes].concat();
    let n = expect(&wire, &first);
    assert_eq!(n, first.bytes.len());
    expect(&wire[n..], &second);
}
