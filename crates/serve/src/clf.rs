//! The Combined Log Format access log, as Apache writes it. Each worker
//! buffers whole lines and appends them with one write, so lines from many
//! workers and processes never interleave (O_APPEND writes are atomic).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::net::SocketAddr;
use std::time::{SystemTime, UNIX_EPOCH};

const FLUSH_BYTES: usize = 32 * 1024;

pub(crate) struct AccessLog {
    file: File,
    buf: Vec<u8>,
}

pub(crate) struct Entry<'a> {
    pub peer: Option<SocketAddr>,
    pub request_line: &'a [u8],
    pub status: u16,
    pub body_bytes: u64,
    pub referer: Option<&'a [u8]>,
    pub user_agent: Option<&'a [u8]>,
}

impl AccessLog {
    pub(crate) fn open(path: &str) -> std::io::Result<AccessLog> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(AccessLog { file, buf: Vec::with_capacity(FLUSH_BYTES * 2) })
    }

    pub(crate) fn log(&mut self, e: &Entry<'_>) {
        let b = &mut self.buf;
        match e.peer {
            Some(p) => write!(b, "{}", p.ip()),
            None => write!(b, "-"),
        }
        .ok();
        b.extend_from_slice(b" - - [");
        clf_time(b, SystemTime::now());
        b.extend_from_slice(b"] \"");
        escape(b, e.request_line);
        let bytes = if e.body_bytes == 0 { "-".to_string() } else { e.body_bytes.to_string() };
        write!(b, "\" {} {} \"", e.status, bytes).ok();
        escape(b, e.referer.unwrap_or(b"-"));
        b.extend_from_slice(b"\" \"");
        escape(b, e.user_agent.unwrap_or(b"-"));
        b.extend_from_slice(b"\"\n");
        if b.len() >= FLUSH_BYTES {
            self.flush();
        }
    }

    pub(crate) fn flush(&mut self) {
        if !self.buf.is_empty() {
            let _ = self.file.write_all(&self.buf);
            self.buf.clear();
        }
    }
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Apache's ap_escape_logitem: quotes and backslashes escaped, control and
/// non-ASCII bytes as \xhh, so one request is always one line.
pub(crate) fn escape(out: &mut Vec<u8>, raw: &[u8]) {
    for &c in raw {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x20..=0x7e => out.push(c),
            _ => {
                write!(out, "\\x{c:02x}").ok();
            }
        }
    }
}

/// `[10/Oct/2000:13:55:36 +0000]` without the brackets, in UTC.
fn clf_time(out: &mut Vec<u8>, t: SystemTime) {
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    write!(out, "{:02}/{}/{}:{:02}:{:02}:{:02} +0000", d, MONTHS[m as usize - 1], y, s / 3600, s / 60 % 60, s % 60)
        .ok();
}

/// Days since 1970-01-01 to (year, month, day): Howard Hinnant's
/// "civil_from_days" (chrono-compatible low-level date algorithms, 2013).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        let mut b = Vec::new();
        clf_time(&mut b, UNIX_EPOCH + Duration::from_secs(971_186_136));
        assert_eq!(String::from_utf8(b).unwrap(), "10/Oct/2000:13:55:36 +0000");
    }

    #[test]
    fn escapes_like_apache() {
        let mut b = Vec::new();
        escape(&mut b, b"GET /\"a\\\x16 HTTP/1.1");
        assert_eq!(b, b"GET /\\\"a\\\\\\x16 HTTP/1.1");
    }
}
