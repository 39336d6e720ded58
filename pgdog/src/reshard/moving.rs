//! The reshards running in this process (the admin database's `RESHARD`), as the proxy sees
//! them: DDL sent through pgdog to a database whose rows are moving is refused (55000) when the
//! replay would not carry it to the destination. The replay carries `ALTER TABLE` on published
//! tables (their columns, [`crate::reshard::replay`]) and TRUNCATE; CREATE INDEX, a new table
//! or view, DROP, a renamed table, new enum values or sequence options would reach only the
//! old shards. A `pgdog reshard` command running elsewhere is not seen here.
use crate::router::QueryCache;
use parking_lot::RwLock;
use pg_query_raw::router::{Statement, StatementKind};
use std::sync::atomic::{AtomicUsize, Ordering};

/// (source, destination) of every running reshard.
static MOVING: RwLock<Vec<(String, String)>> = RwLock::new(Vec::new());
/// How many: the proxy's check costs one load while none runs.
static COUNT: AtomicUsize = AtomicUsize::new(0);

/// DDL the replay does not carry, by parse node.
const NOT_CARRIED: &[(&str, &str)] = &[
    ("CreateStmt", "CREATE TABLE"),
    ("IndexStmt", "CREATE INDEX"),
    ("DropStmt", "DROP"),
    ("CreateTableAsStmt", "CREATE TABLE AS"),
    ("ViewStmt", "CREATE VIEW"),
    ("CreateSeqStmt", "CREATE SEQUENCE"),
    ("AlterSeqStmt", "ALTER SEQUENCE"),
    ("CreateEnumStmt", "CREATE TYPE"),
    ("AlterEnumStmt", "ALTER TYPE"),
    ("CompositeTypeStmt", "CREATE TYPE"),
    ("CreateDomainStmt", "CREATE DOMAIN"),
    ("AlterDomainStmt", "ALTER DOMAIN"),
    ("CreateFunctionStmt", "CREATE FUNCTION"),
    ("CreateTrigStmt", "CREATE TRIGGER"),
    ("RuleStmt", "CREATE RULE"),
    ("CreateSchemaStmt", "CREATE SCHEMA"),
    ("AlterObjectSchemaStmt", "ALTER ... SET SCHEMA"),
];

/// A running reshard, registered while it lives.
pub struct Moving {
    from: String,
    to: String,
}

/// Registers a reshard from `from` to `to` until the returned guard is dropped.
pub fn start(from: &str, to: &str) -> Moving {
    MOVING.write().push((from.to_string(), to.to_string()));
    COUNT.fetch_add(1, Ordering::Relaxed);
    Moving {
        from: from.to_string(),
        to: to.to_string(),
    }
}

impl Drop for Moving {
    fn drop(&mut self) {
        let mut moving = MOVING.write();
        if let Some(i) = moving
            .iter()
            .position(|(f, t)| *f == self.from && *t == self.to)
        {
            moving.remove(i);
            COUNT.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Why `sql`, sent to `database`, is refused while a reshard moves that database's rows.
pub fn ddl_refusal(database: &str, sql: &str) -> Option<String> {
    if COUNT.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let parsed = QueryCache::global().get(sql).ok()?;
    ddl_refusal_parsed(database, sql, &parsed.statements)
}

/// The same for statements already parsed.
pub fn ddl_refusal_parsed(database: &str, sql: &str, statements: &[Statement]) -> Option<String> {
    if COUNT.load(Ordering::Relaxed) == 0 {
        return None;
    }
    // The statements first: the registry's lock only for DDL.
    let what = statements.iter().find_map(|st| match st.kind {
        StatementKind::Utility("RenameStmt") if renames_object(sql) => Some("a rename"),
        StatementKind::Utility(node) => NOT_CARRIED
            .iter()
            .find(|(n, _)| *n == node)
            .map(|(_, what)| *what),
        _ => None,
    })?;
    let to = MOVING
        .read()
        .iter()
        .find(|(from, _)| from == database)
        .map(|(_, to)| to.clone())?;
    Some(format!(
        "database \"{database}\" is being resharded into \"{to}\" (RESHARD running in this \
         pgdog): {what} would reach only the old shards; run it after the cutover (on both \
         databases if it must reach the old ones too), or STOP the reshard first. Column \
         changes of a published table (ALTER TABLE ADD / DROP / RENAME / TYPE) and TRUNCATE \
         are carried"
    ))
}

/// `ALTER ... RENAME TO`: a table, index, sequence or other object renamed (not a column).
fn renames_object(sql: &str) -> bool {
    let lower = sql.to_ascii_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    words
        .windows(2)
        .any(|w| w[0] == "rename" && w[1].trim_end_matches(';') == "to")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_the_replay_does_not_carry_is_refused_while_a_reshard_runs() {
        assert_eq!(
            ddl_refusal("moving_test_db", "CREATE INDEX i ON t (v)"),
            None
        );
        let guard = start("moving_test_db", "moving_test_new");
        let refused = ddl_refusal("moving_test_db", "CREATE INDEX i ON t (v)").unwrap();
        assert!(refused.contains("moving_test_new") && refused.contains("CREATE INDEX"));
        assert!(ddl_refusal("moving_test_db", "ALTER TABLE t RENAME TO u").is_some());
        assert!(ddl_refusal("moving_test_db", "CREATE TABLE n (id int)").is_some());
        assert_eq!(
            ddl_refusal("moving_test_db", "ALTER TABLE t ADD COLUMN c int"),
            None
        );
        assert_eq!(
            ddl_refusal("moving_test_db", "ALTER TABLE t RENAME COLUMN a TO b"),
            None
        );
        assert_eq!(ddl_refusal("moving_test_db", "TRUNCATE t"), None);
        assert_eq!(ddl_refusal("moving_test_db", "SELECT 1"), None);
        assert_eq!(ddl_refusal("another_db", "CREATE INDEX i ON t (v)"), None);
        drop(guard);
        assert_eq!(
            ddl_refusal("moving_test_db", "CREATE INDEX i ON t (v)"),
            None
        );
    }
}
