//! Date and time text, in any of the four DateStyle output styles (ISO, SQL, German, Postgres),
//! turned into integers that order like the values: days for `date`, microseconds for
//! `timestamp`; `timestamptz` keeps its local time and its zone (a numeric offset, or the
//! abbreviation the SQL, German and Postgres styles print), see [`compare_tz`]. BC years,
//! years past 9999 and `infinity` / `-infinity` included.
//!
//! Output shapes (PostgreSQL 18, `12/17/1997 07:37:16 PST` style):
//! - ISO: `1997-12-17`, `1997-12-17 07:37:16.5`, `1997-12-17 07:37:16-08`, `0044-03-15 BC`;
//! - SQL: `12/17/1997` (`17/12/1997` with DMY), `12/17/1997 07:37:16 PST`;
//! - German: `17.12.1997`, `17.12.1997 07:37:16 PST`;
//! - Postgres: `12-17-1997` (`17-12-1997` with DMY), `Wed Dec 17 07:37:16 1997 PST`
//!   (`Wed 17 Dec ...` with DMY);
//! - BC: ` BC` at the very end (after the zone); zones print as abbreviations (`PST`, `LMT`) or,
//!   when the zone has none, as numeric ones (`+0545`, `-03`).
use std::cmp::Ordering;
use std::fmt;

/// The servers' DateStyle (the ParameterStatus value, e.g. `SQL, DMY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DateStyle {
    pub style: Style,
    /// Day before month in the SQL and Postgres styles (`DMY`); `MDY` and `YMD` print the
    /// month first.
    pub dmy: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Style {
    #[default]
    Iso,
    Sql,
    Postgres,
    German,
}

impl DateStyle {
    /// Reads `ISO, MDY`, `SQL, DMY`, `German`, `Postgres, YMD`, `European` ... (case-insensitive;
    /// unknown words are ignored, leaving the default `ISO, MDY`).
    pub fn parse(s: &str) -> DateStyle {
        let mut ds = DateStyle::default();
        let mut order_given = false;
        for word in s.split([',', ' ', '\t']).filter(|w| !w.is_empty()) {
            match word.to_ascii_lowercase().as_str() {
                "iso" => ds.style = Style::Iso,
                "sql" => ds.style = Style::Sql,
                "postgres" => ds.style = Style::Postgres,
                "german" => {
                    ds.style = Style::German;
                    if !order_given {
                        ds.dmy = true;
                    }
                }
                "dmy" | "euro" | "european" => {
                    ds.dmy = true;
                    order_given = true;
                }
                "mdy" | "ymd" | "us" | "noneuro" | "noneuropean" => {
                    ds.dmy = false;
                    order_given = true;
                }
                _ => {}
            }
        }
        ds
    }
}

impl fmt::Display for DateStyle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let style = match self.style {
            Style::Iso => "ISO",
            Style::Sql => "SQL",
            Style::Postgres => "Postgres",
            Style::German => "German",
        };
        write!(f, "{style}, {}", if self.dmy { "DMY" } else { "MDY" })
    }
}

/// `date`: days since 1970-01-01 (`infinity` / `-infinity` at the extremes).
pub fn date(s: &str, ds: DateStyle) -> Option<i64> {
    match s {
        "infinity" => return Some(i64::MAX),
        "-infinity" => return Some(i64::MIN),
        _ => {}
    }
    let (s, bc) = strip_bc(s);
    let (y, m, d) = numeric_date(s, ds)?;
    Some(days_from_civil(year(y, bc), m, d))
}

/// `timestamp`: microseconds since 1970-01-01 00:00 (`None` when the text carries a zone).
pub fn timestamp(s: &str, ds: DateStyle) -> Option<i128> {
    let t = parse(s, ds)?;
    match t.zone {
        None => Some(t.local),
        Some(_) if t.special => Some(t.local),
        Some(_) => None,
    }
}

/// A `timestamptz` as printed: its local time and its zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp<'a> {
    /// Local wall-clock time in microseconds since 1970-01-01 00:00.
    pub local: i128,
    pub zone: Zone<'a>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone<'a> {
    /// Seconds east of UTC (numeric offsets, `UTC`, `GMT`, and `infinity`).
    Offset(i64),
    /// An abbreviation whose offset the text does not tell (`PST`, `CEST`, `LMT` ...).
    Abbrev(&'a str),
}

impl Stamp<'_> {
    fn utc(&self) -> Option<i128> {
        match self.zone {
            Zone::Offset(o) => Some(self.local - o as i128 * 1_000_000),
            Zone::Abbrev(_) => None,
        }
    }
}

