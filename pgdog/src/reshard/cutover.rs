//! Cutover: moves a database's clients from the source servers to the resharded destination
//! without an error on their side.
//!
//! With the replay running: wait until its lag is under a threshold, pause the source
//! database's traffic in the proxy (new transactions wait, running ones finish), read every
//! source primary's current WAL position and let the replay apply up to it (lag zero), copy
//! sequence values, swap the two names in pgdog.toml (the source name now serves from the
//! destination shards), reload the proxy, resume traffic, drop the permanent slots and the
//! progress tables. A failure before the configuration swap resumes traffic on the source:
//! clients notice a pause, nothing else.
//!
//! The proxy is reached either in-process (the admin database's `CUTOVER`, or `RESHARD ...
//! CUTOVER`) or through a running pgdog's admin database (`pgdog cutover --admin-url`).
use crate::backend::server::{Server, ServerError, ServerTarget};
use crate::config::Settings;
use crate::replication::client::{format_lsn, parse_lsn, ReplicationClient};
use crate::reshard::config_swap::{swap_file, SwapError};
use crate::reshard::copy::ServerFailure;
use crate::reshard::copy::{connect, literal, progress_key, source_primaries, CopyDataError};
use crate::reshard::progress::{Progress, StopAt};
use crate::reshard::replay::{replay, ReplayError, ReplayOptions, ReplaySummary};
use crate::reshard::schema_sync::target;
use crate::reshard::Databases;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How often lag is measured while waiting for it to drop.
const POLL: Duration = Duration::from_millis(200);

#[derive(Debug, thiserror::Error)]
pub enum CutoverError {
    #[error(transparent)]
    Copy(#[from] CopyDataError),
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error(transparent)]
    Swap(#[from] SwapError),
    #[error(transparent)]
    Server(#[from] ServerFailure),
    #[error("the proxy: {0}")]
    Traffic(String),
    #[error("the replay lag stayed above {max_lag} bytes for {waited:?} (now {lag} bytes): the destination does not keep up")]
    LagTimeout {
        max_lag: u64,
        lag: u64,
        waited: Duration,
    },
    #[error("the replay did not reach the source's position within {0:?} while traffic was paused; traffic resumed on the source")]
    DrainTimeout(Duration),
    #[error("the replay stopped before the cutover: {0}")]
    ReplayStopped(String),
    #[error("{0}")]
    Other(String),
}

fn server_err(addr: &str, context: &str) -> impl FnOnce(ServerError) -> CutoverError {
    let wrap = ServerFailure::wrap(addr, context);
    move |source| wrap(source).into()
}

/// How the cutover reaches the proxy's traffic controls.
#[derive(Debug, Clone)]
pub enum Traffic {
    /// This process is the proxy.
    InProcess,
    /// Running pgdogs (one or a fleet serving the same databases), through their admin
    /// databases: every one is paused, switched and resumed.
    Admin(Vec<ServerTarget>),
    /// No proxy to switch (tests of the data path only): pause/resume/reload do nothing.
    Detached,
}

impl Traffic {
    async fn admin_command(target: &ServerTarget, sql: &str) -> Result<(), CutoverError> {
        let mut server = Server::connect(target, CONNECT_TIMEOUT)
            .await
            .map_err(|e| CutoverError::Traffic(format!("connecting to the admin database: {e}")))?;
        let result = server.execute(sql).await;
        server.terminate().await;
        result.map_err(|e| CutoverError::Traffic(format!("{sql}: {e}")))
    }

    /// Pauses `database` everywhere; if one proxy fails, the others are resumed.
    pub async fn pause(&self, database: &str) -> Result<(), CutoverError> {
        match self {
            Traffic::InProcess => crate::admin::pause(Some(database))
                .await
                .map_err(|e| CutoverError::Traffic(format!("PAUSE {database}: {e}"))),
            Traffic::Admin(peers) => {
                for (i, t) in peers.iter().enumerate() {
                    if let Err(e) = Self::admin_command(t, &format!("PAUSE {database}")).await {
                        for p in &peers[..i] {
                            let _ = Self::admin_command(p, &format!("RESUME {database}")).await;
                        }
                        return Err(CutoverError::Traffic(format!("{}: {e}", t.addr())));
                    }
                }
                Ok(())
            }
            Traffic::Detached => Ok(()),
        }
    }

    /// Resumes `database` on every proxy (all are tried; the first failure is returned).
    pub async fn resume(&self, database: &str) -> Result<(), CutoverError> {
        match self {
            Traffic::InProcess => {
                crate::admin::resume(Some(database));
                Ok(())
            }
            Traffic::Admin(peers) => {
                let mut first = Ok(());
                for t in peers {
                    if let Err(e) = Self::admin_command(t, &format!("RESUME {database}")).await {
                        if first.is_ok() {
                            first = Err(CutoverError::Traffic(format!("{}: {e}", t.addr())));
                        }
                    }
                }
                first
            }
            Traffic::Detached => Ok(()),
        }
    }

    pub async fn reload(&self) -> Result<(), CutoverError> {
        match self {
            Traffic::InProcess => {
                crate::admin::reload().map_err(|e| CutoverError::Traffic(format!("RELOAD: {e}")))
            }
            Traffic::Admin(peers) => {
                for t in peers {
                    Self::admin_command(t, "RELOAD").await?;
                }
                Ok(())
            }
            Traffic::Detached => Ok(()),
        }
    }
}

/// A replay running in a task, with its progress and stop targets.
pub struct RunningReplay {
    pub progress: Arc<Progress>,
    pub stop_at: Arc<StopAt>,
    task: tokio::task::JoinHandle<Result<ReplaySummary, ReplayError>>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl RunningReplay {
    /// Starts `replay` in a task; `options.progress`/`stop_at` are replaced by this handle's.
    pub fn start(settings: Settings, mut options: ReplayOptions, progress: Arc<Progress>) -> Self {
        let stop_at = Arc::new(StopAt::default());
        options.progress = Some(progress.clone());
        options.stop_at = Some(stop_at.clone());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let shutdown = async move {
                let _ = rx.await;
            };
            replay(&settings, &options, shutdown).await
        });
        RunningReplay {
            progress,
            stop_at,
            task,
            shutdown: Some(tx),
        }
    }

    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Waits for the replay to end by itself (error, or the stop targets reached).
    pub async fn join(self) -> Result<ReplaySummary, CutoverError> {
        let RunningReplay { task, shutdown, .. } = self;
        let result = task.await;
        drop(shutdown);
        match result {
            Ok(r) => Ok(r?),
            Err(e) => Err(CutoverError::ReplayStopped(format!("replay task: {e}"))),
        }
    }

    /// Asks the replay to stop (an open source transaction is rolled back on the destination
    /// and replayed next time) and waits for it.
    pub async fn stop(mut self) -> Result<ReplaySummary, CutoverError> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.join().await
    }
}

