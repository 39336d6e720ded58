//! Prepared statements in transaction mode: one global cache maps each distinct statement
//! (query text and parameter types) to one server-side name `__pgdog_<id>`. Clients keep their
//! own names; a statement is prepared lazily on whichever connection a client holds. The cache
//! keeps `prepared_statements_limit` statements (least recently used out first; a client that
//! still holds an evicted one keeps using it, under its name); each server connection keeps as
//! many, the oldest closed by the pool's upkeep.
use lru::LruCache;
use parking_lot::Mutex;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

/// A statement as the client defined it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Statement {
    /// The text as UTF-8 (read in the client's encoding).
    pub query: String,
    /// The text as the client sent it, when that is not `query` in UTF-8 (another
    /// client_encoding): what servers get. Clients share a statement only under the same
    /// settings, `client_encoding` included.
    pub wire: Option<Box<[u8]>>,
    pub param_types: Vec<i32>,
    /// The fingerprint of the session settings it was parsed under (the client's, as the
    /// server has them: `Params::fingerprint`). Parse analysis reads some of them (a literal
    /// cast to timestamptz or timetz takes TimeZone, DateStyle reads dates): clients whose
    /// settings differ never share a statement.
    pub settings: u64,
}

/// A cached statement with its global id and server-side name.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub id: u64,
    pub statement: Arc<Statement>,
    name: Arc<str>,
    /// A server has accepted it (ParseComplete): later Parses of it need no server.
    valid: Arc<std::sync::atomic::AtomicBool>,
    /// `DDL_EPOCH` when this holder got it (the client's Parse).
    epoch: u64,
}

impl Statement {
    /// The text servers get: the client's bytes.
    pub fn wire_text(&self) -> &[u8] {
        self.wire.as_deref().unwrap_or(self.query.as_bytes())
    }
}

impl Prepared {
    /// The name used on servers.
    pub fn server_name(&self) -> &str {
        &self.name
    }

    /// Whether some server has accepted this statement.
    pub fn is_valid(&self) -> bool {
        self.valid.load(Ordering::Relaxed)
    }

    pub fn mark_valid(&self) {
        self.valid.store(true, Ordering::Relaxed);
    }

    /// DDL ran through pgdog since the client prepared it: directly, the client's statement
    /// would have the old plan.
    pub fn prepared_before_ddl(&self) -> bool {
        self.epoch < DDL_EPOCH.load(Ordering::Relaxed)
    }

    /// The same, shared.
    pub fn server_name_arc(&self) -> Arc<str> {
        self.name.clone()
    }
}

pub fn server_name(id: u64) -> String {
    format!("__pgdog_{id}")
}

type Entry = (u64, Arc<str>, Arc<std::sync::atomic::AtomicBool>);
type Cache = LruCache<Arc<Statement>, Entry>;

static CACHE: LazyLock<Mutex<Cache>> =
    LazyLock::new(|| Mutex::new(LruCache::new(limit_of(10_000))));

fn limit_of(n: usize) -> NonZeroUsize {
    NonZeroUsize::new(n.max(1)).unwrap_or(NonZeroUsize::MIN)
}

/// Sets `prepared_statements_limit` (the least recently used statements beyond it go).
pub fn set_limit(n: usize) {
    let mut cache = CACHE.lock();
    if cache.cap() != limit_of(n) {
        cache.resize(limit_of(n));
    }
}
static NEXT: AtomicU64 = AtomicU64::new(1);

/// Bumped by every `retire_all` (DDL through pgdog).
static DDL_EPOCH: AtomicU64 = AtomicU64::new(0);
/// Bumped by every retirement: an answer of `intern` remembered before one may be stale.
static RETIRED: AtomicU64 = AtomicU64::new(0);

/// Retirements so far (see `RETIRED`).
pub fn retirements() -> u64 {
    RETIRED.load(Ordering::Relaxed)
}

