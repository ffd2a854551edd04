//! Reading access logs in Common and Combined Log Format (Apache's and
//! nginx's defaults): `host ident user [time] "request" status bytes` and,
//! for Combined, `"referer" "user-agent"`. Real logs are not clean: a line
//! that does not parse is reported with the reason, never guessed at.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry<'a> {
    pub method: &'a str,
    pub target: &'a str,
    pub status: u16,
    /// `-` in the log (no body) is `None`.
    pub bytes: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    Malformed,
    BadRequestLine,
    BadStatus,
    BadBytes,
}

impl Skip {
    pub fn reason(self) -> &'static str {
        match self {
            Skip::Malformed => "not in Common/Combined Log Format",
            Skip::BadRequestLine => "request is not METHOD TARGET PROTOCOL",
            Skip::BadStatus => "status is not a 3-digit code",
            Skip::BadBytes => "size is neither a number nor '-'",
        }
    }
}

/// Splits off a `"..."` field, honouring Apache's `\"` escapes.
fn quoted(s: &str) -> Option<(&str, &str)> {
    let s = s.strip_prefix('"')?;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => return Some((&s[..i], &s[i + 1..])),
            _ => escaped = false,
        }
    }
    None
}

pub fn parse_line(line: &str) -> Result<LogEntry<'_>, Skip> {
    // host ident user: three space-separated fields before the timestamp.
    let open = line.find(" [").ok_or(Skip::Malformed)?;
    if line[..open].split(' ').count() != 3 {
        return Err(Skip::Malformed);
    }
    let close = line[open..].find("] ").ok_or(Skip::Malformed)? + open;
    let (request, rest) = quoted(&line[close + 2..]).ok_or(Skip::Malformed)?;
    let mut fields = rest.split_ascii_whitespace();
    let status = fields.next().ok_or(Skip::Malformed)?;
    let bytes = fields.next().ok_or(Skip::Malformed)?;
    let mut parts = request.split(' ');
    let (Some(method), Some(target), Some(proto), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(Skip::BadRequestLine);
    };
    let token = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphabetic());
    if !token(method) || !target.starts_with('/') || !proto.starts_with("HTTP/") || target.bytes().any(|b| b.is_ascii_control()) {
        return Err(Skip::BadRequestLine);
    }
    let status = match status.parse::<u16>() {
        Ok(s) if (100..600).contains(&s) => s,
        _ => return Err(Skip::BadStatus),
    };
    let bytes = match bytes {
        "-" => None,
        b => Some(b.parse::<u64>().map_err(|_| Skip::BadBytes)?),
    };
    Ok(LogEntry { method, target, status, bytes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combined_and_common() {
        let l = r#"83.149.9.216 - - [17/May/2015:10:05:03 +0000] "GET /a.png?x=1 HTTP/1.1" 200 203023 "http://x/" "Mozilla/5.0""#;
        assert_eq!(parse_line(l), Ok(LogEntry { method: "GET", target: "/a.png?x=1", status: 200, bytes: Some(203023) }));
        let l = r#"::1 - frank [10/Oct/2000:13:55:36 -0700] "HEAD /b HTTP/1.0" 304 -"#;
        assert_eq!(parse_line(l), Ok(LogEntry { method: "HEAD", target: "/b", status: 304, bytes: None }));
    }

    #[test]
    fn hostile_lines_are_skipped_with_a_reason() {
        for (line, why) in [
            ("", Skip::Malformed),
            ("\u{0}\u{1}binary junk", Skip::Malformed),
            (r#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /trunc"#, Skip::Malformed),
            (r#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "-" 400 0 "-" "-""#, Skip::BadRequestLine),
            (r#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "\x16\x03\x01" 400 0"#, Skip::BadRequestLine),
            (r#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /a HTTP/1.1" 2000 5"#, Skip::BadStatus),
            (r#"1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /a HTTP/1.1" 200 lots"#, Skip::BadBytes),
        ] {
            assert_eq!(parse_line(line), Err(why), "{line:?}");
        }
    }
}
