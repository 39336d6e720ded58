//! Two-phase commit across shards, all-or-nothing across crashes.
//!
//! The coordinator (a sharded session's COMMIT) prepares every participant but the first
//! (`PREPARE TRANSACTION`), then records the decision in the first participant's own
//! transaction (`INSERT INTO public.pgdog_twophase ... 'commit'`) and commits it there in one phase:
//! the first participant's writes and the decision commit together or not at all. Only then
//! does it `COMMIT PREPARED` the others. Recovery of a prepared branch asks the first
//! participant: it inserts an `'abort'` row for the transaction (`ON CONFLICT DO NOTHING`: it
//! waits for a decision being written, and loses to one that committed) and reads the outcome,
//! so a transaction without a recorded decision is rolled back everywhere, never half-committed.
//!
//! Transaction ids carry the pgdog instance (`instance_id`, or one generated at first start and
//! kept next to pgdog.toml), not a PID: recovery touches only this instance's transactions,
//! skips the ones this process is still committing, and runs at start and on a timer.
use super::Pool;
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;

/// The decision table, created on every shard of a database with `two_phase_commit`.
pub const DDL: &str = "CREATE TABLE IF NOT EXISTS public.pgdog_twophase (txn text PRIMARY KEY, \
    outcome text NOT NULL, at timestamptz NOT NULL DEFAULT now())";

const PREFIX: &str = "pgdogtx_";

/// One cross-shard transaction of this instance: `<instance>_<n>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Txn {
    pub instance: String,
    pub n: u64,
}

impl Txn {
    /// Its key in `pgdog_twophase`.
    pub fn key(&self) -> String {
        format!("{}_{}", self.instance, self.n)
    }

    /// The gid of its branch on `shard`: `pgdogtx_<instance>_<n>_<shard>_<participants>`.
    pub fn gid(&self, shard: usize, participants: &[usize]) -> String {
        let list: Vec<String> = participants.iter().map(|s| s.to_string()).collect();
        format!("{PREFIX}{}_{shard}_{}", self.key(), list.join("."))
    }
}

/// A parsed gid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gid {
    pub txn: Txn,
    pub shard: usize,
    pub participants: Vec<usize>,
}

pub fn parse_gid(gid: &str) -> Option<Gid> {
    let rest = gid.strip_prefix(PREFIX)?;
    let mut parts = rest.splitn(4, '_');
    let instance = parts.next()?.to_string();
    let n = parts.next()?.parse().ok()?;
    let shard = parts.next()?.parse().ok()?;
    let participants = parts
        .next()?
        .split('.')
        .map(|s| s.parse().ok())
        .collect::<Option<Vec<usize>>>()?;
    Some(Gid {
        txn: Txn { instance, n },
        shard,
        participants,
    })
}

static INSTANCE: Mutex<String> = Mutex::new(String::new());
/// Unique across restarts: the start time in milliseconds times a million, plus a counter.
static NEXT: LazyLock<AtomicU64> = LazyLock::new(|| {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    AtomicU64::new(ms.saturating_mul(1_000_000))
});
static IN_FLIGHT: LazyLock<Mutex<HashSet<u64>>> = LazyLock::new(Default::default);

/// Sets this instance's id (letters and digits).
pub fn set_instance(id: &str) {
    *INSTANCE.lock() = id.to_string();
}

pub fn instance() -> String {
    let id = INSTANCE.lock().clone();
    if id.is_empty() {
        "pgdog".into()
    } else {
        id
    }
}

/// A transaction being committed by this process (recovery leaves it alone until dropped).
pub struct InFlight(pub Txn);

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.lock().remove(&self.0.n);
    }
}

/// A new transaction id, marked in flight.
pub fn begin() -> InFlight {
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    IN_FLIGHT.lock().insert(n);
    InFlight(Txn {
        instance: instance(),
        n,
    })
}

/// The statement recording the commit decision (run inside the first participant's transaction).
pub fn decision_sql(txn: &Txn) -> String {
    format!(
        "INSERT INTO public.pgdog_twophase (txn, outcome) VALUES ('{}', 'commit')",
        txn.key()
    )
}

