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
//!   per destination shard: a resumed copy may have written some shards later than others.
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
//!   DELETE there and an upsert on the new shard; TRUNCATE runs on every shard.
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
    parse_lsn, ColumnValue, DecodeError, Decoder, LogicalMessage, OldTuple, Relation, TupleData,
};
use crate::reshard::copy::{
    connect, destination, destination_shards, ident, literal, postgres_error, progress_key,
    server_err, source_primaries, CopyDataError, Destination, PROGRESS_DDL,
};
use crate::reshard::progress::{Progress, StopAt, StreamProgress};
use crate::reshard::schema_sync::query_rows;
use crate::router::schema::Schema;
use bytes::{BufMut, Bytes, BytesMut};
use futures_util::future::try_join_all;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::watch;

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
    #[error("{0}")]
    Other(String),
}

fn other(s: impl Into<String>) -> ReplayError {
    ReplayError::Other(s.into())
}

/// What `pgdog replay` was asked to do.
#[derive(Clone)]
pub struct ReplayOptions {
    pub config: PathBuf,
    pub users: PathBuf,
    pub from_database: String,
    pub to_database: String,
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

impl std::fmt::Debug for ReplayOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayOptions")
            .field("from_database", &self.from_database)
            .field("to_database", &self.to_database)
            .field("publication", &self.publication)
            .field("slot", &self.slot)
            .field("until_lsn", &self.until_lsn)
            .field("progress", &self.progress.is_some())
            .field("stop_at", &self.stop_at.is_some())
            .field("atomic", &self.atomic)
            .finish()
    }
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
}

/// One destination shard connection.
struct Shard {
    index: usize,
    addr: String,
    server: Server,
    /// SQL text → prepared statement name.
    statements: HashMap<Arc<str>, String>,
    /// The stored position: transactions committing before it are already applied here.
    position: u64,
    out: BytesMut,
    /// Statements queued since the last Sync.
    queued: usize,
    /// Syncs (and simple Queries) sent whose results are not read yet.
    pending_syncs: usize,
    /// What was sent and not answered yet, in order: each statement with its source LSN (to
    /// name the change a result belongs to), `None` where a Sync (or simple Query) ends a
    /// group of results.
    in_flight: VecDeque<Option<(Stmt, u64)>>,
}

/// One statement to run with its parameters; the SQL text and parameter types are shared by
/// every statement of the same shape ([`Table::shape`]).
#[derive(Clone)]
struct Stmt {
    sql: Arc<str>,
    types: Arc<[i32]>,
    params: Vec<Option<Bytes>>,
}

/// The SQL text and parameter types of a statement shape.
type Shape = (Arc<str>, Arc<[i32]>);

/// A statement shape of a table: its kind and the columns of its parameters, in order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum ShapeKey {
    Upsert(Vec<usize>),
    /// (SET columns, WHERE columns).
    Update(Vec<usize>, Vec<usize>),
    Delete(Vec<usize>),
}

impl Shard {
    fn context(&self, what: &str) -> String {
        format!("shard {} ({}): {what}", self.index, self.addr)
    }

    async fn flush(&mut self) -> Result<(), ReplayError> {
        if self.out.is_empty() {
            return Ok(());
        }
        let data = self.out.split();
        let ctx = self.context("sending");
        self.server
            .write_raw(&data)
            .await
            .map_err(|e| other(format!("{ctx}: {e}")))
    }

    /// Queues Parse (first use of the SQL on this connection), Bind and Execute.
    async fn queue(&mut self, stmt: &Stmt, lsn: u64) -> Result<(), ReplayError> {
        let name = match self.statements.get(&*stmt.sql) {
            Some(n) => n.clone(),
            None => {
                let name = format!("pgdog_replay_{}", self.statements.len());
                let m = message::parse(&name, &stmt.sql, &stmt.types);
                self.out.extend_from_slice(m.bytes());
                self.statements.insert(stmt.sql.clone(), name.clone());
                name
            }
        };
        let bind = message::build(b'B', |b| {
            put_cstr(b, "");
            put_cstr(b, &name);
            b.put_i16(0);
            b.put_i16(stmt.params.len() as i16);
            for p in &stmt.params {
                match p {
                    Some(v) => {
                        b.put_i32(v.len() as i32);
                        b.extend_from_slice(v);
                    }
                    None => b.put_i32(-1),
                }
            }
            b.put_i16(0);
        });
        let execute = message::build(b'E', |b| {
            put_cstr(b, "");
            b.put_i32(0);
        });
        self.out.extend_from_slice(bind.bytes());
        self.out.extend_from_slice(execute.bytes());
        self.in_flight.push_back(Some((stmt.clone(), lsn)));
        self.queued += 1;
        if self.queued >= SYNC_EVERY {
            self.sync(lsn).await?;
        } else if self.out.len() >= FLUSH_BYTES {
            self.flush().await?;
        }
        Ok(())
    }

    /// Queues a Sync and sends everything queued; its results are read later
    /// ([`Shard::read_pending`]).
    async fn send_sync(&mut self) -> Result<(), ReplayError> {
        self.out.extend_from_slice(message::sync().bytes());
        self.in_flight.push_back(None);
        self.queued = 0;
        self.pending_syncs += 1;
        self.flush().await
    }

    /// Sends a simple Query (outside the extended-protocol statements: e.g. PREPARE
    /// TRANSACTION with its unique gid); its results are read with the pending Syncs'.
    async fn send_query(&mut self, sql: &str) -> Result<(), ReplayError> {
        self.out.extend_from_slice(message::query(sql).bytes());
        self.in_flight.push_back(Some((plain(sql), 0)));
        self.in_flight.push_back(None);
        self.pending_syncs += 1;
        self.flush().await
    }

