//! The engine's HTTP/1.x response parser (`client::response`), driven the
//! way a connection slot drives it: bytes in arbitrary pieces, `reset`
//! between responses, `finish_on_close` / `started` / `in_body` when the
//! server closes.
//!
//! Each input is used twice:
//! - as raw bytes (flags, a seed for the cut points, the stream): the same
//!   stream cut three ways (whole, byte by byte through its first 256 bytes,
//!   at pseudo-random points) must give the same responses; each `Complete(n)` lies inside its piece
//!   and header plus body bytes are exactly the bytes consumed; the first
//!   response agrees with a whole-buffer reference framing (RFC 9112 §6.3);
//! - as a structured response (`arbitrary`), serialised and fed in pieces:
//!   it must parse back to its status, head and body lengths, reusability
//!   and Server header.

#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use corebench_engine::fuzzing::{Progress, ResponseParser};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() >= 2 {
        raw(data[0] & 1 != 0, data[0] & 2 != 0, data[1], &data[2..]);
    }
    if let Ok(r) = Response::arbitrary(&mut Unstructured::new(data)) {
        round_trip(&r);
    }
});

// ---------------------------------------------------------------------------
// Raw bytes.

/// One response as the parser ended it, or where the stream left it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Complete {
        end: usize,
        status: u16,
        header_bytes: u64,
        body_bytes: u64,
        reusable: bool,
        server: Option<String>,
        /// The first response's head as kept (with `want_server`, as runs
        /// keep both).
        head: Option<String>,
    },
    Error(String),
    /// The stream ended first: what `closed_by_peer` then sees.
    Open {
        header_bytes: u64,
        body_bytes: u64,
        started: bool,
        in_body: bool,
        ends_on_close: bool,
    },
}

/// Feeds `stream` cut at `cuts` (increasing offsets) and returns every
/// response in it, pipelined: after each one the parser is reset and fed
/// the rest, as a kept-alive connection's next response would be.
fn run(stream: &[u8], cuts: &[usize], head_request: bool, want_server: bool) -> Vec<Outcome> {
    let mut p = ResponseParser::new(want_server);
    if want_server {
        p.keep_head();
    }
    let mut out = Vec::new();
    let mut bounds: Vec<usize> = cuts.iter().copied().filter(|&c| c > 0 && c < stream.len()).collect();
    bounds.push(stream.len());
    let (mut at, mut since_reset) = (0usize, 0usize);
    let mut b = 0;
    while at < stream.len() {
        let piece = &stream[at..bounds[b]];
        match p.feed(piece, head_request) {
            Ok(Progress::Complete(used)) => {
                assert!(used <= piece.len(), "Complete({used}) of a {}-byte piece", piece.len());
                since_reset += used;
                assert!(since_reset > 0, "a response of no bytes");
                let (h, bb) = (p.header_bytes(), p.body_bytes());
                assert_eq!(h + bb, since_reset as u64, "head {h} + body {bb} bytes != {since_reset} consumed");
                assert!(p.started(), "a complete response that was never started");
                assert!(!p.in_body(), "a complete response still in its body");
                at += used;
                let head = match out.is_empty() {
                    true => p.head_text().map(str::to_string),
                    false => None,
                };
                if out.is_empty() && want_server {
                    check_head(&stream[..at - bb as usize], head.as_deref());
                }
                out.push(Outcome::Complete {
                    end: at,
                    status: p.status(),
                    header_bytes: h,
                    body_bytes: bb,
                    reusable: p.reusable(),
                    server: p.server().map(str::to_string),
                    head,
                });
                p.reset();
                assert!(!p.started() && !p.in_body(), "reset left the parser started");
                since_reset = 0;
            }
            Ok(Progress::NeedMore) => {
                since_reset += piece.len();
                assert!(p.header_bytes() + p.body_bytes() <= since_reset as u64);
                at = bounds[b];
                b += 1;
            }
            Err(e) => {
                assert!(!e.is_empty());
                out.push(Outcome::Error(e));
                return out;
            }
        }
        while b < bounds.len() && bounds[b] <= at {
            b += 1;
        }
    }
    // The connection's end. `started` is what tells a stale kept-alive
    // connection (closed before any answer: the request is sent again) from
    // a response cut short, so it must be true once any byte arrived.
    let started = p.started();
    assert_eq!(started, since_reset > 0, "started() after {since_reset} bytes since the reset");
    let in_body = p.in_body();
    let (header_bytes, body_bytes) = (p.header_bytes(), p.body_bytes());
    let ends_on_close = p.finish_on_close();
    assert!(!ends_on_close || in_body, "a body delimited by the close is a body");
    out.push(Outcome::Open { header_bytes, body_bytes, started, in_body, ends_on_close });
    out
}

