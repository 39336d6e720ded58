//! Placement: which shard holds a sharding key value. Postgres-exact hashing (`PARTITION BY
//! HASH`), list and range mappings, and key values decoded from SQL text and from text or binary
//! parameters. The one placement function that SQL, COPY rows and replicated WAL tuples all use.
//!
//! - `hash`: Postgres' hash functions and partition row hash, bit for bit;
//! - `parse`: text input of integers and uuids as Postgres' input functions read it;
//! - `key`: [`Key`], a key value read from text, binary or configuration;
//! - `placement`: [`Placement`], a sharded table's key-to-shard rule;
//! - `buckets`: [`Buckets`], a database's bucket map (hash placement by bucket);
//! - `error`: [`ShardingError`] and its SQLSTATEs.
pub mod buckets;
mod error;
pub mod hash;
mod key;
mod parse;
mod placement;

pub use buckets::Buckets;
pub use error::ShardingError;
pub use key::{type_name, Key};
pub use placement::Placement;
