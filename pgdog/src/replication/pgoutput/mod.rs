//! pgoutput: decodes the messages of Postgres' built-in logical decoding output plugin
//! (protocol versions 1 to 4), the payloads of XLogData in a logical replication stream.
//!
//! Owns the byte layouts and the decoder state they need (relation cache, streamed-segment
//! xid); does not talk to the network, apply changes or decide where rows go. Column values
//! stay `Bytes` slices of the payload. Anything malformed is a [`DecodeError`] naming the LSN
//! and message type; nothing is skipped and nothing panics.
//!
//! ```
//! use bytes::Bytes;
//! use pgdog::replication::pgoutput::{Decoder, LogicalMessage};
//!
//! let mut decoder = Decoder::new(4);
//! let mut begin = vec![b'B'];
//! begin.extend_from_slice(&0x16B3748u64.to_be_bytes()); // final LSN
//! begin.extend_from_slice(&0i64.to_be_bytes()); // commit time
//! begin.extend_from_slice(&742u32.to_be_bytes()); // xid
//! let msg = decoder.decode(0x16B3700, Bytes::from(begin)).unwrap();
//! assert!(matches!(msg, LogicalMessage::Begin { xid: 742, .. }));
//! assert_eq!(
//!     decoder.to_json(&msg, 0x16B3700),
//!     r#"{"lsn":"0/16B3700","kind":"begin","xid":742,"final_lsn":"0/16B3748","commit_time":"2000-01-01T00:00:00.000000Z"}"#
//! );
//! ```

mod decoder;
mod error;
mod json;
mod lsn;
mod message;
mod parse;
mod reader;

#[cfg(test)]
mod tests;

pub use decoder::{
    Decoder, MAX_VERSION, PARALLEL_STREAM_VERSION, STREAM_VERSION, TWO_PHASE_VERSION,
};
pub use error::DecodeError;
pub use lsn::{
    civil_from_days, format_lsn, format_timestamp, parse_lsn, POSTGRES_EPOCH_UNIX_MICROS,
};
pub use message::{
    AbortInfo, ColumnValue, LogicalMessage, OldTuple, PrepareInfo, Relation, RelationColumn,
    TruncateOptions, TupleData,
};
