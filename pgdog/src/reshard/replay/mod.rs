//! `pgdog replay`: applies the changes of the permanent slot created by `pgdog copy-data --slot`
//! to the destination's shards, routed by the router's placement of each row's sharding key.
//!
//! - One replication stream per source shard (the slot of the same name on each shard's
//!   primary), all running at once, each with its own destination connections, its own
//!   position row and watermarks (keyed by [`progress_key`]: `slot` for source shard 0,
//!   `slot/i` for shard i). Omnisharded tables are applied from source shard 0's stream only
//!   (every source shard carries the same writes). TRUNCATE of a sharded table from a sharded
//!   source is refused (a destination shard also holds the other source shards' rows).
//! - Each table's changes committed before its copy watermark are skipped (the copy has them),
//!   per destination shard: a resumed copy may have written some shards later than others. A
//!   table copied in key ranges has a watermark per range ([`ranges`]): a change goes by its
//!   key's range.
//! - Changes are applied as prepared statements (Parse once per statement shape and connection,
//!   then Bind/Execute with text values), pipelined, inside `BEGIN ... COMMIT` on each touched
//!   shard; the same transaction records the source LSN reached in `pgdog_reshard_position`, so a
//!   restart (also after kill -9) skips, shard by shard, what that shard already committed. The
//!   slot is confirmed only once every touched shard committed.
//! - Group commit: consecutive source transactions share one destination transaction per
//!   shard while more replication data is already received (never while waiting for the
//!   network), up to `[resharding] replay_batch` source transactions (1000),
//!   `replay_batch_rows` changes (20,000) or `replay_batch_ms` (50); the stored position is the end
//!   LSN of the batch's last transaction, and a batch is all or nothing per shard.
//! - INSERT is an upsert on the replica identity; an UPDATE moving a row to another shard is a
//!   DELETE there and an upsert on the new shard; TRUNCATE runs on every shard. A table whose
//!   replica identity lacks the sharding key has its UPDATE and DELETE applied by identity on
//!   every shard, exactly one row changed across them ([`identity`]); from a sharded source,
//!   on the destination shards the stream owns only (`reshard/ownership.rs`).
//! - Stopping: `--until-lsn` (every stream), [`ReplayOptions::stop_at`] (per source shard,
//!   settable while running: the cutover), or the shutdown future. A stream with a target asks
//!   the server for a keepalive every 100 ms while idle, so it notices quickly that the server
//!   is past its target with nothing left to apply. [`ReplayOptions::progress`] gets per stream
//!   LSNs, commit time and counts after each committed batch.
//! - [`ReplayOptions::atomic`] (`pgdog replay --atomic`, or `PGDOG_REPLAY_ATOMIC=1`): a batch
//!   touching several destination shards commits with two-phase commit
//!   (`PREPARE TRANSACTION 'pgdog_replay_<key>_<end lsn>_<shard>'` on each, then
//!   `COMMIT PREPARED` on each). On start, a crashed run's leftovers are resolved: committed
//!   when the transaction committed on some shard (its LSN is at most the furthest shard's
//!   position), rolled back otherwise (it is replayed again). A replay that fails and is not
//!   run again leaves its prepared transactions (and their locks) behind.
//! - Test hooks (builds with the `failpoints` feature): `PGDOG_TEST_ABORT_AFTER_COMMIT=N` aborts right after the Nth destination commit
//!   (batch), before the slot is confirmed; `PGDOG_TEST_ABORT_IN_2PC=N:K` aborts in the Nth
//!   two-phase batch after every shard prepared it and K committed it.
use crate::backend::server::{Server, ServerError, ServerTarget};
use crate::config::Settings;
use crate::net::message::{self, put_cstr};
use crate::replication::client::{
    format_lsn, ReplicationClient, ReplicationError, ReplicationEvent, StartOptions,
};
use crate::replication::pgoutput::{
    parse_lsn, ColumnValue, DecodeError, Decoder, LogicalMessage, OldTuple, Relation,
    TruncateOptions, TupleData,
};
use crate::reshard::copy::{
    check_databases, connect, destination, destination_shards, ident, literal, postgres_error,
    progress_key, schema_of, server_err, source_primaries, staying, CopyDataError, Destination,
    PROGRESS_DDL,
};
use crate::reshard::progress::{Progress, StopAt, StreamProgress};
use crate::reshard::Databases;
use crate::router::schema::Schema;
use bytes::{BufMut, Bytes, BytesMut};
use futures_util::future::try_join_all;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::watch;