/// The source shards' primaries, where the permanent slots live.
pub struct SourcePrimaries {
    servers: Vec<(String, Server)>,
}

impl SourcePrimaries {
    pub async fn connect(settings: &Settings, database: &str) -> Result<Self, CutoverError> {
        let mut servers = Vec::new();
        for t in source_primaries(settings, database)? {
            let server = connect(&t).await?;
            servers.push((t.addr(), server));
        }
        Ok(SourcePrimaries { servers })
    }

    /// Every primary's current WAL insert position (it includes commits not yet flushed).
    pub async fn positions(&mut self) -> Result<Vec<u64>, CutoverError> {
        let mut out = Vec::with_capacity(self.servers.len());
        for (addr, server) in self.servers.iter_mut() {
            let sql = "SELECT pg_current_wal_insert_lsn()::text";
            let rows = server
                .query_rows(sql)
                .await
                .map_err(server_err(addr, sql))?;
            let lsn = rows
                .first()
                .and_then(|r| r.first().cloned().flatten())
                .and_then(|s| parse_lsn(&s).ok())
                .ok_or_else(|| CutoverError::Other(format!("{addr}: no WAL position")))?;
            out.push(lsn);
        }
        Ok(out)
    }

    pub async fn close(self) {
        for (_, s) in self.servers {
            s.terminate().await;
        }
    }
}

/// The primaries of the configured shards of `database` (gaps in the shard numbers skipped):
/// for cleanup, which does what it can.
fn configured_shards(settings: &Settings, database: &str) -> Vec<ServerTarget> {
    (0..settings.shards(database).max(1))
        .filter_map(|shard| settings.shard_server(database, shard))
        .map(|db| target(settings, db))
        .collect()
}

/// Replication lag of one source shard's stream.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Lag {
    pub bytes: u64,
    pub seconds: f64,
}

/// Lag per source shard: WAL written on the source and not yet applied on the destination.
/// A stream that received everything up to the position and has no open transaction counts
/// as caught up.
pub fn lag(progress: &Progress, positions: &[u64]) -> Vec<Lag> {
    let streams = progress.streams();
    positions
        .iter()
        .enumerate()
        .map(|(i, &pos)| {
            let Some(s) = streams.iter().find(|s| s.source_shard == i) else {
                return Lag {
                    bytes: pos,
                    seconds: 0.0,
                };
            };
            let done = s.applied_lsn.max(s.received_lsn);
            let bytes = pos.saturating_sub(done);
            let seconds = match (bytes, s.last_commit_time) {
                (0, _) | (_, None) => 0.0,
                (_, Some(t)) => t.elapsed().map(|d| d.as_secs_f64()).unwrap_or(0.0),
            };
            Lag { bytes, seconds }
        })
        .collect()
}