    /// An intermediate Sync inside the open transaction; then the results of the previous
    /// one are read (at most two Syncs' results are pending: the server keeps executing while
    /// this side reads, and neither side's socket buffer fills up).
    async fn sync(&mut self, lsn: u64) -> Result<(), ReplayError> {
        self.send_sync().await?;
        while self.pending_syncs > 1 {
            self.pending_syncs -= 1;
            self.sync_read(lsn, false).await?;
        }
        Ok(())
    }

    /// Reads the results of every Sync sent; with `committed`, the last one must leave the
    /// connection outside a transaction.
    async fn read_pending(&mut self, lsn: u64, committed: bool) -> Result<(), ReplayError> {
        while self.pending_syncs > 0 {
            self.pending_syncs -= 1;
            self.sync_read(lsn, committed && self.pending_syncs == 0)
                .await?;
        }
        Ok(())
    }
}

/// A published table as the replay applies it.
struct Table {
    name: String,
    sql_name: String,
    columns: Vec<String>,
    types: Vec<i32>,
    key: Vec<usize>,
    full: bool,
    dest: Destination,
    /// The copy watermark on each destination shard (they differ when a resumed copy wrote
    /// some shards later than others); empty when `ignored`.
    watermarks: Arc<[u64]>,
    /// The SQL text and parameter types of each statement shape seen so far.
    shapes: parking_lot::Mutex<HashMap<ShapeKey, Shape>>,
    /// An omnisharded table seen on a source shard other than 0: shard 0's stream applies its
    /// changes (every source shard carries the same writes).
    ignored: bool,
}

impl Table {
    /// `watermarks`: table name → its watermark on each destination shard (None: missing).
    fn new(
        rel: &Relation,
        schema: &Schema,
        database: &str,
        key: &str,
        source_shard: usize,
        watermarks: &HashMap<String, Vec<Option<u64>>>,
    ) -> Result<Table, ReplayError> {
        let name = rel.qualified_name();
        let columns: Vec<String> = rel.columns.iter().map(|c| c.name.clone()).collect();
        let dest = destination(schema, database, &rel.namespace, &rel.name, &columns)?;
        let ignored = source_shard > 0 && matches!(dest, Destination::Everywhere);
        let watermarks = if ignored {
            Vec::new()
        } else {
            let found = watermarks.get(&name).cloned().unwrap_or_default();
            let mut all = Vec::with_capacity(found.len());
            for (shard, wm) in found.iter().enumerate() {
                all.push(wm.ok_or_else(|| {
                    other(format!(
                        "table {name} has no copy watermark for {key} on destination shard \
                         {shard}: finish the copy with `pgdog copy-data --slot` first"
                    ))
                })?);
            }
            if all.is_empty() {
                return Err(other(format!(
                    "table {name} has no copy watermark for {key} on the destination: \
                     copy it with `pgdog copy-data --slot` first"
                )));
            }
            all
        };
        Ok(Table {
            sql_name: format!("{}.{}", ident(&rel.namespace), ident(&rel.name)),
            types: rel
                .columns
                .iter()
                // User-defined types have other OIDs on the destination: let it infer them.
                .map(|c| {
                    if c.type_oid < 16384 {
                        c.type_oid as i32
                    } else {
                        0
                    }
                })
                .collect(),
            key: (0..rel.columns.len())
                .filter(|&i| rel.columns[i].is_key())
                .collect(),
            full: rel.replica_identity == b'f',
            name,
            columns,
            dest,
            watermarks: watermarks.into(),
            ignored,
            shapes: parking_lot::Mutex::new(HashMap::new()),
        })
    }

    /// The sent values of a tuple: (column, value), unchanged TOAST values left out.
    fn values(&self, tuple: &TupleData) -> Result<Vec<(usize, Option<Bytes>)>, ReplayError> {
        let mut out = Vec::with_capacity(tuple.columns.len());
        for (i, v) in tuple.columns.iter().enumerate() {
            match v {
                ColumnValue::Null => out.push((i, None)),
                ColumnValue::Text(b) => out.push((i, Some(b.clone()))),
                ColumnValue::Unchanged => {}
                ColumnValue::Binary(_) => {
                    return Err(other(format!(
                        "table {}: binary column values are not supported",
                        self.name
                    )))
                }
            }
        }
        Ok(out)
    }

    /// The shards a tuple lives on (every shard for an omnisharded table).
    fn shards_of(&self, tuple: &TupleData, n: usize) -> Result<Vec<usize>, ReplayError> {
        match &self.dest {
            Destination::Everywhere => Ok((0..n).collect()),
            Destination::OneShard(s) => Ok(vec![*s]),
            Destination::ByKey(t, index) => {
                let shard = match tuple.columns.get(*index) {
                    Some(ColumnValue::Text(b)) => {
                        t.shard_of_text(Some(&String::from_utf8_lossy(b)))
                    }
                    Some(ColumnValue::Null) => t.shard_of_text(None),
                    _ => {
                        return Err(other(format!(
                            "table {}: the sharding key \"{}\" was not sent",
                            self.name,
                            t.column()
                        )))
                    }
                };
                shard
                    .map(|s| vec![s])
                    .map_err(|e| other(format!("table {}: {e}", self.name)))
            }
        }
    }

    /// Whether an old tuple says where the row was (it holds the sharding key).
    fn old_has_shard_key(&self, old: &OldTuple) -> bool {
        match (&self.dest, old) {
            (Destination::ByKey(_, index), OldTuple::Key(_)) => self.key.contains(index),
            _ => true,
        }
    }

    /// The row-matching values: the key columns (all sent columns with REPLICA IDENTITY FULL).
    fn match_values(&self, tuple: &TupleData) -> Result<Vec<(usize, Option<Bytes>)>, ReplayError> {
        let values = self.values(tuple)?;
        let values: Vec<_> = if self.full {
            values
        } else {
            values
                .into_iter()
                .filter(|(i, _)| self.key.contains(i))
                .collect()
        };
        if values.is_empty() {
            return Err(other(format!(
                "table {}: no replica identity to find the row by: add a primary key or \
                 REPLICA IDENTITY FULL",
                self.name
            )));
        }
        Ok(values)
    }

