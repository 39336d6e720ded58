//! COPY into sharded tables: reads `COPY` statements ([`parse_copy`]) and splits the client's
//! `COPY ... FROM STDIN` data by shard ([`CopySplitter`]).
//!
//! Owns the COPY data formats (text, CSV, binary) as Postgres reads them: row boundaries, the
//! NULL marker, escapes and quotes, the header line, the binary file header and trailer. It
//! does not decide placement (the caller's callback, shared with SQL and replication, does) and
//! does not touch sockets or protocol messages: it takes CopyData payloads and fills one byte
//! buffer per shard, rows unchanged, for the session to send as CopyData.

mod error;
mod fields;
mod splitter;
mod statement;

#[cfg(test)]
mod tests;

pub use error::{CopyError, KeyError};
pub use splitter::{place_key, CopySplitter, KeyField, Place};
pub use statement::{parse_copy, CopyFormat, CopyOptions, CopyStatement, ForceColumns, OnError};