/// What `cutover` was asked to do.
#[derive(Debug, Clone)]
pub struct CutoverOptions {
    /// The source and destination databases.
    pub databases: Databases,
    pub slot: String,
    /// pgdog.toml of the proxy: rewritten with the names swapped.
    pub config: PathBuf,
    /// Pause traffic once every stream's lag is under this many bytes.
    pub max_lag_bytes: u64,
    /// How long to wait for the lag to get under `max_lag_bytes`.
    pub lag_timeout: Duration,
    /// How long traffic may stay paused while the last changes are applied.
    pub drain_timeout: Duration,
    /// The publication moved; with `reverse`, the same publication is created on the
    /// destination shards.
    pub publication: String,
    /// Prepare reverse replication (destination back to source) while traffic is paused, so the
    /// move can be rolled back: a publication and the slot `<slot>_reverse` on every
    /// destination shard, and watermarks on the source shards.
    pub reverse: bool,
}

impl CutoverOptions {
    /// The slot reverse replication reads on every destination shard.
    pub fn reverse_slot(&self) -> String {
        format!("{}_reverse", self.slot)
    }
}

/// What a cutover did.
#[derive(Debug, Clone, Default)]
pub struct CutoverReport {
    /// How long clients were paused.
    pub paused: Duration,
    /// The source positions the destination reached before the switch.
    pub positions: Vec<u64>,
    pub sequences: usize,
    pub replay: ReplaySummary,
    pub backup: PathBuf,
    /// The reverse replication slot created on every destination shard.
    pub reverse_slot: Option<String>,
}

impl std::fmt::Display for CutoverReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pos: Vec<String> = self.positions.iter().map(|&l| format_lsn(l)).collect();
        write!(
            f,
            "cutover done: clients paused {:.0} ms, destination at {}, {} sequences set, \
             previous configuration kept in {}",
            self.paused.as_secs_f64() * 1000.0,
            pos.join(", "),
            self.sequences,
            self.backup.display()
        )?;
        if let Some(s) = &self.reverse_slot {
            write!(f, "; reverse replication slot {s} ready on every new shard")?;
        }
        Ok(())
    }
}

