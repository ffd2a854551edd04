//! Checks on the fields a replay uses. Each failure has its own `Skip`, so a
//! report says why a log's lines were dropped rather than just how many.

use super::{Skip, MAX_TARGET_BYTES};

/// `%r`: exactly `METHOD TARGET PROTOCOL`. Anything else (`-` for a
/// connection that sent nothing, TLS handshakes logged as `\x16\x03\x01`,
/// HTTP/0.9's two-word form) cannot be replayed as it was.
pub(super) fn request_line(request: &str) -> Result<(&str, &str), Skip> {
    let mut parts = request.split(' ');
    let (Some(method), Some(target), Some(proto), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Skip::BadRequestLine);
    };
    protocol(proto)?;
    Ok((self::method(method)?, self::target(target)?))
}

/// `HTTP/` and a version: `HTTP/1.1`, `HTTP/2.0`, `HTTP/2`.
pub(super) fn protocol(proto: &str) -> Result<(), Skip> {
    match proto.strip_prefix("HTTP/") {
        Some(v) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit() || b == b'.') => Ok(()),
        _ => Err(Skip::BadRequestLine),
    }
}

/// Upper-case letters, digits, `-` and `_`, starting with a letter: every
/// registered method (`GET`, `M-SEARCH`, `BASELINE-CONTROL`) and none of
/// the garbage scanners send.
pub(super) fn method(method: &str) -> Result<&str, Skip> {
    let b = method.as_bytes();
    let tail_ok = b.iter().all(|&c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == b'-' || c == b'_');
    match b.first() {
        Some(c) if c.is_ascii_uppercase() && tail_ok => Ok(method),
        _ => Err(Skip::BadMethod),
    }
}

/// Origin-form only (`/path?query`): the replay sends the target to the
/// server under test, so proxy (`http://...`) and `*` targets are skipped.
pub(super) fn target(target: &str) -> Result<&str, Skip> {
    if !target.starts_with('/') {
        return Err(Skip::BadTarget);
    }
    if target.len() > MAX_TARGET_BYTES {
        return Err(Skip::TargetTooLong);
    }
    // Apache writes raw bytes outside printable ASCII as `\xNN` text, so a
    // backslash means the logged target is not what was sent; sending the
    // escape text would be a different request.
    if target.bytes().any(|b| !(0x21..=0x7e).contains(&b) || b == b'\\') {
        return Err(Skip::BadTargetBytes);
    }
    Ok(target)
}

/// A three-digit code from 100 to 599.
pub(super) fn status(status: &str) -> Result<u16, Skip> {
    // Three characters parsing to 100 or more are three digits (`parse`
    // takes a `+`, but `+99` is below the range).
    match status.parse::<u16>() {
        Ok(s) if status.len() == 3 && (100..600).contains(&s) => Ok(s),
        _ => Err(Skip::BadStatus),
    }
}

/// `%b` writes `-` for an empty body; `%B` writes `0`.
pub(super) fn bytes(bytes: &str) -> Result<Option<u64>, Skip> {
    if bytes == "-" {
        return Ok(None);
    }
    if bytes.is_empty() || !bytes.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Skip::BadBytes);
    }
    bytes.parse().map(Some).map_err(|_| Skip::BadBytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines() {
        assert_eq!(request_line("GET /a?b=1 HTTP/1.1"), Ok(("GET", "/a?b=1")));
        assert_eq!(request_line("M-SEARCH / HTTP/2.0"), Ok(("M-SEARCH", "/")));
        assert_eq!(request_line("GET / HTTP/2"), Ok(("GET", "/")));
        for (r, why) in [
            ("-", Skip::BadRequestLine),
            ("", Skip::BadRequestLine),
            (r"\x16\x03\x01", Skip::BadRequestLine),
            ("GET /", Skip::BadRequestLine),
            ("GET / HTTP/1.1 extra", Skip::BadRequestLine),
            ("GET /  HTTP/1.1", Skip::BadRequestLine),
            ("GET / SPDY/3", Skip::BadRequestLine),
            ("GET / HTTP/", Skip::BadRequestLine),
            ("get / HTTP/1.1", Skip::BadMethod),
            ("1GET / HTTP/1.1", Skip::BadMethod),
            (r"\x16\x03 / HTTP/1.1", Skip::BadMethod),
            ("GET http://example.com/ HTTP/1.1", Skip::BadTarget),
            ("OPTIONS * HTTP/1.1", Skip::BadTarget),
            ("GET /caf\u{e9} HTTP/1.1", Skip::BadTargetBytes),
            (r"GET /a\x00b HTTP/1.1", Skip::BadTargetBytes),
            ("GET /a\tb HTTP/1.1", Skip::BadTargetBytes),
            ("GET /a\u{7f} HTTP/1.1", Skip::BadTargetBytes),
        ] {
            assert_eq!(request_line(r), Err(why), "{r:?}");
        }
    }

    #[test]
    fn target_length_limit() {
        let at_limit = format!("/{}", "a".repeat(MAX_TARGET_BYTES - 1));
        assert_eq!(target(&at_limit), Ok(at_limit.as_str()));
        assert_eq!(target(&format!("{at_limit}a")), Err(Skip::TargetTooLong));
    }

    #[test]
    fn status_and_size() {
        assert_eq!(status("200"), Ok(200));
        assert_eq!(status("599"), Ok(599));
        for s in ["099", "600", "2000", "+20", "20", "-", "", "abc"] {
            assert_eq!(status(s), Err(Skip::BadStatus), "{s:?}");
        }
        assert_eq!(bytes("-"), Ok(None));
        assert_eq!(bytes("0"), Ok(Some(0)));
        assert_eq!(bytes("203023"), Ok(Some(203_023)));
        for b in ["", "+5", "-1", "lots", "1.5", "99999999999999999999999"] {
            assert_eq!(bytes(b), Err(Skip::BadBytes), "{b:?}");
        }
    }
}
