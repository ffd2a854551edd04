//! The HTTP/2 driver: each connection carries `streams` of the worker's
//! slots at once, framed by an nghttp2 session; readiness comes from epoll,
//! as for HTTP/1.x. Slot `i` rides connection `i % connections`, so slots
//! taken in order spread over the connections. A turn's new requests go out
//! in one write per connection (`flush`), as h2load batches them.
//!
//! Timestamps are the HTTP/1.x path's: connected when the TCP (and TLS)
//! handshake ends, sent when the bytes of the request's HEADERS have been
//! written to the socket, first byte when its response's head begins,
//! done when END_STREAM arrives.

use std::io;
use std::time::Instant;

use mio::net::TcpStream;
use mio::{Interest, Token};

use super::epoll::{Epoll, Ready};
use super::{Driver, Peer};
use crate::client::conn::{failed, Conn, Phase, Step};
use crate::client::h2::request::H2Request;
use crate::client::h2::session::{h2_error, Event, Session};
use crate::client::transport::{ReadNote, Transport};
use crate::measure::stats::{ErrorKind, Http2Counts, Stats};
use crate::workload::Requests;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Closed,
    Connecting,
    Handshake,
    Open,
}

/// One HTTP/2 connection.
struct Link {
    transport: Option<Transport>,
    session: Option<Session>,
    state: State,
    /// Bytes the session gave that the socket has not yet taken.
    out: Vec<u8>,
    written: usize,
    /// Slots whose HEADERS are in `out`: sent once `out` is written.
    unsent: Vec<usize>,
    /// Slots whose request body is being sent, and whether it waited for
    /// the server's window.
    bodies: Vec<(usize, bool)>,
    active: u64,
    served: u64,
    /// A GOAWAY came: no new stream goes on this connection.
    going: bool,
    /// The server's SETTINGS came: it speaks HTTP/2.
    spoke: bool,
    /// The first bytes a server sent before its SETTINGS (an HTTP/1.x answer).
    foreign: Vec<u8>,
    queued: bool,
}

impl Link {
    fn closed() -> Link {
        Link {
            transport: None,
            session: None,
            state: State::Closed,
            out: Vec::new(),
            written: 0,
            unsent: Vec::new(),
            bodies: Vec::new(),
            active: 0,
            served: 0,
            going: false,
            spoke: false,
            foreign: Vec::new(),
            queued: false,
        }
    }
}

/// Where a slot's request is: its connection and stream (0: none).
#[derive(Debug, Clone, Copy)]
struct Place {
    link: usize,
    id: i32,
}

pub(crate) struct H2 {
    epoll: Epoll,
    /// The first `connections` are the slots' own; after them, connections
    /// a GOAWAY retired that still finish their streams.
    links: Vec<Link>,
    connections: usize,
    streams: usize,
    places: Vec<Place>,
    // After `links`: the sessions may point into the requests' bodies.
    requests: Vec<H2Request>,
    /// Connections with requests to write.
    queued: Vec<usize>,
    counts: Http2Counts,
    sent_bytes: u64,
}

impl H2 {
    /// A driver for `connections` connections of `streams` streams each:
    /// the worker has `connections × streams` slots.
    pub(crate) fn new(connections: usize, streams: usize, requests: Vec<H2Request>) -> io::Result<H2> {
        Ok(H2 {
            epoll: Epoll::new()?,
            links: (0..connections).map(|_| Link::closed()).collect(),
            connections,
            streams,
            places: vec![Place { link: 0, id: 0 }; connections * streams],
            requests,
            queued: Vec::with_capacity(connections),
            counts: Http2Counts::default(),
            sent_bytes: 0,
        })
    }

