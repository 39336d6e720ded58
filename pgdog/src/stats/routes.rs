//! The routes report (`dry_run`): per database and statement shape (pg_query fingerprint),
//! calls, time and the verdicts the router gave them (`router::verdict`). Read by the admin
//! database's SHOW ROUTES, cleared by RESET ROUTES, summed in metrics.
//!
//! One entry per shape, at most `MAX_SHAPES` in all: further shapes are counted together
//! under one entry so memory stays bounded whatever the traffic.
use crate::router::cache::Fingerprint;
use crate::router::verdict::{Verdict, VerdictKind};
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, LazyLock};

/// The columns of the report (admin SHOW ROUTES), in order; `pgdog readiness` reads them by name.
pub const COLUMNS: &[&str] = &[
    "database",
    "fingerprint",
    "query",
    "calls",
    "calls_pct",
    "time_us",
    "time_pct",
    "verdict",
    "reason",
    "session",
    "one_shard",
    "several_shards",
    "all_shards",
    "refused",
];

/// Shapes kept per process; the rest share one entry.
pub const MAX_SHAPES: usize = 10_000;
/// Bytes of a shape's sample text kept.
const MAX_SAMPLE: usize = 1024;
/// The fingerprint of the entry the shapes past `MAX_SHAPES` share.
const OVERFLOW: u64 = 0;

/// One shape's counters.
#[derive(Debug)]
pub struct RouteEntry {
    pub database: Arc<str>,
    pub fingerprint: u64,
    pub sample: String,
    calls: AtomicU64,
    time_us: AtomicU64,
    /// Calls per verdict kind (`VerdictKind::index`).
    by_kind: [AtomicU64; 5],
    /// The worst kind seen (its index + 1; 0: none yet) and its reason.
    worst: AtomicU8,
    reason: Mutex<String>,
}

impl RouteEntry {
    fn new(database: Arc<str>, fingerprint: u64, sample: String) -> RouteEntry {
        RouteEntry {
            database,
            fingerprint,
            sample,
            calls: AtomicU64::new(0),
            time_us: AtomicU64::new(0),
            by_kind: Default::default(),
            worst: AtomicU8::new(0),
            reason: Mutex::new(String::new()),
        }
    }

    fn count(&self, verdict: &Verdict) {
        self.calls.fetch_add(1, Relaxed);
        self.by_kind[verdict.kind.index()].fetch_add(1, Relaxed);
        let rank = verdict.kind.index() as u8 + 1;
        if rank > self.worst.load(Relaxed) {
            let mut reason = self.reason.lock();
            if rank > self.worst.load(Relaxed) {
                *reason = verdict.reason.clone();
                self.worst.store(rank, Relaxed);
            }
        }
    }

    /// Time the statement's request took, in microseconds.
    pub fn add_time(&self, us: u64) {
        self.time_us.fetch_add(us, Relaxed);
    }
}

/// A copy of one entry for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteRow {
    pub database: String,
    pub fingerprint: u64,
    pub sample: String,
    pub calls: u64,
    pub time_us: u64,
    pub by_kind: [u64; 5],
    /// The worst verdict seen and its reason.
    pub verdict: Option<VerdictKind>,
    pub reason: String,
}

type Key = (Arc<str>, u64);

/// foldhash rather than SipHash: the lookup is on every statement of a dry run.
type Table = HashMap<Key, Arc<RouteEntry>, foldhash::fast::RandomState>;

static TABLE: LazyLock<RwLock<Table>> = LazyLock::new(|| RwLock::new(Table::default()));

/// Counts one call of `shape` in `database` with its verdict; the entry takes the request's
/// time later (`RouteEntry::add_time`).
pub fn record(database: &Arc<str>, shape: &Fingerprint, verdict: &Verdict) -> Arc<RouteEntry> {
    let entry = entry(database, shape);
    entry.count(verdict);
    entry
}

fn entry(database: &Arc<str>, shape: &Fingerprint) -> Arc<RouteEntry> {
    let key = (database.clone(), shape.value);
    if let Some(e) = TABLE.read().get(&key) {
        return e.clone();
    }
    let mut table = TABLE.write();
    let key = if table.len() >= MAX_SHAPES && !table.contains_key(&key) {
        (database.clone(), OVERFLOW)
    } else {
        key
    };
    let sample = if key.1 == OVERFLOW {
        format!("(other shapes past the first {MAX_SHAPES})")
    } else {
        cut(&shape.sample)
    };
    table
        .entry(key)
        .or_insert_with_key(|k| Arc::new(RouteEntry::new(k.0.clone(), k.1, sample)))
        .clone()
}

/// A sample kept to `MAX_SAMPLE` bytes (a long VALUES list makes a long one).
fn cut(sample: &str) -> String {
    if sample.len() <= MAX_SAMPLE {
        return sample.to_string();
    }
    let mut end = MAX_SAMPLE;
    while !sample.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &sample[..end])
}

/// Every entry, by calls (most first).
pub fn rows() -> Vec<RouteRow> {
    let mut rows: Vec<RouteRow> = TABLE
        .read()
        .values()
        .map(|e| {
            let worst = e.worst.load(Relaxed);
            RouteRow {
                database: e.database.to_string(),
                fingerprint: e.fingerprint,
                sample: e.sample.clone(),
                calls: e.calls.load(Relaxed),
                time_us: e.time_us.load(Relaxed),
                by_kind: std::array::from_fn(|i| e.by_kind[i].load(Relaxed)),
                verdict: (worst > 0).then(|| VerdictKind::ALL[worst as usize - 1]),
                reason: e.reason.lock().clone(),
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.calls
            .cmp(&a.calls)
            .then_with(|| a.database.cmp(&b.database))
            .then_with(|| a.fingerprint.cmp(&b.fingerprint))
    });
    rows
}

/// RESET ROUTES: forgets every shape. Sessions holding an entry for a request in flight add
/// its time to the forgotten entry.
pub fn reset() {
    TABLE.write().clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(value: u64, sample: &str) -> Fingerprint {
        Fingerprint {
            value,
            sample: sample.into(),
        }
    }

    #[test]
    fn counts_and_worst_verdict() {
        let db: Arc<str> = Arc::from("routes_test_db");
        let one = Verdict {
            kind: VerdictKind::OneShard,
            reason: String::new(),
        };
        let all = Verdict {
            kind: VerdictKind::AllShards,
            reason: "no filter".into(),
        };
        let s = shape(0xfeed, "SELECT $1");
        record(&db, &s, &one).add_time(10);
        record(&db, &s, &all).add_time(5);
        record(&db, &s, &one);
        let row = rows()
            .into_iter()
            .find(|r| r.database == "routes_test_db")
            .unwrap();
        assert_eq!(row.calls, 3);
        assert_eq!(row.time_us, 15);
        assert_eq!(row.by_kind[VerdictKind::OneShard.index()], 2);
        assert_eq!(row.by_kind[VerdictKind::AllShards.index()], 1);
        assert_eq!(row.verdict, Some(VerdictKind::AllShards));
        assert_eq!(row.reason, "no filter");
    }
}
