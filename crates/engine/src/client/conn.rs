//! One connection slot of a worker: its socket, the request in flight, and
//! the timestamps of ab's phases. A slot is reused for the whole run.

use std::io;
use std::net::SocketAddr;
use std::time::Instant;

use mio::net::TcpStream;
use mio::{Interest, Registry, Token};

use super::response::{Progress, ResponseParser};
use super::stamp::Wall;
use super::transport::{ReadNote, TlsContext, Transport};
use crate::client::target::Entry;
use crate::measure::stats::ErrorKind;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Idle,
    Connecting,
    Handshake,
    Writing,
    Reading,
    /// A stream of an HTTP/2 connection, which lives in the driver: the
    /// request is in flight, whether sent yet or not.
    Stream,
}

/// How a step of I/O left the request.
#[derive(Debug)]
pub(crate) enum Step {
    /// Waiting for the socket.
    Pending,
    /// A complete response is in the parser.
    Done,
    /// The server closed a reused keep-alive connection before answering:
    /// it never saw the request, so it is sent again on a new connection.
    Stale,
    Failed(ErrorKind, String),
}

pub(crate) struct Times {
    /// When the request was due: the start of its latency.
    pub start: Instant,
    /// When it was actually begun: later than `start` when an open-loop
    /// schedule slipped.
    pub begun: Instant,
    pub connected: Instant,
    pub sent: Instant,
    /// When the response's first and last bytes reached the socket.
    pub first_byte: Option<Instant>,
    pub last_byte: Option<Instant>,
}

pub(crate) struct Conn {
    pub token: Token,
    pub transport: Option<Transport>,
    pub phase: Phase,
    pub times: Times,
    pub parser: ResponseParser,
    pub deadline: Instant,
    /// Responses completed on the current connection.
    pub served: u32,
    /// The number of the request in flight, and what it asks for.
    pub k: u64,
    pub entry: Entry,
    written: usize,
}

pub(crate) fn failed(kind: ErrorKind, what: &str, e: impl std::fmt::Display) -> Step {
    Step::Failed(kind, format!("{what}: {e}"))
}

impl Conn {
    pub(crate) fn new(token: Token, now: Instant) -> Conn {
        Conn {
            token,
            transport: None,
            phase: Phase::Idle,
            times: Times { start: now, begun: now, connected: now, sent: now, first_byte: None, last_byte: None },
            parser: ResponseParser::default(),
            deadline: now,
            served: 0,
            k: 0,
            entry: Entry::default(),
            written: 0,
        }
    }

    pub(crate) fn close(&mut self) {
        self.transport = None;
        self.phase = Phase::Idle;
        self.served = 0;
    }

    /// Makes the slot ready for a request due at `start`, begun at `now`.
    pub(crate) fn prepare(&mut self, start: Instant, now: Instant, deadline: Instant) {
        self.times = Times { start, begun: now, connected: now, sent: now, first_byte: None, last_byte: None };
        self.deadline = deadline;
        self.parser.reset();
        self.written = 0;
    }

    /// Sends the prepared request over epoll, opening a connection when
    /// there is none.
    pub(crate) fn begin(
        &mut self,
        addr: SocketAddr,
        tls: Option<&TlsContext>,
        registry: &Registry,
        request: &[u8],
    ) -> Step {
        if self.transport.is_some() {
            return self.write(request);
        }
        let sock = match TcpStream::connect(addr) {
            Ok(s) => s,
            Err(e) => return failed(ErrorKind::Connect, "connect", e),
        };
        let _ = sock.set_nodelay(true);
        let mut t = match Transport::new(sock, tls) {
            Ok(t) => t,
            Err(e) => return failed(ErrorKind::Connect, "tls", e),
        };
        if let Err(e) = registry.register(t.socket(), self.token, Interest::READABLE | Interest::WRITABLE) {
            return failed(ErrorKind::Connect, "register", e);
        }
        self.transport = Some(t);
        self.phase = Phase::Connecting;
        Step::Pending
    }

    /// Drives the request after a readiness event, at `now`; `wall` converts
    /// the arrival stamps of what is read.
    /// `peer_closed` is the event's read-closed flag (EPOLLRDHUP): the end of
    /// the stream is already queued behind the data, and no further edge
    /// will report it, so the socket is read to the end.
    pub(crate) fn ready(
        &mut self,
        now: Instant,
        wall: &Wall,
        buf: &mut [u8],
        request: &[u8],
        head: bool,
        peer_closed: bool,
    ) -> Step {
        match self.phase {
            Phase::Idle => {
                // Between requests a keep-alive connection has nothing to say:
                // an event now is the server closing it, or bytes no request
                // asked for (a 408 before it closes, say). Drop it, as the
                // io_uring driver does, so that the next request opens a new
                // connection: neither waiting for an answer that cannot come
                // nor taking those bytes for its answer. A TLS record with no
                // plaintext (a session ticket) reads as WouldBlock and keeps it.
                if let Some(t) = self.transport.as_mut() {
                    let quiet = matches!(t.read(buf, &mut ReadNote::default()), Err(e) if e.kind() == io::ErrorKind::WouldBlock);
                    if peer_closed || !quiet {
                        self.close();
                    }
                }
                Step::Pending
            }
            Phase::Connecting => self.connected(now, request),
            Phase::Handshake => self.handshake(now, request),
            Phase::Writing => self.write(request),
            Phase::Reading => self.read(now, wall, buf, head, peer_closed),
            Phase::Stream => Step::Pending,
        }
    }

