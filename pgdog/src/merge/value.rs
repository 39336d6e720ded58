//! Typed column values: ordering, equality keys and numbers, driven by the RowDescription's type
//! OID and format code (text or binary), so shards' values compare the way Postgres compares
//! them (numeric as decimals, NaN above every float, NULLs handled by the callers).
use super::datetime::{self, DateStyle};
use super::decimal::Decimal;
use super::error::MergeError;
use super::float;
use crate::net::rows::Field;
use std::borrow::Cow;
use std::cmp::Ordering;

/// The type families the merger understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int2,
    Int4,
    Int8,
    Oid,
    Float4,
    Float8,
    Numeric,
    Bool,
    /// text, varchar, name, "char", json (byte order: the servers use the C collation).
    Text,
    Bpchar,
    Date,
    Time,
    Timestamp,
    TimestampTz,
    Uuid,
    Bytea,
    Other,
}

impl Kind {
    pub fn from_oid(oid: i32) -> Kind {
        match oid {
            21 => Kind::Int2,
            23 => Kind::Int4,
            20 => Kind::Int8,
            26 => Kind::Oid,
            700 => Kind::Float4,
            701 => Kind::Float8,
            1700 => Kind::Numeric,
            16 => Kind::Bool,
            25 | 1043 | 19 | 18 => Kind::Text,
            1042 => Kind::Bpchar,
            1082 => Kind::Date,
            1083 => Kind::Time,
            1114 => Kind::Timestamp,
            1184 => Kind::TimestampTz,
            2950 => Kind::Uuid,
            17 => Kind::Bytea,
            _ => Kind::Other,
        }
    }

    pub fn is_int(self) -> bool {
        matches!(self, Kind::Int2 | Kind::Int4 | Kind::Int8 | Kind::Oid)
    }
}

/// A number read from a column.
#[derive(Debug, Clone)]
pub enum Number {
    Int(i128),
    Float(f64),
    Dec(Decimal),
}

impl Number {
    /// Numeric comparison across representations (floats compare as floats, NaN largest).
    pub fn cmp_value(&self, other: &Number) -> Ordering {
        match (self, other) {
            (Number::Int(a), Number::Int(b)) => a.cmp(b),
            (Number::Float(_), _) | (_, Number::Float(_)) => {
                float_cmp(self.to_f64(), other.to_f64())
            }
            _ => self.to_decimal().cmp_value(&other.to_decimal()),
        }
    }

    fn to_f64(&self) -> f64 {
        match self {
            Number::Int(i) => *i as f64,
            Number::Float(f) => *f,
            Number::Dec(d) => d.to_f64(),
        }
    }

    fn to_decimal(&self) -> Decimal {
        match self {
            Number::Int(i) => Decimal::from_i128(*i),
            Number::Dec(d) => d.clone(),
            Number::Float(f) => Decimal::parse(&f.to_string()).unwrap_or(Decimal::NaN),
        }
    }
}

/// Postgres' float ordering: NaN equals NaN and is above everything, -0 equals 0.
pub fn float_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// How to read one column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColType {
    pub kind: Kind,
    pub oid: i32,
    pub binary: bool,
    /// How the servers print dates and timestamps (text format).
    pub dates: DateStyle,
    /// Text reaches the client in an encoding whose bytes do not sort as the text (see
    /// `Merger::set_text_unordered`): text is then compared for equality only.
    pub unordered_text: bool,
}

/// Why two values could not be compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incomparable {
    /// A value is not readable as the column's type.
    Invalid,
    /// `timestamptz` values printed with time zone abbreviations (DateStyle SQL, German or
    /// Postgres) too close together to order without knowing the abbreviations' offsets.
    Ambiguous,
}

impl ColType {
    pub fn of(field: &Field) -> ColType {
        ColType {
            kind: Kind::from_oid(field.type_oid),
            oid: field.type_oid,
            binary: field.is_binary(),
            dates: DateStyle::default(),
            unordered_text: false,
        }
    }

    /// Whether values of this column can be ordered (ORDER BY, min/max).
    pub fn ordered(&self) -> bool {
        match self.kind {
            Kind::Other => false,
            Kind::Text | Kind::Bpchar => !self.unordered_text,
            _ => true,
        }
    }

    /// Whether values are numbers the merger can add.
    pub fn numeric(&self) -> bool {
        self.kind.is_int() || matches!(self.kind, Kind::Float4 | Kind::Float8 | Kind::Numeric)
    }