    /// Opens connection `j` (its old one, if any streams still run on it,
    /// is retired to finish them).
    fn open(&mut self, j: usize, peer: &Peer<'_>, want_server: bool) -> Result<(), Step> {
        self.retire(j);
        let sock = TcpStream::connect(peer.addr).map_err(|e| failed(ErrorKind::Connect, "connect", e))?;
        let _ = sock.set_nodelay(true);
        let mut t = Transport::new(sock, peer.tls).map_err(|e| failed(ErrorKind::Connect, "tls", e))?;
        let interest = Interest::READABLE | Interest::WRITABLE;
        self.epoll
            .registry()
            .register(t.socket(), Token(j), interest)
            .map_err(|e| failed(ErrorKind::Connect, "register", e))?;
        let session =
            Session::client(self.streams, want_server).map_err(|e| failed(ErrorKind::Exception, "http/2", e))?;
        let link = &mut self.links[j];
        *link = Link { transport: Some(t), session: Some(session), state: State::Connecting, ..Link::closed() };
        Ok(())
    }

    /// Moves connection `j`'s streams still running to a connection of
    /// their own, so `j` can be opened again.
    fn retire(&mut self, j: usize) {
        let link = &mut self.links[j];
        if link.active == 0 || link.transport.is_none() {
            self.end_link(j);
            return;
        }
        let k = match self.links[self.connections..].iter().position(|l| l.state == State::Closed) {
            Some(p) => self.connections + p,
            None => {
                self.links.push(Link::closed());
                self.links.len() - 1
            }
        };
        self.links.swap(j, k);
        let moved = &mut self.links[k];
        if let Some(t) = moved.transport.as_mut() {
            let interest = Interest::READABLE | Interest::WRITABLE;
            // Should this fail, no event reaches its streams: they time out,
            // counted as timeouts, as a silent server's would.
            let _ = self.epoll.registry().reregister(t.socket(), Token(k), interest);
        }
        if moved.queued {
            self.queued.push(k);
        }
        for p in self.places.iter_mut().filter(|p| p.link == j && p.id != 0) {
            p.link = k;
        }
    }

    /// Closes connection `j`, counting what it carried.
    fn end_link(&mut self, j: usize) {
        let link = &mut self.links[j];
        if link.state != State::Closed {
            self.counts.connection_ended(link.served);
        }
        *link = Link::closed();
    }

    /// Connection `j` cannot go on: every stream on it ends (as `kind`,
    /// or to be sent again where a reused connection died before any
    /// answer to it, as for HTTP/1.x), and it closes.
    fn fail_link(&mut self, j: usize, kind: ErrorKind, why: &str, conns: &[Conn], done: &mut Vec<(usize, Step)>) {
        let served = self.links[j].served;
        let why = match (self.links[j].spoke, self.links[j].foreign.is_empty()) {
            (false, false) => {
                format!("the server does not speak HTTP/2: it answered {:?}", first_line(&self.links[j].foreign))
            }
            _ => why.to_string(),
        };
        for (slot, p) in self.places.iter_mut().enumerate() {
            if p.link != j || p.id == 0 {
                continue;
            }
            p.id = 0;
            // A slot that gave up on its stream has had its request counted.
            if conns[slot].phase != Phase::Stream {
                continue;
            }
            let untouched = conns[slot].times.first_byte.is_none();
            let step = match served > 0 && untouched && kind == ErrorKind::Receive {
                true => Step::Stale,
                false => Step::Failed(kind, why.clone()),
            };
            done.push((slot, step));
        }
        self.end_link(j);
    }

    /// Writes connection `j`'s queued frames as far as the socket takes them.
    fn write(&mut self, j: usize, conns: &mut [Conn], done: &mut Vec<(usize, Step)>) {
        let link = &mut self.links[j];
        link.queued = false;
        if link.state != State::Open {
            return;
        }
        let Some(s) = link.session.as_mut() else { return };
        if let Err(e) = s.send(&mut link.out) {
            return self.fail_link(j, ErrorKind::Exception, &format!("http/2: {e}"), conns, done);
        }
        self.handle(j, conns, Instant::now(), done);
        self.note_stalls(j);
        match self.write_out(j) {
            Ok(false) => {}
            Ok(true) => {
                let now = Instant::now();
                let link = &mut self.links[j];
                for slot in link.unsent.drain(..) {
                    if self.places[slot].link == j && self.places[slot].id != 0 {
                        conns[slot].times.sent = now;
                    }
                }
            }
            Err(e) => self.fail_link(j, ErrorKind::Receive, &format!("send: {e}"), conns, done),
        }
    }