/// The kept head is the final (not 1xx) head, whole: the text of the
/// bytes just before the body. Heads begin with `HTTP/` and end with a line
/// feed, both ASCII, so the text of the stream up to the body ends with it.
fn check_head(upto_body: &[u8], head: Option<&str>) {
    let head = head.expect("the first complete response's head was not kept");
    assert!(head.starts_with("HTTP/") && head.ends_with('\n'), "kept head {head:?}");
    assert!(String::from_utf8_lossy(upto_body).ends_with(head), "kept head {head:?} is not the last head read");
}

/// Past these, the parser's limits (a 4 KiB chunk-size or trailer line, a
/// 64 KiB head) apply to what it holds between pieces, so a cut can matter.
const SPLIT_INVARIANT_BELOW: usize = 4096;

fn raw(head_request: bool, want_server: bool, seed: u8, stream: &[u8]) {
    if stream.len() > SPLIT_INVARIANT_BELOW {
        return;
    }
    let whole = run(stream, &[], head_request, want_server);
    // Byte by byte through the first 256 bytes (every head and chunk line
    // split everywhere), the rest whole: a head held between pieces is
    // parsed again on each, so all of a long input would cost its square.
    let bytewise: Vec<usize> = (1..stream.len().min(256)).collect();
    assert_eq!(run(stream, &bytewise, head_request, want_server), whole, "byte by byte");
    let mut x = u32::from(seed).wrapping_mul(2_654_435_761) | 1;
    let mut cuts = Vec::new();
    let mut c = 0;
    while c < stream.len() {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        c += 1 + (x as usize % (stream.len() / 32).max(24));
        cuts.push(c);
    }
    assert_eq!(run(stream, &cuts, head_request, want_server), whole, "cut at {cuts:?}");
    check_reference(stream, head_request, &whole[0]);
}

// A reference framing of the first response, from the whole buffer at once.

#[derive(Debug)]
enum Reference {
    Complete {
        end: usize,
        status: u16,
        head_len: usize,
        reusable: bool,
    },
    Error,
    /// Incomplete; `in_body`: the head was read, `until_close`: the body ends with the connection.
    Open {
        in_body: bool,
        until_close: bool,
    },
}

fn tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|&b| b == b',').map(<[u8]>::trim_ascii).filter(|t| !t.is_empty())
}

