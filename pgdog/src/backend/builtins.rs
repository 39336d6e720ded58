//! A server's built-in functions, read from its own catalog: `pg_proc` rows with OIDs below
//! 16384 (`FirstNormalObjectId`) come with Postgres, the rest are user or extension functions.
//! A name counts as built-in only when no user or extension function shares it (an overload
//! or a function of the same name in another schema could be the one a call resolves to).
//! The health check reads it once per server, and again once DDL may have added functions
//! (`mark_stale`), so pinning asks the server's catalog, not a hand-kept list of names.
use parking_lot::RwLock;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The names of the built-in functions no user function shares.
pub const QUERY: &str =
    "SELECT proname FROM pg_catalog.pg_proc GROUP BY proname HAVING bool_and(oid < 16384)";

/// Bumped by DDL that may create functions: catalogs read before are no longer trusted.
static EPOCH: AtomicU64 = AtomicU64::new(0);

/// Catalogs read before now may miss a user function: sessions treat every function outside
/// the fixed lists as unknown until the next health check reads the catalog again.
pub fn mark_stale() {
    EPOCH.fetch_add(1, Ordering::Relaxed);
}

/// Whether `sql` may create or replace a function (CREATE FUNCTION / PROCEDURE / EXTENSION,
/// ALTER EXTENSION, CREATE SCHEMA with functions...): a cheap test on the text.
pub fn may_add_functions(sql: &str) -> bool {
    let lower = sql.to_ascii_lowercase();
    ["function", "procedure", "extension", "aggregate"]
        .iter()
        .any(|w| lower.contains(w))
        && (lower.contains("create") || lower.contains("alter"))
}

/// Built-in function names of one server.
#[derive(Debug, Default)]
pub struct Builtins {
    names: HashSet<Box<str>>,
}

impl Builtins {
    pub fn new(names: impl IntoIterator<Item = String>) -> Builtins {
        Builtins {
            names: names.into_iter().map(String::into_boxed_str).collect(),
        }
    }

    /// `name`: lower case, unqualified.
    pub fn contains(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// The catalog of one server as last read, and the epoch it was read in.
#[derive(Debug, Default)]
pub struct Catalog {
    read: RwLock<Option<(u64, Arc<Builtins>)>>,
}

impl Catalog {
    /// The built-in functions, unless never read or read before the last `mark_stale`.
    pub fn current(&self) -> Option<Arc<Builtins>> {
        let epoch = EPOCH.load(Ordering::Relaxed);
        match &*self.read.read() {
            Some((e, b)) if *e == epoch => Some(b.clone()),
            _ => None,
        }
    }

    /// The epoch a read starting now belongs to (taken before the query runs, so DDL during
    /// the read leaves it stale), or None when the catalog is current.
    pub fn due(&self) -> Option<u64> {
        self.current()
            .is_none()
            .then(|| EPOCH.load(Ordering::Relaxed))
    }

    pub fn store(&self, epoch: u64, builtins: Builtins) {
        *self.read.write() = Some((epoch, Arc::new(builtins)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_catalog_read_before_ddl_is_not_trusted() {
        let c = Catalog::default();
        assert!(c.current().is_none());
        let epoch = c.due().expect("never read");
        c.store(epoch, Builtins::new(["now".to_string()]));
        assert!(c.current().is_some_and(|b| b.contains("now")));
        assert!(c.due().is_none());
        mark_stale();
        assert!(c.current().is_none());
        assert!(may_add_functions("CREATE OR REPLACE FUNCTION f() ..."));
        assert!(may_add_functions("create extension pgcrypto"));
        assert!(!may_add_functions("CREATE TABLE t (i int)"));
    }
}
