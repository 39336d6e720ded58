//! Parsed statements cached per query text (an LRU), so the extended protocol parses a
//! statement once and routes each Bind by its values.
use super::RouterError;
use crate::merge::{self, CrossShardPlan};
use lru::LruCache;
use parking_lot::Mutex;
use pg_query_raw::router::Statement;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// One query text, parsed; cross-shard plans are made on first need.
#[derive(Debug)]
pub struct Parsed {
    pub statements: Vec<Statement>,
    plans: Vec<OnceLock<Result<Arc<CrossShardPlan>, String>>>,
    /// `/* pgdog_shard: N */` in the text.
    pub shard_comment: Option<usize>,
    /// `/* pgdog_sharding_key: V */` in the text.
    pub key_comment: Option<String>,
    /// Per statement, what all texts of one shape (`shapes`) share, made on first need.
    calls: Calls,
}

/// Per statement of a text, made on first need and shared by the texts of one shape: every
/// function it calls (see `Parsed::calls`) and its fingerprint (see `Parsed::fingerprint`).
#[derive(Debug, Default)]
pub(super) struct PerStatement {
    calls: OnceLock<Vec<String>>,
    fingerprint: OnceLock<Option<Arc<Fingerprint>>>,
}

pub(super) type Calls = Arc<Vec<PerStatement>>;

/// [`Parsed::calls`] of `statements` (a parse, or a shape's) whose shared lists are `calls`.
pub(super) fn calls_in<'a>(
    calls: &'a Calls,
    statements: &[Statement],
    i: usize,
    sql: &str,
) -> &'a [String] {
    let (Some(cell), Some(st)) = (calls.get(i), statements.get(i)) else {
        return &[];
    };
    cell.calls.get_or_init(|| {
        let mut names: Vec<String> = pg_query_raw::parse(sql)
            .map(|r| r.call_functions())
            .unwrap_or_default();
        // libpg_query's walk skips INSERT ... VALUES rows.
        let mut funcs = Vec::new();
        st.values
            .iter()
            .flatten()
            .for_each(|e| e.functions(&mut funcs));
        names.extend(funcs.iter().map(|f| f.name.clone()));
        names.iter().map(|f| f.to_ascii_lowercase()).collect()
    })
}

/// A statement's shape as the routes report names it: pg_query's fingerprint (constants and
/// their count in lists ignored) and a sample text with its constants replaced by `$n`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    pub value: u64,
    pub sample: String,
}

impl Parsed {
    pub fn new(sql: &str) -> Result<Parsed, RouterError> {
        let statements = pg_query_raw::router::parse(sql).map_err(RouterError::Syntax)?;
        let calls = Arc::new(statements.iter().map(|_| PerStatement::default()).collect());
        Ok(Parsed::with_calls(sql, statements, calls))
    }

    /// `sql` as `statements` (its parse), with the function lists of its shape.
    pub(super) fn with_calls(sql: &str, statements: Vec<Statement>, calls: Calls) -> Parsed {
        let plans = statements.iter().map(|_| OnceLock::new()).collect();
        let mut parsed = Parsed {
            statements,
            plans,
            shard_comment: None,
            key_comment: None,
            calls,
        };
        parsed.read_comments(sql);
        parsed
    }

    /// This parse, whose statements were filled in for `sql` (another text of its shape), made
    /// over for it: merge plans dropped, comments read again (a literal may hold one).
    pub(super) fn renew(&mut self, sql: &str) {
        self.plans.iter_mut().for_each(|p| *p = OnceLock::new());
        self.read_comments(sql);
    }

    fn read_comments(&mut self, sql: &str) {
        // Most texts have no comment: one look for `/*`, cheaper than the names.
        let comments = memchr::memmem::find(sql.as_bytes(), b"/*").is_some();
        self.shard_comment = comments
            .then(|| comment_value(sql, "pgdog_shard"))
            .flatten()
            .and_then(|v| v.parse().ok());
        self.key_comment = comments
            .then(|| comment_value(sql, "pgdog_sharding_key"))
            .flatten();
    }

    /// The function lists, to share with the other texts of this one's shape.
    pub(super) fn shared_calls(&self) -> Calls {
        self.calls.clone()
    }

    /// The functions statement `i` (whose text is `sql`) calls anywhere: targets, WHERE,
    /// FROM, VALUES, CALL, nested queries (libpg_query's own walk over the whole tree); lower
    /// case, with their schema when the call names one (`pg_catalog.now`).
    pub fn calls(&self, i: usize, sql: &str) -> &[String] {
        calls_in(&self.calls, &self.statements, i, sql)
    }

    /// The fingerprint of statement `i` (whose text is `sql`), made once per shape; `None`
    /// when libpg_query cannot fingerprint it.
    pub fn fingerprint(&self, i: usize, sql: &str) -> Option<Arc<Fingerprint>> {
        self.calls
            .get(i)?
            .fingerprint
            .get_or_init(|| {
                let value = pg_query_raw::fingerprint(sql, 0).ok()?.value;
                let sample = pg_query_raw::normalize(sql).unwrap_or_else(|_| sql.to_string());
                Some(Arc::new(Fingerprint { value, sample }))
            })
            .clone()
    }

