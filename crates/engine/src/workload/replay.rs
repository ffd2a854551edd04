//! Reading an access log for replay: every line is either a request to send
//! or a skip with its reason, so a report can account for the whole log.

use std::fs::File;
use std::io::BufReader;
use std::ops::ControlFlow;

use schemars::JsonSchema;
use serde::Serialize;

use crate::config::{ReplayConfig, MAX_RATE_RPS, MAX_REPLAY_BYTES};
use crate::error::{EngineError, Result};
use corebench_accesslog::{parse_line, read_lines, LogEntry, LogFormat, Skip, MAX_LINE_BYTES};

const EXAMPLES: usize = 5;
/// What a line costs beside its request's bytes: its entry (8 bytes), its
/// time (8), its send offset (8) and its place in the send order (4).
const LINE_BYTES: u64 = 28;
const STOP_CHECK_LINES: u64 = 4096;
const EXAMPLE_CHARS: usize = 120;
pub(crate) const COMMON_OR_COMBINED: &str = "Common or Combined Log Format";

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SkipCount {
    pub reason: String,
    pub count: u64,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SkippedLine {
    pub line: u64,
    pub reason: String,
    /// The start of the line, with control and non-ASCII characters escaped.
    pub text: String,
}

/// Where a replay's requests came from, and what was left out and why.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReplaySource {
    pub path: String,
    pub log_format: String,
    /// Lines read (all of them, unless `stopped_at_limit`).
    pub lines: u64,
    /// Lines turned into requests: `lines` = `replayed` + the skipped counts.
    pub replayed: u64,
    pub skipped: Vec<SkipCount>,
    pub skipped_examples: Vec<SkippedLine>,
    pub stopped_at_limit: bool,
    /// Lines stamped earlier than a line before them (Apache stamps a
    /// request's start but writes its line at the end); a timed replay sends
    /// every line at its own time, so these go out before lines above them.
    pub out_of_order: u64,
    /// Log time from the first replayed request to the last.
    pub span_s: f64,
}

pub(crate) struct ReplayLog {
    /// A timed replay's send order (indices of the replayed lines, sorted by
    /// time) and offsets (µs from the first request, already divided by the
    /// speed); both empty when not timed.
    pub order: Vec<u32>,
    pub offsets_us: Vec<u64>,
    /// A looped timed replay starts over this long after its first request:
    /// the log's span and one second more, at the replay's speed.
    pub period_us: u64,
    pub source: ReplaySource,
}

fn bad(key: &'static str, reason: String) -> EngineError {
    EngineError::BadConfig { key, reason }
}

/// Reads the log, calling `on_request(method, target, status)` for every
/// line to replay, in the log's order; it returns the bytes its requests
/// hold so far. A load of `requests` that replays in the log's order
/// (untimed) sends only the first `requests` lines: the reading stops
/// after them, so `-n 1000` on a log of millions reads about a thousand
/// lines. A timed replay sends in time order, which the whole log decides.
/// A log whose requests would hold more than MAX_REPLAY_BYTES is refused
/// at the line that reaches it.
pub(crate) fn read(
    cfg: &ReplayConfig,
    requests: Option<u64>,
    stopped: &dyn Fn() -> bool,
    on_request: impl FnMut(&str, &str, u16) -> usize,
) -> Result<ReplayLog> {
    read_within(cfg, requests, stopped, MAX_REPLAY_BYTES, on_request)
}