/// `timestamptz` text (any style).
pub fn timestamptz(s: &str, ds: DateStyle) -> Option<Stamp<'_>> {
    let t = parse(s, ds)?;
    let zone = match t.zone {
        _ if t.special => Zone::Offset(0),
        Some(z) => z,
        None => return None,
    };
    Some(Stamp {
        local: t.local,
        zone,
    })
}

/// Two zones of one session's time zone that print different abbreviations (DST and standard
/// time) are never this far apart in offset; local times at least this far apart order like
/// the instants.
const AMBIGUITY_MICROS: u128 = 3 * 3_600_000_000;

/// Orders two `timestamptz` values printed in the same session time zone. Exact when both carry
/// numeric offsets; by local time when they print the same abbreviation (the same offset) or
/// when their local times are far enough apart that no offset difference can reverse them;
/// `None` otherwise (e.g. `01:30 PDT` and `01:10 PST`, the repeated hour of a DST change).
pub fn compare_tz(a: &Stamp<'_>, b: &Stamp<'_>) -> Option<Ordering> {
    if let (Some(x), Some(y)) = (a.utc(), b.utc()) {
        return Some(x.cmp(&y));
    }
    if matches!((a.zone, b.zone), (Zone::Abbrev(x), Zone::Abbrev(y)) if x == y) {
        return Some(a.local.cmp(&b.local));
    }
    if a.local.abs_diff(b.local) >= AMBIGUITY_MICROS {
        return Some(a.local.cmp(&b.local));
    }
    None
}

struct Parsed<'a> {
    local: i128,
    zone: Option<Zone<'a>>,
    /// `infinity` / `-infinity`.
    special: bool,
}

fn parse(s: &str, ds: DateStyle) -> Option<Parsed<'_>> {
    let special = |local| {
        Some(Parsed {
            local,
            zone: None,
            special: true,
        })
    };
    match s {
        "infinity" => return special(i128::MAX),
        "-infinity" => return special(i128::MIN),
        _ => {}
    }
    let (s, bc) = strip_bc(s);
    let mut words = s.split(' ');
    let first = words.next()?;
    let (y, m, d, time_word) = if first.bytes().next()?.is_ascii_alphabetic() {
        // Postgres: `Wed Dec 17 07:37:16 1997` or `Wed 17 Dec 07:37:16 1997`.
        let (a, b) = (words.next()?, words.next()?);
        let (month, day) = match (month_number(a), month_number(b)) {
            (Some(m), None) => (m, num(b)?),
            (None, Some(m)) => (m, num(a)?),
            _ => return None,
        };
        let time = words.next()?;
        (num(words.next()?)?, month, day, time)
    } else {
        let (y, m, d) = numeric_date(first, ds)?;
        (y, m, d, words.next()?)
    };
    // ISO glues a numeric offset to the time; the other styles print the zone as a word.
    let (time_part, mut zone) = match time_word.find(['+', '-']) {
        Some(i) => (
            &time_word[..i],
            Some(Zone::Offset(offset_seconds(&time_word[i..])?)),
        ),
        None => (time_word, None),
    };
    if let Some(word) = words.next() {
        if zone.is_some() {
            return None;
        }
        zone = Some(zone_word(word)?);
    }
    if words.next().is_some() {
        return None;
    }
    let days = days_from_civil(year(y, bc), m, d) as i128;
    Some(Parsed {
        local: days * 86_400_000_000 + time(time_part)? as i128,
        zone,
        special: false,
    })
}

fn zone_word(w: &str) -> Option<Zone<'_>> {
    if w.starts_with(['+', '-']) {
        return offset_seconds(w).map(Zone::Offset);
    }
    if w.is_empty() || !w.bytes().all(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    Some(match w {
        "UTC" | "GMT" | "UT" | "Z" => Zone::Offset(0),
        _ => Zone::Abbrev(w),
    })
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

/// `1997-12-17` (ISO), `12/17/1997` (SQL), `17.12.1997` (German), `12-17-1997` (Postgres):
/// (year, month, day). ISO years have at least four digits, the Postgres style's first field
/// two.
fn numeric_date(s: &str, ds: DateStyle) -> Option<(i64, i64, i64)> {
    let sep = s.bytes().find(|c| matches!(c, b'-' | b'/' | b'.'))?;
    let mut it = s.splitn(3, sep as char);
    let (a, b, c) = (it.next()?, it.next()?, it.next()?);
    let (a_n, b_n, c_n) = (num(a)?, num(b)?, num(c)?);
    let (y, m, d) = match sep {
        b'-' if a.len() >= 4 => (a_n, b_n, c_n),
        b'.' => (c_n, b_n, a_n),
        _ if ds.dmy => (c_n, b_n, a_n),
        _ => (c_n, a_n, b_n),
    };
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    Some((y, m, d))
}

fn month_number(s: &str) -> Option<i64> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    MONTHS.iter().position(|m| *m == s).map(|i| i as i64 + 1)
}

