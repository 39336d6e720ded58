//! `pgdog replay`: applies the changes of the permanent slot created by `pgdog copy-data --slot`
//! to the destination's shards, routed by the router's placement of each row's sharding key.
//!
//! - Each table's changes committed before its copy watermark are skipped (the copy has them).
//! - Changes are applied as prepared statements (Parse once per statement shape and connection,
//!   then Bind/Execute with text values), pipelined, inside `BEGIN ... COMMIT` on each touched
//!   shard; the same transaction records the source LSN reached in `pgdog_reshard_position`, so a
//!   restart skips, shard by shard, what that shard already committed. The slot is confirmed
//!   only once every touched shard committed.
//! - INSERT is an upsert on the replica identity; an UPDATE moving a row to another shard is a
//!   DELETE there and an upsert on the new shard; TRUNCATE runs on every shard.
use crate::backend::server::{Server, ServerTarget};
use crate::config::Settings;
use crate::net::message::{self, put_cstr};
use crate::replication::client::{
    format_lsn, ReplicationClient, ReplicationError, ReplicationEvent, StartOptions,
};
use crate::replication::pgoutput::{
    parse_lsn, ColumnValue, DecodeError, Decoder, LogicalMessage, OldTuple, Relation, TupleData,
};
use crate::reshard::copy::{
    connect, destination, ident, literal, postgres_error, server_err, CopyDataError, Destination,
    PROGRESS_DDL,
};
use crate::reshard::schema_sync::{query_rows, target};
use crate::router::schema::Schema;
use bytes::{BufMut, Bytes, BytesMut};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Statements pipelined on one shard before an intermediate Sync (inside the open
/// transaction), so neither side's socket buffer fills up on a large source transaction.
const SYNC_EVERY: usize = 1000;
/// Buffered bytes for one shard before they are written.
const FLUSH_BYTES: usize = 64 * 1024;

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
#[derive(Debug, Clone)]
pub struct ReplayOptions {
    pub config: PathBuf,
    pub users: PathBuf,
    pub from_database: String,
    pub to_database: String,
    pub publication: String,
    pub slot: String,
    /// Stop after the transaction ending at or after this LSN.
    pub until_lsn: Option<u64>,
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
    /// The last source LSN confirmed.
    pub last_lsn: u64,
}

/// One destination shard connection.
struct Shard {
    index: usize,
    addr: String,
    server: Server,
    /// SQL text → prepared statement name.
    statements: HashMap<String, String>,
    /// The stored position: transactions committing before it are already applied here.
    position: u64,
    out: BytesMut,
    queued: usize,
}

/// One statement to run with its parameters.
struct Stmt {
    sql: String,
    types: Vec<i32>,
    params: Vec<Option<Bytes>>,
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
        let name = match self.statements.get(&stmt.sql) {
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
        self.queued += 1;
        if self.queued >= SYNC_EVERY {
            self.sync(lsn).await?;
        } else if self.out.len() >= FLUSH_BYTES {
            self.flush().await?;
        }
        Ok(())
    }

    /// An intermediate Sync inside the open transaction, then its results.
    async fn sync(&mut self, lsn: u64) -> Result<(), ReplayError> {
        self.out.extend_from_slice(message::sync().bytes());
        self.queued = 0;
        self.flush().await?;
        self.sync_read(lsn, false).await
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
    watermark: u64,
}

impl Table {
    fn new(
        rel: &Relation,
        schema: &Schema,
        database: &str,
        slot: &str,
        watermarks: &HashMap<String, u64>,
    ) -> Result<Table, ReplayError> {
        let name = rel.qualified_name();
        let columns: Vec<String> = rel.columns.iter().map(|c| c.name.clone()).collect();
        let dest = destination(schema, database, &rel.namespace, &rel.name, &columns)?;
        let watermark = *watermarks.get(&name).ok_or_else(|| {
            other(format!(
                "table {name} has no copy watermark for slot {slot} on the destination: \
                 copy it with `pgdog copy-data --slot {slot}` first"
            ))
        })?;
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
            watermark,
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

    fn where_clause(&self, wh: &[(usize, Option<Bytes>)], stmt: &mut Stmt) -> String {
        let mut conds = Vec::with_capacity(wh.len());
        for (i, v) in wh {
            stmt.params.push(v.clone());
            stmt.types.push(self.types[*i]);
            let op = if self.full {
                "IS NOT DISTINCT FROM"
            } else {
                "="
            };
            conds.push(format!(
                "{} {op} ${}",
                ident(&self.columns[*i]),
                stmt.params.len()
            ));
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
        let cols: Vec<String> = values
            .iter()
            .map(|(i, _)| ident(&self.columns[*i]))
            .collect();
        let placeholders: Vec<String> = (1..=values.len()).map(|n| format!("${n}")).collect();
        let conflict = if self.full || self.key.is_empty() {
            "ON CONFLICT DO NOTHING".to_string()
        } else {
            let keys: Vec<String> = self.key.iter().map(|i| ident(&self.columns[*i])).collect();
            let set: Vec<String> = values
                .iter()
                .filter(|(i, _)| !self.key.contains(i))
                .map(|(i, _)| {
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
        Stmt {
            sql: format!(
                "INSERT INTO {} ({}) VALUES ({}) {conflict}",
                self.sql_name,
                cols.join(", "),
                placeholders.join(", ")
            ),
            types: values.iter().map(|(i, _)| self.types[*i]).collect(),
            params: values.iter().map(|(_, v)| v.clone()).collect(),
        }
    }

    fn update(&self, set: &[(usize, Option<Bytes>)], wh: &[(usize, Option<Bytes>)]) -> Stmt {
        let mut stmt = Stmt {
            sql: String::new(),
            types: Vec::new(),
            params: Vec::new(),
        };
        let mut sets = Vec::with_capacity(set.len());
        for (i, v) in set {
            stmt.params.push(v.clone());
            stmt.types.push(self.types[*i]);
            sets.push(format!(
                "{} = ${}",
                ident(&self.columns[*i]),
                stmt.params.len()
            ));
        }
        let cond = self.where_clause(wh, &mut stmt);
        stmt.sql = format!(
            "UPDATE {} SET {} WHERE {cond}",
            self.sql_name,
            sets.join(", ")
        );
        stmt
    }

    fn delete(&self, wh: &[(usize, Option<Bytes>)]) -> Stmt {
        let mut stmt = Stmt {
            sql: String::new(),
            types: Vec::new(),
            params: Vec::new(),
        };
        let cond = self.where_clause(wh, &mut stmt);
        stmt.sql = format!("DELETE FROM {} WHERE {cond}", self.sql_name);
        stmt
    }
}

fn plain(sql: &str) -> Stmt {
    Stmt {
        sql: sql.to_string(),
        types: Vec::new(),
        params: Vec::new(),
    }
}

/// The source transaction being applied.
struct Txn {
    final_lsn: u64,
    touched: BTreeSet<usize>,
    rows: u64,
}

/// The applier: destination shards and the tables seen so far.
struct Applier {
    shards: Vec<Shard>,
    tables: HashMap<u32, Table>,
    schema: Schema,
    database: String,
    slot: String,
    watermarks: HashMap<String, u64>,
    summary: ReplaySummary,
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
        if txn.touched.insert(shard) {
            s.queue(&plain("BEGIN"), txn.final_lsn).await?;
        }
        s.queue(stmt, txn.final_lsn).await
    }

    /// Applies one change: `(shard, statement)` pairs, skipping shards that already have it.
    async fn apply(
        &mut self,
        txn: &mut Txn,
        watermark: u64,
        ops: Vec<(usize, Stmt)>,
    ) -> Result<(), ReplayError> {
        if txn.final_lsn < watermark {
            self.summary.skipped += 1;
            return Ok(());
        }
        let mut applied = false;
        for (shard, stmt) in ops {
            if txn.final_lsn < self.shards[shard].position {
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
                    .map(|s| (s, clone_stmt(&stmt)))
                    .collect();
                let wm = t.watermark;
                self.apply(txn, wm, ops).await
            }
            LogicalMessage::Update {
                relation, old, new, ..
            } => {
                let t = self.table(relation)?;
                let new_shards = t.shards_of(&new, n)?;
                let old_shards = match &old {
                    Some(o) if t.old_has_shard_key(o) => t.shards_of(o.tuple(), n)?,
                    _ => new_shards.clone(),
                };
                let wh = t.match_values(old.as_ref().map(|o| o.tuple()).unwrap_or(&new))?;
                let ops = if old_shards == new_shards {
                    let set = t.values(&new)?;
                    let stmt = t.update(&set, &wh);
                    new_shards
                        .into_iter()
                        .map(|s| (s, clone_stmt(&stmt)))
                        .collect()
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
                        .map(|s| (s, clone_stmt(&delete)))
                        .collect();
                    ops.extend(new_shards.into_iter().map(|s| (s, clone_stmt(&insert))));
                    ops
                };
                let wm = t.watermark;
                self.apply(txn, wm, ops).await
            }
            LogicalMessage::Delete { relation, old, .. } => {
                let t = self.table(relation)?;
                let shards = if t.old_has_shard_key(&old) {
                    t.shards_of(old.tuple(), n)?
                } else {
                    (0..n).collect()
                };
                let stmt = t.delete(&t.match_values(old.tuple())?);
                let ops = shards.into_iter().map(|s| (s, clone_stmt(&stmt))).collect();
                let wm = t.watermark;
                self.apply(txn, wm, ops).await
            }
            LogicalMessage::Truncate {
                options, relations, ..
            } => {
                let mut names = Vec::new();
                for oid in relations {
                    let t = self.table(oid)?;
                    if txn.final_lsn >= t.watermark {
                        names.push(t.sql_name.clone());
                    }
                }
                if names.is_empty() {
                    self.summary.skipped += 1;
                    return Ok(());
                }
                let mut sql = format!("TRUNCATE {}", names.join(", "));
                if options.restart_identity() {
                    sql.push_str(" RESTART IDENTITY");
                }
                if options.cascade() {
                    sql.push_str(" CASCADE");
                }
                let ops = (0..n).map(|s| (s, plain(&sql))).collect();
                self.apply(txn, 0, ops).await
            }
            LogicalMessage::Relation(rel) => {
                let t = Table::new(
                    &rel,
                    &self.schema,
                    &self.database,
                    &self.slot,
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

    /// Records the position and commits on every touched shard; the slot may then be
    /// confirmed up to `end_lsn`.
    async fn commit(&mut self, txn: Txn, end_lsn: u64) -> Result<(), ReplayError> {
        let position = Stmt {
            sql: "INSERT INTO pgdog_reshard_position (slot, lsn) VALUES ($1, $2::pg_lsn) \
                  ON CONFLICT (slot) DO UPDATE SET lsn = EXCLUDED.lsn"
                .into(),
            types: Vec::new(),
            params: vec![
                Some(Bytes::from(self.slot.clone())),
                Some(Bytes::from(format_lsn(end_lsn))),
            ],
        };
        for &s in &txn.touched {
            let shard = &mut self.shards[s];
            shard.queue(&position, txn.final_lsn).await?;
            shard.queue(&plain("COMMIT"), txn.final_lsn).await?;
            shard.out.extend_from_slice(message::sync().bytes());
            shard.queued = 0;
            shard.flush().await?;
        }
        for &s in &txn.touched {
            // The Sync is already sent: read its results.
            let shard = &mut self.shards[s];
            shard.sync_read(txn.final_lsn, true).await?;
            shard.position = end_lsn;
        }
        if !txn.touched.is_empty() {
            self.summary.transactions += 1;
            self.summary.rows += txn.rows;
        }
        Ok(())
    }
}

impl Shard {
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
                    error = Some(format!("{}", postgres_error(&self.addr, m)));
                }
                b'C' if error.is_none() => {
                    let tag = m.reader().cstr().unwrap_or("").to_string();
                    if tag == "UPDATE 0" || tag == "DELETE 0" {
                        error = Some(format!(
                            "{tag}: the row is missing on this shard (the destination \
                             diverged from the source)"
                        ));
                    }
                }
                b'Z' => {
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

fn clone_stmt(s: &Stmt) -> Stmt {
    Stmt {
        sql: s.sql.clone(),
        types: s.types.clone(),
        params: s.params.clone(),
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

/// Runs the replay until `until_lsn` (when given) or until `shutdown` resolves.
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
    let missing = |database: &str, shard| CopyDataError::MissingShard {
        database: database.to_string(),
        shard,
    };
    let primary = settings
        .shard_server(&options.from_database, 0)
        .ok_or_else(|| missing(&options.from_database, 0))?;
    let primary: ServerTarget = target(settings, primary);
    let schema =
        Schema::new(settings, &options.to_database).map_err(|e| CopyDataError::Sharding {
            database: options.to_database.clone(),
            reason: e.to_string(),
        })?;

    let slot_lit = literal(&options.slot);
    let mut shards = Vec::new();
    let mut watermarks = HashMap::new();
    for index in 0..settings.shards(&options.to_database).max(1) {
        let db = settings
            .shard_server(&options.to_database, index)
            .ok_or_else(|| missing(&options.to_database, index))?;
        let t = target(settings, db);
        let addr = t.addr();
        let mut server = connect(&t).await?;
        server
            .execute(PROGRESS_DDL)
            .await
            .map_err(|e| ReplayError::Copy(server_err(&addr, "creating the progress tables")(e)))?;
        if index == 0 {
            let sql = format!(
                "SELECT table_name, watermark::text FROM pgdog_reshard_progress WHERE slot = {slot_lit}"
            );
            for r in rows(&mut server, &addr, &sql).await? {
                if let [Some(table), Some(lsn)] = r.as_slice() {
                    let lsn = parse_lsn(lsn)
                        .ok_or_else(|| other(format!("bad watermark {lsn} for {table}")))?;
                    watermarks.insert(table.clone(), lsn);
                }
            }
            if watermarks.is_empty() {
                return Err(other(format!(
                    "no copy watermarks for slot {} on shard 0 ({addr}): run \
                     `pgdog copy-data --slot {}` first",
                    options.slot, options.slot
                )));
            }
        }
        let sql = format!("SELECT lsn::text FROM pgdog_reshard_position WHERE slot = {slot_lit}");
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
        });
    }
    // Every shard skips what it already committed; start where the furthest-behind shard is
    // (the server starts at the slot's confirmed point when that is later).
    let start = shards.iter().map(|s| s.position).min().unwrap_or(0);

    let mut client = ReplicationClient::connect(&primary, CONNECT_TIMEOUT).await?;
    client
        .start(
            &options.slot,
            start,
            &StartOptions::new(4, &[options.publication.as_str()]),
        )
        .await?;
    let mut decoder = Decoder::new(4);
    let mut applier = Applier {
        shards,
        tables: HashMap::new(),
        schema,
        database: options.to_database.clone(),
        slot: options.slot.clone(),
        watermarks,
        summary: ReplaySummary {
            last_lsn: start,
            ..Default::default()
        },
    };
    let until = options.until_lsn;
    let reached = |lsn: u64| until.is_some_and(|u| lsn >= u);
    let mut txn: Option<Txn> = None;
    tokio::pin!(shutdown);
    loop {
        let event = tokio::select! {
            event = client.next_event() => event?,
            _ = &mut shutdown => break,
        };
        let Some(event) = event else {
            if let Some(u) = until {
                return Err(other(format!(
                    "the server ended the stream before {}",
                    format_lsn(u)
                )));
            }
            break;
        };
        match event {
            ReplicationEvent::XLogData {
                wal_start, data, ..
            } => {
                if txn.is_none() && until.is_some_and(|u| wal_start > u) {
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
                    LogicalMessage::Commit { end_lsn, .. } => {
                        let t = txn.take().ok_or_else(|| other("Commit without Begin"))?;
                        applier.commit(t, end_lsn).await?;
                        client.confirm(end_lsn);
                        applier.summary.last_lsn = end_lsn;
                        if reached(end_lsn) {
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
                if txn.is_none() {
                    client.confirm(wal_end);
                    if reached(wal_end) {
                        break;
                    }
                }
            }
        }
    }
    // An unfinished transaction is rolled back when its connections close.
    client.stop().await?;
    client.close().await;
    for s in applier.shards.drain(..) {
        s.server.terminate().await;
    }
    Ok(applier.summary)
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
                let shutdown = async {
                    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                    {
                        Ok(mut term) => {
                            tokio::select! {
                                _ = tokio::signal::ctrl_c() => {}
                                _ = term.recv() => {}
                            }
                        }
                        Err(_) => {
                            let _ = tokio::signal::ctrl_c().await;
                        }
                    }
                };
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
        wm.insert("public.t".to_string(), 0);
        let mut schema = Schema::default();
        schema.omnisharded.insert("t".into());
        Table::new(&rel, &schema, "db", "s", &wm).unwrap()
    }

    #[test]
    fn statements() {
        let t = table(false);
        let v = |s: &str| Some(Bytes::from(s.to_string()));
        let row = vec![(0, v("1")), (1, v("x"))];
        assert_eq!(
            t.upsert(&row).sql,
            "INSERT INTO \"public\".\"t\" (\"id\", \"v\") VALUES ($1, $2) \
             ON CONFLICT (\"id\") DO UPDATE SET \"v\" = EXCLUDED.\"v\""
        );
        assert_eq!(
            t.update(&row[1..], &row[..1]).sql,
            "UPDATE \"public\".\"t\" SET \"v\" = $1 WHERE \"id\" = $2"
        );
        assert_eq!(
            t.delete(&row[..1]).sql,
            "DELETE FROM \"public\".\"t\" WHERE \"id\" = $1"
        );
        let f = table(true);
        assert_eq!(
            f.delete(&row).sql,
            "DELETE FROM \"public\".\"t\" WHERE ctid = (SELECT ctid FROM \"public\".\"t\" \
             WHERE \"id\" IS NOT DISTINCT FROM $1 AND \"v\" IS NOT DISTINCT FROM $2 LIMIT 1)"
        );
        assert!(f.upsert(&row).sql.ends_with("ON CONFLICT DO NOTHING"));
    }
}
