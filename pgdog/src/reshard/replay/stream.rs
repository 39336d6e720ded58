//! One source shard's stream: reads its slot, hands each change to the [`Applier`], commits
//! batches (group commit), confirms them on the slot, stops at its target and answers
//! `pgdog verify`'s hold requests ([`Hold`]) between transactions.
use super::hold::{Ask, Hold};
use super::*;

/// What one stream needs besides its source.
pub(super) struct StreamContext<'a> {
    pub(super) options: &'a ReplayOptions,
    pub(super) schema: &'a Schema,
    pub(super) dests: &'a [ServerTarget],
    /// The source shards' primaries.
    pub(super) sources: &'a [ServerTarget],
    pub(super) sharded_source: bool,
    /// The source's sharding layout, when it has more than one shard.
    pub(super) source_schema: Option<&'a Schema>,
    pub(super) abort_after: Option<u64>,
    pub(super) atomic: Option<Atomic>,
    pub(super) bounds: BatchBounds,
    /// `[resharding] hold_timeout`: the longest a verify hold lasts.
    pub(super) hold_timeout: Duration,
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

/// Whether the stream goes on after an event.
enum Flow {
    Go,
    Stop,
}

/// One stream's moving parts.
struct Stream<'c, 'a> {
    ctx: &'c StreamContext<'a>,
    source_shard: usize,
    applier: Applier,
    client: ReplicationClient,
    decoder: Decoder,
    hold: Hold,
    /// The furthest server position seen.
    received: u64,
    /// The source transaction being read.
    txn: Option<Txn>,
}

impl Stream<'_, '_> {
    /// Connects the destination shards (resolving a crashed run's prepared transactions) and
    /// starts the slot where the furthest-behind shard is.
    async fn open<'c, 'a>(
        ctx: &'c StreamContext<'a>,
        source_shard: usize,
        primary: &ServerTarget,
    ) -> Result<Stream<'c, 'a>, ReplayError> {
        let options = ctx.options;
        let key = progress_key(&options.slot, source_shard);
        let (mut shards, watermarks) = open_destination(ctx.dests, &key).await?;
        let (committed, rolled_back) = resolve_prepared(&mut shards, &key).await?;
        if committed + rolled_back > 0 {
            eprintln!(
                "pgdog: replay: {key}: {committed} prepared transactions of a crashed run \
                 committed, {rolled_back} rolled back"
            );
        }
        // Every shard skips what it already committed; start where the furthest-behind shard
        // is (the server starts at the slot's confirmed point when that is later).
        let start = shards.iter().map(|s| s.position).min().unwrap_or(0);
        let shard0 = ctx
            .dests
            .first()
            .ok_or_else(|| other("the destination has no shard"))?;
        let hold = Hold::open(shard0, &key, ctx.hold_timeout).await?;
        let client = start_stream(primary, options, start).await?;
        report(options, source_shard, &|s| {
            s.applied_lsn = s.applied_lsn.max(start)
        });
        Ok(Stream {
            ctx,
            source_shard,
            applier: Applier {
                shards,
                tables: HashMap::new(),
                schema: ctx.schema.clone(),
                database: options.databases.to.clone(),
                source_shard,
                sharded_source: ctx.sharded_source,
                source_schema: ctx.source_schema.cloned(),
                source_database: options.databases.from.clone(),
                key,
                watermarks,
                summary: ReplaySummary {
                    last_lsn: start,
                    ..Default::default()
                },
                atomic: ctx.atomic,
                batch: Batch::default(),
                bounds: ctx.bounds,
                counts: Default::default(),
                catalog: ddl::Catalog::new(primary.clone(), ctx.dests.to_vec()),
                stays_own: staying(
                    &Destination::OneShard(0),
                    ctx.sources,
                    ctx.dests,
                    source_shard,
                ),
                stays_any: staying(
                    &Destination::Everywhere,
                    ctx.sources,
                    ctx.dests,
                    source_shard,
                ),
            },
            client,
            decoder: Decoder::new(4),
            hold,
            received: start,
            txn: None,
        })
    }

    fn target(&self) -> Option<u64> {
        stop_target(self.ctx.options, self.source_shard)
    }

    /// Commits the batch on its destination shards, then confirms it on the slot and reports
    /// it.
    async fn finish_batch(&mut self) -> Result<(), ReplayError> {
        if self.applier.batch.is_empty() {
            return Ok(());
        }
        let b = self.applier.commit().await?;
        if !b.touched.is_empty() {
            let n = COMMITS.fetch_add(1, Ordering::SeqCst) + 1;
            if self.ctx.abort_after == Some(n) {
                eprintln!(
                    "pgdog: replay: PGDOG_TEST_ABORT_AFTER_COMMIT={n}: aborting after the \
                     commit at {}",
                    format_lsn(b.end_lsn)
                );
                std::process::abort();
            }
        }
        self.client.confirm(b.end_lsn);
        self.applier.summary.last_lsn = b.end_lsn;
        let received = self.received;
        report(self.ctx.options, self.source_shard, &|s| {
            s.applied_lsn = b.end_lsn;
            s.received_lsn = s.received_lsn.max(received);
            s.last_commit_time = Some(commit_time(b.commit_time));
            s.transactions += b.transactions;
            s.rows += b.rows;
        });
        Ok(())
    }

    /// Between transactions: while verify asks this stream to stand still before `lsn`,
    /// commits what is applied and waits.
    async fn hold_before(&mut self, lsn: u64) -> Result<(), ReplayError> {
        while self.hold.stops_at(lsn) {
            self.finish_batch().await?;
            let applied = self.applier.summary.last_lsn;
            self.hold.wait(applied, &mut self.client).await?;
        }
        Ok(())
    }

