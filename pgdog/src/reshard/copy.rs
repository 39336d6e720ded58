//! `pgdog copy-data`: copies every table of a publication from the source database into the
//! shards of the destination database, each table under its own consistent snapshot.
//!
//! - With `--slot S`, the permanent logical slot S (pgoutput) is created first on the source's
//!   primary; replay starts at its consistent point.
//! - Each table: a replication connection to a source replica (round-robin; the primary when
//!   there is none) creates a TEMPORARY slot exporting its snapshot; a second connection to the
//!   same server reads the table with `COPY ... TO STDOUT (FORMAT binary)` under that snapshot.
//!   The slot's consistent point is the table's LSN watermark: the copy holds exactly the changes
//!   committed before it.
//! - Rows are split in flight by the router's COPY splitter and placement (the code that routes
//!   a client's `COPY ... FROM STDIN` through the proxy) into one `COPY ... FROM STDIN` per
//!   destination shard, each in a transaction committed once the whole table is copied.
//! - Up to `--parallel N` tables at once. When a table fails, the command stops and drops the
//!   permanent slot it created (a failed table's shards were rolled back; committed tables stay).
use crate::backend::server::{Server, ServerError, ServerTarget};
use crate::config::{Role, Settings};
use crate::net::message::{self, read_error, Message};
use crate::replication::client::{
    format_lsn, ReplicationClient, ReplicationError, SlotOptions, SnapshotAction,
};
use crate::reshard::schema_sync::{query_rows, target};
use crate::router::copy::{CopyFormat, CopyOptions, CopySplitter, KeyError, KeyField};
use crate::router::schema::{Schema, TableSharding};
use bytes::BytesMut;
use futures_util::stream::{self, StreamExt};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long creating a temporary slot on a standby may wait for the primary's snapshot record.
const STANDBY_SLOT_DEADLINE: Duration = Duration::from_secs(120);
/// Buffered bytes for one shard before they are sent as CopyData.
const FLUSH_BYTES: usize = 64 * 1024;

/// Replay progress on every destination shard: each copied table's watermark (written in the
/// table's copy transaction) and the source LSN applied so far (written by `pgdog replay` in
/// the transaction of the changes it covers).
pub const PROGRESS_DDL: &str = "CREATE TABLE IF NOT EXISTS pgdog_reshard_progress \
    (slot text, table_name text, watermark pg_lsn, PRIMARY KEY (slot, table_name)); \
    CREATE TABLE IF NOT EXISTS pgdog_reshard_position (slot text PRIMARY KEY, lsn pg_lsn)";

#[derive(Debug, thiserror::Error)]
pub enum CopyDataError {
    #[error("loading the configuration: {0}")]
    Config(String),
    #[error("database `{0}` is not configured in pgdog.toml")]
    UnknownDatabase(String),
    #[error("database `{database}` shard {shard} has no server configured")]
    MissingShard { database: String, shard: usize },
    #[error("{0}")]
    Unsupported(String),
    #[error("sharding configuration of `{database}`: {reason}")]
    Sharding { database: String, reason: String },
    #[error("publication `{publication}`: {reason}")]
    Publication { publication: String, reason: String },
    #[error("table {table} is neither sharded nor omnisharded in database `{database}`: add it to [[sharded_tables]] or [[omnisharded_tables]]")]
    NotSharded { table: String, database: String },
    #[error("table {table}: {reason}")]
    Table { table: String, reason: String },
    #[error("{addr}: {context}: {source}")]
    Server {
        addr: String,
        context: String,
        #[source]
        source: Box<ServerError>,
    },
    #[error(transparent)]
    Replication(#[from] ReplicationError),
    #[error("starting the runtime: {0}")]
    Runtime(std::io::Error),
}

/// What `pgdog copy-data` was asked to do.
#[derive(Debug, Clone)]
pub struct CopyDataOptions {
    pub config: PathBuf,
    pub users: PathBuf,
    pub from_database: String,
    pub to_database: String,
    pub publication: String,
    /// The permanent slot to create first.
    pub slot: Option<String>,
    /// Tables copied at once (at least 1).
    pub parallel: usize,
}

/// The permanent slot created before the copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotReport {
    pub name: String,
    pub consistent_point: u64,
}

/// One copied table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableCopy {
    /// `schema.table`.
    pub table: String,
    pub rows: u64,
    /// The temporary slot's consistent point: the copy holds every change committed before it.
    pub watermark: u64,
    /// The source server it was read from.
    pub source: String,
}

impl std::fmt::Display for TableCopy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "table {}: {} rows, watermark {}",
            self.table,
            self.rows,
            format_lsn(self.watermark)
        )?;
        if !self.source.is_empty() {
            write!(f, " (read from {})", self.source)?;
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
}

