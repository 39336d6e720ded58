//! Traffic counters per (user, database): transactions, queries, bytes, time spent, and
//! histograms of transaction, query and checkout-wait times. Totals only grow; the `avg_*`
//! figures of SHOW STATS come from the difference over the last `stats_period`.
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

/// Upper bounds of the histogram buckets, in microseconds (the last bucket is +Inf).
pub const BUCKETS_US: [u64; 12] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 50_000, 100_000, 500_000, 1_000_000, 5_000_000,
];

/// A latency histogram with fixed buckets.
#[derive(Debug, Default)]
pub struct Histogram {
    buckets: [AtomicU64; BUCKETS_US.len()],
    sum_us: AtomicU64,
    count: AtomicU64,
}

impl Histogram {
    pub fn observe(&self, d: Duration) {
        let us = d.as_micros().min(u64::MAX as u128) as u64;
        if let Some(i) = BUCKETS_US.iter().position(|&b| us <= b) {
            self.buckets[i].fetch_add(1, Relaxed);
        }
        self.sum_us.fetch_add(us, Relaxed);
        self.count.fetch_add(1, Relaxed);
    }

    /// Cumulative counts per bucket bound, the sum in microseconds and the count.
    pub fn snapshot(&self) -> (Vec<(u64, u64)>, u64, u64) {
        let mut cumulative = 0;
        let buckets = BUCKETS_US
            .iter()
            .zip(&self.buckets)
            .map(|(b, c)| {
                cumulative += c.load(Relaxed);
                (*b, cumulative)
            })
            .collect();
        (buckets, self.sum_us.load(Relaxed), self.count.load(Relaxed))
    }
}

/// The counters of one (user, database).
#[derive(Debug, Default)]
pub struct PoolStats {
    pub xact_count: AtomicU64,
    pub query_count: AtomicU64,
    pub received: AtomicU64,
    pub sent: AtomicU64,
    pub xact_time_us: AtomicU64,
    pub query_time_us: AtomicU64,
    pub wait_time_us: AtomicU64,
    pub xact_time: Histogram,
    pub query_time: Histogram,
    pub wait_time: Histogram,
}

/// Totals at one moment (SHOW STATS_TOTALS), or their rate over a period (averages).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub xact_count: u64,
    pub query_count: u64,
    pub received: u64,
    pub sent: u64,
    pub xact_time_us: u64,
    pub query_time_us: u64,
    pub wait_time_us: u64,
}

impl PoolStats {
    pub fn totals(&self) -> Totals {
        Totals {
            xact_count: self.xact_count.load(Relaxed),
            query_count: self.query_count.load(Relaxed),
            received: self.received.load(Relaxed),
            sent: self.sent.load(Relaxed),
            xact_time_us: self.xact_time_us.load(Relaxed),
            query_time_us: self.query_time_us.load(Relaxed),
            wait_time_us: self.wait_time_us.load(Relaxed),
        }
    }
}

impl Totals {
    fn add(&mut self, o: &Totals) {
        self.xact_count += o.xact_count;
        self.query_count += o.query_count;
        self.received += o.received;
        self.sent += o.sent;
        self.xact_time_us += o.xact_time_us;
        self.query_time_us += o.query_time_us;
        self.wait_time_us += o.wait_time_us;
    }

    /// PgBouncer's averages between two snapshots `secs` apart: counts and bytes per second,
    /// times per transaction / query (microseconds); wait time per query.
    pub fn averages(&self, before: &Totals, secs: f64) -> Totals {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        let per_sec = |v: u64| (v as f64 / secs.max(0.001)).round() as u64;
        let per = |v: u64, n: u64| v.checked_div(n).unwrap_or(0);
        let xacts = d(self.xact_count, before.xact_count);
        let queries = d(self.query_count, before.query_count);
        Totals {
            xact_count: per_sec(xacts),
            query_count: per_sec(queries),
            received: per_sec(d(self.received, before.received)),
            sent: per_sec(d(self.sent, before.sent)),
            xact_time_us: per(d(self.xact_time_us, before.xact_time_us), xacts),
            query_time_us: per(d(self.query_time_us, before.query_time_us), queries),
            wait_time_us: per(d(self.wait_time_us, before.wait_time_us), queries),
        }
    }
}