fn read_within(
    cfg: &ReplayConfig,
    requests: Option<u64>,
    stopped: &dyn Fn() -> bool,
    max_bytes: u64,
    mut on_request: impl FnMut(&str, &str, u16) -> usize,
) -> Result<ReplayLog> {
    let format = match &cfg.log_format {
        Some(spec) => Some(LogFormat::parse(spec).map_err(|e| bad("log_format", e))?),
        None => None,
    };
    let file = File::open(&cfg.path).map_err(|e| bad("replay", format!("cannot read {}: {e}", cfg.path)))?;
    let mut src = ReplaySource {
        path: cfg.path.clone(),
        log_format: cfg.log_format.clone().unwrap_or_else(|| COMMON_OR_COMBINED.into()),
        lines: 0,
        replayed: 0,
        skipped: Vec::new(),
        skipped_examples: Vec::new(),
        stopped_at_limit: false,
        out_of_order: 0,
        span_s: 0.0,
    };
    let timed = cfg.speed.is_some();
    let mut times: Vec<f64> = Vec::new();
    let mut untimed = false;
    let sent = if timed { None } else { requests };
    let limit = cfg.limit.unwrap_or(u64::MAX).min(sent.unwrap_or(u64::MAX));
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut gave_up = false;
    let mut too_big = false;
    let outcome = read_lines(&mut reader, MAX_LINE_BYTES, |no, line| {
        if src.replayed >= limit {
            src.stopped_at_limit = true;
            return ControlFlow::Break(());
        }
        // Every few thousand lines: a log of gigabytes takes minutes.
        if no % STOP_CHECK_LINES == 0 && stopped() {
            gave_up = true;
            return ControlFlow::Break(());
        }
        src.lines = no;
        let parsed = line.and_then(|l| match &format {
            Some(f) => f.parse_line(l),
            None => parse_line(l),
        });
        match parsed.map_err(Skip::reason).and_then(|e| replayable(e, cfg.allow_unsafe)) {
            Ok(e) => {
                src.replayed += 1;
                match e.time_s {
                    Some(t) => times.push(t),
                    None => untimed = true,
                }
                let held = on_request(e.method, e.target, e.status) as u64 + LINE_BYTES * src.replayed;
                if held > max_bytes {
                    too_big = true;
                    return ControlFlow::Break(());
                }
            }
            Err(why) => skip(&mut src, no, why, line.unwrap_or_default()),
        }
        ControlFlow::Continue(())
    });
    outcome.map_err(|e| bad("replay", format!("cannot read {}: {e}", cfg.path)))?;
    if gave_up {
        return Err(EngineError::Stopped(format!("reading {} (line {})", cfg.path, src.lines)));
    }
    if too_big {
        let (lines, held_mib) = (src.lines, max_bytes >> 20);
        return Err(bad(
            "replay",
            format!(
                "{}: its requests would take more than {held_mib} MiB of memory (reached at line {lines}, {} \
                 requests): replay its first lines (--limit N, a plan's [load] limit) or a part of the log",
                cfg.path, src.replayed
            ),
        ));
    }
    if src.replayed == 0 {
        let why: Vec<String> = src.skipped.iter().map(|s| format!("{} {}", s.count, s.reason)).collect();
        return Err(bad(
            "replay",
            format!("{}: none of its {} lines is a request to replay ({})", cfg.path, src.lines, why.join(", ")),
        ));
    }
    if timed && untimed {
        return Err(bad("speed", format!("{} has no request times (%t): replay it without a speed", src.log_format)));
    }
    let (order, offsets, out_of_order, span_s) = match (timed, cfg.speed) {
        (true, Some(speed)) => schedule(&times, speed),
        _ => (Vec::new(), Vec::new(), 0, 0.0),
    };
    src.out_of_order = out_of_order;
    src.span_s = span_s;
    let period_us = ((span_s + 1.0) / cfg.speed.unwrap_or(1.0) * 1e6).round() as u64;
    if timed && (period_us == 0 || src.replayed as f64 / (period_us as f64 / 1e6) > MAX_RATE_RPS) {
        let speed = cfg.speed.unwrap_or(1.0);
        return Err(bad(
            "speed",
            format!(
                "at {speed}x the log's {} requests would come faster than {MAX_RATE_RPS} per second: lower the speed",
                src.replayed
            ),
        ));
    }
    Ok(ReplayLog { order, offsets_us: offsets, period_us, source: src })
}

fn replayable(e: LogEntry<'_>, allow_unsafe: bool) -> std::result::Result<LogEntry<'_>, &'static str> {
    if !allow_unsafe && !matches!(e.method, "GET" | "HEAD") {
        return Err("method other than GET or HEAD (replayed only with --allow-unsafe)");
    }
    Ok(e)
}

fn skip(src: &mut ReplaySource, line: u64, reason: &str, text: &str) {
    match src.skipped.iter_mut().find(|s| s.reason == reason) {
        Some(s) => s.count += 1,
        None => src.skipped.push(SkipCount { reason: reason.into(), count: 1 }),
    }
    if src.skipped_examples.len() < EXAMPLES {
        // Printable as it is; control bytes and non-ASCII escaped, so junk
        // cannot garble a terminal.
        let text: String = text
            .chars()
            .take(EXAMPLE_CHARS)
            .flat_map(|c| match c {
                ' '..='~' => vec![c],
                _ => c.escape_default().collect(),
            })
            .collect();
        src.skipped_examples.push(SkippedLine { line, reason: reason.into(), text });
    }
}

