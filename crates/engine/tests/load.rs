//! The engine against real sockets: counts, error categories, bounds.

mod server;

use std::time::{Duration, Instant};

use corebench_engine::{Control, Linger, LoadConfig};
use server::{refused_url, run, run_with, start, Reply};

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nServer: test/1\r\nContent-Length: 5\r\n\r\nhello";
const OK_CLOSE: &[u8] = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello";

fn config(url: &str, concurrency: u32, requests: u64) -> LoadConfig {
    LoadConfig { url: url.into(), concurrency, requests: Some(requests), threads: 2, ..Default::default() }
}

on_each_io! {
fn keep_alive_requests_are_counted_exactly() {
    let srv = start(Reply::Bytes(OK, true));
    let r = run(&LoadConfig { keep_alive: true, ..config(&srv.url, 10, 2000) }).unwrap();
    assert_eq!((r.requests, r.responses, r.failed), (2000, 2000, 0));
    assert_eq!(srv.requests.load(std::sync::atomic::Ordering::SeqCst), 2000);
    assert_eq!(r.status_counts.get(&200), Some(&2000));
    assert_eq!(r.connections_opened, 10);
    assert_eq!(r.keep_alive_requests, 2000);
    assert_eq!(r.latency_us.total.count, 2000);
    assert_eq!(r.bytes.body, 2000 * 5);
    assert_eq!(r.server_software.as_deref(), Some("test/1"));
    assert_eq!(r.document_length, Some(5));
    assert!(r.run.cpu.user_s + r.run.cpu.system_s > 0.0);
    assert_eq!(r.timeline.iter().map(|s| s.completed).sum::<u64>(), 2000);
}
}

on_each_io! {
fn without_keep_alive_each_request_opens_a_connection() {
    let srv = start(Reply::Bytes(OK_CLOSE, false));
    let r = run(&config(&srv.url, 4, 200)).unwrap();
    assert_eq!((r.responses, r.failed, r.connections_opened), (200, 0, 200));
}
}

on_each_io! {
fn refused_port_is_a_run_full_of_connect_errors() {
    let r = run(&config(&refused_url(), 5, 50)).unwrap();
    assert_eq!((r.requests, r.responses, r.errors.connect), (50, 0, 50));
}
}

on_each_io! {
fn silent_server_times_out_within_the_timeout() {
    let srv = start(Reply::Silent);
    let t0 = Instant::now();
    let r = run(&LoadConfig { timeout_s: 0.3, ..config(&srv.url, 3, 3) }).unwrap();
    assert_eq!(r.errors.timeout, 3);
    assert!(t0.elapsed() < Duration::from_secs(5));
}
}

on_each_io! {
fn garbage_is_an_exception() {
    let srv = start(Reply::Bytes(b"\x00\x01 not http at all\r\n\r\n", false));
    let r = run(&config(&srv.url, 2, 10)).unwrap();
    assert_eq!((r.errors.exceptions, r.responses), (10, 0));
}
}

