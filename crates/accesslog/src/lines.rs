//! Line reading with a bound on memory: one hostile line (a 2 GB request
//! body logged by mistake, a binary file renamed `.log`) must not be read
//! into memory whole, and must not hide the lines after it.

use std::borrow::Cow;
use std::io::{self, BufRead};
use std::ops::ControlFlow;

use super::Skip;

/// The longest line `read_lines` callers normally accept: far above any
/// real Combined line (the target itself is capped at `MAX_TARGET_BYTES`).
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// A line running longer than this without a newline ends the reading with
/// an error: such a line is not text (`/dev/zero`, an image renamed
/// `.log`), and without a bound the reading would never end.
pub const MAX_SKIPPED_LINE_BYTES: u64 = 64 * 1024 * 1024;

/// Reads `r` line by line, holding at most `max_line_bytes` of one line.
/// Calls `f(line_number, outcome)` for every line (numbers from 1): `Ok`
/// with the text, its `\n` or `\r\n` ending removed and invalid UTF-8
/// replaced lossily, or `Err(Skip::TooLong)` for a line over the limit,
/// whose remainder is discarded. A last line without a newline counts.
/// `f` returning `Break` stops the reading there (nothing more is read
/// from `r` than the buffer already holds). Returns the number of lines seen.
pub fn read_lines<R: BufRead>(
    mut r: R,
    max_line_bytes: usize,
    mut f: impl FnMut(u64, Result<&str, Skip>) -> ControlFlow<()>,
) -> io::Result<u64> {
    let mut line = Line::new(max_line_bytes);
    let mut count = 0;
    loop {
        let buf = match r.fill_buf() {
            Ok(buf) => buf,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            break;
        }
        let (used, complete) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        line.take(&buf[..used - usize::from(complete)]);
        r.consume(used);
        if line.length > MAX_SKIPPED_LINE_BYTES {
            let mib = MAX_SKIPPED_LINE_BYTES >> 20;
            let why = format!("line {} runs past {mib} MiB without a newline: not a text log", count + 1);
            return Err(io::Error::new(io::ErrorKind::InvalidData, why));
        }
        if complete {
            count += 1;
            if line.finish(count, &mut f).is_break() {
                return Ok(count);
            }
        }
    }
    if line.started {
        line.keep_pending_cr();
        count += 1;
        let _ = line.finish(count, &mut f);
    }
    Ok(count)
}

/// The line being read. A `\r` at the end of a chunk is held back as
/// `pending_cr` until the next byte shows whether it ends the line (`\r\n`)
/// or is text, so a line of exactly the limit plus `\r\n` still fits.
struct Line {
    bytes: Vec<u8>,
    max: usize,
    too_long: bool,
    pending_cr: bool,
    /// Some byte of this line has been seen: tells a last line without a
    /// newline from the end of the input.
    started: bool,
    /// Bytes seen of this line, kept or not.
    length: u64,
}

impl Line {
    fn new(max: usize) -> Line {
        Line { bytes: Vec::new(), max, too_long: false, pending_cr: false, started: false, length: 0 }
    }

    /// A chunk of the line, without its `\n`.
    fn take(&mut self, chunk: &[u8]) {
        self.started |= !chunk.is_empty();
        self.length += chunk.len() as u64;
        if !chunk.is_empty() {
            self.keep_pending_cr();
        }
        let chunk = match chunk.split_last() {
            Some((b'\r', rest)) => {
                self.pending_cr = true;
                rest
            }
            _ => chunk,
        };
        self.push(chunk);
    }

    /// The held-back `\r` turned out to be text, not half of `\r\n`.
    fn keep_pending_cr(&mut self) {
        if std::mem::take(&mut self.pending_cr) {
            self.push(b"\r");
        }
    }

    fn push(&mut self, data: &[u8]) {
        if self.too_long {
            return;
        }
        if self.bytes.len() + data.len() > self.max {
            // What was kept is useless: the whole line is skipped.
            self.too_long = true;
            self.bytes.clear();
            return;
        }
        self.bytes.extend_from_slice(data);
    }