fn reference(buf: &[u8], head_request: bool) -> Reference {
    let mut off = 0;
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 100];
        let mut r = httparse::Response::new(&mut headers);
        let n = match r.parse(&buf[off..]) {
            Err(_) => return Reference::Error,
            Ok(httparse::Status::Partial) => return Reference::Open { in_body: false, until_close: false },
            Ok(httparse::Status::Complete(n)) => n,
        };
        off += n;
        let status = r.code.unwrap();
        if (100..200).contains(&status) && status != 101 {
            continue; // interim: the final response follows
        }
        // RFC 9112 §6.3: no body after HEAD, 1xx, 204, 304; then a
        // Transfer-Encoding overrides any Content-Length: chunked when it is
        // the final coding, else until the close; then Content-Length (all
        // its fields agreeing, 1*DIGIT); else until the close.
        let (mut te, mut last_coding, mut length, mut close, mut keep_alive) = (false, None, None, false, false);
        for h in r.headers.iter() {
            if h.name.eq_ignore_ascii_case("transfer-encoding") {
                te = true;
                last_coding = tokens(h.value).last().or(last_coding);
            } else if h.name.eq_ignore_ascii_case("content-length") {
                let v = h.value.trim_ascii();
                let n = (!v.is_empty() && v.iter().all(u8::is_ascii_digit))
                    .then(|| std::str::from_utf8(v).unwrap().parse::<u64>().ok())
                    .flatten();
                match (n, length) {
                    (None, _) => return Reference::Error,
                    (Some(a), Some(b)) if a != b => return Reference::Error,
                    (Some(a), _) => length = Some(a),
                }
            } else if h.name.eq_ignore_ascii_case("connection") {
                close |= tokens(h.value).any(|t| t.eq_ignore_ascii_case(b"close"));
                keep_alive |= tokens(h.value).any(|t| t.eq_ignore_ascii_case(b"keep-alive"));
            }
        }
        let reusable = if r.version == Some(0) { keep_alive && !close } else { !close };
        let done = |end| Reference::Complete { end, status, head_len: off, reusable };
        if head_request || status == 204 || status == 304 {
            return done(off);
        }
        if te {
            if !last_coding.is_some_and(|c| c.eq_ignore_ascii_case(b"chunked")) {
                return Reference::Open { in_body: true, until_close: true };
            }
            return match chunked_end(buf, off) {
                Ok(Some(end)) => done(end),
                Ok(None) => Reference::Open { in_body: true, until_close: false },
                Err(()) => Reference::Error,
            };
        }
        return match length {
            Some(n) if (buf.len() - off) as u64 >= n => done(off + n as usize),
            Some(_) => Reference::Open { in_body: true, until_close: false },
            None => Reference::Open { in_body: true, until_close: true },
        };
    }
}

/// The end of a chunked body starting at `off` (RFC 9112 §7.1, with the
/// chunk-size line as httparse reads it and a bare LF after chunk data
/// accepted), `None` if the buffer ends first.
fn chunked_end(buf: &[u8], mut off: usize) -> Result<Option<usize>, ()> {
    let line = |off: usize| buf[off..].iter().position(|&b| b == b'\n').map(|i| off + i + 1);
    loop {
        let Some(next) = line(off) else { return Ok(None) };
        let size = match httparse::parse_chunk_size(&buf[off..next]) {
            Ok(httparse::Status::Complete((_, n))) => n,
            _ => return Err(()),
        };
        off = next;
        if size == 0 {
            break;
        }
        if ((buf.len() - off) as u64) < size {
            return Ok(None);
        }
        off += size as usize;
        match buf.get(off..off + 2) {
            Some([b'\n', _]) => off += 1,
            Some(b"\r\n") => off += 2,
            Some(_) => return Err(()),
            None if buf.get(off) == Some(&b'\n') => off += 1,
            None if buf.len() > off && buf[off] != b'\r' => return Err(()),
            None => return Ok(None),
        }
    }
    // The trailer section ends at the first blank line.
    loop {
        let Some(next) = line(off) else { return Ok(None) };
        let blank = buf[off..next].trim_ascii().is_empty();
        off = next;
        if blank {
            return Ok(Some(off));
        }
    }
}