    /// The text of statement `i` within `sql` (the text this was parsed from); all of `sql`
    /// when its range does not fit.
    pub fn statement_text<'a>(&self, i: usize, sql: &'a str) -> &'a str {
        self.statements
            .get(i)
            .and_then(|st| sql.get(st.location..st.location + st.len))
            .unwrap_or(sql)
    }

    /// The cross-shard plan of statement `i` (whose text is `sql`).
    pub fn plan(&self, i: usize, sql: &str) -> Result<Arc<CrossShardPlan>, RouterError> {
        let Some(cell) = self.plans.get(i) else {
            return Err(RouterError::Invalid(format!("no statement {i}")));
        };
        cell.get_or_init(|| {
            merge::plan(sql)
                .map(Arc::new)
                .map_err(|e| format!("{}\u{0}{e}", e.code()))
        })
        .clone()
        .map_err(|e| {
            let (code, message) = e.split_once('\u{0}').unwrap_or(("0A000", &e));
            if code == "0A000" {
                RouterError::Unsupported(message.to_string())
            } else {
                RouterError::Invalid(message.to_string())
            }
        })
    }
}

/// Statements this long are parsed with the worker thread handed over
/// (`block_in_place`): other clients' tasks move to another worker meanwhile.
const LARGE_SQL: usize = 64 * 1024;

pub(super) fn parse_off_the_workers(sql: &str) -> Result<Parsed, RouterError> {
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if sql.len() >= LARGE_SQL && multi_thread {
        tokio::task::block_in_place(|| Parsed::new(sql))
    } else {
        Parsed::new(sql)
    }
}

/// `/* name: value */` anywhere in a comment of `sql`.
fn comment_value(sql: &str, name: &str) -> Option<String> {
    let at = sql.find(name)?;
    let before = &sql[..at];
    let open = before.rfind("/*")?;
    if before[open..].contains("*/") {
        return None;
    }
    let rest = sql[at + name.len()..].trim_start();
    let rest = rest.strip_prefix(':').or_else(|| rest.strip_prefix('='))?;
    let end = rest.find("*/")?;
    let value = rest[..end].trim().trim_matches(|c| c == '\'' || c == '"');
    (!value.is_empty()).then(|| value.to_string())
}

/// A process-wide LRU of parsed queries with hit counters.
pub struct QueryCache {
    lru: Mutex<LruCache<Arc<str>, Arc<Parsed>>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl QueryCache {
    pub fn new(capacity: usize) -> QueryCache {
        QueryCache {
            lru: Mutex::new(LruCache::new(
                NonZeroUsize::new(capacity.max(1)).unwrap_or(NonZeroUsize::MIN),
            )),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// The global cache.
    pub fn global() -> &'static QueryCache {
        static CACHE: OnceLock<QueryCache> = OnceLock::new();
        CACHE.get_or_init(|| QueryCache::new(4096))
    }

    /// The parsed form of `sql`, parsing it on a miss. Errors are not cached.
    pub fn get(&self, sql: &str) -> Result<Arc<Parsed>, RouterError> {
        if let Some(p) = self.lru.lock().get(sql) {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(p.clone());
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let parsed = Arc::new(parse_off_the_workers(sql)?);
        self.lru.lock().put(Arc::from(sql), parsed.clone());
        Ok(parsed)
    }

    /// Queries cached now.
    pub fn len(&self) -> usize {
        self.lru.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn capacity(&self) -> usize {
        self.lru.lock().cap().get()
    }

    /// Sets the number of entries kept (`query_cache_limit`), dropping the least recent.
    pub fn resize(&self, capacity: usize) {
        let cap = NonZeroUsize::new(capacity.max(1)).unwrap_or(NonZeroUsize::MIN);
        let mut lru = self.lru.lock();
        if lru.cap() != cap {
            lru.resize(cap);
        }
    }

    /// (hits, misses) since start.
    pub fn stats(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments() {
        assert_eq!(
            comment_value("/* pgdog_shard: 2 */ SELECT 1", "pgdog_shard").as_deref(),
            Some("2")
        );
        assert_eq!(
            comment_value(
                "SELECT 1 /* pgdog_sharding_key: 'abc' */",
                "pgdog_sharding_key"
            )
            .as_deref(),
            Some("abc")
        );
        assert_eq!(
            comment_value("SELECT 'pgdog_shard: 2'", "pgdog_shard"),
            None
        );
        assert_eq!(
            comment_value("/* x */ SELECT pgdog_shard", "pgdog_shard"),
            None
        );
    }

    #[test]
    fn cache_hits() {
        let c = QueryCache::new(2);
        c.get("SELECT 1").unwrap();
        c.get("SELECT 1").unwrap();
        assert_eq!(c.stats(), (1, 1));
        assert!(c.get("SELEC 1").is_err());
    }
}