mod commit;
mod ddl;
mod dest;
mod hold;
mod identity;
mod ranges;
mod stream;
mod table;
use commit::*;
use dest::*;
use stream::{run_stream, StreamContext};
use table::*;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Statements pipelined on one shard before an intermediate Sync (inside the open
/// transaction), so neither side's socket buffer fills up on a large source transaction.
const SYNC_EVERY: usize = 1000;
/// Buffered bytes for one shard before they are written.
const FLUSH_BYTES: usize = 64 * 1024;
/// When a batch (group commit) is committed: `[resharding] replay_batch` source transactions
/// (1: one destination transaction per source one), `replay_batch_rows` row changes, or
/// `replay_batch_ms` after its first source transaction ended.
#[derive(Debug, Clone, Copy)]
struct BatchBounds {
    transactions: u64,
    rows: u64,
    time: Duration,
}

impl BatchBounds {
    fn of(r: &crate::config::Resharding) -> BatchBounds {
        BatchBounds {
            transactions: r.replay_batch.max(1),
            rows: r.replay_batch_rows.max(1),
            time: Duration::from_millis(r.replay_batch_ms),
        }
    }
}
/// How often a stream with a stop target asks the server for a keepalive while idle.
const STOP_POLL: Duration = Duration::from_millis(100);
/// How long a slot still held by a killed run's walsender is waited for.
const SLOT_BUSY_DEADLINE: Duration = Duration::from_secs(15);
/// The crash test hook (see [`abort_after_commit`]).
#[cfg(feature = "failpoints")]
const ABORT_AFTER_COMMIT: &str = "PGDOG_TEST_ABORT_AFTER_COMMIT";
/// Test hook of the two-phase commit: `N:K` aborts during the Nth two-phase transaction after
/// every shard prepared it and K of them committed it.
#[cfg(feature = "failpoints")]
const ABORT_IN_TWO_PHASE: &str = "PGDOG_TEST_ABORT_IN_2PC";

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error(transparent)]
    Copy(#[from] CopyDataError),
    #[error(transparent)]
    Replication(#[from] ReplicationError),
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// A destination connection failed under the replay (a retry can outlive it when the
    /// server was unreachable, restarting or closed the connection).
    #[error("{context}: {source}")]
    Server {
        context: String,
        #[source]
        source: Box<ServerError>,
    },
    #[error("{0}")]
    Other(String),
}

fn other(s: impl Into<String>) -> ReplayError {
    ReplayError::Other(s.into())
}

/// `map_err` helper: a destination connection failed while doing `context`.
fn lost(context: String) -> impl FnOnce(ServerError) -> ReplayError {
    move |e| ReplayError::Server {
        context,
        source: Box::new(e),
    }
}

/// What `pgdog replay` was asked to do.
#[derive(Clone)]
pub struct ReplayOptions {
    /// The source and destination databases.
    pub databases: Databases,
    pub publication: String,
    pub slot: String,
    /// Stop after the transaction ending at or after this LSN (every stream).
    pub until_lsn: Option<u64>,
    /// Live progress, updated per committed batch of source transactions (None from the CLI).
    pub progress: Option<Arc<Progress>>,
    /// Per source shard stop targets, settable while the replay runs (None from the CLI).
    pub stop_at: Option<Arc<StopAt>>,
    /// Two-phase commit: a destination transaction touching several shards is prepared on
    /// each, then committed on each, so readers never see it on one shard only
    /// (`pgdog replay --atomic`).
    pub atomic: bool,
}

/// What a replay did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplaySummary {
    /// Source transactions applied on at least one shard.
    pub transactions: u64,
    /// Row changes applied (a change sent to several shards counts once).
    pub rows: u64,
    /// Changes skipped: below a table's watermark or already committed on their shard.
    pub skipped: u64,
    /// The last source LSN confirmed (source shard 0's stream).
    pub last_lsn: u64,
    /// The last source LSN confirmed, per source shard.
    pub last_lsns: Vec<u64>,
    /// Schema statements (`ALTER TABLE`) applied for source schema changes.
    pub schema_changes: u64,
}