fn check_reference(buf: &[u8], head_request: bool, first: &Outcome) {
    let want = reference(buf, head_request);
    match (&want, first) {
        (
            Reference::Complete { end, status, head_len, reusable },
            Outcome::Complete { end: e, status: s, header_bytes, reusable: r, .. },
        ) => {
            assert_eq!(
                (*e, *s, *header_bytes, *r),
                (*end, *status, *head_len as u64, *reusable),
                "{want:?} / {first:?}"
            );
        }
        (Reference::Error, Outcome::Error(_)) => {}
        (Reference::Open { in_body, until_close }, Outcome::Open { in_body: b, ends_on_close, .. }) => {
            assert_eq!((*b, *ends_on_close), (*in_body, *until_close), "{want:?} / {first:?}");
        }
        _ => panic!("reference framing {want:?}, parser {first:?}"),
    }
}

// ---------------------------------------------------------------------------
// Structured round trip.

#[derive(Arbitrary, Debug)]
enum Framing {
    Length,
    Chunked { sizes: Vec<u8>, extension: bool, trailers: Vec<(Token, Text)> },
    Close,
}

#[derive(Arbitrary, Debug)]
enum ConnectionToken {
    Close,
    KeepAlive,
    Upgrade,
    Other(Token),
}

/// A header name: `tchar`s only, never empty.
#[derive(Arbitrary, Debug)]
struct Token(Vec<u8>);

impl Token {
    fn bytes(&self) -> Vec<u8> {
        const TCHAR: &[u8] = b"!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
        let mut t: Vec<u8> = self.0.iter().map(|&b| TCHAR[b as usize % TCHAR.len()]).collect();
        if t.is_empty() {
            t.push(b'x');
        }
        t
    }
}

/// A field value: visible ASCII, spaces inside and obs-text, no edges of whitespace.
#[derive(Arbitrary, Debug)]
struct Text(Vec<u8>);

impl Text {
    fn bytes(&self) -> Vec<u8> {
        let v: Vec<u8> = self
            .0
            .iter()
            .map(|&b| if b == b'\t' || (0x20..0x7f).contains(&b) || b >= 0x80 { b } else { b'a' })
            .collect();
        v.trim_ascii().to_vec()
    }
}

#[derive(Arbitrary, Debug)]
struct Response {
    http10: bool,
    /// `100 Continue` / `103 Early Hints` heads before the final one.
    interim: Vec<bool>,
    status: u16,
    reason: Text,
    headers: Vec<(Token, Text)>,
    connection: Vec<ConnectionToken>,
    server: Option<Text>,
    framing: Framing,
    body: Vec<u8>,
    head_request: bool,
    want_server: bool,
    /// Bare LF line ends, which RFC 9112 §2.2 lets a recipient accept.
    lf: bool,
    cuts: Vec<u16>,
}

const FRAMING: [&str; 4] = ["content-length", "transfer-encoding", "connection", "server"];

