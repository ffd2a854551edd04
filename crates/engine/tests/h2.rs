//! The HTTP/2 client against a scripted frame-level server: the good path
//! (counts exact, streams per connection as asked), and each hostile peer
//! behaviour ending as counted errors of a named class within the
//! per-request timeout (`-s`), never a hang.

mod h2peer;

use std::time::{Duration, Instant};

use corebench_engine::config::HttpVersion;
use corebench_engine::{run, LoadConfig, LoadResult};
use h2peer::{start, Peer};

fn h2(url: &str, connections: u32, streams: u32, requests: u64) -> LoadConfig {
    LoadConfig {
        url: url.into(),
        concurrency: connections,
        streams,
        requests: Some(requests),
        http_version: HttpVersion::Http2,
        timeout_s: 1.0,
        threads: 1,
        ..Default::default()
    }
}

/// Runs `cfg`; fails if it takes longer than `limit`.
fn within(limit: Duration, cfg: &LoadConfig) -> LoadResult {
    let t = Instant::now();
    let r = run(cfg).expect("the run starts");
    assert!(t.elapsed() < limit, "took {:?}, more than {limit:?}", t.elapsed());
    r
}

#[test]
fn the_good_path_counts_exactly_and_multiplexes_as_asked() {
    let srv = start(Peer::Good);
    // Kept alive, as HTTP/2 always is: an HTTP/1.x load would hold responses.
    let r = within(Duration::from_secs(20), &LoadConfig { keep_alive: true, ..h2(&srv.url, 3, 5, 3000) });
    assert_eq!((r.requests, r.responses, r.failed), (3000, 3000, 0), "{:?}", r.error_samples);
    assert_eq!((r.run.linger, r.run.linger_percent), (corebench_engine::Linger::Off, 0), "HTTP/2 does not hold");
    assert_eq!(srv.answered.load(std::sync::atomic::Ordering::SeqCst), 3000);
    assert_eq!(r.status_counts.get(&200), Some(&3000));
    assert_eq!(r.bytes.body, 3000 * 2);
    let h = r.http2.expect("an HTTP/2 summary");
    assert_eq!((h.connections, h.peak_streams, h.goaways, h.resets), (3, 5, 0, 0));
    assert!(h.requests_per_connection_min > 0 && h.requests_per_connection_mean == 1000.0, "{h:?}");
    assert_eq!(r.run.streams, 5);
    assert_eq!(r.run.io, "epoll");
}

#[test]
fn a_goaway_in_the_middle_sends_the_refused_requests_again_on_a_new_connection() {
    let srv = start(Peer::GoAwayAfter(50));
    let r = within(Duration::from_secs(20), &h2(&srv.url, 2, 4, 1000));
    assert_eq!((r.responses, r.failed), (1000, 0), "{:?}", r.error_samples);
    // Each request once: the server answered as many as the client counted.
    assert_eq!(srv.answered.load(std::sync::atomic::Ordering::SeqCst), 1000);
    let h = r.http2.unwrap();
    assert!(h.goaways >= 19 && h.connections >= 20, "{h:?}");
    assert_eq!(h.requests_per_connection_max, 50, "{h:?}");
}

#[test]
fn a_reset_on_every_stream_is_a_receive_error_per_request() {
    let srv = start(Peer::ResetEveryStream);
    let r = within(Duration::from_secs(10), &h2(&srv.url, 2, 4, 40));
    assert_eq!((r.requests, r.responses, r.errors.receive), (40, 0, 40));
    assert!(r.error_samples[0].contains("stream reset: INTERNAL_ERROR"), "{:?}", r.error_samples);
    assert_eq!(r.http2.unwrap().resets, 40);
}