    fn connected(&mut self, now: Instant, request: &[u8]) -> Step {
        let t = self.transport.as_mut().expect("connecting without a socket");
        let sock = t.socket();
        if let Ok(Some(e)) | Err(e) = sock.take_error() {
            return failed(ErrorKind::Connect, "connect", e);
        }
        match sock.peer_addr() {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotConnected => return Step::Pending,
            Err(e) => return failed(ErrorKind::Connect, "connect", e),
        }
        if t.handshaking() {
            self.phase = Phase::Handshake;
            return self.handshake(now, request);
        }
        self.times.connected = now;
        self.write(request)
    }

    fn handshake(&mut self, now: Instant, request: &[u8]) -> Step {
        let t = self.transport.as_mut().expect("handshake without a socket");
        if let Err(e) = t.handshake() {
            return failed(ErrorKind::Connect, "tls handshake", e);
        }
        if t.handshaking() {
            return Step::Pending;
        }
        self.times.connected = now;
        self.write(request)
    }

    fn write(&mut self, request: &[u8]) -> Step {
        self.phase = Phase::Writing;
        let t = self.transport.as_mut().expect("writing without a socket");
        while self.written < request.len() {
            match t.write(&request[self.written..]) {
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Step::Pending,
                Err(_) if self.served > 0 && self.written == 0 => return Step::Stale,
                Err(e) => return failed(ErrorKind::Receive, "send", e),
            }
        }
        match t.flush() {
            Ok(true) => {}
            Ok(false) => return Step::Pending,
            Err(e) => return failed(ErrorKind::Receive, "send", e),
        }
        self.times.sent = Instant::now();
        self.phase = Phase::Reading;
        Step::Pending
    }

    fn read(&mut self, now: Instant, wall: &Wall, buf: &mut [u8], head: bool, peer_closed: bool) -> Step {
        loop {
            let mut note = ReadNote::default();
            let t = self.transport.as_mut().expect("reading without a socket");
            match t.read(buf, &mut note) {
                Ok(0) => return self.closed_by_peer(None),
                Ok(n) => {
                    let at = wall.arrival(note.stamp, now);
                    if let Some(step) = self.received(at, &buf[..n], head, peer_closed) {
                        return step;
                    }
                    if note.drained && !peer_closed {
                        return Step::Pending;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Step::Pending,
                Err(e) if e.kind() == io::ErrorKind::InvalidData => return failed(ErrorKind::Exception, "tls", e),
                Err(e) => return self.closed_by_peer(Some(e)),
            }
        }
    }

    /// Bytes of the response arrived (at `at`, however they were read):
    /// the step they complete, or None while more are needed.
    pub(crate) fn received(&mut self, at: Instant, data: &[u8], head: bool, peer_closed: bool) -> Option<Step> {
        // Not before the request went: the stamps' clock is converted.
        let at = at.max(self.times.sent);
        self.times.first_byte.get_or_insert(at);
        self.times.last_byte = Some(at);
        match self.parser.feed(data, head) {
            Ok(Progress::Complete(used)) => {
                if used < data.len() || peer_closed {
                    // Bytes nobody asked for: the connection's framing
                    // can no longer be trusted. Or the server closed
                    // its side with the response (Apache's event MPM
                    // under load does, without Connection: close): a
                    // next request would be swallowed by its lingering
                    // close and never answered.
                    self.parser.reusable = false;
                }
                Some(Step::Done)
            }
            Ok(Progress::NeedMore) => None,
            Err(e) => Some(failed(ErrorKind::Exception, "response", e)),
        }
    }

    /// An io_uring send of `n` bytes of `request` completed: true when the
    /// whole request is out.
    pub(crate) fn sent(&mut self, n: usize, request: &[u8]) -> bool {
        self.written += n;
        self.written >= request.len()
    }

    /// What of the request is still to send.
    pub(crate) fn unsent<'r>(&self, request: &'r [u8]) -> &'r [u8] {
        &request[self.written.min(request.len())..]
    }

    /// A send failed: on a reused connection before any byte went, the
    /// server had closed it; the request goes again on a new one.
    pub(crate) fn send_failed(&self, e: io::Error) -> Step {
        match self.served > 0 && self.written == 0 {
            true => Step::Stale,
            false => failed(ErrorKind::Receive, "send", e),
        }
    }

    /// The slot is connected (io_uring's connect completed).
    pub(crate) fn connected_at(&mut self, now: Instant) {
        self.times.connected = now;
    }

    /// The request is handed to the kernel (io_uring: the send submitted).
    pub(crate) fn sending(&mut self, now: Instant) {
        self.times.sent = now;
        self.phase = Phase::Reading;
    }

    pub(crate) fn closed_by_peer(&mut self, err: Option<io::Error>) -> Step {
        if self.parser.finish_on_close() {
            return Step::Done;
        }
        if !self.parser.started() && self.served > 0 {
            return Step::Stale;
        }
        let what = err.map_or_else(|| "connection closed by server".to_string(), |e| e.to_string());
        if self.parser.in_body() {
            failed(ErrorKind::Length, "body shorter than declared", what)
        } else {
            failed(ErrorKind::Receive, "before a complete response head", what)
        }
    }
}