fn round_trip(r: &Response) {
    let eol: &[u8] = if r.lf { b"\n" } else { b"\r\n" };
    let version = if r.http10 { "1.0" } else { "1.1" };
    let status = 200 + r.status % 400;
    let no_body = r.head_request || status == 204 || status == 304;
    let mut wire = Vec::new();
    for &early_hints in r.interim.iter().take(3) {
        let line = if early_hints { "103 Early Hints" } else { "100 Continue" };
        wire.extend_from_slice(format!("HTTP/{version} {line}").as_bytes());
        wire.extend_from_slice(eol);
        if early_hints {
            wire.extend_from_slice(b"Link: </s.css>; rel=preload");
            wire.extend_from_slice(eol);
        }
        wire.extend_from_slice(eol);
    }
    let final_head = wire.len();
    wire.extend_from_slice(format!("HTTP/{version} {status} ").as_bytes());
    wire.extend_from_slice(&r.reason.bytes());
    wire.extend_from_slice(eol);
    let mut header = |name: &[u8], value: &[u8]| {
        wire.extend_from_slice(name);
        wire.extend_from_slice(b": ");
        wire.extend_from_slice(value);
        wire.extend_from_slice(eol);
    };
    for (name, value) in r.headers.iter().take(40) {
        let name = name.bytes();
        if !FRAMING.iter().any(|f| f.as_bytes().eq_ignore_ascii_case(&name)) {
            header(&name, &value.bytes());
        }
    }
    let (mut close, mut keep_alive, mut conn) = (false, false, Vec::new());
    for t in r.connection.iter().take(4) {
        let t = match t {
            ConnectionToken::Close => b"Close".to_vec(),
            ConnectionToken::KeepAlive => b"keep-alive".to_vec(),
            ConnectionToken::Upgrade => b"upgrade".to_vec(),
            ConnectionToken::Other(t) => t.bytes(),
        };
        close |= t.eq_ignore_ascii_case(b"close");
        keep_alive |= t.eq_ignore_ascii_case(b"keep-alive");
        conn.push(t);
    }
    if !conn.is_empty() {
        header(b"Connection", &conn.join(&b", "[..]));
    }
    let server = r.server.as_ref().map(Text::bytes);
    if let Some(s) = &server {
        header(b"Server", s);
    }
    let mut reusable = if r.http10 { keep_alive && !close } else { !close };
    let mut body = Vec::new();
    match &r.framing {
        Framing::Length => {
            header(b"Content-Length", r.body.len().to_string().as_bytes());
            body.extend_from_slice(&r.body);
        }
        Framing::Chunked { sizes, extension, trailers } => {
            header(b"Transfer-Encoding", b"chunked");
            let mut rest = &r.body[..];
            let mut sizes = sizes.iter().map(|&s| usize::from(s).max(1));
            while !rest.is_empty() {
                let n = sizes.next().unwrap_or(rest.len()).min(rest.len());
                body.extend_from_slice(format!("{n:x}").as_bytes());
                if *extension {
                    body.extend_from_slice(b";name=\"v\"");
                }
                body.extend_from_slice(b"\r\n");
                body.extend_from_slice(&rest[..n]);
                body.extend_from_slice(eol);
                rest = &rest[n..];
            }
            body.extend_from_slice(b"0\r\n");
            for (name, value) in trailers.iter().take(4) {
                body.extend_from_slice(&name.bytes());
                body.extend_from_slice(b": ");
                body.extend_from_slice(&value.bytes());
                body.extend_from_slice(eol);
            }
            body.extend_from_slice(eol);
        }
        Framing::Close => {
            body.extend_from_slice(&r.body);
            reusable &= no_body;
        }
    }
    wire.extend_from_slice(eol);
    let head_len = wire.len();
    if !no_body {
        wire.extend_from_slice(&body);
    }
    let until_close = matches!(r.framing, Framing::Close) && !no_body;

    let mut cuts: Vec<usize> = r.cuts.iter().map(|&c| usize::from(c)).collect();
    cuts.sort_unstable();
    let got = run(&wire, &cuts, r.head_request, r.want_server);
    let want_server = if r.want_server { server.map(|s| String::from_utf8_lossy(&s).into_owned()) } else { None };
    let want = if until_close {
        Outcome::Open {
            header_bytes: head_len as u64,
            body_bytes: (wire.len() - head_len) as u64,
            started: true,
            in_body: true,
            ends_on_close: true,
        }
    } else {
        Outcome::Complete {
            end: wire.len(),
            status,
            header_bytes: head_len as u64,
            body_bytes: (wire.len() - head_len) as u64,
            reusable,
            server: want_server.clone(),
            head: r.want_server.then(|| String::from_utf8_lossy(&wire[final_head..head_len]).into_owned()),
        }
    };
    assert_eq!(got[0], want, "{:?}", String::from_utf8_lossy(&wire));
    let after = if until_close { &got[1..] } else { &got[2..] };
    assert!(after.is_empty(), "more after the response: {got:?}");
    if !until_close {
        let idle =
            Outcome::Open { header_bytes: 0, body_bytes: 0, started: false, in_body: false, ends_on_close: false };
        assert_eq!(got[1], idle);
    }
}