    /// Writes connection `j`'s pending bytes: true when all went out.
    fn write_out(&mut self, j: usize) -> io::Result<bool> {
        let link = &mut self.links[j];
        let t = link.transport.as_mut().expect("an open connection has a socket");
        while link.written < link.out.len() {
            match t.write(&link.out[link.written..]) {
                Ok(n) => link.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        if !t.flush()? {
            return Ok(false);
        }
        self.sent_bytes += link.out.len() as u64;
        link.out.clear();
        link.written = 0;
        Ok(true)
    }

    /// Counts the requests whose body the server's window holds back.
    fn note_stalls(&mut self, j: usize) {
        let link = &mut self.links[j];
        let Some(s) = link.session.as_ref() else { return };
        let (places, connections) = (&self.places, self.connections);
        let counts = &mut self.counts;
        link.bodies.retain_mut(|(slot, stalled)| {
            let p = places[*slot];
            if p.link != j || p.id == 0 || !s.body_pending(*slot / connections) {
                return false;
            }
            if !*stalled && s.window_closed(p.id) {
                *stalled = true;
                counts.flow_control_stalls += 1;
            }
            true
        });
    }

    /// Applies what connection `j`'s session reported to the slots, as of
    /// `at`: when the bytes it took arrived.
    fn handle(&mut self, j: usize, conns: &mut [Conn], at: Instant, done: &mut Vec<(usize, Step)>) {
        let Some(s) = self.links[j].session.as_mut() else { return };
        let mut events = std::mem::take(s.events());
        for &ev in &events {
            // An event of a stream its slot gave up on (a timeout, the slot
            // now idle or on its next request) concerns no request: the
            // request was counted when it failed.
            if let Some((slot, id)) = ev.stream() {
                let p = self.places[slot];
                if p.link != j || p.id != id || conns[slot].phase != Phase::Stream {
                    continue;
                }
            }
            match ev {
                Event::Head { slot, .. } => {
                    let t = &mut conns[slot].times;
                    t.first_byte.get_or_insert(at.max(t.sent));
                }
                Event::Status { slot, status, .. } => conns[slot].parser.status = status,
                Event::HeadBytes { slot, n, .. } => conns[slot].parser.header_bytes += n,
                Event::Body { slot, n, .. } => conns[slot].parser.body_bytes += n,
                Event::Sent { slot, .. } => self.links[j].unsent.push(slot),
                Event::End { slot, .. } => {
                    self.places[slot].id = 0;
                    let link = &mut self.links[j];
                    link.active -= 1;
                    link.served += 1;
                    let c = &mut conns[slot];
                    c.times.last_byte = Some(at.max(c.times.sent));
                    c.parser.reusable = true;
                    if c.parser.want_server {
                        c.parser.server = link.session.as_mut().and_then(Session::take_server);
                    }
                    done.push((slot, Step::Done));
                }
                Event::Closed { slot, code, .. } => {
                    self.places[slot].id = 0;
                    let link = &mut self.links[j];
                    link.active -= 1;
                    // Refused (RFC 9113 §8.7): the server did not process it,
                    // so it goes again, on a new connection, once this one
                    // has served (a server refusing everything fails it).
                    let refused = code == corebench_nghttp2::sys::NGHTTP2_REFUSED_STREAM && link.served > 0;
                    let step = match refused && conns[slot].times.first_byte.is_none() {
                        true => Step::Stale,
                        false => Step::Failed(ErrorKind::Receive, format!("stream reset: {}", h2_error(code))),
                    };
                    done.push((slot, step));
                }
                Event::Settings => {
                    let link = &mut self.links[j];
                    link.spoke = true;
                    if let Some(s) = link.session.as_ref() {
                        let max = s.server_max_streams();
                        let m = self.counts.server_max_streams.get_or_insert(max);
                        *m = (*m).min(max);
                    }
                }
                Event::GoAway { .. } => {
                    self.links[j].going = true;
                    self.counts.goaways += 1;
                }
                Event::Reset => self.counts.resets += 1,
            }
        }
        events.clear();
        if let Some(s) = self.links[j].session.as_mut() {
            *s.events() = events;
        }
    }

    /// Connection `j`'s TCP connect (and TLS handshake) advanced.
    fn connect(&mut self, j: usize, conns: &mut [Conn], now: Instant, done: &mut Vec<(usize, Step)>) {
        let link = &mut self.links[j];
        let t = link.transport.as_mut().expect("connecting without a socket");
        if link.state == State::Connecting {
            let sock = t.socket();
            if let Ok(Some(e)) | Err(e) = sock.take_error() {
                return self.fail_link(j, ErrorKind::Connect, &format!("connect: {e}"), conns, done);
            }
            match sock.peer_addr() {
                Ok(_) => link.state = State::Handshake,
                Err(e) if e.kind() == io::ErrorKind::NotConnected => return,
                Err(e) => return self.fail_link(j, ErrorKind::Connect, &format!("connect: {e}"), conns, done),
            }
        }
        if let Err(e) = t.handshake() {
            return self.fail_link(j, ErrorKind::Connect, &format!("tls handshake: {e}"), conns, done);
        }
        if t.handshaking() {
            return;
        }
        if !t.agreed_h2() {
            let why = "the server did not agree to HTTP/2 in the TLS handshake (ALPN h2)";
            return self.fail_link(j, ErrorKind::Connect, why, conns, done);
        }
        link.state = State::Open;
        for (slot, p) in self.places.iter().enumerate() {
            if p.link == j && p.id != 0 {
                conns[slot].times.connected = now;
            }
        }
        self.write(j, conns, done);
    }

    /// Reads what connection `j` has and feeds it to its session.
    fn read(
        &mut self,
        j: usize,
        closed: bool,
        conns: &mut [Conn],
        buf: &mut [u8],
        now: Instant,
        done: &mut Vec<(usize, Step)>,
    ) -> bool {
        loop {
            let link = &mut self.links[j];
            let mut note = ReadNote::default();
            let t = link.transport.as_mut().expect("reading without a socket");
            match t.read(buf, &mut note) {
                Ok(0) => {
                    self.fail_link(j, ErrorKind::Receive, "connection closed by server", conns, done);
                    return false;
                }
                Ok(n) => {
                    if !link.spoke && link.foreign.len() < 64 && buf[..n].starts_with(b"HTTP/") {
                        link.foreign.extend_from_slice(&buf[..n.min(64)]);
                    }
                    let s = link.session.as_mut().expect("an open connection has a session");
                    if let Err(e) = s.receive(&buf[..n]) {
                        self.fail_link(j, ErrorKind::Exception, &format!("not valid HTTP/2: {e}"), conns, done);
                        return false;
                    }
                    let at = self.epoll.wall.arrival(note.stamp, now);
                    self.handle(j, conns, at, done);
                    if note.drained && !closed {
                        return true;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                    self.fail_link(j, ErrorKind::Exception, &format!("tls: {e}"), conns, done);
                    return false;
                }
                Err(e) => {
                    self.fail_link(j, ErrorKind::Receive, &e.to_string(), conns, done);
                    return false;
                }
            }
        }
    }
}

/// The first line of what a server sent, for a message.
fn first_line(bytes: &[u8]) -> String {
    let line = bytes.split(|&b| b == b'\r' || b == b'\n').next().unwrap_or_default();
    String::from_utf8_lossy(line).into_owned()
}

impl Driver for H2 {
    type Event = Ready;
    const NAME: &'static str = "epoll";
    const COUNTS_SENT_BYTES: bool = true;

    fn capacity(&self) -> usize {
        self.epoll.capacity()
    }

    fn wait(&mut self, events: &mut Vec<Ready>, until: Instant, tick: Instant, now: Instant) -> io::Result<()> {
        self.epoll.wait(events, until, tick, now)
    }

    fn begin(&mut self, i: usize, c: &mut Conn, peer: &Peer<'_>, _: &[u8], now: Instant) -> Step {
        let j = i % self.connections;
        let old = self.places[i];
        if old.id != 0 {
            // The slot gave up on its last request (a timeout): reset it.
            self.places[i].id = 0;
            let link = &mut self.links[old.link];
            link.active -= 1;
            if let Some(s) = link.session.as_mut() {
                s.cancel(old.id);
            }
            if !link.queued {
                link.queued = true;
                self.queued.push(old.link);
            }
        }
        let usable = |l: &Link| l.state != State::Closed && !l.going && l.session.as_ref().is_some_and(Session::alive);
        if !usable(&self.links[j]) {
            if let Err(step) = self.open(j, peer, c.parser.want_server) {
                return step;
            }
        }
        let link = &mut self.links[j];
        let s = link.session.as_mut().expect("an open connection has a session");
        let r = &self.requests[c.entry.request as usize];
        let id = match s.submit(i, i / self.connections, r) {
            Ok(id) => id,
            Err(e) => return failed(ErrorKind::Exception, "http/2 request", e),
        };
        self.places[i] = Place { link: j, id };
        link.active += 1;
        self.counts.peak_streams = self.counts.peak_streams.max(link.active);
        if !r.body().is_empty() {
            link.bodies.push((i, false));
        }
        c.phase = Phase::Stream;
        if link.state == State::Open {
            c.times.connected = now;
        }
        if !link.queued {
            link.queued = true;
            self.queued.push(j);
        }
        Step::Pending
    }

    fn advance(
        &mut self,
        ev: Ready,
        conns: &mut [Conn],
        buf: &mut [u8],
        _: &Requests,
        now: Instant,
        done: &mut Vec<(usize, Step)>,
    ) {
        let j = ev.slot;
        let Some(link) = self.links.get(j) else { return };
        match link.state {
            State::Closed => return,
            State::Connecting | State::Handshake => {
                self.connect(j, conns, now, done);
                if self.links[j].state != State::Open {
                    return;
                }
            }
            State::Open => {}
        }
        if !self.read(j, ev.closed, conns, buf, now, done) {
            return;
        }
        self.write(j, conns, done);
        let link = &self.links[j];
        let Some(s) = link.session.as_ref().filter(|_| link.state == State::Open) else { return };
        if !s.alive() {
            // The session is over: nghttp2 ended it over the server's frames
            // (its GOAWAY is written above), or GOAWAY went both ways.
            match s.fault().map(|f| format!("not valid HTTP/2: {f}")) {
                Some(why) => self.fail_link(j, ErrorKind::Exception, &why, conns, done),
                None => self.fail_link(j, ErrorKind::Receive, "the server ended the HTTP/2 session", conns, done),
            }
        }
    }

    fn flush(&mut self, conns: &mut [Conn], _: Instant, done: &mut Vec<(usize, Step)>) {
        while let Some(j) = self.queued.pop() {
            if self.links[j].queued {
                self.write(j, conns, done);
            }
        }
    }

    fn finish(&mut self, stats: &mut Stats) {
        for j in 0..self.links.len() {
            self.end_link(j);
        }
        stats.connections_opened += self.counts.connections;
        stats.sent_bytes += self.sent_bytes;
        stats.http2 = Some(std::mem::take(&mut self.counts));
    }
}
