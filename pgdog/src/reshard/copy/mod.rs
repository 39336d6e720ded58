//! `pgdog copy-data`: copies every table of a publication from the source database (all its
//! shards) into the shards of the destination database, each table under its own consistent
//! snapshot per source shard.
//!
//! - With `--slot S`, the permanent logical slot S (pgoutput) is created first on EVERY source
//!   shard's primary (reused when it already exists: a previous run was killed); replay starts
//!   at its consistent point. Progress rows are keyed per source shard by [`progress_key`]
//!   (`S` for shard 0, `S/i` for shard i), so single-shard sources keep the plain slot name.
//! - Each sharded table is copied from every source shard, an omnisharded one (destination
//!   [`Destination::Everywhere`]) from source shard 0 only (the others hold the same rows). Each
//!   (table, source shard): a replication connection to one of that shard's replicas
//!   ([`plan`]: largest first, to the replica with the fewest bytes assigned; its primary when
//!   it has none) creates a TEMPORARY slot exporting its
//!   snapshot; a second connection to the same server reads the table with
//!   `COPY ... TO STDOUT` under that snapshot. The slot's consistent point is the watermark:
//!   the copy holds exactly the changes committed on that shard before it.
//! - COPY data format, per (table, source shard) ([`choose_format`]): binary when the server it
//!   is read from and every destination shard it is written to run the same PostgreSQL major
//!   version (`server_version_num / 10000`; read once per destination shard and with each
//!   table's size on the source), text (`FORMAT text`, default delimiter and NULL) otherwise:
//!   binary COPY is not guaranteed to be compatible across major versions. `[resharding]
//!   copy_format = "text"` forces text for every table; `"auto"` (the default) means this
//!   automatic choice. Text
//!   sessions fix the settings that shape values' text form on both ends (see
//!   [`copy_stream`](super::copy_stream)).
//! - A table larger than [`CopyTuning::split_bytes`] (64 MiB; `[resharding] copy_split_bytes`)
//!   is split. With a slot and an integer primary key, in key ranges ([`ranges`]): each range a
//!   job of its own (snapshot, replica, watermark row), resumed range by range. Otherwise it is
//!   read by several connections at once, each a CTID range (`ctid >= '(a,0)' AND ctid <
//!   '(b,0)'`, ranges from `pg_relation_size`), all under the same exported snapshot (the
//!   replication connection stays open until the copy ends). Each reader splits its own rows and
//!   sends them to ONE writer per destination shard ([`copy_stream`](super::copy_stream)), so
//!   each shard still gets a single `COPY ... FROM STDIN` in one transaction.
//! - Rows are split in flight by the router's COPY splitter and placement (the code that routes
//!   a client's `COPY ... FROM STDIN` through the proxy) into one `COPY ... FROM STDIN` per
//!   destination shard, each in a transaction that also writes the watermark row and commits
//!   once the whole table is copied.
//! - Resume after a crash (kill -9): the destination transactions of a killed run roll back
//!   when their connections die, and its temporary slots vanish. Each destination shard's copy
//!   of a (table, source shard) commits atomically with its own watermark row, so that row is the
//!   proof the shard has it. A rerun with the same slot reuses the slot and copies a
//!   (table, source shard) only into the destination shards lacking its watermark row (a kill
//!   between the shards' commits leaves some shards done): those shards get a fresh snapshot and
//!   a later watermark of their own, which is why replay reads each destination shard's own
//!   watermarks. TRUNCATE-and-recopy is not an option: with a sharded source a destination
//!   table holds rows of several source shards, some of them already final.
//! - `--parallel N` bounds the reader connections open at once on each source server: up to N
//!   copies at once per server, each with one reader; a large table takes its server's free
//!   ones for its ranges (so it may delay that server's next tables). When one fails, the command stops and drops the permanent
//!   slots it created in this run (reused ones stay, so the copy can be resumed). Dropping the
//!   [`copy_data`] future aborts the copies under way: their connections close, so their
//!   destination transactions roll back and their temporary slots go away.
//! - [`CopyDataOptions::progress`] receives per (table, source shard) rows and bytes as they go.
use crate::backend::server::{Server, ServerError, ServerTarget};
use crate::config::{Role, Settings};
use crate::net::message::{read_error, Message};
use crate::replication::client::{
    format_lsn, ReplicationClient, ReplicationError, SlotOptions, SnapshotAction,
};
use crate::reshard::copy_stream::{
    block_ranges, copy_out_sql, format_option, prepare_reader, snapshot_reader, Counters,
    ReadCount, Reader, Sink, Tracker, CHANNEL_DEPTH,
};
use crate::reshard::progress::Progress;
use crate::reshard::schema_sync::target;
use crate::reshard::Databases;
use crate::router::copy::CopyFormat;
use crate::router::schema::{Schema, TableSharding};
use bytes::Bytes;
use futures_util::stream::{self, StreamExt};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Semaphore};
use tokio::task::JoinSet;

