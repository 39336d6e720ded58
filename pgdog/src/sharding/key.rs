//! Sharding key values: [`Key`] read from SQL text, from a text or binary parameter, or from a
//! configured mapping value, and hashed the way Postgres hashes the column type for
//! `PARTITION BY HASH`. Where the key goes is `placement`'s business.
use super::hash::HASH_PARTITION_SEED;
use super::hash::{hash_int8_extended, hash_text_extended, hash_uuid_extended, partition_row_hash};
use super::parse::{format_uuid, parse_int, parse_uuid};
use super::ShardingError;
use crate::config::{DataType, MappingValue};
use std::cmp::Ordering;
use std::fmt;

/// A sharding key value. Integers of every width are held as `i64` (Postgres hashes an int2 or
/// int4 exactly like the same int8).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Key {
    Integer(i64),
    Text(String),
    Uuid([u8; 16]),
}

/// The type's name as Postgres spells it in messages.
pub fn type_name(data_type: DataType) -> &'static str {
    match data_type {
        DataType::Bigint => "bigint",
        DataType::Integer => "integer",
        DataType::Smallint => "smallint",
        DataType::Uuid => "uuid",
        DataType::Varchar => "text",
    }
}

/// Width in bits of an integer type; `None` for the others.
fn integer_bits(data_type: DataType) -> Option<u32> {
    match data_type {
        DataType::Bigint => Some(64),
        DataType::Integer => Some(32),
        DataType::Smallint => Some(16),
        DataType::Uuid | DataType::Varchar => None,
    }
}

/// `value` if it fits the integer type, else Postgres' "smallint out of range".
fn check_range(data_type: DataType, bits: u32, value: i64) -> Result<i64, ShardingError> {
    let fits = match bits {
        16 => i16::try_from(value).is_ok(),
        32 => i32::try_from(value).is_ok(),
        _ => true,
    };
    if fits {
        Ok(value)
    } else {
        Err(ShardingError::ValueOutOfRange {
            type_name: type_name(data_type),
        })
    }
}

/// `text` unless it holds a NUL, which Postgres text cannot (it refuses such input).
fn no_nul(text: &str) -> Result<&str, ShardingError> {
    if text.as_bytes().contains(&0) {
        Err(ShardingError::InvalidUtf8 {
            bytes: "0x00".into(),
        })
    } else {
        Ok(text)
    }
}

/// A key value borrowed from its source (a query's text, a parameter): placement reads these
/// without allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value<'a> {
    Integer(i64),
    Text(&'a str),
    Uuid([u8; 16]),
}

impl<'a> Value<'a> {
    /// See [`Key::from_text`].
    pub(crate) fn from_text(data_type: DataType, text: &'a str) -> Result<Self, ShardingError> {
        match integer_bits(data_type) {
            Some(bits) => parse_int(text, bits, type_name(data_type)).map(Value::Integer),
            None if data_type == DataType::Uuid => parse_uuid(text).map(Value::Uuid),
            None => no_nul(text).map(Value::Text),
        }
    }

    /// See [`Key::from_binary`].
    pub(crate) fn from_binary(data_type: DataType, bytes: &'a [u8]) -> Result<Self, ShardingError> {
        let wrong_length = |expected| ShardingError::BinaryFormat {
            type_name: type_name(data_type),
            len: bytes.len(),
            expected,
        };
        if let Some(bits) = integer_bits(data_type) {
            let value = match *bytes {
                [a, b] => i64::from(i16::from_be_bytes([a, b])),
                [a, b, c, d] => i64::from(i32::from_be_bytes([a, b, c, d])),
                [a, b, c, d, e, f, g, h] => i64::from_be_bytes([a, b, c, d, e, f, g, h]),
                _ => return Err(wrong_length("2, 4 or 8")),
            };
            return check_range(data_type, bits, value).map(Value::Integer);
        }
        if data_type == DataType::Uuid {
            let uuid: [u8; 16] = bytes.try_into().map_err(|_| wrong_length("16"))?;
            return Ok(Value::Uuid(uuid));
        }
        match std::str::from_utf8(bytes) {
            Ok(text) => no_nul(text).map(Value::Text),
            Err(e) => {
                let start = e.valid_up_to();
                let len = e.error_len().unwrap_or(bytes.len() - start);
                let bad: Vec<String> = bytes[start..start + len]
                    .iter()
                    .map(|b| format!("0x{b:02x}"))
                    .collect();
                Err(ShardingError::InvalidUtf8 {
                    bytes: bad.join(" "),
                })
            }
        }
    }