/// The source transaction being applied.
struct Txn {
    final_lsn: u64,
    /// The destination shards this transaction sent statements to.
    touched: BTreeSet<usize>,
    rows: u64,
    /// An UPDATE changing the row's identity, held until the next change shows whether it is
    /// the first half of a move ([`Applier::coalesce`]).
    held: Option<LogicalMessage>,
}

impl Txn {
    fn new(final_lsn: u64) -> Txn {
        Txn {
            final_lsn,
            touched: BTreeSet::new(),
            rows: 0,
            held: None,
        }
    }
}

/// Consecutive source transactions applied in one destination transaction per shard (group
/// commit): committed together with the end LSN of the last one as the stored position.
#[derive(Default)]
struct Batch {
    /// The shards with an open destination transaction.
    touched: BTreeSet<usize>,
    /// Source transactions in the batch (applied on some shard or skipped).
    source: u64,
    /// Of those, the ones applied on at least one shard, and their rows.
    transactions: u64,
    rows: u64,
    /// The end LSN and commit time of the last source transaction.
    end_lsn: u64,
    commit_time: i64,
    /// When the first source transaction of the batch ended.
    started: Option<Instant>,
}

impl Batch {
    fn is_empty(&self) -> bool {
        self.source == 0
    }
}

/// The applier: destination shards and the tables seen so far.
struct Applier {
    shards: Vec<Shard>,
    tables: HashMap<u32, Table>,
    schema: Schema,
    database: String,
    /// The source shard this stream reads.
    source_shard: usize,
    /// Whether the source has more than one shard.
    sharded_source: bool,
    /// The source's sharding layout, when it has more than one shard.
    source_schema: Option<Schema>,
    /// The source database's name.
    source_database: String,
    /// This stream's key in the progress tables ([`progress_key`]).
    key: String,
    watermarks: HashMap<String, Vec<Option<u64>>>,
    summary: ReplaySummary,
    /// Two-phase commit for transactions touching several shards.
    atomic: Option<Atomic>,
    /// The source transactions ended but not committed yet.
    batch: Batch,
    bounds: BatchBounds,
    /// Changes applied by identity on several shards, counted across them ([`identity`]).
    counts: identity::Counts,
    /// The source's and the destination's catalogs, for schema changes ([`ddl`]).
    catalog: ddl::Catalog,
    /// Destination shards that are this stream's source server, and that are any source
    /// shard's server (a move of buckets within one set of servers): the changes for them are
    /// there already ([`Applier::keep`]). Empty: none.
    stays_own: Arc<[bool]>,
    stays_any: Arc<[bool]>,
}

/// The two-phase commit mode.
#[derive(Debug, Clone, Copy)]
struct Atomic {
    /// Test hook (see [`ABORT_IN_TWO_PHASE`]): (Nth two-phase transaction, shards committed).
    abort_in: Option<(u64, usize)>,
}

impl Applier {
    fn table(&self, oid: u32) -> Result<&Table, ReplayError> {
        self.tables.get(&oid).ok_or_else(|| {
            other(format!(
                "a change for relation {oid} came before its Relation"
            ))
        })
    }

    /// Queues a statement on a shard within the batch's transaction there (begun on first
    /// use).
    async fn send(&mut self, txn: &mut Txn, shard: usize, stmt: &Stmt) -> Result<(), ReplayError> {
        self.begin_on(txn, shard).await?;
        self.shards[shard].queue(stmt, txn.final_lsn).await
    }

    /// [`Applier::send`] of a statement whose row count adds to `change`'s, checked across
    /// the shards by the caller ([`identity`]).
    async fn send_counted(
        &mut self,
        txn: &mut Txn,
        shard: usize,
        stmt: &Stmt,
        change: u64,
    ) -> Result<(), ReplayError> {
        self.begin_on(txn, shard).await?;
        self.shards[shard]
            .queue_counted(stmt, txn.final_lsn, change)
            .await
    }

