//! `pgdog reshard` (and the admin database's `RESHARD`): the whole move in one command.
//!
//! Checks every published table can be replayed (a primary key or a replica identity), then
//! schema pre-data → copy (creating the permanent slot) → schema post-data → replay, and with
//! `--cutover` (or a later `CUTOVER`) the cutover. A [`Control`] is shared with whoever watches
//! or steers the run (the terminal display, the admin database): the current phase, the
//! progress, the lag, and the stop / cutover requests.
//!
//! Stopping (Ctrl-C, SIGTERM, admin `STOP`) ends the current step cleanly: temporary slots go
//! away with their connections, an unfinished table copy rolls back, the replay keeps its
//! position; the permanent slot stays so the same command resumes where it stopped. `--abort`
//! (admin `ABORT`) stops and drops the permanent slots and the progress tables: nothing is left
//! behind on the servers. A completed cutover drops them too. With `--reverse`, reverse
//! replication runs after the cutover until stopped; its slots (`<slot>_reverse`) then stay, for
//! a rollback (`pgdog cutover` on them) or until `--abort --slot <slot>_reverse` makes the move
//! final.
use crate::config::Settings;
use crate::reshard::copy::{connect, copy_data, literal, CopyDataError, CopyDataOptions};
use crate::reshard::cutover::{
    cleanup, cutover, lag, CutoverError, CutoverOptions, CutoverReport, Lag, RunningReplay,
    SourcePrimaries, Traffic,
};
use crate::reshard::progress::Progress;
use crate::reshard::replay::{ReplayOptions, ReplaySummary};
use crate::reshard::schema_sync::{self, target, Phase, SchemaSyncOptions};
use crate::reshard::Databases;
use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

#[derive(Debug, thiserror::Error)]
pub enum ReshardError {
    #[error("{0}")]
    Refused(String),
    #[error("schema sync: {0}")]
    Schema(#[from] schema_sync::SchemaSyncError),
    #[error("copy: {0}")]
    Copy(#[from] CopyDataError),
    #[error("{0}")]
    Cutover(#[from] CutoverError),
    #[error("stopped during {0}: run the same command again to resume, or add --abort to drop the slot and the progress tables")]
    Stopped(String),
}

/// What `pgdog reshard` was asked to do.
#[derive(Debug, Clone)]
pub struct ReshardOptions {
    /// The source and destination databases.
    pub databases: Databases,
    pub publication: String,
    /// The permanent slot (one per source shard, same name).
    pub slot: String,
    pub parallel: usize,
    /// Cut over once the replay caught up.
    pub cutover: bool,
    pub max_lag_bytes: u64,
    pub lag_timeout: Duration,
    pub drain_timeout: Duration,
    /// After the cutover, replicate the new shards' changes back to the old ones until stopped
    /// (its slots stay then: a rollback is `pgdog cutover` with `--slot <slot>_reverse`).
    pub reverse: bool,
}

impl ReshardOptions {
    /// The options with `[resharding]`'s values (`defaults`) where no flag gives one.
    pub fn new(
        from: &str,
        to: &str,
        publication: &str,
        defaults: &crate::config::Resharding,
    ) -> Self {
        ReshardOptions {
            databases: Databases::new(from, to),
            publication: publication.into(),
            slot: "pgdog_reshard".into(),
            parallel: defaults.copy_parallel.max(1),
            cutover: false,
            max_lag_bytes: defaults.max_lag_bytes,
            lag_timeout: Duration::from_millis(defaults.lag_timeout),
            drain_timeout: Duration::from_millis(defaults.cutover_timeout),
            reverse: false,
        }
    }
}

/// Where a reshard is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Checking,
    SchemaPre,
    Copy,
    SchemaPost,
    Replay,
    Cutover,
    Reverse,
    Done,
    Stopped,
    Failed(String),
}

impl Step {
    /// Done, stopped or failed: nothing runs any more.
    pub fn is_final(&self) -> bool {
        matches!(self, Step::Done | Step::Stopped | Step::Failed(_))
    }
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Checking => f.write_str("checking tables"),
            Step::SchemaPre => f.write_str("schema (pre-data)"),
            Step::Copy => f.write_str("copying"),
            Step::SchemaPost => f.write_str("schema (post-data)"),
            Step::Replay => f.write_str("replaying"),
            Step::Cutover => f.write_str("cutting over"),
            Step::Reverse => f.write_str("cut over; replicating back to the old shards"),
            Step::Done => f.write_str("done"),
            Step::Stopped => f.write_str("stopped"),
            Step::Failed(e) => write!(f, "failed: {e}"),
        }
    }
}

