//! LSN and timestamp text forms, as Postgres prints them.

/// Formats an LSN the way Postgres does: high and low 32 bits in upper-case hex, `16/B374D848`.
pub fn format_lsn(lsn: u64) -> String {
    format!("{:X}/{:X}", lsn >> 32, lsn & 0xFFFF_FFFF)
}

/// Parses `X/X` (1 to 8 hex digits on each side, any case) into an LSN.
pub fn parse_lsn(text: &str) -> Option<u64> {
    let (hi, lo) = text.trim().split_once('/')?;
    let part = |s: &str| -> Option<u64> {
        if s.is_empty() || s.len() > 8 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u64::from_str_radix(s, 16).ok()
    };
    Some((part(hi)? << 32) | part(lo)?)
}

/// Microseconds between the Unix epoch and the Postgres epoch (2000-01-01 00:00:00 UTC).
pub const POSTGRES_EPOCH_UNIX_MICROS: i64 = 946_684_800_000_000;

/// Formats a Postgres `TimestampTz` (microseconds since 2000-01-01 UTC) as ISO 8601 in UTC,
/// `2025-03-04T05:06:07.123456Z`; Postgres' special values print as `infinity` / `-infinity`.
pub fn format_timestamp(micros: i64) -> String {
    match micros {
        i64::MAX => return "infinity".into(),
        i64::MIN => return "-infinity".into(),
        _ => (),
    }
    let total = micros.div_euclid(1_000_000);
    let frac = micros.rem_euclid(1_000_000);
    let days = total.div_euclid(86_400) + 10_957; // days from 1970-01-01 to 2000-01-01
    let secs = total.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{frac:06}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsn_round_trip() {
        assert_eq!(format_lsn(0x16_B374_D848), "16/B374D848");
        assert_eq!(format_lsn(0x16B3748), "0/16B3748");
        assert_eq!(format_lsn(0), "0/0");
        assert_eq!(parse_lsn("16/B374D848"), Some(0x16_B374_D848));
        assert_eq!(parse_lsn("0/16b3748"), Some(0x16B3748));
        assert_eq!(parse_lsn("FFFFFFFF/FFFFFFFF"), Some(u64::MAX));
        for bad in [
            "",
            "/",
            "1/",
            "/1",
            "1/2/3",
            "g/1",
            "123456789/0",
            "+1/0",
            "1 /0",
        ] {
            assert_eq!(parse_lsn(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn timestamps() {
        assert_eq!(format_timestamp(0), "2000-01-01T00:00:00.000000Z");
        assert_eq!(format_timestamp(-1), "1999-12-31T23:59:59.999999Z");
        // 2024-02-29 12:34:56.789 UTC
        let unix = 1_709_210_096_789_000i64;
        assert_eq!(
            format_timestamp(unix - POSTGRES_EPOCH_UNIX_MICROS),
            "2024-02-29T12:34:56.789000Z"
        );
        assert_eq!(format_timestamp(i64::MAX), "infinity");
        assert_eq!(format_timestamp(i64::MIN), "-infinity");
        // near the extremes: no overflow
        format_timestamp(i64::MAX - 1);
        format_timestamp(i64::MIN + 1);
    }
}
