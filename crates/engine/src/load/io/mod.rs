//! How a worker's sockets reach the kernel: epoll (readiness, then a read
//! or a write per socket, as wrk does) or io_uring (completions: the sends,
//! receives and connects of many sockets in one system call). The worker's
//! loop, pacing and measurement are the same over both; a `Driver` turns
//! kernel events into the steps of a connection slot.

mod bufring;
mod epoll;
mod h2;
mod timer;
mod uring;

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::client::conn::{Conn, Step};
use crate::client::h2::request::H2Request;
use crate::client::transport::TlsContext;
use crate::config::{IoBackend, LoadConfig};
use crate::error::{EngineError, Result};
use crate::measure::stats::Stats;
use crate::workload::Requests;

pub(crate) use epoll::Epoll;
pub(crate) use h2::H2;
pub use uring::io_uring_support;
pub(crate) use uring::Uring;

/// How often the worker checks timeouts and publishes progress. The
/// drivers keep a periodic wake-up of this period in the kernel, so a wait
/// with nothing due before the worker's next tick needs no timeout. A
/// closed loop sleeps about once per response, and a sleep with a timeout
/// programs and cancels a timer (on a VM, presumably exits to the
/// hypervisor); docs/benchmarks.md has what leaving it out measured.
pub(crate) const TICK: Duration = Duration::from_millis(10);

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
    /// When `until` is `tick`, the wait may end at a later tick (up to one
    /// `TICK` late): nothing but the periodic checks is due then.
    fn wait(&mut self, events: &mut Vec<Self::Event>, until: Instant, tick: Instant, now: Instant) -> io::Result<()>;

    /// Lets the next wait sleep on until `want` completions are in, up to
    /// `by`, instead of waking for the first: fewer wake-ups for the same
    /// responses, whose arrival stamps keep them exact (`client::stamp`).
    /// io_uring wakes at `want` completions or `by`; epoll sleeps to `by`
    /// (it cannot count completions without waking); HTTP/2 does not hold.
    fn linger(&mut self, _want: usize, _by: Instant) {}

    /// Starts the prepared request of slot `i`: connects, or sends on the
    /// slot's open connection.
    fn begin(&mut self, i: usize, c: &mut Conn, peer: &Peer<'_>, request: &[u8], now: Instant) -> Step;

    /// Moves the slots an event concerns, at `now` (read once per event),
    /// pushing each step to `done`: one slot's for a socket of HTTP/1.x,
    /// any of a connection's streams for HTTP/2, none for a stale completion.
    fn advance(
        &mut self,
        ev: Self::Event,
        conns: &mut [Conn],
        buf: &mut [u8],
        requests: &Requests,
        now: Instant,
        done: &mut Vec<(usize, Step)>,
    );

    /// Writes what the requests begun since the last wait queued, before
    /// the worker waits again; steps of slots that fails go to `done`.
    /// (HTTP/2 frames a turn's requests into one write per connection.)
    fn flush(&mut self, _conns: &mut [Conn], _now: Instant, _done: &mut Vec<(usize, Step)>) {}

    /// Adds what only the driver counted to the worker's figures, at its end.
    fn finish(&mut self, _stats: &mut Stats) {}

    /// True when the driver counts the bytes sent itself (in `finish`):
    /// HTTP/2's on the wire differ from the prepared HTTP/1.1 request's.
    const COUNTS_SENT_BYTES: bool = false;
}

/// Whether the load runs on io_uring; an error when `io = "uring"` cannot
/// be had (checked before the run, with the other settings).
pub(crate) fn uses_uring(config: &LoadConfig, tls: bool) -> Result<bool> {
    let refuse = |reason: String| Err(EngineError::BadConfig { key: "io", reason });
    if config.http2() {
        // HTTP/2 runs on epoll (validate refuses `io = "uring"` with it).
        return Ok(false);
    }
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
    /// HTTP/2 streams over epoll.
    H2(Box<H2>),
}

