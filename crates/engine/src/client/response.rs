//! An incremental HTTP/1.x response parser: bytes arrive in arbitrary pieces;
//! the head is parsed with httparse, the body framed as RFC 9112 §6.3 says.
//! Nothing is allocated per response: the carry buffer keeps its capacity.

const MAX_HEAD_BYTES: usize = 64 * 1024;
const MAX_HEADERS: usize = 100;
const MAX_LINE_BYTES: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ProtocolError {
    Head(String),
    HeadTooLarge,
    BadContentLength,
    BadChunk,
}

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProtocolError::Head(e) => write!(f, "invalid response head: {e}"),
            ProtocolError::HeadTooLarge => write!(f, "response head larger than {MAX_HEAD_BYTES} bytes"),
            ProtocolError::BadContentLength => write!(f, "invalid Content-Length"),
            ProtocolError::BadChunk => write!(f, "invalid chunked encoding"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    NeedMore,
    /// The response ended after this many bytes of the last piece fed.
    Complete(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Length(u64),
    ChunkSize,
    ChunkData(u64),
    /// The CRLF after chunk data; the flag tells whether the CR was seen.
    ChunkEnd(bool),
    Trailer,
    UntilClose,
    Done,
}

#[derive(Debug)]
pub(crate) struct ResponseParser {
    state: State,
    carry: Vec<u8>,
    pub status: u16,
    pub header_bytes: u64,
    pub body_bytes: u64,
    /// Whether the server lets the connection carry another request.
    pub reusable: bool,
    /// Filled from the first response only (ab's "Server Software").
    pub server: Option<String>,
    pub want_server: bool,
    /// The first final response's head as received (ab's -v 2), when wanted.
    pub head_text: Option<String>,
    pub want_head: bool,
}

impl Default for ResponseParser {
    fn default() -> Self {
        ResponseParser {
            state: State::Head,
            carry: Vec::with_capacity(1024),
            status: 0,
            header_bytes: 0,
            body_bytes: 0,
            reusable: false,
            server: None,
            want_server: false,
            head_text: None,
            want_head: false,
        }
    }
}

fn has_token(value: &[u8], token: &str) -> bool {
    value.split(|&b| b == b',').any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
}

struct Head {
    state: State,
    reusable: bool,
    server: Option<String>,
}

/// How the body of a response is delimited, and whether the connection can
/// carry another request (RFC 9112 §6.3 and §9.3).
fn frame(
    status: u16,
    version: u8,
    headers: &[httparse::Header<'_>],
    head_request: bool,
    want_server: bool,
) -> Result<Head, ProtocolError> {
    let mut head = Head { state: State::Head, reusable: false, server: None };
    if (100..200).contains(&status) && status != 101 {
        // An interim response: the final one follows on the same connection.
        return Ok(head);
    }
    let (mut coded, mut chunked, mut length, mut close, mut keep_alive) = (false, false, None, false, false);
    for h in headers {
        let name = h.name;
        if name.eq_ignore_ascii_case("transfer-encoding") {
            // The codings of all its fields are one list; chunked frames the
            // body only as the last of them (§6.3 item 4).
            coded = true;
            if let Some(last) = h.value.split(|&b| b == b',').map(<[u8]>::trim_ascii).rfind(|t| !t.is_empty()) {
                chunked = last.eq_ignore_ascii_case(b"chunked");
            }
        } else if name.eq_ignore_ascii_case("content-length") {
            // 1*DIGIT: `parse` alone would take a sign, `trim` Unicode spaces.
            let v = h.value.trim_ascii();
            let digits = !v.is_empty() && v.iter().all(u8::is_ascii_digit);
            let v = digits.then(|| std::str::from_utf8(v).ok()?.parse::<u64>().ok()).flatten();
            match (v, length) {
                (None, _) => return Err(ProtocolError::BadContentLength),
                (Some(a), Some(b)) if a != b => return Err(ProtocolError::BadContentLength),
                (Some(a), _) => length = Some(a),
            }
        } else if name.eq_ignore_ascii_case("connection") {
            close |= has_token(h.value, "close");
            keep_alive |= has_token(h.value, "keep-alive");
        } else if want_server && name.eq_ignore_ascii_case("server") {
            head.server = Some(String::from_utf8_lossy(h.value).into_owned());
        }
    }
    head.reusable = if version == 0 { keep_alive && !close } else { !close };
    head.state = if head_request || status == 204 || status == 304 {
        State::Done
    } else if chunked {
        State::ChunkSize
    } else if coded {
        // Another coding last: only the close ends the body, whatever a
        // Content-Length says (a Transfer-Encoding overrides it, §6.3 item 3).
        head.reusable = false;
        State::UntilClose
    } else if let Some(n) = length {
        State::Length(n)
    } else {
        head.reusable = false;
        State::UntilClose
    };
    Ok(head)
}

impl ResponseParser {
    pub(crate) fn reset(&mut self) {
        self.state = State::Head;
        self.carry.clear();
        self.status = 0;
        self.header_bytes = 0;
        self.body_bytes = 0;
        self.reusable = false;
    }

    /// Whether any byte of an answer arrived since `reset`: an interim
    /// (1xx) head counts, since the server has seen the request.
    pub(crate) fn started(&self) -> bool {
        self.state != State::Head || !self.carry.is_empty() || self.header_bytes > 0
    }

    pub(crate) fn in_body(&self) -> bool {
        !matches!(self.state, State::Head | State::Done)
    }

    /// The peer closed the connection: for a body delimited by the close, that
    /// is the end of the response.
    pub(crate) fn finish_on_close(&mut self) -> bool {
        if self.state == State::UntilClose {
            self.state = State::Done;
            return true;
        }
        false
    }

    pub(crate) fn feed(&mut self, data: &[u8], head_request: bool) -> Result<Progress, ProtocolError> {
        let mut pos = 0;
        while pos < data.len() || matches!(self.state, State::Length(0)) {
            let rest = &data[pos..];
            pos += match self.state {
                State::Head => self.feed_head(rest, head_request)?,
                State::Length(0) => {
                    self.state = State::Done;
                    0
                }
                State::Length(n) => {
                    let take = (n.min(rest.len() as u64)) as usize;
                    self.state = State::Length(n - take as u64);
                    self.body_bytes += take as u64;
                    take
                }
                State::ChunkSize | State::Trailer => self.feed_line(rest)?,
                State::ChunkData(n) => {
                    let take = (n.min(rest.len() as u64)) as usize;
                    self.state =
                        if take as u64 == n { State::ChunkEnd(false) } else { State::ChunkData(n - take as u64) };
                    self.body_bytes += take as u64;
                    take
                }
                State::ChunkEnd(cr) => {
                    self.body_bytes += 1;
                    self.state = match (rest[0], cr) {
                        (b'\r', false) => State::ChunkEnd(true),
                        (b'\n', _) => State::ChunkSize,
                        _ => return Err(ProtocolError::BadChunk),
                    };
                    1
                }
                State::UntilClose => {
                    self.body_bytes += rest.len() as u64;
                    rest.len()
                }
                State::Done => return Ok(Progress::Complete(pos)),
            };
            if self.state == State::Done {
                return Ok(Progress::Complete(pos));
            }
        }
        Ok(Progress::NeedMore)
    }

    fn feed_head(&mut self, data: &[u8], head_request: bool) -> Result<usize, ProtocolError> {
        // Fast path: a head that arrives whole is parsed in place, never copied.
        let from_carry = !self.carry.is_empty();
        let before = self.carry.len();
        if from_carry {
            self.carry.extend_from_slice(data);
        }
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut headers);
        let buf: &[u8] = if from_carry { &self.carry } else { data };
        match resp.parse(buf) {
            Ok(httparse::Status::Partial) => {
                if !from_carry {
                    self.carry.extend_from_slice(data);
                }
                if self.carry.len() > MAX_HEAD_BYTES {
                    return Err(ProtocolError::HeadTooLarge);
                }
                Ok(data.len())
            }
            Ok(httparse::Status::Complete(head_len)) => {
                let status = resp.code.unwrap_or(0);
                let version = resp.version.unwrap_or(1);
                let used = head_len - before;
                self.header_bytes += head_len as u64;
                let head = frame(status, version, resp.headers, head_request, self.want_server)?;
                if self.want_head && head.state != State::Head && self.head_text.is_none() {
                    self.head_text = Some(String::from_utf8_lossy(&buf[..head_len]).into_owned());
                }
                self.carry.clear();
                if head.state != State::Head {
                    self.status = status;
                    self.reusable = head.reusable;
                    self.server = head.server.or(self.server.take());
                }
                self.state = head.state;
                Ok(used)
            }
            Err(e) => Err(ProtocolError::Head(e.to_string())),
        }
    }

    /// Chunk-size and trailer lines, which may be split across reads.
    fn feed_line(&mut self, data: &[u8]) -> Result<usize, ProtocolError> {
        let Some(nl) = data.iter().position(|&b| b == b'\n') else {
            self.carry.extend_from_slice(data);
            self.body_bytes += data.len() as u64;
            if self.carry.len() > MAX_LINE_BYTES {
                return Err(ProtocolError::BadChunk);
            }
            return Ok(data.len());
        };
        let used = nl + 1;
        self.body_bytes += used as u64;
        let line: &[u8] = if self.carry.is_empty() {
            &data[..used]
        } else {
            self.carry.extend_from_slice(&data[..used]);
            &self.carry
        };
        self.state = match self.state {
            State::ChunkSize => match httparse::parse_chunk_size(line) {
                Ok(httparse::Status::Complete((_, 0))) => State::Trailer,
                Ok(httparse::Status::Complete((_, n))) => State::ChunkData(n),
                _ => return Err(ProtocolError::BadChunk),
            },
            _ if line.trim_ascii().is_empty() => State::Done,
            _ => State::Trailer,
        };
        self.carry.clear();
        Ok(used)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed_pieces(pieces: &[&[u8]], head: bool) -> (ResponseParser, Result<Progress, ProtocolError>) {
        let mut p = ResponseParser::default();
        let mut last = Ok(Progress::NeedMore);
        for piece in pieces {
            last = p.feed(piece, head);
            if !matches!(last, Ok(Progress::NeedMore)) {
                break;
            }
        }
        (p, last)
    }

    #[test]
    fn content_length_in_one_piece() {
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        let (p, res) = feed_pieces(&[r], false);
        assert_eq!(res, Ok(Progress::Complete(r.len())));
        assert_eq!((p.status, p.header_bytes, p.body_bytes, p.reusable), (200, 38, 5, true));
    }

    #[test]
    fn the_head_is_kept_when_wanted_across_pieces_and_after_interim_responses() {
        let head = b"HTTP/1.1 200 OK\r\nServer: t\r\nContent-Length: 2\r\n\r\n";
        let mut p = ResponseParser { want_head: true, ..Default::default() };
        let first = [b"HTTP/1.1 100 Continue\r\n\r\n".as_slice(), &head[..21]].concat();
        assert_eq!(p.feed(&first, false), Ok(Progress::NeedMore));
        assert_eq!(
            p.feed(&[&head[21..], b"ok".as_slice()].concat(), false),
            Ok(Progress::Complete(head.len() - 21 + 2))
        );
        assert_eq!(p.head_text.as_deref(), Some(std::str::from_utf8(head).unwrap()));
        let (p, _) = feed_pieces(&[head], false);
        assert_eq!(p.head_text, None, "not kept unless wanted");
    }

    #[test]
    fn every_split_point_gives_the_same_answer() {
        let r =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n6\r\n world\r\n0\r\nT: 1\r\n\r\n";
        for cut in 1..r.len() {
            let (p, res) = feed_pieces(&[&r[..cut], &r[cut..]], false);
            assert_eq!(res, Ok(Progress::Complete(r.len() - cut)), "cut at {cut}");
            assert_eq!(p.header_bytes + p.body_bytes, r.len() as u64, "cut at {cut}");
        }
        // Byte by byte.
        let pieces: Vec<&[u8]> = r.chunks(1).collect();
        assert_eq!(feed_pieces(&pieces, false).1, Ok(Progress::Complete(1)));
    }

    #[test]
    fn broken_chunk_size_is_an_error() {
        let r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n";
        assert_eq!(feed_pieces(&[r], false).1, Err(ProtocolError::BadChunk));
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(matches!(feed_pieces(&[b"\x00\x01garbage\r\n\r\n"], false).1, Err(ProtocolError::Head(_))));
    }

    #[test]
    fn head_and_no_content_have_no_body() {
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n";
        assert_eq!(feed_pieces(&[r], true).1, Ok(Progress::Complete(r.len())));
        let r = b"HTTP/1.1 204 No Content\r\n\r\n";
        assert_eq!(feed_pieces(&[r], false).1, Ok(Progress::Complete(r.len())));
    }

    #[test]
    fn interim_response_is_skipped() {
        let r = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n";
        let (p, res) = feed_pieces(&[r], false);
        assert_eq!(res, Ok(Progress::Complete(r.len())));
        assert_eq!(p.status, 201);
    }

    #[test]
    fn body_until_close() {
        let (mut p, res) = feed_pieces(&[b"HTTP/1.0 200 OK\r\n\r\nabc"], false);
        assert_eq!(res, Ok(Progress::NeedMore));
        assert!(!p.reusable && p.finish_on_close());
        assert_eq!(p.body_bytes, 3);
    }

    #[test]
    fn connection_semantics() {
        let (p, _) = feed_pieces(&[b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"], false);
        assert!(!p.reusable);
        let (p, _) = feed_pieces(&[b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n"], false);
        assert!(p.reusable);
        let (p, _) = feed_pieces(&[b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"], false);
        assert!(!p.reusable);
    }

    #[test]
    fn conflicting_lengths_are_rejected() {
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello";
        assert_eq!(feed_pieces(&[r], false).1, Err(ProtocolError::BadContentLength));
    }

    // Found by fuzz/fuzz_targets/http_response.rs (against RFC 9112 §6.3):
    // a Transfer-Encoding overrides Content-Length, and a body whose last
    // coding is not chunked ends only with the connection.
    #[test]
    fn transfer_coding_other_than_chunked_is_read_until_close() {
        let r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabcdef";
        let (mut p, res) = feed_pieces(&[r], false);
        assert_eq!(res, Ok(Progress::NeedMore));
        assert!(!p.reusable && p.finish_on_close());
        assert_eq!(p.body_bytes, 6);
        let r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n0\r\n\r\n";
        let (mut p, res) = feed_pieces(&[r], false);
        assert_eq!(res, Ok(Progress::NeedMore));
        assert!(p.finish_on_close());
        let r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 99\r\n\r\n1\r\nx\r\n0\r\n\r\n";
        assert_eq!(feed_pieces(&[r], false).1, Ok(Progress::Complete(r.len())));
    }

    // Found by the same target: `str::parse` took a sign (and `trim` Unicode
    // spaces), so `+5` was a length.
    #[test]
    fn content_length_is_digits_only() {
        for v in ["+5", "-5", "5 5", "0x5", "\u{85}5", ""] {
            let r = format!("HTTP/1.1 200 OK\r\nContent-Length: {v}\r\n\r\nhello");
            assert_eq!(feed_pieces(&[r.as_bytes()], false).1, Err(ProtocolError::BadContentLength), "{v:?}");
        }
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length:5 \r\n\r\nhello";
        assert_eq!(feed_pieces(&[r], false).1, Ok(Progress::Complete(r.len())));
    }

    // Found by the same target: after an interim response the parser said
    // it had not started, so a server closing then was taken for a stale
    // keep-alive connection and the request sent again.
    #[test]
    fn an_interim_response_has_started_the_answer() {
        let (p, res) = feed_pieces(&[b"HTTP/1.1 152 Not Modified\r\nETag: \"x\"\r\n\r\n"], false);
        assert_eq!(res, Ok(Progress::NeedMore));
        assert!(p.started() && !p.in_body());
        let mut p = p;
        p.reset();
        assert!(!p.started());
    }

    #[test]
    fn oversized_head_is_rejected() {
        let mut p = ResponseParser::default();
        p.feed(b"HTTP/1.1 200 OK\r\n", false).unwrap();
        let line = [b'a'; 1000];
        let mut res = Ok(Progress::NeedMore);
        for _ in 0..100 {
            res = p.feed(&line, false);
            if res.is_err() {
                break;
            }
        }
        assert!(res.is_err());
    }
}