/// Creates the decision table on every shard (`pools` in shard order).
pub async fn prepare_tables(database: &str, pools: &[Pool]) {
    for (shard, pool) in pools.iter().enumerate() {
        let created = match pool.get().await {
            Ok(mut server) => server.execute(DDL).await.map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = created {
            tracing::warn!(
                "two-phase commit: {database} shard {shard}: creating pgdog_twophase: {e}"
            );
        }
    }
}

/// This instance's prepared branches on each shard, by transaction (in-flight ones skipped).
async fn prepared_branches(
    database: &str,
    pools: &[Pool],
) -> BTreeMap<Txn, Vec<(usize, Gid, String)>> {
    let me = instance();
    let mut by_txn: BTreeMap<Txn, Vec<(usize, Gid, String)>> = BTreeMap::new();
    for (shard, pool) in pools.iter().enumerate() {
        let row = match pool.get().await {
            Ok(mut server) => server
                .query_row(&format!(
                    "SELECT string_agg(gid, ' ') FROM pg_catalog.pg_prepared_xacts WHERE gid LIKE '{}%' AND database = current_database()",
                    PREFIX.replace('_', "\\_")
                ))
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        let row = match row {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!("two-phase recovery: {database} shard {shard}: {e}");
                continue;
            }
        };
        for text in row.into_iter().flatten() {
            for g in text.split(' ') {
                let Some(parsed) = parse_gid(g) else { continue };
                if parsed.txn.instance != me || parsed.shard != shard {
                    continue;
                }
                by_txn
                    .entry(parsed.txn.clone())
                    .or_default()
                    .push((shard, parsed, g.to_string()));
            }
        }
    }
    // Transactions in flight now are skipped: read after the shards, so a transaction that
    // began (and prepared) while they were read is known here (read before, a coordinator's
    // live transaction could be taken for a crashed one and aborted under it).
    let in_flight = IN_FLIGHT.lock().clone();
    by_txn.retain(|txn, _| !in_flight.contains(&txn.n));
    by_txn
}

/// The outcome of `txn` as recorded on its first participant, recording `'abort'` when nothing
/// is (waiting for a decision being written). `None`: the first participant cannot be asked.
async fn outcome(pool: &Pool, txn: &Txn) -> Option<bool> {
    let mut server = pool.get().await.ok()?;
    let key = txn.key();
    let sql = format!(
        "INSERT INTO public.pgdog_twophase (txn, outcome) VALUES ('{key}', 'abort') ON CONFLICT (txn) DO NOTHING; \
         SELECT outcome FROM public.pgdog_twophase WHERE txn = '{key}'"
    );
    match server.query_row(&sql).await {
        Ok(row) => Some(row.first().cloned().flatten().as_deref() == Some("commit")),
        Err(e) => {
            tracing::warn!("two-phase recovery: reading the decision of {key}: {e}");
            None
        }
    }
}

/// Resolves this instance's in-doubt transactions on the shards of one database (`pools`, in
/// shard order), then forgets decisions no branch needs. Returns (committed, rolled back)
/// branches.
pub async fn recover(database: &str, pools: &[Pool]) -> (usize, usize) {
    // Decisions recorded before the scan of prepared branches: a decision is written only once
    // every other branch is prepared, so the scan sees every branch one of these still needs.
    // Only these may be forgotten afterwards; a decision recorded after this read can belong
    // to a coordinator still committing (here, or in another process with the same
    // instance_id), whose remaining branches would otherwise lose it and be rolled back.
    let recorded = recorded_decisions(pools).await;
    let found = prepared_branches(database, pools).await;
    // Test hook: a pause between the scan and the rest, for a coordinator to commit meanwhile.
    #[cfg(feature = "failpoints")]
    if let Some(ms) = fail::eval("2pc-recovery-after-scan", |arg| {
        arg.and_then(|a| a.parse::<u64>().ok()).unwrap_or(1000)
    }) {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    let (mut committed, mut rolled_back) = (0, 0);
    let mut unresolved: HashSet<String> = HashSet::new();
    for (txn, branches) in &found {
        let first = branches[0].1.participants.first().copied().unwrap_or(0);
        let Some(commit) = (match pools.get(first) {
            Some(pool) => outcome(pool, txn).await,
            None => None,
        }) else {
            unresolved.insert(txn.key());
            continue;
        };
        let verb = if commit { "COMMIT" } else { "ROLLBACK" };
        for (shard, _, gid) in branches {
            let Some(pool) = pools.get(*shard) else {
                continue;
            };
            let done = match pool.get().await {
                Ok(mut server) => server
                    .execute(&format!("{verb} PREPARED '{gid}'"))
                    .await
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            match done {
                Ok(()) => {
                    tracing::info!(
                        "two-phase recovery: {verb} PREPARED '{gid}' on {database} shard {shard}"
                    );
                    if commit {
                        committed += 1;
                    } else {
                        rolled_back += 1;
                    }
                }
                Err(e) => {
                    unresolved.insert(txn.key());
                    tracing::error!("two-phase recovery: {verb} PREPARED '{gid}': {e}");
                }
            }
        }
    }
    forget_decisions(pools, &recorded, &unresolved).await;
    (committed, rolled_back)
}

/// This instance's decisions on each shard (by pool index); none where the table is missing or
/// the shard cannot be asked.
async fn recorded_decisions(pools: &[Pool]) -> Vec<Vec<String>> {
    let sql = format!(
        "SELECT string_agg(txn, ' ') FROM public.pgdog_twophase WHERE txn LIKE '{}\\_%'",
        instance().replace('_', "\\_")
    );
    let mut out = Vec::with_capacity(pools.len());
    for pool in pools {
        let row = match pool.get().await {
            Ok(mut server) => server.query_row(&sql).await.ok(),
            Err(_) => None,
        };
        let keys = row
            .into_iter()
            .flatten()
            .flatten()
            .flat_map(|text| text.split(' ').map(str::to_string).collect::<Vec<_>>())
            .collect();
        out.push(keys);
    }
    out
}

/// Deletes the decisions read before the scan (`recorded`, by pool index) that no prepared
/// branch needs any more (not those of transactions in flight or left unresolved).
async fn forget_decisions(pools: &[Pool], recorded: &[Vec<String>], keep: &HashSet<String>) {
    let me = instance();
    let mut keep: Vec<String> = keep.iter().cloned().collect();
    keep.extend(IN_FLIGHT.lock().iter().map(|n| {
        Txn {
            instance: me.clone(),
            n: *n,
        }
        .key()
    }));
    // Every branch of these that was still prepared at the scan was resolved or is kept: the
    // other decisions are history.
    for (pool, keys) in pools.iter().zip(recorded) {
        let list: Vec<String> = keys
            .iter()
            .filter(|k| !keep.contains(k) && is_key(k))
            .map(|k| format!("'{k}'"))
            .collect();
        if list.is_empty() {
            continue;
        }
        let sql = format!(
            "DELETE FROM public.pgdog_twophase WHERE txn IN ({})",
            list.join(", ")
        );
        if let Ok(mut server) = pool.get().await {
            let _ = server.execute(&sql).await;
        }
    }
}

/// Whether a key read from `pgdog_twophase` is one pgdog wrote (safe to quote in SQL).
fn is_key(k: &str) -> bool {
    !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gids_round_trip() {
        let txn = Txn {
            instance: "a1b2".into(),
            n: 7,
        };
        let g = txn.gid(1, &[0, 1, 2]);
        assert_eq!(g, "pgdogtx_a1b2_7_1_0.1.2");
        assert_eq!(
            parse_gid(&g),
            Some(Gid {
                txn: txn.clone(),
                shard: 1,
                participants: vec![0, 1, 2]
            })
        );
        assert_eq!(parse_gid("pgdog_42_7_1_0.1"), None);
        assert_eq!(txn.key(), "a1b2_7");
    }

    #[test]
    fn transaction_ids_are_unique_and_in_flight() {
        let a = begin();
        let b = begin();
        assert_ne!(a.0.n, b.0.n);
        assert!(IN_FLIGHT.lock().contains(&a.0.n));
        let n = a.0.n;
        drop(a);
        assert!(!IN_FLIGHT.lock().contains(&n));
    }
}
