//! Small purpose-built HTTP servers for the engine's tests, on free loopback
//! ports, each answering with a fixed script of bytes; and the transports
//! every engine test runs on (`on_each_io!`).

use std::cell::Cell;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use corebench_engine::{io_uring_support, Control, EngineError, IoBackend, LoadConfig, LoadResult};

/// Each test given, once on epoll and once on io_uring: `NAME::epoll` and
/// `NAME::io_uring`. Its loads go through this module's `run`, `run_with`
/// and `within`, which put them on the case's transport and check that the
/// result names it.
#[macro_export]
macro_rules! on_each_io {
    ($($(#[$meta:meta])* fn $name:ident() $body:block)*) => {$(
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            fn body() $body
            #[test]
            $(#[$meta])*
            fn epoll() {
                $crate::server::with_io(corebench_engine::IoBackend::Epoll, body)
            }
            #[test]
            $(#[$meta])*
            fn io_uring() {
                $crate::server::with_io(corebench_engine::IoBackend::Uring, body)
            }
        }
    )*};
}

thread_local! {
    static IO: Cell<IoBackend> = const { Cell::new(IoBackend::Auto) };
}

/// Runs `body` with this thread's loads on `io`. Where the kernel refuses
/// io_uring, its case says so and passes: the fallback has its own test.
#[allow(dead_code)] // each test binary compiles this module; not all use it
pub fn with_io(io: IoBackend, body: fn()) {
    if io == IoBackend::Uring {
        if let Err(why) = io_uring_support() {
            eprintln!("not run on io_uring, unavailable here: {why}");
            return;
        }
    }
    IO.with(|c| c.set(io));
    body();
}

/// `cfg` on this thread's transport.
#[allow(dead_code)] // each test binary compiles this module; not all use it
pub fn on_io(cfg: &LoadConfig) -> LoadConfig {
    LoadConfig { io: IO.with(Cell::get), ..cfg.clone() }
}

fn ran_on(io: IoBackend, r: &LoadResult) {
    expect_io(io, r.run.io);
}

/// Fails unless a load asked to run on `io` ran on `name`.
pub fn expect_io(io: IoBackend, name: &str) {
    let want = match io {
        IoBackend::Epoll => "epoll",
        IoBackend::Uring => "io_uring",
        IoBackend::Auto => return,
    };
    assert_eq!(name, want, "the load ran on {name}, not on the {want} asked for");
}

#[allow(dead_code)] // each test binary compiles this module; not all use it
pub fn run(cfg: &LoadConfig) -> Result<LoadResult, EngineError> {
    run_with(cfg, &Control::default())
}

#[allow(dead_code)] // each test binary compiles this module; not all use it
pub fn run_with(cfg: &LoadConfig, control: &Control) -> Result<LoadResult, EngineError> {
    let cfg = on_io(cfg);
    let r = corebench_engine::run_with(&cfg, control);
    if let Ok(r) = &r {
        ran_on(cfg.io, r);
    }
    r
}

pub struct TestServer {
    pub url: String,
    #[allow(dead_code)] // each test binary compiles this module; not all read it
    pub requests: Arc<AtomicU64>,
    /// The request line of every request received, in arrival order.
    #[allow(dead_code)] // each test binary compiles this module; not all read it
    pub lines: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// What the server does with each request head it reads.
#[derive(Clone, Copy)]
#[allow(dead_code)] // each test binary compiles this module; not all use every reply
pub enum Reply {
    /// Sends these bytes; keeps the connection open when `keep` is set.
    Bytes(&'static [u8], bool),
    /// Reads the request and never answers.
    Silent,
    /// Answers (without Connection: close), then closes its side and reads
    /// and discards whatever comes, as Apache's lingering close does.
    Linger(&'static [u8]),
    /// Answers with the first bytes, then, 20 ms later and unasked, sends
    /// the second on the idle connection (a 408, as some servers send
    /// before closing an idle keep-alive connection) and keeps it open.
    Stale(&'static [u8], &'static [u8]),
    /// Answers after a delay, then closes (a slow server without keep-alive).
    After(&'static [u8], Duration),
}

/// Reads one request head; returns its request line.
fn read_head(s: &mut TcpStream, buf: &mut Vec<u8>, stop: &AtomicBool) -> Option<String> {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head: Vec<u8> = buf.drain(..end + 4).collect();
            let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
            return Some(String::from_utf8_lossy(line).into_owned());
        }
        match s.read(&mut chunk) {
            Ok(0) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {
                if stop.load(Ordering::SeqCst) {
                    return None;
                }
            }
            Err(_) => return None,
        }
    }
}

pub fn start(reply: Reply) -> TestServer {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    listener.set_nonblocking(true).unwrap();
    let requests = Arc::new(AtomicU64::new(0));
    let lines = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let (r, st, seen) = (requests.clone(), stop.clone(), lines.clone());
    thread::spawn(move || {
        while !st.load(Ordering::SeqCst) {
            let Ok((mut s, _)) = listener.accept() else {
                thread::sleep(Duration::from_millis(1));
                continue;
            };
            let (r, st, seen) = (r.clone(), st.clone(), seen.clone());
            thread::spawn(move || {
                s.set_nonblocking(false).unwrap();
                s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
                let mut buf = Vec::new();
                while let Some(line) = read_head(&mut s, &mut buf, &st) {
                    seen.lock().unwrap().push(line);
                    r.fetch_add(1, Ordering::SeqCst);
                    match reply {
                        Reply::Bytes(bytes, keep) => {
                            if s.write_all(bytes).is_err() || !keep {
                                return;
                            }
                        }
                        Reply::After(bytes, delay) => {
                            thread::sleep(delay);
                            let _ = s.write_all(bytes);
                            return;
                        }
                        Reply::Stale(bytes, stale) => {
                            if s.write_all(bytes).is_err() {
                                return;
                            }
                            thread::sleep(Duration::from_millis(20));
                            if s.write_all(stale).is_err() {
                                return;
                            }
                        }
                        Reply::Linger(bytes) => {
                            let _ = s.write_all(bytes);
                            let _ = s.shutdown(std::net::Shutdown::Write);
                            let mut sink = [0u8; 4096];
                            while !st.load(Ordering::SeqCst) {
                                match s.read(&mut sink) {
                                    Ok(0) => return,
                                    Ok(_) => {}
                                    Err(e)
                                        if e.kind() == std::io::ErrorKind::WouldBlock
                                            || e.kind() == std::io::ErrorKind::TimedOut => {}
                                    Err(_) => return,
                                }
                            }
                            return;
                        }
                        Reply::Silent => {
                            while !st.load(Ordering::SeqCst) {
                                thread::sleep(Duration::from_millis(5));
                            }
                            return;
                        }
                    }
                }
            });
        }
    });
    TestServer { url, requests, lines, stop }
}

/// A port with nothing listening on it.
#[allow(dead_code)] // each test binary compiles this module; not all use it
pub fn refused_url() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    format!("http://127.0.0.1:{port}/")
}

/// The run, in a thread of its own: a run that hangs fails the test after
/// `limit` instead of hanging the test binary.
#[allow(dead_code)] // each test binary compiles this module; not all use it
pub fn within(limit: Duration, cfg: LoadConfig, stop_after: Option<Duration>) -> (LoadResult, Duration) {
    let cfg = on_io(&cfg);
    let io = cfg.io;
    let (tx, rx) = std::sync::mpsc::channel();
    let t0 = Instant::now();
    thread::spawn(move || {
        let control = Control::default();
        let r = thread::scope(|s| {
            let h = s.spawn(|| corebench_engine::run_with(&cfg, &control));
            if let Some(after) = stop_after {
                thread::sleep(after);
                control.stop();
            }
            h.join().unwrap()
        });
        let _ = tx.send(r.unwrap());
    });
    let r = rx.recv_timeout(limit).unwrap_or_else(|_| panic!("the run did not end within {limit:?}"));
    ran_on(io, &r);
    (r, t0.elapsed())
}