    async fn begin_on(&mut self, txn: &mut Txn, shard: usize) -> Result<(), ReplayError> {
        txn.touched.insert(shard);
        if self.batch.touched.insert(shard) {
            self.shards[shard]
                .queue(&plain("BEGIN"), txn.final_lsn)
                .await?;
        }
        Ok(())
    }

    /// Refuses a change by identity (the replica identity lacks the key) when destination
    /// shards are source servers: on them, the row's versions cannot be told apart.
    fn identity_within_servers(&self, t: &Table) -> Result<(), ReplayError> {
        if self.stays_any.is_empty() {
            return Ok(());
        }
        Err(other(format!(
            "table {}: its replica identity lacks the sharding key, which a move within the \
             same servers (destination shards that are source shards) cannot replay; set \
             REPLICA IDENTITY FULL or a key that holds the sharding column",
            t.name
        )))
    }

    /// `shards` without those that already have `t`'s changes of this stream: this source
    /// shard's own server, and for an omnisharded table any source shard's server.
    fn keep(&self, t: &Table, mut shards: Vec<usize>) -> Vec<usize> {
        let stays = match t.dest {
            Destination::Everywhere => &self.stays_any,
            _ => &self.stays_own,
        };
        if !stays.is_empty() {
            shards.retain(|&s| !stays.get(s).copied().unwrap_or(false));
        }
        shards
    }

    /// Whether destination shard `shard` still needs a change committed at `lsn` of a table
    /// with these copy watermarks: not when its copy has it, nor when it committed it already.
    fn needs(&self, watermarks: &[u64], shard: usize, lsn: u64) -> bool {
        !(watermarks.get(shard).is_some_and(|&wm| lsn < wm) || lsn < self.shards[shard].position)
    }

    /// Applies one change: `(shard, statement)` pairs, skipping shards that already have it.
    /// `watermarks`: the table's copy watermark per destination shard (empty: none).
    async fn apply(
        &mut self,
        txn: &mut Txn,
        watermarks: &[u64],
        ops: Vec<(usize, Stmt)>,
    ) -> Result<(), ReplayError> {
        let mut applied = false;
        for (shard, stmt) in ops {
            if self.needs(watermarks, shard, txn.final_lsn) {
                self.send(txn, shard, &stmt).await?;
                applied = true;
            }
        }
        self.count(txn, applied);
        Ok(())
    }

    /// Applies one change's `(shard, statement)` pairs, each already known to be needed.
    async fn apply_needed(
        &mut self,
        txn: &mut Txn,
        ops: Vec<(usize, Stmt)>,
    ) -> Result<(), ReplayError> {
        let applied = !ops.is_empty();
        for (shard, stmt) in ops {
            self.send(txn, shard, &stmt).await?;
        }
        self.count(txn, applied);
        Ok(())
    }

    /// Counts a change as applied (on some shard) or skipped (every shard has it).
    fn count(&mut self, txn: &mut Txn, applied: bool) {
        if applied {
            txn.rows += 1;
        } else {
            self.summary.skipped += 1;
        }
    }

    /// An UPDATE, on each shard holding the row before or after it: in place where the old
    /// row is and the new one goes (both needed there), else a DELETE where only the old row
    /// was and an upsert where only the new one goes. "Needed" is by the copy watermark of
    /// each row's key range (the table's when copied whole, then the same for both), so a key
    /// moving between key ranges is exact too.
    async fn update(
        &mut self,
        txn: &mut Txn,
        relation: u32,
        old: Option<OldTuple>,
        new: TupleData,
    ) -> Result<(), ReplayError> {
        let n = self.shards.len();
        let lsn = txn.final_lsn;
        let t = self.table(relation)?;
        if t.ignored {
            self.summary.skipped += 1;
            return Ok(());
        }
        if t.identity_lacks_key() {
            self.identity_within_servers(t)?;
            return self.update_by_identity(txn, relation, old, new).await;
        }
        let old_tuple = old.as_ref().map(|o| o.tuple()).unwrap_or(&new);
        let new_shards = self.keep(t, t.shards_of(&new, n)?);
        let old_shards = self.keep(t, t.shards_of(old_tuple, n)?);
        let (old_marks, new_marks) = (t.marks(old_tuple)?, t.marks(&new)?);
        let wh = t.match_values(old_tuple)?;
        let shards: BTreeSet<usize> = old_shards.iter().chain(&new_shards).copied().collect();
        let mut ops = Vec::new();
        for s in shards {
            let was = old_shards.contains(&s) && self.needs(&old_marks, s, lsn);
            let goes = new_shards.contains(&s) && self.needs(&new_marks, s, lsn);
            let stmt = match (was, goes) {
                (true, true) => t.update(&t.values(&new)?, &wh),
                (true, false) => t.delete(&wh),
                (false, true) => moved_row(t, &new, old.as_ref())?,
                (false, false) => continue,
            };
            ops.push((s, stmt));
        }
        self.apply_needed(txn, ops).await
    }

