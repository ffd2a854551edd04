//! Where io_uring is forbidden (as container runtimes' seccomp profiles
//! forbid it), `io = "auto"` runs on epoll and says so, and `io = "uring"`
//! is refused in one line. Its own test binary: the seccomp filter stays on
//! the thread that installs it, and the io_uring check is made once per
//! process.

mod server;

use std::sync::atomic::Ordering;

use corebench_engine::{io_uring_support, run, EngineError, IoBackend, Linger, LoadConfig};
use server::{start, Reply};

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// Makes io_uring_setup(2) fail with EPERM for this thread and the threads
/// it starts, as Docker's default seccomp profile does.
fn forbid_io_uring() {
    const IO_URING_SETUP: u32 = 425; // the same number on x86-64 and arm64
    let stmt = |code: u32, k: u32| libc::sock_filter { code: code as u16, jt: 0, jf: 0, k };
    let filter = [
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0), // seccomp_data.nr
        libc::sock_filter {
            code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
            jt: 0,
            jf: 1,
            k: IO_URING_SETUP,
        },
        stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
        stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
    ];
    let prog = libc::sock_fprog { len: filter.len() as u16, filter: filter.as_ptr().cast_mut() };
    // SAFETY: a well-formed filter program that outlives the calls.
    unsafe {
        assert_eq!(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
        assert_eq!(libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &prog), 0);
    }
}

#[test]
fn without_io_uring_auto_runs_on_epoll_and_uring_is_refused() {
    let srv = start(Reply::Bytes(OK, true));
    forbid_io_uring();
    let why = io_uring_support().unwrap_err();
    assert!(why.contains("Operation not permitted"), "{why}");

    let cfg = LoadConfig {
        url: srv.url.clone(),
        concurrency: 4,
        requests: Some(500),
        keep_alive: true,
        threads: 2,
        ..Default::default()
    };
    let r = run(&cfg).unwrap();
    assert_eq!(r.run.io, "epoll");
    assert_eq!((r.responses, r.failed), (500, 0));
    assert_eq!(srv.requests.load(Ordering::SeqCst), 500, "the server's count");

    // Asked to hold responses, the epoll it fell back to holds them too
    // (with more requests in flight per thread than a hold waits for).
    let r = run(&LoadConfig { linger: Linger::Always, concurrency: 40, ..cfg.clone() }).unwrap();
    assert_eq!(
        (r.run.io, r.run.linger, r.run.linger_percent, r.responses, r.failed),
        ("epoll", Linger::Always, 10, 500, 0)
    );
    assert_eq!(srv.requests.load(Ordering::SeqCst), 1000, "the server's count");

    match run(&LoadConfig { io: IoBackend::Uring, ..cfg }) {
        Err(e @ EngineError::BadConfig { key: "io", .. }) => {
            let line = e.to_string();
            assert!(line.contains("io_uring is not available here") && line.contains("epoll"), "{line}");
            assert!(e.is_user_error());
        }
        other => panic!("io = uring without io_uring: {:?}", other.map(|r| r.run.io)),
    }
}
