//! The built-in server in-process (async and threads; prefork forks, so it
//! is tested from its own process by the Python suite), loaded by the engine.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use corebench_engine::{run, LoadConfig};
use corebench_serve::{serve, Model, ServeConfig};

fn with_server(model: Model, test: impl FnOnce(&str)) {
    with_workers(model, 2, |addr| test(&format!("http://{addr}")));
}

/// Runs `test` (given the server's address) against a server of `model`
/// with `workers` on its own thread; returns how long `serve` took to
/// return once told to stop after it.
fn with_workers(model: Model, workers: u32, test: impl FnOnce(&str)) -> Duration {
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel();
    let mut stopping = Duration::ZERO;
    std::thread::scope(|s| {
        let stop = &stop;
        let server = s.spawn(move || {
            let cfg = ServeConfig { model, workers, ..Default::default() };
            serve(&cfg, stop, &|addr| tx.send(addr).unwrap()).unwrap();
        });
        // The server stops however the test ends: a failed assertion
        // unwinds through this guard instead of leaving the scope waiting.
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let _stop = Stop(stop);
        let addr = rx.recv_timeout(Duration::from_secs(10)).expect("server ready");
        test(&addr.to_string());
        stop.store(true, Ordering::SeqCst);
        let began = std::time::Instant::now();
        server.join().unwrap();
        stopping = began.elapsed();
    });
    stopping
}

#[test]
fn models_serve_every_workload() {
    for model in [Model::Async, Model::Threads] {
        with_server(model, |base| {
            for (path, body) in
                [("/static/2k", Some(2048)), ("/dynamic?work_us=50", None), ("/sleep?ms=1", None), ("/any/page", None)]
            {
                let cfg = LoadConfig {
                    url: format!("{base}{path}"),
                    concurrency: 8,
                    requests: Some(200),
                    keep_alive: true,
                    variable_length: true,
                    ..Default::default()
                };
                let r = run(&cfg).unwrap();
                assert_eq!((r.responses, r.failed, r.non_2xx), (200, 0, 0), "{model:?} {path}: {:?}", r.error_samples);
                if let Some(len) = body {
                    assert_eq!(r.bytes.body, 200 * len);
                }
            }
            let r =
                run(&LoadConfig { url: format!("{base}/static/1g"), requests: Some(3), ..Default::default() }).unwrap();
            assert_eq!(r.status_counts.get(&400), Some(&3));
        });
    }
}

#[test]
fn stall_switch_stops_the_server() {
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        let stop = &stop;
        s.spawn(move || {
            let cfg = ServeConfig { stall_ms: 300, stall_every_ms: 600, ..Default::default() };
            serve(&cfg, stop, &|addr| tx.send(addr).unwrap()).unwrap();
        });
        let addr = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let cfg = LoadConfig {
            url: format!("http://{addr}/health"),
            duration_s: Some(1.5),
            requests: None,
            keep_alive: true,
            ..Default::default()
        };
        let r = run(&cfg).unwrap();
        stop.store(true, Ordering::SeqCst);
        // A closed loop of one connection waits out each stall: its longest
        // request is most of a stall, the rest are fast.
        assert!(r.latency_us.total.max_us >= 200_000, "{}", r.latency_us.total.max_us);
        assert!(r.latency_us.total.median_us < 100_000);
    });
}

/// Sends one GET on a new connection; the connection, to read or drop.
fn send(addr: &str, path: &str) -> std::net::TcpStream {
    use std::io::Write;
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes()).unwrap();
    s
}

/// The status line of the answer on `s`, and how long it took.
fn answer(mut s: std::net::TcpStream) -> (String, Duration) {
    use std::io::Read;
    let began = std::time::Instant::now();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut buf = [0u8; 256];
    let n = s.read(&mut buf).unwrap_or(0);
    let text = String::from_utf8_lossy(&buf[..n]);
    (text.lines().next().unwrap_or("").to_string(), began.elapsed())
}

#[test]
fn workers_whose_clients_left_are_freed_and_leave_the_queue() {
    with_workers(Model::Threads, 8, |addr| {
        // Every worker sleeping a minute for a client that has gone.
        let ghosts: Vec<_> = (0..8).map(|_| send(addr, "/sleep?ms=60000")).collect();
        std::thread::sleep(Duration::from_millis(300));
        drop(ghosts);
        let (status, took) = answer(send(addr, "/health"));
        assert!(status.contains("200") && took < Duration::from_secs(5), "{status} after {took:?}");
        // Six requests of 10 s mean service each, whose clients left: a
        // short one after them no longer waits for their minute of service.
        let ghosts: Vec<_> = (0..6).map(|_| send(addr, "/queue?service_us=10000000")).collect();
        std::thread::sleep(Duration::from_millis(300));
        drop(ghosts);
        std::thread::sleep(Duration::from_millis(300));
        let (status, took) = answer(send(addr, "/queue?service_us=1000"));
        assert!(status.contains("200") && took < Duration::from_secs(5), "{status} after {took:?}");
    });
}

#[test]
fn a_stop_ends_a_worker_in_a_long_sleep() {
    let mut client = None;
    let stopping = with_workers(Model::Threads, 8, |addr| {
        client = Some(send(addr, "/sleep?ms=60000"));
        std::thread::sleep(Duration::from_millis(300));
    });
    assert!(stopping < Duration::from_secs(2), "the server took {stopping:?} to stop");
    drop(client);
}