    /// A TRUNCATE: on every shard whose copy of the table is older than it (of a table copied
    /// in key ranges, a DELETE of each range older than it, when some are newer).
    async fn truncate(
        &mut self,
        txn: &mut Txn,
        options: TruncateOptions,
        relations: Vec<u32>,
    ) -> Result<(), ReplayError> {
        let n = self.shards.len();
        // Per destination shard: the tables whose copy there is older than this.
        let mut names: Vec<Vec<String>> = vec![Vec::new(); n];
        let mut deletes = Vec::new();
        let alone = relations.len() == 1 && !options.cascade() && !options.restart_identity();
        for oid in relations {
            let t = self.table(oid)?;
            if t.ignored {
                continue;
            }
            if self.sharded_source && matches!(t.dest, Destination::ByKey(..)) {
                return Err(other(format!(
                    "TRUNCATE of the sharded table {} on source shard {}: a destination \
                     shard also holds rows of the other source shards, so it cannot be \
                     replayed; copy the table again",
                    t.name, self.source_shard
                )));
            }
            let lsn = txn.final_lsn;
            let kept = self.keep(t, (0..n).collect());
            for (shard, list) in names.iter_mut().enumerate() {
                if !kept.contains(&shard) {
                    continue;
                }
                let Some(ranges) = &t.ranges else {
                    if t.watermarks.get(shard).is_none_or(|&wm| lsn >= wm) {
                        list.push(t.sql_name.clone());
                    }
                    continue;
                };
                // Copied in key ranges: only the ranges whose copy is older than this.
                let older: Vec<_> = ranges
                    .all()
                    .iter()
                    .filter(|(_, wm)| wm.get(shard).is_none_or(|&wm| lsn >= wm))
                    .collect();
                if older.len() == ranges.all().len() {
                    list.push(t.sql_name.clone());
                } else if !older.is_empty() && !alone {
                    // DELETEs by range cannot stand for CASCADE, RESTART IDENTITY or the order
                    // of a TRUNCATE of several tables (foreign keys between them).
                    return Err(other(format!(
                        "a TRUNCATE of {} with other tables, CASCADE or RESTART IDENTITY at \
                         {} falls between the copies of its key ranges: copy it again",
                        t.name,
                        format_lsn(lsn)
                    )));
                } else {
                    for (range, _) in older {
                        let sql = format!(
                            "DELETE FROM ONLY {} WHERE {}",
                            t.sql_name,
                            range.condition()
                        );
                        deletes.push((shard, plain(&sql)));
                    }
                }
            }
        }
        let mut ops = deletes;
        for (shard, list) in names.into_iter().enumerate() {
            if list.is_empty() {
                continue;
            }
            let mut sql = format!("TRUNCATE {}", list.join(", "));
            if options.restart_identity() {
                sql.push_str(" RESTART IDENTITY");
            }
            if options.cascade() {
                sql.push_str(" CASCADE");
            }
            ops.push((shard, plain(&sql)));
        }
        if ops.is_empty() {
            self.summary.skipped += 1;
            return Ok(());
        }
        self.apply(txn, &[], ops).await
    }

