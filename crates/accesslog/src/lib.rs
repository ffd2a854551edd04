//! Reading real web-server access logs for replay: Common and Combined Log
//! Format (Apache's and nginx's defaults) through `parse_line`, any Apache
//! `LogFormat` through `LogFormat`, and bounded line reading through
//! `read_lines`. Real logs are not clean: a line that cannot be replayed as
//! it was sent is reported with the reason, never guessed at.

#![warn(unreachable_pub)]

mod fields;
mod format;
mod lines;
mod time;

use std::sync::OnceLock;

pub use format::LogFormat;
pub use lines::{read_lines, MAX_LINE_BYTES, MAX_SKIPPED_LINE_BYTES};

/// Longest request target replayed. Servers commonly refuse longer ones
/// (Apache's LimitRequestLine is 8190 bytes for the whole request line),
/// so a longer target in a log is an attack or a mistake, not load.
pub const MAX_TARGET_BYTES: usize = 8192;

/// Common Log Format, as Apache's `LogFormat` string.
pub const COMMON_FORMAT: &str = r#"%h %l %u %t \"%r\" %>s %b"#;
/// Combined Log Format: Common plus referer and user agent.
pub const COMBINED_FORMAT: &str = r#"%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-Agent}i\""#;

/// One replayable request from a log line; the strings borrow the line.
#[derive(Debug, Clone, PartialEq)]
pub struct LogEntry<'a> {
    pub method: &'a str,
    /// Request target, path and query, as the log has it.
    pub target: &'a str,
    pub status: u16,
    /// `-` in the log (no body) is `None`.
    pub bytes: Option<u64>,
    /// Unix seconds of the request, when the format has a time field.
    pub time_s: Option<f64>,
}

/// Why a line was not replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Skip {
    Blank,
    TooLong,
    Malformed,
    BadRequestLine,
    BadMethod,
    BadTarget,
    TargetTooLong,
    BadTargetBytes,
    BadStatus,
    BadBytes,
    BadTime,
}

impl Skip {
    /// Every reason, in report order.
    pub const ALL: [Skip; 11] = [
        Skip::Blank,
        Skip::TooLong,
        Skip::Malformed,
        Skip::BadRequestLine,
        Skip::BadMethod,
        Skip::BadTarget,
        Skip::TargetTooLong,
        Skip::BadTargetBytes,
        Skip::BadStatus,
        Skip::BadBytes,
        Skip::BadTime,
    ];

    pub fn reason(self) -> &'static str {
        match self {
            Skip::Blank => "blank line",
            Skip::TooLong => "line is longer than the limit",
            Skip::Malformed => "line does not match the log format",
            Skip::BadRequestLine => "request is not METHOD TARGET PROTOCOL",
            Skip::BadMethod => "method is not an uppercase token",
            Skip::BadTarget => "target does not start with '/'",
            Skip::TargetTooLong => "target is longer than 8192 bytes",
            Skip::BadTargetBytes => "URL has bytes that are not valid in a request target",
            Skip::BadStatus => "status is not a code from 100 to 599",
            Skip::BadBytes => "size is neither a number nor '-'",
            Skip::BadTime => "timestamp does not parse",
        }
    }
}

