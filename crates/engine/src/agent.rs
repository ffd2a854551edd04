//! A load spread over agents (processes on one machine or many): each runs
//! its share of the load and returns its part; the merge adds the parts as
//! a run adds its worker threads' (histograms added, counts summed, seconds
//! aligned by the wall clock) into one result of the usual shape, plus a
//! breakdown per agent.

use serde::{Deserialize, Serialize};

use crate::config::{AgentShare, LoadConfig};
use crate::error::{EngineError, Result};
use crate::load::control::Control;
use crate::load::{measure, Clock, PreparedLoad};
use crate::measure::cpu::CpuTimes;
use crate::measure::stats::{Second, Stats};
use crate::result::{AgentRun, AgentSummary, LoadResult};

pub const PART_SCHEMA: &str = "corebench.agent-part/1";

/// What one agent measured: its whole `Stats`, not a summary, so the merge
/// is exact.
#[derive(Serialize, Deserialize)]
pub struct AgentPart {
    pub schema: String,
    pub share: AgentShare,
    #[serde(flatten)]
    pub run: AgentRun,
    pub stats: Stats,
}

/// Runs this agent's share (`config.agent`) of the load.
pub fn run_agent(config: &LoadConfig, control: &Control) -> Result<AgentPart> {
    let Some(share) = config.agent.clone() else {
        return Err(EngineError::BadConfig {
            key: "agent",
            reason: "an agent's run needs its share: index and count".into(),
        });
    };
    let prepared = PreparedLoad::new(config, control)?;
    let m = measure(config, &prepared, control)?;
    let c = m.clock;
    let run = AgentRun {
        cores: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        threads: c.threads,
        concurrency: config.share_of_concurrency(),
        started_unix_s: c.started_unix_s,
        start_lag_s: c.start_lag_s,
        duration_s: c.duration_s,
        interrupted: c.interrupted,
        cpu: c.cpu,
        io: c.io.into(),
    };
    Ok(AgentPart { schema: PART_SCHEMA.into(), share, run, stats: m.stats })
}

/// Merges the parts of every agent of the load `config` describes (the
/// whole load's config, as given to the agents but without their share).
pub fn merge(config: &LoadConfig, mut parts: Vec<AgentPart>) -> Result<LoadResult> {
    let prepared = PreparedLoad::new(config, &Control::default())?;
    check_parts(&parts, prepared.workload.requests.len())?;
    parts.sort_by_key(|p| p.share.index);
    let runs: Vec<&AgentRun> = parts.iter().map(|p| &p.run).collect();
    let t0 = runs.iter().map(|r| r.started_unix_s).fold(f64::INFINITY, f64::min);
    let end = runs.iter().map(|r| r.started_unix_s + r.duration_s).fold(f64::NEG_INFINITY, f64::max);
    // Every agent's transport holds responses but HTTP/2's.
    let (linger, linger_percent) = config.linger_applied(!config.http2());
    let clock = Clock {
        threads: runs.iter().map(|r| r.threads).sum(),
        started_unix_s: t0,
        start_lag_s: runs.iter().map(|r| r.start_lag_s).fold(0.0, f64::max),
        duration_s: end - t0,
        interrupted: runs.iter().any(|r| r.interrupted),
        cpu: runs.iter().fold(CpuTimes::default(), |a, r| a + r.cpu),
        io: match (runs.iter().any(|r| r.io == "io_uring"), runs.iter().any(|r| r.io == "epoll")) {
            (true, true) => "io_uring and epoll",
            (true, false) => "io_uring",
            _ => "epoll",
        },
        linger,
        linger_percent,
    };
    let summaries = parts.iter().map(summary).collect();
    let mut stats = Stats::new(0, prepared.workload.requests.len());
    for mut p in parts {
        // Second i of an agent is second i + offset of the whole run.
        let offset = (p.run.started_unix_s - t0).round() as usize;
        p.stats.timeline.splice(0..0, (0..offset).map(|_| Second::new()));
        stats.merge(p.stats);
    }
    let mut result = prepared.result(config, prepared.facts(config, clock), stats);
    result.agents = summaries;
    Ok(result)
}

fn check_parts(parts: &[AgentPart], urls: usize) -> Result<()> {
    let bad = |why: String| Err(EngineError::Part(why));
    if parts.is_empty() {
        return bad("no agent parts to merge".into());
    }
    let count = parts.len();
    let mut seen = vec![false; count];
    for p in parts {
        if p.schema != PART_SCHEMA {
            return bad(format!("part schema {:?}, expected {PART_SCHEMA:?}", p.schema));
        }
        let (i, n) = (p.share.index as usize, p.share.count as usize);
        if n != count || i >= count || std::mem::replace(&mut seen[i], true) {
            return bad(format!("part of agent {i} of {n} among {count} parts: each agent's part once"));
        }
        if p.stats.urls.len() != urls {
            return bad(format!("agent {i} measured {} distinct requests, this load has {urls}", p.stats.urls.len()));
        }
    }
    Ok(())
}

fn summary(p: &AgentPart) -> AgentSummary {
    let (s, r) = (&p.stats, &p.run);
    let h = &s.total_us;
    let at = |q: f64| if h.is_empty() { 0 } else { h.value_at_quantile(q) };
    let usable_s = r.duration_s * f64::from(r.threads.min(r.cores).max(1));
    AgentSummary {
        index: p.share.index,
        node: p.share.node.clone(),
        run: r.clone(),
        requests: s.requests(),
        responses: s.responses,
        failed: s.errors.total(),
        unsuccessful: s.unsuccessful(),
        throughput_rps: if r.duration_s > 0.0 { s.responses as f64 / r.duration_s } else { 0.0 },
        sent: s.schedule.sent,
        late: s.schedule.late,
        dropped: s.schedule.dropped,
        p50_us: at(0.5),
        p99_us: at(0.99),
        cpu_utilization: if usable_s > 0.0 { (r.cpu.user_s + r.cpu.system_s) / usable_s } else { 0.0 },
        linger_probes: s.linger_probes,
    }
}
