//! The decoder's one error type: which message (type byte, LSN) and what was wrong with it.

use thiserror::Error;

use super::lsn::format_lsn;

/// A malformed, truncated or unexpected pgoutput message. Never skipped: the caller decides
/// whether to stop replication; the LSN says where to look (`pg_waldump`, the slot, the logs).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("pgoutput message '{kind}' at LSN {}: {reason}", format_lsn(*.lsn))]
pub struct DecodeError {
    /// Start LSN of the XLogData that carried the message.
    pub lsn: u64,
    /// Message type byte as a character, or `'?'` for an empty message.
    pub kind: char,
    /// What was wrong, in words.
    pub reason: String,
}

/// Why a message failed, before the LSN and type are attached (no allocation on the hot path
/// until something actually fails).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reason {
    /// Fewer bytes left than the field needs.
    Truncated(&'static str),
    /// Tuple data ended (or was malformed) at `column` (1-based) of `of`.
    TruncatedTuple { column: usize, of: usize },
    /// Anything else, already worded.
    Other(String),
}

impl Reason {
    pub(crate) fn other(msg: impl Into<String>) -> Reason {
        Reason::Other(msg.into())
    }

    pub(crate) fn at(self, lsn: u64, kind: char) -> DecodeError {
        let reason = match self {
            Reason::Truncated(field) => format!("truncated message: no room for {field}"),
            Reason::TruncatedTuple { column, of } => {
                format!("truncated tuple data (column {column} of {of})")
            }
            Reason::Other(msg) => msg,
        };
        DecodeError { lsn, kind, reason }
    }
}