/// Shared between a running reshard and whoever watches or steers it.
pub struct Control {
    pub options: ReshardOptions,
    pub progress: Arc<Progress>,
    pub started: Instant,
    step: watch::Sender<Step>,
    lag: Mutex<Vec<Lag>>,
    cutover: AtomicBool,
    cutover_tx: watch::Sender<bool>,
    stop_tx: watch::Sender<bool>,
    report: Mutex<Option<String>>,
}

impl Control {
    pub fn new(options: ReshardOptions) -> Arc<Control> {
        let cutover = options.cutover;
        Arc::new(Control {
            options,
            progress: Arc::new(Progress::default()),
            started: Instant::now(),
            step: watch::channel(Step::Checking).0,
            lag: Mutex::new(Vec::new()),
            cutover: AtomicBool::new(cutover),
            cutover_tx: watch::channel(cutover).0,
            stop_tx: watch::channel(false).0,
            report: Mutex::new(None),
        })
    }

    pub fn step(&self) -> Step {
        self.step.borrow().clone()
    }

    fn set_step(&self, s: Step) {
        self.step.send_replace(s);
    }

    /// Resolves once the step satisfies `done`.
    pub async fn wait_for_step(&self, done: impl FnMut(&Step) -> bool) {
        let mut rx = self.step.subscribe();
        let _ = rx.wait_for(done).await;
    }

    pub fn lag(&self) -> Vec<Lag> {
        self.lag.lock().clone()
    }

    /// Asks for the cutover once the replay caught up.
    pub fn request_cutover(&self) {
        self.cutover.store(true, Ordering::SeqCst);
        self.cutover_tx.send_replace(true);
    }

    pub fn cutover_requested(&self) -> bool {
        self.cutover.load(Ordering::SeqCst)
    }

    /// Asks the run to stop at the next safe point.
    pub fn stop(&self) {
        self.stop_tx.send_replace(true);
    }

    pub fn stopping(&self) -> bool {
        *self.stop_tx.borrow()
    }

    /// Resolves once a stop was asked for.
    pub async fn stopped(&self) {
        let mut rx = self.stop_tx.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    async fn cutover_wanted(&self) {
        let mut rx = self.cutover_tx.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    /// The final report, once the run ended.
    pub fn report(&self) -> Option<String> {
        self.report.lock().clone()
    }

    pub fn is_finished(&self) -> bool {
        self.step().is_final()
    }
}

/// What a whole reshard did.
#[derive(Debug, Clone, Default)]
pub struct ReshardReport {
    pub tables: usize,
    pub rows: u64,
    pub copy_time: Duration,
    pub replay: ReplaySummary,
    pub cutover: Option<CutoverReport>,
    pub elapsed: Duration,
}

impl std::fmt::Display for ReshardReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "copied {} table copies ({} rows) in {:.1} s",
            self.tables,
            self.rows,
            self.copy_time.as_secs_f64()
        )?;
        writeln!(
            f,
            "replayed {} transactions ({} row changes, {} skipped)",
            self.replay.transactions, self.replay.rows, self.replay.skipped
        )?;
        if let Some(c) = &self.cutover {
            writeln!(f, "{c}")?;
        }
        write!(f, "total {:.1} s", self.elapsed.as_secs_f64())
    }
}

