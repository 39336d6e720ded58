//! Errors of cross-shard planning and merging, each with the SQLSTATE the client should see.
use crate::net::ProtocolError;

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A construct whose results cannot be merged correctly from the shards' answers.
    #[error("{0}")]
    Unsupported(String),
    /// The query text does not parse.
    #[error("syntax error: {0}")]
    Parse(String),
    /// The shards answered with different columns.
    #[error("shards disagree on result column {column}: {detail}")]
    Mismatch { column: String, detail: String },
    /// A value from a shard could not be read as its declared type.
    #[error("cannot read value of column {column} ({detail})")]
    BadValue { column: usize, detail: String },
    #[error("{0} out of range")]
    OutOfRange(&'static str),
    #[error("LIMIT must not be negative")]
    NegativeLimit,
    #[error("OFFSET must not be negative")]
    NegativeOffset,
    /// A bound LIMIT/OFFSET parameter is not a bigint.
    #[error("invalid LIMIT/OFFSET parameter ${0}: {1}")]
    BadParameter(u32, String),
    /// A merger call out of order (a row before the RowDescription, an unknown shard ...).
    #[error("cross-shard merge: {0}")]
    State(&'static str),
    /// Past `merge_memory_limit` with growth that cannot spill.
    #[error("out of memory: the cross-shard merges in flight would pass merge_memory_limit ({limit}); raise it, or narrow the query")]
    OutOfMemory { limit: String },
    /// A temporary file of a merge could not be written or read.
    #[error("could not write to temporary file of a cross-shard merge ({detail}){}", if *.disk_full { "; free space under temp_directory or raise merge_work_mem" } else { "" })]
    Spill { disk_full: bool, detail: String },
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
}

impl MergeError {
    /// SQLSTATE of the error.
    pub fn code(&self) -> &'static str {
        match self {
            MergeError::Unsupported(_) => "0A000",
            MergeError::Parse(_) => "42601",
            MergeError::Mismatch { .. } | MergeError::BadValue { .. } | MergeError::State(_) => {
                "XX000"
            }
            MergeError::OutOfRange(_) => "22003",
            MergeError::NegativeLimit => "2201W",
            MergeError::NegativeOffset => "2201X",
            MergeError::BadParameter(..) => "22P02",
            MergeError::OutOfMemory { .. } => "53200",
            MergeError::Spill {
                disk_full: true, ..
            } => "53100",
            MergeError::Spill { .. } => "58030",
            MergeError::Protocol(e) => e.code(),
        }
    }

    pub(crate) fn unsupported(what: impl std::fmt::Display) -> MergeError {
        MergeError::Unsupported(format!("cross-shard queries cannot use {what}"))
    }
}
