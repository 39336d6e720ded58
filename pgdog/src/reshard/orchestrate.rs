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
use crate::reshard::copy::{copy_data, CopyDataError, CopyDataOptions};
use crate::reshard::cutover::{
    cleanup, cutover, lag, CutoverError, CutoverOptions, CutoverReport, Lag, RunningReplay,
    SourcePrimaries, Traffic,
};
use crate::reshard::preflight::{self, Verdict};
use crate::reshard::progress::Progress;
use crate::reshard::replay::{ReplayOptions, ReplaySummary};
use crate::reshard::retry::Retry;
use crate::reshard::schema_sync::{self, Phase, SchemaSyncOptions};
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
    /// Waiting before the copy and the replay run again after a server failure.
    Retrying(String),
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
            Step::Checking => f.write_str("running the checks"),
            Step::SchemaPre => f.write_str("schema (pre-data)"),
            Step::Copy => f.write_str("copying"),
            Step::SchemaPost => f.write_str("schema (post-data)"),
            Step::Replay => f.write_str("replaying"),
            Step::Cutover => f.write_str("cutting over"),
            Step::Reverse => f.write_str("cut over; replicating back to the old shards"),
            Step::Done => f.write_str("done"),
            Step::Stopped => f.write_str("stopped"),
            Step::Failed(e) => write!(f, "failed: {e}"),
            Step::Retrying(why) => f.write_str(why),
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
    /// The checks' warnings (`pgdog reshard --check`'s lines), once they ran.
    pub checks: Mutex<Vec<String>>,
    /// The retries after server failures so far (`reshard/retry.rs`), oldest first.
    pub retries: Mutex<Vec<String>>,
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
            checks: Mutex::new(Vec::new()),
            retries: Mutex::new(Vec::new()),
        })
    }

    pub fn step(&self) -> Step {
        self.step.borrow().clone()
    }

    pub(crate) fn set_step(&self, s: Step) {
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
    /// Retries after server failures.
    pub retries: u32,
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
        if self.retries > 0 {
            writeln!(f, "retried {} times after server failures", self.retries)?;
        }
        if let Some(c) = &self.cutover {
            writeln!(f, "{c}")?;
        }
        write!(f, "total {:.1} s", self.elapsed.as_secs_f64())
    }
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
    // DDL the replay would not carry is refused by this process's proxy meanwhile.
    let _moving = crate::reshard::moving::start(&o.databases.from, &o.databases.to);
    control.set_step(Step::Checking);
    let checks = unless_stopped(control, "the checks", preflight::run(settings, &o)).await?;
    for w in checks.lines(Verdict::Warning) {
        tracing::warn!("reshard: {w}");
    }
    *control.checks.lock() = checks.lines(Verdict::Warning);
    if checks.verdict() == Verdict::Refused {
        return Err(ReshardError::Refused(
            checks.lines(Verdict::Refused).join("\n"),
        ));
    }

    // Server failures during the copy and the replay are retried (`reshard/retry.rs`).
    let limit = Duration::from_millis(settings.config.resharding.retry_timeout);
    let mut retry = Retry::new(limit);
    let replay = loop {
        match copy_and_replay(settings, control, &o, &mut report, limit > Duration::ZERO).await {
            Ok(replay) => break replay,
            Err(e) => retry.after(control, e).await?,
        }
    };
    report.retries = retry.attempts;
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

/// Schema, copy and replay until a cutover is wanted: the replay, still running. On a stop
/// or a failure nothing is left running (the replay is stopped first).
async fn copy_and_replay(
    settings: &Settings,
    control: &Arc<Control>,
    o: &ReshardOptions,
    report: &mut ReshardReport,
    keep_slots: bool,
) -> Result<RunningReplay, ReshardError> {
    sync_schema(settings, control, o, Phase::Pre).await?;

    control.set_step(Step::Copy);
    let copy_started = Instant::now();
    let copy_options = CopyDataOptions {
        databases: o.databases.clone(),
        publication: o.publication.clone(),
        slot: Some(o.slot.clone()),
        parallel: o.parallel.max(1),
        progress: Some(control.progress.clone()),
        keep_slots,
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

    sync_schema(settings, control, o, Phase::Post).await?;

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
    match replay_until_cutover(settings, control, o, &replay).await {
        Ok(true) => Ok(replay),
        // Stopped, or the replay ended by itself (its error, if it failed).
        Ok(false) => {
            report.replay = replay.stop().await?;
            Err(ReshardError::Stopped("the replay".into()))
        }
        Err(e) => {
            let _ = replay.stop().await;
            Err(e)
        }
    }
}

/// Watches the replay until a cutover is wanted (true), a stop, or the replay's end (false);
/// the lag is measured meanwhile.
async fn replay_until_cutover(
    settings: &Settings,
    control: &Control,
    o: &ReshardOptions,
    replay: &RunningReplay,
) -> Result<bool, ReshardError> {
    let mut primaries = SourcePrimaries::connect(settings, &o.databases.from).await?;
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
    primaries.close().await;
    Ok(wanted)
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
         pgdog reshard --abort --from-database {from} --to-database {to} --slot {slot}\n\
         and after a move of buckets within the same servers, delete the moved rows from \
         their old shards:\n  pgdog cleanup --database {from} --delete",
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