/// Waits until every stream's lag is under `max`, or fails after `timeout` / when the replay
/// stopped.
pub async fn wait_for_lag(
    replay: &RunningReplay,
    primaries: &mut SourcePrimaries,
    max: u64,
    timeout: Duration,
) -> Result<(), CutoverError> {
    let start = Instant::now();
    loop {
        if replay.is_finished() {
            return Err(CutoverError::ReplayStopped(
                "it ended while waiting for the lag to drop".into(),
            ));
        }
        let positions = primaries.positions().await?;
        let worst = lag(&replay.progress, &positions)
            .iter()
            .map(|l| l.bytes)
            .max()
            .unwrap_or(0);
        if worst <= max {
            return Ok(());
        }
        if start.elapsed() > timeout {
            return Err(CutoverError::LagTimeout {
                max_lag: max,
                lag: worst,
                waited: start.elapsed(),
            });
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Sets every destination sequence to the highest value the source shards reached.
async fn copy_sequences(
    settings: &Settings,
    options: &CutoverOptions,
) -> Result<usize, CutoverError> {
    let mut values: BTreeMap<(String, String), i64> = BTreeMap::new();
    let sql = "SELECT schemaname::text, sequencename::text, last_value::text FROM pg_sequences \
               WHERE last_value IS NOT NULL";
    for t in configured_shards(settings, &options.databases.from) {
        let mut server = connect(&t).await?;
        let rows = server
            .query_rows(sql)
            .await
            .map_err(server_err(&t.addr(), "reading sequences"))?;
        server.terminate().await;
        for r in rows {
            if let [Some(schema), Some(name), Some(v)] = r.as_slice() {
                if let Ok(v) = v.parse::<i64>() {
                    let e = values.entry((schema.clone(), name.clone())).or_insert(v);
                    *e = (*e).max(v);
                }
            }
        }
    }
    let mut set = 0;
    for (shard, t) in configured_shards(settings, &options.databases.to)
        .into_iter()
        .enumerate()
    {
        let mut server = connect(&t).await?;
        for ((schema, name), v) in &values {
            // Only sequences the destination has (schema-sync copied the published tables').
            let sql = format!(
                "SELECT setval(c.oid, {v}) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE c.relkind = 'S' AND n.nspname = {} AND c.relname = {}",
                literal(schema),
                literal(name)
            );
            let rows = server
                .query_rows(&sql)
                .await
                .map_err(server_err(&t.addr(), "setting a sequence"))?;
            if shard == 0 {
                set += rows.len();
            }
        }
        server.terminate().await;
    }
    Ok(set)
}

/// Reverse replication, prepared while traffic is paused and the destination holds everything:
/// the publication and a slot on every destination shard (only changes after this point are
/// in it), and a zero watermark per table and destination shard on every source shard, so
/// `replay` from the destination to the source applies everything the slot has.
async fn prepare_reverse(
    settings: &Settings,
    options: &CutoverOptions,
) -> Result<String, CutoverError> {
    let slot = options.reverse_slot();
    let pub_lit = literal(&options.publication);
    // The published tables, as the source has them.
    let sources = source_primaries(settings, &options.databases.from)?;
    let t = &sources[0];
    let mut server = connect(t).await?;
    let sql = format!(
        "SELECT format('%I.%I', schemaname, tablename), schemaname || '.' || tablename \
         FROM pg_publication_tables WHERE pubname = {pub_lit} ORDER BY 1"
    );
    let rows = server
        .query_rows(&sql)
        .await
        .map_err(server_err(&t.addr(), "reading the publication"))?;
    server.terminate().await;
    let tables: Vec<(String, String)> = rows
        .into_iter()
        .filter_map(|r| match r.as_slice() {
            [Some(q), Some(n)] => Some((q.clone(), n.clone())),
            _ => None,
        })
        .collect();
    if tables.is_empty() {
        return Err(CutoverError::Other(format!(
            "publication {} has no tables on {}",
            options.publication,
            t.addr()
        )));
    }
    let quoted: Vec<&str> = tables.iter().map(|(q, _)| q.as_str()).collect();
    let dests = source_primaries(settings, &options.databases.to)?;
    let dest_shards = dests.len();
    for t in &dests {
        let mut server = connect(t).await?;
        let sql = format!(
            "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = {pub_lit}) \
             THEN CREATE PUBLICATION {} FOR TABLE {}; END IF; END $$",
            crate::reshard::copy::ident(&options.publication),
            quoted.join(", ")
        );
        server
            .execute(&sql)
            .await
            .map_err(server_err(&t.addr(), "creating the reverse publication"))?;
        let sql = format!(
            "SELECT pg_create_logical_replication_slot({}, 'pgoutput') \
             WHERE NOT EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = {})",
            literal(&slot),
            literal(&slot)
        );
        server
            .query_rows(&sql)
            .await
            .map_err(server_err(&t.addr(), "creating the reverse slot"))?;
        server.terminate().await;
    }
    for t in &sources {
        let mut server = connect(t).await?;
        let mut sql = String::from(crate::reshard::copy::PROGRESS_DDL);
        for i in 0..dest_shards {
            for (_, name) in &tables {
                sql.push_str(&format!(
                    "; INSERT INTO pgdog_reshard_progress (slot, table_name, watermark) \
                     VALUES ({}, {}, '0/0') ON CONFLICT (slot, table_name) \
                     DO UPDATE SET watermark = EXCLUDED.watermark",
                    literal(&progress_key(&slot, i)),
                    literal(name)
                ));
            }
            sql.push_str(&format!(
                "; DELETE FROM pgdog_reshard_position WHERE slot = {}",
                literal(&progress_key(&slot, i))
            ));
        }
        server
            .execute(&sql)
            .await
            .map_err(server_err(&t.addr(), "recording reverse watermarks"))?;
        server.terminate().await;
    }
    Ok(slot)
}

/// Drops the permanent slot on every source primary and the progress rows of this slot on the
/// destination (the reshard is complete). Failures are reported, not fatal: the cutover is done.
pub async fn cleanup(settings: &Settings, from: &str, to: &str, slot: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for t in configured_shards(settings, from) {
        let result = async {
            let mut repl = ReplicationClient::connect(&t, CONNECT_TIMEOUT).await?;
            repl.drop_slot(slot, true).await?;
            repl.close().await;
            Ok::<(), crate::replication::client::ReplicationError>(())
        }
        .await;
        if let Err(e) = result {
            problems.push(format!("dropping slot {slot} on {}: {e}", t.addr()));
        }
    }
    let keys: Vec<String> = (0..settings.shards(from).max(1))
        .map(|i| literal(&progress_key(slot, i)))
        .collect();
    for t in configured_shards(settings, to) {
        let sql = format!(
            "DELETE FROM pgdog_reshard_progress WHERE slot IN ({k}); \
             DELETE FROM pgdog_reshard_position WHERE slot IN ({k}); \
             DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pgdog_reshard_progress) \
             AND NOT EXISTS (SELECT 1 FROM pgdog_reshard_position) THEN \
             DROP TABLE pgdog_reshard_progress, pgdog_reshard_position; \
             DROP TABLE IF EXISTS pgdog_reshard_hold; END IF; END $$",
            k = keys.join(", ")
        );
        let result = async {
            let mut server = connect(&t).await?;
            let r = server.execute(&sql).await;
            server.terminate().await;
            r.map_err(server_err(&t.addr(), "removing the progress tables"))
        }
        .await;
        if let Err(e) = result {
            problems.push(e.to_string());
        }
    }
    problems
}

/// The switch of this process's configuration (or none, detached): the file rewritten, the
/// proxy reloaded, traffic resumed; on failure the old file is put back and traffic resumes
/// on the source.
async fn switch_here(options: &CutoverOptions, traffic: &Traffic) -> Result<PathBuf, CutoverError> {
    let backup = match swap_file(
        &options.config,
        &options.databases.from,
        &options.databases.to,
    ) {
        Ok(b) => b,
        Err(e) => {
            let _ = traffic.resume(&options.databases.from).await;
            return Err(e.into());
        }
    };
    if let Err(e) = traffic.reload().await {
        // Put the old file back so the proxy and the file agree, and let clients continue on
        // the source (nothing was written to the destination by clients yet).
        let _ = std::fs::copy(&backup, &options.config);
        let _ = traffic.resume(&options.databases.from).await;
        return Err(e);
    }
    traffic.resume(&options.databases.from).await?;
    Ok(backup)
}

/// Runs the cutover with `replay` running (it is consumed: it ends at the source's position).
pub async fn cutover(
    settings: &Settings,
    options: &CutoverOptions,
    traffic: &Traffic,
    replay: RunningReplay,
) -> Result<CutoverReport, CutoverError> {
    let mut primaries = SourcePrimaries::connect(settings, &options.databases.from).await?;
    if let Err(e) = wait_for_lag(
        &replay,
        &mut primaries,
        options.max_lag_bytes,
        options.lag_timeout,
    )
    .await
    {
        primaries.close().await;
        if matches!(e, CutoverError::ReplayStopped(_)) {
            // Say why the replay ended.
            return Err(match replay.join().await {
                Ok(s) => CutoverError::ReplayStopped(format!(
                    "it ended by itself after {} transactions",
                    s.transactions
                )),
                Err(e) => e,
            });
        }
        return Err(e);
    }
    traffic.pause(&options.databases.from).await?;
    let paused_at = Instant::now();
    // From here until the swap, any failure resumes traffic on the source.
    let drained = async {
        let positions = primaries.positions().await?;
        replay.stop_at.set(positions.clone());
        let summary = tokio::time::timeout(options.drain_timeout, replay.join())
            .await
            .map_err(|_| CutoverError::DrainTimeout(options.drain_timeout))??;
        let sequences = copy_sequences(settings, options).await?;
        let reverse = if options.reverse {
            Some(prepare_reverse(settings, options).await?)
        } else {
            None
        };
        Ok::<_, CutoverError>((positions, summary, sequences, reverse))
    }
    .await;
    primaries.close().await;
    let (positions, summary, sequences, reverse_slot) = match drained {
        Ok(r) => r,
        Err(e) => {
            let _ = traffic.resume(&options.databases.from).await;
            if options.reverse {
                // Slots made before the failure would hold WAL back on the destination.
                let _ = cleanup(
                    settings,
                    &options.databases.to,
                    &options.databases.from,
                    &options.reverse_slot(),
                )
                .await;
            }
            return Err(e);
        }
    };
    let backup = match traffic {
        // Every proxy switches its own file and is checked; they resume as they switched.
        Traffic::Admin(peers) => {
            super::fleet::switch(settings, options, peers).await?;
            crate::reshard::config_swap::backup_path(&options.config)
        }
        _ => switch_here(options, traffic).await?,
    };
    let paused = paused_at.elapsed();
    for p in cleanup(
        settings,
        &options.databases.from,
        &options.databases.to,
        &options.slot,
    )
    .await
    {
        tracing::warn!("cutover cleanup: {p}");
    }
    Ok(CutoverReport {
        paused,
        positions,
        sequences,
        replay: summary,
        backup,
        reverse_slot,
    })
}
