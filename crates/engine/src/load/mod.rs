//! Running a load: split the connections over worker threads, run them
//! together, merge their measurements once at the end.

pub(crate) mod control;
pub(crate) mod io;
mod linger;
pub(crate) mod pacing;
pub(crate) mod share;
mod summarize;
pub(crate) mod worker;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::client::target::Target;
use crate::client::transport::tls_context;
use crate::config::{split, Arrivals, Linger, LoadConfig, MAX_TRACE};
use crate::error::{EngineError, Result};
use crate::measure::cpu::{process_cpu, CpuTimes};
use crate::measure::stats::Stats;
use crate::result::{LoadResult, RunFacts};
use crate::workload::Workload;
use control::{Control, Plan};
use io::EventLoop;
use pacing::{Schedule, Shape, Tickets};
use share::Deal;
use worker::{run_worker, PacingSpec, WorkerSpec};

pub fn run(config: &LoadConfig) -> Result<LoadResult> {
    run_with(config, &Control::default())
}

/// Runs the load described by `config`; `control` lets another thread stop
/// it early (the result then says `interrupted`) and watch its progress.
pub fn run_with(config: &LoadConfig, control: &Control) -> Result<LoadResult> {
    let prepared = PreparedLoad::new(config, control)?;
    let m = measure(config, &prepared, control)?;
    Ok(prepared.result(config, prepared.facts(config, m.clock), m.stats))
}

/// Everything a run checks before its first request (settings, the target's
/// address, the workload: a log is read), without running it: a distributed
/// run checks here before any agent loads. `control` stops the reading of
/// a long log.
pub fn check(config: &LoadConfig, control: &Control) -> Result<()> {
    PreparedLoad::new(config, control).map(|_| ())
}

/// What a run needs before its first request, checked and built once: the
/// merge of a distributed run builds the same from the same config.
pub(crate) struct PreparedLoad {
    pub target: Target,
    pub workload: Workload,
    /// The whole load's request count, if bounded by one.
    pub limit: Option<u64>,
    pub end: Option<Duration>,
}

impl PreparedLoad {
    /// `control` stops it while it reads a log (Ctrl-C on a log of
    /// gigabytes): the error is then `Stopped`.
    pub(crate) fn new(config: &LoadConfig, control: &Control) -> Result<PreparedLoad> {
        config.validate()?;
        let target = Target::from_config(config)?;
        io::uses_uring(config, target.tls)?;
        let workload = Workload::build(config, &target, &|| control.stopped())?;
        let limit = match (config.requests, workload.limit()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Ok(PreparedLoad { target, workload, limit, end: config.duration_s.map(Duration::from_secs_f64) })
    }

    pub(crate) fn schedule(&self, config: &LoadConfig) -> Option<Schedule<'_>> {
        schedule(config, &self.workload, self.limit, self.end)
    }

    pub(crate) fn facts(&self, config: &LoadConfig, clock: Clock) -> RunFacts {
        let t = &self.target;
        RunFacts {
            url: config.url.clone(),
            host: t.host.clone(),
            port: t.port,
            path: t.path.clone(),
            address: t.addr.to_string(),
            model: config.model(),
            concurrency: config.concurrency,
            threads: clock.threads,
            keep_alive: config.keep_alive,
            started_unix_s: clock.started_unix_s,
            duration_s: clock.duration_s,
            interrupted: clock.interrupted,
            cpu: clock.cpu,
            busy_poll_us: config.busy_poll_us,
            linger: clock.linger,
            linger_percent: clock.linger_percent,
            io: clock.io,
            http_version: config.http_version,
            streams: config.streams,
            rate: config.rate.clone(),
            think_s: config.think_s,
            random_order: self.workload.random,
            seed: config.seed,
        }
    }

    pub(crate) fn result(&self, config: &LoadConfig, facts: RunFacts, stats: Stats) -> LoadResult {
        summarize::build(config, facts, stats, &self.workload, self.schedule(config).as_ref())
    }
}