    /// One message of a source transaction. An UPDATE changing the row's identity (K1 → K2) is
    /// held until the next message: when that is a DELETE of K2 on the same table (pgdog's key
    /// UPDATE moving a row to another source shard writes exactly that on the old shard, and
    /// an INSERT of K2 on the new one), the pair is applied as its net effect on this source
    /// shard, a DELETE of K1. Applied one by one, the UPDATE would move K1 onto K2's
    /// destination shard (over the new source shard's copy, when its INSERT came first) and
    /// the DELETE would remove it there: the row would be lost. Anything else applies the
    /// held UPDATE first, unchanged; so does the end of the transaction ([`Applier::flush`]).
    /// The pair stays within one source transaction, so a rerun after a crash coalesces it
    /// the same way.
    async fn message(&mut self, txn: &mut Txn, msg: LogicalMessage) -> Result<(), ReplayError> {
        if let Some(held) = txn.held.take() {
            if let Some(delete) = self.coalesce(&held, &msg) {
                return self.apply_message(txn, delete).await;
            }
            self.apply_message(txn, held).await?;
        }
        if self.changes_identity(&msg) {
            txn.held = Some(msg);
            return Ok(());
        }
        self.apply_message(txn, msg).await
    }

    /// Applies the UPDATE held by [`Applier::message`], if any: at the end of the transaction.
    async fn flush(&mut self, txn: &mut Txn) -> Result<(), ReplayError> {
        match txn.held.take() {
            Some(held) => self.apply_message(txn, held).await,
            None => Ok(()),
        }
    }

    /// Whether `msg` is an UPDATE whose old identity (sent only when it changed) differs from
    /// the new one.
    fn changes_identity(&self, msg: &LogicalMessage) -> bool {
        let LogicalMessage::Update {
            relation,
            old: Some(old),
            new,
            ..
        } = msg
        else {
            return false;
        };
        let Ok(t) = self.table(*relation) else {
            return false;
        };
        match (t.match_values(old.tuple()), t.match_values(new)) {
            (Ok(o), Ok(n)) => !t.ignored && o != n,
            _ => false,
        }
    }

    /// The DELETE of the old row (K1) when `held` is an UPDATE K1 → K2 and `next` a DELETE of
    /// K2 on the same table: their net effect.
    fn coalesce(&self, held: &LogicalMessage, next: &LogicalMessage) -> Option<LogicalMessage> {
        let (
            LogicalMessage::Update {
                xid,
                relation,
                old: Some(old),
                new,
            },
            LogicalMessage::Delete {
                relation: deleted,
                old: gone,
                ..
            },
        ) = (held, next)
        else {
            return None;
        };
        if relation != deleted {
            return None;
        }
        let t = self.table(*relation).ok()?;
        let (k2, gone) = (
            t.match_values(new).ok()?,
            t.match_values(gone.tuple()).ok()?,
        );
        (k2 == gone).then(|| LogicalMessage::Delete {
            xid: *xid,
            relation: *relation,
            old: old.clone(),
        })
    }

    async fn apply_message(
        &mut self,
        txn: &mut Txn,
        msg: LogicalMessage,
    ) -> Result<(), ReplayError> {
        let n = self.shards.len();
        match msg {
            LogicalMessage::Insert { relation, new, .. } => {
                let t = self.table(relation)?;
                if t.ignored {
                    self.summary.skipped += 1;
                    return Ok(());
                }
                let values = t.values(&new)?;
                if values.len() != new.columns.len() {
                    return Err(other(format!(
                        "table {}: an INSERT without all its values",
                        t.name
                    )));
                }
                let stmt = t.upsert(&values);
                let shards = self.keep(t, t.shards_of(&new, n)?);
                t.check_owned(&shards, self.source_shard)?;
                let ops = shards.into_iter().map(|s| (s, stmt.clone())).collect();
                let wm = t.marks(&new)?;
                self.apply(txn, &wm, ops).await
            }
            LogicalMessage::Update {
                relation, old, new, ..
            } => self.update(txn, relation, old, new).await,
            LogicalMessage::Delete { relation, old, .. } => {
                let t = self.table(relation)?;
                if t.ignored {
                    self.summary.skipped += 1;
                    return Ok(());
                }
                if t.identity_lacks_key() {
                    self.identity_within_servers(t)?;
                    return self.delete_by_identity(txn, relation, old).await;
                }
                let shards = self.keep(t, t.shards_of(old.tuple(), n)?);
                let stmt = t.delete(&t.match_values(old.tuple())?);
                let ops = shards.into_iter().map(|s| (s, stmt.clone())).collect();
                let wm = t.marks(old.tuple())?;
                self.apply(txn, &wm, ops).await
            }
            LogicalMessage::Truncate {
                options, relations, ..
            } => self.truncate(txn, options, relations).await,
            LogicalMessage::Relation(rel) => self.relation(txn, rel).await,
            LogicalMessage::Type { .. }
            | LogicalMessage::Origin { .. }
            | LogicalMessage::Message { .. } => Ok(()),
            other_msg => Err(other(format!(
                "unexpected {} message inside a transaction",
                other_msg.kind_name()
            ))),
        }
    }

