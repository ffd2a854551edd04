//! The built-in server in-process (async and threads; prefork forks, so it
//! is tested from its own process by the Python suite), loaded by the engine.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use corebench_engine::{run, LoadConfig};
use corebench_serve::{serve, Model, ServeConfig};

fn with_server(model: Model, test: impl FnOnce(&str)) {
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        let stop = &stop;
        s.spawn(move || {
            let cfg = ServeConfig { model, workers: 2, ..Default::default() };
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
        test(&format!("http://{addr}"));
    });
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
