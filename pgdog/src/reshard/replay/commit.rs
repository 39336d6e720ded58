//! Committing a batch: every result checked first, then (for batches touching several shards
//! in `--atomic` mode) two-phase commit, and the resolution of a crashed run's prepared
//! transactions.
use super::*;

impl Applier {
    /// Reads every result of the batch's statements before anything commits: an error, a
    /// change that found no row, or a DELETE by identity that did not find exactly one row
    /// across the shards rolls the batch back on every shard (the position is not written, so a
    /// rerun meets the same change) and stops the replay naming it.
    pub(super) async fn check_results(&mut self, batch: &Batch) -> Result<(), ReplayError> {
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
        // The DELETEs by identity of the batch: exactly one row each across the shards.
        let failure = failure.or_else(|| self.check_deferred().err());
        match failure {
            None => Ok(()),
            Some(e) => Err(self.roll_back(&batch.touched, e).await),
        }
    }

    /// Rolls back the open transaction on `touched` (the batch's shards) after `e` (what is
    /// pending there is read and dropped), so nothing of the batch commits and the position
    /// stays; returns `e`.
    pub(super) async fn roll_back(
        &mut self,
        touched: &BTreeSet<usize>,
        e: ReplayError,
    ) -> ReplayError {
        self.counts.clear();
        for &s in touched {
            let shard = &mut self.shards[s];
            if shard.send_query("ROLLBACK").await.is_ok() {
                let _ = shard.read_pending(0, true).await;
            }
        }
        e
    }

    /// Two-phase commit of a batch touching several shards: PREPARE TRANSACTION on each
    /// (the position row included), then COMMIT PREPARED on each. After a crash,
    /// [`resolve_prepared`] commits the leftovers of a transaction committed on some shard and
    /// rolls back those of one committed nowhere.
    pub(super) async fn commit_two_phase(
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
pub(super) fn gid(key: &str, end_lsn: u64, shard: usize) -> String {
    format!("{}{end_lsn:X}_{shard}", gid_prefix(key))
}

pub(super) fn gid_prefix(key: &str) -> String {
    format!("pgdog_replay_{key}_")
}

/// The end LSN in a gid of this stream (`None`: not one of ours).
pub(super) fn gid_lsn(key: &str, gid: &str) -> Option<u64> {
    let rest = gid.strip_prefix(&gid_prefix(key))?;
    let (lsn, shard) = rest.split_once('_')?;
    shard.parse::<usize>().ok()?;
    u64::from_str_radix(lsn, 16).ok()
}

/// Finishes the two-phase commits a crashed run left on the destination shards: a transaction
/// committed on some shard (its end LSN is at most the furthest shard's position) is committed
/// on the others; one committed nowhere is rolled back (the replay sends it again).
/// Returns (committed, rolled back).
pub(super) async fn resolve_prepared(
    shards: &mut [Shard],
    key: &str,
) -> Result<(u64, u64), ReplayError> {
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

/// Two-phase transactions so far in this process, for the `PGDOG_TEST_ABORT_IN_2PC` hook.
pub(super) static ATOMIC_COMMITS: AtomicU64 = AtomicU64::new(0);