/// Published tables the replay could not apply, refused before anything is created (the
/// message says what to change):
/// - no primary key and the default replica identity, or `REPLICA IDENTITY NOTHING`: no row
///   could be found;
/// - where one row's move could arrive on two streams (a sharded source, or `--reverse` into a
///   sharded destination), a primary key or replica identity without the sharding key, unless
///   every destination shard takes keys of one upstream shard only (`reshard/ownership.rs`: the
///   same hash sharding on the same column, a multiple of the shard count). Otherwise a row
///   moving between upstream shards has two versions (the DELETE on one stream, the INSERT on
///   the other, in no fixed order) that can meet on one destination shard, where the primary
///   key keeps one only; either choice loses the row in one of the arrival orders. REPLICA
///   IDENTITY FULL does not help while the primary key lacks the key (its upsert is `ON
///   CONFLICT DO NOTHING`: the other version is dropped, then deleted by its own stream).
pub async fn check_tables(
    settings: &Settings,
    options: &ReshardOptions,
) -> Result<(), ReshardError> {
    let tables = published_tables(settings, options).await?;
    let schema = |db: &str| {
        crate::router::schema::Schema::new(settings, db)
            .map_err(|e| ReshardError::Refused(format!("database `{db}`: {e}")))
    };
    let (from, to) = (&options.databases.from, &options.databases.to);
    let (source, dest) = (schema(from)?, schema(to)?);
    // Where one row's move could arrive on two streams: a sharded source, or with `--reverse`
    // a sharded destination (the reverse replication's source).
    let mut streams = Vec::new();
    if settings.shards(from) > 1 {
        streams.push((
            format!("the source has {} shards", settings.shards(from)),
            &source,
            &dest,
        ));
    }
    if options.reverse && settings.shards(to) > 1 {
        streams.push((
            format!(
                "reverse replication (--reverse) reads the destination's {} shards",
                settings.shards(to)
            ),
            &dest,
            &source,
        ));
    }
    let refused: Vec<String> = tables
        .iter()
        .filter_map(|t| {
            let entry = |s: &crate::router::schema::Schema| {
                s.table(&format!("{}.{}", t.schema, t.table))
                    .or_else(|| s.table(&t.table))
                    .cloned()
            };
            let key = entry(&dest).map(|d| d.column().to_string());
            let layouts: Vec<Layout> = streams
                .iter()
                .map(|(why, upstream, downstream)| Layout {
                    why: why.clone(),
                    owned: owned(entry(upstream), entry(downstream), key.as_deref()),
                })
                .collect();
            refusal(t, key.as_deref(), &layouts)
        })
        .collect();
    if refused.is_empty() {
        Ok(())
    } else {
        Err(ReshardError::Refused(refused.join("\n")))
    }
}

/// Where one row's move could arrive on two streams: why (`the source has 2 shards`), and
/// whether each downstream shard takes keys of one upstream shard only (else why not).
struct Layout {
    why: String,
    owned: Result<(), String>,
}

/// Whether every downstream shard takes keys of one upstream shard only, for a table sharded
/// `upstream` there and `downstream` here ([`crate::reshard::ownership`]).
fn owned(
    upstream: Option<crate::router::schema::TableSharding>,
    downstream: Option<crate::router::schema::TableSharding>,
    key: Option<&str>,
) -> Result<(), String> {
    match (upstream, downstream) {
        (Some(up), Some(down)) => {
            crate::reshard::ownership::owned_shards(&up, &down, 0).map(|_| ())
        }
        _ => Err(format!(
            "its sharding by \"{}\" is not configured on both sides",
            key.unwrap_or("?")
        )),
    }
}

/// A published table as [`check_tables`] sees it.
struct PublishedTable {
    /// `schema.table`, quoted where needed.
    name: String,
    schema: String,
    table: String,
    /// `pg_class.relreplident`: d(efault), n(othing), f(ull), i(ndex).
    replident: String,
    primary_key: bool,
    /// The columns of the replica identity (primary key or REPLICA IDENTITY index).
    identity: Vec<String>,
}

