//! Descriptors running out in the middle of a run (its own test binary: the
//! open-file limit is the whole process's). Connections that cannot open
//! count as connect errors and the run still ends on time and on request;
//! it used to retry in place, past `-t` and deaf to a stop, forever.

mod server;

use std::time::{Duration, Instant};

use corebench_engine::{EngineError, LoadConfig};
use server::{run, start, within, Reply};

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// Descriptors open in this process; `u64::MAX` when none is left to read
/// the count with (the directory read needs one of its own).
fn open_descriptors() -> u64 {
    match std::fs::read_dir("/proc/self/fd") {
        Ok(fds) => fds.count() as u64,
        Err(e) if e.raw_os_error() == Some(libc::EMFILE) => u64::MAX,
        Err(e) => panic!("/proc/self/fd: {e}"),
    }
}

/// The descriptor count once it has stopped falling: the last case's server
/// closes its ends in its own threads after it is dropped, and a limit set
/// while they are still open would leave room for every connection.
fn settled_descriptors() -> u64 {
    let t0 = Instant::now();
    let (mut last, mut same) = (open_descriptors(), 0);
    while same < 10 && t0.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(20));
        let now = open_descriptors();
        same = if now == last { same + 1 } else { 0 };
        last = now;
    }
    last
}

/// Puts the soft open-file limit back when a case ends, also on a failed
/// assertion, so the next case counts and sets its own from the full room.
struct SoftLimit(libc::rlimit);

impl SoftLimit {
    fn lower_to(cur: u64) -> Self {
        let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        let saved = Self(lim);
        lim.rlim_cur = cur;
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0);
        saved
    }
}

impl Drop for SoftLimit {
    fn drop(&mut self) {
        unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &self.0) };
    }
}

// One test, on each transport in turn: the limit is the process's, so the
// two must not run side by side.
#[test]
fn descriptors_running_out_mid_run_are_errors_and_the_run_still_ends() {
    server::with_io(corebench_engine::IoBackend::Epoll, on_one_io);
    server::with_io(corebench_engine::IoBackend::Uring, on_one_io);
}

fn on_one_io() {
    let srv = start(Reply::Bytes(OK, true));
    // Room for about 12 connections, both ends in this process: 40 asked.
    let base = settled_descriptors();
    assert_ne!(base, u64::MAX, "no descriptor free to count with before the case began");
    let limit = base + 24;
    // The soft limit alone, so that the next transport's case can set its own.
    let _restore = SoftLimit::lower_to(limit);
    let cfg = |duration_s: f64, keep_alive: bool| LoadConfig {
        url: srv.url.clone(),
        concurrency: 40,
        duration_s: Some(duration_s),
        keep_alive,
        threads: 2,
        ..Default::default()
    };
    let settle = || {
        // The server's ends of the last run's connections close in its own
        // time; until they do, even the count may find no descriptor free.
        let t0 = Instant::now();
        while open_descriptors() > limit - 20 && t0.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    for keep_alive in [true, false] {
        settle();
        let (r, took) = within(Duration::from_secs(10), cfg(1.0, keep_alive), None);
        assert!(took < Duration::from_millis(3500), "keep-alive {keep_alive}: {took:?}");
        // The server here shares the process and its limit, so whether it
        // finds a descriptor to accept with varies: what is certain is that
        // the connections this side could not open are counted.
        assert!(r.errors.connect > 0, "keep-alive {keep_alive}: {:?}", r.errors);
    }
    settle();
    let (r, took) = within(Duration::from_secs(10), cfg(30.0, true), Some(Duration::from_millis(500)));
    assert!(took < Duration::from_millis(2000) && r.run.interrupted, "{took:?}");

    // Each thread needs an epoll and a timer before any request: with too
    // few descriptors left for them the run is refused, saying so (a limit
    // to raise, not a bug), before any connection.
    settle();
    let many = LoadConfig { threads: 64, concurrency: 64, ..cfg(1.0, true) };
    match run(&many).err() {
        Some(e @ EngineError::Descriptors { threads: 64, .. }) => {
            assert!(e.is_user_error() && e.to_string().contains("ulimit -n"), "{e}");
        }
        other => panic!("64 threads with about 24 descriptors: {other:?}"),
    }
}