    /// The idle tick: the stop target, verify's requests, and a keepalive request when one of
    /// them waits for the server's position.
    async fn tick(&mut self) -> Result<Flow, ReplayError> {
        let target = self.target();
        if target.is_some_and(|t| self.applier.summary.last_lsn >= t) {
            return Ok(Flow::Stop);
        }
        if self.hold.poll().await? == Ask::Pause {
            self.hold_before(0).await?;
        }
        if target.is_some() || matches!(self.hold.ask, Ask::Advance(_)) {
            self.client.send_status(true).await?;
        }
        Ok(Flow::Go)
    }

    /// A keepalive outside a transaction: everything before `wal_end` was sent and applied.
    async fn keepalive(&mut self, wal_end: u64) -> Result<Flow, ReplayError> {
        self.received = self.received.max(wal_end);
        if self.txn.is_some() {
            return Ok(Flow::Go);
        }
        self.finish_batch().await?;
        self.client.confirm(wal_end);
        let summary = &mut self.applier.summary;
        summary.last_lsn = summary.last_lsn.max(wal_end);
        let received = self.received;
        report(self.ctx.options, self.source_shard, &|s| {
            s.received_lsn = s.received_lsn.max(received);
            s.applied_lsn = s.applied_lsn.max(wal_end);
        });
        if self.target().is_some_and(|t| wal_end >= t) {
            return Ok(Flow::Stop);
        }
        self.hold_before(wal_end).await?;
        Ok(Flow::Go)
    }

    /// One logical replication message.
    async fn data(
        &mut self,
        wal_start: u64,
        wal_end: u64,
        data: Bytes,
    ) -> Result<Flow, ReplayError> {
        self.received = self.received.max(wal_end).max(wal_start);
        let target = self.target();
        if self.txn.is_none() && target.is_some_and(|t| wal_start > t) {
            return Ok(Flow::Stop);
        }
        match self.decoder.decode(wal_start, data)? {
            LogicalMessage::Begin { final_lsn, .. } => {
                if self.txn.is_some() {
                    return Err(other("Begin inside a transaction"));
                }
                self.hold_before(final_lsn).await?;
                self.txn = Some(Txn::new(final_lsn));
            }
            LogicalMessage::Commit {
                end_lsn,
                commit_time: at,
                ..
            } => {
                let mut t = self
                    .txn
                    .take()
                    .ok_or_else(|| other("Commit without Begin"))?;
                self.applier.flush(&mut t).await?;
                self.applier.end_txn(t, end_lsn, at);
                if target.is_some_and(|t| end_lsn >= t) {
                    self.finish_batch().await?;
                    return Ok(Flow::Stop);
                }
            }
            LogicalMessage::Relation(rel) => {
                let mut outside = Txn::new(0);
                let txn = self.txn.as_mut().unwrap_or(&mut outside);
                self.applier
                    .message(txn, LogicalMessage::Relation(rel))
                    .await?;
            }
            msg => {
                let t = self
                    .txn
                    .as_mut()
                    .ok_or_else(|| other(format!("{} outside a transaction", msg.kind_name())))?;
                self.applier.message(t, msg).await?;
            }
        }
        Ok(Flow::Go)
    }

    /// Reads and applies until the stop target, `stop`, or the end of the stream (true).
    async fn run(&mut self, stop: &mut watch::Receiver<bool>) -> Result<bool, ReplayError> {
        let mut tick = tokio::time::interval(STOP_POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            // Group commit: the batch stays open only while more data is already here; never
            // while waiting for the network.
            if self.txn.is_none()
                && !self.applier.batch.is_empty()
                // A read error shows again in next_event, after the batch is committed.
                && (self.applier.batch_full() || !self.client.message_ready().unwrap_or(false))
            {
                self.finish_batch().await?;
            }
            let idle = self.txn.is_none();
            let event = tokio::select! {
                event = self.client.next_event() => Some(event?),
                _ = stop.changed() => return Ok(false),
                _ = tick.tick(), if idle => None,
            };
            let flow = match event {
                None => self.tick().await?,
                Some(None) => return Ok(true),
                Some(Some(ReplicationEvent::XLogData {
                    wal_start,
                    wal_end,
                    data,
                    ..
                })) => self.data(wal_start, wal_end, data).await?,
                Some(Some(ReplicationEvent::Keepalive { wal_end, .. })) => {
                    self.keepalive(wal_end).await?
                }
            };
            if let Flow::Stop = flow {
                return Ok(false);
            }
        }
    }
}

/// Replays one source shard's slot into the destination, until its stop target or `stop`.
pub(super) async fn run_stream(
    ctx: &StreamContext<'_>,
    source_shard: usize,
    primary: ServerTarget,
    mut stop: watch::Receiver<bool>,
) -> Result<ReplaySummary, ReplayError> {
    let mut stream = Stream::open(ctx, source_shard, &primary).await?;
    let ended = stream.run(&mut stop).await?;
    // A batch of ended source transactions is committed; an unfinished source transaction
    // (and the batch it shares its destination transactions with) is rolled back when its
    // connections close (and replayed by the next run).
    if stream.txn.is_none() {
        stream.finish_batch().await?;
    }
    if ended {
        if let Some(t) = stream.target() {
            return Err(other(format!(
                "source shard {source_shard}: the server ended the stream before {}",
                format_lsn(t)
            )));
        }
    } else {
        stream.client.stop().await?;
    }
    let Stream {
        client,
        mut applier,
        hold,
        ..
    } = stream;
    client.close().await;
    hold.close().await;
    for s in applier.shards.drain(..) {
        s.server.terminate().await;
    }
    applier.summary.last_lsns = vec![applier.summary.last_lsn];
    Ok(applier.summary)
}
