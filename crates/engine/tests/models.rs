//! The load models against real sockets: open-loop rate, users with think
//! time, URL lists, access-log replay. Bounds, not timings, are asserted.

mod server;

use std::io::Write;
use std::sync::atomic::Ordering;

use corebench_engine::config::{Arrivals, RateConfig, ReplayConfig, UrlSpec};
use corebench_engine::{EngineError, LoadConfig};
use server::{run, start, Reply};

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

fn keep_alive(url: &str, concurrency: u32) -> LoadConfig {
    LoadConfig { url: url.into(), concurrency, keep_alive: true, threads: 2, requests: None, ..Default::default() }
}

fn rate(rps: f64) -> Option<RateConfig> {
    Some(RateConfig { rps, end_rps: None, ramp_s: None, arrivals: Arrivals::Uniform })
}

on_each_io! {
fn open_loop_sends_exactly_the_schedule() {
    let srv = start(Reply::Bytes(OK, true));
    let cfg = LoadConfig { rate: rate(400.0), duration_s: Some(0.5), ..keep_alive(&srv.url, 50) };
    let r = run(&cfg).unwrap();
    let s = r.schedule.expect("an open-loop run reports its schedule");
    assert_eq!((s.sent, s.dropped, r.responses, r.failed), (200, 0, 200, 0));
    assert_eq!(srv.requests.load(Ordering::SeqCst), 200);
    assert_eq!(r.run.model, "rate");
    assert!((s.target_rps - 400.0).abs() < 1e-6);
    let raw = r.latency_us.uncorrected.expect("uncorrected latency beside the corrected one");
    assert_eq!(raw.count, 200);
    // From the intended send is never shorter than from the actual send.
    assert!(r.latency_us.total.max_us >= raw.max_us);
}
}

on_each_io! {
fn a_count_bounds_the_schedule_and_a_ramp_is_followed() {
    let srv = start(Reply::Bytes(OK, true));
    let ramp = Some(RateConfig { rps: 100.0, end_rps: Some(300.0), ramp_s: Some(10.0), arrivals: Arrivals::Uniform });
    let r = run(&LoadConfig { rate: ramp, requests: Some(60), ..keep_alive(&srv.url, 20) }).unwrap();
    assert_eq!((r.schedule.unwrap().sent, r.responses), (60, 60));
}
}

on_each_io! {
fn open_loop_counts_late_and_dropped_sends_when_connections_run_out() {
    // Nobody answers: 3 connections hold 3 requests, everything else due
    // in the window finds no connection.
    let srv = start(Reply::Silent);
    let cfg = LoadConfig { rate: rate(100.0), duration_s: Some(0.3), timeout_s: 1.0, ..keep_alive(&srv.url, 3) };
    let r = run(&cfg).unwrap();
    let s = r.schedule.unwrap();
    assert_eq!(s.sent, 3, "{s:?}");
    assert_eq!(s.sent + s.dropped, 30, "every request due in the window is sent or dropped: {s:?}");
    assert!(!s.kept);
    assert_eq!(r.errors.timeout, 3);
}
}

on_each_io! {
fn users_think_between_requests() {
    let srv = start(Reply::Bytes(OK, true));
    let cfg = LoadConfig { think_s: Some((0.05, 0.05)), duration_s: Some(0.5), ..keep_alive(&srv.url, 4) };
    let r = run(&cfg).unwrap();
    assert_eq!(r.run.model, "users");
    // Each user makes at most one request per 50 ms pause (plus the first);
    // without the pause it would make thousands.
    assert!((4..=44).contains(&r.responses), "{}", r.responses);
    assert_eq!(r.failed, 0);
}
}

