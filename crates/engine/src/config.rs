//! The typed configuration of one load run. The CLI and the Python API build
//! it; the engine validates what only it can check (URL, addresses).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
pub enum HttpVersion {
    #[serde(rename = "1.0")]
    Http10,
    #[default]
    #[serde(rename = "1.1")]
    Http11,
    /// HTTP/2 (RFC 9113): with prior knowledge over http:// (h2c), agreed by
    /// ALPN over https://; `streams` requests in flight per connection.
    #[serde(rename = "2")]
    Http2,
}

/// How the load threads talk to the kernel about their sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IoBackend {
    /// io_uring where the kernel and the sandbox allow it (and the URL is
    /// plain http://), else epoll; the result says which ran.
    #[default]
    Auto,
    /// io_uring or nothing: a run refuses to start where it is unavailable.
    Uring,
    /// Readiness events (epoll) and a read and a write per request, as wrk.
    Epoll,
}

/// When a worker's wait may hold responses for later ones (HTTP/1.x, on
/// either transport), so that it wakes once for many.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Linger {
    /// Where a probe finds that holding costs the server no load: a closed
    /// loop (without think time) alternates phases without and with holding
    /// and compares each connection's cycle (response time plus hold); it
    /// holds if the cycle did not grow, and probes again every few seconds.
    /// Open loops and think times never hold.
    #[default]
    Auto,
    /// Always, whatever it costs: a server with room to spare is offered up
    /// to `linger_percent` less load.
    Always,
    /// Never: every wait wakes at the first response.
    Off,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct LoadConfig {
    pub url: String,
    /// Concurrent connections (closed loop: requests in flight).
    #[schemars(range(min = 1, max = MAX_CONCURRENCY))]
    pub concurrency: u32,
    /// Total requests to make; `None` means bounded by `duration_s` alone.
    #[schemars(range(min = 1))]
    pub requests: Option<u64>,
    /// Stop sending after this many seconds; requests in flight then get 1 s
    /// more to finish, and count as timeouts past it.
    #[schemars(range(min = 0.0, max = MAX_DURATION_S))]
    pub duration_s: Option<f64>,
    pub keep_alive: bool,
    pub http_version: HttpVersion,
    /// HTTP/2: the requests in flight on each connection at once (h2load's
    /// -m), so `concurrency × streams` in all. 1 with HTTP/1.x.
    #[schemars(range(min = 1, max = MAX_STREAMS))]
    pub streams: u32,
    #[schemars(length(min = 1), regex(pattern = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$"))]
    pub method: String,
    /// Extra request headers, in order, as given (`Name: value`).
    pub headers: Vec<(String, String)>,
    #[serde(skip)]
    pub body: Vec<u8>,
    pub content_type: Option<String>,
    /// Per-request timeout, from the moment the request is begun to its last
    /// byte (in an open loop, a request that waited for a connection has
    /// its whole timeout once sent).
    #[schemars(range(min = 0.0, max = MAX_DURATION_S))]
    pub timeout_s: f64,
    /// Worker threads, each with its own event loop; 0 = one per available CPU.
    #[schemars(range(max = MAX_THREADS))]
    pub threads: u32,
    /// ab counts a response whose body length differs from the first one as a
    /// "Length" failure; ab's -l turns that off for dynamic pages.
    pub variable_length: bool,
    /// Load is only sent to loopback addresses unless this is set.
    pub allow_remote: bool,
    pub user_agent: String,
    /// After each batch of events a worker keeps polling without sleeping for
    /// this long. 0 (the default) sleeps at once. With generator and server
    /// on one machine, every time the generator sleeps the server pays for
    /// waking it (a cross-CPU wake-up), which lowers the throughput measured;
    /// busy polling removes that cost at the price of a generator core that
    /// looks fully busy, so use it only with the generator on cores of its own.
    #[schemars(range(max = MAX_BUSY_POLL_US))]
    pub busy_poll_us: u64,
    /// HTTP/1.x: when (`linger`) a worker's wait may hold the responses
    /// that came, for up to `linger_percent` of the recent mean response
    /// time, instead of waking at the first (io_uring wakes once a quarter
    /// of the requests in flight are answered; epoll, which cannot count
    /// them, at the deadline); with keep-alive only (`always` without it is
    /// refused), and never while a request is out on a connection it opened
    /// (the worker times connects and handshakes by its own clock), nor with
    /// under 8 requests in flight on the worker's thread
    /// (`LINGER_MIN_IN_FLIGHT`: there is nothing to hold for). Fewer
    /// wake-ups cost the generator less CPU, and a server on the same
    /// machine less of its own (it pays for waking the generator); the
    /// kernel's receive timestamps keep every response's time exact. The
    /// price: a closed loop sends each connection's next request that much
    /// later, which a saturated server absorbs and one with room to spare
    /// reads as less load.
    pub linger: Linger,
    /// How long a held response may wait, in percent of the recent mean
    /// response time.
    #[schemars(range(min = 1, max = MAX_LINGER_PERCENT))]
    pub linger_percent: u32,
    /// The workers' I/O: io_uring (completions, several sockets' sends and
    /// receives per system call) or epoll; `auto` takes io_uring where it
    /// works. HTTPS runs on epoll.
    pub io: IoBackend,
    /// Open loop: requests per second, scheduled whatever the responses do.
    pub rate: Option<RateConfig>,
    /// Closed loop with think time: after each response a connection (a
    /// user) waits a random time, uniform in [min, max] seconds (siege -d).
    pub think_s: Option<(f64, f64)>,
    /// Several URLs on the target's origin, cycled in order (or at random
    /// with `random_order`); empty means `url` alone.
    pub urls: Vec<UrlSpec>,
    pub random_order: bool,
    /// Seeds the random URL order and think times, so a run can be repeated.
    pub seed: u64,
    /// Replays an access log instead of `url`/`urls`.
    pub replay: Option<ReplayConfig>,
    /// This process's part of a load spread over several agents; `None`
    /// runs the whole load here.
    pub agent: Option<AgentShare>,
    /// Wait until this wall-clock instant (Unix seconds) before the first
    /// request, so that agents on several machines start together.
    pub start_at_unix_s: Option<f64>,
    /// An HTTP proxy, `HOST:PORT` on a loopback address, that every request
    /// is sent to with the URL as its target in absolute form (ab's -X).
    /// The target must still be a loopback address (or `allow_remote`).
    pub proxy: Option<String>,
    /// Keep each response's timings (its start and ab's four phases) and
    /// status, up to `MAX_TRACE` of them, for ab's per-request file (-g).
    /// Off by default: the measurement is HDR histograms, never a list.
    pub trace: bool,
    /// Keep the head of the request as sent and of the first response
    /// received (ab's -v 2 prints them).
    pub capture_heads: bool,
    /// Latency bounds (µs) whose exceedances each whole second counts for a
    /// live watcher (a capacity step that ends once its verdict is settled),
    /// and the whole run counts in its result (`over_bounds`).
    #[schemars(length(max = 4))]
    pub live_bounds_us: Vec<u64>,
}

