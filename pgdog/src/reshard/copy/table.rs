//! One (table, source shard) copy: a temporary slot's exported snapshot on the server read
//! from, one or more readers under it (CTID ranges of a large table), one `COPY ... FROM STDIN`
//! per target destination shard, and the commit of each shard with its watermark row.
use super::*;
use tokio::sync::OwnedSemaphorePermit;

/// What the first reader learns before the copy: the planner's row estimate (progress
/// display), the heap size and block size (CTID ranges) and the server's version (format).
struct TableStats {
    estimate: u64,
    size: u64,
    block_size: u64,
    source_version: Option<u32>,
}

async fn table_stats(
    reader: &mut Server,
    job: &Job,
    addr: &str,
) -> Result<TableStats, CopyDataError> {
    let stats = reader
        .query_rows(&format!(
            "SELECT greatest(reltuples, 0)::bigint, pg_relation_size(oid), \
                    current_setting('block_size')::bigint, \
                    current_setting('server_version_num')::bigint \
               FROM pg_class WHERE oid = {}::regclass",
            literal(&job.sql_name())
        ))
        .await
        .map_err(server_err(addr, "reading the table's size"))?;
    let stat = |i: usize| -> u64 {
        stats
            .first()
            .and_then(|r| r.get(i)?.as_deref()?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Ok(TableStats {
        estimate: stat(0),
        size: stat(1),
        block_size: stat(2).max(1),
        source_version: u32::try_from(stat(3)).ok().filter(|&v| v > 0),
    })
}

/// Extra readers for a table larger than the split size: as many as the budget has free now.
fn extra_readers(budget: &ReaderBudget, stats: &TableStats) -> Option<OwnedSemaphorePermit> {
    let split = budget.tuning.split_bytes;
    if split == 0 || stats.size <= split {
        return None;
    }
    let wanted = (stats.size / stats.block_size).min(budget.total as u64) as u32;
    (1..wanted)
        .rev()
        .find_map(|n| budget.permits.clone().try_acquire_many_owned(n).ok())
}

/// What a task of [`copy_table`] ended with.
enum Outcome {
    Read(ReadCount),
    Written(Box<Sink>),
}

type Tasks = JoinSet<Result<Outcome, CopyDataError>>;

/// One `COPY ... FROM STDIN` per target shard, each draining its channel in a task; the senders
/// by shard (`None` for shards not written).
async fn open_sinks(
    job: &Job,
    dests: &[ServerTarget],
    format: CopyFormat,
    tasks: &mut Tasks,
) -> Result<Vec<Option<mpsc::Sender<Bytes>>>, CopyDataError> {
    let copy_in = job.copy_in(format);
    let mut senders: Vec<Option<mpsc::Sender<Bytes>>> = (0..dests.len()).map(|_| None).collect();
    for &shard in &job.targets {
        let t = dests.get(shard).ok_or_else(|| SetupError::MissingShard {
            database: "destination".into(),
            shard,
        })?;
        let sink = Sink::open(shard, t, &copy_in, format).await?;
        let (tx, rx) = mpsc::channel(CHANNEL_DEPTH);
        senders[shard] = Some(tx);
        tasks.spawn(async move {
            sink.write_all(rx)
                .await
                .map(|s| Outcome::Written(Box::new(s)))
        });
    }
    Ok(senders)
}

/// Waits for every reader and writer: the open sinks and the rows read and placed.
async fn join_copy(mut tasks: Tasks, table: &str) -> Result<(Vec<Sink>, ReadCount), CopyDataError> {
    let mut sinks = Vec::new();
    let mut read = ReadCount::default();
    while let Some(joined) = tasks.join_next().await {
        let outcome = joined.map_err(|e| CopyDataError::Table {
            table: table.to_string(),
            reason: format!("copy task failed: {e}"),
        })??;
        match outcome {
            Outcome::Written(sink) => sinks.push(*sink),
            Outcome::Read(r) => {
                read.source_rows += r.source_rows;
                read.placed_rows += r.placed_rows;
            }
        }
    }
    if read.placed_rows != read.source_rows {
        return Err(CopyDataError::Table {
            table: table.to_string(),
            reason: format!(
                "the source sent {} rows but {} were placed",
                read.source_rows, read.placed_rows
            ),
        });
    }
    Ok((sinks, read))
}

/// The COPY reading one key range of a table.
fn key_range_sql(job: &Job, range: &KeyRange, format: CopyFormat) -> String {
    format!(
        "COPY (SELECT {} FROM ONLY {} WHERE {}) TO STDOUT (FORMAT {})",
        job.column_list(),
        job.sql_name(),
        range.condition(),
        format_option(format)
    )
}

/// Each shard commits its rows with its watermark row (with a slot): atomic per shard.
async fn commit_sinks(
    mut sinks: Vec<Sink>,
    progress_slot: Option<&str>,
    job: &Job,
    watermark: u64,
) -> Result<(), CopyDataError> {
    if let Some(slot) = progress_slot {
        let sql = format!(
            "INSERT INTO pgdog_reshard_progress (slot, table_name, watermark) \
             VALUES ({}, {}, {}) ON CONFLICT (slot, table_name) \
             DO UPDATE SET watermark = EXCLUDED.watermark",
            literal(&progress_key(slot, job.source_shard)),
            literal(&job.progress_name()),
            literal(&format_lsn(watermark))
        );
        for sink in sinks.iter_mut() {
            sink.server
                .execute(&sql)
                .await
                .map_err(server_err(&sink.addr, "recording the watermark"))?;
        }
    }
    sinks.sort_by_key(|s| s.shard);
    for sink in sinks {
        sink.commit().await?;
    }
    Ok(())
}

/// Copies one table from one source shard into `job.targets`; those destination shards commit
/// only when all of it arrived, each with its watermark row. On error (or when this future is
/// dropped) the connections are dropped, so every shard's transaction rolls back and the
/// temporary slot goes away.
///
/// `budget` holds the reader connections of the server read from: one permit is needed to
/// start, extra ones (taken only when free) let a table larger than `budget.tuning.split_bytes`
/// be read in that many CTID ranges at once.
pub(super) async fn copy_table(
    job: Job,
    index: usize,
    dests: Vec<ServerTarget>,
    progress_slot: Option<String>,
    progress: Option<Arc<Progress>>,
    budget: ReaderBudget,
    formats: Arc<FormatPlan>,
) -> Result<TableCopy, CopyDataError> {
    let table = job.progress_name();
    let src_addr = job.source.addr();
    let _first =
        budget
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| CopyDataError::Table {
                table: table.clone(),
                reason: format!("reader budget: {e}"),
            })?;
    let mut reader = connect(&job.source).await?;
    let stats = table_stats(&mut reader, &job, &src_addr).await?;
    let format = formats.format(stats.source_version, &job.targets);
    // A key range is one job of its own: its table's other ranges are the other readers.
    let extra = match job.range {
        Some(_) => None,
        None => extra_readers(&budget, &stats),
    };
    let estimate = match &job.range {
        Some(r) => stats.estimate / r.of.max(1) as u64,
        None => stats.estimate,
    };
    let ranges = 1 + extra.as_ref().map(|p| p.num_permits()).unwrap_or(0);

    let role = if job.from_replica {
        "replica"
    } else {
        "primary"
    };
    let tracker = progress.as_ref().map(|p| {
        let server = format!("{role} {src_addr}");
        (
            p.clone(),
            p.add_table(&table, job.source_shard, estimate, &server),
        )
    });
    if let Some((p, i)) = &tracker {
        p.update_table(*i, |t| {
            t.started = Some(Instant::now());
            t.readers = ranges;
        });
    }

    // The temporary slot and its exported snapshot; the replication connection stays open
    // (keeping the snapshot importable) until the copy is over.
    let slot_name = format!("pgdog_copy_{}_{index}", std::process::id());
    let slot = SlotOptions {
        temporary: true,
        snapshot: SnapshotAction::Export,
        ..SlotOptions::new(&slot_name)
    };
    let mut repl = ReplicationClient::connect(&job.source, CONNECT_TIMEOUT).await?;
    let created = if job.from_replica {
        repl.create_slot_on_standby(&slot, &job.primary, STANDBY_SLOT_DEADLINE)
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

    // Every reader under the slot's snapshot, each sending its rows to every shard's writer.
    prepare_reader(&mut reader, &src_addr, &snapshot, format).await?;
    let mut servers = vec![reader];
    for _ in 1..ranges {
        servers.push(snapshot_reader(&job.source, &snapshot, format).await?);
    }
    let mut tasks = Tasks::new();
    let senders = open_sinks(&job, &dests, format, &mut tasks).await?;
    let counters = Arc::new(Counters::default());
    let split = if ranges > 1 {
        let blocks = stats.size / stats.block_size;
        block_ranges(blocks, ranges).into_iter().map(Some).collect()
    } else {
        vec![None]
    };
    for (server, range) in servers.into_iter().zip(split) {
        let reader = Reader {
            server,
            addr: src_addr.clone(),
            sql: match &job.range {
                Some(r) => key_range_sql(&job, r, format),
                None => copy_out_sql(&job.sql_name(), &job.column_list(), range, format),
            },
            format,
            table: table.clone(),
            dest: job.dest.clone(),
            stays: job.stays.clone(),
            senders: senders.clone(),
            tracker: Tracker {
                counters: counters.clone(),
                progress: tracker.clone(),
            },
        };
        tasks.spawn(async move { reader.run().await.map(Outcome::Read) });
    }
    // The writers finish once every reader dropped its senders.
    drop(senders);
    let (sinks, read) = join_copy(tasks, &table).await?;
    commit_sinks(
        sinks,
        progress_slot.as_deref(),
        &job,
        created.consistent_point,
    )
    .await?;
    // Ending the replication connection drops the temporary slot.
    repl.close().await;
    let rows = read.source_rows;
    if let Some((p, i)) = &tracker {
        p.update_table(*i, |t| {
            t.rows = rows;
            t.bytes = counters.bytes();
            t.finished = Some(Instant::now());
        });
    }
    Ok(TableCopy {
        table,
        source_shard: job.source_shard,
        rows,
        watermark: created.consistent_point,
        source: src_addr,
        skipped: false,
        shards: job.targets,
        readers: ranges,
        format,
    })
}