on_each_io! {
fn bytes_a_server_sends_on_an_idle_connection_answer_no_request() {
    // A 408 sent unasked 20 ms after each answer, while the user thinks
    // 200 ms (room for a slow machine): it is not the answer to the next
    // request, which goes out on a new connection.
    let srv = start(Reply::Stale(OK, b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n"));
    let cfg = LoadConfig { think_s: Some((0.2, 0.2)), duration_s: Some(0.7), threads: 1, ..keep_alive(&srv.url, 1) };
    let r = run(&cfg).unwrap();
    assert!(r.responses >= 3, "{}", r.responses);
    assert_eq!((r.failed, r.non_2xx), (0, 0), "{:?} {:?}", r.status_counts, r.error_samples);
    assert_eq!(r.responses, srv.requests.load(Ordering::SeqCst));
    assert_eq!(r.connections_opened, r.responses, "each connection was dropped after its stale bytes");
}
}

fn urls(base: &str, paths: &[&str]) -> Vec<UrlSpec> {
    let base = base.trim_end_matches('/');
    paths
        .iter()
        .map(|p| UrlSpec { url: format!("{base}{p}"), method: "GET".into(), body_base64: String::new() })
        .collect()
}

on_each_io! {
fn url_lists_are_taken_in_order_with_figures_per_url() {
    let srv = start(Reply::Bytes(OK, true));
    let cfg = LoadConfig {
        urls: urls(&srv.url, &["/a", "/b?x=1", "/c"]),
        requests: Some(7),
        threads: 1,
        ..keep_alive(&srv.url, 1)
    };
    let r = run(&cfg).unwrap();
    let lines = srv.lines.lock().unwrap().clone();
    let paths: Vec<&str> = lines.iter().map(|l| l.split(' ').nth(1).unwrap()).collect();
    assert_eq!(paths, ["/a", "/b?x=1", "/c", "/a", "/b?x=1", "/c", "/a"]);
    let per_url: Vec<(&str, u64)> = r.urls.iter().map(|u| (u.target.as_str(), u.responses)).collect();
    assert_eq!(per_url, [("/a", 3), ("/b?x=1", 2), ("/c", 2)]);
    assert!(r.urls.iter().all(|u| u.status_seen.get(&200) == Some(&u.responses)));
}
}

on_each_io! {
fn random_order_is_repeatable_with_a_seed() {
    let counts = |seed| {
        let srv = start(Reply::Bytes(OK, true));
        let cfg = LoadConfig {
            urls: urls(&srv.url, &["/a", "/b", "/c", "/d"]),
            random_order: true,
            seed,
            requests: Some(200),
            threads: 1,
            ..keep_alive(&srv.url, 1)
        };
        let mut r: Vec<(String, u64)> = run(&cfg).unwrap().urls.into_iter().map(|u| (u.target, u.responses)).collect();
        r.sort();
        r
    };
    let (a, b) = (counts(7), counts(7));
    assert_eq!(a, b);
    assert_eq!(a.len(), 4, "200 random picks of 4 URLs reach every one: {a:?}");
    assert_ne!(a.iter().map(|(_, n)| *n).collect::<Vec<_>>(), vec![50; 4], "not round-robin: {a:?}");
}
}

on_each_io! {
fn url_lists_stay_on_one_origin() {
    let cfg = LoadConfig {
        urls: urls("http://127.0.0.2:9", &["/a"]),
        requests: Some(1),
        ..keep_alive("http://127.0.0.1:9/", 1)
    };
    let err = run(&cfg).unwrap_err();
    assert!(matches!(err, EngineError::BadConfig { key: "urls", .. }), "{err}");
    assert!(err.to_string().contains("urls[0]"), "{err}");
}
}

fn log_file(lines: &[&[u8]]) -> tempfile_path::TempLog {
    tempfile_path::TempLog::new(lines)
}

/// A log file in the temp directory, removed on drop.
mod tempfile_path {
    use super::Write;

    pub struct TempLog(pub String);

    impl TempLog {
        pub fn new(lines: &[&[u8]]) -> TempLog {
            static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let path = std::env::temp_dir().join(format!("corebench-test-{}-{n}.log", std::process::id()));
            let mut f = std::fs::File::create(&path).unwrap();
            for l in lines {
                f.write_all(l).unwrap();
                f.write_all(b"\n").unwrap();
            }
            TempLog(path.to_string_lossy().into_owned())
        }
    }

    impl Drop for TempLog {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

const HOSTILE: &[&[u8]] = &[
    br#"127.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET /one HTTP/1.0" 200 2326"#,
    b"\x00\x01\x02\xff binary junk",
    br#"2001:db8::1 - - [10/Oct/2000:13:55:37 -0700] "GET /two?q=1 HTTP/1.1" 304 -"#,
    br#"127.0.0.1 - - [10/Oct/2000:13:55:38 -0700] "GET /trunc"#,
    br#"127.0.0.1 - - [10/Oct/2000:13:55:39 -0700] "-" 408 0"#,
    br#"127.0.0.1 - - [10/Oct/2000:13:55:40 -0700] "\x16\x03\x01" 400 0"#,
    b"127.0.0.1 - - [10/Oct/2000:13:55:41 -0700] \"GET /caf\xc3\xa9 HTTP/1.1\" 200 5",
    b"127.0.0.1 - - [10/Oct/2000:13:55:42 -0700] \"GET /latin\xe9 HTTP/1.1\" 200 5",
    br#"127.0.0.1 - - [10/Oct/2000:13:55:43 -0700] "POST /form HTTP/1.1" 200 5"#,
    b"",
    br#"127.0.0.1 - - [10/Oct/2000:13:55:35 -0700] "HEAD /three HTTP/1.1" 200 5 "-" "agent \"quoted\"""#,
];

on_each_io! {
fn replay_sends_only_valid_lines_and_accounts_for_every_line() {
    let srv = start(Reply::Bytes(OK, true));
    let long = format!(r#"127.0.0.1 - - [10/Oct/2000:13:55:44 -0700] "GET /{} HTTP/1.1" 200 5"#, "x".repeat(20_000));
    let mut lines = HOSTILE.to_vec();
    lines.push(long.as_bytes());
    let log = log_file(&lines);
    let replay = ReplayConfig {
        path: log.0.clone(),
        log_format: None,
        allow_unsafe: false,
        limit: None,
        looped: false,
        speed: None,
    };
    let r = run(&LoadConfig { replay: Some(replay), variable_length: true, ..keep_alive(&srv.url, 2) }).unwrap();
    let src = r.replay.as_ref().unwrap();
    let skipped: u64 = src.skipped.iter().map(|s| s.count).sum();
    assert_eq!(src.lines, 12);
    assert_eq!((src.replayed, skipped), (3, 9), "{:?}", src.skipped);
    assert_eq!((r.responses, r.failed), (3, 0));
    let mut sent = srv.lines.lock().unwrap().clone();
    sent.sort();
    assert_eq!(sent, ["GET /one HTTP/1.1", "GET /two?q=1 HTTP/1.1", "HEAD /three HTTP/1.1"]);
    let logged_304 = r.urls.iter().find(|u| u.target == "/two?q=1").unwrap();
    assert_eq!((logged_304.status_mismatches, logged_304.status_logged.get(&304)), (1, Some(&1)));
}
}

on_each_io! {
fn timed_replay_follows_the_log_clock() {
    let srv = start(Reply::Bytes(OK, true));
    let log = log_file(HOSTILE);
    // 8 s of log time (13:55:35 .. 13:55:43) at 40x: 0.2 s.
    let replay = ReplayConfig {
        path: log.0.clone(),
        log_format: None,
        allow_unsafe: true,
        limit: None,
        looped: false,
        speed: Some(40.0),
    };
    let r = run(&LoadConfig { replay: Some(replay), variable_length: true, threads: 1, ..keep_alive(&srv.url, 4) })
        .unwrap();
    let src = r.replay.as_ref().unwrap();
    assert_eq!((src.replayed, r.responses), (4, 4), "{:?}", src.skipped);
    assert_eq!(src.out_of_order, 1, "the HEAD line is stamped before the lines above it");
    assert_eq!(r.schedule.unwrap().sent, 4);
    assert!(r.run.duration_s >= 0.19, "the log's 8 s at 40x take at least 0.2 s, took {}", r.run.duration_s);
    // Each line leaves at its own time: the last line, stamped first, first.
    let lines = srv.lines.lock().unwrap().clone();
    assert_eq!(lines, ["HEAD /three HTTP/1.1", "GET /one HTTP/1.1", "GET /two?q=1 HTTP/1.1", "POST /form HTTP/1.1"]);
}
}

on_each_io! {
fn a_log_without_a_usable_line_is_an_error() {
    let log = log_file(&[b"junk", b""]);
    let replay = ReplayConfig {
        path: log.0.clone(),
        log_format: None,
        allow_unsafe: false,
        limit: None,
        looped: false,
        speed: None,
    };
    let err = run(&LoadConfig { replay: Some(replay), ..keep_alive("http://127.0.0.1:9/", 1) }).unwrap_err();
    assert!(err.to_string().contains("none of its 2 lines"), "{err}");
}
}

on_each_io! {
fn idle_keep_alive_connections_are_not_in_flight() {
    // Users think, and an open loop waits, longer than the timeout: their
    // idle connections must neither time out nor be counted twice.
    let srv = start(Reply::Bytes(OK, true));
    // The timeout is 0.3 s, not less: a first response waits for the test
    // server's accept loop and a thread start, which a busy machine can
    // stretch past 100 ms; the idle gaps (0.6 s, 0.5 s) still outlast it.
    let think = LoadConfig {
        think_s: Some((0.6, 0.6)),
        timeout_s: 0.3,
        duration_s: Some(1.4),
        threads: 1,
        ..keep_alive(&srv.url, 2)
    };
    let r = run(&think).unwrap();
    assert_eq!(r.failed, 0, "{:?}", r.error_samples);
    assert!((2..=6).contains(&r.responses), "{}", r.responses);
    let open =
        LoadConfig { rate: rate(2.0), timeout_s: 0.3, duration_s: Some(2.0), threads: 1, ..keep_alive(&srv.url, 2) };
    let r = run(&open).unwrap();
    assert_eq!((r.responses, r.failed), (4, 0), "{:?}", r.error_samples);
    // A server that closes each connection after answering, without saying
    // so: the idle connection's close is no error, the next request retries.
    let closing = start(Reply::Bytes(OK, false));
    let r = run(&LoadConfig { rate: rate(10.0), duration_s: Some(1.0), threads: 1, ..keep_alive(&closing.url, 2) })
        .unwrap();
    assert_eq!((r.responses, r.failed), (10, 0), "{:?}", r.error_samples);
}
}

on_each_io! {
fn a_replay_too_fast_to_schedule_is_refused() {
    let log = log_file(HOSTILE);
    let replay = ReplayConfig {
        path: log.0.clone(),
        log_format: None,
        allow_unsafe: false,
        limit: None,
        looped: true,
        speed: Some(1e12),
    };
    let err = run(&LoadConfig { replay: Some(replay), duration_s: Some(0.3), ..keep_alive("http://127.0.0.1:9/", 1) })
        .unwrap_err();
    assert!(matches!(err, EngineError::BadConfig { key: "speed", .. }), "{err}");
}
}