    /// The statement of a shape with these parameter values: its SQL text built once per
    /// shape, by `build`.
    fn shape(
        &self,
        key: ShapeKey,
        params: Vec<Option<Bytes>>,
        build: impl FnOnce() -> String,
    ) -> Stmt {
        let mut shapes = self.shapes.lock();
        let (sql, types) = shapes.entry(key).or_insert_with_key(|key| {
            let columns: Vec<usize> = match key {
                ShapeKey::Upsert(c) | ShapeKey::Delete(c) => c.clone(),
                ShapeKey::Update(set, wh) => set.iter().chain(wh).copied().collect(),
            };
            let types: Vec<i32> = columns.iter().map(|&i| self.types[i]).collect();
            (build().into(), types.into())
        });
        Stmt {
            sql: sql.clone(),
            types: types.clone(),
            params,
        }
    }

    /// The WHERE condition on columns `wh`, their parameters numbered from `first`.
    fn where_clause(&self, wh: &[usize], first: usize) -> String {
        let mut conds = Vec::with_capacity(wh.len());
        for (n, i) in wh.iter().enumerate() {
            let op = if self.full {
                "IS NOT DISTINCT FROM"
            } else {
                "="
            };
            conds.push(format!("{} {op} ${}", ident(&self.columns[*i]), first + n));
        }
        if self.full {
            format!(
                "ctid = (SELECT ctid FROM {} WHERE {} LIMIT 1)",
                self.sql_name,
                conds.join(" AND ")
            )
        } else {
            conds.join(" AND ")
        }
    }

    /// `INSERT ... ON CONFLICT (key) DO UPDATE`: a re-delivered row is harmless.
    fn upsert(&self, values: &[(usize, Option<Bytes>)]) -> Stmt {
        let params = values.iter().map(|(_, v)| v.clone()).collect();
        self.shape(ShapeKey::Upsert(columns(values)), params, || {
            self.upsert_sql(&columns(values))
        })
    }

    fn upsert_sql(&self, columns: &[usize]) -> String {
        let cols: Vec<String> = columns.iter().map(|i| ident(&self.columns[*i])).collect();
        let placeholders: Vec<String> = (1..=columns.len()).map(|n| format!("${n}")).collect();
        let conflict = if self.full || self.key.is_empty() {
            "ON CONFLICT DO NOTHING".to_string()
        } else {
            let keys: Vec<String> = self.key.iter().map(|i| ident(&self.columns[*i])).collect();
            let set: Vec<String> = columns
                .iter()
                .filter(|i| !self.key.contains(i))
                .map(|i| {
                    let c = ident(&self.columns[*i]);
                    format!("{c} = EXCLUDED.{c}")
                })
                .collect();
            if set.is_empty() {
                format!("ON CONFLICT ({}) DO NOTHING", keys.join(", "))
            } else {
                format!(
                    "ON CONFLICT ({}) DO UPDATE SET {}",
                    keys.join(", "),
                    set.join(", ")
                )
            }
        };
        format!(
            "INSERT INTO {} ({}) VALUES ({}) {conflict}",
            self.sql_name,
            cols.join(", "),
            placeholders.join(", ")
        )
    }

    fn update(&self, set: &[(usize, Option<Bytes>)], wh: &[(usize, Option<Bytes>)]) -> Stmt {
        let key = ShapeKey::Update(columns(set), columns(wh));
        let params = set.iter().chain(wh).map(|(_, v)| v.clone()).collect();
        self.shape(key, params, || {
            let sets: Vec<String> = set
                .iter()
                .enumerate()
                .map(|(n, (i, _))| format!("{} = ${}", ident(&self.columns[*i]), n + 1))
                .collect();
            format!(
                "UPDATE {} SET {} WHERE {}",
                self.sql_name,
                sets.join(", "),
                self.where_clause(&columns(wh), set.len() + 1)
            )
        })
    }

    fn delete(&self, wh: &[(usize, Option<Bytes>)]) -> Stmt {
        let params = wh.iter().map(|(_, v)| v.clone()).collect();
        self.shape(ShapeKey::Delete(columns(wh)), params, || {
            format!(
                "DELETE FROM {} WHERE {}",
                self.sql_name,
                self.where_clause(&columns(wh), 1)
            )
        })
    }
}

/// The columns of (column, value) pairs.
fn columns(values: &[(usize, Option<Bytes>)]) -> Vec<usize> {
    values.iter().map(|(i, _)| *i).collect()
}

fn plain(sql: &str) -> Stmt {
    Stmt {
        sql: sql.into(),
        types: Arc::from([]),
        params: Vec::new(),
    }
}

/// The source transaction being applied.
struct Txn {
    final_lsn: u64,
    /// The destination shards this transaction sent statements to.
    touched: BTreeSet<usize>,
    rows: u64,
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
    /// This stream's key in the progress tables ([`progress_key`]).
    key: String,
    watermarks: HashMap<String, Vec<Option<u64>>>,
    summary: ReplaySummary,
    /// Two-phase commit for transactions touching several shards.
    atomic: Option<Atomic>,
    /// The source transactions ended but not committed yet.
    batch: Batch,
    bounds: BatchBounds,
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