/// The tables of the publication, read from the first source shard.
async fn published_tables(
    settings: &Settings,
    options: &ReshardOptions,
) -> Result<Vec<PublishedTable>, ReshardError> {
    let db = settings.primary(&options.databases.from).ok_or_else(|| {
        ReshardError::Refused(format!(
            "database `{}` is not configured in pgdog.toml",
            options.databases.from
        ))
    })?;
    let t = target(settings, db);
    let mut server = connect(&t).await?;
    let sql = format!(
        "SELECT format('%I.%I', n.nspname, c.relname), n.nspname::text, c.relname::text, \
           c.relreplident::text, \
           EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)::text, \
           (SELECT string_agg(a.attname, ',') FROM pg_index i JOIN pg_attribute a \
              ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) \
            WHERE i.indrelid = c.oid AND CASE c.relreplident WHEN 'i' THEN i.indisreplident \
              ELSE i.indisprimary END) \
         FROM pg_publication_tables p \
         JOIN pg_namespace n ON n.nspname = p.schemaname \
         JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = p.tablename \
         WHERE p.pubname = {} ORDER BY 1",
        literal(&options.publication)
    );
    let rows = server.query_rows(&sql).await;
    server.terminate().await;
    let rows = rows.map_err(|e| ReshardError::Refused(format!("{}: {sql}: {e}", t.addr())))?;
    Ok(rows
        .into_iter()
        .filter_map(|r| match <[Option<String>; 6]>::try_from(r).ok()? {
            [Some(name), Some(schema), Some(table), Some(replident), Some(pk), identity] => {
                Some(PublishedTable {
                    name,
                    schema,
                    table,
                    replident,
                    primary_key: pk == "true",
                    identity: identity
                        .map(|i| i.split(',').map(String::from).collect())
                        .unwrap_or_default(),
                })
            }
            _ => None,
        })
        .collect())
}

/// Why the replay could not apply a table's changes (`key`: its sharding key on the
/// destination; `layouts`: where one row's move could arrive on two streams), if it could not.
fn refusal(t: &PublishedTable, key: Option<&str>, layouts: &[Layout]) -> Option<String> {
    let name = &t.name;
    if t.replident == "n" || (t.replident == "d" && !t.primary_key) {
        return Some(format!(
            "table {name} has no primary key or replica identity: add one \
             (ALTER TABLE {name} ADD PRIMARY KEY (...)) or set \
             ALTER TABLE {name} REPLICA IDENTITY FULL"
        ));
    }
    let key = key?;
    // The unique columns two versions of a moving row could collide on.
    let unique = t.replident != "f" || t.primary_key;
    if !unique || t.identity.iter().any(|c| c == key) {
        return None;
    }
    let (why, reason) = layouts
        .iter()
        .find_map(|l| l.owned.as_ref().err().map(|e| (&l.why, e)))?;
    let what = if t.replident == "f" {
        "primary key"
    } else {
        "replica identity"
    };
    Some(format!(
        "table {name}: its {what} ({}) does not contain the sharding key \"{key}\" and {why}, \
         but {reason}: a row moving between those shards arrives as a DELETE and an INSERT on \
         two independent streams, and its two versions could meet on one destination shard, \
         where the {what} keeps one only; add the column to the primary key (or REPLICA \
         IDENTITY index), or give the destination a multiple of the source's shard count with \
         the same hash sharding",
        t.identity.join(", ")
    ))
}

/// One schema-sync phase as a step of the reshard (Pre or Post), unless it is stopped.
async fn sync_schema(
    settings: &Settings,
    control: &Control,
    o: &ReshardOptions,
    phase: Phase,
) -> Result<(), ReshardError> {
    control.set_step(match phase {
        Phase::Post => Step::SchemaPost,
        _ => Step::SchemaPre,
    });
    let options = SchemaSyncOptions {
        databases: o.databases.clone(),
        publication: o.publication.clone(),
        phase,
    };
    unless_stopped(
        control,
        "the schema sync",
        schema_sync::sync(settings, &options),
    )
    .await??;
    Ok(())
}

/// Runs `fut` unless a stop is asked for first.
async fn unless_stopped<T>(
    control: &Control,
    step: &str,
    fut: impl std::future::Future<Output = T>,
) -> Result<T, ReshardError> {
    tokio::select! {
        r = fut => Ok(r),
        _ = control.stopped() => Err(ReshardError::Stopped(step.to_string())),
    }
}