    /// Adds an ended source transaction to the batch.
    fn end_txn(&mut self, txn: Txn, end_lsn: u64, commit_time: i64) {
        let b = &mut self.batch;
        if b.started.is_none() {
            b.started = Some(Instant::now());
        }
        b.source += 1;
        if !txn.touched.is_empty() {
            b.transactions += 1;
            b.rows += txn.rows;
        }
        b.end_lsn = end_lsn;
        b.commit_time = commit_time;
    }

    /// Whether the batch reached a bound: commit it before reading more.
    fn batch_full(&self) -> bool {
        let b = &self.batch;
        b.source >= self.bounds.transactions
            || b.rows >= self.bounds.rows
            || b.started.is_some_and(|t| t.elapsed() >= self.bounds.time)
    }

    /// Records the position (the batch's end LSN) and commits on every touched shard; the
    /// slot may then be confirmed up to the returned batch's `end_lsn`.
    async fn commit(&mut self) -> Result<Batch, ReplayError> {
        let batch = std::mem::take(&mut self.batch);
        let end_lsn = batch.end_lsn;
        let position = Stmt {
            sql: "INSERT INTO pgdog_reshard_position (slot, lsn) VALUES ($1, $2::pg_lsn) \
                  ON CONFLICT (slot) DO UPDATE SET lsn = EXCLUDED.lsn"
                .into(),
            types: Arc::from([]),
            params: vec![
                Some(Bytes::from(self.key.clone())),
                Some(Bytes::from(format_lsn(end_lsn))),
            ],
        };
        self.check_results(&batch).await?;
        if self.atomic.is_some() && batch.touched.len() > 1 {
            self.commit_two_phase(&batch, &position).await?;
        } else {
            // Every COMMIT sent, then every result read.
            for &s in &batch.touched {
                let shard = &mut self.shards[s];
                shard.queue(&position, end_lsn).await?;
                shard.queue(&plain("COMMIT"), end_lsn).await?;
                shard.send_sync().await?;
            }
            for &s in &batch.touched {
                let shard = &mut self.shards[s];
                shard.read_pending(end_lsn, true).await?;
                shard.position = end_lsn;
            }
        }
        self.summary.transactions += batch.transactions;
        self.summary.rows += batch.rows;
        Ok(batch)
    }
}

/// Source commit time (microseconds since 2000-01-01 UTC) as a [`SystemTime`].
fn commit_time(micros: i64) -> SystemTime {
    const PG_EPOCH: Duration = Duration::from_secs(946_684_800);
    let base = SystemTime::UNIX_EPOCH + PG_EPOCH;
    if micros >= 0 {
        base + Duration::from_micros(micros as u64)
    } else {
        base - Duration::from_micros(micros.unsigned_abs())
    }
}

/// Destination commits so far in this process, for the `PGDOG_TEST_ABORT_AFTER_COMMIT` hook.
static COMMITS: AtomicU64 = AtomicU64::new(0);

/// Test hook (builds with the `failpoints` feature only): `PGDOG_TEST_ABORT_AFTER_COMMIT=N`
/// aborts the process right after the Nth destination commit, before the slot is confirmed
/// (a crash at the worst moment).
#[cfg(feature = "failpoints")]
fn abort_after_commit() -> Option<u64> {
    std::env::var(ABORT_AFTER_COMMIT).ok()?.parse().ok()
}

