//! `pgdog.unique_id()`: 64-bit ids unique across every shard and every pgdog instance of a
//! fleet, time-ordered. Layout (a positive bigint): 41 bits of milliseconds since
//! 2024-01-01 UTC, 10 bits of node, 12 bits of sequence within the millisecond.
//!
//! The node is this instance's number in a database: claimed at first use in
//! `public.pgdog_unique_id_nodes` on the database's first shard (one row per `instance_id`;
//! the lowest free number; the same instance gets its number back after a restart). Every
//! pgdog serving that database sees the same table, so two instances never hold one node.
//!
//! The clock going backwards (or more than 4,096 ids in a millisecond) never repeats an id:
//! the generator keeps the last (millisecond, sequence) and moves past it, borrowing
//! milliseconds from the future until the clock catches up.
use super::pool::Pool;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// 2024-01-01T00:00:00Z in milliseconds since the Unix epoch.
const EPOCH_MS: u64 = 1_704_067_200_000;
const NODE_BITS: u32 = 10;
const SEQ_BITS: u32 = 12;
/// Node numbers: 0..1024.
pub const NODES: u16 = 1 << NODE_BITS;
const TABLE: &str = "public.pgdog_unique_id_nodes";

/// Last (millisecond << SEQ_BITS | sequence) handed out by this process.
static LAST: AtomicU64 = AtomicU64::new(0);

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
        .saturating_sub(EPOCH_MS)
}

/// The next id for `node` (0..1024).
pub fn next(node: u16) -> i64 {
    next_at(node, now_ms())
}

fn next_at(node: u16, now: u64) -> i64 {
    let fresh = now << SEQ_BITS;
    let mut last = LAST.load(Ordering::Relaxed);
    loop {
        // A later millisecond starts at sequence 0; else one past the last (which carries
        // into the next millisecond when the sequence is used up).
        let candidate = if fresh > last { fresh } else { last + 1 };
        match LAST.compare_exchange_weak(last, candidate, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => {
                let ms = candidate >> SEQ_BITS;
                let seq = candidate & ((1 << SEQ_BITS) - 1);
                let id = (ms << (NODE_BITS + SEQ_BITS))
                    | ((node as u64 & (NODES as u64 - 1)) << SEQ_BITS)
                    | seq;
                return (id & (i64::MAX as u64)) as i64;
            }
            Err(actual) => last = actual,
        }
    }
}

/// Nodes claimed so far, by database.
fn claimed() -> &'static Mutex<HashMap<String, u16>> {
    static NODES_BY_DB: OnceLock<Mutex<HashMap<String, u16>>> = OnceLock::new();
    NODES_BY_DB.get_or_init(|| Mutex::new(HashMap::new()))
}

/// This instance's node in `database`, if already claimed.
pub fn node(database: &str) -> Option<u16> {
    claimed().lock().get(database).copied()
}

/// Why no node could be claimed.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    #[error("pgdog.unique_id(): claiming a node in {TABLE} on the first shard of \"{database}\": {detail}")]
    Server { database: String, detail: String },
    #[error("pgdog.unique_id(): all {NODES} nodes of \"{database}\" are claimed by other instances (delete rows of instances that are gone from {TABLE})")]
    Full { database: String },
}

impl ClaimError {
    pub fn code(&self) -> &'static str {
        match self {
            ClaimError::Server { .. } => "58000",
            ClaimError::Full { .. } => "53400",
        }
    }
}

/// Claims (or finds again) this instance's node in `database` through its first shard's
/// primary pool.
pub async fn claim(database: &str, first_shard: &Pool, instance: &str) -> Result<u16, ClaimError> {
    if let Some(n) = node(database) {
        return Ok(n);
    }
    let err = |detail: String| ClaimError::Server {
        database: database.to_string(),
        detail,
    };
    let mut server = first_shard.get().await.map_err(|e| err(e.to_string()))?;
    let me = instance.replace('\'', "''");
    let sql = format!(
        "CREATE TABLE IF NOT EXISTS {TABLE} (node int PRIMARY KEY CHECK (node >= 0 AND node < {NODES}), instance_id text NOT NULL UNIQUE, claimed_at timestamptz NOT NULL DEFAULT now()); \
         INSERT INTO {TABLE} (node, instance_id) SELECT n, '{me}' FROM generate_series(0, {max}) n \
         WHERE NOT EXISTS (SELECT 1 FROM {TABLE} WHERE instance_id = '{me}') \
         AND n NOT IN (SELECT node FROM {TABLE}) ORDER BY n LIMIT 1 ON CONFLICT DO NOTHING; \
         SELECT node FROM {TABLE} WHERE instance_id = '{me}'",
        max = NODES - 1
    );
    // Two instances racing for one number: the loser's INSERT does nothing; it tries again.
    for _ in 0..8 {
        let row = server
            .query_row(&sql)
            .await
            .map_err(|e| err(e.to_string()))?;
        if let Some(Some(v)) = row.first() {
            let n: u16 = v
                .parse()
                .ok()
                .filter(|n| *n < NODES)
                .ok_or_else(|| err(format!("node {v} is not a number below {NODES}")))?;
            claimed().lock().insert(database.to_string(), n);
            tracing::info!("database {database}: unique id node {n} (instance {instance})");
            return Ok(n);
        }
        let full = server
            .query_row(&format!("SELECT count(*) >= {NODES} FROM {TABLE}"))
            .await
            .map_err(|e| err(e.to_string()))?;
        if full.first().cloned().flatten().as_deref() == Some("t") {
            return Err(ClaimError::Full {
                database: database.to_string(),
            });
        }
    }
    Err(err("lost the race for a free node 8 times".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(id: i64) -> (u64, u64, u64) {
        let id = id as u64;
        (
            id >> (NODE_BITS + SEQ_BITS),
            (id >> SEQ_BITS) & (NODES as u64 - 1),
            id & ((1 << SEQ_BITS) - 1),
        )
    }

    #[test]
    fn ids_are_unique_ordered_and_carry_the_node() {
        let now = now_ms();
        let a = next_at(5, now + 10_000);
        let b = next_at(5, now + 10_000);
        assert!(b > a && a > 0);
        assert_eq!(parts(a).1, 5);
        assert_eq!(parts(b).2, parts(a).2 + 1);
        // The clock going back: still after the last id.
        let c = next_at(5, now);
        assert!(c > b);
        assert_eq!(parts(c).0, now + 10_000);
        // 4,096 ids in one millisecond carry into the next.
        let mut prev = c;
        for _ in 0..5000 {
            let id = next_at(7, now + 10_000);
            assert!(id > prev);
            prev = id;
        }
        assert!(parts(prev).0 > now + 10_000);
    }
}