    /// Reports the line and starts the next; a pending `\r` was the ending.
    fn finish(
        &mut self,
        number: u64,
        f: &mut impl FnMut(u64, Result<&str, Skip>) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let flow = if self.too_long {
            f(number, Err(Skip::TooLong))
        } else {
            let text: Cow<str> = String::from_utf8_lossy(&self.bytes);
            f(number, Ok(&text))
        };
        self.bytes.clear();
        self.too_long = false;
        self.pending_cr = false;
        self.started = false;
        self.length = 0;
        flow
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    /// Every line as (number, text or reason), read through a tiny buffer
    /// too so that chunk boundaries fall everywhere, including between
    /// `\r` and `\n`; both ways must agree.
    fn lines(input: &[u8], max: usize) -> Vec<(u64, Result<String, Skip>)> {
        let read = |r: &mut dyn BufRead| {
            let mut out = Vec::new();
            let n = read_lines(r, max, |i, l| {
                out.push((i, l.map(str::to_string)));
                ControlFlow::Continue(())
            })
            .unwrap();
            assert_eq!(n, out.len() as u64);
            out
        };
        let whole = read(&mut &input[..]);
        for capacity in 1..4 {
            assert_eq!(read(&mut BufReader::with_capacity(capacity, input)), whole, "capacity {capacity}");
        }
        whole
    }

    fn ok(n: u64, s: &str) -> (u64, Result<String, Skip>) {
        (n, Ok(s.to_string()))
    }

    #[test]
    fn an_endless_line_ends_the_reading_with_an_error() {
        // /dev/zero as a log: no newline ever; the reading must end.
        let endless = io::BufReader::new(io::repeat(0));
        let mut seen = 0;
        let e = read_lines(endless, MAX_LINE_BYTES, |_, _| {
            seen += 1;
            ControlFlow::Continue(())
        })
        .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("line 1 runs past 64 MiB without a newline"), "{e}");
        assert_eq!(seen, 0);
    }

    #[test]
    fn a_break_stops_the_reading_there() {
        let mut seen = Vec::new();
        let n = read_lines(&b"a\nb\nc\nd\n"[..], 16, |i, _| {
            seen.push(i);
            if i == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
        assert_eq!((n, seen), (2, vec![1, 2]));
    }

    #[test]
    fn endings_and_last_line() {
        assert_eq!(lines(b"a\nb\r\nc", 10), [ok(1, "a"), ok(2, "b"), ok(3, "c")]);
        assert_eq!(lines(b"a\n\n\r\nb\n", 10), [ok(1, "a"), ok(2, ""), ok(3, ""), ok(4, "b")]);
        assert_eq!(lines(b"", 10), []);
        assert_eq!(lines(b"\n", 10), [ok(1, "")]);
        // Only `\r\n` is an ending; a lone `\r` is text.
        assert_eq!(lines(b"a\rb\nc\r", 10), [ok(1, "a\rb"), ok(2, "c\r")]);
    }

    #[test]
    fn long_line_is_skipped_and_the_next_read() {
        let mut input = vec![b'x'; 100];
        input.extend_from_slice(b"\nnext\n");
        assert_eq!(lines(&input, 10), [(1, Err(Skip::TooLong)), ok(2, "next")]);
        // At the limit fits, with either ending; one more byte does not.
        assert_eq!(lines(b"0123456789\r\n0123456789\n", 10), [ok(1, "0123456789"), ok(2, "0123456789")]);
        assert_eq!(lines(b"0123456789\r\r\n", 10), [(1, Err(Skip::TooLong))]);
        assert_eq!(lines(b"short\n0123456789a", 10), [ok(1, "short"), (2, Err(Skip::TooLong))]);
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        assert_eq!(lines(b"a\xffb\r\n\xc3\xa9\n", 10), [ok(1, "a\u{fffd}b"), ok(2, "\u{e9}")]);
    }
}
