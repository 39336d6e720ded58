use super::*;
use crate::config::DataType;
use crate::router::schema::{Schema, TableSharding};
use crate::router::QueryCache;

fn router(shards: usize) -> Router {
    let table =
        |name: &str, column: &str| TableSharding::hashed(name, column, DataType::Bigint, shards);
    let mut schema = Schema {
        shards,
        tables: vec![table("users", "id"), table("orders", "user_id")],
        ..Default::default()
    };
    schema.omnisharded.insert("countries".into());
    Router::new(schema)
}

fn verdict(r: &Router, sql: &str) -> Verdict {
    let parsed = QueryCache::global().get(sql).unwrap();
    r.verdict(&parsed, 0, sql, None, &Overrides::default())
        .unwrap()
}

#[test]
fn kinds_and_reasons() {
    let r = router(4);
    let v = |sql| verdict(&r, sql);
    assert_eq!(
        v("SELECT * FROM users WHERE id = 7").kind,
        VerdictKind::OneShard
    );
    assert_eq!(v("BEGIN").kind, VerdictKind::Session);
    assert_eq!(v("SET work_mem = '8MB'").kind, VerdictKind::Session);
    let all = v("SELECT count(*) FROM users WHERE name = 'a'");
    assert_eq!(all.kind, VerdictKind::AllShards);
    assert_eq!(all.reason, "no filter on the sharding key (users.id)");
    let several = v("SELECT * FROM users WHERE id IN (1, 2)");
    assert!(matches!(
        several.kind,
        VerdictKind::Several | VerdictKind::OneShard
    ));
    let w = v("DELETE FROM users WHERE name = 'x'");
    assert_eq!(w.kind, VerdictKind::AllShards);
    assert!(
        w.reason.starts_with("write without a filter"),
        "{}",
        w.reason
    );
    let ddl = v("CREATE INDEX ON users (name)");
    assert_eq!(ddl.kind, VerdictKind::AllShards);
    assert!(ddl.reason.starts_with("IndexStmt"), "{}", ddl.reason);
    let refused = v("SELECT * FROM users u JOIN orders o ON o.id = u.id");
    assert_eq!(refused.kind, VerdictKind::Refused);
    assert!(
        refused.reason.starts_with("0A000: cross-shard join"),
        "{}",
        refused.reason
    );
    let moved = v("UPDATE users SET id = 9 WHERE id = 1");
    assert_eq!(moved.kind, VerdictKind::OneShard);
    assert!(moved.reason.contains("moves the rows"), "{}", moved.reason);
    let copied = v("INSERT INTO users SELECT * FROM users WHERE id = 1");
    assert_eq!(copied.kind, VerdictKind::AllShards);
    let split = v("INSERT INTO users (id) VALUES (1), (2), (3), (4), (5), (6)");
    assert!(
        split.reason.starts_with("multi-row INSERT"),
        "{}",
        split.reason
    );
    let omni = v("UPDATE countries SET name = 'x'");
    assert_eq!(omni.kind, VerdictKind::AllShards);
    assert!(omni.reason.contains("omnisharded"), "{}", omni.reason);
}

#[test]
fn the_worst_kind_sorts_last() {
    assert!(VerdictKind::Refused > VerdictKind::AllShards);
    assert!(VerdictKind::AllShards > VerdictKind::Several);
    assert!(VerdictKind::Several > VerdictKind::OneShard);
}

#[test]
fn one_shard_router_keeps_everything_on_it() {
    let r = router(1);
    let v = verdict(&r, "SELECT count(*) FROM users");
    assert_eq!(v.kind, VerdictKind::OneShard);
}

#[test]
fn fingerprints_ignore_constants() {
    let a = QueryCache::global()
        .get("SELECT * FROM users WHERE id = 1")
        .unwrap();
    let b = QueryCache::global()
        .get("SELECT * FROM users WHERE id = 2")
        .unwrap();
    let (fa, fb) = (
        a.fingerprint(0, "SELECT * FROM users WHERE id = 1")
            .unwrap(),
        b.fingerprint(0, "SELECT * FROM users WHERE id = 2")
            .unwrap(),
    );
    assert_eq!(fa.value, fb.value);
    assert_eq!(fa.sample, "SELECT * FROM users WHERE id = $1");
}