impl EventLoop {
    /// One driver per worker, all of the backend `config.io` asks for: with
    /// `auto`, io_uring when it works here and the target is plain HTTP.
    pub(crate) fn for_workers(
        config: &LoadConfig,
        tls: bool,
        connections: &[usize],
        requests: &Requests,
    ) -> Result<Vec<EventLoop>> {
        let uring = uses_uring(config, tls)?;
        let descriptors = |e: io::Error| match e.raw_os_error() {
            Some(libc::EMFILE | libc::ENFILE) => EngineError::Descriptors { threads: connections.len(), source: e },
            _ => EngineError::Io(e),
        };
        if config.http2() {
            let h2 = |&n: &usize| -> Result<EventLoop> {
                let restated: std::result::Result<Vec<H2Request>, String> =
                    requests.iter().map(|r| H2Request::from_http1(r.bytes, tls)).collect();
                let restated = restated.map_err(|reason| EngineError::BadConfig { key: "http_version", reason })?;
                let streams = config.streams as usize;
                Ok(EventLoop::H2(Box::new(H2::new(n, streams, restated).map_err(descriptors)?)))
            };
            return connections.iter().map(h2).collect();
        }
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

    /// Whether this driver can hold responses for later ones (`Driver::linger`).
    pub(crate) fn lingers(&self) -> bool {
        matches!(self, EventLoop::Uring(_) | EventLoop::Epoll(_))
    }

    pub(crate) fn name(&self) -> &'static str {
        match self {
            EventLoop::Epoll(_) => Epoll::NAME,
            EventLoop::Uring(_) => Uring::NAME,
            EventLoop::H2(_) => H2::NAME,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::time::Duration;

    use mio::Token;

    use super::*;
    use crate::client::conn::Phase;

    const SERVER_DELAY: Duration = Duration::from_millis(50);
    const READ_LATE: Duration = Duration::from_millis(250);

    /// The latency a driver measures for a response the server sends
    /// `SERVER_DELAY` after the request, read `READ_LATE` after sending.
    fn latency_read_late<D: Driver>(mut d: D) -> Duration {
        let (addr, server) = answering_after(vec![SERVER_DELAY]);
        let request = b"GET / HTTP/1.1\r\nHost: test\r\n\r\n".to_vec();
        let requests = Requests::one(&request, "GET", "/");
        let peer = Peer { addr, tls: None };
        d.start().unwrap();
        let now = Instant::now();
        let mut conns = vec![Conn::new(Token(0), now)];
        conns[0].prepare(now, now, now + Duration::from_secs(5));
        let _ = d.begin(0, &mut conns[0], &peer, requests.get(0).bytes, now);
        let (mut events, mut done, mut buf) = (Vec::new(), Vec::new(), vec![0u8; 4096]);
        let mut turn = |d: &mut D, conns: &mut [Conn], wait_s: f64| {
            let now = Instant::now();
            let until = now + Duration::from_secs_f64(wait_s);
            events.clear();
            d.wait(&mut events, until, until, now).unwrap();
            for &ev in &events {
                d.advance(ev, conns, &mut buf, &requests, Instant::now(), &mut done);
            }
            done.drain(..).any(|(_, s)| matches!(s, Step::Done))
        };
        while conns[0].phase != Phase::Reading {
            assert!(!turn(&mut d, &mut conns, 0.1));
            assert!(now.elapsed() < Duration::from_secs(5), "no connection");
        }
        // io_uring submits the queued send with the next wait.
        assert!(!turn(&mut d, &mut conns, 0.0));
        std::thread::sleep(READ_LATE);
        while !turn(&mut d, &mut conns, 0.1) {
            assert!(now.elapsed() < Duration::from_secs(5), "no response");
        }
        let t = &conns[0].times;
        let latency = t.last_byte.unwrap() - t.sent;
        conns[0].close();
        server.join().unwrap();
        latency
    }

    fn assert_stamped(latency: Duration) {
        assert!(
            latency >= SERVER_DELAY && latency < SERVER_DELAY + READ_LATE / 2,
            "measured {latency:?}: the response was sent after {SERVER_DELAY:?} and read after {READ_LATE:?}"
        );
    }

    #[test]
    fn epoll_times_responses_by_their_arrival() {
        assert_stamped(latency_read_late(Epoll::new().unwrap()));
    }

    #[test]
    fn io_uring_times_responses_by_their_arrival() {
        if let Err(why) = io_uring_support() {
            eprintln!("skipped: io_uring is not available here ({why})");
            return;
        }
        assert_stamped(latency_read_late(Uring::new(1).unwrap()));
    }

    /// A server whose k-th accepted connection answers its request after
    /// `delays[k]`, then holds the connection open until the client is done.
    fn answering_after(delays: Vec<Duration>) -> (std::net::SocketAddr, std::thread::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let answers: Vec<_> = delays
                .into_iter()
                .map(|delay| {
                    let (mut s, _) = listener.accept().unwrap();
                    std::thread::spawn(move || {
                        let (mut got, mut buf) = (Vec::new(), [0u8; 256]);
                        while !got.ends_with(b"\r\n\r\n") {
                            let n = s.read(&mut buf).unwrap();
                            assert!(n > 0, "the client closed before its request");
                            got.extend_from_slice(&buf[..n]);
                        }
                        std::thread::sleep(delay);
                        s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").unwrap();
                        let _ = s.read(&mut buf);
                    })
                })
                .collect();
            answers.into_iter().for_each(|a| a.join().unwrap());
        });
        (addr, server)
    }

