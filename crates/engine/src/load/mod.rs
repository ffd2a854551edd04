//! Running a load: split the connections over worker threads, run them
//! together, merge their measurements once at the end.

pub mod budget;
pub mod control;
pub mod worker;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::client::target::Target;
use crate::client::transport::tls_context;
use crate::config::LoadConfig;
use crate::error::{EngineError, Result};
use crate::measure::cpu::process_cpu;
use crate::measure::stats::Stats;
use crate::result::{LoadResult, RunFacts};
use budget::{split, Budget};
use control::Control;
use worker::{run_worker, WorkerSpec};

pub fn run(config: &LoadConfig) -> Result<LoadResult> {
    run_with(config, &Control::default())
}

/// Runs the load described by `config`; `control` lets another thread stop
/// it early (the result then says `interrupted`) and watch its progress.
pub fn run_with(config: &LoadConfig, control: &Control) -> Result<LoadResult> {
    config.validate()?;
    let target = Target::from_config(config)?;
    let tls = match target.tls {
        true => Some(tls_context(&target.host).map_err(EngineError::Tls)?),
        false => None,
    };
    let threads = config.worker_threads();
    let timeout = Duration::from_secs_f64(config.timeout_s);
    let expected_seconds = config.duration_s.map_or(1, |d| d.ceil() as usize + 1);
    let started_unix_s = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
    let cpu_before = process_cpu();
    let start = Instant::now();
    let deadline = config.duration_s.map(|d| start + Duration::from_secs_f64(d));
    let conc = u64::from(config.concurrency);
    let outcomes: Vec<std::thread::Result<std::io::Result<Stats>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..u64::from(threads))
            .map(|i| {
                let connections = split(conc, u64::from(threads), i);
                // Requests follow connections, so no thread idles while another queues.
                let requests = config.requests.map(|n| n * connections / conc + u64::from(i < (n * connections) % conc));
                let spec = WorkerSpec {
                    target: &target,
                    tls: tls.as_ref(),
                    connections: connections as usize,
                    budget: Budget::new(requests, deadline),
                    timeout,
                    run_start: start,
                    variable_length: config.variable_length,
                    control,
                    expected_seconds,
                    want_server: i == 0,
                    busy_poll: Duration::from_micros(config.busy_poll_us),
                };
                std::thread::Builder::new()
                    .name(format!("corebench-load-{i}"))
                    .spawn_scoped(scope, move || run_worker(spec))
                    .expect("spawning a load worker")
            })
            .collect();
        handles.into_iter().map(|h| h.join()).collect()
    });
    let duration_s = start.elapsed().as_secs_f64();
    let cpu = process_cpu().since(cpu_before);
    let mut merged: Option<Stats> = None;
    for outcome in outcomes {
        let stats = outcome
            .map_err(|p| EngineError::WorkerPanic(panic_message(&p)))?
            .map_err(EngineError::Io)?;
        match &mut merged {
            None => merged = Some(stats),
            Some(m) => m.merge(stats),
        }
    }
    let facts = RunFacts {
        url: config.url.clone(),
        host: target.host.clone(),
        port: target.port,
        path: target.path.clone(),
        address: target.addr.to_string(),
        concurrency: config.concurrency,
        threads,
        keep_alive: config.keep_alive,
        started_unix_s,
        duration_s,
        interrupted: control.stopped(),
        cpu,
        busy_poll_us: config.busy_poll_us,
    };
    Ok(LoadResult::build(facts, merged.expect("at least one worker")))
}

fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
