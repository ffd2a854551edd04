//! What is requested: one URL, a list of URLs, or the lines of an access
//! log. Every distinct request is turned into bytes once, before the load;
//! the hot path only picks one by index.

pub(crate) mod replay;

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use base64::Engine as _;
use rand::rngs::SmallRng;
use rand::Rng;

pub(crate) use crate::client::target::Entry;
use crate::client::target::{build_request_into, parse_url, request_target, Target};
use crate::config::LoadConfig;
use crate::error::{EngineError, Result};
use replay::ReplaySource;

/// A distinct request's entry in the map that finds it by its bytes' hash:
/// a (u64, u32) slot of 16 bytes and its control byte, at a load of 7/8.
const KNOWN_ENTRY_BYTES: usize = 20;

/// Every distinct request's bytes end to end in one buffer, with where
/// each begins: a log of millions of distinct URLs costs its bytes and a
/// few words each, not several allocations and a map key's copy each.
#[derive(Default)]
pub(crate) struct Requests {
    bytes: Vec<u8>,
    spans: Vec<Span>,
}

#[derive(Clone, Copy)]
struct Span {
    start: usize,
    len: u32,
    /// The method is the first `method_len` bytes; the target (the path
    /// as given, without a proxy's `http://host`) is `target_len` bytes
    /// from `target_at`.
    method_len: u32,
    target_at: u32,
    target_len: u32,
    /// HEAD responses carry no body whatever their headers say (RFC 9110 §9.3.2).
    head: bool,
}

/// One distinct request, ready to write.
#[derive(Clone, Copy)]
pub(crate) struct Request<'a> {
    pub bytes: &'a [u8],
    pub head: bool,
    method: &'a [u8],
    target: &'a [u8],
}

impl Request<'_> {
    pub(crate) fn method(&self) -> String {
        String::from_utf8_lossy(self.method).into_owned()
    }

    pub(crate) fn target(&self) -> String {
        String::from_utf8_lossy(self.target).into_owned()
    }
}

impl Requests {
    /// One request's bytes, as built by `build_request` for `method` and
    /// `target` (which its request line holds, after the method).
    #[cfg(test)]
    pub(crate) fn one(bytes: &[u8], method: &str, target: &str) -> Requests {
        let mut r = Requests::default();
        r.bytes.extend_from_slice(bytes);
        r.seal(0, method, target);
        r
    }

    pub(crate) fn len(&self) -> usize {
        self.spans.len()
    }

    /// The memory the requests take: their bytes and each one's span.
    fn held_bytes(&self) -> usize {
        self.bytes.len() + self.spans.len() * std::mem::size_of::<Span>()
    }

    pub(crate) fn get(&self, i: u32) -> Request<'_> {
        let s = self.spans[i as usize];
        let bytes = &self.bytes[s.start..s.start + s.len as usize];
        let at = s.target_at as usize;
        Request {
            bytes,
            head: s.head,
            method: &bytes[..s.method_len as usize],
            target: &bytes[at..at + s.target_len as usize],
        }
    }

    pub(crate) fn first(&self) -> Option<Request<'_>> {
        (!self.spans.is_empty()).then(|| self.get(0))
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = Request<'_>> {
        (0..self.spans.len() as u32).map(|i| self.get(i))
    }

    /// Makes the bytes from `start` to the end the next request.
    fn seal(&mut self, start: usize, method: &str, target: &str) -> u32 {
        let bytes = &self.bytes[start..];
        // The target ends the request line's second field: after a proxy's `http://host`, where one is.
        let field = (method.len() + 1).min(bytes.len());
        let end = bytes[field..].iter().position(|&b| b == b' ').map_or(bytes.len(), |n| field + n);
        let target_at = end.saturating_sub(target.len()).max(field);
        self.spans.push(Span {
            start,
            len: bytes.len() as u32,
            method_len: method.len() as u32,
            target_at: target_at as u32,
            target_len: (end - target_at) as u32,
            head: method.eq_ignore_ascii_case("HEAD"),
        });
        (self.spans.len() - 1) as u32
    }

    /// The bytes from `start` to the end, less their last copy: the index of
    /// an earlier request with the same bytes (they are dropped), or none.
    fn earlier(&mut self, start: usize, hash: u64, known: &mut HashMap<u64, u32>) -> Option<u32> {
        let &i = known.get(&hash)?;
        let s = self.spans[i as usize];
        if self.bytes[s.start..s.start + s.len as usize] == self.bytes[start..] {
            self.bytes.truncate(start);
            return Some(i);
        }
        None // a collision of hashes: kept as a request of its own
    }
}