    /// Queues a statement on a shard within the transaction; false when the shard already
    /// committed this transaction before.
    async fn send(&mut self, txn: &mut Txn, shard: usize, stmt: &Stmt) -> Result<(), ReplayError> {
        let s = &mut self.shards[shard];
        if self.batch.touched.insert(shard) {
            s.queue(&plain("BEGIN"), txn.final_lsn).await?;
        }
        txn.touched.insert(shard);
        s.queue(stmt, txn.final_lsn).await
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
            // The copy of this shard has it, or this shard committed it already.
            if watermarks.get(shard).is_some_and(|&wm| txn.final_lsn < wm)
                || txn.final_lsn < self.shards[shard].position
            {
                continue;
            }
            self.send(txn, shard, &stmt).await?;
            applied = true;
        }
        if applied {
            txn.rows += 1;
        } else {
            self.summary.skipped += 1;
        }
        Ok(())
    }

    async fn message(&mut self, txn: &mut Txn, msg: LogicalMessage) -> Result<(), ReplayError> {
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
                let ops = t
                    .shards_of(&new, n)?
                    .into_iter()
                    .map(|s| (s, stmt.clone()))
                    .collect();
                let wm = t.watermarks.clone();
                self.apply(txn, &wm, ops).await
            }
            LogicalMessage::Update {
                relation, old, new, ..
            } => {
                let t = self.table(relation)?;
                if t.ignored {
                    self.summary.skipped += 1;
                    return Ok(());
                }
                let new_shards = t.shards_of(&new, n)?;
                let old_shards = match &old {
                    Some(o) if t.old_has_shard_key(o) => t.shards_of(o.tuple(), n)?,
                    _ => new_shards.clone(),
                };
                let wh = t.match_values(old.as_ref().map(|o| o.tuple()).unwrap_or(&new))?;
                let ops = if old_shards == new_shards {
                    let set = t.values(&new)?;
                    let stmt = t.update(&set, &wh);
                    new_shards.into_iter().map(|s| (s, stmt.clone())).collect()
                } else {
                    // The row moves: DELETE on the old shard, upsert on the new one, with
                    // unchanged TOAST values taken from the full old row when sent.
                    let mut row = new.clone();
                    if let Some(OldTuple::Full(o)) = &old {
                        for (i, v) in row.columns.iter_mut().enumerate() {
                            if *v == ColumnValue::Unchanged {
                                *v = o.columns.get(i).cloned().unwrap_or(ColumnValue::Unchanged);
                            }
                        }
                    }
                    let values = t.values(&row)?;
                    if values.len() != row.columns.len() {
                        return Err(other(format!(
                            "table {}: a row moving to another shard has unchanged TOAST \
                             values the source did not send: use REPLICA IDENTITY FULL",
                            t.name
                        )));
                    }
                    let delete = t.delete(&wh);
                    let insert = t.upsert(&values);
                    let mut ops: Vec<(usize, Stmt)> = old_shards
                        .into_iter()
                        .map(|s| (s, delete.clone()))
                        .collect();
                    ops.extend(new_shards.into_iter().map(|s| (s, insert.clone())));
                    ops
                };
                let wm = t.watermarks.clone();
                self.apply(txn, &wm, ops).await
            }
            LogicalMessage::Delete { relation, old, .. } => {
                let t = self.table(relation)?;
                if t.ignored {
                    self.summary.skipped += 1;
                    return Ok(());
                }
                let shards = if t.old_has_shard_key(&old) {
                    t.shards_of(old.tuple(), n)?
                } else {
                    (0..n).collect()
                };
                let stmt = t.delete(&t.match_values(old.tuple())?);
                let ops = shards.into_iter().map(|s| (s, stmt.clone())).collect();
                let wm = t.watermarks.clone();
                self.apply(txn, &wm, ops).await
            }
            LogicalMessage::Truncate {
                options, relations, ..
            } => {
                // Per destination shard: the tables whose copy there is older than this.
                let mut names: Vec<Vec<String>> = vec![Vec::new(); n];
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
                    for (shard, list) in names.iter_mut().enumerate() {
                        if t.watermarks
                            .get(shard)
                            .is_none_or(|&wm| txn.final_lsn >= wm)
                        {
                            list.push(t.sql_name.clone());
                        }
                    }
                }
                let mut ops = Vec::new();
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
            LogicalMessage::Relation(rel) => {
                let t = Table::new(
                    &rel,
                    &self.schema,
                    &self.database,
                    &self.key,
                    self.source_shard,
                    &self.watermarks,
                )?;
                self.tables.insert(rel.oid, t);
                Ok(())
            }
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

impl Applier {
    /// Reads every result of the batch's statements before anything commits: an error or a
    /// change that found no row rolls the batch back on every shard (the position is not
    /// written, so a rerun meets the same change) and stops the replay naming it.
    async fn check_results(&mut self, batch: &Batch) -> Result<(), ReplayError> {
        let end_lsn = batch.end_lsn;
        for &s in &batch.touched {
            self.shards[s].send_sync().await?;
        }
        let mut failure = None;
        for &s in &batch.touched {
            if let Err(e) = self.shards[s].read_pending(end_lsn, false).await {
                failure.get_or_insert(e);
            }
        }
        let Some(e) = failure else {
            return Ok(());
        };
        for &s in &batch.touched {
            let shard = &mut self.shards[s];
            if shard.send_query("ROLLBACK").await.is_ok() {
                let _ = shard.read_pending(end_lsn, true).await;
            }
        }
        Err(e)
    }

