//! How a worker's sockets reach the kernel: epoll (readiness, then a read
//! or a write per socket, as wrk does) or io_uring (completions: the sends,
//! receives and connects of many sockets in one system call). The worker's
//! loop, pacing and measurement are the same over both; a `Driver` turns
//! kernel events into the steps of a connection slot.

mod bufring;
mod epoll;
mod timer;
mod uring;

use std::io;
use std::net::SocketAddr;
use std::time::Instant;

use crate::client::conn::{Conn, Step};
use crate::client::transport::TlsContext;
use crate::config::{IoBackend, LoadConfig};
use crate::error::{EngineError, Result};
use crate::workload::Prepared;

pub(crate) use epoll::Epoll;
pub use uring::io_uring_support;
pub(crate) use uring::Uring;

/// One worker's I/O. `Event` is what the kernel reported, copied out so
/// the worker can handle each in turn with its slots.
pub(crate) trait Driver {
    type Event: Copy;
    /// The name results give this transport.
    const NAME: &'static str;

    /// Readies the driver on the worker's own thread, before its first request.
    fn start(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// The most events one wait reports.
    fn capacity(&self) -> usize;

    /// Submits what is queued and waits for events until `until` (at once
    /// when it has passed); `tick` is the worker's next periodic check.
    fn wait(&mut self, events: &mut Vec<Self::Event>, until: Instant, tick: Instant, now: Instant) -> io::Result<()>;

    /// Starts the prepared request of slot `i`: connects, or sends on the
    /// slot's open connection.
    fn begin(&mut self, i: usize, c: &mut Conn, peer: &Peer<'_>, request: &[u8], now: Instant) -> Step;

    /// Moves the slot an event concerns, at `now` (read once per event);
    /// None for an event of no slot's (a stale completion).
    fn advance(
        &mut self,
        ev: Self::Event,
        conns: &mut [Conn],
        buf: &mut [u8],
        requests: &[Prepared],
        now: Instant,
    ) -> Option<(usize, Step)>;
}

/// Whether the load runs on io_uring; an error when `io = "uring"` cannot
/// be had (checked before the run, with the other settings).
pub(crate) fn uses_uring(config: &LoadConfig, tls: bool) -> Result<bool> {
    let refuse = |reason: String| Err(EngineError::BadConfig { key: "io", reason });
    match (config.io, tls) {
        (IoBackend::Epoll, _) | (IoBackend::Auto, true) => Ok(false),
        (IoBackend::Uring, true) => {
            refuse("io_uring takes plain http:// URLs; https:// runs on epoll (io = \"auto\" or \"epoll\")".into())
        }
        (IoBackend::Uring, false) => match io_uring_support() {
            Ok(()) => Ok(true),
            Err(why) => refuse(format!("io_uring is not available here ({why}): use io = \"auto\" or \"epoll\"")),
        },
        (IoBackend::Auto, false) => Ok(io_uring_support().is_ok()),
    }
}

/// What every worker connects to.
pub(crate) struct Peer<'a> {
    pub addr: SocketAddr,
    pub tls: Option<&'a TlsContext>,
}

/// A worker's driver, made for every worker before any starts: a process
/// near its descriptor limit then fails before the first request, not in a
/// worker whose siblings' connections took the last descriptors.
pub(crate) enum EventLoop {
    Epoll(Epoll),
    Uring(Box<Uring>),
}

impl EventLoop {
    /// One driver per worker, all of the backend `config.io` asks for: with
    /// `auto`, io_uring when it works here and the target is plain HTTP.
    pub(crate) fn for_workers(config: &LoadConfig, tls: bool, connections: &[usize]) -> Result<Vec<EventLoop>> {
        let uring = uses_uring(config, tls)?;
        let descriptors = |e: io::Error| match e.raw_os_error() {
            Some(libc::EMFILE | libc::ENFILE) => EngineError::Descriptors { threads: connections.len(), source: e },
            _ => EngineError::Io(e),
        };
        if uring {
            let rings: io::Result<Vec<EventLoop>> =
                connections.iter().map(|&n| Uring::new(n).map(|u| EventLoop::Uring(Box::new(u)))).collect();
            match rings {
                Ok(r) => return Ok(r),
                // Descriptors are descriptors whichever backend asks.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => return Err(descriptors(e)),
                Err(e) if config.io == IoBackend::Uring => {
                    return Err(EngineError::BadConfig {
                        key: "io",
                        reason: format!("io_uring could not be set up ({e}): use io = \"auto\" or \"epoll\""),
                    })
                }
                // Locked memory for the rings, say: auto falls back.
                Err(_) => {}
            }
        }
        connections
            .iter()
            .map(|_| Epoll::new().map(EventLoop::Epoll))
            .collect::<io::Result<Vec<_>>>()
            .map_err(descriptors)
    }

    pub(crate) fn name(&self) -> &'static str {
        match self {
            EventLoop::Epoll(_) => Epoll::NAME,
            EventLoop::Uring(_) => Uring::NAME,
        }
    }
}