mod format;
mod plan;
mod ranges;
mod shards;
mod table;
pub use format::*;
pub(crate) use ranges::KeyRange;
pub(crate) use shards::*;
use table::copy_table;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long creating a temporary slot on a standby may wait for the primary's snapshot record.
const STANDBY_SLOT_DEADLINE: Duration = Duration::from_secs(120);

/// Replay progress on every destination shard: each copied table's watermark (written in the
/// table's copy transaction) and the source LSN applied so far (written by `pgdog replay` in
/// the transaction of the changes it covers), and `pgdog verify`'s requests to hold the replay
/// at an LSN (`reshard/replay/hold.rs`).
pub const PROGRESS_DDL: &str = "CREATE TABLE IF NOT EXISTS pgdog_reshard_progress \
    (slot text, table_name text, watermark pg_lsn, PRIMARY KEY (slot, table_name)); \
    CREATE TABLE IF NOT EXISTS pgdog_reshard_position (slot text PRIMARY KEY, lsn pg_lsn); \
    CREATE TABLE IF NOT EXISTS pgdog_reshard_hold \
    (slot text PRIMARY KEY, state text NOT NULL, lsn pg_lsn, reached pg_lsn)";

#[derive(Debug, thiserror::Error)]
pub enum CopyDataError {
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error("{0}")]
    Unsupported(String),
    #[error("publication `{publication}`: {reason}")]
    Publication { publication: String, reason: String },
    #[error("table {table} is neither sharded nor omnisharded in database `{database}`: add it to [[sharded_tables]] or [[omnisharded_tables]]")]
    NotSharded { table: String, database: String },
    #[error("table {table}: {reason}")]
    Table { table: String, reason: String },
    #[error(transparent)]
    Server(#[from] ServerFailure),
    #[error(transparent)]
    Replication(#[from] ReplicationError),
}

/// What `pgdog copy-data` was asked to do.
#[derive(Clone)]
pub struct CopyDataOptions {
    /// The source and destination databases.
    pub databases: Databases,
    pub publication: String,
    /// The permanent slot to create first (on every source shard); reused when it exists.
    pub slot: Option<String>,
    /// Reader connections open at once over all tables (at least 1): up to this many
    /// (table, source shard) copies at once, and a table larger than
    /// [`CopyTuning::split_bytes`] reads as many CTID ranges at once as there are free ones.
    pub parallel: usize,
    /// Live progress, updated as the copy goes (None from the CLI).
    pub progress: Option<Arc<Progress>>,
    /// Keep the permanent slots this run created when it fails (a reshard that retries reuses
    /// them); else they are dropped.
    pub keep_slots: bool,
}

/// The key of a source shard's rows in `pgdog_reshard_progress` and `pgdog_reshard_position`:
/// the slot name for shard 0 (single-shard sources keep their keys), `slot/i` for shard i.
pub(crate) fn progress_key(slot: &str, source_shard: usize) -> String {
    if source_shard == 0 {
        slot.to_string()
    } else {
        format!("{slot}/{source_shard}")
    }
}

/// The permanent slot on one source shard's primary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotReport {
    pub name: String,
    pub source_shard: usize,
    /// Where replay starts (for a reused slot: its confirmed flush LSN).
    pub consistent_point: u64,
    /// False when the slot already existed (a previous run) and was reused.
    pub created: bool,
}

/// One copied (table, source shard).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableCopy {
    /// `schema.table`.
    pub table: String,
    pub source_shard: usize,
    pub rows: u64,
    /// The temporary slot's consistent point: the copy holds every change committed before it.
    /// 0 when skipped.
    pub watermark: u64,
    /// The source server it was read from.
    pub source: String,
    /// Already copied into every destination shard by an earlier run.
    pub skipped: bool,
    /// Destination shards written by this run.
    pub shards: Vec<usize>,
    /// Reader connections (CTID ranges read at once under the same snapshot); 0 when skipped.
    pub readers: usize,
    /// The COPY data format used ([`choose_format`]); binary when skipped.
    pub format: CopyFormat,
}

