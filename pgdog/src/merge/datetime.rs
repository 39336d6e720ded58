//! Date and time text (DateStyle ISO, Postgres' default output) turned into integers that order
//! like the values: days for `date`, microseconds for `timestamp`, microseconds since the epoch
//! in UTC for `timestamptz` (so offsets and DST transitions order correctly), BC years included.

/// `date`: days since 1970-01-01 (`infinity` / `-infinity` at the extremes).
pub fn date(s: &str) -> Option<i64> {
    if let Some(v) = special(s) {
        return Some(v);
    }
    let (s, bc) = strip_bc(s);
    let (y, m, d) = ymd(s)?;
    Some(days_from_civil(year(y, bc), m, d))
}

/// `timestamp` (`tz` false) or `timestamptz` (`tz` true): microseconds.
pub fn timestamp(s: &str, tz: bool) -> Option<i64> {
    if let Some(v) = special(s) {
        return Some(v);
    }
    let (s, bc) = strip_bc(s);
    let (date_part, rest) = s.split_once(' ')?;
    let (y, m, d) = ymd(date_part)?;
    let days = days_from_civil(year(y, bc), m, d);
    // Time, then an offset starting with + or - (timestamptz only).
    let split = rest.find(['+', '-']).unwrap_or(rest.len());
    let (time_part, offset_part) = rest.split_at(split);
    let micros = time(time_part)?;
    let offset = if tz {
        offset_seconds(offset_part)?
    } else if offset_part.is_empty() {
        0
    } else {
        return None;
    };
    Some(days * 86_400_000_000 + micros - offset * 1_000_000)
}

fn special(s: &str) -> Option<i64> {
    match s {
        "infinity" => Some(i64::MAX),
        "-infinity" => Some(i64::MIN),
        _ => None,
    }
}

fn strip_bc(s: &str) -> (&str, bool) {
    match s.strip_suffix(" BC") {
        Some(rest) => (rest, true),
        None => (s, false),
    }
}

/// Astronomical year: 1 BC is year 0.
fn year(y: i64, bc: bool) -> i64 {
    if bc {
        1 - y
    } else {
        y
    }
}

fn ymd(s: &str) -> Option<(i64, i64, i64)> {
    let mut it = s.splitn(3, '-');
    let y = num(it.next()?)?;
    let m = num(it.next()?)?;
    let d = num(it.next()?)?;
    Some((y, m, d))
}

fn num(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `HH:MM:SS[.ffffff]` in microseconds.
fn time(s: &str) -> Option<i64> {
    let mut it = s.splitn(3, ':');
    let h = num(it.next()?)?;
    let m = num(it.next()?)?;
    let sec = it.next()?;
    let (whole, frac) = sec.split_once('.').unwrap_or((sec, ""));
    let whole = num(whole)?;
    let mut micros = 0i64;
    for i in 0..6 {
        let c = frac.as_bytes().get(i).copied().unwrap_or(b'0');
        if !c.is_ascii_digit() {
            return None;
        }
        micros = micros * 10 + (c - b'0') as i64;
    }
    Some(((h * 60 + m) * 60 + whole) * 1_000_000 + micros)
}

/// `+HH[:MM[:SS]]` in seconds.
fn offset_seconds(s: &str) -> Option<i64> {
    let (sign, body) = match s.as_bytes().first()? {
        b'+' => (1, &s[1..]),
        b'-' => (-1, &s[1..]),
        _ => return None,
    };
    let mut total = 0;
    let mut factor = 3600;
    for part in body.split(':') {
        if factor == 0 {
            return None;
        }
        total += num(part)? * factor;
        factor /= 60;
    }
    Some(sign * total)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_order_across_eras() {
        assert_eq!(date("1970-01-01"), Some(0));
        assert_eq!(date("2000-03-01"), Some(11017));
        assert!(date("0001-01-01 BC") < date("0001-01-01"));
        assert!(date("0044-03-15 BC") < date("0001-01-01 BC"));
        assert!(date("10000-01-01") > date("9999-12-31"));
        assert_eq!(date("infinity"), Some(i64::MAX));
        assert_eq!(date("2024-13"), None);
    }

    #[test]
    fn timestamps_with_offsets() {
        assert_eq!(timestamp("1970-01-01 00:00:01.5", false), Some(1_500_000));
        assert_eq!(
            timestamp("2024-11-03 01:30:00-04", true),
            timestamp("2024-11-03 05:30:00+00", true)
        );
        // Fall back: 01:10-05 is after 01:50-04.
        assert!(
            timestamp("2024-11-03 01:10:00-05", true) > timestamp("2024-11-03 01:50:00-04", true)
        );
        assert_eq!(
            timestamp("2024-01-01 00:00:00+05:30", true),
            timestamp("2023-12-31 18:30:00+00", true)
        );
        assert_eq!(timestamp("2024-01-01 00:00:00+01", false), None);
        assert!(
            timestamp("0001-01-01 00:00:00 BC", false) < timestamp("0001-01-01 00:00:00", false)
        );
    }
}