    /// Two-phase commit of a batch touching several shards: PREPARE TRANSACTION on each
    /// (the position row included), then COMMIT PREPARED on each. After a crash,
    /// [`resolve_prepared`] commits the leftovers of a transaction committed on some shard and
    /// rolls back those of one committed nowhere.
    async fn commit_two_phase(
        &mut self,
        batch: &Batch,
        position: &Stmt,
    ) -> Result<(), ReplayError> {
        let end_lsn = batch.end_lsn;
        // The position, then PREPARE TRANSACTION, on every shard; then every result.
        for &s in &batch.touched {
            let gid = literal(&gid(&self.key, end_lsn, s));
            let shard = &mut self.shards[s];
            shard.queue(position, end_lsn).await?;
            shard.send_sync().await?;
            shard
                .send_query(&format!("PREPARE TRANSACTION {gid}"))
                .await?;
        }
        // A PREPARE that failed on one shard: the others' prepared transactions are rolled
        // back now, not left holding locks until the next start.
        let mut failure = None;
        let mut prepared = Vec::new();
        for &s in &batch.touched {
            match self.shards[s].read_pending(end_lsn, true).await {
                Ok(()) => prepared.push(s),
                Err(e) => {
                    failure.get_or_insert(e);
                }
            }
        }
        if let Some(e) = failure {
            for s in prepared {
                let gid = literal(&gid(&self.key, end_lsn, s));
                let shard = &mut self.shards[s];
                if shard
                    .send_query(&format!("ROLLBACK PREPARED {gid}"))
                    .await
                    .is_ok()
                {
                    let _ = shard.read_pending(end_lsn, true).await;
                }
            }
            return Err(e);
        }
        let n = ATOMIC_COMMITS.fetch_add(1, Ordering::SeqCst) + 1;
        let hook = self.atomic.and_then(|a| a.abort_in);
        // COMMIT PREPARED on every shard, then every result (one at a time under the test
        // hook, so it stops after exactly K commits).
        for (committed, &s) in batch.touched.iter().enumerate() {
            if hook == Some((n, committed)) {
                eprintln!(
                    "pgdog: replay: PGDOG_TEST_ABORT_IN_2PC={n}:{committed}: aborting between \
                     PREPARE and COMMIT PREPARED at {}",
                    format_lsn(end_lsn)
                );
                std::process::abort();
            }
            let gid = literal(&gid(&self.key, end_lsn, s));
            let shard = &mut self.shards[s];
            shard.send_query(&format!("COMMIT PREPARED {gid}")).await?;
            if hook.is_some() {
                shard.read_pending(end_lsn, true).await?;
            }
        }
        for &s in &batch.touched {
            let shard = &mut self.shards[s];
            shard.read_pending(end_lsn, true).await?;
            shard.position = end_lsn;
        }
        Ok(())
    }
}

/// The prepared transaction of a stream's transaction on one destination shard:
/// `pgdog_replay_<key>_<end lsn in hex>_<shard>`.
fn gid(key: &str, end_lsn: u64, shard: usize) -> String {
    format!("{}{end_lsn:X}_{shard}", gid_prefix(key))
}

fn gid_prefix(key: &str) -> String {
    format!("pgdog_replay_{key}_")
}

/// The end LSN in a gid of this stream (`None`: not one of ours).
fn gid_lsn(key: &str, gid: &str) -> Option<u64> {
    let rest = gid.strip_prefix(&gid_prefix(key))?;
    let (lsn, shard) = rest.split_once('_')?;
    shard.parse::<usize>().ok()?;
    u64::from_str_radix(lsn, 16).ok()
}

/// Finishes the two-phase commits a crashed run left on the destination shards: a transaction
/// committed on some shard (its end LSN is at most the furthest shard's position) is committed
/// on the others; one committed nowhere is rolled back (the replay sends it again).
/// Returns (committed, rolled back).
async fn resolve_prepared(shards: &mut [Shard], key: &str) -> Result<(u64, u64), ReplayError> {
    let furthest = shards.iter().map(|s| s.position).max().unwrap_or(0);
    let prefix = gid_prefix(key);
    let sql = format!(
        "SELECT gid FROM pg_prepared_xacts WHERE database = current_database() \
           AND left(gid, {}) = {}",
        prefix.chars().count(),
        literal(&prefix)
    );
    let (mut committed, mut rolled_back) = (0, 0);
    for shard in shards.iter_mut() {
        for r in rows(&mut shard.server, &shard.addr, &sql).await? {
            let Some(Some(g)) = r.first() else { continue };
            let Some(lsn) = gid_lsn(key, g) else { continue };
            let (sql, commit) = if lsn <= furthest {
                (format!("COMMIT PREPARED {}", literal(g)), true)
            } else {
                (format!("ROLLBACK PREPARED {}", literal(g)), false)
            };
            shard
                .server
                .execute(&sql)
                .await
                .map_err(|e| ReplayError::Copy(server_err(&shard.addr, &sql)(e)))?;
            if commit {
                shard.position = shard.position.max(lsn);
                committed += 1;
            } else {
                rolled_back += 1;
            }
        }
    }
    Ok((committed, rolled_back))
}

impl Shard {
    /// The statement the next result answers, described: `: <SQL> with (<values>) from the
    /// source transaction at <LSN>`.
    fn answered(&mut self) -> String {
        let Some(Some((stmt, lsn))) = self.in_flight.pop_front() else {
            return String::new();
        };
        let values: Vec<String> = stmt
            .params
            .iter()
            .map(|p| match p {
                Some(v) => format!("'{}'", String::from_utf8_lossy(v)),
                None => "NULL".into(),
            })
            .collect();
        let at = if lsn > 0 {
            format!(" from the source transaction at {}", format_lsn(lsn))
        } else {
            String::new()
        };
        format!(": {} with ({}){at}", stmt.sql, values.join(", "))
    }

    /// Reads the results up to a Sync already sent: the first error, or an UPDATE/DELETE that
    /// matched no row (the destination diverged from the source), fails the replay.
    async fn sync_read(&mut self, lsn: u64, committed: bool) -> Result<(), ReplayError> {
        let ctx = self.context(&format!(
            "committing the transaction at {}",
            format_lsn(lsn)
        ));
        let mut error = None;
        loop {
            let m = self
                .server
                .read()
                .await
                .map_err(|e| other(format!("{ctx}: {e}")))?;
            match m.tag() {
                b'E' if error.is_none() => {
                    let what = self.answered();
                    error = Some(format!("{}{what}", postgres_error(&self.addr, m)));
                }
                b'C' if error.is_none() => {
                    let what = self.answered();
                    let tag = m.reader().cstr().unwrap_or("").to_string();
                    if tag == "UPDATE 0" || tag == "DELETE 0" {
                        error = Some(format!(
                            "{tag}: the row is missing on this shard (the destination \
                             diverged from the source){what}; nothing of this batch was \
                             committed and the position was kept"
                        ));
                    }
                }
                b'Z' => {
                    // The rest of this group was skipped after an error.
                    while let Some(Some(_)) = self.in_flight.pop_front() {}
                    if committed && m.payload().first() != Some(&b'I') && error.is_none() {
                        error = Some("the transaction did not commit".into());
                    }
                    break;
                }
                _ => {}
            }
        }
        match error {
            Some(e) => Err(other(format!("{ctx}: {e}"))),
            None => Ok(()),
        }
    }
}