/// The send schedule of a timed replay: each line at its own time. Log
/// lines are not in time order (Apache stamps a request when it starts but
/// writes the line when it ends; some logs are shuffled within the minute),
/// so the lines are sorted by time, stably: equal stamps keep the log's
/// order. Logs record whole seconds, so the lines sharing one stamp are
/// spread evenly over the gap to the next stamp, at most a second, instead
/// of leaving in one burst. Returns the send order (indices into the log's
/// lines), the offsets in µs at `speed`, the number of lines stamped
/// earlier than a line before them, and the span in seconds.
fn schedule(times: &[f64], speed: f64) -> (Vec<u32>, Vec<u64>, u64, f64) {
    let mut latest = f64::NEG_INFINITY;
    let mut out_of_order = 0;
    for &t in times {
        out_of_order += u64::from(t < latest);
        latest = latest.max(t);
    }
    let mut order: Vec<u32> = (0..times.len() as u32).collect();
    order.sort_by(|&a, &b| times[a as usize].total_cmp(&times[b as usize]));
    let sorted: Vec<f64> = order.iter().map(|&i| times[i as usize]).collect();
    let first = sorted[0];
    let mut offsets = Vec::with_capacity(sorted.len());
    let mut i = 0;
    while i < sorted.len() {
        let t = sorted[i];
        let run = sorted[i..].iter().take_while(|&&x| x == t).count();
        let gap = sorted.get(i + run).map_or(1.0, |next| (next - t).min(1.0));
        for j in 0..run {
            let at = t - first + gap * j as f64 / run as f64;
            offsets.push((at / speed * 1e6).round() as u64);
        }
        i += run;
    }
    (order, offsets, out_of_order, sorted[sorted.len() - 1] - first)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log of `n` lines for /p0, /p1 ..., line i stamped at second
    /// `second(i)`, in a file of its own, and its replay at `speed`.
    fn log_of(
        name: &str,
        n: usize,
        second: impl Fn(usize) -> usize,
        speed: Option<f64>,
    ) -> (std::path::PathBuf, ReplayConfig) {
        let path = std::env::temp_dir().join(format!("corebench-replay-{name}-{}.log", std::process::id()));
        let lines: String = (0..n)
            .map(|i| format!("127.0.0.1 - - [28/Nov/2026:10:00:{:02} +0000] \"GET /p{i} HTTP/1.1\" 200 5\n", second(i)))
            .collect();
        std::fs::write(&path, lines).unwrap();
        let cfg = ReplayConfig {
            path: path.to_string_lossy().into_owned(),
            log_format: None,
            allow_unsafe: false,
            limit: None,
            looped: false,
            speed,
        };
        (path, cfg)
    }

    #[test]
    fn lines_go_out_at_their_own_time_and_ties_spread() {
        let (order, offsets, late, span) = schedule(&[10.0, 10.0, 9.0, 12.0, 12.5], 1.0);
        // 9 first; then the two 10s, in the log's order, half a second apart.
        assert_eq!(order, vec![2, 0, 1, 3, 4]);
        assert_eq!(offsets, vec![0, 1_000_000, 1_500_000, 3_000_000, 3_500_000]);
        assert_eq!((late, span), (1, 3.5));
        let (_, fast, _, _) = schedule(&[0.0, 100.0], 100.0);
        assert_eq!(fast, vec![0, 1_000_000]);
    }

    #[test]
    fn a_count_in_the_logs_order_reads_no_further_than_it_needs() {
        let (path, cfg) = log_of("read", 50, |i| 59 - i, None);
        let read_with = |cfg: &ReplayConfig, requests| {
            let mut seen = 0;
            let log = read(cfg, requests, &|| false, |_, _, _| {
                seen += 1;
                0
            })
            .unwrap();
            (log.source.lines, seen, log.source.stopped_at_limit)
        };
        assert_eq!(read_with(&cfg, Some(3)), (3, 3, true));
        assert_eq!(read_with(&cfg, None), (50, 50, false));
        assert_eq!(read_with(&ReplayConfig { limit: Some(7), ..cfg.clone() }, Some(20)), (7, 7, true));
        // Timed, the send order is the timestamps' (here the last line's
        // first): the whole log is read whatever the count.
        assert_eq!(read_with(&ReplayConfig { speed: Some(1.0), ..cfg.clone() }, Some(3)), (50, 50, false));
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_log_whose_requests_outgrow_the_memory_allowed_is_refused_at_that_line() {
        let (path, cfg) = log_of("big", 100, |i| i % 60, Some(1.0));
        // 100 bytes a request and 28 a line: the 10th line passes 1,200 bytes.
        let mut held = 0;
        let err = read_within(&cfg, None, &|| false, 1_200, |_, _, _| {
            held += 100;
            held
        })
        .err()
        .expect("refused");
        let said = err.to_string();
        assert!(said.contains("reached at line 10, 10 requests") && said.contains("--limit N"), "{said}");
        // Within it, or cut short by --limit first, the log is read.
        assert!(read_within(&cfg, None, &|| false, 20_000, |_, _, _| 0).is_ok());
        let limited = ReplayConfig { limit: Some(5), ..cfg.clone() };
        assert!(read_within(&limited, None, &|| false, 1_200, |_, _, _| 600).is_ok());
        let _ = std::fs::remove_file(&path);
    }
}
