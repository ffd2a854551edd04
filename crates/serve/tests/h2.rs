//! HTTP/2 end to end in-process: the engine's client against the built-in
//! server's h2c, in the async and threads models (prefork forks: the Python
//! suite starts it as a process), under every load model. The server's
//! access log is the server-side count.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use corebench_engine::config::{HttpVersion, RateConfig, ReplayConfig, UrlSpec};
use corebench_engine::{run, LoadConfig, LoadResult};
use corebench_serve::{serve, Model, ServeConfig};

/// Runs `test` against a server of `model` logging to a file; returns the
/// lines logged once the server has stopped (its log flushed).
fn with_server(model: Model, test: impl FnOnce(&str)) -> Vec<String> {
    with_server_tls(model, false, test)
}

/// As `with_server`, over HTTPS with `tls`.
fn with_server_tls(model: Model, tls: bool, test: impl FnOnce(&str)) -> Vec<String> {
    static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = RUNS.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("corebench-h2-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("access.log");
    let _ = std::fs::remove_file(&log);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|s| {
        let stop = &stop;
        let log = log.to_string_lossy().into_owned();
        s.spawn(move || {
            // A worker per connection: the threads model serves one at a time.
            let cfg = ServeConfig { model, workers: 4, access_log: Some(log), tls, ..Default::default() };
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
        test(&format!("{}://{addr}", if tls { "https" } else { "http" }));
    });
    let lines = std::fs::read_to_string(&log).unwrap_or_default().lines().map(String::from).collect();
    let _ = std::fs::remove_dir_all(&dir);
    lines
}

fn h2(url: String, connections: u32, streams: u32) -> LoadConfig {
    LoadConfig {
        url,
        concurrency: connections,
        streams,
        http_version: HttpVersion::Http2,
        threads: 2,
        ..Default::default()
    }
}

fn ok(r: &LoadResult, what: &str) {
    assert_eq!(r.failed, 0, "{what}: {:?} {:?}", r.errors, r.error_samples);
    assert_eq!(r.non_2xx, 0, "{what}: {:?}", r.status_counts);
}

#[test]
fn a_closed_loop_over_http2_is_counted_by_the_server_exactly() {
    for model in [Model::Async, Model::Threads] {
        let mut responses = 0;
        let lines = with_server(model, |base| {
            let cfg = LoadConfig { requests: Some(2000), ..h2(format!("{base}/static/2k"), 4, 8) };
            let r = run(&cfg).unwrap();
            ok(&r, "closed loop");
            assert_eq!(r.responses, 2000);
            assert_eq!(r.bytes.body, 2000 * 2048);
            assert!(r.server_software.as_deref().is_some_and(|s| s.starts_with("corebench/")));
            let h = r.http2.unwrap();
            assert_eq!((h.connections, h.peak_streams, h.server_max_streams), (4, 8, Some(128)), "{model:?}");
            responses = r.responses;
        });
        let odd: Vec<_> = lines.iter().filter(|l| !l.contains("GET /static/2k HTTP/2.0")).take(5).collect();
        assert_eq!(lines.len() as u64, responses, "{model:?}: the access log counts every request once: {odd:?}");
        assert!(lines.iter().all(|l| l.contains("\"GET /static/2k HTTP/2.0\" 200 2048")), "{:?}", lines.first());
    }
}

#[test]
fn open_loop_users_url_lists_and_replay_run_over_http2() {
    with_server(Model::Async, |base| {
        let rate = RateConfig { rps: 400.0, end_rps: None, ramp_s: None, arrivals: Default::default() };
        let cfg = LoadConfig { rate: Some(rate), duration_s: Some(1.0), ..h2(format!("{base}/sleep?ms=5"), 2, 16) };
        let r = run(&cfg).unwrap();
        ok(&r, "open loop");
        let s = r.schedule.expect("a schedule");
        assert!(s.kept && s.sent == r.responses && (380..=420).contains(&s.sent), "{s:?}");

        let cfg = LoadConfig { think_s: Some((0.0, 0.005)), duration_s: Some(0.5), ..h2(format!("{base}/"), 2, 4) };
        let r = run(&cfg).unwrap();
        ok(&r, "users");
        assert!(r.responses > 20);

        let urls = ["/static/2k", "/dynamic?work_us=20", "/health"].map(|p| UrlSpec {
            url: format!("{base}{p}"),
            method: "GET".into(),
            body_base64: String::new(),
        });
        let cfg = LoadConfig { urls: urls.to_vec(), requests: Some(300), ..h2(format!("{base}/"), 2, 4) };
        let r = run(&cfg).unwrap();
        ok(&r, "url list");
        assert_eq!(r.urls.iter().map(|u| u.responses).collect::<Vec<_>>(), [100, 100, 100]);

        let log = std::env::temp_dir().join(format!("corebench-h2-replay-{}.log", std::process::id()));
        let lines: String = (0..50)
            .map(|i| format!("127.0.0.1 - - [10/Oct/2024:13:55:{:02} +0000] \"GET /p{i} HTTP/1.1\" 200 10\n", i % 60))
            .collect();
        std::fs::write(&log, lines).unwrap();
        let replay = ReplayConfig {
            path: log.to_string_lossy().into_owned(),
            log_format: None,
            allow_unsafe: false,
            limit: None,
            looped: false,
            speed: None,
        };
        let cfg = LoadConfig { replay: Some(replay), requests: None, ..h2(format!("{base}/"), 2, 4) };
        let r = run(&cfg).unwrap();
        let _ = std::fs::remove_file(&log);
        ok(&r, "replay");
        assert_eq!(r.responses, 50);
    });
}

#[test]
fn bodies_beyond_the_window_wait_for_it_and_arrive_whole() {
    with_server(Model::Async, |base| {
        // 100 KB bodies against the server's 64 KB initial stream window.
        let cfg = LoadConfig {
            method: "POST".into(),
            body: vec![b'x'; 100 * 1024],
            requests: Some(40),
            ..h2(format!("{base}/static/2k"), 2, 2)
        };
        let r = run(&cfg).unwrap();
        ok(&r, "bodies");
        assert_eq!(r.responses, 40);
        assert!(r.http2.unwrap().flow_control_stalls >= 4);
        assert!(r.bytes.sent > 40 * 100 * 1024, "{}", r.bytes.sent);
    });
}

#[test]
fn a_stream_past_its_timeout_is_reset_and_its_connection_goes_on() {
    with_server(Model::Async, |base| {
        let urls = ["/sleep?ms=3000", "/health"].map(|p| UrlSpec {
            url: format!("{base}{p}"),
            method: "GET".into(),
            body_base64: String::new(),
        });
        let cfg = LoadConfig {
            urls: urls.to_vec(),
            requests: Some(20),
            timeout_s: 0.3,
            variable_length: true,
            threads: 1,
            ..h2(format!("{base}/"), 1, 2)
        };
        let t = std::time::Instant::now();
        let r = run(&cfg).unwrap();
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        // The slow page times out each time; the quick one, on the same
        // connection beside the reset streams, always answers.
        assert_eq!((r.errors.timeout, r.responses), (10, 10), "{:?}", r.error_samples);
        assert_eq!(r.http2.unwrap().connections, 1);
    });
}

#[test]
fn over_tls_alpn_gives_http2_or_http1_and_the_server_counts_both() {
    for model in [Model::Async, Model::Threads] {
        let mut responses = 0;
        let lines = with_server_tls(model, true, |base| {
            let cfg = LoadConfig { requests: Some(1000), ..h2(format!("{base}/static/2k"), 2, 8) };
            let r = run(&cfg).unwrap();
            ok(&r, "h2 over TLS");
            assert_eq!((r.responses, r.bytes.body), (1000, 1000 * 2048));
            assert_eq!(r.http2.unwrap().server_max_streams, Some(128));
            let cfg = LoadConfig {
                url: format!("{base}/static/2k"),
                concurrency: 2,
                requests: Some(500),
                keep_alive: true,
                ..Default::default()
            };
            let r1 = run(&cfg).unwrap();
            ok(&r1, "HTTP/1.1 over TLS");
            assert_eq!(r1.responses, 500);
            responses = r.responses + r1.responses;
        });
        assert_eq!(lines.len() as u64, responses, "{model:?}");
        assert_eq!(lines.iter().filter(|l| l.contains("HTTP/2.0\" 200")).count(), 1000, "{model:?}");
    }
}

#[test]
fn a_response_after_its_timeout_is_not_counted_again() {
    with_server(Model::Async, |base| {
        // Users think 0.3 s after each request; each response comes 0.1 s
        // after the request's timeout, while its user thinks.
        let cfg = LoadConfig {
            think_s: Some((0.3, 0.3)),
            duration_s: Some(1.5),
            timeout_s: 0.2,
            threads: 1,
            ..h2(format!("{base}/sleep?ms=300"), 1, 2)
        };
        let r = run(&cfg).unwrap();
        assert!(r.requests >= 4, "{}", r.requests);
        assert_eq!((r.responses, r.errors.timeout), (0, r.requests), "{:?}", r.error_samples);
    });
}
