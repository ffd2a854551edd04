//! What is requested: one URL, a list of URLs, or the lines of an access
//! log. Every distinct request is turned into bytes once, before the load;
//! the hot path only picks one by index.

pub(crate) mod replay;

use std::collections::HashMap;

use base64::Engine as _;
use rand::rngs::SmallRng;
use rand::Rng;

pub(crate) use crate::client::target::Entry;
use crate::client::target::{build_request, parse_url, request_target, Target};
use crate::config::LoadConfig;
use crate::error::{EngineError, Result};
use replay::ReplaySource;

/// One distinct request, ready to write.
pub(crate) struct PreparedRequest {
    pub method: String,
    pub target: String,
    pub bytes: Vec<u8>,
    /// HEAD responses carry no body whatever their headers say (RFC 9110 §9.3.2).
    pub head: bool,
}

pub(crate) struct Workload {
    pub requests: Vec<PreparedRequest>,
    pub entries: Vec<Entry>,
    /// A timed replay's send offsets, µs from the first line, one per entry.
    pub offsets_us: Vec<u64>,
    /// A looped timed replay starts over after this long.
    pub period_us: u64,
    /// Start over after the last entry (URL lists; a replay with `looped`).
    pub cycle: bool,
    pub random: bool,
    pub source: Option<ReplaySource>,
}

impl Workload {
    /// `stopped` says when to give up reading a log (the caller's Ctrl-C).
    pub(crate) fn build(cfg: &LoadConfig, target: &Target, stopped: &dyn Fn() -> bool) -> Result<Workload> {
        let mut w = Workload {
            requests: Vec::new(),
            entries: Vec::new(),
            offsets_us: Vec::new(),
            period_us: 0,
            cycle: true,
            random: cfg.random_order,
            source: None,
        };
        let mut known = HashMap::new();
        if let Some(r) = &cfg.replay {
            let prefix = target.path.trim_end_matches('/').to_string();
            let mut entries = Vec::new();
            let log = replay::read(r, cfg.requests, stopped, |method, path, status| {
                let request = w.intern(&mut known, cfg, target, method, &format!("{prefix}{path}"), &[]);
                entries.push(Entry { request, status });
            })?;
            w.entries = match log.order.is_empty() {
                true => entries,
                false => log.order.iter().map(|&i| entries[i as usize]).collect(),
            };
            w.offsets_us = log.offsets_us;
            w.period_us = log.period_us;
            w.cycle = r.looped;
            w.random = false;
            w.source = Some(log.source);
        } else if cfg.urls.is_empty() {
            let request = w.intern(&mut known, cfg, target, &cfg.method, &target.path, &cfg.body);
            w.entries.push(Entry { request, status: 0 });
        } else {
            for (i, spec) in cfg.urls.iter().enumerate() {
                let bad = |reason: String| EngineError::BadConfig {
                    key: "urls",
                    reason: format!("urls[{i}] {}: {reason}", spec.url),
                };
                let u = parse_url(&spec.url)?;
                if !target.same_origin(&u) {
                    return Err(bad(format!("not on {}:{} (one server per run)", target.host, target.port)));
                }
                let body = base64::engine::general_purpose::STANDARD
                    .decode(&spec.body_base64)
                    .map_err(|e| bad(format!("body is not base64: {e}")))?;
                let request = w.intern(&mut known, cfg, target, &spec.method, &request_target(&u), &body);
                w.entries.push(Entry { request, status: 0 });
            }
        }
        Ok(w)
    }

    /// The index of the request with these bytes, preparing it the first time.
    fn intern(
        &mut self,
        known: &mut HashMap<Vec<u8>, u32>,
        cfg: &LoadConfig,
        target: &Target,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> u32 {
        let bytes = build_request(cfg, method, path, &target.host_header, body);
        if let Some(&i) = known.get(&bytes) {
            return i;
        }
        let i = self.requests.len() as u32;
        known.insert(bytes.clone(), i);
        self.requests.push(PreparedRequest {
            method: method.to_string(),
            target: path.to_string(),
            head: method.eq_ignore_ascii_case("HEAD"),
            bytes,
        });
        i
    }

    /// The `k`-th request of the run.
    pub(crate) fn entry(&self, k: u64, rng: &mut SmallRng) -> Entry {
        let n = self.entries.len();
        if self.random && n > 1 {
            self.entries[rng.random_range(0..n)]
        } else {
            self.entries[(k % n as u64) as usize]
        }
    }

    /// How many requests the workload holds when it does not start over.
    pub(crate) fn limit(&self) -> Option<u64> {
        (!self.cycle).then_some(self.entries.len() as u64)
    }
}
