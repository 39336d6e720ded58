//! Memory sizes in settings, written as Postgres writes them: `"64MB"`, `"512kB"`, `"1GB"`, or a
//! bare number of kilobytes (Postgres' unit for `work_mem`).
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A number of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Size(pub u64);

const UNITS: &[(&str, u64)] = &[
    ("TB", 1 << 40),
    ("GB", 1 << 30),
    ("MB", 1 << 20),
    ("kB", 1 << 10),
    ("B", 1),
];

impl Size {
    pub const fn mb(n: u64) -> Size {
        Size(n << 20)
    }

    pub fn bytes(self) -> u64 {
        self.0
    }

    /// `"64MB"`, `"64 MB"`, `"512kB"`, `"100"` (kB); units as Postgres spells them.
    pub fn parse(text: &str) -> Result<Size, String> {
        let t = text.trim();
        let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (number, unit) = t.split_at(digits);
        let n: u64 = number
            .parse()
            .map_err(|_| format!("invalid size \"{text}\" (use e.g. \"64MB\" or \"512kB\")"))?;
        let unit = unit.trim();
        let scale = if unit.is_empty() {
            1 << 10
        } else {
            UNITS
                .iter()
                .find(|(u, _)| *u == unit)
                .map(|(_, s)| *s)
                .ok_or_else(|| {
                    format!("invalid unit in \"{text}\" (valid units: B, kB, MB, GB, TB)")
                })?
        };
        n.checked_mul(scale)
            .map(Size)
            .ok_or_else(|| format!("size \"{text}\" is too large"))
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (unit, scale) = UNITS
            .iter()
            .find(|(_, s)| self.0 >= *s && self.0.is_multiple_of(*s))
            .copied()
            .unwrap_or(("B", 1));
        write!(f, "{}{unit}", self.0 / scale)
    }
}

impl Serialize for Size {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Size, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(kb) => kb
                .checked_mul(1 << 10)
                .map(Size)
                .ok_or_else(|| serde::de::Error::custom("size is too large")),
            Raw::Text(t) => Size::parse(&t).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_postgres_units() {
        assert_eq!(Size::parse("64MB").unwrap(), Size(64 << 20));
        assert_eq!(Size::parse("64 kB").unwrap(), Size(64 << 10));
        assert_eq!(Size::parse("1GB").unwrap(), Size(1 << 30));
        assert_eq!(Size::parse("100").unwrap(), Size(100 << 10));
        assert!(Size::parse("64mb").is_err());
        assert!(Size::parse("MB").is_err());
        assert!(Size::parse("99999999999999TB").is_err());
    }

    #[test]
    fn prints_what_it_parses() {
        for s in ["64MB", "1GB", "512kB", "1000B", "3TB"] {
            assert_eq!(Size::parse(s).unwrap().to_string(), s);
        }
        #[derive(Deserialize, Serialize)]
        struct T {
            v: Size,
        }
        let t: T = toml::from_str("v = 2048").unwrap();
        assert_eq!(t.v, Size(2 << 20));
        assert_eq!(toml::to_string(&t).unwrap().trim(), "v = \"2MB\"");
        assert!(toml::from_str::<T>("v = \"2 parsecs\"").is_err());
    }
}