async fn rows(
    server: &mut Server,
    addr: &str,
    sql: &str,
) -> Result<Vec<Vec<Option<String>>>, ReplayError> {
    query_rows(server, sql)
        .await
        .map_err(|e| ReplayError::Copy(server_err(addr, sql)(e)))
}

/// Reads the destination shards' progress for one source shard's key: per table, its watermark
/// on each destination shard, and each shard's stored position.
async fn open_destination(
    dests: &[ServerTarget],
    key: &str,
) -> Result<(Vec<Shard>, HashMap<String, Vec<Option<u64>>>), ReplayError> {
    let key_lit = literal(key);
    let mut shards = Vec::with_capacity(dests.len());
    let mut watermarks: HashMap<String, Vec<Option<u64>>> = HashMap::new();
    for (index, t) in dests.iter().enumerate() {
        let addr = t.addr();
        let mut server = connect(t).await?;
        server
            .execute(PROGRESS_DDL)
            .await
            .map_err(|e| ReplayError::Copy(server_err(&addr, "creating the progress tables")(e)))?;
        let sql = format!(
            "SELECT table_name, watermark::text FROM pgdog_reshard_progress WHERE slot = {key_lit}"
        );
        for r in rows(&mut server, &addr, &sql).await? {
            if let [Some(table), Some(lsn)] = r.as_slice() {
                let lsn = parse_lsn(lsn)
                    .ok_or_else(|| other(format!("bad watermark {lsn} for {table}")))?;
                watermarks
                    .entry(table.clone())
                    .or_insert_with(|| vec![None; dests.len()])[index] = Some(lsn);
            }
        }
        let sql = format!("SELECT lsn::text FROM pgdog_reshard_position WHERE slot = {key_lit}");
        let position = match rows(&mut server, &addr, &sql).await?.first() {
            Some(r) => match r.first() {
                Some(Some(lsn)) => {
                    parse_lsn(lsn).ok_or_else(|| other(format!("bad position {lsn}")))?
                }
                _ => 0,
            },
            None => 0,
        };
        shards.push(Shard {
            index,
            addr,
            server,
            statements: HashMap::new(),
            position,
            out: BytesMut::new(),
            queued: 0,
            pending_syncs: 0,
            in_flight: VecDeque::new(),
        });
    }
    if watermarks.is_empty() {
        return Err(other(format!(
            "no copy watermarks for {key} on the destination ({}): run `pgdog copy-data --slot` \
             first",
            dests.first().map(|d| d.addr()).unwrap_or_default()
        )));
    }
    Ok((shards, watermarks))
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

/// Two-phase transactions so far in this process, for the `PGDOG_TEST_ABORT_IN_2PC` hook.
static ATOMIC_COMMITS: AtomicU64 = AtomicU64::new(0);

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

/// What one stream needs besides its source.
struct StreamContext<'a> {
    options: &'a ReplayOptions,
    schema: &'a Schema,
    dests: &'a [ServerTarget],
    sharded_source: bool,
    abort_after: Option<u64>,
    atomic: Option<Atomic>,
    bounds: BatchBounds,
}

/// The stop condition of a stream: `--until-lsn` and the orchestrator's [`StopAt`] target.
fn stop_target(options: &ReplayOptions, source_shard: usize) -> Option<u64> {
    let at = options
        .stop_at
        .as_ref()
        .and_then(|s| s.target(source_shard));
    match (options.until_lsn, at) {
        (Some(u), Some(a)) => Some(u.min(a)),
        (u, a) => u.or(a),
    }
}