/// A Common or Combined Log Format line (Apache's and nginx's defaults),
/// time included. Anything after the size (referer, user agent, fields a
/// site added) is allowed and ignored.
pub fn parse_line(line: &str) -> Result<LogEntry<'_>, Skip> {
    static COMMON: OnceLock<LogFormat> = OnceLock::new();
    COMMON.get_or_init(|| LogFormat::with_trailing_text(COMMON_FORMAT)).parse_line(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::io::BufReader;

    const T: Option<f64> = Some(1_431_857_103.0); // 17/May/2015:10:05:03 +0000

    fn entry<'a>(method: &'a str, target: &'a str, status: u16, bytes: Option<u64>, t: Option<f64>) -> LogEntry<'a> {
        LogEntry { method, target, status, bytes, time_s: t }
    }

    #[test]
    fn common_combined_and_nginx() {
        let combined = r#"83.149.9.216 - - [17/May/2015:10:05:03 +0000] "GET /a.png?x=1 HTTP/1.1" 200 203023 "http://x/" "Mozilla/5.0""#;
        assert_eq!(parse_line(combined), Ok(entry("GET", "/a.png?x=1", 200, Some(203_023), T)));
        let common = r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326"#;
        assert_eq!(parse_line(common), Ok(entry("GET", "/apache_pb.gif", 200, Some(2326), Some(971_211_336.0))));
        let nginx =
            r#"192.168.1.20 - - [17/May/2015:10:05:03 +0000] "POST /api/v1/items HTTP/1.1" 201 612 "-" "curl/7.68.0""#;
        assert_eq!(parse_line(nginx), Ok(entry("POST", "/api/v1/items", 201, Some(612), T)));
        // Fields a site appended after the user agent (e.g. nginx's
        // `$request_time`) do not stop the line from being Combined.
        let extra = format!("{nginx} 0.004 \"upstream\"");
        assert_eq!(parse_line(&extra), Ok(entry("POST", "/api/v1/items", 201, Some(612), T)));
    }

    #[test]
    fn ipv6_client_and_dash_size() {
        let l = r#"2001:db8::1 - - [17/May/2015:10:05:03 +0000] "HEAD /b HTTP/1.1" 304 -"#;
        assert_eq!(parse_line(l), Ok(entry("HEAD", "/b", 304, None, T)));
        let l = r#"::1 - frank [17/May/2015:10:05:03 +0000] "GET / HTTP/2.0" 200 0 "-" "-""#;
        assert_eq!(parse_line(l), Ok(entry("GET", "/", 200, Some(0), T)));
    }

    #[test]
    fn every_skip_reason() {
        let line = |request: &str, tail: &str| format!("1.2.3.4 - - [17/May/2015:10:05:03 +0000] \"{request}\" {tail}");
        let long_url = format!("GET /{} HTTP/1.1", "a".repeat(20_000));
        for (l, why) in [
            (String::new(), Skip::Blank),
            (" \t ".to_string(), Skip::Blank),
            ("\u{0}\u{1}binary junk".to_string(), Skip::Malformed),
            ("\u{16}\u{3}\u{1}\u{0}\u{a5}\u{1}\u{0}".to_string(), Skip::Malformed),
            (r#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /trunc"#.to_string(), Skip::Malformed),
            (r#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /a HTTP/1.1" 200"#.to_string(), Skip::Malformed),
            (r#"1.2.3.4 - - [17/May/2015:10:05"#.to_string(), Skip::Malformed),
            ("1.2.3.4 - [17/May/2015:10:05:03 +0000] \"GET / HTTP/1.1\" 200 5".to_string(), Skip::Malformed),
            (line("-", "400 0 \"-\" \"-\""), Skip::BadRequestLine),
            (line(r"\x16\x03\x01", "400 0"), Skip::BadRequestLine),
            (line("get /a HTTP/1.1", "200 5"), Skip::BadMethod),
            (line("GET http://evil.example/ HTTP/1.1", "200 5"), Skip::BadTarget),
            (line(&long_url, "414 0"), Skip::TargetTooLong),
            (line("GET /caf\u{e9} HTTP/1.1", "200 5"), Skip::BadTargetBytes),
            (line(r"GET /caf\xc3\xa9 HTTP/1.1", "200 5"), Skip::BadTargetBytes),
            (line(r#"GET /a\"b HTTP/1.1"#, "200 5"), Skip::BadTargetBytes),
            (line("GET /a HTTP/1.1", "2000 5"), Skip::BadStatus),
            (line("GET /a HTTP/1.1", "- 5"), Skip::BadStatus),
            (line("GET /a HTTP/1.1", "200 lots"), Skip::BadBytes),
            ("1.2.3.4 - - [17/May/2015:25:05:03 +0000] \"GET /a HTTP/1.1\" 200 5".to_string(), Skip::BadTime),
        ] {
            assert_eq!(parse_line(&l), Err(why), "{l:?}");
        }
    }

    #[test]
    fn reasons_are_distinct_and_short() {
        let mut seen = std::collections::HashSet::new();
        for s in Skip::ALL {
            assert!(!s.reason().is_empty() && s.reason().len() < 60, "{s:?}");
            assert!(seen.insert(s.reason()), "{s:?}");
        }
        assert!(Skip::TargetTooLong.reason().contains(&MAX_TARGET_BYTES.to_string()));
    }

    /// The real log the examples replay (`examples/data`): every line
    /// parsed or skipped for a reason.
    #[test]
    fn real_combined_log_is_accounted_for() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/data/apache-combined-10k.log");
        let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let (mut parsed, mut skipped) = (0u64, BTreeMap::<Skip, u64>::new());
        let lines = read_lines(BufReader::new(file), MAX_LINE_BYTES, |_, line| {
            match line.and_then(parse_line) {
                Ok(_) => parsed += 1,
                Err(why) => *skipped.entry(why).or_default() += 1,
            }
            std::ops::ControlFlow::Continue(())
        })
        .unwrap();
        println!("{path}: {lines} lines, {parsed} parsed");
        for (why, n) in &skipped {
            println!("  skipped {n}: {}", why.reason());
        }
        assert_eq!(parsed + skipped.values().sum::<u64>(), lines);
        assert!(parsed > 9000, "{parsed} of {lines}");
    }
}