    /// Whether this value can be a key of a column of `data_type` (integers: within its range).
    pub(crate) fn fits(&self, data_type: DataType) -> bool {
        match self {
            Value::Integer(v) => {
                integer_bits(data_type).is_some_and(|bits| check_range(data_type, bits, *v).is_ok())
            }
            Value::Text(_) => data_type == DataType::Varchar,
            Value::Uuid(_) => data_type == DataType::Uuid,
        }
    }

    /// The row hash Postgres computes for this value as a one-column hash partition key.
    pub(crate) fn partition_hash(&self) -> u64 {
        let column_hash = match self {
            Value::Integer(v) => hash_int8_extended(*v, HASH_PARTITION_SEED),
            Value::Text(s) => hash_text_extended(s.as_bytes(), HASH_PARTITION_SEED),
            Value::Uuid(u) => hash_uuid_extended(u, HASH_PARTITION_SEED),
        };
        partition_row_hash(column_hash)
    }

    pub(crate) fn to_key(self) -> Key {
        match self {
            Value::Integer(v) => Key::Integer(v),
            Value::Text(s) => Key::Text(s.to_string()),
            Value::Uuid(u) => Key::Uuid(u),
        }
    }
}

impl PartialOrd for Value<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Value<'_> {
    /// Integers numerically, text and uuids by their bytes (text in the C collation).
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Value::Integer(a), Value::Integer(b)) => a.cmp(b),
            (Value::Text(a), Value::Text(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Value::Uuid(a), Value::Uuid(b)) => a.cmp(b),
            // Keys of different kinds never meet in one table; any fixed order will do.
            _ => rank(self).cmp(&rank(other)),
        }
    }
}

fn rank(value: &Value<'_>) -> u8 {
    match value {
        Value::Integer(_) => 0,
        Value::Text(_) => 1,
        Value::Uuid(_) => 2,
    }
}

impl fmt::Display for Value<'_> {
    /// Integers as digits, text as a quoted SQL literal, uuids in canonical form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Integer(v) => write!(f, "{v}"),
            Value::Text(s) => write!(f, "'{}'", s.replace('\'', "''")),
            Value::Uuid(u) => write!(f, "'{}'", format_uuid(u)),
        }
    }
}

impl Key {
    /// Reads SQL text (a literal's value or a text-format parameter) as a value of `data_type`,
    /// accepting what Postgres' input function for the type accepts.
    pub fn from_text(data_type: DataType, text: &str) -> Result<Key, ShardingError> {
        Value::from_text(data_type, text).map(Value::to_key)
    }

    /// An integer for an integer-typed key (`None` for the other types): what `from_text` of
    /// its digits gives, without the digits (the range checked, `ValueOutOfRange` past it).
    pub fn from_integer(data_type: DataType, value: i64) -> Option<Result<Key, ShardingError>> {
        let bits = integer_bits(data_type)?;
        Some(check_range(data_type, bits, value).map(Key::Integer))
    }

    /// Reads a binary-format parameter: big-endian integers of 2, 4 or 8 bytes for any integer
    /// type (a client may bind an int4 for a bigint column; the value must fit the column),
    /// 16 bytes for a uuid, UTF-8 for text.
    pub fn from_binary(data_type: DataType, bytes: &[u8]) -> Result<Key, ShardingError> {
        Value::from_binary(data_type, bytes).map(Value::to_key)
    }

    /// Reads a configured list value or range bound: an integer for the integer types (within
    /// the type's range), a string for uuid (any form `uuid_in` accepts) and text.
    pub fn from_mapping(data_type: DataType, value: &MappingValue) -> Result<Key, ShardingError> {
        let mismatch = || ShardingError::MappingType {
            value: match value {
                MappingValue::Integer(v) => v.to_string(),
                MappingValue::Text(s) => format!("\"{s}\""),
            },
            type_name: type_name(data_type),
        };
        match (integer_bits(data_type), value) {
            (Some(bits), MappingValue::Integer(v)) => {
                check_range(data_type, bits, *v).map(Key::Integer)
            }
            (None, MappingValue::Text(s)) => Key::from_text(data_type, s),
            _ => Err(mismatch()),
        }
    }

    /// The row hash Postgres computes for this value as a one-column `PARTITION BY HASH` key:
    /// the partition with remainder `partition_hash() % modulus` holds it.
    pub fn partition_hash(&self) -> u64 {
        self.as_value().partition_hash()
    }

