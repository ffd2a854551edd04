//! The built-in target server (`corebench serve`): the workloads of the
//! field reports behind three process models, so experiments need nothing
//! installed and the runner can pin the server to cores of its own.

#![warn(unreachable_pub)]

mod blocking;
mod clf;
mod config;
mod db;
mod error;
mod evloop;
mod exchange;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod h2;
mod http;
mod queue;
mod routes;
mod site;
mod tls;
mod work;

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

pub use config::{Model, ServeConfig};
pub use error::{Result, ServeError};
use exchange::{Ctx, Local, Stall};

/// This start's speed for `jitter` (1 without it): drawn once, from the
/// clock and the process id, so that every start differs.
fn start_speed(jitter: f64) -> f64 {
    if jitter == 0.0 {
        return 1.0;
    }
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
    let speed =
        SmallRng::seed_from_u64(nanos ^ u64::from(std::process::id())).random_range(1.0 - jitter..=1.0 + jitter);
    eprintln!(
        "corebench serve: jitter: this start's /dynamic work and /sleep pauses take {speed:.3} times what they ask"
    );
    speed
}

fn db_path(config: &ServeConfig) -> std::path::PathBuf {
    config.db_file.as_ref().map_or_else(|| db::default_path(config.db_articles), Into::into)
}

/// A worker's own log buffer and database connection; `index` seeds its
/// choice of articles.
fn local(config: &ServeConfig, index: u64) -> Result<Local> {
    let log = config
        .access_log
        .as_deref()
        .map(clf::AccessLog::open)
        .transpose()
        .map_err(|e| ServeError::BadConfig { key: "access_log", reason: e.to_string() })?;
    let db = (config.db_articles > 0)
        .then(|| db::Db::open(&db_path(config), config.db_articles, config.db_cache_kb, 0x9E37_79B9 + index * 7919))
        .transpose()
        .map_err(|e| ServeError::BadConfig { key: "db_file", reason: e.to_string() })?;
    Ok(Local { log, db })
}

/// A connection storm (1,000 clients connecting at once) overflows the
/// 128-entry queue std's `bind` asks for; the kernel caps this at somaxconn.
const LISTEN_BACKLOG: i32 = 65_535;

fn listen(host: &str, port: u16) -> std::io::Result<TcpListener> {
    use std::net::ToSocketAddrs;
    let addr = (host, port).to_socket_addrs()?.next().ok_or_else(|| std::io::Error::other("no address"))?;
    let socket = socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(LISTEN_BACKLOG)?;
    Ok(socket.into())
}

/// Binds, prepares the workloads, calls `on_ready` with the address, and
/// serves until `stop` is set. Prefork forks: call it only from a process
/// with a single thread (the `corebench serve` process).
pub fn serve(config: &ServeConfig, stop: &AtomicBool, on_ready: &dyn Fn(SocketAddr)) -> Result<()> {
    config.validate()?;
    let listener = listen(&config.host, config.port).map_err(|e| ServeError::BadConfig {
        key: "port",
        reason: format!("cannot listen on {}:{}: {e}", config.host, config.port),
    })?;
    let addr = listener.local_addr()?;
    // Made once, before any fork, so prefork processes share the pages.
    routes::static_bytes();
    let site = config
        .site_from_log
        .as_deref()
        .map(site::Site::load)
        .transpose()
        .map_err(|reason| ServeError::BadConfig { key: "site_from_log", reason })?;
    let site_summary = site.as_ref().map(|s| {
        let skipped: Vec<String> = s.skipped.iter().map(|(why, n)| format!("{n} {why}")).collect();
        format!(
            "{} paths from {} lines; skipped: {}",
            s.paths(),
            s.lines,
            if skipped.is_empty() { "none".into() } else { skipped.join(", ") }
        )
    });
    let ctx = Ctx {
        router: routes::Router {
            work: work::Work::calibrate().scaled(start_speed(config.jitter)),
            site,
            queue: queue::Queue::new(std::process::id().into()),
        },
        stall: config.stall().map(|(pause, every)| Stall { start: Instant::now(), pause, every }),
        keep_alive_timeout: Duration::from_secs_f64(config.keep_alive_timeout_s),
        tls: config
            .tls
            .then(tls::server_config)
            .transpose()
            .map_err(|reason| ServeError::BadConfig { key: "tls", reason })?,
    };
    if config.db_articles > 0 {
        db::ensure(&db_path(config), config.db_articles).map_err(|e| ServeError::BadConfig {
            key: "db_file",
            reason: format!("{}: {e}", db_path(config).display()),
        })?;
    }
    drop(local(config, 0)?); // fail before ready if the log or the database cannot be opened
    on_ready(addr);
    if let Some(summary) = site_summary {
        eprintln!("corebench serve: site from the log: {summary}");
    }
    match config.model {
        Model::Async => run_async(config, listener, &ctx, stop),
        Model::Threads => run_threads(config, listener, &ctx, stop),
        Model::Prefork => run_prefork(config, listener, &ctx, stop),
    }
}