/// Connects and starts streaming the slot. A slot still active for the walsender of a killed
/// previous run (it has not noticed yet) is retried for a while.
async fn start_stream(
    primary: &ServerTarget,
    options: &ReplayOptions,
    start: u64,
) -> Result<ReplicationClient, ReplayError> {
    let deadline = std::time::Instant::now() + SLOT_BUSY_DEADLINE;
    let mut client = ReplicationClient::connect(primary, CONNECT_TIMEOUT).await?;
    loop {
        let result = client
            .start(
                &options.slot,
                start,
                &StartOptions::new(4, &[options.publication.as_str()]),
            )
            .await;
        match result {
            Ok(()) => return Ok(client),
            Err(ReplicationError::Command { source, .. })
                if matches!(&*source, ServerError::Postgres(f, _) if f.code == "55006")
                    && std::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Updates the live progress of a stream, when there is one.
fn report(options: &ReplayOptions, source_shard: usize, f: &dyn Fn(&mut StreamProgress)) {
    if let Some(p) = &options.progress {
        p.update_stream(source_shard, f);
    }
}

/// Commits the batch on its destination shards, then confirms it on the slot and reports it.
async fn finish_batch(
    ctx: &StreamContext<'_>,
    applier: &mut Applier,
    client: &mut ReplicationClient,
    source_shard: usize,
    received: u64,
) -> Result<(), ReplayError> {
    if applier.batch.is_empty() {
        return Ok(());
    }
    let b = applier.commit().await?;
    if !b.touched.is_empty() {
        let n = COMMITS.fetch_add(1, Ordering::SeqCst) + 1;
        if ctx.abort_after == Some(n) {
            eprintln!(
                "pgdog: replay: PGDOG_TEST_ABORT_AFTER_COMMIT={n}: aborting after the commit at {}",
                format_lsn(b.end_lsn)
            );
            std::process::abort();
        }
    }
    client.confirm(b.end_lsn);
    applier.summary.last_lsn = b.end_lsn;
    report(ctx.options, source_shard, &|s| {
        s.applied_lsn = b.end_lsn;
        s.received_lsn = s.received_lsn.max(received);
        s.last_commit_time = Some(commit_time(b.commit_time));
        s.transactions += b.transactions;
        s.rows += b.rows;
    });
    Ok(())
}

/// Replays one source shard's slot into the destination, until its stop target or `stop`.
async fn run_stream(
    ctx: &StreamContext<'_>,
    source_shard: usize,
    primary: ServerTarget,
    mut stop: watch::Receiver<bool>,
) -> Result<ReplaySummary, ReplayError> {
    let options = ctx.options;
    let key = progress_key(&options.slot, source_shard);
    let (mut shards, watermarks) = open_destination(ctx.dests, &key).await?;
    let (committed, rolled_back) = resolve_prepared(&mut shards, &key).await?;
    if committed + rolled_back > 0 {
        eprintln!(
            "pgdog: replay: {key}: {committed} prepared transactions of a crashed run committed, \
             {rolled_back} rolled back"
        );
    }
    // Every shard skips what it already committed; start where the furthest-behind shard is
    // (the server starts at the slot's confirmed point when that is later).
    let start = shards.iter().map(|s| s.position).min().unwrap_or(0);

    let mut client = start_stream(&primary, options, start).await?;
    let mut decoder = Decoder::new(4);
    let mut applier = Applier {
        shards,
        tables: HashMap::new(),
        schema: ctx.schema.clone(),
        database: options.to_database.clone(),
        source_shard,
        sharded_source: ctx.sharded_source,
        key,
        watermarks,
        summary: ReplaySummary {
            last_lsn: start,
            ..Default::default()
        },
        atomic: ctx.atomic,
        batch: Batch::default(),
        bounds: ctx.bounds,
    };
    let report = |f: &dyn Fn(&mut StreamProgress)| report(options, source_shard, f);
    report(&|s| s.applied_lsn = s.applied_lsn.max(start));
    // With a stop target, ask the server for a keepalive now and then, so an idle stream
    // learns quickly that it is past its target.
    let polls = options.until_lsn.is_some() || options.stop_at.is_some();
    let mut tick = tokio::time::interval(STOP_POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut received: u64 = start;
    let mut txn: Option<Txn> = None;
    let mut ended = false;
    loop {
        // Group commit: the batch stays open only while more data is already here; never
        // while waiting for the network.
        if txn.is_none()
            && !applier.batch.is_empty()
            // A read error shows again in next_event, after the batch is committed.
            && (applier.batch_full() || !client.message_ready().unwrap_or(false))
        {
            finish_batch(ctx, &mut applier, &mut client, source_shard, received).await?;
        }
        let event = tokio::select! {
            event = client.next_event() => event?,
            _ = stop.changed() => break,
            _ = tick.tick(), if polls && txn.is_none() => {
                let target = stop_target(options, source_shard);
                if target.is_some_and(|t| applier.summary.last_lsn >= t) {
                    break;
                }
                if target.is_some() {
                    client.send_status(true).await?;
                }
                continue;
            }
        };
        let Some(event) = event else {
            ended = true;
            break;
        };
        let target = stop_target(options, source_shard);
        match event {
            ReplicationEvent::XLogData {
                wal_start,
                wal_end,
                data,
                ..
            } => {
                received = received.max(wal_end).max(wal_start);
                if txn.is_none() && target.is_some_and(|t| wal_start > t) {
                    break;
                }
                match decoder.decode(wal_start, data)? {
                    LogicalMessage::Begin { final_lsn, .. } => {
                        if txn.is_some() {
                            return Err(other("Begin inside a transaction"));
                        }
                        txn = Some(Txn {
                            final_lsn,
                            touched: BTreeSet::new(),
                            rows: 0,
                        });
                    }
                    LogicalMessage::Commit {
                        end_lsn,
                        commit_time: at,
                        ..
                    } => {
                        let t = txn.take().ok_or_else(|| other("Commit without Begin"))?;
                        applier.end_txn(t, end_lsn, at);
                        if target.is_some_and(|t| end_lsn >= t) {
                            finish_batch(ctx, &mut applier, &mut client, source_shard, received)
                                .await?;
                            break;
                        }
                    }
                    LogicalMessage::Relation(rel) => {
                        let mut dummy = Txn {
                            final_lsn: 0,
                            touched: BTreeSet::new(),
                            rows: 0,
                        };
                        applier
                            .message(
                                txn.as_mut().unwrap_or(&mut dummy),
                                LogicalMessage::Relation(rel),
                            )
                            .await?;
                    }
                    msg => {
                        let t = txn.as_mut().ok_or_else(|| {
                            other(format!("{} outside a transaction", msg.kind_name()))
                        })?;
                        applier.message(t, msg).await?;
                    }
                }
            }
            ReplicationEvent::Keepalive { wal_end, .. } => {
                received = received.max(wal_end);
                if txn.is_none() {
                    finish_batch(ctx, &mut applier, &mut client, source_shard, received).await?;
                    // Everything before wal_end was sent and applied: nothing of ours is left.
                    client.confirm(wal_end);
                    applier.summary.last_lsn = applier.summary.last_lsn.max(wal_end);
                    report(&|s| {
                        s.received_lsn = s.received_lsn.max(received);
                        s.applied_lsn = s.applied_lsn.max(wal_end);
                    });
                    if target.is_some_and(|t| wal_end >= t) {
                        break;
                    }
                }
            }
        }
    }
    // A batch of ended source transactions is committed; an unfinished source transaction
    // (and the batch it shares its destination transactions with) is rolled back when its
    // connections close (and replayed by the next run).
    if txn.is_none() {
        finish_batch(ctx, &mut applier, &mut client, source_shard, received).await?;
    }
    if ended {
        if let Some(t) = stop_target(options, source_shard) {
            return Err(other(format!(
                "source shard {source_shard}: the server ended the stream before {}",
                format_lsn(t)
            )));
        }
    }
    if !ended {
        client.stop().await?;
    }
    client.close().await;
    for s in applier.shards.drain(..) {
        s.server.terminate().await;
    }
    applier.summary.last_lsns = vec![applier.summary.last_lsn];
    Ok(applier.summary)
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
    for db in [&options.from_database, &options.to_database] {
        if !settings.has_database(db) {
            return Err(CopyDataError::UnknownDatabase(db.clone()).into());
        }
    }
    let sources = source_primaries(settings, &options.from_database)?;
    let dests = destination_shards(settings, &options.to_database)?;
    let schema =
        Schema::new(settings, &options.to_database).map_err(|e| CopyDataError::Sharding {
            database: options.to_database.clone(),
            reason: e.to_string(),
        })?;
    let ctx = StreamContext {
        options,
        schema: &schema,
        dests: &dests,
        sharded_source: sources.len() > 1,
        abort_after: abort_after_commit(),
        bounds: BatchBounds::of(&settings.config.resharding),
        atomic: (options.atomic || settings.config.resharding.replay_atomic).then(|| Atomic {
            abort_in: abort_in_two_phase(),
        }),
    };
    let (stop_tx, stop_rx) = watch::channel(false);
    let streams = sources
        .into_iter()
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

/// Entry point of `pgdog replay`.
pub fn main(options: ReplayOptions) -> ExitCode {
    let result = Settings::load(&options.config, &options.users)
        .map_err(|e| ReplayError::Copy(CopyDataError::Config(e.to_string())))
        .and_then(|settings| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| ReplayError::Copy(CopyDataError::Runtime(e)))?;
            runtime.block_on(async {
                let shutdown = crate::signals::interrupted();
                replay(&settings, &options, shutdown).await
            })
        });
    match result {
        Ok(s) => {
            println!(
                "replayed {} transactions, {} rows applied, {} changes skipped, last LSN {}",
                s.transactions,
                s.rows,
                s.skipped,
                format_lsn(s.last_lsn)
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pgdog: replay: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replication::pgoutput::RelationColumn;

    fn table(full: bool) -> Table {
        let rel = Relation {
            xid: None,
            oid: 1,
            namespace: "public".into(),
            name: "t".into(),
            replica_identity: if full { b'f' } else { b'd' },
            columns: vec![
                RelationColumn {
                    flags: 1,
                    name: "id".into(),
                    type_oid: 20,
                    type_modifier: -1,
                },
                RelationColumn {
                    flags: u8::from(full),
                    name: "v".into(),
                    type_oid: 25,
                    type_modifier: -1,
                },
            ],
        };
        let mut wm = HashMap::new();
        wm.insert("public.t".to_string(), vec![Some(0)]);
        let mut schema = Schema::default();
        schema.omnisharded.insert("t".into());
        Table::new(&rel, &schema, "db", "s", 0, &wm).unwrap()
    }

    #[test]
    fn statements() {
        let t = table(false);
        let v = |s: &str| Some(Bytes::from(s.to_string()));
        let row = vec![(0, v("1")), (1, v("x"))];
        assert_eq!(
            &*t.upsert(&row).sql,
            "INSERT INTO \"public\".\"t\" (\"id\", \"v\") VALUES ($1, $2) \
             ON CONFLICT (\"id\") DO UPDATE SET \"v\" = EXCLUDED.\"v\""
        );
        assert_eq!(
            &*t.update(&row[1..], &row[..1]).sql,
            "UPDATE \"public\".\"t\" SET \"v\" = $1 WHERE \"id\" = $2"
        );
        assert_eq!(
            &*t.delete(&row[..1]).sql,
            "DELETE FROM \"public\".\"t\" WHERE \"id\" = $1"
        );
        let f = table(true);
        assert_eq!(
            &*f.delete(&row).sql,
            "DELETE FROM \"public\".\"t\" WHERE ctid = (SELECT ctid FROM \"public\".\"t\" \
             WHERE \"id\" IS NOT DISTINCT FROM $1 AND \"v\" IS NOT DISTINCT FROM $2 LIMIT 1)"
        );
        assert!(f.upsert(&row).sql.ends_with("ON CONFLICT DO NOTHING"));
    }

    #[test]
    fn statement_shapes_are_built_once() {
        let t = table(false);
        let v = |s: &str| Some(Bytes::from(s.to_string()));
        let a = t.upsert(&[(0, v("1")), (1, v("x"))]);
        let b = t.upsert(&[(0, v("2")), (1, None)]);
        assert!(Arc::ptr_eq(&a.sql, &b.sql));
        assert!(Arc::ptr_eq(&a.types, &b.types));
        assert_eq!(&*a.types, &[20, 25]);
        assert_eq!(b.params, vec![v("2"), None]);
        // Another column set is another shape.
        let c = t.upsert(&[(0, v("3"))]);
        assert!(!Arc::ptr_eq(&a.sql, &c.sql));
        assert_eq!(
            &*c.sql,
            "INSERT INTO \"public\".\"t\" (\"id\") VALUES ($1) ON CONFLICT (\"id\") DO NOTHING"
        );
        let u = t.update(&[(1, v("y"))], &[(0, v("4"))]);
        let w = t.update(&[(1, v("z"))], &[(0, v("5"))]);
        assert!(Arc::ptr_eq(&u.sql, &w.sql));
        assert_eq!(&*u.types, &[25, 20]);
        assert_eq!(w.params, vec![v("z"), v("5")]);
        let d = t.delete(&[(0, v("6"))]);
        assert!(!Arc::ptr_eq(&d.sql, &u.sql));
        assert_eq!(t.shapes.lock().len(), 4);
    }

    #[test]
    fn gids() {
        let g = gid("s1/2", 0x1_0000_00AB, 3);
        assert_eq!(g, "pgdog_replay_s1/2_1000000AB_3");
        assert_eq!(gid_lsn("s1/2", &g), Some(0x1_0000_00AB));
        assert_eq!(gid_lsn("s1", &g), None);
        assert_eq!(gid_lsn("s1", "pgdog_replay_s1_x_1"), None);
    }
}
