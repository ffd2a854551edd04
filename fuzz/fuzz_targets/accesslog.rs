//! The access-log parsers (`corebench_accesslog`): `LogFormat::parse` on
//! any format string, `LogFormat::parse_line` and `parse_line` (Common and
//! Combined) on any line, and `read_lines` on any byte stream.
//!
//! Each input is used twice:
//! - as raw bytes: the first line is a format string, the rest a log.
//!   `read_lines` gives the same lines whatever its buffer's size, never a
//!   line longer than the limit nor one holding a line break; every entry
//!   either parser returns borrows the line and passes the checks a replay
//!   relies on (an upper-case method token, an origin-form target of
//!   printable bytes within 8 KiB, a status from 100 to 599, a finite time);
//! - as a structured entry (`arbitrary`) written as a Combined line (Apache's
//!   escapes in the quoted fields, by the built-in server's own log writer)
//!   and in a generated `LogFormat` layout: both parse back to the entry.

#![no_main]

use std::io::BufReader;

use arbitrary::{Arbitrary, Unstructured};
use corebench_accesslog::{parse_line, read_lines, LogEntry, LogFormat, Skip, COMBINED_FORMAT, MAX_TARGET_BYTES};
use corebench_serve::fuzzing::{civil_from_days, escape_log_item as escape};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    raw(data);
    if let Ok(line) = Line::arbitrary(&mut Unstructured::new(data)) {
        round_trip(&line);
    }
});

fn raw(data: &[u8]) {
    let (spec, log) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    let format = match LogFormat::parse(&String::from_utf8_lossy(spec)) {
        Ok(f) => Some(f),
        Err(e) => {
            assert!(!e.is_empty() && !e.contains('\n'), "error {e:?}");
            None
        }
    };
    let max = 1 + usize::from(spec.first().copied().unwrap_or(0)) * 4;
    let read = |capacity: Option<usize>| {
        let mut lines = Vec::new();
        let mut f = |no, l: Result<&str, Skip>| lines.push((no, l.map(str::to_string)));
        let n = match capacity {
            None => read_lines(log, max, &mut f),
            Some(c) => read_lines(BufReader::with_capacity(c, log), max, &mut f),
        }
        .unwrap();
        assert_eq!(n, lines.len() as u64);
        lines
    };
    let lines = read(None);
    for capacity in [1, 2, 3, 7] {
        assert_eq!(read(Some(capacity)), lines, "read through a {capacity}-byte buffer");
    }
    for (i, (no, line)) in lines.iter().enumerate() {
        assert_eq!(*no, i as u64 + 1);
        let Ok(line) = line else { continue };
        assert!(line.len() <= max + 3 * line.matches('\u{fffd}').count(), "{}-byte line over {max}", line.len());
        assert!(!line.contains('\n'));
        if let Ok(e) = parse_line(line) {
            check_entry(line, &e);
        }
        if let Some(Ok(e)) = format.as_ref().map(|f| f.parse_line(line)) {
            check_entry(line, &e);
        }
    }
}

/// What a replay relies on in every entry it is given.
fn check_entry(line: &str, e: &LogEntry<'_>) {
    let inside = |s: &str| {
        let (a, b) = (line.as_ptr() as usize, s.as_ptr() as usize);
        b >= a && b + s.len() <= a + line.len()
    };
    assert!(inside(e.method) && inside(e.target), "{e:?} does not borrow {line:?}");
    let m = e.method.as_bytes();
    assert!(!m.is_empty() && m[0].is_ascii_uppercase(), "method {:?}", e.method);
    assert!(
        m.iter().all(|&c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'-' || c == b'_'),
        "{:?}",
        e.method
    );
    let t = e.target.as_bytes();
    assert!(t.first() == Some(&b'/') && t.len() <= MAX_TARGET_BYTES, "target {:?}", e.target);
    assert!(t.iter().all(|&b| (0x21..=0x7e).contains(&b) && b != b'\\'), "target {:?}", e.target);
    assert!((100..600).contains(&e.status), "status {}", e.status);
    assert!(e.time_s.is_none_or(f64::is_finite), "time {:?}", e.time_s);
}

// ---------------------------------------------------------------------------
// Structured round trip.