fn run_async(config: &ServeConfig, listener: TcpListener, ctx: &Ctx, stop: &AtomicBool) -> Result<()> {
    std::thread::scope(|s| -> Result<()> {
        for i in 0..config.workers {
            let l = listener.try_clone()?;
            let ev = evloop::EventLoop::new(l, ctx, stop, local(config, u64::from(i))?)?;
            std::thread::Builder::new().name(format!("corebench-serve-{i}")).spawn_scoped(s, move || ev.run())?;
        }
        Ok(())
    })
}

/// One acceptor hands connections to a pool of blocking worker threads.
fn run_threads(config: &ServeConfig, listener: TcpListener, ctx: &Ctx, stop: &AtomicBool) -> Result<()> {
    let (tx, rx) = mpsc::channel::<std::net::TcpStream>();
    let rx = Mutex::new(rx);
    std::thread::scope(|s| -> Result<()> {
        for i in 0..config.workers {
            let mut local = local(config, u64::from(i))?;
            let rx = &rx;
            std::thread::Builder::new().name(format!("corebench-serve-{i}")).spawn_scoped(s, move || {
                let mut buf = Vec::with_capacity(16 * 1024);
                while !stop.load(Ordering::Relaxed) {
                    let next = rx.lock().map(|r| r.recv_timeout(Duration::from_millis(100)));
                    match next {
                        Ok(Ok(stream)) => {
                            blocking::serve_connection(stream, ctx, &mut local, stop, &mut buf);
                            if let Some(l) = &mut local.log {
                                l.flush();
                            }
                        }
                        Ok(Err(mpsc::RecvTimeoutError::Timeout)) => {}
                        _ => return,
                    }
                }
            })?;
        }
        accept_loop(&listener, stop, |stream| {
            let _ = tx.send(stream);
        });
        drop(tx);
        Ok(())
    })
}

/// Accepts until `stop`, waking at least every 100 ms to look at it.
fn accept_loop(listener: &TcpListener, stop: &AtomicBool, mut each: impl FnMut(std::net::TcpStream)) {
    let mut fds = [libc::pollfd { fd: std::os::fd::AsRawFd::as_raw_fd(listener), events: libc::POLLIN, revents: 0 }];
    let _ = listener.set_nonblocking(true);
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                let _ = stream.set_nonblocking(false);
                each(stream);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                // SAFETY: one valid pollfd, owned here.
                unsafe { libc::poll(fds.as_mut_ptr(), 1, 100) };
            }
            Err(_) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

/// N single-threaded processes sharing the listening socket, a connection
/// at a time each; the parent restarts a child that dies and ends them all
/// on `stop`.
fn run_prefork(config: &ServeConfig, listener: TcpListener, ctx: &Ctx, stop: &AtomicBool) -> Result<()> {
    let child = |listener: &TcpListener, index: u64| -> ! {
        // Opened after the fork: a SQLite connection must not cross one.
        let mut local = local(config, index).unwrap_or_default();
        let mut buf = Vec::with_capacity(16 * 1024);
        accept_loop(listener, stop, |stream| {
            blocking::serve_connection(stream, ctx, &mut local, stop, &mut buf);
            if let Some(l) = &mut local.log {
                l.flush();
            }
        });
        drop(local);
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(0) }
    };
    let mut forked = 0u64;
    let mut spawn = || -> Result<libc::pid_t> {
        forked += 1;
        // SAFETY: called from a single-threaded process (see `serve`); the
        // child only runs Rust code of this crate and then _exits.
        match unsafe { libc::fork() } {
            -1 => Err(ServeError::Io(std::io::Error::last_os_error())),
            0 => child(&listener, forked),
            pid => Ok(pid),
        }
    };
    let mut children = Vec::with_capacity(config.workers as usize);
    for _ in 0..config.workers {
        children.push(spawn()?);
    }
    let mut last_restart = Instant::now() - Duration::from_secs(1);
    while !stop.load(Ordering::Relaxed) {
        let mut status = 0;
        // SAFETY: waitpid on our own children, non-blocking.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid > 0 {
            if let Some(slot) = children.iter_mut().find(|p| **p == pid) {
                // A crashing child must not become a fork loop.
                std::thread::sleep(Duration::from_millis(100).saturating_sub(last_restart.elapsed()));
                last_restart = Instant::now();
                *slot = spawn()?;
            }
        } else {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    stop_children(&children);
    Ok(())
}

fn stop_children(children: &[libc::pid_t]) {
    for &pid in children {
        // SAFETY: signals to our own children.
        unsafe { libc::kill(pid, libc::SIGTERM) };
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut left: Vec<_> = children.to_vec();
    while !left.is_empty() && Instant::now() < deadline {
        left.retain(|&pid| unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) } == 0);
        std::thread::sleep(Duration::from_millis(10));
    }
    for &pid in &left {
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
    }
}

/// Set by SIGTERM and SIGINT once `install_signal_handlers` ran.
pub static SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    SIGNALLED.store(true, Ordering::SeqCst);
}

/// For the `corebench serve` process: SIGTERM and SIGINT stop the server
/// cleanly (prefork children inherit the handlers).
pub fn install_signal_handlers() {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: an async-signal-safe handler that only stores an atomic.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}
