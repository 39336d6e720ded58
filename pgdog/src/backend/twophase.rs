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
//!
//! Two processes of one instance run side by side during a zero-downtime restart. Each holds a
//! lease for its own transactions, a session advisory lock on the first shard keyed by the
//! instance and the process' start (which every id it makes carries): recovery leaves the
//! transactions of a process whose lease is held alone, and resolves those of a process that
//! is gone (its connection, and so its lock, went with it).
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
/// This process' start in milliseconds: the high part of its transaction ids.
static START_MS: LazyLock<u64> = LazyLock::new(|| {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
});
static COUNTER: AtomicU64 = AtomicU64::new(0);
static IN_FLIGHT: LazyLock<Mutex<HashSet<u64>>> = LazyLock::new(Default::default);

/// Ids a process makes: its start in milliseconds times a million, plus a counter that wraps
/// at a million (a decision row is forgotten long before its key comes round again), so an id
/// names the process that made it.
const PER_PROCESS: u64 = 1_000_000;

/// The process that made transaction number `n` (its start in milliseconds).
fn owner(n: u64) -> u64 {
    n / PER_PROCESS
}

/// The advisory lock key of the lease of process `owner` of `instance` (FNV-1a: the same in
/// every process).
fn lease_key(instance: &str, owner: u64) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in format!("pgdog_twophase {instance} {owner}").bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h as i64
}

/// The statement taking this process' lease (held by the connection that runs it).
pub fn lease_sql() -> String {
    format!(
        "SELECT pg_advisory_lock({})",
        lease_key(&instance(), *START_MS)
    )
}

/// Whether the process that made `txn` still holds its lease (asked on the first shard's
/// `pool`); an error counts as alive (its transactions wait for the next pass).
async fn owner_alive(pool: &Pool, txn: &Txn) -> bool {
    let key = lease_key(&txn.instance, owner(txn.n));
    let sql = format!("SELECT pg_try_advisory_lock({key}) AND pg_advisory_unlock({key})");
    match pool.get().await {
        Ok(mut server) => match server.query_row(&sql).await {
            Ok(row) => row.first().cloned().flatten().as_deref() != Some("t"),
            Err(_) => true,
        },
        Err(_) => true,
    }
}

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
    let n = START_MS.saturating_mul(PER_PROCESS)
        + COUNTER.fetch_add(1, Ordering::Relaxed) % PER_PROCESS;
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
    let me = *START_MS;
    for (txn, branches) in &found {
        // Another live process of this instance is committing it (its lease is held).
        let alive = match pools.first() {
            Some(lease_pool) if owner(txn.n) != me => owner_alive(lease_pool, txn).await,
            _ => false,
        };
        if alive {
            unresolved.insert(txn.key());
            continue;
        }
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
