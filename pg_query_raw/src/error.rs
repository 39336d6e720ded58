//! Errors of pg_query_raw.

/// What went wrong. Parse errors carry Postgres' own message and cursor position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The SQL does not parse: Postgres' message and the 1-based character position it points at
    /// (0 when Postgres gives none).
    #[error("{message}")]
    Parse { message: String, cursorpos: i32 },
    /// The input contains a NUL byte, which C strings cannot carry.
    #[error("query contains a NUL byte at byte {0}")]
    InteriorNul(usize),
    /// The C tree holds a node tag this build does not know: never skipped silently.
    #[error("unknown parse node tag {0}")]
    UnknownNodeTag(u32),
    /// A C enum field holds a value with no Protobuf counterpart.
    #[error("unknown value {1} for enum {0}")]
    UnknownEnum(&'static str, i64),
    /// A node kind libpg_query cannot convert either (int and OID lists in node positions).
    #[error("{0} nodes cannot be converted")]
    Unsupported(&'static str),
    /// The statement nests deeper than the converter accepts.
    #[error("statement is nested too deeply (more than {0} levels)")]
    TooDeep(u32),
    /// The tree could not be turned back into SQL.
    #[error("{0}")]
    Deparse(String),
    /// Normalize, fingerprint, scan or split failed.
    #[error("{0}")]
    Other(String),
}

impl Error {
    /// The message alone, as `pg_query` reports it.
    pub fn message(&self) -> String {
        match self {
            Error::Parse { message, .. } | Error::Deparse(message) => message.clone(),
            other => other.to_string(),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