/// When and how long a run (or an agent's part of one) ran, and at what cost.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    pub threads: u32,
    pub started_unix_s: f64,
    /// How long after the agreed start the first request could go.
    pub start_lag_s: f64,
    pub duration_s: f64,
    pub interrupted: bool,
    pub cpu: CpuTimes,
    /// The workers' I/O: "io_uring" or "epoll" (agents' differing: both).
    pub io: &'static str,
    /// How the workers held responses (`LoadConfig::linger_applied`).
    pub linger: Linger,
    pub linger_percent: u32,
}

pub(crate) struct Measured {
    pub clock: Clock,
    pub stats: Stats,
}

fn unix_now_s() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// Runs this process's share of the load (all of it unless `config.agent`).
pub(crate) fn measure(config: &LoadConfig, p: &PreparedLoad, control: &Control) -> Result<Measured> {
    let tls = match p.target.tls {
        true => Some(tls_context(&p.target.host, config.http2()).map_err(EngineError::Tls)?),
        false => None,
    };
    if config.http2() {
        if let Some(why) = crate::client::h2::probe::refusal(p.target.addr, tls.as_ref(), timeout_of(config)) {
            return Err(EngineError::BadConfig {
                key: "http_version",
                reason: format!("{why}; drop HTTP/2, or enable it on the server"),
            });
        }
    }
    let (agent, agents) = config.share();
    let threads = config.worker_threads();
    let workers = u64::from(threads);
    let timeout = timeout_of(config);
    let expected_seconds = config.duration_s.map_or(1, |d| d.ceil() as usize + 1);
    let schedule = p.schedule(config);
    let conc = u64::from(config.share_of_concurrency());
    let shares: Vec<usize> = (0..workers).map(|i| split(conc, workers, i) as usize).collect();
    let loops = EventLoop::for_workers(config, p.target.tls, &shares, &p.workload.requests)?;
    let io = loops.first().map_or("epoll", EventLoop::name);
    let (linger, linger_percent) = config.linger_applied(loops.iter().all(EventLoop::lingers));
    let (start, started_unix_s, start_lag_s) = match config.start_at_unix_s {
        Some(at) => {
            wait_until(at, control)?;
            // Anchored at the agreed instant even when late (slow to prepare,
            // or a clock ahead), so that this agent's schedule, deadline and
            // seconds line up with the others'; the lag is reported.
            let lag_s = (unix_now_s() - at).max(0.0);
            let now = Instant::now();
            (now.checked_sub(Duration::from_secs_f64(lag_s)).unwrap_or(now), at, lag_s)
        }
        None => (Instant::now(), unix_now_s(), 0.0),
    };
    let cpu_before = process_cpu();
    let deal = Deal { index: agent, count: agents, n: p.workload.entries.len() as u64 };
    let tickets = Tickets::new(p.limit.map(|l| deal.share_of(l)), p.end.map(|d| start + d), workers).dealt(deal);
    let think = config.think_s.map(|(lo, hi)| (Duration::from_secs_f64(lo), Duration::from_secs_f64(hi)));
    let requests = p.limit.map(|l| deal.share_of(l));
    let plan = Plan { start, requests, length_s: length_s(schedule.as_ref(), p.end) };
    control.begin(plan, workers as usize, &config.live_bounds_us);
    let specs: Vec<WorkerSpec> = (0..workers)
        .map(|i| {
            // This worker's number among all the load's workers, on every agent.
            let global = agent + agents * i;
            WorkerSpec {
                index: i as usize,
                target: &p.target,
                workload: &p.workload,
                pacing: match &schedule {
                    Some(s) => PacingSpec::Open { schedule: s, first: global, step: agents * workers },
                    None => PacingSpec::Closed { tickets: &tickets, think },
                },
                tls: tls.as_ref(),
                // A slot per request in flight: HTTP/2 carries `streams` per connection.
                connections: shares[i as usize] * config.streams as usize,
                timeout,
                run_start: start,
                end: p.end.map(|d| start + d),
                // ab's length rule compares one URL's responses; a list's differ.
                variable_length: config.variable_length || p.workload.requests.len() > 1,
                control,
                expected_seconds,
                want_server: i == 0,
                busy_poll: Duration::from_micros(config.busy_poll_us),
                linger_share: f64::from(linger_percent) / 100.0,
                linger_probe: linger == Linger::Auto,
                seed: config.seed.wrapping_add(global),
                trace_limit: if config.trace { MAX_TRACE.div_ceil(workers as usize) } else { 0 },
                want_head: config.capture_heads,
            }
        })
        .collect();
    let outcomes: Vec<std::thread::Result<std::io::Result<Stats>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = specs
            .into_iter()
            .zip(loops)
            .enumerate()
            .map(|(i, (spec, event_loop))| {
                std::thread::Builder::new()
                    .name(format!("corebench-load-{i}"))
                    .spawn_scoped(scope, move || run_worker(spec, event_loop))
                    .expect("spawning a load worker")
            })
            .collect();
        handles.into_iter().map(|h| h.join()).collect()
    });
    let duration_s = start.elapsed().as_secs_f64();
    let cpu = process_cpu().since(cpu_before);
    let mut merged: Option<Stats> = None;
    for outcome in outcomes {
        let stats = outcome.map_err(|p| EngineError::WorkerPanic(panic_message(&p)))?.map_err(EngineError::Io)?;
        match &mut merged {
            None => merged = Some(stats),
            Some(m) => m.merge(stats),
        }
    }
    let clock = Clock {
        threads,
        started_unix_s,
        start_lag_s,
        duration_s,
        interrupted: control.stopped() && !control.settled(),
        cpu,
        io,
        linger,
        linger_percent,
    };
    Ok(Measured { clock, stats: merged.expect("at least one worker") })
}

