//! The async model: an edge-triggered event loop (mio) per thread, every
//! thread accepting from the one listening socket.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

use super::exchange::{answer_h2, handle, Ctx, Handled, Local, Outgoing};
use super::h2;
use super::http::Response;
use super::tls::Wire;

const LISTENER: Token = Token(usize::MAX);
const TICK: Duration = Duration::from_millis(100);
const READ_CHUNK: usize = 16 * 1024;

struct Conn {
    /// The socket, or TLS over it (`--tls`).
    stream: Wire<TcpStream>,
    peer: Option<SocketAddr>,
    buf: Vec<u8>,
    out: Option<(Outgoing, bool, usize)>,
    due: Option<Instant>,
    last_active: Instant,
    /// Set once the first bytes were the HTTP/2 preface.
    h2: Option<Box<H2Conn>>,
}

/// An HTTP/2 connection's state in the loop: its session, the bytes it
/// queued that the socket has not taken, and the responses whose pause
/// (the sleep page) has not ended, each on its own stream.
struct H2Conn {
    session: h2::Connection,
    out: Vec<u8>,
    written: usize,
    delayed: Vec<(Instant, i32, Response, bool)>,
}

pub(crate) struct EventLoop<'a> {
    ctx: &'a Ctx,
    stop: &'a AtomicBool,
    local: Local,
    poll: Poll,
    listener: TcpListener,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    timers: BinaryHeap<Reverse<(Instant, usize)>>,
    chunk: Vec<u8>,
}

impl<'a> EventLoop<'a> {
    pub(crate) fn new(
        listener: std::net::TcpListener,
        ctx: &'a Ctx,
        stop: &'a AtomicBool,
        local: Local,
    ) -> io::Result<Self> {
        listener.set_nonblocking(true)?;
        let mut listener = TcpListener::from_std(listener);
        let poll = Poll::new()?;
        poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
        Ok(EventLoop {
            ctx,
            stop,
            local,
            poll,
            listener,
            conns: Vec::new(),
            free: Vec::new(),
            timers: BinaryHeap::new(),
            chunk: vec![0; READ_CHUNK],
        })
    }

    pub(crate) fn run(mut self) {
        let mut events = Events::with_capacity(1024);
        let mut next_tick = Instant::now() + TICK;
        while !self.stop.load(Ordering::Relaxed) {
            if let Some(end) = self.ctx.stall.and_then(|s| s.ends_at(Instant::now())) {
                std::thread::sleep(end.saturating_duration_since(Instant::now()));
            }
            let now = Instant::now();
            let mut wait = next_tick.saturating_duration_since(now);
            if let Some(Reverse((due, _))) = self.timers.peek() {
                wait = wait.min(due.saturating_duration_since(now));
            }
            if let Err(e) = self.poll.poll(&mut events, Some(wait)) {
                if e.kind() != io::ErrorKind::Interrupted {
                    break;
                }
            }
            for ev in events.iter() {
                match ev.token() {
                    LISTENER => self.accept(),
                    Token(i) => self.drive(i),
                }
            }
            self.fire_timers();
            if Instant::now() >= next_tick {
                self.close_idle();
                if let Some(l) = &mut self.local.log {
                    l.flush();
                }
                next_tick = Instant::now() + TICK;
            }
        }
    }

