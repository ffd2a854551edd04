//! A load spread over agents: each agent's part goes through JSON, as it
//! does between machines, and the merge must equal what the server saw and
//! what adding the histograms by hand gives.

mod server;

use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use corebench_engine::config::{AgentShare, Arrivals, RateConfig, UrlSpec};
use corebench_engine::measure::summary::{decode, encode};
use corebench_engine::split;
use corebench_engine::{merge, run_agent, AgentPart, Control, EngineError, LoadConfig};
use server::{start, Reply};

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

fn now_s() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

/// Runs `agents` agents together in threads, starting 0.2 s from now, and
/// returns their parts after a JSON round trip.
fn run_agents(cfg: &LoadConfig, agents: u32) -> Vec<AgentPart> {
    let cfg = &server::on_io(cfg);
    let start_at = now_s() + 0.2;
    let parts: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..agents)
            .map(|index| {
                let share = AgentShare { index, count: agents, node: format!("node-{index}") };
                let c = LoadConfig { agent: Some(share), start_at_unix_s: Some(start_at), ..cfg.clone() };
                s.spawn(move || serde_json::to_string(&run_agent(&c, &Control::default()).unwrap()).unwrap())
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let parts: Vec<AgentPart> = parts.iter().map(|p| serde_json::from_str(p).unwrap()).collect();
    for p in &parts {
        server::expect_io(cfg.io, &p.run.io);
    }
    parts
}

fn keep_alive(url: &str, concurrency: u32) -> LoadConfig {
    LoadConfig { url: url.into(), concurrency, keep_alive: true, threads: 2, ..Default::default() }
}

on_each_io! {
fn each_agent_counts_unsuccessful_statuses() {
    const UNAVAILABLE: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n";
    let srv = start(Reply::Bytes(UNAVAILABLE, true));
    let cfg = LoadConfig { requests: Some(300), ..keep_alive(&srv.url, 4) };
    let r = merge(&cfg, run_agents(&cfg, 2)).unwrap();
    let per_agent: Vec<(u64, u64, u64)> = r.agents.iter().map(|a| (a.responses, a.failed, a.unsuccessful)).collect();
    assert_eq!(per_agent.iter().map(|&(n, _, _)| n).sum::<u64>(), 300, "{per_agent:?}");
    assert!(per_agent.iter().all(|&(n, failed, bad)| failed == 0 && bad == n), "{per_agent:?}");
}

fn closed_loop_parts_merge_to_the_servers_count_and_the_hand_merged_histogram() {
    let srv = start(Reply::Bytes(OK, true));
    let cfg = LoadConfig { requests: Some(1000), ..keep_alive(&srv.url, 7) };
    let parts = run_agents(&cfg, 3);
    let mut by_hand = decode(&encode(&parts[0].stats.total_us)).unwrap();
    for p in &parts[1..] {
        by_hand.add(&p.stats.total_us).unwrap();
    }
    let shares: Vec<(u64, u32)> = parts.iter().map(|p| (p.stats.requests(), p.run.concurrency)).collect();
    let r = merge(&cfg, parts).unwrap();
    assert_eq!(srv.requests.load(Ordering::SeqCst), 1000);
    assert_eq!((r.requests, r.responses, r.failed), (1000, 1000, 0));
    // Each agent made its share of the requests on its share of the connections.
    let expected: Vec<(u64, u32)> = (0..3).map(|i| (split(1000, 3, i), split(7, 3, i) as u32)).collect();
    assert_eq!(shares, expected);
    assert_eq!(r.agents.iter().map(|a| a.requests).collect::<Vec<_>>(), vec![334, 333, 333]);
    assert_eq!(r.agents[2].node, "node-2");
    let total = &r.latency_us.total;
    assert_eq!(total.count, 1000);
    for p in &total.percentiles {
        assert_eq!(p.value_us, by_hand.value_at_percentile(p.percentile), "p{}", p.percentile);
    }
    assert_eq!(r.timeline.iter().map(|s| s.completed).sum::<u64>(), 1000);
    assert_eq!(r.run.concurrency, 7);
    assert_eq!(r.run.threads, 6);
}
}

on_each_io! {
fn each_agent_says_what_its_probes_found() {
    // 2 s: a worker's probe decides by its second look (1.35 s in), given
    // the responses; 8 connections per worker, so a hold waits for 2.
    let srv = start(Reply::Bytes(OK, true));
    let cfg = LoadConfig { duration_s: Some(2.0), requests: None, ..keep_alive(&srv.url, 32) };
    let r = merge(&cfg, run_agents(&cfg, 2)).unwrap();
    assert_eq!(r.run.linger, corebench_engine::Linger::Auto);
    let per_agent: Vec<_> = r.agents.iter().map(|a| a.linger_probes).collect();
    // At most one decided probe per worker (2 each), and some decided.
    assert!(per_agent.iter().all(|p| p.probes <= 2 && p.held <= p.probes), "{per_agent:?}");
    assert!(r.linger_probes.probes > 0, "{per_agent:?}");
    assert_eq!(per_agent.iter().map(|p| p.probes).sum::<u64>(), r.linger_probes.probes);
    assert_eq!(per_agent.iter().map(|p| p.held).sum::<u64>(), r.linger_probes.held);
}
}

on_each_io! {
fn open_loop_agents_share_one_schedule() {
    let srv = start(Reply::Bytes(OK, true));
    let rate = Some(RateConfig { rps: 400.0, end_rps: None, ramp_s: None, arrivals: Arrivals::Uniform });
    let cfg = LoadConfig { rate, duration_s: Some(0.5), requests: None, ..keep_alive(&srv.url, 20) };
    let r = merge(&cfg, run_agents(&cfg, 2)).unwrap();
    let s = r.schedule.as_ref().unwrap();
    assert_eq!((s.sent, s.dropped, r.responses), (200, 0, 200));
    assert!((s.target_rps - 400.0).abs() < 1e-6, "{}", s.target_rps);
    assert_eq!(r.agents.iter().map(|a| a.sent).collect::<Vec<_>>(), vec![100, 100]);
    assert_eq!(srv.requests.load(Ordering::SeqCst), 200);
}
}

on_each_io! {
fn a_url_list_is_shared_out_exactly_across_agents() {
    let srv = start(Reply::Bytes(OK, true));
    let urls = ["/a", "/b", "/c"]
        .iter()
        .map(|p| UrlSpec {
            url: format!("{}{}", srv.url.trim_end_matches('/'), p),
            method: "GET".into(),
            body_base64: String::new(),
        })
        .collect();
    let cfg = LoadConfig { urls, requests: Some(9), threads: 1, ..keep_alive(&srv.url, 2) };
    let r = merge(&cfg, run_agents(&cfg, 2)).unwrap();
    let counts: Vec<u64> = r.urls.iter().map(|u| u.responses).collect();
    assert_eq!(counts, vec![3, 3, 3]);
    assert_eq!(r.agents.iter().map(|a| a.requests).collect::<Vec<_>>(), vec![5, 4]);
}
}

on_each_io! {
fn seconds_are_aligned_by_the_wall_clock() {
    let srv = start(Reply::Bytes(OK, true));
    let cfg = LoadConfig { requests: Some(40), ..keep_alive(&srv.url, 2) };
    let mut parts = run_agents(&cfg, 2);
    // As if agent 1 had started two seconds after agent 0.
    parts[1].run.started_unix_s = parts[0].run.started_unix_s + 2.0;
    let r = merge(&cfg, parts).unwrap();
    assert!(r.run.duration_s > 2.0);
    assert_eq!(r.timeline.len(), 3, "{:?}", r.timeline);
    assert_eq!((r.timeline[0].completed, r.timeline[1].completed, r.timeline[2].completed), (20, 0, 20));
}
}

on_each_io! {
fn parts_that_do_not_fit_together_are_refused() {
    let srv = start(Reply::Bytes(OK, true));
    let cfg = LoadConfig { requests: Some(10), ..keep_alive(&srv.url, 2) };
    let mut parts = run_agents(&cfg, 2);
    parts[1].share.index = 0;
    assert!(matches!(merge(&cfg, parts), Err(EngineError::Part(_))));
    assert!(matches!(merge(&cfg, Vec::new()), Err(EngineError::Part(_))));
    let few = LoadConfig { agent: Some(AgentShare { index: 0, count: 3, node: String::new() }), ..cfg };
    let err = run_agent(&server::on_io(&few), &Control::default()).err().unwrap();
    assert!(err.to_string().contains("each needs at least one"), "{err}");
}
}

on_each_io! {
fn a_late_agent_keeps_the_agreed_start_and_reports_its_lag() {
    let srv = start(Reply::Bytes(OK, true));
    let at = now_s() - 0.5;
    let share = AgentShare { index: 0, count: 1, node: String::new() };
    let cfg =
        LoadConfig { requests: Some(10), agent: Some(share), start_at_unix_s: Some(at), ..keep_alive(&srv.url, 2) };
    let part = run_agent(&cfg, &Control::default()).unwrap();
    assert_eq!(part.run.started_unix_s, at);
    assert!((0.5..5.0).contains(&part.run.start_lag_s), "{}", part.run.start_lag_s);
    assert_eq!(part.stats.responses, 10);
}
}