/// Runs a reshard to the end (or to the stop); records the final report in `control`.
pub async fn reshard(
    settings: Settings,
    traffic: Traffic,
    control: Arc<Control>,
) -> Result<ReshardReport, ReshardError> {
    let result = run(&settings, &traffic, &control).await;
    match &result {
        Ok(r) => {
            control.set_step(Step::Done);
            *control.report.lock() = Some(r.to_string());
        }
        Err(ReshardError::Stopped(_)) => control.set_step(Step::Stopped),
        Err(e) => control.set_step(Step::Failed(e.to_string())),
    }
    result
}

async fn run(
    settings: &Settings,
    traffic: &Traffic,
    control: &Arc<Control>,
) -> Result<ReshardReport, ReshardError> {
    let o = control.options.clone();
    let mut report = ReshardReport::default();
    control.set_step(Step::Checking);
    unless_stopped(control, "the checks", check_tables(settings, &o)).await??;

    sync_schema(settings, control, &o, Phase::Pre).await?;

    control.set_step(Step::Copy);
    let copy_started = Instant::now();
    let copy_options = CopyDataOptions {
        databases: o.databases.clone(),
        publication: o.publication.clone(),
        slot: Some(o.slot.clone()),
        parallel: o.parallel.max(1),
        progress: Some(control.progress.clone()),
    };
    let (_, copies) = unless_stopped(
        control,
        "the copy",
        copy_data(settings, &copy_options, |_| {}),
    )
    .await??;
    report.tables = copies.len();
    report.rows = copies.iter().map(|c| c.rows).sum();
    report.copy_time = copy_started.elapsed();

    sync_schema(settings, control, &o, Phase::Post).await?;

    control.set_step(Step::Replay);
    let replay_options = ReplayOptions {
        databases: o.databases.clone(),
        publication: o.publication.clone(),
        slot: o.slot.clone(),
        until_lsn: None,
        progress: None,
        stop_at: None,
        atomic: false,
    };
    let replay = RunningReplay::start(settings.clone(), replay_options, control.progress.clone());
    let mut primaries = SourcePrimaries::connect(settings, &o.databases.from).await?;
    // Replay until a stop, a failure, or a cutover request; the lag is measured meanwhile.
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    let wanted = loop {
        tokio::select! {
            _ = tick.tick() => {
                if replay.is_finished() {
                    break false;
                }
                let positions = primaries.positions().await?;
                *control.lag.lock() = lag(&control.progress, &positions);
            }
            _ = control.cutover_wanted() => break true,
            _ = control.stopped() => break false,
        }
    };
    if !wanted {
        primaries.close().await;
        let summary = replay.stop().await?;
        report.replay = summary;
        return Err(ReshardError::Stopped("the replay".into()));
    }
    primaries.close().await;
    control.set_step(Step::Cutover);
    let cut_options = CutoverOptions {
        databases: o.databases.clone(),
        slot: o.slot.clone(),
        config: settings.config_path.clone(),
        max_lag_bytes: o.max_lag_bytes,
        lag_timeout: o.lag_timeout,
        drain_timeout: o.drain_timeout,
        publication: o.publication.clone(),
        reverse: o.reverse,
    };
    let done = cutover(settings, &cut_options, traffic, replay).await?;
    report.replay = done.replay.clone();
    let reverse_slot = done.reverse_slot.clone();
    report.cutover = Some(done);
    if let Some(slot) = reverse_slot {
        control.set_step(Step::Reverse);
        reverse(settings, &o, &slot, control).await?;
    }
    report.elapsed = control.started.elapsed();
    Ok(report)
}

/// Replays the new shards' changes into the old ones until a stop, then drops the reverse
/// slots and their progress rows. The names were swapped by the cutover: the source name now
/// means the new shards.
async fn reverse(
    old_settings: &Settings,
    o: &ReshardOptions,
    slot: &str,
    control: &Arc<Control>,
) -> Result<(), ReshardError> {
    let settings =
        crate::registry::load_settings(&old_settings.config_path, &old_settings.users_path)
            .map_err(|e| {
                ReshardError::Refused(format!("reading the swapped configuration: {e}"))
            })?;
    let options = ReplayOptions {
        databases: o.databases.clone(),
        publication: o.publication.clone(),
        slot: slot.to_string(),
        until_lsn: None,
        progress: None,
        stop_at: None,
        atomic: false,
    };
    let progress = Arc::new(Progress::default());
    let replay = RunningReplay::start(settings.clone(), options, progress);
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    let failed = loop {
        tokio::select! {
            _ = tick.tick() => if replay.is_finished() { break true; },
            _ = control.stopped() => break false,
        }
    };
    // The reverse slots stay: they are what a rollback (`pgdog cutover` with the names as they
    // are now and `--slot <slot>`) replays, or what `--abort --slot <slot>` drops to make the
    // move final.
    let result = if failed {
        replay.join().await.map(|_| ())
    } else {
        replay.stop().await.map(|_| ())
    };
    result.map_err(ReshardError::from)
}