/// A settings key no other statement has (a statement parsed while the client's settings are
/// changing is shared with nobody).
pub fn unshared() -> u64 {
    static UNSHARED: AtomicU64 = AtomicU64::new(1 << 63);
    UNSHARED.fetch_add(1, Ordering::Relaxed)
}

/// The global entry for a statement parsed under `settings` (see `Statement::settings`),
/// created on first use.
pub fn intern(query: &str, param_types: &[i32], settings: u64) -> Prepared {
    intern_wire(query, query.as_bytes(), param_types, settings)
}

/// [`intern`] of a text the client sent as `wire` (in its encoding), read as `query`.
pub fn intern_wire(query: &str, wire: &[u8], param_types: &[i32], settings: u64) -> Prepared {
    let statement = Statement {
        query: query.to_string(),
        wire: (wire != query.as_bytes()).then(|| wire.into()),
        param_types: param_types.to_vec(),
        settings,
    };
    let mut cache = CACHE.lock();
    if let Some((id, name, valid)) = cache.get(&statement) {
        return Prepared {
            id: *id,
            statement: Arc::new(statement),
            name: name.clone(),
            valid: valid.clone(),
            epoch: DDL_EPOCH.load(Ordering::Relaxed),
        };
    }
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let statement = Arc::new(statement);
    let name: Arc<str> = server_name(id).into();
    let valid = Arc::new(std::sync::atomic::AtomicBool::new(false));
    cache.put(statement.clone(), (id, name.clone(), valid.clone()));
    Prepared {
        id,
        statement,
        name,
        valid,
        epoch: DDL_EPOCH.load(Ordering::Relaxed),
    }
}

/// The client that prepared `p` deallocated it: the next Parse of its text creates a new
/// global statement, parsed afresh on each server (a DEALLOCATE after DDL, as psycopg sends,
/// must not give the client the old plan back). Other holders keep using this one.
pub fn retire(p: &Prepared) {
    RETIRED.fetch_add(1, Ordering::Relaxed);
    let mut cache = CACHE.lock();
    if cache
        .peek(&p.statement)
        .is_some_and(|(id, _, _)| *id == p.id)
    {
        cache.pop(&p.statement);
    }
}

/// A statement that may change the catalog (DDL) ran: every cached statement is retired (see
/// [`retire`]), so what is prepared from now on is planned against the new catalog.
pub fn retire_all() {
    RETIRED.fetch_add(1, Ordering::Relaxed);
    DDL_EPOCH.fetch_add(1, Ordering::Relaxed);
    CACHE.lock().clear();
}

/// Number of distinct statements cached.
pub fn len() -> usize {
    CACHE.lock().len()
}

/// Every cached statement, by id.
pub fn list() -> Vec<Prepared> {
    let mut v: Vec<Prepared> = CACHE
        .lock()
        .iter()
        .map(|(statement, (id, name, valid))| Prepared {
            id: *id,
            statement: statement.clone(),
            name: name.clone(),
            valid: valid.clone(),
            epoch: DDL_EPOCH.load(Ordering::Relaxed),
        })
        .collect();
    v.sort_by_key(|p| p.id);
    v
}

#[cfg(test)]
mod tests {
    #[test]
    fn same_statement_same_id() {
        let a = super::intern("SELECT $1 -- prepared test", &[23], 0);
        let b = super::intern("SELECT $1 -- prepared test", &[23], 0);
        let c = super::intern("SELECT $1 -- prepared test", &[25], 0);
        assert_eq!(a.id, b.id);
        assert_ne!(a.id, c.id);
        assert_eq!(a.server_name(), format!("__pgdog_{}", a.id));
    }

    #[test]
    fn a_retired_statement_is_prepared_afresh() {
        let a = super::intern("SELECT $1 -- retired test", &[23], 0);
        super::retire(&a);
        let b = super::intern("SELECT $1 -- retired test", &[23], 0);
        assert_ne!(a.id, b.id);
        // Retiring an older copy leaves the current one.
        super::retire(&a);
        assert_eq!(
            super::intern("SELECT $1 -- retired test", &[23], 0).id,
            b.id
        );
    }
}