on_each_io! {
fn short_body_is_a_length_error_and_cut_head_a_receive_error() {
    let srv = start(Reply::Bytes(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this", false));
    let r = run(&config(&srv.url, 2, 10)).unwrap();
    assert_eq!(r.errors.length, 10);
    let srv = start(Reply::Bytes(b"HTTP/1.1 200 OK\r\nContent-Le", false));
    let r = run(&config(&srv.url, 2, 10)).unwrap();
    assert_eq!(r.errors.receive, 10);
}
}

on_each_io! {
fn chunked_responses_are_complete() {
    let srv =
        start(Reply::Bytes(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", true));
    let r = run(&LoadConfig { keep_alive: true, ..config(&srv.url, 2, 100) }).unwrap();
    assert_eq!((r.responses, r.failed), (100, 0));
}
}

on_each_io! {
fn server_closing_keep_alive_is_not_an_error() {
    // Every response says close although the client asked for keep-alive.
    let srv = start(Reply::Bytes(OK_CLOSE, false));
    let r = run(&LoadConfig { keep_alive: true, ..config(&srv.url, 2, 100) }).unwrap();
    assert_eq!((r.responses, r.failed), (100, 0));
    // A server that silently drops the idle connection after each response.
    let srv = start(Reply::Bytes(OK, false));
    let r = run(&LoadConfig { keep_alive: true, ..config(&srv.url, 2, 100) }).unwrap();
    assert_eq!((r.responses, r.failed), (100, 0));
    assert_eq!(srv.requests.load(std::sync::atomic::Ordering::SeqCst), 100);
}
}

on_each_io! {
fn duration_bounds_the_run_and_drains_in_flight_requests() {
    let srv = start(Reply::Bytes(OK, true));
    let t0 = Instant::now();
    let cfg = LoadConfig { keep_alive: true, requests: None, duration_s: Some(0.5), ..config(&srv.url, 4, 1) };
    let r = run(&cfg).unwrap();
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert!(r.responses > 0 && r.failed == 0);
    assert_eq!(srv.requests.load(std::sync::atomic::Ordering::SeqCst), r.responses);
}
}

on_each_io! {
fn live_figures_count_unsuccessful_statuses_apart_from_errors() {
    const UNAVAILABLE: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n";
    let srv = start(Reply::Bytes(UNAVAILABLE, true));
    let control = Control::default();
    let r = run_with(&LoadConfig { keep_alive: true, ..config(&srv.url, 4, 500) }, &control).unwrap();
    assert_eq!((r.responses, r.failed, r.non_2xx), (500, 0, 500));
    assert_eq!((control.finished(), control.failed(), control.unsuccessful()), (500, 0, 500));
    let srv = start(Reply::Bytes(OK, true));
    let control = Control::default();
    run_with(&LoadConfig { keep_alive: true, ..config(&srv.url, 4, 500) }, &control).unwrap();
    assert_eq!((control.finished(), control.unsuccessful()), (500, 0));
}

fn stop_ends_the_run_early() {
    let srv = start(Reply::Bytes(OK, true));
    let control = Control::default();
    let cfg = LoadConfig { keep_alive: true, requests: None, duration_s: Some(30.0), ..config(&srv.url, 4, 1) };
    let r = std::thread::scope(|s| {
        let h = s.spawn(|| run_with(&cfg, &control));
        std::thread::sleep(Duration::from_millis(300));
        control.stop();
        h.join().unwrap()
    })
    .unwrap();
    assert!(r.run.interrupted && r.run.duration_s < 5.0 && r.responses > 0);
}
}

on_each_io! {
fn equal_lengths_are_not_length_errors() {
    let srv = start(Reply::Bytes(OK, true));
    let r = run(&LoadConfig { keep_alive: true, ..config(&srv.url, 1, 5) }).unwrap();
    assert_eq!(r.errors.length, 0);
}
}

on_each_io! {
fn bad_config_is_rejected_before_any_load() {
    let url = refused_url();
    assert!(run(&config(&url, 5, 2)).is_err());
    assert!(run(&config(&url, 0, 2)).is_err());
    assert!(run(&LoadConfig { timeout_s: -1.0, ..config(&url, 1, 1) }).is_err());
}
}

on_each_io! {
fn busy_polling_counts_the_same() {
    let srv = start(Reply::Bytes(OK, true));
    let r = run(&LoadConfig { keep_alive: true, busy_poll_us: 50, ..config(&srv.url, 4, 1000) }).unwrap();
    assert_eq!((r.responses, r.failed, r.run.busy_poll_us), (1000, 0, 50));
    assert_eq!(srv.requests.load(std::sync::atomic::Ordering::SeqCst), 1000);
    assert!(run(&LoadConfig { busy_poll_us: 10_001, ..config(&srv.url, 1, 1) }).is_err());
}
}

on_each_io! {
fn holding_responses_counts_the_same() {
    let srv = start(Reply::Bytes(OK, true));
    let base = LoadConfig { keep_alive: true, ..config(&srv.url, 32, 3000) };
    let r = run(&LoadConfig { linger: Linger::Always, linger_percent: 25, ..base.clone() }).unwrap();
    assert_eq!((r.responses, r.failed, r.run.linger, r.run.linger_percent), (3000, 0, Linger::Always, 25));
    assert_eq!(srv.requests.load(std::sync::atomic::Ordering::SeqCst), 3000);
    assert!(r.held_waits > 0, "32 connections, yet no wait held");
    // Under LINGER_MIN_IN_FLIGHT requests in flight on its thread a wait
    // has nothing to hold for: the result says none held.
    let few = LoadConfig { linger: Linger::Always, threads: 1, ..config(&srv.url, 4, 400) };
    let r = run(&LoadConfig { keep_alive: true, ..few }).unwrap();
    assert_eq!((r.responses, r.run.linger, r.held_waits), (400, Linger::Always, 0));
    let refused = |c: LoadConfig, field: &str| matches!(run(&c), Err(corebench_engine::EngineError::BadConfig { key, .. }) if key == field);
    assert!(refused(LoadConfig { linger_percent: 26, ..base.clone() }, "linger_percent"));
    assert!(refused(LoadConfig { linger_percent: 0, ..base.clone() }, "linger_percent"));
    // Without keep-alive every request opens a connection, whose connect a
    // hold would delay: asking to hold is refused, and `auto` says it did not.
    assert!(refused(LoadConfig { keep_alive: false, linger: Linger::Always, ..base.clone() }, "linger"));
    let r = run(&LoadConfig { keep_alive: false, requests: Some(300), ..base }).unwrap();
    assert_eq!((r.responses, r.failed, r.run.linger, r.run.linger_percent, r.held_waits), (300, 0, Linger::Off, 0, 0));
}

fn a_hold_never_delays_a_connect() {
    // Each connection closed after its one slow response (20 ms): with
    // keep-alive asked, every request still opens a connection. A hold
    // (up to 25% of 20 ms) while one connects would lengthen its connect
    // time, read by the worker's clock; a connect on loopback takes far less.
    let srv = start(Reply::After(OK_CLOSE, Duration::from_millis(20)));
    let cfg = LoadConfig { keep_alive: true, linger: Linger::Always, linger_percent: 25, threads: 1, ..config(&srv.url, 16, 400) };
    let r = run(&cfg).unwrap();
    assert_eq!((r.responses, r.failed, r.connections_opened), (400, 0, 400), "{:?}", r.error_samples);
    assert_eq!(r.run.linger, Linger::Always);
    let connect = &r.latency_us.connect;
    assert!(connect.mean_us < 1000.0, "connects took {} µs on average (median {})", connect.mean_us, connect.median_us);
}

fn holding_by_probe_counts_the_same_and_says_what_the_probes_found() {
    let srv = start(Reply::Bytes(OK, true));
    let closed = LoadConfig { keep_alive: true, duration_s: Some(1.5), threads: 1, ..config(&srv.url, 16, 1) };
    let closed = LoadConfig { requests: None, ..closed };
    let r = run(&closed).unwrap();
    // 1.5 s of a closed loop on one thread: the first probe decided
    // (whatever it found, on a machine as busy as the tests make it).
    assert_eq!((r.failed, r.run.linger, r.run.linger_percent), (0, Linger::Auto, 10), "{:?}", r.error_samples);
    assert!(r.linger_probes.probes >= 1 && r.linger_probes.held <= r.linger_probes.probes, "{:?}", r.linger_probes);
    assert_eq!(srv.requests.load(std::sync::atomic::Ordering::SeqCst), r.responses);
    // Think times and schedules have no cycle to probe: no holding at all.
    let users = LoadConfig { think_s: Some((0.001, 0.002)), duration_s: Some(0.3), ..closed };
    let r = run(&users).unwrap();
    assert_eq!((r.run.linger, r.run.linger_percent, r.linger_probes.probes), (Linger::Off, 0, 0));
}
}

#[test]
fn http2_does_not_hold_responses() {
    use corebench_engine::config::HttpVersion;
    let base = LoadConfig { http_version: HttpVersion::Http2, ..config("http://127.0.0.1:1/", 1, 1) };
    let refused = |c: LoadConfig| {
        matches!(corebench_engine::run(&c), Err(corebench_engine::EngineError::BadConfig { key: "linger", .. }))
    };
    assert!(refused(LoadConfig { linger: Linger::Always, ..base }));
}

on_each_io! {
fn a_server_that_closes_after_answering_is_not_waited_for() {
    // Apache's event MPM under load: a keep-alive response, then its side
    // closed and a lingering close that swallows the next request. That
    // request must go out on a new connection, not wait for the timeout.
    let srv = start(Reply::Linger(OK));
    let cfg = LoadConfig { keep_alive: true, timeout_s: 2.0, threads: 1, ..config(&srv.url, 1, 20) };
    let r = run(&cfg).unwrap();
    assert_eq!((r.responses, r.failed), (20, 0), "{:?}", r.error_samples);
    assert!(r.run.duration_s < 1.5, "no request waited for its timeout: {} s", r.run.duration_s);
}
}

on_each_io! {
fn a_trace_keeps_every_response_and_agrees_with_the_histograms() {
    let srv = start(Reply::Bytes(OK, true));
    let r = run(&LoadConfig { keep_alive: true, trace: true, ..config(&srv.url, 4, 500) }).unwrap();
    let t = r.trace.as_ref().expect("a trace was asked for");
    assert_eq!((t.len(), t.left_out), (500, 0));
    assert!(t.status.iter().all(|&s| s == 200));
    let max = *t.total_us.iter().max().unwrap() as u64;
    assert!(max.abs_diff(r.latency_us.total.max_us) <= max / 500 + 1, "{max} vs {}", r.latency_us.total.max_us);
    for i in 0..t.len() {
        assert!(t.connect_us[i] + t.processing_us[i] <= t.total_us[i] + 1, "row {i}");
        assert!(t.start_us[i] <= (r.run.duration_s * 1e6) as u64, "row {i}");
    }
    let plain = run(&LoadConfig { keep_alive: true, ..config(&srv.url, 4, 10) }).unwrap();
    assert!(plain.trace.is_none() && plain.heads.is_none(), "nothing kept unless asked");
}
}

on_each_io! {
fn heads_are_the_request_as_sent_and_the_first_response() {
    let srv = start(Reply::Bytes(OK, true));
    let r = run(&LoadConfig {
        capture_heads: true,
        method: "POST".into(),
        body: b"x=1".to_vec(),
        ..config(&srv.url, 1, 3)
    })
    .unwrap();
    let h = r.heads.expect("heads were asked for");
    assert!(h.request.starts_with("POST / HTTP/1.1\r\nHost: 127.0.0.1:"), "{}", h.request);
    assert!(h.request.ends_with("Content-Length: 3\r\n\r\n"), "the body is left out: {}", h.request);
    assert_eq!(h.response.as_deref(), Some("HTTP/1.1 200 OK\r\nServer: test/1\r\nContent-Length: 5\r\n\r\n"));
}
}

on_each_io! {
fn requests_through_a_proxy_go_to_it_with_the_absolute_url() {
    // The "proxy" answers itself: what matters is where the requests went.
    let proxy = start(Reply::Bytes(OK, true));
    let port = proxy.url.trim_end_matches('/').rsplit(':').next().unwrap().to_string();
    let target = refused_url();
    let r = run(&LoadConfig {
        proxy: Some(format!("127.0.0.1:{port}")),
        capture_heads: true,
        keep_alive: true,
        ..config(&format!("{target}page?q=1"), 2, 20)
    })
    .unwrap();
    assert_eq!((r.responses, r.failed), (20, 0));
    assert_eq!(proxy.requests.load(std::sync::atomic::Ordering::SeqCst), 20);
    let line = format!("GET {target}page?q=1 HTTP/1.1");
    assert!(r.heads.unwrap().request.starts_with(&format!("{line}\r\n")));
    assert!(proxy.lines.lock().unwrap().iter().all(|l| *l == line), "{:?}", proxy.lines.lock().unwrap());
}
}

on_each_io! {
fn bodies_larger_than_any_receive_buffer_arrive_whole() {
    // 300 KB bodies: many reads (epoll) or completions, across buffers (io_uring).
    const BODY: usize = 300 * 1024;
    let reply: &'static [u8] = Box::leak(
        [format!("HTTP/1.1 200 OK\r\nContent-Length: {BODY}\r\n\r\n").as_bytes(), &[b'x'; BODY]].concat().into_boxed_slice(),
    );
    let srv = start(Reply::Bytes(reply, true));
    let r = run(&LoadConfig { keep_alive: true, ..config(&srv.url, 4, 60) }).unwrap();
    assert_eq!((r.responses, r.failed, r.connections_opened), (60, 0, 4));
    assert_eq!(r.bytes.body, 60 * BODY as u64);
    assert_eq!(srv.requests.load(std::sync::atomic::Ordering::SeqCst), 60);
}
}