/// What to run after reverse replication stopped: roll back, or make the move final.
pub fn reverse_hint(o: &ReshardOptions, slot: &str) -> String {
    format!(
        "reverse replication stopped; its slot {slot} stays on every new shard.\n\
         roll back (clients move to the old shards again):\n  \
         pgdog cutover --from-database {from} --to-database {to} --publication {p} --slot {slot} --admin-url URL\n\
         or make the move final (drops the slots and progress tables):\n  \
         pgdog reshard --abort --from-database {from} --to-database {to} --slot {slot}",
        from = o.databases.from,
        to = o.databases.to,
        p = o.publication,
    )
}

/// Drops what a reshard keeps on the servers: the permanent slot on every source primary and
/// the progress rows (and tables, once empty) on the destination. The copied data stays.
pub async fn abort(settings: &Settings, options: &ReshardOptions) -> Vec<String> {
    cleanup(
        settings,
        &options.databases.from,
        &options.databases.to,
        &options.slot,
    )
    .await
}

/// Where `pgdog.toml` lives for a cutover run from the command line.
pub fn config_path(settings: &Settings) -> PathBuf {
    settings.config_path.clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(replident: &str, primary_key: bool, identity: &[&str]) -> PublishedTable {
        PublishedTable {
            name: "public.orders".into(),
            schema: "public".into(),
            table: "orders".into(),
            replident: replident.into(),
            primary_key,
            identity: identity.iter().map(|c| c.to_string()).collect(),
        }
    }

    #[test]
    fn refusals() {
        let by_id = table("d", true, &["id"]);
        // A single source applies an identity without the key by identity on every shard.
        assert_eq!(refusal(&by_id, Some("customer_id"), &[]), None);
        let layout = |owned: Result<(), String>| Layout {
            why: "the source has 2 shards".into(),
            owned,
        };
        let apart = [layout(Ok(()))];
        let mixed = [layout(Err(
            "the destination's 3 shards are not a multiple of the source's 2".into(),
        ))];
        // Each destination shard of one source shard (2 -> 4): applied by identity there.
        assert_eq!(refusal(&by_id, Some("customer_id"), &apart), None);
        let refused = refusal(&by_id, Some("customer_id"), &mixed).unwrap();
        assert!(refused.contains("(id) does not contain the sharding key \"customer_id\""));
        assert!(refused.contains("the source has 2 shards, but the destination's 3 shards"));
        // REPLICA IDENTITY FULL with a primary key without the key: refused the same way.
        let full_by_id = table("f", true, &["id"]);
        let refused = refusal(&full_by_id, Some("customer_id"), &mixed).unwrap();
        assert!(refused.contains("its primary key (id)"), "{refused}");
        assert_eq!(refusal(&full_by_id, Some("customer_id"), &apart), None);
        // The key in the identity, FULL without a primary key, or an unsharded table: fine.
        let keyed = table("d", true, &["id", "customer_id"]);
        assert_eq!(refusal(&keyed, Some("customer_id"), &mixed), None);
        assert_eq!(
            refusal(&table("f", false, &[]), Some("customer_id"), &mixed),
            None
        );
        assert_eq!(refusal(&by_id, None, &mixed), None);
        // No identity at all: refused everywhere.
        for t in [table("d", false, &[]), table("n", true, &["id"])] {
            let refused = refusal(&t, None, &[]).unwrap();
            assert!(refused.contains("has no primary key or replica identity"));
        }
    }
}
