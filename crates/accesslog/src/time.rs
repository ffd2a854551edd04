//! Access-log timestamps to unix seconds. Written by hand rather than with a
//! date crate: the formats are fixed and the arithmetic is a dozen lines.

use super::Skip;

/// `[10/Oct/2000:13:55:36 -0700]`, brackets included: Apache's `%t` and
/// nginx's `[$time_local]`. The offset is applied, so the result is UTC.
pub(super) fn clf(field: &str) -> Result<f64, Skip> {
    let inner = field.strip_prefix('[').and_then(|s| s.strip_suffix(']'));
    inner.and_then(|s| clf_seconds(s.as_bytes())).map(|s| s as f64).ok_or(Skip::BadTime)
}

/// `%{sec}t`, `%{msec}t`, `%{usec}t`: an integer count of `per_second`ths
/// of a second since the epoch.
pub(super) fn epoch(field: &str, per_second: u64) -> Result<f64, Skip> {
    let n = number(field.as_bytes()).ok_or(Skip::BadTime)?;
    // Whole seconds and remainder apart, so microsecond stamps keep their
    // precision instead of rounding through one large f64 division.
    Ok((n / per_second) as f64 + (n % per_second) as f64 / per_second as f64)
}

/// `dd/Mon/yyyy:HH:MM:SS +zzzz`. Bytes, not `str` slices: a hostile line
/// may put multi-byte characters where digits belong.
fn clf_seconds(s: &[u8]) -> Option<i64> {
    const LAYOUT: &[u8] = b"dd/Mon/yyyy:HH:MM:SS +zzzz";
    let separators = [(2, b'/'), (6, b'/'), (11, b':'), (14, b':'), (17, b':'), (20, b' ')];
    if s.len() != LAYOUT.len() || separators.iter().any(|&(i, c)| s[i] != c) {
        return None;
    }
    let (day, month, year) = (number(&s[0..2])?, month(&s[3..6])?, number(&s[7..11])?);
    let (hour, minute, second) = (number(&s[12..14])?, number(&s[15..17])?, number(&s[18..20])?);
    // 60 is a leap second: rare, but a real clock can log it.
    if day == 0 || day > days_in_month(year, month) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let days = days_from_civil(year as i64, month, day as u32);
    let local = days * 86_400 + (hour * 3600 + minute * 60 + second) as i64;
    Some(local - utc_offset(&s[21..26])?)
}

/// `+hhmm` or `-hhmm` in seconds east of UTC.
fn utc_offset(s: &[u8]) -> Option<i64> {
    let sign = match s[0] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let (hours, minutes) = (number(&s[1..3])?, number(&s[3..5])?);
    if hours > 23 || minutes > 59 {
        return None;
    }
    Some(sign * (hours * 3600 + minutes * 60) as i64)
}

/// ASCII digits only: `str::parse` would also take a `+` sign.
fn number(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0, |n, &d| n * 10 + u64::from(d - b'0')))
}

/// Month abbreviations as Apache and nginx write them: English, whatever
/// the server's locale.
fn month(s: &[u8]) -> Option<u32> {
    const MONTHS: [&[u8]; 12] =
        [b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec"];
    MONTHS.iter().position(|&m| m == s).map(|i| i as u32 + 1)
}

fn days_in_month(year: u64, month: u32) -> u64 {
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (month 1..=12).
/// Howard Hinnant's `days_from_civil`,
/// http://howardhinnant.github.io/date_algorithms.html: years are counted
/// from March so the leap day falls at the end, then split into 400-year
/// eras of exactly 146097 days.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let year_of_era = y - era * 400; // [0, 399]
    let month_from_march = (i64::from(month) + 9) % 12; // March = 0
    let day_of_year = (153 * month_from_march + 2) / 5 + i64::from(day) - 1; // [0, 365]
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year; // [0, 146096]
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clf_times_apply_their_offset() {
        assert_eq!(clf("[10/Oct/2000:13:55:36 -0700]"), Ok(971_211_336.0));
        assert_eq!(clf("[10/Oct/2000:20:55:36 +0000]"), Ok(971_211_336.0));
        assert_eq!(clf("[11/Oct/2000:02:25:36 +0530]"), Ok(971_211_336.0));
        assert_eq!(clf("[17/May/2015:10:05:03 +0000]"), Ok(1_431_857_103.0));
        assert_eq!(clf("[01/Jan/1970:00:00:00 +0000]"), Ok(0.0));
        assert_eq!(clf("[31/Dec/1969:23:59:59 +0000]"), Ok(-1.0));
        assert_eq!(clf("[29/Feb/2016:00:00:00 +0000]"), Ok(1_456_704_000.0));
    }

    #[test]
    fn bad_clf_times_are_rejected() {
        for t in [
            "10/Oct/2000:13:55:36 -0700",   // no brackets
            "[10/Oct/2000:13:55:36]",       // no offset
            "[1/Oct/2000:13:55:36 -0700]",  // one-digit day
            "[10/oct/2000:13:55:36 -0700]", // month case
            "[29/Feb/2015:00:00:00 +0000]", // not a leap year
            "[31/Apr/2015:00:00:00 +0000]", // April has 30 days
            "[10/Oct/2000:24:00:00 +0000]", // hour
            "[10/Oct/2000:13:55:36 0700]",  // unsigned offset
            "[10/Oct/2000:13:55:36 +07:0]", // offset layout
            "[10/Oct/2000:13:55:é +0000]",  // two-byte char in place of two digits
            "[]",
        ] {
            assert_eq!(clf(t), Err(Skip::BadTime), "{t}");
        }
    }

    #[test]
    fn epoch_fields() {
        assert_eq!(epoch("971211336", 1), Ok(971_211_336.0));
        assert_eq!(epoch("971211336250", 1000), Ok(971_211_336.25));
        assert_eq!(epoch("971211336500000", 1_000_000), Ok(971_211_336.5));
        for t in ["", "-1", "+5", "12a", "1.5"] {
            assert_eq!(epoch(t, 1), Err(Skip::BadTime), "{t}");
        }
    }

    #[test]
    fn days_from_civil_matches_counting_days() {
        let (mut y, mut m, mut d) = (1900u64, 1u32, 1u64);
        let mut days = days_from_civil(1900, 1, 1);
        assert_eq!(days, -25_567);
        while y < 2200 {
            assert_eq!(days_from_civil(y as i64, m, d as u32), days, "{y}-{m}-{d}");
            d += 1;
            if d > days_in_month(y, m) {
                (d, m) = (1, m + 1);
            }
            if m > 12 {
                (m, y) = (1, y + 1);
            }
            days += 1;
        }
    }
}
