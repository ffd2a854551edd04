//! A timed run ends on time whatever the server does: requests still in
//! flight at its end get at most one more second, then count as timeouts.

mod server;

use std::time::Duration;

use corebench_engine::config::RateConfig;
use corebench_engine::LoadConfig;
use server::{run, start, within, Reply};

fn silent(concurrency: u32) -> (server::TestServer, LoadConfig) {
    let srv = start(Reply::Silent);
    let cfg = LoadConfig {
        url: srv.url.clone(),
        concurrency,
        duration_s: Some(0.5),
        keep_alive: true,
        threads: 2,
        ..Default::default()
    };
    (srv, cfg)
}

on_each_io! {
fn a_stalled_server_holds_a_closed_loop_one_second_past_its_end_not_its_timeout() {
    let (_srv, cfg) = silent(4);
    assert_eq!(cfg.timeout_s, 30.0);
    let (r, took) = within(Duration::from_secs(10), cfg, None);
    assert!(took >= Duration::from_millis(1400) && took < Duration::from_millis(3000), "{took:?}");
    assert_eq!((r.requests, r.responses, r.errors.timeout), (4, 0, 4));
    assert!(r.error_samples[0].contains("no response by 1s after the end of the run"), "{:?}", r.error_samples);
}
}

on_each_io! {
fn a_stalled_server_holds_an_open_loop_one_second_past_its_end() {
    let (_srv, mut cfg) = silent(4);
    cfg.rate = Some(RateConfig { rps: 100.0, end_rps: None, ramp_s: None, arrivals: Default::default() });
    let (r, took) = within(Duration::from_secs(10), cfg, None);
    assert!(took < Duration::from_millis(3000), "{took:?}");
    assert_eq!((r.responses, r.errors.timeout), (0, 4));
}
}

on_each_io! {
fn the_per_request_timeout_still_applies_within_the_run() {
    let (_srv, cfg) = silent(2);
    let cfg = LoadConfig { timeout_s: 0.2, duration_s: Some(1.0), ..cfg };
    let (r, took) = within(Duration::from_secs(10), cfg, None);
    assert!(took < Duration::from_millis(1900), "{took:?}");
    // Timed out every 0.2 s on each connection, and sent again.
    assert!(r.errors.timeout >= 6, "{}", r.errors.timeout);
    assert!(r.error_samples[0].contains("no response within 0.2s"), "{:?}", r.error_samples);
}
}

on_each_io! {
fn a_count_alone_is_bounded_by_the_timeout() {
    let (_srv, cfg) = silent(2);
    let cfg = LoadConfig { timeout_s: 0.3, duration_s: None, requests: Some(4), ..cfg };
    let (r, took) = within(Duration::from_secs(10), cfg, None);
    assert!(took < Duration::from_millis(1500), "{took:?}");
    assert_eq!((r.requests, r.errors.timeout), (4, 4));
}
}

on_each_io! {
fn stop_ends_a_stalled_run_at_once() {
    let (_srv, cfg) = silent(4);
    let cfg = LoadConfig { duration_s: Some(30.0), ..cfg };
    let (r, took) = within(Duration::from_secs(10), cfg, Some(Duration::from_millis(300)));
    assert!(took < Duration::from_millis(1000), "{took:?}");
    assert!(r.run.interrupted);
}
}

on_each_io! {
fn an_answering_server_is_waited_for_within_the_drain() {
    // Responses in flight at the end still arrive and count: the drain is
    // a bound, not a cut at the end.
    let srv = start(Reply::Bytes(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", true));
    let cfg = LoadConfig {
        url: srv.url.clone(),
        concurrency: 4,
        duration_s: Some(0.3),
        keep_alive: true,
        threads: 2,
        ..Default::default()
    };
    let r = run(&cfg).unwrap();
    assert!(r.responses > 0 && r.failed == 0, "{:?}", r.error_samples);
    assert_eq!(srv.requests.load(std::sync::atomic::Ordering::SeqCst), r.responses);
}
}