#[test]
fn a_window_that_never_opens_times_out_each_request_with_a_body() {
    let srv = start(Peer::ZeroWindow);
    let mut cfg = h2(&srv.url, 1, 4, 12);
    (cfg.method, cfg.body, cfg.timeout_s) = ("POST".into(), vec![b'x'; 1000], 0.5);
    let r = within(Duration::from_secs(5), &cfg);
    assert_eq!((r.requests, r.responses, r.errors.timeout), (12, 0, 12), "{:?}", r.error_samples);
    // The first four bodies went with the connection's first write, before
    // the server's SETTINGS closed the window; the other eight waited.
    assert_eq!(r.http2.unwrap().flow_control_stalls, 8);
}

#[test]
fn a_settings_flood_ends_the_connection_as_an_exception() {
    let srv = start(Peer::SettingsFlood);
    let r = within(Duration::from_secs(10), &h2(&srv.url, 1, 4, 4));
    assert_eq!((r.requests, r.responses), (4, 0));
    assert_eq!(r.errors.exceptions, 4, "{:?} {:?}", r.errors, r.error_samples);
    assert!(r.error_samples[0].contains("Flooding was detected"), "{:?}", r.error_samples);
}

#[test]
fn a_server_that_stops_reading_times_out_each_request() {
    let srv = start(Peer::StopsReading);
    let mut cfg = h2(&srv.url, 2, 2, 4);
    (cfg.method, cfg.body, cfg.timeout_s) = ("POST".into(), vec![b'x'; 4 << 20], 0.5);
    let r = within(Duration::from_secs(5), &cfg);
    assert_eq!((r.requests, r.responses, r.errors.timeout), (4, 0, 4), "{:?}", r.error_samples);
}

#[test]
fn garbage_frames_are_an_exception_per_request() {
    let srv = start(Peer::Garbage);
    let r = within(Duration::from_secs(10), &h2(&srv.url, 2, 4, 24));
    assert_eq!((r.requests, r.responses, r.errors.exceptions), (24, 0, 24), "{:?}", r.error_samples);
    // A frame longer than the 16 KB the client allows: its header's first bytes.
    let said = "not valid HTTP/2: the client ended the session (FRAME_SIZE_ERROR)";
    assert_eq!(r.error_samples[0], said, "{:?}", r.error_samples);
}

#[test]
fn a_server_without_http2_is_refused_before_the_load() {
    // Answers the preface in HTTP/1.1, as nginx without `http2` does.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut s in listener.incoming().flatten() {
            let _ = s.read(&mut [0u8; 1024]);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    match run(&h2(&url, 1, 1, 1)) {
        Err(corebench_engine::EngineError::BadConfig { key, reason }) => {
            assert_eq!(key, "http_version");
            assert!(reason.contains("HTTP/1.1 400 Bad Request"), "{reason}");
        }
        other => panic!("not refused: {:?}", other.map(|r| r.responses)),
    }
}

#[test]
fn streams_need_http2_and_http2_runs_on_epoll() {
    let bad = |cfg: LoadConfig| match corebench_engine::check(&cfg, &corebench_engine::Control::default()) {
        Err(corebench_engine::EngineError::BadConfig { key, .. }) => key,
        other => panic!("accepted: {other:?}"),
    };
    let base = h2("http://127.0.0.1:1/", 1, 4, 10);
    assert_eq!(bad(LoadConfig { http_version: HttpVersion::Http11, ..base.clone() }), "streams");
    assert_eq!(bad(LoadConfig { io: corebench_engine::IoBackend::Uring, ..base.clone() }), "io");
    assert_eq!(bad(LoadConfig { streams: 0, ..base.clone() }), "streams");
    assert_eq!(bad(LoadConfig { proxy: Some("127.0.0.1:3128".into()), ..base }), "proxy");
}

#[test]
fn heads_over_http2_show_the_fields_sent() {
    let srv = start(Peer::Good);
    let r = within(Duration::from_secs(10), &LoadConfig { capture_heads: true, ..h2(&srv.url, 1, 1, 2) });
    let heads = r.heads.expect("heads, as asked");
    assert!(heads.request.starts_with(":method: GET\n:scheme: http\n:authority: 127.0.0.1:"), "{}", heads.request);
    assert!(!heads.request.contains("HTTP/1.1") && heads.response.is_none(), "{heads:?}");
}