fn num(s: &str) -> Option<i64> {
    if s.is_empty() || s.len() > 12 || !s.bytes().all(|c| c.is_ascii_digit()) {
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
    if frac.len() > 6 {
        return None;
    }
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

/// `+HH[:MM[:SS]]` (ISO) or `+HH[MM[SS]]` (a numeric zone abbreviation) in seconds.
fn offset_seconds(s: &str) -> Option<i64> {
    let (sign, body) = match s.as_bytes().first()? {
        b'+' => (1, &s[1..]),
        b'-' => (-1, &s[1..]),
        _ => return None,
    };
    let parts: Vec<&str> = if body.contains(':') {
        body.split(':').collect()
    } else if body.len() % 2 == 0 && body.is_ascii() {
        (0..body.len())
            .step_by(2)
            .map(|i| &body[i..i + 2])
            .collect()
    } else {
        return None;
    };
    if parts.is_empty() || parts.len() > 3 {
        return None;
    }
    let mut total = 0;
    let mut factor = 3600;
    for part in parts {
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

    const ISO: DateStyle = DateStyle {
        style: Style::Iso,
        dmy: false,
    };
    const SQL_DMY: DateStyle = DateStyle {
        style: Style::Sql,
        dmy: true,
    };

    fn ts(s: &str) -> Option<i128> {
        timestamp(s, ISO)
    }

    fn tz(s: &str, ds: DateStyle) -> Stamp<'_> {
        timestamptz(s, ds).unwrap_or_else(|| panic!("{s} does not parse"))
    }

    #[test]
    fn datestyle_parses() {
        assert_eq!(DateStyle::parse("ISO, MDY"), DateStyle::default());
        assert_eq!(DateStyle::parse("SQL, DMY"), SQL_DMY);
        let g = DateStyle::parse("German, DMY");
        assert_eq!((g.style, g.dmy), (Style::German, true));
        let p = DateStyle::parse("Postgres, MDY");
        assert_eq!((p.style, p.dmy), (Style::Postgres, false));
        assert!(!DateStyle::parse("sql, ymd").dmy);
        assert_eq!(DateStyle::parse("SQL, DMY").to_string(), "SQL, DMY");
    }

    #[test]
    fn dates_order_across_eras() {
        assert_eq!(date("1970-01-01", ISO), Some(0));
        assert_eq!(date("2000-03-01", ISO), Some(11017));
        assert!(date("0001-01-01 BC", ISO) < date("0001-01-01", ISO));
        assert!(date("0044-03-15 BC", ISO) < date("0001-01-01 BC", ISO));
        assert!(date("10000-01-01", ISO) > date("9999-12-31", ISO));
        assert_eq!(date("infinity", ISO), Some(i64::MAX));
        assert_eq!(date("2024-13", ISO), None);
        assert_eq!(date("2024-13-01", ISO), None);
    }

    #[test]
    fn dates_in_every_style() {
        let want = date("1997-12-17", ISO);
        let mdy = DateStyle::parse("SQL, MDY");
        assert_eq!(date("12/17/1997", mdy), want);
        assert_eq!(date("17/12/1997", SQL_DMY), want);
        assert_eq!(date("17.12.1997", DateStyle::parse("German, DMY")), want);
        assert_eq!(date("12-17-1997", DateStyle::parse("Postgres, MDY")), want);
        assert_eq!(date("17-12-1997", DateStyle::parse("Postgres, DMY")), want);
        // YMD prints like MDY in the SQL and Postgres styles.
        assert_eq!(date("12/17/1997", DateStyle::parse("SQL, YMD")), want);
        assert_eq!(date("15/03/0044 BC", SQL_DMY), date("0044-03-15 BC", ISO));
        assert_eq!(date("02/01/12000", SQL_DMY), date("12000-01-02", ISO));
        assert_eq!(date("-infinity", SQL_DMY), Some(i64::MIN));
        // 05/04: day first under DMY.
        assert!(date("05/04/2024", SQL_DMY) < date("04/05/2024", SQL_DMY));
        assert!(date("05/04/2024", mdy) > date("04/05/2024", mdy));
    }

    #[test]
    fn timestamps_in_every_style() {
        let want = ts("1997-12-17 07:37:16.5");
        for (s, style) in [
            ("12/17/1997 07:37:16.5", "SQL, MDY"),
            ("17/12/1997 07:37:16.5", "SQL, DMY"),
            ("17.12.1997 07:37:16.5", "German, DMY"),
            ("Wed Dec 17 07:37:16.5 1997", "Postgres, MDY"),
            ("Wed 17 Dec 07:37:16.5 1997", "Postgres, DMY"),
        ] {
            assert_eq!(timestamp(s, DateStyle::parse(style)), want, "{s}");
        }
        let bc = ts("0044-03-15 01:02:03.5 BC");
        assert!(bc.is_some());
        assert_eq!(timestamp("15/03/0044 01:02:03.5 BC", SQL_DMY), bc);
        assert_eq!(
            timestamp("Fri Mar 15 01:02:03.5 0044 BC", DateStyle::default()),
            bc
        );
        assert_eq!(timestamp("-infinity", SQL_DMY), Some(i128::MIN));
        assert!(timestamp("Sun Jan 02 00:00:00 12000", ISO) > ts("9999-12-31 23:59:59"));
        // A zone in a timestamp column is not a timestamp.
        assert_eq!(timestamp("12/17/1997 07:37:16 PST", ISO), None);
    }

    #[test]
    fn timestamps_with_offsets() {
        assert_eq!(ts("1970-01-01 00:00:01.5"), Some(1_500_000));
        let cmp = |a: &str, b: &str| compare_tz(&tz(a, ISO), &tz(b, ISO));
        assert_eq!(
            cmp("2024-11-03 01:30:00-04", "2024-11-03 05:30:00+00"),
            Some(Ordering::Equal)
        );
        // Fall back: 01:10-05 is after 01:50-04.
        assert_eq!(
            cmp("2024-11-03 01:10:00-05", "2024-11-03 01:50:00-04"),
            Some(Ordering::Greater)
        );
        assert_eq!(
            cmp("2024-01-01 00:00:00+05:30", "2023-12-31 18:30:00+00"),
            Some(Ordering::Equal)
        );
        assert_eq!(
            cmp(
                "0044-03-15 01:02:03.25-07:52:58 BC",
                "0001-01-01 00:00:00+00"
            ),
            Some(Ordering::Less)
        );
        assert_eq!(
            cmp("infinity", "294276-12-31 23:59:59+00"),
            Some(Ordering::Greater)
        );
        assert_eq!(ts("2024-01-01 00:00:00+01"), None);
        assert!(ts("0001-01-01 00:00:00 BC") < ts("0001-01-01 00:00:00"));
    }

    #[test]
    fn timestamptz_with_abbreviations() {
        let cmp = |a: &str, b: &str| compare_tz(&tz(a, SQL_DMY), &tz(b, SQL_DMY));
        // Same abbreviation: the same offset.
        assert_eq!(
            cmp("17/12/1997 07:37:16 PST", "17/12/1997 07:37:17 PST"),
            Some(Ordering::Less)
        );
        // Different abbreviations, hours apart: local order is safe.
        assert_eq!(
            cmp("04/07/2024 12:00:00 PDT", "17/12/2024 07:37:16 PST"),
            Some(Ordering::Less)
        );
        // The repeated hour of a DST change cannot be ordered from the text.
        assert_eq!(
            cmp("03/11/2024 01:30:00 PDT", "03/11/2024 01:10:00 PST"),
            None
        );
        assert_eq!(
            cmp("03/11/2024 01:30:00 GMT", "03/11/2024 01:10:00 BST"),
            None
        );
        // Numeric abbreviations and UTC are exact.
        assert_eq!(
            cmp("03/11/2024 14:15:00 +0545", "03/11/2024 08:30:00 UTC"),
            Some(Ordering::Equal)
        );
        assert_eq!(
            cmp("03/11/2024 01:30:00 -03", "03/11/2024 01:10:00 -04"),
            Some(Ordering::Less)
        );
        assert_eq!(
            cmp("15/03/0044 01:02:03.25 LMT BC", "infinity"),
            Some(Ordering::Less)
        );
        assert_eq!(
            cmp("-infinity", "15/03/0044 01:02:03.25 LMT BC"),
            Some(Ordering::Less)
        );
        let pg = DateStyle::parse("Postgres, MDY");
        assert_eq!(
            compare_tz(
                &tz("Fri Mar 15 01:02:03.25 0044 LMT BC", pg),
                &tz("Wed Dec 17 07:37:16 1997 PST", pg)
            ),
            Some(Ordering::Less)
        );
        let german = DateStyle::parse("German, DMY");
        assert_eq!(
            tz("17.12.1997 07:37:16 PST", german),
            tz("17/12/1997 07:37:16 PST", SQL_DMY)
        );
        assert_eq!(timestamptz("17/12/1997 07:37:16", SQL_DMY), None);
        assert_eq!(timestamptz("17/12/1997 07:37:16 P$T", SQL_DMY), None);
    }
}