    fn accept(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let Ok(mut stream) = Wire::new(stream, self.ctx.tls.as_ref()) else { continue };
                    let i = self.free.pop().unwrap_or_else(|| {
                        self.conns.push(None);
                        self.conns.len() - 1
                    });
                    if self
                        .poll
                        .registry()
                        .register(stream.socket(), Token(i), Interest::READABLE | Interest::WRITABLE)
                        .is_err()
                    {
                        self.free.push(i);
                        continue;
                    }
                    self.conns[i] = Some(Conn {
                        stream,
                        peer: Some(peer),
                        buf: Vec::new(),
                        out: None,
                        due: None,
                        last_active: Instant::now(),
                        h2: None,
                    });
                    self.drive(i);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                // Out of descriptors or a connection reset before accept: try on the next event.
                Err(_) => return,
            }
        }
    }

    fn close(&mut self, i: usize) {
        if self.conns[i].take().is_some() {
            self.free.push(i);
        }
    }

    /// Reads what arrived, then answers every complete request in order.
    fn drive(&mut self, i: usize) {
        let Some(c) = self.conns[i].as_mut() else { return };
        // TLS records a full socket held back (handshake, a response's end).
        if c.stream.flush_tls().is_err() {
            return self.close(i);
        }
        loop {
            match c.stream.read(&mut self.chunk) {
                Ok(0) => return self.close(i),
                Ok(n) => c.buf.extend_from_slice(&self.chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return self.close(i),
            }
        }
        c.last_active = Instant::now();
        if c.h2.is_none() && c.out.is_none() && c.due.is_none() {
            match h2::speaks_h2(&c.buf) {
                Some(true) => match h2::Connection::new() {
                    Ok(session) => {
                        c.h2 = Some(Box::new(H2Conn { session, out: Vec::new(), written: 0, delayed: Vec::new() }))
                    }
                    Err(_) => return self.close(i),
                },
                Some(false) => {}
                None => return,
            }
        }
        match c.h2.is_some() {
            true => self.answer_h2(i),
            false => self.answer(i),
        }
    }

    /// Feeds what arrived to the connection's HTTP/2 session, answers the
    /// requests it completed (or sets their pause), and writes.
    fn answer_h2(&mut self, i: usize) {
        let Some(c) = self.conns[i].as_mut() else { return };
        let link = c.h2.as_mut().expect("an HTTP/2 connection");
        let ok = link.session.receive(&c.buf).is_ok();
        c.buf.clear();
        let now = Instant::now();
        let ready: Vec<h2::Request> = link.session.ready().collect();
        for r in ready {
            let response = answer_h2(self.ctx, &r, c.peer, &mut self.local);
            let head = r.method == b"HEAD";
            match response.delay {
                Some(d) => {
                    link.delayed.push((now + d.length, r.stream, response, head));
                    self.timers.push(Reverse((now + d.length, i)));
                }
                None => link.session.respond(r.stream, response, head),
            }
        }
        self.flush_h2(i, ok);
    }

    /// Writes the session's frames; closes the connection once the session
    /// is over (a GOAWAY, sent or received) and all is written.
    fn flush_h2(&mut self, i: usize, ok: bool) {
        let Some(c) = self.conns[i].as_mut() else { return };
        let link = c.h2.as_mut().expect("an HTTP/2 connection");
        if link.written == link.out.len() {
            link.out.clear();
            link.written = 0;
        }
        if link.session.send(&mut link.out).is_err() {
            return self.close(i);
        }
        while link.written < link.out.len() {
            match c.stream.write(&link.out[link.written..]) {
                Ok(0) => return self.close(i),
                Ok(n) => link.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.close(i),
            }
        }
        if !ok || (!link.session.alive() && link.delayed.is_empty()) {
            self.close(i);
        }
    }

    fn answer(&mut self, i: usize) {
        loop {
            let Some(c) = self.conns[i].as_mut() else { return };
            if c.due.is_some() {
                return;
            }
            if c.out.is_none() {
                match handle(self.ctx, &c.buf, c.peer, &mut self.local) {
                    Handled::NeedMore => return,
                    Handled::Respond { out, keep_alive, delay, consumed } => {
                        c.out = Some((out, keep_alive, consumed));
                        if let Some(d) = delay {
                            let due = Instant::now() + d.length;
                            c.due = Some(due);
                            self.timers.push(Reverse((due, i)));
                            return;
                        }
                    }
                }
            }
            let (out, keep_alive, consumed) = c.out.as_mut().expect("a response to send");
            match out.write_to(&mut c.stream) {
                Ok(true) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                _ => return self.close(i),
            }
            let (keep_alive, consumed) = (*keep_alive, *consumed);
            c.out = None;
            if !keep_alive {
                return self.close(i);
            }
            c.buf.drain(..consumed.min(c.buf.len()));
        }
    }

    fn fire_timers(&mut self) {
        let now = Instant::now();
        while let Some(&Reverse((due, i))) = self.timers.peek() {
            if due > now {
                break;
            }
            self.timers.pop();
            if let Some(c) = self.conns[i].as_mut() {
                if let Some(link) = c.h2.as_mut() {
                    let (now_due, later): (Vec<_>, Vec<_>) = link.delayed.drain(..).partition(|d| d.0 <= now);
                    link.delayed = later;
                    for (_, stream, response, head) in now_due {
                        link.session.respond(stream, response, head);
                    }
                    self.flush_h2(i, true);
                } else if c.due == Some(due) {
                    c.due = None;
                    self.answer(i);
                }
            }
        }
    }

    fn close_idle(&mut self) {
        let limit = self.ctx.keep_alive_timeout;
        for i in 0..self.conns.len() {
            let idle = self.conns[i].as_ref().is_some_and(|c| {
                let quiet = c.h2.as_ref().is_none_or(|l| l.delayed.is_empty() && !l.session.busy());
                c.out.is_none() && c.due.is_none() && quiet && c.last_active.elapsed() > limit
            });
            if idle {
                self.close(i);
            }
        }
    }
}
