//! Query routing: parses each statement (pg_query_raw fast path, cached per query text, and per
//! shape for the simple protocol), finds its sharding keys and decides which shards it goes to;
//! splits multi-row INSERTs and COPY rows by shard. One placement function (`sharding`) serves SQL, COPY and replication alike.
pub mod cache;
pub mod copy;
pub mod explain;
pub mod generate;
pub mod insert;
pub mod keys;
mod not_in;
pub mod point;
pub mod read_write;
pub mod route;
pub mod schema;
pub mod schemas;
mod setop;
pub mod shapes;
mod subquery;
pub mod verdict;

pub use cache::{Parsed, QueryCache};
pub use keys::Params;
pub use route::{Route, Router};
pub use schema::Schema;
pub use shapes::{PointHit, Served, ShapeCache};

/// Whether a DISCARD statement's `sql` is `DISCARD ALL` (which also drops prepared statements).
pub(crate) fn discards_all(sql: &str) -> bool {
    sql.to_ascii_lowercase().contains("all")
}

/// Why a statement cannot be routed; converted into an ErrorResponse with `code()`.
#[derive(Debug, thiserror::Error)]
pub enum RouterError {
    #[error("{0}")]
    Syntax(pg_query_raw::Error),
    #[error(transparent)]
    Sharding(#[from] crate::sharding::ShardingError),
    #[error(transparent)]
    Merge(#[from] crate::merge::MergeError),
    #[error("{0}")]
    Unsupported(String),
    #[error("shard {0} does not exist (this database has {1} shards)")]
    NoSuchShard(usize, usize),
    #[error("{0}")]
    Invalid(String),
    /// An INSERT without a column list into a sharded table whose column order is not known
    /// yet: the session reads it from a shard and routes again.
    #[error("the column order of table \"{0}\" is needed")]
    NeedColumns(String),
}

impl RouterError {
    /// SQLSTATE for the client.
    pub fn code(&self) -> &'static str {
        match self {
            RouterError::Syntax(pg_query_raw::Error::Parse { .. }) => "42601",
            RouterError::Syntax(_) => "54001",
            RouterError::Sharding(e) => e.code(),
            RouterError::Merge(e) => e.code(),
            RouterError::Unsupported(_) => "0A000",
            RouterError::NoSuchShard(..) => "22023",
            RouterError::Invalid(_) => "22023",
            RouterError::NeedColumns(_) => "XX000",
        }
    }

    /// Cursor position (1-based) for a syntax error, if known.
    pub fn position(&self) -> Option<usize> {
        match self {
            RouterError::Syntax(pg_query_raw::Error::Parse { cursorpos, .. }) if *cursorpos > 0 => {
                Some(*cursorpos as usize)
            }
            _ => None,
        }
    }
}