/// One table to copy.
#[derive(Debug, Clone)]
struct Job {
    schema: String,
    name: String,
    columns: Vec<String>,
    dest: Destination,
    /// The server to read from (a replica, or the primary).
    source: ServerTarget,
    from_replica: bool,
}

impl Job {
    fn display(&self) -> String {
        format!("{}.{}", self.schema, self.name)
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

    fn copy_out(&self) -> String {
        format!(
            "COPY {} ({}) TO STDOUT (FORMAT binary)",
            self.sql_name(),
            self.column_list()
        )
    }

    fn copy_in(&self) -> String {
        format!(
            "COPY {} ({}) FROM STDIN (FORMAT binary)",
            self.sql_name(),
            self.column_list()
        )
    }
}

/// `"name"` as an SQL identifier.
pub(crate) fn ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// `'text'` as an SQL string literal.
pub(crate) fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

pub(crate) fn server_err(addr: &str, context: &str) -> impl FnOnce(ServerError) -> CopyDataError {
    let addr = addr.to_string();
    let context = context.to_string();
    move |source| CopyDataError::Server {
        addr,
        context,
        source: Box::new(source),
    }
}

pub(crate) async fn connect(t: &ServerTarget) -> Result<Server, CopyDataError> {
    Server::connect(t, CONNECT_TIMEOUT)
        .await
        .map_err(server_err(&t.addr(), "connecting"))
}

/// An ErrorResponse as a [`ServerError`].
pub(crate) fn postgres_error(addr: &str, m: Message) -> ServerError {
    match read_error(&m) {
        Ok(fields) => ServerError::Postgres(fields, m),
        Err(error) => ServerError::Protocol {
            addr: addr.to_string(),
            error,
        },
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
    let sharding = schema
        .table(&qualified)
        .or_else(|| schema.table(table))
        .or_else(|| columns.iter().find_map(|c| schema.by_column(c)));
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
async fn publication_tables(
    primary: &ServerTarget,
    publication: &str,
) -> Result<Vec<(String, String, Vec<String>)>, CopyDataError> {
    let mut server = connect(primary).await?;
    let err = |reason: String| CopyDataError::Publication {
        publication: publication.to_string(),
        reason,
    };
    let exists = query_rows(
        &mut server,
        &format!(
            "SELECT 1 FROM pg_publication WHERE pubname = {}",
            literal(publication)
        ),
    )
    .await
    .map_err(|e| err(e.to_string()))?;
    if exists.is_empty() {
        return Err(err(format!("does not exist on {}", primary.addr())));
    }
    let rows = query_rows(
        &mut server,
        &format!(
            "SELECT t.schemaname::text, t.tablename::text, \
               (SELECT string_agg(quote_ident(a.attname), ',' ORDER BY a.attnum) \
                  FROM pg_attribute a \
                 WHERE a.attrelid = format('%I.%I', t.schemaname, t.tablename)::regclass \
                   AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '') \
             FROM pg_publication_tables t WHERE t.pubname = {} ORDER BY 1, 2",
            literal(publication)
        ),
    )
    .await
    .map_err(|e| err(e.to_string()))?;
    server.terminate().await;
    let mut tables = Vec::new();
    for r in rows {
        if let [Some(schema), Some(table), columns] = r.as_slice() {
            let columns = columns.as_deref().map(split_idents).unwrap_or_default();
            tables.push((schema.clone(), table.clone(), columns));
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

/// Creates the permanent slot on the source's primary.
async fn create_permanent_slot(
    primary: &ServerTarget,
    name: &str,
) -> Result<SlotReport, CopyDataError> {
    let mut repl = ReplicationClient::connect(primary, CONNECT_TIMEOUT).await?;
    let created = repl.create_slot(&SlotOptions::new(name)).await?;
    repl.close().await;
    Ok(SlotReport {
        name: created.name,
        consistent_point: created.consistent_point,
    })
}

/// A destination shard in `COPY ... FROM STDIN` inside its transaction.
struct Sink {
    shard: usize,
    addr: String,
    server: Server,
}

impl Sink {
    async fn open(shard: usize, t: &ServerTarget, sql: &str) -> Result<Sink, CopyDataError> {
        let addr = t.addr();
        let mut server = connect(t).await?;
        server
            .execute("BEGIN")
            .await
            .map_err(server_err(&addr, "BEGIN"))?;
        server
            .write(&message::query(sql))
            .await
            .map_err(server_err(&addr, sql))?;
        loop {
            let m = server.read().await.map_err(server_err(&addr, sql))?;
            match m.tag() {
                b'G' => break,
                b'E' => return Err(server_err(&addr, sql)(postgres_error(&addr, m))),
                _ => {}
            }
        }
        Ok(Sink {
            shard,
            addr,
            server,
        })
    }

    async fn send(&mut self, buf: &mut BytesMut) -> Result<(), CopyDataError> {
        if buf.is_empty() {
            return Ok(());
        }
        let data = buf.split();
        let m = message::build(b'd', |b| b.extend_from_slice(&data));
        self.server
            .write(&m)
            .await
            .map_err(server_err(&self.addr, "sending COPY data"))
    }

    /// CopyDone, then the COPY's result.
    async fn done(&mut self) -> Result<(), CopyDataError> {
        let ctx = format!("shard {} COPY FROM STDIN", self.shard);
        self.server
            .write(&message::empty(b'c'))
            .await
            .map_err(server_err(&self.addr, &ctx))?;
        let mut error = None;
        loop {
            let m = self
                .server
                .read()
                .await
                .map_err(server_err(&self.addr, &ctx))?;
            match m.tag() {
                b'E' => error = Some(postgres_error(&self.addr, m)),
                b'Z' => break,
                _ => {}
            }
        }
        match error {
            Some(e) => Err(server_err(&self.addr, &ctx)(e)),
            None => Ok(()),
        }
    }

    async fn commit(mut self) -> Result<(), CopyDataError> {
        let ctx = format!("shard {} COMMIT", self.shard);
        self.server
            .execute("COMMIT")
            .await
            .map_err(server_err(&self.addr, &ctx))?;
        self.server.terminate().await;
        Ok(())
    }
}

/// Copies one table; the destination shards commit only when all of it arrived. On error the
/// connections are dropped, so every shard's transaction rolls back and the temporary slot
/// goes away.
async fn copy_table(
    job: Job,
    index: usize,
    primary: ServerTarget,
    dests: Vec<ServerTarget>,
    progress_slot: Option<String>,
) -> Result<TableCopy, CopyDataError> {
    let table = job.display();
    let src_addr = job.source.addr();
    // The temporary slot and its exported snapshot.
    let slot_name = format!("pgdog_copy_{}_{index}", std::process::id());
    let slot = SlotOptions {
        temporary: true,
        snapshot: SnapshotAction::Export,
        ..SlotOptions::new(&slot_name)
    };
    let mut repl = ReplicationClient::connect(&job.source, CONNECT_TIMEOUT).await?;
    let created = if job.from_replica {
        repl.create_slot_on_standby(&slot, &primary, STANDBY_SLOT_DEADLINE)
            .await?
    } else {
        repl.create_slot(&slot).await?
    };
    let snapshot = created
        .snapshot
        .clone()
        .ok_or_else(|| CopyDataError::Table {
            table: table.clone(),
            reason: format!("slot {slot_name} exported no snapshot"),
        })?;

    // The reader, under the slot's snapshot.
    let mut reader = connect(&job.source).await?;
    reader
        .execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .await
        .map_err(server_err(&src_addr, "BEGIN"))?;
    reader
        .execute(&format!("SET TRANSACTION SNAPSHOT {}", literal(&snapshot)))
        .await
        .map_err(server_err(&src_addr, "SET TRANSACTION SNAPSHOT"))?;

    // One COPY FROM STDIN per destination shard.
    let copy_in = job.copy_in();
    let mut sinks = Vec::with_capacity(dests.len());
    for (shard, t) in dests.iter().enumerate() {
        sinks.push(Sink::open(shard, t, &copy_in).await?);
    }
    let n = sinks.len();
    let mut buffers: Vec<BytesMut> = (0..n).map(|_| BytesMut::new()).collect();
    let options = CopyOptions::for_format(CopyFormat::Binary);
    let (mut splitter, sharding) = match &job.dest {
        Destination::ByKey(t, key) => (
            Some(CopySplitter::new(&options, *key, n).with_context(&job.name, t.column())),
            Some((**t).clone()),
        ),
        Destination::Everywhere => (None, None),
    };
    // The router's placement, exactly as for a client COPY through the proxy.
    let mut place = |field: KeyField<'_>| -> Result<usize, KeyError> {
        let Some(t) = sharding.as_ref() else {
            return Ok(0);
        };
        let r = match field {
            KeyField::Null => t.shard_of_text(None),
            KeyField::Text(s) => t.shard_of_text(Some(&s)),
            KeyField::Binary(b) => t.shard_of_binary(b),
        };
        r.map_err(|e| KeyError::new(e.code(), e.to_string()))
    };

    let copy_out = job.copy_out();
    reader
        .write(&message::query(&copy_out))
        .await
        .map_err(server_err(&src_addr, &copy_out))?;
    let mut source_rows: u64 = 0;
    let mut error: Option<CopyDataError> = None;
    loop {
        let m = reader
            .read()
            .await
            .map_err(server_err(&src_addr, &copy_out))?;
        match m.tag() {
            b'd' if error.is_none() => {
                let data = m.payload();
                match splitter.as_mut() {
                    Some(sp) => {
                        if let Err(e) = sp.feed(data, &mut place, &mut buffers) {
                            error = Some(CopyDataError::Table {
                                table: table.clone(),
                                reason: e.to_string(),
                            });
                            continue;
                        }
                    }
                    None => {
                        for b in buffers.iter_mut() {
                            b.extend_from_slice(data);
                        }
                    }
                }
                for (sink, buf) in sinks.iter_mut().zip(buffers.iter_mut()) {
                    if buf.len() >= FLUSH_BYTES {
                        sink.send(buf).await?;
                    }
                }
            }
            b'c' if error.is_none() => {
                if let Some(sp) = splitter.as_mut() {
                    if let Err(e) = sp.finish(&mut place, &mut buffers) {
                        error = Some(CopyDataError::Table {
                            table: table.clone(),
                            reason: e.to_string(),
                        });
                    }
                }
            }
            b'C' => {
                source_rows = m
                    .reader()
                    .cstr()
                    .ok()
                    .and_then(|t| t.rsplit(' ').next()?.parse::<u64>().ok())
                    .unwrap_or(0);
            }
            b'E' => {
                error.get_or_insert(server_err(&src_addr, &copy_out)(postgres_error(
                    &src_addr, m,
                )));
            }
            b'Z' => break,
            _ => {}
        }
    }
    if let Some(e) = error {
        return Err(e);
    }
    for (sink, buf) in sinks.iter_mut().zip(buffers.iter_mut()) {
        sink.send(buf).await?;
    }
    for sink in sinks.iter_mut() {
        sink.done().await?;
    }
    if let Some(sp) = splitter.as_ref() {
        if sp.rows() != source_rows {
            return Err(CopyDataError::Table {
                table,
                reason: format!(
                    "the source sent {source_rows} rows but {} were placed",
                    sp.rows()
                ),
            });
        }
    }
    if let Some(slot) = &progress_slot {
        let sql = format!(
            "INSERT INTO pgdog_reshard_progress (slot, table_name, watermark) \
             VALUES ({}, {}, {}) ON CONFLICT (slot, table_name) \
             DO UPDATE SET watermark = EXCLUDED.watermark",
            literal(slot),
            literal(&table),
            literal(&format_lsn(created.consistent_point))
        );
        for sink in sinks.iter_mut() {
            sink.server
                .execute(&sql)
                .await
                .map_err(server_err(&sink.addr, "recording the watermark"))?;
        }
    }
    for sink in sinks {
        sink.commit().await?;
    }
    let _ = reader.execute("COMMIT").await;
    reader.terminate().await;
    // Ending the replication connection drops the temporary slot.
    repl.close().await;
    Ok(TableCopy {
        table,
        rows: source_rows,
        watermark: created.consistent_point,
        source: src_addr,
    })
}

/// Runs the copy: the permanent slot (if asked), then every table, `parallel` at once. Each
/// finished table is passed to `report` as it completes.
pub async fn copy_data(
    settings: &Settings,
    options: &CopyDataOptions,
    mut report: impl FnMut(&TableCopy),
) -> Result<(Option<SlotReport>, Vec<TableCopy>), CopyDataError> {
    for db in [&options.from_database, &options.to_database] {
        if !settings.has_database(db) {
            return Err(CopyDataError::UnknownDatabase(db.clone()));
        }
    }
    if settings.shards(&options.from_database) > 1 {
        return Err(CopyDataError::Unsupported(format!(
            "copying from a sharded source (`{}` has {} shards) is not yet supported",
            options.from_database,
            settings.shards(&options.from_database)
        )));
    }
    let primary = settings
        .shard_server(&options.from_database, 0)
        .ok_or_else(|| CopyDataError::MissingShard {
            database: options.from_database.clone(),
            shard: 0,
        })?;
    let primary = target(settings, primary);
    let replicas: Vec<ServerTarget> = settings
        .config
        .databases
        .iter()
        .filter(|d| d.name == options.from_database && d.shard == 0 && d.role == Role::Replica)
        .map(|d| target(settings, d))
        .collect();
    let dest_schema =
        Schema::new(settings, &options.to_database).map_err(|e| CopyDataError::Sharding {
            database: options.to_database.clone(),
            reason: e.to_string(),
        })?;
    let mut dests = Vec::new();
    for shard in 0..settings.shards(&options.to_database).max(1) {
        let db = settings
            .shard_server(&options.to_database, shard)
            .ok_or_else(|| CopyDataError::MissingShard {
                database: options.to_database.clone(),
                shard,
            })?;
        dests.push(target(settings, db));
    }

    // Every table's destination is checked before anything is created or copied.
    let tables = publication_tables(&primary, &options.publication).await?;
    let mut jobs = Vec::with_capacity(tables.len());
    for (i, (schema, name, columns)) in tables.into_iter().enumerate() {
        let dest = destination(&dest_schema, &options.to_database, &schema, &name, &columns)?;
        let (source, from_replica) = if replicas.is_empty() {
            (primary.clone(), false)
        } else {
            (replicas[i % replicas.len()].clone(), true)
        };
        jobs.push(Job {
            schema,
            name,
            columns,
            dest,
            source,
            from_replica,
        });
    }

    if options.slot.is_some() {
        for t in &dests {
            let mut server = connect(t).await?;
            server
                .execute(PROGRESS_DDL)
                .await
                .map_err(server_err(&t.addr(), "creating the progress tables"))?;
            server.terminate().await;
        }
    }
    let slot = match &options.slot {
        Some(name) => Some(create_permanent_slot(&primary, name).await?),
        None => None,
    };
    if let Some(s) = &slot {
        println!(
            "slot {} created on {}: consistent point {}",
            s.name,
            primary.addr(),
            format_lsn(s.consistent_point)
        );
    }

    let mut copies = stream::iter(jobs.into_iter().enumerate().map(|(i, job)| {
        let primary = primary.clone();
        let dests = dests.clone();
        let slot = options.slot.clone();
        async move {
            let table = job.display();
            let handle = tokio::spawn(copy_table(job, i, primary, dests, slot));
            match handle.await {
                Ok(r) => r,
                Err(e) => Err(CopyDataError::Table {
                    table,
                    reason: format!("copy task failed: {e}"),
                }),
            }
        }
    }))
    .buffer_unordered(options.parallel.max(1));
    let mut done = Vec::new();
    while let Some(result) = copies.next().await {
        match result {
            Ok(copy) => {
                report(&copy);
                done.push(copy);
            }
            Err(e) => {
                drop(copies);
                // Replay needs every table copied: the slot would only hold WAL back.
                if let Some(s) = &slot {
                    drop_permanent_slot(&primary, &s.name).await;
                }
                return Err(e);
            }
        }
    }
    Ok((slot, done))
}

/// Drops the permanent slot after a failed copy (reported, not fatal, when it fails).
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

/// Entry point of `pgdog copy-data`.
pub fn main(options: CopyDataOptions) -> ExitCode {
    let result = Settings::load(&options.config, &options.users)
        .map_err(|e| CopyDataError::Config(e.to_string()))
        .and_then(|settings| {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(CopyDataError::Runtime)?;
            runtime.block_on(copy_data(&settings, &options, |t| println!("{t}")))
        });
    match result {
        Ok((_, tables)) => {
            let rows: u64 = tables.iter().map(|t| t.rows).sum();
            println!("copied {} tables, {rows} rows", tables.len());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pgdog: copy-data: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_quoted_identifiers() {
        assert_eq!(split_idents("id,name"), ["id", "name"]);
        assert_eq!(
            split_idents("id,\"Weird, \"\"name\"\"\",x"),
            ["id", "Weird, \"name\"", "x"]
        );
    }

    #[test]
    fn copy_statements() {
        let job = Job {
            schema: "public".into(),
            name: "users".into(),
            columns: vec!["id".into(), "Name".into()],
            dest: Destination::Everywhere,
            source: ServerTarget {
                host: "127.0.0.1".into(),
                port: 5432,
                database: "db".into(),
                user: "u".into(),
                password: None,
            },
            from_replica: false,
        };
        assert_eq!(
            job.copy_out(),
            "COPY \"public\".\"users\" (\"id\", \"Name\") TO STDOUT (FORMAT binary)"
        );
        assert_eq!(
            job.copy_in(),
            "COPY \"public\".\"users\" (\"id\", \"Name\") FROM STDIN (FORMAT binary)"
        );
        let line = TableCopy {
            table: "public.users".into(),
            rows: 12,
            watermark: 0x1_0000_00FF,
            source: String::new(),
        };
        assert_eq!(
            line.to_string(),
            "table public.users: 12 rows, watermark 1/FF"
        );
    }
}