    pub(crate) fn as_value(&self) -> Value<'_> {
        match self {
            Key::Integer(v) => Value::Integer(*v),
            Key::Text(s) => Value::Text(s),
            Key::Uuid(u) => Value::Uuid(*u),
        }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_value().fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_keys() {
        assert_eq!(
            Key::from_text(DataType::Bigint, " -42 "),
            Ok(Key::Integer(-42))
        );
        assert_eq!(
            Key::from_text(DataType::Smallint, "99999")
                .unwrap_err()
                .to_string(),
            "value \"99999\" is out of range for type smallint"
        );
        assert_eq!(
            Key::from_text(DataType::Integer, "2147483648")
                .unwrap_err()
                .code(),
            "22003"
        );
        assert_eq!(
            Key::from_text(DataType::Varchar, " as is "),
            Ok(Key::Text(" as is ".into()))
        );
        let uuid = Key::from_text(DataType::Uuid, "{A0EEBC999C0B4EF8BB6D6BB9BD380A11}").unwrap();
        assert_eq!(uuid.to_string(), "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'");
        assert_eq!(
            Key::from_text(DataType::Uuid, "nope")
                .unwrap_err()
                .to_string(),
            "invalid input syntax for type uuid: \"nope\""
        );
    }

    #[test]
    fn binary_keys() {
        let bigint = DataType::Bigint;
        assert_eq!(
            Key::from_binary(bigint, &(-5i16).to_be_bytes()),
            Ok(Key::Integer(-5))
        );
        assert_eq!(
            Key::from_binary(bigint, &(-5i32).to_be_bytes()),
            Ok(Key::Integer(-5))
        );
        assert_eq!(
            Key::from_binary(bigint, &i64::MIN.to_be_bytes()),
            Ok(Key::Integer(i64::MIN))
        );
        let e = Key::from_binary(bigint, &[0, 0, 1]).unwrap_err();
        assert_eq!(e.code(), "22P03");
        let e = Key::from_binary(DataType::Smallint, &40000i32.to_be_bytes()).unwrap_err();
        assert_eq!(e.to_string(), "smallint out of range");
        assert_eq!(e.code(), "22003");
        assert_eq!(
            Key::from_binary(DataType::Integer, &(i32::MAX as i64).to_be_bytes()),
            Ok(Key::Integer(i32::MAX as i64))
        );
        let bytes = [7u8; 16];
        assert_eq!(
            Key::from_binary(DataType::Uuid, &bytes),
            Ok(Key::Uuid(bytes))
        );
        assert_eq!(
            Key::from_binary(DataType::Uuid, &bytes[..15])
                .unwrap_err()
                .code(),
            "22P03"
        );
        assert_eq!(
            Key::from_binary(DataType::Varchar, "日本語".as_bytes()),
            Ok(Key::Text("日本語".into()))
        );
        let e = Key::from_binary(DataType::Varchar, b"a\0b").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid byte sequence for encoding \"UTF8\": 0x00"
        );
        assert_eq!(
            Key::from_text(DataType::Varchar, "a\0").unwrap_err().code(),
            "22021"
        );
        let e = Key::from_binary(DataType::Varchar, b"ab\xff\xfe").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid byte sequence for encoding \"UTF8\": 0xff"
        );
        assert_eq!(e.code(), "22021");
    }

    #[test]
    fn mapping_keys() {
        use MappingValue::{Integer, Text};
        assert_eq!(
            Key::from_mapping(DataType::Smallint, &Integer(5)),
            Ok(Key::Integer(5))
        );
        assert_eq!(
            Key::from_mapping(DataType::Smallint, &Integer(70000))
                .unwrap_err()
                .code(),
            "22003"
        );
        assert!(Key::from_mapping(DataType::Bigint, &Text("5".into())).is_err());
        assert!(Key::from_mapping(DataType::Varchar, &Integer(5)).is_err());
        assert_eq!(
            Key::from_mapping(DataType::Varchar, &Text("eu".into())),
            Ok(Key::Text("eu".into()))
        );
        assert!(Key::from_mapping(DataType::Uuid, &Text("not a uuid".into())).is_err());
    }

    #[test]
    fn integer_widths_hash_alike() {
        // Postgres' integer_ops family: 7::int2, 7::int4 and 7::int8 land in the same partition.
        let key = Key::Integer(7);
        assert_eq!(
            key.partition_hash(),
            partition_row_hash(super::super::hash::hash_int2_extended(
                7,
                HASH_PARTITION_SEED
            ))
        );
        assert_eq!(Key::Text("x'y".into()).to_string(), "'x''y'",);
    }
}