    /// Two requests, answered after `delays`; once both are sent, one wait
    /// that may hold (`linger`: completions wanted, for how long). Returns
    /// how long the wait took and the responses it brought, or None where a
    /// response came before it (a machine so busy that connecting took
    /// longer than the faster answer).
    fn one_wait<D: Driver>(
        make: &dyn Fn() -> D,
        delays: [Duration; 2],
        linger: Option<(usize, Duration)>,
    ) -> Option<(Duration, usize)> {
        let (addr, server) = answering_after(delays.to_vec());
        let mut d = make();
        let request = b"GET / HTTP/1.1\r\nHost: test\r\n\r\n".to_vec();
        let requests = Requests::one(&request, "GET", "/");
        let peer = Peer { addr, tls: None };
        let start = Instant::now();
        let mut conns = vec![Conn::new(Token(0), start), Conn::new(Token(1), start)];
        let (mut events, mut done, mut buf) = (Vec::new(), Vec::new(), vec![0u8; 4096]);
        let mut turn = |d: &mut D, conns: &mut [Conn], wait: Duration| {
            let now = Instant::now();
            events.clear();
            d.wait(&mut events, now + wait, now + wait, now).unwrap();
            for &ev in &events {
                d.advance(ev, conns, &mut buf, &requests, Instant::now(), &mut done);
            }
            done.drain(..).filter(|(_, s)| matches!(s, Step::Done)).count()
        };
        for (i, c) in conns.iter_mut().enumerate() {
            c.prepare(start, start, start + Duration::from_secs(10));
            let _ = d.begin(i, c, &peer, requests.get(0).bytes, start);
        }
        let mut early = 0;
        while conns.iter().any(|c| c.phase != Phase::Reading) {
            early += turn(&mut d, &mut conns, Duration::from_millis(10));
            assert!(start.elapsed() < Duration::from_secs(5), "no connection");
        }
        // The sends still queued go with this wait.
        let now = Instant::now();
        if let Some((want, hold)) = linger {
            d.linger(want, now + hold);
        }
        let got = turn(&mut d, &mut conns, Duration::from_secs(5));
        let waited = now.elapsed();
        conns.iter_mut().for_each(Conn::close);
        server.join().unwrap();
        (early == 0).then_some((waited, got))
    }

    /// `one_wait`, tried until no response comes before the wait (3 tries).
    fn wait_once<D: Driver>(
        make: &dyn Fn() -> D,
        delays: [Duration; 2],
        linger: Option<(usize, Duration)>,
    ) -> (Duration, usize) {
        (0..3).find_map(|_| one_wait(make, delays, linger)).expect("a response came before the wait, 3 times")
    }

    /// io_uring without its periodic tick, whose completion would end a
    /// wait by itself.
    fn uring() -> Uring {
        let mut d = Uring::new(2).unwrap();
        d.start_quiet().unwrap();
        d
    }

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn io_uring_wakes_at_the_first_response_unless_it_lingers() {
        if let Err(why) = io_uring_support() {
            eprintln!("skipped: io_uring is not available here ({why})");
            return;
        }
        // Not holding: the faster response ends the wait, long before the other.
        let (waited, got) = wait_once(&uring, [MS * 200, MS * 2500], None);
        assert!(got == 1 && waited < MS * 2000, "{got} responses after {waited:?}");
        // Wanting two completions (the two responses): it sleeps through the first.
        let (waited, got) = wait_once(&uring, [MS * 200, MS * 800], Some((2, MS * 4000)));
        assert!(got == 2 && waited >= MS * 600, "{got} responses after {waited:?}");
        // Until its deadline, no longer: the slower response is not waited for.
        let (waited, got) = wait_once(&uring, [MS * 200, MS * 2500], Some((2, MS * 400)));
        assert!(got == 1 && waited >= MS * 360 && waited < MS * 2000, "{got} responses after {waited:?}");
    }

    #[test]
    fn epoll_lingers_to_its_deadline_through_responses_and_ticks() {
        let epoll = || Epoll::new().unwrap();
        // Not the first response, nor the periodic tick (every 10 ms), ends
        // a lingering wait: it takes both responses at its deadline.
        let (waited, got) = wait_once(&epoll, [MS * 50, MS * 150], Some((2, MS * 1500)));
        assert!(got == 2 && waited >= MS * 1450, "{got} responses after {waited:?}");
        // At its deadline it takes what came, without waiting for more.
        let (waited, got) = wait_once(&epoll, [MS * 50, MS * 2500], Some((2, MS * 400)));
        assert!(got == 1 && waited >= MS * 360 && waited < MS * 2000, "{got} responses after {waited:?}");
    }
}