/// One agent's part of a distributed load. Connections, users and request
/// counts are split as evenly as integers allow (shares differ by at most
/// one), and request k of the whole load (its k-th scheduled send, URL or
/// log line) is made by agent `k mod count`: the agents' parts add up to
/// exactly the load one process would have made.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentShare {
    pub index: u32,
    pub count: u32,
    /// Where the agent ran (a node's name or address), for reports.
    #[serde(default)]
    pub node: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RateConfig {
    #[schemars(range(min = 0.0, max = MAX_RATE_RPS))]
    pub rps: f64,
    /// With `ramp_s`: the rate rises (or falls) linearly from `rps` to this.
    #[schemars(range(min = MIN_RATE_RPS, max = MAX_RATE_RPS))]
    pub end_rps: Option<f64>,
    #[schemars(range(min = 0.0, max = MAX_DURATION_S))]
    pub ramp_s: Option<f64>,
    /// How the scheduled requests are spaced in time.
    #[serde(default)]
    pub arrivals: Arrivals,
}

/// The arrival process of an open loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    /// Evenly spaced, 1/rate apart (wrk2's schedule): a D/·/· queue.
    #[default]
    Uniform,
    /// A Poisson process of the rate: exponential gaps, as the sum of many
    /// independent users' requests (the Palm–Khintchine theorem), so the
    /// server sees an M/·/· queue.
    Poisson,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UrlSpec {
    pub url: String,
    #[serde(default = "get")]
    pub method: String,
    /// The request body, base64 (bodies may be binary).
    #[serde(default)]
    pub body_base64: String,
}

