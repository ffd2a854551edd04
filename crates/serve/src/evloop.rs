//! The async model: an edge-triggered event loop (mio) per thread, every
//! thread accepting from the one listening socket.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{self, Read};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

use super::exchange::{handle, Ctx, Handled, Local, Outgoing};

const LISTENER: Token = Token(usize::MAX);
const TICK: Duration = Duration::from_millis(100);
const READ_CHUNK: usize = 16 * 1024;

struct Conn {
    stream: TcpStream,
    peer: Option<SocketAddr>,
    buf: Vec<u8>,
    out: Option<(Outgoing, bool, usize)>,
    due: Option<Instant>,
    last_active: Instant,
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
                Ok((mut stream, peer)) => {
                    let i = self.free.pop().unwrap_or_else(|| {
                        self.conns.push(None);
                        self.conns.len() - 1
                    });
                    let _ = stream.set_nodelay(true);
                    if self
                        .poll
                        .registry()
                        .register(&mut stream, Token(i), Interest::READABLE | Interest::WRITABLE)
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
        self.answer(i);
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
                            let due = Instant::now() + d;
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
                if c.due == Some(due) {
                    c.due = None;
                    self.answer(i);
                }
            }
        }
    }

    fn close_idle(&mut self) {
        let limit = self.ctx.keep_alive_timeout;
        for i in 0..self.conns.len() {
            let idle = self.conns[i]
                .as_ref()
                .is_some_and(|c| c.out.is_none() && c.due.is_none() && c.last_active.elapsed() > limit);
            if idle {
                self.close(i);
            }
        }
    }
}
