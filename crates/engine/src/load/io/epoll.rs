//! The epoll driver: an edge-triggered event loop (mio) with a timerfd for
//! wake-ups finer than epoll_wait's milliseconds, and a periodic one for
//! the worker's ticks, so that most waits need no timeout (see `TICK`).
//!
//! epoll wakes a waiting thread at the first ready socket; it has no wait
//! for several, as io_uring has. A lingering wait (`Driver::linger`)
//! therefore sleeps to its deadline outside epoll_wait, then takes what is
//! ready: the server's sends find no waiter to wake, and the responses
//! that came meanwhile are read together, each by its arrival stamp.

use std::io;
use std::time::Instant;

use mio::{Events, Poll, Token};

use super::timer::Timer;
use super::{Driver, Peer, TICK};
use crate::client::conn::{Conn, Step};
use crate::client::stamp::Wall;
use crate::workload::Requests;

const TIMER: Token = Token(usize::MAX);
const TICKER: Token = Token(usize::MAX - 1);
/// Events taken from the kernel per wait.
const EVENTS: usize = 1024;

pub(crate) struct Epoll {
    poll: Poll,
    timer: Timer,
    ticker: Timer,
    events: Events,
    /// The clocks as the last wait ended.
    pub(super) wall: Wall,
    /// Where the next wait sleeps to before it looks (`Driver::linger`).
    linger_until: Option<Instant>,
    /// Whether this thread's timer slack is already minimal (`linger`).
    exact_sleeps: bool,
}

impl Epoll {
    pub(crate) fn new() -> io::Result<Epoll> {
        let poll = Poll::new()?;
        let timer = Timer::new(poll.registry(), TIMER)?;
        let ticker = Timer::periodic(poll.registry(), TICKER, TICK)?;
        let events = Events::with_capacity(EVENTS);
        Ok(Epoll { poll, timer, ticker, events, wall: Wall::read(), linger_until: None, exact_sleeps: false })
    }

    pub(super) fn registry(&self) -> &mio::Registry {
        self.poll.registry()
    }
}

/// A slot's socket was ready; `closed` is the event's read-closed flag.
#[derive(Clone, Copy)]
pub(crate) struct Ready {
    /// The token: a slot's, or an HTTP/2 connection's.
    pub(super) slot: usize,
    pub(super) closed: bool,
}

impl Driver for Epoll {
    type Event = Ready;
    const NAME: &'static str = "epoll";

    fn capacity(&self) -> usize {
        EVENTS
    }

    fn wait(&mut self, events: &mut Vec<Ready>, until: Instant, tick: Instant, now: Instant) -> io::Result<()> {
        let mut wait = None;
        if let Some(by) = self.linger_until.take().filter(|&by| by > now && by <= until) {
            // The hold ends at its deadline, not at a count of responses:
            // epoll cannot count them without waking for each. (The clock
            // is read again: the turn may have begun many requests since.)
            let hold = by.saturating_duration_since(Instant::now());
            if !hold.is_zero() {
                std::thread::sleep(hold);
            }
            wait = Some(std::time::Duration::ZERO);
        } else if until <= now {
            wait = Some(std::time::Duration::ZERO);
        } else if until < tick {
            self.timer.arm(until, now);
        }
        let polled = self.poll.poll(&mut self.events, wait);
        self.wall = Wall::read();
        if let Err(e) = polled {
            return match e.kind() {
                io::ErrorKind::Interrupted => Ok(()),
                _ => Err(e),
            };
        }
        for ev in self.events.iter() {
            match ev.token() {
                TIMER => self.timer.fired(),
                TICKER => self.ticker.fired(),
                Token(slot) => events.push(Ready { slot, closed: ev.is_read_closed() || ev.is_error() }),
            }
        }
        Ok(())
    }

    fn linger(&mut self, _want: usize, by: Instant) {
        if !self.exact_sleeps {
            // A sleep ends up to the thread's timer slack (50 µs by default)
            // late; io_uring's timed waits have none, and a hold is a share
            // of the response time, which may be shorter than that slack.
            // SAFETY: PR_SET_TIMERSLACK takes a value and touches no memory.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
            self.exact_sleeps = true;
        }
        self.linger_until = Some(by);
    }

    fn begin(&mut self, _: usize, c: &mut Conn, peer: &Peer<'_>, request: &[u8], _: Instant) -> Step {
        c.begin(peer.addr, peer.tls, self.poll.registry(), request)
    }

    fn advance(
        &mut self,
        ev: Ready,
        conns: &mut [Conn],
        buf: &mut [u8],
        requests: &Requests,
        now: Instant,
        done: &mut Vec<(usize, Step)>,
    ) {
        let c = &mut conns[ev.slot];
        let req = requests.get(c.entry.request);
        done.push((ev.slot, c.ready(now, &self.wall, buf, req.bytes, req.head, ev.closed)));
    }
}
