//! Logical replication: replication-protocol client, pgoutput decoder; later copy, apply and
//! resharding.
//!
//! - `pgoutput`: decodes the messages of Postgres' built-in logical decoding plugin.
//! - `client`: the replication-protocol client (slots, START_REPLICATION, progress).
//! - `dump`: `pgdog logical-dump`, a slot printed as JSON lines.

pub mod client;
pub mod dump;
pub mod pgoutput;
