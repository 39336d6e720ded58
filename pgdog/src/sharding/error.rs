//! Why a key value could not be read or placed, worded like Postgres' own messages, with the
//! SQLSTATE a client should see. Owns no decisions: the other sharding modules raise these.

/// A sharding failure: bad key input, a key no mapping covers, or a bad sharded table definition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardingError {
    /// Text that is not a value of the type (SQLSTATE 22P02).
    #[error("invalid input syntax for type {type_name}: \"{input}\"")]
    InvalidText {
        type_name: &'static str,
        input: String,
    },
    /// Text naming an integer outside the type's range (SQLSTATE 22003).
    #[error("value \"{input}\" is out of range for type {type_name}")]
    OutOfRange {
        type_name: &'static str,
        input: String,
    },
    /// A binary integer (or a configured integer) outside the column type's range (22003).
    #[error("{type_name} out of range")]
    ValueOutOfRange { type_name: &'static str },
    /// A binary parameter of the wrong length for the type (SQLSTATE 22P03).
    #[error("incorrect binary data format for type {type_name}: {len} bytes, expected {expected}")]
    BinaryFormat {
        type_name: &'static str,
        len: usize,
        expected: &'static str,
    },
    /// A binary text parameter that is not UTF-8 (SQLSTATE 22021).
    #[error("invalid byte sequence for encoding \"UTF8\": {bytes}")]
    InvalidUtf8 { bytes: String },
    /// A key of one type given to a table sharded on a column of another (SQLSTATE 42804).
    #[error("sharding key value {value} is not of type {type_name} (column \"{column}\")")]
    TypeMismatch {
        value: String,
        type_name: &'static str,
        column: String,
    },
    /// No list or range mapping holds the key and the table has no `default_shard` (22023).
    #[error("no shard for sharding key value {value} in {table} and no default_shard")]
    NoShard { value: String, table: String },
    /// A configured list value or range bound of the wrong kind for the column (42P17).
    #[error("mapping value {value} is not a {type_name}")]
    MappingType {
        value: String,
        type_name: &'static str,
    },
    /// The `[[sharded_tables]]` entry cannot be used as written (SQLSTATE 42P17).
    #[error("sharded_tables entry for {table}: {message}")]
    Config { table: String, message: String },
}

impl ShardingError {
    /// The SQLSTATE of the ErrorResponse a client should get for this error.
    pub fn code(&self) -> &'static str {
        match self {
            ShardingError::InvalidText { .. } => "22P02",
            ShardingError::OutOfRange { .. } | ShardingError::ValueOutOfRange { .. } => "22003",
            ShardingError::BinaryFormat { .. } => "22P03",
            ShardingError::InvalidUtf8 { .. } => "22021",
            ShardingError::TypeMismatch { .. } => "42804",
            ShardingError::NoShard { .. } => "22023",
            ShardingError::MappingType { .. } | ShardingError::Config { .. } => "42P17",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_read_like_postgres() {
        let cases = [
            (
                ShardingError::InvalidText {
                    type_name: "bigint",
                    input: "abc".into(),
                },
                "invalid input syntax for type bigint: \"abc\"",
                "22P02",
            ),
            (
                ShardingError::OutOfRange {
                    type_name: "smallint",
                    input: "99999".into(),
                },
                "value \"99999\" is out of range for type smallint",
                "22003",
            ),
            (
                ShardingError::NoShard {
                    value: "42".into(),
                    table: "table \"users\"".into(),
                },
                "no shard for sharding key value 42 in table \"users\" and no default_shard",
                "22023",
            ),
        ];
        for (e, message, code) in cases {
            assert_eq!(e.to_string(), message);
            assert_eq!(e.code(), code);
        }
    }
}