pub(crate) struct Workload {
    pub requests: Requests,
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
    fn empty(random: bool) -> Workload {
        Workload {
            requests: Requests::default(),
            entries: Vec::new(),
            offsets_us: Vec::new(),
            period_us: 0,
            cycle: true,
            random,
            source: None,
        }
    }

    /// `stopped` says when to give up reading a log (the caller's Ctrl-C).
    pub(crate) fn build(cfg: &LoadConfig, target: &Target, stopped: &dyn Fn() -> bool) -> Result<Workload> {
        let mut w = Workload::empty(cfg.random_order);
        let mut known = HashMap::new();
        if let Some(r) = &cfg.replay {
            let prefix = target.path.trim_end_matches('/').to_string();
            let mut entries = Vec::new();
            let log = replay::read(r, cfg.requests, stopped, |method, path, status| {
                let request = w.intern(&mut known, cfg, target, method, &format!("{prefix}{path}"), &[]);
                entries.push(Entry { request, status });
                w.requests.held_bytes() + known.len() * KNOWN_ENTRY_BYTES
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

    /// The index of the request with these bytes, preparing it the first
    /// time. Its bytes are built where they will stay; a request seen before
    /// is found by their hash (and compared), and its copy dropped.
    fn intern(
        &mut self,
        known: &mut HashMap<u64, u32>,
        cfg: &LoadConfig,
        target: &Target,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> u32 {
        let r = &mut self.requests;
        let start = r.bytes.len();
        build_request_into(&mut r.bytes, cfg, method, path, &target.host_header, body);
        let hash = {
            let mut h = DefaultHasher::new();
            r.bytes[start..].hash(&mut h);
            h.finish()
        };
        if let Some(i) = r.earlier(start, hash, known) {
            return i;
        }
        let i = r.seal(start, method, path);
        known.entry(hash).or_insert(i);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn built(cfg: &LoadConfig, lines: &[(&str, &str)]) -> (Workload, Vec<u32>) {
        let target = Target::from_config(cfg).unwrap();
        let mut w = Workload::empty(false);
        let mut known = HashMap::new();
        let ids = lines.iter().map(|(m, p)| w.intern(&mut known, cfg, &target, m, p, &[])).collect();
        (w, ids)
    }

    #[test]
    fn each_distinct_request_is_held_once_with_its_method_and_target() {
        let cfg = LoadConfig { url: "http://127.0.0.1:8080/".into(), ..Default::default() };
        let (w, ids) = built(&cfg, &[("GET", "/"), ("HEAD", "/a"), ("GET", "/"), ("GET", "/x?y=1"), ("HEAD", "/a")]);
        assert_eq!(ids, [0, 1, 0, 2, 1], "a request seen before is the same index");
        assert_eq!(w.requests.len(), 3);
        let r = w.requests.get(2);
        assert_eq!((r.method(), r.target(), r.head), ("GET".into(), "/x?y=1".into(), false));
        assert!(r.bytes.starts_with(b"GET /x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"));
        assert!(w.requests.get(1).head);
        let one = w.requests.get(0);
        assert_eq!((one.method(), one.target()), ("GET".into(), "/".into()), "not the / of HTTP/1.1");
        let total: usize = w.requests.iter().map(|r| r.bytes.len()).sum();
        assert_eq!(total, w.requests.bytes.len(), "the dropped copies are gone");
    }

    #[test]
    fn through_a_proxy_the_target_is_the_path_not_the_absolute_url() {
        let cfg = LoadConfig {
            url: "http://127.0.0.1:8080/".into(),
            proxy: Some("127.0.0.1:3128".into()),
            ..Default::default()
        };
        let (w, _) = built(&cfg, &[("GET", "/p")]);
        let r = w.requests.get(0);
        assert!(r.bytes.starts_with(b"GET http://127.0.0.1:8080/p HTTP/1.1\r\n"), "{:?}", r.bytes);
        assert_eq!((r.method(), r.target()), ("GET".into(), "/p".into()));
    }
}