impl TableCopy {
    /// A table an earlier run copied into every destination shard already.
    pub fn skipped(table: String, source_shard: usize) -> TableCopy {
        TableCopy {
            table,
            source_shard,
            rows: 0,
            watermark: 0,
            source: String::new(),
            skipped: true,
            shards: Vec::new(),
            readers: 0,
            format: CopyFormat::Binary,
        }
    }
}

impl std::fmt::Display for TableCopy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "table {}", self.table)?;
        if self.source_shard > 0 {
            write!(f, " (source shard {})", self.source_shard)?;
        }
        if self.skipped {
            return write!(f, ": already copied");
        }
        write!(
            f,
            ": {} rows, watermark {}",
            self.rows,
            format_lsn(self.watermark)
        )?;
        if !self.source.is_empty() {
            write!(f, " (read from {})", self.source)?;
        }
        if self.readers > 1 {
            write!(f, " in {} ranges", self.readers)?;
        }
        if self.format != CopyFormat::Binary {
            write!(f, ", {} format", format_option(self.format))?;
        }
        Ok(())
    }
}

/// Where the rows of a table go.
#[derive(Debug, Clone)]
pub(crate) enum Destination {
    /// Every row to every shard.
    Everywhere,
    /// Each row to the shard of its key (field index in the column list).
    ByKey(Box<TableSharding>, usize),
    /// Every row to this shard: the table's schema is there (`[[sharded_schemas]]`).
    OneShard(usize),
}

/// One table to copy from one source shard.
#[derive(Debug, Clone)]
struct Job {
    schema: String,
    name: String,
    columns: Vec<String>,
    dest: Destination,
    source_shard: usize,
    /// The server to read from (a replica, or the primary).
    source: ServerTarget,
    /// The source shard's primary.
    primary: ServerTarget,
    from_replica: bool,
    /// Destination shards to write (those without this copy's watermark yet).
    targets: Vec<usize>,
    /// The table's heap size on its source shard (`pg_relation_size`); a key range's share.
    size: u64,
    /// The key range copied ([`ranges`]); None: the whole table.
    range: Option<KeyRange>,
    /// Destination shards that are this source shard's server ([`staying`]): its rows for
    /// them stay where they are (empty: none).
    stays: Arc<[bool]>,
}

impl Job {
    fn display(&self) -> String {
        format!("{}.{}", self.schema, self.name)
    }

    /// The name of its progress row and display line: the table's, or its key range's.
    fn progress_name(&self) -> String {
        match &self.range {
            Some(r) => r.progress_name(&self.display()),
            None => self.display(),
        }
    }

    fn sql_name(&self) -> String {
        format!("{}.{}", ident(&self.schema), ident(&self.name))
    }