    /// Compares two non-NULL values.
    pub fn compare(&self, a: &[u8], b: &[u8]) -> Result<Ordering, Incomparable> {
        use Kind::*;
        let ds = self.dates;
        let invalid = Incomparable::Invalid;
        let t = |v| text(v).ok_or(invalid);
        Ok(match self.kind {
            Int2 | Int4 | Int8 | Oid | Float4 | Float8 | Numeric => self
                .number(a)
                .ok_or(invalid)?
                .cmp_value(&self.number(b).ok_or(invalid)?),
            Bpchar => trim_spaces(a).cmp(trim_spaces(b)),
            Text | Uuid | Bytea | Bool => a.cmp(b),
            Date if self.binary => be_i32(a).ok_or(invalid)?.cmp(&be_i32(b).ok_or(invalid)?),
            Time | Timestamp | TimestampTz if self.binary => {
                be_i64(a).ok_or(invalid)?.cmp(&be_i64(b).ok_or(invalid)?)
            }
            Time => a.cmp(b),
            Date => datetime::date(t(a)?, ds)
                .ok_or(invalid)?
                .cmp(&datetime::date(t(b)?, ds).ok_or(invalid)?),
            Timestamp => datetime::timestamp(t(a)?, ds)
                .ok_or(invalid)?
                .cmp(&datetime::timestamp(t(b)?, ds).ok_or(invalid)?),
            TimestampTz => datetime::compare_tz(
                &datetime::timestamptz(t(a)?, ds).ok_or(invalid)?,
                &datetime::timestamptz(t(b)?, ds).ok_or(invalid)?,
            )
            .ok_or(Incomparable::Ambiguous)?,
            Other => return Err(invalid),
        })
    }

    /// [`ColType::compare`] with the client's error for column `column`.
    pub fn compare_at(&self, column: usize, a: &[u8], b: &[u8]) -> Result<Ordering, MergeError> {
        self.compare(a, b).map_err(|e| match e {
            Incomparable::Invalid => MergeError::BadValue {
                column,
                detail: format!("not a valid value of type oid {}", self.oid),
            },
            Incomparable::Ambiguous => MergeError::unsupported(format!(
                "ORDER BY, min() or max() on timestamp with time zone column {column} under \
                 DateStyle '{}': the shards print time zone abbreviations, and values less than \
                 3 hours apart with different abbreviations (e.g. '{}' and '{}') cannot be \
                 ordered reliably; use DateStyle ISO",
                self.dates,
                String::from_utf8_lossy(a),
                String::from_utf8_lossy(b),
            )),
        })
    }

    /// Bytes equal exactly when the values are equal (for GROUP BY and DISTINCT).
    pub fn key<'a>(&self, v: &'a [u8]) -> Cow<'a, [u8]> {
        match self.kind {
            Kind::Float4 | Kind::Float8 | Kind::Numeric => match self.number(v) {
                Some(Number::Float(f)) => {
                    let f = if f == 0.0 { 0.0 } else { f };
                    let bits = if f.is_nan() { u64::MAX } else { f.to_bits() };
                    Cow::Owned(bits.to_be_bytes().to_vec())
                }
                Some(Number::Dec(d)) => Cow::Owned(d.key().into_bytes()),
                _ => Cow::Borrowed(v),
            },
            Kind::Bpchar => Cow::Borrowed(trim_spaces(v)),
            _ => Cow::Borrowed(v),
        }
    }

    /// The value as a number (`None`: not a number type, or unreadable).
    pub fn number(&self, v: &[u8]) -> Option<Number> {
        use Kind::*;
        if self.binary {
            return match self.kind {
                Int2 => Some(Number::Int(be_i16(v)? as i128)),
                Int4 => Some(Number::Int(be_i32(v)? as i128)),
                Int8 => Some(Number::Int(be_i64(v)? as i128)),
                Oid => Some(Number::Int(be_i32(v)? as u32 as i128)),
                Float4 => Some(Number::Float(f32::from_bits(be_i32(v)? as u32) as f64)),
                Float8 => Some(Number::Float(f64::from_bits(be_i64(v)? as u64))),
                Numeric => Some(Number::Dec(Decimal::from_binary(v)?)),
                _ => None,
            };
        }
        let s = text(v)?;
        match self.kind {
            Int2 | Int4 | Int8 | Oid => Some(Number::Int(s.trim().parse::<i128>().ok()?)),
            Float4 | Float8 => Some(Number::Float(float::parse(s)?)),
            Numeric => Some(Number::Dec(Decimal::parse(s)?)),
            _ => None,
        }
    }

    /// A number written in this column's type and format (`None`: cannot be represented).
    pub fn encode(&self, n: &Number) -> Option<Vec<u8>> {
        use Kind::*;
        match (self.kind, n, self.binary) {
            (Int2, Number::Int(i), false) => Some(i16::try_from(*i).ok()?.to_string().into_bytes()),
            (Int2, Number::Int(i), true) => Some(i16::try_from(*i).ok()?.to_be_bytes().to_vec()),
            (Int4, Number::Int(i), false) => Some(i32::try_from(*i).ok()?.to_string().into_bytes()),
            (Int4, Number::Int(i), true) => Some(i32::try_from(*i).ok()?.to_be_bytes().to_vec()),
            (Int8, Number::Int(i), false) => Some(i64::try_from(*i).ok()?.to_string().into_bytes()),
            (Int8, Number::Int(i), true) => Some(i64::try_from(*i).ok()?.to_be_bytes().to_vec()),
            (Float8, Number::Float(f), false) => Some(float::format_f64(*f).into_bytes()),
            (Float8, Number::Float(f), true) => Some(f.to_be_bytes().to_vec()),
            (Float4, Number::Float(f), false) => Some(float::format_f32(*f as f32).into_bytes()),
            (Float4, Number::Float(f), true) => Some((*f as f32).to_be_bytes().to_vec()),
            (Numeric, Number::Dec(d), false) => Some(d.to_string().into_bytes()),
            (Numeric, Number::Int(i), false) => Some(i.to_string().into_bytes()),
            (Numeric, Number::Dec(d), true) => Some(d.to_binary()),
            (Numeric, Number::Int(i), true) => Some(Decimal::from_i128(*i).to_binary()),
            _ => None,
        }
    }
}