#[cfg(not(feature = "failpoints"))]
fn abort_after_commit() -> Option<u64> {
    None
}

/// Test hook (builds with the `failpoints` feature only): `PGDOG_TEST_ABORT_IN_2PC=N:K`.
#[cfg(feature = "failpoints")]
fn abort_in_two_phase() -> Option<(u64, usize)> {
    let v = std::env::var(ABORT_IN_TWO_PHASE).ok()?;
    let (n, k) = v.split_once(':')?;
    Some((n.parse().ok()?, k.parse().ok()?))
}

#[cfg(not(feature = "failpoints"))]
fn abort_in_two_phase() -> Option<(u64, usize)> {
    None
}

/// Runs the replay, one stream per source shard at once, until every stream reached its stop
/// target (`until_lsn`, [`ReplayOptions::stop_at`]), one fails, or `shutdown` resolves.
/// With [`ReplayOptions::atomic`], a destination transaction touching several shards commits
/// with two-phase commit, so readers never see it on one shard only.
pub async fn replay(
    settings: &Settings,
    options: &ReplayOptions,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<ReplaySummary, ReplayError> {
    check_databases(settings, &[&options.databases.from, &options.databases.to])
        .map_err(CopyDataError::from)?;
    let sources = source_primaries(settings, &options.databases.from)?;
    let dests = destination_shards(settings, &options.databases.to)?;
    let schema = schema_of(settings, &options.databases.to).map_err(CopyDataError::from)?;
    let source_schema = if sources.len() > 1 {
        Some(schema_of(settings, &options.databases.from).map_err(CopyDataError::from)?)
    } else {
        None
    };
    let ctx = StreamContext {
        options,
        schema: &schema,
        source_schema: source_schema.as_ref(),
        dests: &dests,
        sources: &sources,
        sharded_source: sources.len() > 1,
        abort_after: abort_after_commit(),
        bounds: BatchBounds::of(&settings.config.resharding),
        hold_timeout: Duration::from_millis(settings.config.resharding.hold_timeout),
        atomic: (options.atomic || settings.config.resharding.replay_atomic).then(|| Atomic {
            abort_in: abort_in_two_phase(),
        }),
    };
    let (stop_tx, stop_rx) = watch::channel(false);
    let streams = sources
        .iter()
        .cloned()
        .enumerate()
        .map(|(shard, primary)| run_stream(&ctx, shard, primary, stop_rx.clone()));
    let mut all = std::pin::pin!(try_join_all(streams));
    tokio::pin!(shutdown);
    let result = tokio::select! {
        r = &mut all => r,
        _ = &mut shutdown => {
            let _ = stop_tx.send(true);
            all.await
        }
    };
    let summaries = result?;
    let mut total = ReplaySummary::default();
    for s in &summaries {
        total.transactions += s.transactions;
        total.rows += s.rows;
        total.skipped += s.skipped;
        total.last_lsns.push(s.last_lsn);
    }
    total.last_lsn = total.last_lsns.first().copied().unwrap_or(0);
    Ok(total)
}

/// The upsert of an UPDATE's new row where the old row is not (another shard, or a key range
/// whose copy lacks it): unchanged TOAST values taken from the full old row when sent.
fn moved_row(t: &Table, new: &TupleData, old: Option<&OldTuple>) -> Result<Stmt, ReplayError> {
    let mut row = new.clone();
    if let Some(OldTuple::Full(o)) = old {
        for (i, v) in row.columns.iter_mut().enumerate() {
            if *v == ColumnValue::Unchanged {
                *v = o.columns.get(i).cloned().unwrap_or(ColumnValue::Unchanged);
            }
        }
    }
    let values = t.values(&row)?;
    if values.len() != row.columns.len() {
        return Err(other(format!(
            "table {}: a row moving to another shard or key range has unchanged TOAST \
             values the source did not send: use REPLICA IDENTITY FULL",
            t.name
        )));
    }
    Ok(t.upsert(&values))
}

#[cfg(test)]
mod tests;