    fn column_list(&self) -> String {
        self.columns
            .iter()
            .map(|c| ident(c))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn copy_in(&self, format: CopyFormat) -> String {
        format!(
            "COPY {} ({}) FROM STDIN (FORMAT {})",
            self.sql_name(),
            self.column_list(),
            format_option(format)
        )
    }
}

/// The destination's handling of a table: omnisharded, else its own `[[sharded_tables]]` entry
/// (by `schema.name` or `name`), else a name-less entry for one of its columns — the proxy's
/// order for a client COPY.
pub(crate) fn destination(
    schema: &Schema,
    database: &str,
    table_schema: &str,
    table: &str,
    columns: &[String],
) -> Result<Destination, CopyDataError> {
    let qualified = format!("{table_schema}.{table}");
    if schema.is_omnisharded(table) || schema.is_omnisharded(&qualified) {
        return Ok(Destination::Everywhere);
    }
    let entry = schema.table(&qualified).or_else(|| schema.table(table));
    if entry.is_none() {
        if let Some(shard) = schema.schemas.shard_of_listed(table_schema) {
            return Ok(Destination::OneShard(shard));
        }
    }
    let sharding = entry.or_else(|| columns.iter().find_map(|c| schema.by_column(c)));
    let Some(sharding) = sharding else {
        return Err(CopyDataError::NotSharded {
            table: qualified,
            database: database.to_string(),
        });
    };
    let Some(index) = columns.iter().position(|c| c == sharding.column()) else {
        return Err(CopyDataError::Table {
            table: qualified,
            reason: format!(
                "the sharding key column \"{}\" is not one of its columns",
                sharding.column()
            ),
        });
    };
    Ok(Destination::ByKey(Box::new(sharding.clone()), index))
}

/// The publication's tables with their copyable columns (no generated ones), in order.
/// A published table on one source shard: schema, name, column list, heap size in bytes.
type PubTable = (String, String, Vec<String>, u64);

async fn publication_tables(
    primary: &ServerTarget,
    publication: &str,
) -> Result<Vec<PubTable>, CopyDataError> {
    let mut server = connect(primary).await?;
    let err = |reason: String| CopyDataError::Publication {
        publication: publication.to_string(),
        reason,
    };
    let exists = crate::reshard::schema_sync::publication_exists(&mut server, publication)
        .await
        .map_err(|e| err(e.to_string()))?;
    if !exists {
        return Err(err(format!("does not exist on {}", primary.addr())));
    }
    let rows = server
        .query_rows(&format!(
            "SELECT t.schemaname::text, t.tablename::text, \
               (SELECT string_agg(quote_ident(a.attname), ',' ORDER BY a.attnum) \
                  FROM pg_attribute a \
                 WHERE a.attrelid = format('%I.%I', t.schemaname, t.tablename)::regclass \
                   AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''), \
               pg_relation_size(format('%I.%I', t.schemaname, t.tablename)::regclass) \
             FROM pg_publication_tables t WHERE t.pubname = {} ORDER BY 1, 2",
            literal(publication)
        ))
        .await
        .map_err(|e| err(e.to_string()))?;
    server.terminate().await;
    let mut tables = Vec::new();
    for r in rows {
        if let [Some(schema), Some(table), columns, size] = r.as_slice() {
            let columns = columns.as_deref().map(split_idents).unwrap_or_default();
            let size = size.as_deref().and_then(|v| v.parse().ok()).unwrap_or(0);
            tables.push((schema.clone(), table.clone(), columns, size));
        }
    }
    if tables.is_empty() {
        return Err(err("has no tables".into()));
    }
    Ok(tables)
}

/// Splits a comma-separated list of `quote_ident` names into the names.
fn split_idents(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// Creates the permanent slot on a source shard's primary, or reuses it when it exists (a
/// previous run was killed).
async fn ensure_permanent_slot(
    primary: &ServerTarget,
    name: &str,
    source_shard: usize,
) -> Result<SlotReport, CopyDataError> {
    let addr = primary.addr();
    let mut server = connect(primary).await?;
    let sql = format!(
        "SELECT slot_type::text, coalesce(plugin::text, ''), \
                coalesce(confirmed_flush_lsn, restart_lsn, '0/0')::text \
           FROM pg_replication_slots WHERE slot_name = {}",
        literal(name)
    );
    let existing = server
        .query_rows(&sql)
        .await
        .map_err(server_err(&addr, "looking up the slot"))?;
    server.terminate().await;
    if let Some(row) = existing.first() {
        return match row.as_slice() {
            [Some(kind), Some(plugin), Some(lsn)] if kind == "logical" && plugin == "pgoutput" => {
                Ok(SlotReport {
                    name: name.to_string(),
                    source_shard,
                    consistent_point: crate::replication::pgoutput::parse_lsn(lsn).unwrap_or(0),
                    created: false,
                })
            }
            _ => Err(CopyDataError::Unsupported(format!(
                "slot {name} exists on {addr} but is not a logical pgoutput slot ({row:?})"
            ))),
        };
    }
    let mut repl = ReplicationClient::connect(primary, CONNECT_TIMEOUT).await?;
    let created = repl.create_slot(&SlotOptions::new(name)).await?;
    repl.close().await;
    Ok(SlotReport {
        name: created.name,
        source_shard,
        consistent_point: created.consistent_point,
        created: true,
    })
}

/// The reader connections the copies from one source server share.
#[derive(Clone)]
struct ReaderBudget {
    permits: Arc<Semaphore>,
    /// The permits in all (`--parallel`).
    total: usize,
    tuning: CopyTuning,
}

/// Aborts a spawned task when dropped: dropping [`copy_data`]'s future stops its copies.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Every (table, source shard) copy of the publication, each table's destination checked
/// before anything is created or copied; every source shard must publish the same tables.
async fn jobs(
    sources: &[SourceShard],
    dest_schema: &Schema,
    dests: &[ServerTarget],
    options: &CopyDataOptions,
) -> Result<Vec<Job>, CopyDataError> {
    let primaries: Vec<ServerTarget> = sources.iter().map(|s| s.primary.clone()).collect();
    let tables = publication_tables(&sources[0].primary, &options.publication).await?;
    let mut sizes = vec![tables.iter().map(|t| t.3).collect::<Vec<u64>>()];
    for (shard, source) in sources.iter().enumerate().skip(1) {
        let other = publication_tables(&source.primary, &options.publication).await?;
        let names = |t: &[PubTable]| {
            t.iter()
                .map(|(s, n, _, _)| format!("{s}.{n}"))
                .collect::<Vec<_>>()
        };
        if names(&other) != names(&tables) {
            return Err(CopyDataError::Publication {
                publication: options.publication.clone(),
                reason: format!(
                    "source shard {shard} publishes {:?}, shard 0 publishes {:?}",
                    names(&other),
                    names(&tables)
                ),
            });
        }
        sizes.push(other.iter().map(|t| t.3).collect());
    }
    let mut jobs = Vec::new();
    for (i, (schema, name, columns, _)) in tables.into_iter().enumerate() {
        let dest = destination(dest_schema, &options.databases.to, &schema, &name, &columns)?;
        for (shard, source) in sources.iter().enumerate() {
            // Omnisharded: every source shard holds the same rows; shard 0's are enough.
            if shard > 0 && matches!(dest, Destination::Everywhere) {
                continue;
            }
            jobs.push(Job {
                schema: schema.clone(),
                name: name.clone(),
                columns: columns.clone(),
                dest: dest.clone(),
                source_shard: shard,
                source: source.primary.clone(),
                primary: source.primary.clone(),
                from_replica: false,
                targets: (0..dests.len()).collect(),
                size: sizes[shard][i],
                range: None,
                stays: staying(&dest, &primaries, dests, shard),
            });
        }
    }
    Ok(jobs)
}

/// Runs the copy: the permanent slots (if asked), then every (table, source shard), `parallel`
/// at once. Each finished or skipped copy is passed to `report` as it completes. Dropping the
/// returned future aborts the copies under way (their destination transactions roll back,
/// their temporary slots go away). Tables larger than 64 MiB are copied in key ranges (with a
/// slot and an integer primary key) or read in CTID ranges
/// (`[resharding] copy_split_bytes`).
pub async fn copy_data(
    settings: &Settings,
    options: &CopyDataOptions,
    report: impl FnMut(&TableCopy),
) -> Result<(Vec<SlotReport>, Vec<TableCopy>), CopyDataError> {
    let tuning = CopyTuning::from_settings(&settings.config.resharding);
    copy_data_tuned(settings, options, tuning, report).await
}

/// [`copy_data`] with the large-table split tuned. `options.parallel` bounds the reader
/// connections open at a time over all tables: a table larger than `tuning.split_bytes` takes
/// the free ones (up to `parallel`) and reads that many CTID ranges at once, unless it is copied
/// in key ranges, each a copy of its own.
pub async fn copy_data_tuned(
    settings: &Settings,
    options: &CopyDataOptions,
    tuning: CopyTuning,
    mut report: impl FnMut(&TableCopy),
) -> Result<(Vec<SlotReport>, Vec<TableCopy>), CopyDataError> {
    check_databases(settings, &[&options.databases.from, &options.databases.to])?;
    let sources = source_shards(settings, &options.databases.from)?;
    let dest_schema = schema_of(settings, &options.databases.to)?;
    let dests = destination_shards(settings, &options.databases.to)?;
    let format_mode = FormatMode::from_settings(&settings.config.resharding);

    let mut jobs = jobs(&sources, &dest_schema, &dests, options).await?;

    let formats = Arc::new(FormatPlan::load(format_mode, &dests).await?);

    let mut slots = Vec::new();
    let mut skipped = Vec::new();
    if let Some(slot) = &options.slot {
        for t in &dests {
            let mut server = connect(t).await?;
            server
                .execute(PROGRESS_DDL)
                .await
                .map_err(server_err(&t.addr(), "creating the progress tables"))?;
            server.terminate().await;
        }
        // Large tables with an integer key: one job per key range (planned once, resumed).
        jobs = ranges::split_by_key(jobs, &sources, &dests, slot, tuning.split_bytes).await?;
        // Resume: each destination shard that has a copy's watermark row has all of it.
        let keys: Vec<String> = (0..sources.len()).map(|s| progress_key(slot, s)).collect();
        let done = copied_tables(&dests, &keys).await?;
        jobs.retain_mut(|job| {
            let key = (progress_key(slot, job.source_shard), job.progress_name());
            job.targets = (0..dests.len())
                .filter(|&d| !done[d].contains(&key))
                .collect();
            if job.targets.is_empty() {
                skipped.push(TableCopy::skipped(job.progress_name(), job.source_shard));
            }
            !job.targets.is_empty()
        });
        for (shard, source) in sources.iter().enumerate() {
            let key = progress_key(slot, shard);
            let earlier = done.iter().any(|d| d.iter().any(|(k, _)| *k == key));
            match ensure_permanent_slot(&source.primary, slot, shard).await {
                // Copies of an earlier slot that is gone: the changes between their watermarks
                // and the new slot would be lost.
                Ok(s) if s.created && earlier => {
                    slots.push(s);
                    drop_created_slots(&sources, &slots).await;
                    return Err(CopyDataError::Unsupported(format!(
                        "the destination holds copies for {key} but slot {slot} no longer exists \
                         on {}: the changes since those copies are lost; remove their rows and \
                         the pgdog_reshard_progress rows of {key} first, or use another slot",
                        source.primary.addr()
                    )));
                }
                Ok(s) => {
                    println!(
                        "slot {} {} on {}: consistent point {}",
                        s.name,
                        if s.created { "created" } else { "reused" },
                        source.primary.addr(),
                        format_lsn(s.consistent_point)
                    );
                    slots.push(s);
                }
                Err(e) => {
                    drop_created_slots(&sources, &slots).await;
                    return Err(e);
                }
            }
        }
    }
    let mut done = Vec::new();
    for copy in skipped {
        if let Some(p) = &options.progress {
            let i = p.add_table(&copy.table, copy.source_shard, 0, "");
            p.update_table(i, |t| t.skipped = true);
        }
        report(&copy);
        done.push(copy);
    }

    plan::assign_servers(&mut jobs, &sources);
    // `parallel` reader connections per source server, so every replica works.
    let parallel = options.parallel.max(1);
    let budgets = plan::budgets(&jobs, parallel, tuning);
    let mut copies = stream::iter(jobs.into_iter().enumerate().map(|(i, job)| {
        let dests = dests.clone();
        let slot = options.slot.clone();
        let progress = options.progress.clone();
        let budget = budgets.get(&job.source.addr()).cloned();
        let formats = formats.clone();
        async move {
            let table = job.display();
            let budget = budget.ok_or_else(|| CopyDataError::Table {
                table: table.clone(),
                reason: "no reader budget for its server".into(),
            })?;
            let mut handle = AbortOnDrop(tokio::spawn(copy_table(
                job, i, dests, slot, progress, budget, formats,
            )));
            match (&mut handle.0).await {
                Ok(r) => r,
                Err(e) => Err(CopyDataError::Table {
                    table,
                    reason: format!("copy task failed: {e}"),
                }),
            }
        }
    }))
    .buffer_unordered(parallel * budgets.len().max(1));
    while let Some(result) = copies.next().await {
        match result {
            Ok(copy) => {
                report(&copy);
                done.push(copy);
            }
            Err(e) => {
                drop(copies);
                // Replay needs every table copied: a new slot would only hold WAL back.
                if !options.keep_slots {
                    drop_created_slots(&sources, &slots).await;
                }
                return Err(e);
            }
        }
    }
    Ok((slots, done))
}

/// Drops the permanent slots this run created after a failure (reported, not fatal, when it
/// fails). Reused slots stay: the earlier run's copies depend on them.
async fn drop_created_slots(sources: &[SourceShard], slots: &[SlotReport]) {
    for s in slots.iter().filter(|s| s.created) {
        if let Some(source) = sources.get(s.source_shard) {
            drop_permanent_slot(&source.primary, &s.name).await;
        }
    }
}

/// Drops a permanent slot after a failed copy (reported, not fatal, when it fails).
async fn drop_permanent_slot(primary: &ServerTarget, name: &str) {
    let result = async {
        let mut repl = ReplicationClient::connect(primary, CONNECT_TIMEOUT).await?;
        repl.drop_slot(name, false).await?;
        repl.close().await;
        Ok::<(), ReplicationError>(())
    }
    .await;
    if let Err(e) = result {
        eprintln!("pgdog: copy-data: dropping slot {name} after the failure: {e}");
    }
}

#[cfg(test)]
mod tests;