type Key = (String, String);

static POOLS: LazyLock<Mutex<HashMap<Key, Arc<PoolStats>>>> = LazyLock::new(Default::default);

/// The counters of (user, database), created on first use.
pub fn pool(user: &str, database: &str) -> Arc<PoolStats> {
    POOLS
        .lock()
        .entry((user.to_string(), database.to_string()))
        .or_default()
        .clone()
}

/// Every (user, database) with counters, sorted.
pub fn pools() -> Vec<(Key, Arc<PoolStats>)> {
    let mut v: Vec<_> = POOLS
        .lock()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// Totals per database (all its users), sorted by name.
pub fn by_database() -> Vec<(String, Totals)> {
    let mut out: Vec<(String, Totals)> = Vec::new();
    for ((_, db), stats) in pools() {
        let t = stats.totals();
        match out.iter_mut().find(|(d, _)| *d == db) {
            Some((_, acc)) => acc.add(&t),
            None => out.push((db, t)),
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Snapshots per database at the start and end of the last complete period.
struct Period {
    start: Instant,
    at_start: HashMap<String, Totals>,
    last: HashMap<String, Totals>,
}

static PERIOD: LazyLock<Mutex<Period>> = LazyLock::new(|| {
    Mutex::new(Period {
        start: Instant::now(),
        at_start: HashMap::new(),
        last: HashMap::new(),
    })
});

/// Closes a stats period: the averages shown until the next one are over it.
pub fn roll_period() {
    let now: HashMap<String, Totals> = by_database().into_iter().collect();
    let mut p = PERIOD.lock();
    let secs = p.start.elapsed().as_secs_f64();
    p.last = now
        .iter()
        .map(|(db, t)| {
            let before = p.at_start.get(db).copied().unwrap_or_default();
            (db.clone(), t.averages(&before, secs))
        })
        .collect();
    p.at_start = now;
    p.start = Instant::now();
}

/// The averages of the last complete period for `database` (zero before the first one).
pub fn averages(database: &str) -> Totals {
    PERIOD
        .lock()
        .last
        .get(database)
        .copied()
        .unwrap_or_default()
}

/// Rolls the stats period every `period` until the process ends.
pub async fn roll_every(period: impl Fn() -> Duration) {
    loop {
        // Read each time: a reload's `stats_period` takes effect at the next roll.
        tokio::time::sleep(period()).await;
        roll_period();
        if crate::config::active().log_stats {
            log_period();
        }
    }
}

/// `log_stats`: PgBouncer's line per database for the period that just ended (counts and
/// bytes per second, times in microseconds).
fn log_period() {
    let last = PERIOD.lock().last.clone();
    let mut databases: Vec<_> = last.into_iter().collect();
    databases.sort_by(|a, b| a.0.cmp(&b.0));
    for (database, a) in databases {
        tracing::info!(
            database = %database,
            "stats: {} xacts/s, {} queries/s, in {} B/s, out {} B/s, xact {} us, query {} us, wait {} us",
            a.xact_count,
            a.query_count,
            a.received,
            a.sent,
            a.xact_time_us,
            a.query_time_us,
            a.wait_time_us
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_is_cumulative() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(50));
        h.observe(Duration::from_micros(300));
        h.observe(Duration::from_secs(10));
        let (b, sum, count) = h.snapshot();
        assert_eq!(b[0], (100, 1));
        assert_eq!(b[2], (500, 2));
        assert_eq!(b.last(), Some(&(5_000_000, 2)));
        assert_eq!(count, 3);
        assert_eq!(sum, 10_000_350);
    }

    #[test]
    fn averages_are_rates_and_means() {
        let before = Totals::default();
        let now = Totals {
            xact_count: 20,
            query_count: 40,
            received: 1000,
            sent: 3000,
            xact_time_us: 2000,
            query_time_us: 4000,
            wait_time_us: 400,
        };
        let a = now.averages(&before, 10.0);
        assert_eq!(
            (a.xact_count, a.query_count, a.received, a.sent),
            (2, 4, 100, 300)
        );
        assert_eq!(
            (a.xact_time_us, a.query_time_us, a.wait_time_us),
            (100, 100, 10)
        );
    }
}