/// `[dd/Mon/yyyy:HH:MM:SS +zzzz]` for unix time `t` at `offset_min` east of UTC.
fn clf_time(t: i64, offset_min: i64) -> String {
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let local = t + offset_min * 60;
    let (y, m, d) = civil_from_days(local.div_euclid(86_400));
    let s = local.rem_euclid(86_400);
    let (sign, off) = if offset_min < 0 { ('-', -offset_min) } else { ('+', offset_min) };
    let month = MONTHS[m as usize - 1];
    format!(
        "[{d:02}/{month}/{y:04}:{:02}:{:02}:{:02} {sign}{:02}{:02}]",
        s / 3600,
        s / 60 % 60,
        s % 60,
        off / 60,
        off % 60
    )
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Time {
    Clf { t: u64, offset_min: i16 },
    Sec(u64),
    Msec(u64),
    Usec(u64),
}

/// A field the replay does not use, as one of the directives that log it.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Ignored {
    Host,
    Ident,
    User,
    Duration,
    Header,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Separator {
    Space,
    Pipe,
    Tab,
    Colons,
}

#[derive(Arbitrary, Debug)]
struct Line {
    method: Vec<u8>,
    path: Vec<u8>,
    query: Option<Vec<u8>>,
    protocol_minor: bool,
    status: u16,
    /// `%s` beside `%>s`: the status before an internal redirect.
    original_status: Option<u16>,
    bytes: Option<u64>,
    uppercase_b: bool,
    time: Option<Time>,
    host: Vec<u8>,
    referer: Vec<u8>,
    user_agent: Vec<u8>,
    /// The layout: request as `%r` or as `%m %U%q %H`, the fields' order
    /// (a permutation key each) and the separators.
    split_request: bool,
    order: Vec<u8>,
    ignored: Vec<Ignored>,
    separators: Vec<Separator>,
}

impl Line {
    fn method(&self) -> String {
        let mut m: String = self
            .method
            .iter()
            .take(12)
            .map(|&b| b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0189-_"[b as usize % 32] as char)
            .collect();
        if !m.starts_with(|c: char| c.is_ascii_uppercase()) {
            m.insert(0, 'G');
        }
        m
    }

    fn target(&self) -> (String, String) {
        const PATH: &[u8] = b"abcXYZ0189-._~!$&'()*+,;=:@/%";
        let path: String = std::iter::once('/')
            .chain(self.path.iter().take(300).map(|&b| PATH[b as usize % PATH.len()] as char))
            .collect();
        let query = self.query.as_ref().map_or(String::new(), |q| {
            std::iter::once('?').chain(q.iter().take(100).map(|&b| PATH[b as usize % PATH.len()] as char)).collect()
        });
        (path, query)
    }

    fn status(s: u16) -> u16 {
        100 + s % 500
    }

    /// The time as logged, and the unix seconds it stands for.
    fn time(&self) -> Option<(String, &'static str, f64)> {
        Some(match self.time? {
            Time::Clf { t, offset_min } => {
                // Years 1000 to 9000, so the year is four digits in any offset.
                let t = -30_610_224_000 + (t % 252_000_000_000) as i64;
                let offset = i64::from(offset_min) % (24 * 60);
                (clf_time(t, offset), "%t", t as f64)
            }
            // At most 19 digits, as the parser reads them.
            Time::Sec(n) => ((n % 10u64.pow(18)).to_string(), "%{sec}t", (n % 10u64.pow(18)) as f64),
            Time::Msec(n) => ((n % 10u64.pow(18)).to_string(), "%{msec}t", (n % 10u64.pow(18)) as f64 / 1e3),
            Time::Usec(n) => ((n % 10u64.pow(18)).to_string(), "%{end:usec}t", (n % 10u64.pow(18)) as f64 / 1e6),
        })
    }

    /// The entry the line was written from, with the time it stands for.
    fn want(&self, time_s: Option<f64>) -> Want {
        let (path, query) = self.target();
        Want {
            method: self.method(),
            target: format!("{path}{query}"),
            status: Self::status(self.status),
            bytes: self.bytes,
            time_s,
        }
    }
}

#[derive(Debug)]
struct Want {
    method: String,
    target: String,
    status: u16,
    bytes: Option<u64>,
    time_s: Option<f64>,
}

fn same(got: &LogEntry<'_>, want: &Want) -> bool {
    let time = match (got.time_s, want.time_s) {
        (Some(x), Some(y)) => (x - y).abs() <= 1e-6 * y.abs().max(1.0),
        (x, y) => x == y,
    };
    (got.method, got.target, got.status, got.bytes) == (&want.method[..], &want.target[..], want.status, want.bytes)
        && time
}

fn round_trip(l: &Line) {
    let method = l.method();
    let (path, query) = l.target();
    let status = Line::status(l.status);
    let size = l.bytes.map_or("-".to_string(), |b| b.to_string());
    let host: String = l.host.iter().take(40).map(|&b| b"0123456789abcdef.:"[b as usize % 18] as char).collect();
    let host = if host.is_empty() { "-".to_string() } else { host };
    let proto = if l.protocol_minor { "HTTP/1.1" } else { "HTTP/1.0" };
    let request = format!("{method} {path}{query} {proto}");

    // Combined, as Apache and nginx write it (the time always present).
    let clf = l.time().filter(|t| t.1 == "%t").map_or("[10/Oct/2000:13:55:36 -0700]".to_string(), |t| t.0);
    let combined = format!(
        "{host} - - {clf} \"{}\" {status} {size} \"{}\" \"{}\"",
        escape(request.as_bytes()),
        escape(&l.referer),
        escape(&l.user_agent)
    );
    let clf_s = l.time().filter(|t| t.1 == "%t").map_or(971_211_336.0, |t| t.2);
    let want = l.want(Some(clf_s));
    for (how, got) in [
        ("parse_line", parse_line(&combined)),
        ("COMBINED_FORMAT", LogFormat::parse(COMBINED_FORMAT).unwrap().parse_line(&combined)),
    ] {
        assert!(got.as_ref().is_ok_and(|g| same(g, &want)), "{how}: {combined:?}: {got:?}, want {want:?}");
    }

    // A generated layout: every field once, in an order of the input's
    // choosing, separators between them.
    let mut fields: Vec<(String, String)> = Vec::new();
    if l.split_request {
        fields.push(("%m".into(), method.clone()));
        fields.push(("%U%q".into(), format!("{path}{query}")));
        fields.push(("%H".into(), proto.into()));
    } else {
        fields.push(("\\\"%r\\\"".into(), format!("\"{}\"", escape(request.as_bytes()))));
    }
    fields.push(("%>s".into(), status.to_string()));
    if let Some(s) = l.original_status {
        fields.push(("%<s".into(), Line::status(s).to_string()));
    }
    fields.push((if l.uppercase_b { "%B" } else { "%b" }.into(), size));
    if let Some((text, directive, _)) = l.time() {
        fields.push((directive.into(), text));
    }
    for (i, ig) in l.ignored.iter().take(6).enumerate() {
        fields.push(match ig {
            Ignored::Host => ("%h".into(), host.clone()),
            Ignored::Ident => ("%l".into(), "-".into()),
            Ignored::User => ("%u".into(), if i % 2 == 0 { "frank".into() } else { "-".into() }),
            Ignored::Duration => ("%D".into(), (i * 1531).to_string()),
            Ignored::Header => ("\\\"%{User-Agent}i\\\"".into(), format!("\"{}\"", escape(&l.user_agent))),
        });
    }
    let mut keyed: Vec<(u8, usize)> = (0..fields.len()).map(|i| (l.order.get(i).copied().unwrap_or(0), i)).collect();
    keyed.sort();
    let (mut spec, mut line) = (String::new(), String::new());
    for (k, &(_, i)) in keyed.iter().enumerate() {
        if k > 0 {
            let sep = match l.separators.get(k).copied().unwrap_or(Separator::Space) {
                Separator::Space => " ",
                Separator::Pipe => "|",
                Separator::Tab => "\t",
                Separator::Colons => " :: ",
            };
            // `\t` in a format is an escape for the tab.
            spec.push_str(if sep == "\t" { "\\t" } else { sep });
            line.push_str(sep);
        }
        spec.push_str(&fields[i].0);
        line.push_str(&fields[i].1);
    }
    // An unquoted field ends at the next separator, so the method, target
    // and protocol must not contain one: they are drawn without ' ', '|'
    // and tab; " :: " needs a space.
    let format = LogFormat::parse(&spec).unwrap_or_else(|e| panic!("{spec:?}: {e}"));
    let want = l.want(l.time().map(|t| t.2));
    let got = format.parse_line(&line);
    assert!(got.as_ref().is_ok_and(|g| same(g, &want)), "{spec:?} on {line:?}: {got:?}, want {want:?}");
}
