//! Cross-shard result assembly: plans how a query sent to every shard is rewritten and how the
//! shards' rows are merged (k-way ORDER BY merge, aggregates, GROUP BY, DISTINCT, LIMIT/OFFSET)
//! so the client sees what one database would have answered.
//!
//! Use: [`plan`] the client's SELECT once (cacheable), send [`CrossShardPlan::shard_sql`] (or
//! the client's text) to every shard, bind `$n` LIMIT/OFFSET values with [`MergePlan::bind`],
//! then push each shard's RowDescription, DataRows and completion into a [`Merger`] and forward
//! what [`Merger::take_ready`] and [`Merger::finish`] return. This module never does I/O.
mod aggfn;
mod aggregate;
mod datetime;
mod decimal;
mod drain;
mod error;
mod float;
mod having;
mod key;
mod list;
mod memory;
mod merger;
mod plan;
mod rewrite;
mod runs;
mod setop;
mod sort;
mod spill;
mod spool;
mod spread;
mod value;

#[cfg(test)]
mod tests;

pub(crate) use aggfn::{is_aggregate, is_builtin_aggregate};
pub use decimal::Decimal;
pub use error::MergeError;
pub use having::{CmpOp, Constant, HavingCond};
pub use memory::{stats as memory_stats, Budget, MemoryLimits, MergeStats};
pub use merger::Merger;
pub use plan::{
    plan, AggFn, Bound, ColumnRef, CrossShardPlan, DistinctPlan, Grouping, KeyColumn, MergePlan,
    NullGuard, OrderKey,
};
pub use setop::{SetOp, SetOpPlan, SetTree};
pub use spill::{sweep as sweep_temp_files, SpillFile, SpillReader};
pub use spool::{Spool, SpoolReader};