fn trim_spaces(v: &[u8]) -> &[u8] {
    let end = v.iter().rposition(|&c| c != b' ').map_or(0, |i| i + 1);
    &v[..end]
}

fn text(v: &[u8]) -> Option<&str> {
    std::str::from_utf8(v).ok()
}

fn be_i16(v: &[u8]) -> Option<i16> {
    Some(i16::from_be_bytes(v.try_into().ok()?))
}

fn be_i32(v: &[u8]) -> Option<i32> {
    Some(i32::from_be_bytes(v.try_into().ok()?))
}

fn be_i64(v: &[u8]) -> Option<i64> {
    Some(i64::from_be_bytes(v.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(oid: i32, binary: bool) -> ColType {
        ColType {
            kind: Kind::from_oid(oid),
            oid,
            binary,
            dates: DateStyle::default(),
            unordered_text: false,
        }
    }

    #[test]
    fn text_comparisons_follow_the_type() {
        let int = ty(23, false);
        assert_eq!(int.compare(b"10", b"9").ok(), Some(Ordering::Greater));
        assert_eq!(int.compare(b"-10", b"9").ok(), Some(Ordering::Less));
        let num = ty(1700, false);
        assert_eq!(num.compare(b"10.5", b"9.75").ok(), Some(Ordering::Greater));
        assert_eq!(num.compare(b"NaN", b"1e9").ok(), Some(Ordering::Greater));
        let f = ty(701, false);
        assert_eq!(f.compare(b"NaN", b"Infinity").ok(), Some(Ordering::Greater));
        assert_eq!(f.compare(b"-0", b"0").ok(), Some(Ordering::Equal));
        assert_eq!(f.compare(b"1e+15", b"2").ok(), Some(Ordering::Greater));
        let text = ty(25, false);
        assert_eq!(text.compare(b"B", b"a").ok(), Some(Ordering::Less));
        let bp = ty(1042, false);
        assert_eq!(bp.compare(b"a  ", b"a").ok(), Some(Ordering::Equal));
        let date = ty(1082, false);
        assert_eq!(
            date.compare(b"0001-01-01 BC", b"0001-01-01").ok(),
            Some(Ordering::Less)
        );
        assert_eq!(int.compare(b"x", b"1").ok(), None);
        assert_eq!(ty(1186, false).compare(b"1 day", b"2 days").ok(), None);
        assert!(!ty(1186, false).ordered());
    }

    #[test]
    fn binary_comparisons() {
        let int8 = ty(20, true);
        assert_eq!(
            int8.compare(&(-5i64).to_be_bytes(), &3i64.to_be_bytes())
                .ok(),
            Some(Ordering::Less)
        );
        let f4 = ty(700, true);
        assert_eq!(
            f4.compare(&f32::NAN.to_be_bytes(), &1.0f32.to_be_bytes())
                .ok(),
            Some(Ordering::Greater)
        );
        let ts = ty(1184, true);
        assert_eq!(
            ts.compare(&(-1i64).to_be_bytes(), &1i64.to_be_bytes()).ok(),
            Some(Ordering::Less)
        );
        assert_eq!(int8.compare(b"abc", &1i64.to_be_bytes()).ok(), None);
    }

    #[test]
    fn binary_numeric_decodes() {
        // 12345.678: ndigits 3, weight 1, sign 0, dscale 3, digits 1 2345 6780.
        let mut v = Vec::new();
        for w in [3i16, 1, 0, 3, 1, 2345, 6780] {
            v.extend_from_slice(&w.to_be_bytes());
        }
        assert_eq!(Decimal::from_binary(&v).unwrap().to_string(), "12345.678");
        // -0.05: ndigits 1, weight -1, sign 0x4000, dscale 2, digits 500.
        let mut v = Vec::new();
        for w in [1i16, -1, 0x4000, 2, 500] {
            v.extend_from_slice(&w.to_be_bytes());
        }
        assert_eq!(Decimal::from_binary(&v).unwrap().to_string(), "-0.05");
    }

    #[test]
    fn keys_equal_for_equal_values() {
        let num = ty(1700, false);
        assert_eq!(num.key(b"1.50"), num.key(b"1.5"));
        let f = ty(701, false);
        assert_eq!(f.key(b"-0"), f.key(b"0"));
        assert_eq!(f.key(b"NaN"), f.key(b"NaN"));
        assert_ne!(f.key(b"1"), f.key(b"2"));
        let bp = ty(1042, false);
        assert_eq!(bp.key(b"ab "), bp.key(b"ab"));
    }
}
