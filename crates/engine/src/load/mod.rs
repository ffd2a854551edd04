//! Running a load: split the connections over worker threads, run them
//! together, merge their measurements once at the end.

pub mod control;
pub mod pacing;
pub mod timer;
pub mod worker;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::client::target::Target;
use crate::client::transport::tls_context;
use crate::config::LoadConfig;
use crate::error::{EngineError, Result};
use crate::measure::cpu::process_cpu;
use crate::measure::stats::Stats;
use crate::result::{LoadResult, RunFacts};
use crate::workload::Workload;
use control::Control;
use pacing::{Schedule, Shape, Tickets};
use worker::{run_worker, PacingSpec, WorkerSpec};

pub fn run(config: &LoadConfig) -> Result<LoadResult> {
    run_with(config, &Control::default())
}

/// Splits `total` into `parts` shares that differ by at most one.
pub fn split(total: u64, parts: u64, index: u64) -> u64 {
    total / parts + u64::from(index < total % parts)
}

/// Runs the load described by `config`; `control` lets another thread stop
/// it early (the result then says `interrupted`) and watch its progress.
pub fn run_with(config: &LoadConfig, control: &Control) -> Result<LoadResult> {
    config.validate()?;
    let target = Target::from_config(config)?;
    let workload = Workload::build(config, &target)?;
    let tls = match target.tls {
        true => Some(tls_context(&target.host).map_err(EngineError::Tls)?),
        false => None,
    };
    let threads = config.worker_threads();
    let timeout = Duration::from_secs_f64(config.timeout_s);
    let expected_seconds = config.duration_s.map_or(1, |d| d.ceil() as usize + 1);
    let limit = match (config.requests, workload.limit()) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let end = config.duration_s.map(Duration::from_secs_f64);
    let schedule = schedule(config, &workload, limit, end);
    let started_unix_s = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
    let cpu_before = process_cpu();
    let start = Instant::now();
    let tickets = Tickets::new(limit, end.map(|d| start + d), u64::from(threads));
    let think = config.think_s.map(|(lo, hi)| (Duration::from_secs_f64(lo), Duration::from_secs_f64(hi)));
    let conc = u64::from(config.concurrency);
    let specs: Vec<WorkerSpec> = (0..u64::from(threads))
        .map(|i| WorkerSpec {
            target: &target,
            workload: &workload,
            pacing: match &schedule {
                Some(s) => PacingSpec::Open { schedule: s, first: i, step: u64::from(threads) },
                None => PacingSpec::Closed { tickets: &tickets, think },
            },
            tls: tls.as_ref(),
            connections: split(conc, u64::from(threads), i) as usize,
            timeout,
            run_start: start,
            // ab's length rule compares one URL's responses; a list's differ.
            variable_length: config.variable_length || workload.requests.len() > 1,
            control,
            expected_seconds,
            want_server: i == 0,
            busy_poll: Duration::from_micros(config.busy_poll_us),
            seed: config.seed.wrapping_add(i),
        })
        .collect();
    let outcomes: Vec<std::thread::Result<std::io::Result<Stats>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = specs
            .into_iter()
            .enumerate()
            .map(|(i, spec)| {
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
        model: config.model(),
        concurrency: config.concurrency,
        threads,
        keep_alive: config.keep_alive,
        started_unix_s,
        duration_s,
        interrupted: control.stopped(),
        cpu,
        busy_poll_us: config.busy_poll_us,
        rate: config.rate.clone(),
        think_s: config.think_s,
        random_order: workload.random,
        seed: config.seed,
    };
    Ok(LoadResult::build(facts, merged.expect("at least one worker"), &workload, schedule.as_ref()))
}

/// The open-loop schedule, when the config asks for one.
fn schedule<'a>(config: &LoadConfig, w: &'a Workload, limit: Option<u64>, end: Option<Duration>) -> Option<Schedule<'a>> {
    let shape = if let Some(r) = &config.rate {
        let end_rps = r.end_rps.unwrap_or(r.rps);
        Shape::Rate { start_rps: r.rps, end_rps, ramp_s: r.ramp_s.unwrap_or(0.0) }
    } else if config.open_loop() {
        Shape::Log { offsets_us: &w.offsets_us, period_us: w.period_us, cycle: w.cycle }
    } else {
        return None;
    };
    Some(Schedule { shape, limit, end })
}

fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