fn get() -> String {
    "GET".into()
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayConfig {
    pub path: String,
    /// An Apache `LogFormat` string; `None` reads Common or Combined.
    pub log_format: Option<String>,
    /// Replay methods other than GET and HEAD.
    #[serde(default)]
    pub allow_unsafe: bool,
    /// Use at most this many of the log's requests.
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
    /// Start over at the end of the log (until the duration or count ends).
    #[serde(default)]
    pub looped: bool,
    /// Send each request at its time in the log, this many times faster;
    /// `None` sends as fast as `concurrency` allows.
    #[schemars(range(min = 0.0, max = MAX_SPEED))]
    pub speed: Option<f64>,
}

impl Default for LoadConfig {
    fn default() -> Self {
        LoadConfig {
            url: String::new(),
            concurrency: 1,
            requests: None,
            duration_s: None,
            keep_alive: false,
            http_version: HttpVersion::Http11,
            streams: 1,
            method: "GET".into(),
            headers: Vec::new(),
            body: Vec::new(),
            content_type: None,
            timeout_s: 30.0,
            threads: 0,
            variable_length: false,
            allow_remote: false,
            user_agent: concat!("corebench/", env!("CARGO_PKG_VERSION")).into(),
            busy_poll_us: 0,
            linger: Linger::Auto,
            linger_percent: DEFAULT_LINGER_PERCENT,
            io: IoBackend::Auto,
            rate: None,
            think_s: None,
            urls: Vec::new(),
            random_order: false,
            seed: 1,
            replay: None,
            agent: None,
            start_at_unix_s: None,
            proxy: None,
            trace: false,
            capture_heads: false,
            live_bounds_us: Vec::new(),
        }
    }
}

/// The latency bounds a live watcher may count exceedances of.
pub const MAX_LIVE_BOUNDS: usize = 4;
/// A million connections is past any one machine's file descriptors.
pub const MAX_CONCURRENCY: u32 = 1_000_000;
/// Threads beyond the cores only take turns.
pub const MAX_THREADS: u32 = 1024;
/// The most concurrent streams asked of one HTTP/2 connection: servers
/// allow 100 to 256 (nginx 128, Apache 100), RFC 9113 at most 2^31.
pub const MAX_STREAMS: u32 = 1024;
/// A week: longer is a typo, and would run past a u64 of nanoseconds' sums.
pub const MAX_DURATION_S: f64 = 7.0 * 86_400.0;
/// A log replayed a billion times faster than it was written is all at once.
pub const MAX_SPEED: f64 = 1e9;
/// Longer spins only burn CPU: the next response is due within microseconds.
pub const MAX_BUSY_POLL_US: u64 = 10_000;
/// Holding responses longer than a quarter of their time stretches a
/// closed loop's cycle past any use.
pub const MAX_LINGER_PERCENT: u32 = 25;
/// The fewest requests in flight on a worker's thread with which its wait
/// holds responses: it wakes once a quarter of them are answered, so with
/// fewer a quarter is one response, which there is nothing to hold for.
pub const LINGER_MIN_IN_FLIGHT: usize = 8;
/// Enough to wake a fourth as often, or less, against a saturated server
/// (0.16 to 0.17 sleeps per response against 0.68 to 0.98 without holding,
/// bench/agreement.py: docs/benchmarks.md),
/// little enough that a probe's phases of holding, a tenth of the time,
/// cost a server with room to spare under 1% of its load.
pub const DEFAULT_LINGER_PERCENT: u32 = 10;
/// A bound on every schedule: no loop on this machine could send faster.
pub const MAX_RATE_RPS: f64 = 10_000_000.0;
/// One request every 1,000 s: slower is a typo, and its due times would
/// run past any clock.
pub const MIN_RATE_RPS: f64 = 0.001;
/// The most responses a `trace` keeps (about 40 MB); the rest are counted.
pub const MAX_TRACE: usize = 1_000_000;
/// The most memory a replayed log's requests may take: each distinct
/// request's bytes, its span and its entry in the map that finds it, and
/// 28 bytes a line (about 250 bytes a line of a log of distinct URLs:
/// 2,000,000 lines, 500 MB). A timed replay's send order
/// needs its whole log, so a larger one is refused when it reaches this,
/// rather than read until the machine swaps beside the server it measures.
pub const MAX_REPLAY_BYTES: u64 = 2 << 30;

pub(crate) fn bad(key: &'static str, reason: impl Into<String>) -> EngineError {
    EngineError::BadConfig { key, reason: reason.into() }
}

impl LoadConfig {
    pub fn validate(&self) -> Result<()> {
        if self.live_bounds_us.len() > MAX_LIVE_BOUNDS {
            return Err(bad("live_bounds_us", format!("at most {MAX_LIVE_BOUNDS} bounds")));
        }
        if self.concurrency == 0 || self.concurrency > MAX_CONCURRENCY {
            return Err(bad("concurrency", format!("{} is not from 1 to {MAX_CONCURRENCY}", self.concurrency)));
        }
        if self.threads > MAX_THREADS {
            return Err(bad("threads", format!("{} is more than {MAX_THREADS}", self.threads)));
        }
        // A replay that does not loop is bounded by its log.
        let bounded_by_log = self.replay.as_ref().is_some_and(|r| !r.looped);
        match (self.requests, self.duration_s) {
            (None, None) if !bounded_by_log => {
                let what = if self.replay.is_some() { "a looped replay needs" } else { "give" };
                return Err(bad("requests", format!("{what} a request count or a duration")));
            }
            (Some(0), _) => return Err(bad("requests", "must be at least 1")),
            (Some(n), None) if u64::from(self.concurrency) > n && !self.open_loop() && self.replay.is_none() => {
                return Err(bad(
                    "concurrency",
                    format!(
                        "{} connections are more than the {} requests to make: lower the concurrency or raise the requests",
                        self.concurrency, n
                    ),
                ))
            }
            _ => {}
        }
        if let Some(d) = self.duration_s {
            if !(d.is_finite() && d > 0.0 && d <= MAX_DURATION_S) {
                return Err(bad("duration_s", format!("{d} is not a positive number of seconds up to a week")));
            }
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0 && self.timeout_s <= MAX_DURATION_S) {
            return Err(bad(
                "timeout_s",
                format!("{} is not a positive number of seconds up to a week", self.timeout_s),
            ));
        }
        if self.busy_poll_us > MAX_BUSY_POLL_US {
            return Err(bad("busy_poll_us", format!("{} is more than {MAX_BUSY_POLL_US} µs", self.busy_poll_us)));
        }
        if !(1..=MAX_LINGER_PERCENT).contains(&self.linger_percent) {
            let why =
                format!("{}% is not between 1% and {MAX_LINGER_PERCENT}% of the response time", self.linger_percent);
            return Err(bad("linger_percent", why));
        }
        // `auto` holds where it can; `always` is a promise HTTP/2 cannot
        // keep, nor a run whose every request opens a connection (a hold
        // would lengthen the connects, timed by the worker's clock).
        if self.linger == Linger::Always && self.http2() {
            return Err(bad("linger", "HTTP/2 does not hold responses: use auto or off"));
        }
        if self.linger == Linger::Always && !self.keep_alive {
            return Err(bad(
                "linger",
                "responses are held on keep-alive connections only: add keep-alive (-k), or use auto or off",
            ));
        }
        self.validate_model()?;
        self.validate_share()?;
        self.validate_http2()?;

        let token = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic() && b != b':');
        if !token(&self.method) {
            return Err(bad("method", format!("{:?} is not an HTTP method token", self.method)));
        }
        // RFC 9110 §5.5: a field value is visible characters, spaces, tabs
        // and obs-text; any other control byte (CR and LF above all, which
        // would end the header and smuggle another) is refused.
        let field_value = |s: &str| s.bytes().all(|b| b == b'\t' || b == b' ' || (b > 0x20 && b != 0x7f));
        for (name, value) in &self.headers {
            if !token(name) || !field_value(value) {
                return Err(bad(
                    "headers",
                    format!(
                        "{name:?}: {value:?} is not a valid header: a value holds visible characters, spaces and tabs"
                    ),
                ));
            }
        }
        if let Some(ct) = self.content_type.as_deref().filter(|ct| !field_value(ct)) {
            return Err(bad(
                "content_type",
                format!("{ct:?} is not a valid Content-Type: it holds visible characters, spaces and tabs"),
            ));
        }
        Ok(())
    }

    fn validate_model(&self) -> Result<()> {
        let positive = |x: f64| x.is_finite() && x > 0.0;
        let open = self.rate.is_some() || self.replay.as_ref().is_some_and(|r| r.speed.is_some());
        if open && self.think_s.is_some() {
            return Err(bad("think_s", "think time belongs to closed-loop users; an open-loop schedule has none"));
        }
        if self.rate.is_some() && self.replay.as_ref().is_some_and(|r| r.speed.is_some()) {
            return Err(bad(
                "rate",
                "a replay at the log's own speed has its own schedule: give rate or speed, not both",
            ));
        }
        if let Some(r) = &self.rate {
            let end = r.end_rps.unwrap_or(r.rps);
            if !(r.rps.is_finite() && r.rps >= 0.0 && end >= MIN_RATE_RPS)
                || (r.end_rps.is_none() && r.rps < MIN_RATE_RPS)
            {
                return Err(bad("rate", format!("rates must be at least {MIN_RATE_RPS} requests per second")));
            }
            if r.rps > MAX_RATE_RPS || end > MAX_RATE_RPS {
                return Err(bad("rate", format!("more than {MAX_RATE_RPS} requests per second")));
            }
            match (r.end_rps.is_some(), r.ramp_s) {
                (true, Some(d)) if positive(d) && d <= MAX_DURATION_S => {}
                (false, None) => {}
                (true, _) => return Err(bad("ramp_s", "a rate range needs a positive ramp duration")),
                (false, Some(_)) => return Err(bad("ramp_s", "a ramp needs a rate range START..END")),
            }
        }
        if let Some((lo, hi)) = self.think_s {
            if !(lo.is_finite() && hi.is_finite() && 0.0 <= lo && lo <= hi && hi <= 3600.0) {
                return Err(bad("think_s", format!("think time {lo}..{hi} s is not a range MIN..MAX within an hour")));
            }
        }
        if let Some(r) = &self.replay {
            if !self.urls.is_empty() {
                return Err(bad("urls", "a replay takes its URLs from the log"));
            }
            if r.speed.is_some_and(|s| !positive(s) || s > MAX_SPEED) {
                return Err(bad("speed", "must be a positive factor (1 = the log's own pace)"));
            }
            if r.limit == Some(0) {
                return Err(bad("limit", "must be at least 1"));
            }
        }
        Ok(())
    }

    fn validate_http2(&self) -> Result<()> {
        if self.streams == 0 || self.streams > MAX_STREAMS {
            return Err(bad("streams", format!("{} is not from 1 to {MAX_STREAMS}", self.streams)));
        }
        if self.http_version != HttpVersion::Http2 {
            if self.streams > 1 {
                return Err(bad("streams", "concurrent streams on a connection need HTTP/2 (--http2, or http = \"2\" in a plan or the Python API)"));
            }
            return Ok(());
        }
        if self.proxy.is_some() {
            return Err(bad("proxy", "an HTTP/1.1 proxy (ab's -X) does not carry HTTP/2: drop the proxy or HTTP/2"));
        }
        if self.io == IoBackend::Uring {
            return Err(bad("io", "HTTP/2 runs on epoll: use io = \"auto\" or \"epoll\""));
        }
        Ok(())
    }

    /// True when the load speaks HTTP/2.
    pub fn http2(&self) -> bool {
        self.http_version == HttpVersion::Http2
    }

    fn validate_share(&self) -> Result<()> {
        if let Some(a) = &self.agent {
            if a.count == 0 || a.index >= a.count {
                return Err(bad("agent", format!("agent {} of {} does not exist", a.index, a.count)));
            }
            if self.concurrency < a.count {
                return Err(bad(
                    "concurrency",
                    format!(
                        "{} connections cannot be shared by {} agents: each needs at least one",
                        self.concurrency, a.count
                    ),
                ));
            }
        }
        if let Some(t) = self.start_at_unix_s {
            if !(t.is_finite() && t > 0.0) {
                return Err(bad("start_at_unix_s", format!("{t} is not a Unix time")));
            }
        }
        Ok(())
    }

    /// The agent this process is, and how many share the load.
    pub fn share(&self) -> (u64, u64) {
        self.agent.as_ref().map_or((0, 1), |a| (u64::from(a.index), u64::from(a.count)))
    }

    /// The connections (or users) this process opens: its share of `concurrency`.
    pub fn share_of_concurrency(&self) -> u32 {
        let (index, count) = self.share();
        split(u64::from(self.concurrency), count, index) as u32
    }

    /// True when requests follow a schedule rather than the responses.
    pub fn open_loop(&self) -> bool {
        self.rate.is_some() || self.replay.as_ref().is_some_and(|r| r.speed.is_some())
    }

    /// How the workers hold responses, and for what share of the response
    /// time, given whether their transports can hold (HTTP/2's cannot). `auto`
    /// probes a closed loop's cycle: with a schedule or think times there is
    /// no cycle to probe, and it does not hold. Without keep-alive nothing
    /// holds: every request opens a connection, whose connect (and TLS
    /// handshake) a hold would delay, timed by the worker's clock rather
    /// than the kernel's.
    pub(crate) fn linger_applied(&self, holds: bool) -> (Linger, u32) {
        let holds = holds && self.keep_alive;
        let cycle = !self.open_loop() && self.think_s.is_none();
        match self.linger {
            Linger::Auto if holds && cycle => (Linger::Auto, self.linger_percent),
            Linger::Always if holds => (Linger::Always, self.linger_percent),
            _ => (Linger::Off, 0),
        }
    }

    /// The name of the load model, as results and reports call it.
    pub fn model(&self) -> &'static str {
        match (&self.replay, &self.rate, self.think_s) {
            (Some(_), _, _) => "replay",
            (None, Some(_), _) => "rate",
            (None, None, Some(_)) => "users",
            (None, None, None) => "closed",
        }
    }

    pub fn worker_threads(&self) -> u32 {
        let avail = std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1);
        let wanted = if self.threads == 0 { avail } else { self.threads };
        wanted.clamp(1, self.share_of_concurrency().max(1))
    }
}

/// Splits `total` into `parts` shares that differ by at most one.
pub fn split(total: u64, parts: u64, index: u64) -> u64 {
    total / parts + u64::from(index < total % parts)
}

/// The JSON Schema of `LoadConfig`: every setting, its type, default and
/// limits, generated from the types above. The Python side's models are
/// generated from it (python/corebench/config/engine.py), so a setting is
/// defined once, here.
pub fn load_config_schema() -> String {
    serde_json::to_string_pretty(&schemars::schema_for!(LoadConfig)).expect("a schema serializes")
}
