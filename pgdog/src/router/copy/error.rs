//! Errors of COPY parsing and splitting, worded like Postgres' own, each with its SQLSTATE.

use std::fmt;

/// Why a COPY statement cannot be used or its data cannot be split.
///
/// After a [`CopyError`] from [`CopySplitter`](super::CopySplitter) the splitter's state is
/// unspecified: the COPY must be aborted (CopyFail to every shard) and the error sent to the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CopyError {
    /// The statement does not parse; Postgres' message (SQLSTATE 42601).
    #[error("{0}")]
    Syntax(String),
    /// The statement parses but is not exactly one COPY statement (SQLSTATE 42601).
    #[error("{0}")]
    NotCopy(String),
    /// A COPY option Postgres would refuse, or one the splitter cannot honour, with its SQLSTATE
    /// (42601 conflicting/unknown option, 22023 bad value, 0A000 not supported).
    #[error("{message}")]
    Option {
        /// SQLSTATE.
        code: &'static str,
        /// Postgres-style message.
        message: String,
    },
    /// A row of COPY data that cannot be split: bad format (22P04), a key the placement
    /// function refused (its own code, e.g. 22P02), a shard number out of range (XX000).
    #[error("{}", RowContext { table: table.as_deref(), line: *line, message })]
    Row {
        /// The table, for the message (`COPY users, line 3: ...`); `None` prints `COPY, line 3`.
        table: Option<String>,
        /// 1-based line number as Postgres counts it (text/CSV: physical lines including the
        /// header and embedded newlines in CSV quotes; binary: tuple number, 0 for the header).
        line: u64,
        /// SQLSTATE.
        code: &'static str,
        /// The reason, without the context prefix.
        message: String,
    },
    /// The caller broke the splitter's contract (wrong number of output buffers, use after
    /// `finish`) (SQLSTATE XX000).
    #[error("{0}")]
    Internal(String),
}

impl CopyError {
    /// The SQLSTATE of the ErrorResponse a client should get for this error.
    pub fn code(&self) -> &'static str {
        match self {
            CopyError::Syntax(_) | CopyError::NotCopy(_) => "42601",
            CopyError::Option { code, .. } | CopyError::Row { code, .. } => code,
            CopyError::Internal(_) => "XX000",
        }
    }

    /// The 1-based line (tuple) number of a row error.
    pub fn line(&self) -> Option<u64> {
        match self {
            CopyError::Row { line, .. } => Some(*line),
            _ => None,
        }
    }

    pub(crate) fn option(code: &'static str, message: impl Into<String>) -> Self {
        CopyError::Option {
            code,
            message: message.into(),
        }
    }
}

struct RowContext<'a> {
    table: Option<&'a str>,
    line: u64,
    message: &'a str,
}

impl fmt::Display for RowContext<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.table {
            Some(table) => write!(f, "COPY {table}, line {}: {}", self.line, self.message),
            None => write!(f, "COPY, line {}: {}", self.line, self.message),
        }
    }
}

/// Why the placement callback refused a key: the SQLSTATE and Postgres-style message the client
/// should see (e.g. `22P02`, `invalid input syntax for type bigint: "x"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError {
    /// SQLSTATE.
    pub code: &'static str,
    /// Postgres-style message, without context.
    pub message: String,
}

impl KeyError {
    /// A key error with its SQLSTATE and message.
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        KeyError {
            code,
            message: message.into(),
        }
    }

    /// True for the input-conversion failures `ON_ERROR ignore` skips in Postgres (the row's
    /// value is not valid for the column's type), as opposed to placement failures.
    pub(crate) fn is_soft(&self) -> bool {
        matches!(
            self.code,
            "22P02" | "22003" | "22P03" | "22021" | "22007" | "22008" | "22026" | "22P05"
        )
    }
}

impl From<String> for KeyError {
    /// A message alone is an invalid-input error (SQLSTATE 22P02).
    fn from(message: String) -> Self {
        KeyError {
            code: "22P02",
            message,
        }
    }
}