/// The most an agreed start may lie ahead: further means the clocks (or the
/// caller) are wrong, and waiting would look like a hang.
fn timeout_of(config: &LoadConfig) -> Duration {
    Duration::from_secs_f64(config.timeout_s)
}

const MAX_START_WAIT_S: f64 = 600.0;

fn wait_until(at_unix_s: f64, control: &Control) -> Result<()> {
    let ahead = at_unix_s - unix_now_s();
    if ahead > MAX_START_WAIT_S {
        return Err(EngineError::BadConfig {
            key: "start_at_unix_s",
            reason: format!("the start is {ahead:.0} s away (at most {MAX_START_WAIT_S} s): are the clocks in step?"),
        });
    }
    loop {
        let left = at_unix_s - unix_now_s();
        if left <= 0.0 || control.stopped() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_secs_f64(left.min(0.05)));
    }
}

/// How long a run is to last, when known: the time its last scheduled
/// request is due (within the end, if any), or else its end.
fn length_s(schedule: Option<&Schedule>, end: Option<Duration>) -> Option<f64> {
    let last_due = schedule.and_then(|s| {
        let unbounded = Schedule { end: None, ..s.clone() };
        s.limit.and_then(|l| l.checked_sub(1)).and_then(|k| unbounded.due(k))
    });
    match (last_due, end) {
        (Some(d), Some(e)) => Some(d.min(e)),
        (d, e) => d.or(e),
    }
    .map(|d| d.as_secs_f64())
}

/// The open-loop schedule, when the config asks for one.
fn schedule<'a>(
    config: &LoadConfig,
    w: &'a Workload,
    limit: Option<u64>,
    end: Option<Duration>,
) -> Option<Schedule<'a>> {
    let shape = if let Some(r) = &config.rate {
        let end_rps = r.end_rps.unwrap_or(r.rps);
        Shape::Rate { start_rps: r.rps, end_rps, ramp_s: r.ramp_s.unwrap_or(0.0) }
    } else if config.open_loop() {
        Shape::Log { offsets_us: &w.offsets_us, period_us: w.period_us, cycle: w.cycle }
    } else {
        return None;
    };
    let arrivals = config.rate.as_ref().map_or(Arrivals::Uniform, |r| r.arrivals);
    Some(Schedule { shape, limit, end, arrivals })
}

fn panic_message(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
