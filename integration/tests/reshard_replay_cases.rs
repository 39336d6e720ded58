//! `pgdog replay` on the cases that break naive appliers, single source into two shards, each
//! ending with `pgdog verify` reporting no difference: TOAST values left out of an UPDATE
//! (unchanged) and carried along when the row moves to another shard (REPLICA IDENTITY FULL),
//! composite primary keys, TRUNCATE on the source while the replay runs, then new rows.
use crate::reshard_common;

use reshard_common::{
    copy_data_ok, count_on, current_lsn, drop_slot, replay_until, schema_sync_pre, shard_of,
    sharded_table, single_to_two_shards, text, verify_ok,
};
use std::path::PathBuf;
use topology::Topology;

/// A single source with `schema` (tables docs, pairs and logs in publication `pub`) copied
/// (slot `cases`) into two shards with the pre-data schema; the configuration folder
/// `pgdog-<tag>-<pid>`.
fn copied(tag: &str, schema: &str) -> (Topology, Topology, PathBuf) {
    let (source, dest, dir) = single_to_two_shards(
        tag,
        &(sharded_table("dst", "docs", "id", "bigint")
            + &sharded_table("dst", "pairs", "a", "integer")
            + &sharded_table("dst", "logs", "id", "bigint")),
    );
    source.primary().psql(schema).expect("source schema");
    schema_sync_pre(&dir, &source);
    copy_data_ok(&dir, &source, &["--slot", "cases"]);
    (source, dest, dir)
}

#[test]
fn toast_composite_keys_and_truncate_replay_exactly() {
    // Bodies of ~64 kB of hex digits: incompressible enough to be stored out of line.
    let (source, dest, dir) = copied(
        "replay-cases",
        "CREATE TABLE docs (id bigint PRIMARY KEY, body text, tag int);
             ALTER TABLE docs REPLICA IDENTITY FULL;
             CREATE TABLE pairs (a int, b int, v text, PRIMARY KEY (a, b));
             CREATE TABLE logs (id bigint PRIMARY KEY, msg text);
             CREATE PUBLICATION pub FOR TABLE docs, pairs, logs;
             INSERT INTO docs SELECT i, (SELECT string_agg(md5(i::text || '-' || j), '')
                                         FROM generate_series(1, 2000) j), 0
               FROM generate_series(1, 20) i;
             INSERT INTO pairs SELECT i % 10, i, 'v' || i FROM generate_series(1, 200) i;
             INSERT INTO logs SELECT i, 'before ' || i FROM generate_series(1, 100) i;",
    );
    let primary = source.primary();

    // The shard of doc 1, and a doc id on the other shard to move it to.
    let shard_of = |id: i64| shard_of(&dest, 2, "docs", id);
    let home = shard_of(1);
    let other = (2..=20).find(|&id| shard_of(id) != home).unwrap();
    primary
        .psql(&format!(
            "UPDATE docs SET tag = tag + 1 WHERE id <= 10;
             UPDATE docs SET id = {other} + 1000 WHERE id = 1;
             UPDATE pairs SET v = 'changed' WHERE b % 3 = 0;
             DELETE FROM pairs WHERE a = 4 AND b < 100;
             UPDATE pairs SET a = a + 100 WHERE b BETWEEN 150 AND 160;
             TRUNCATE logs;
             INSERT INTO logs SELECT i, 'after ' || i FROM generate_series(50, 80) i;"
        ))
        .expect("source changes");
    // The unchanged TOAST body of an updated row is not in the stream: the row must keep it.
    let lsn = current_lsn(primary);
    let out = replay_until(&dir, &source, "cases", &lsn);
    assert!(out.status.success(), "replay: {}", text(&out));

    verify_ok(&dir, &source, &[], "");
    let moved = count_on(
        &dest,
        2,
        &format!("SELECT count(*) FROM docs WHERE id = {other} + 1000 AND length(body) = 64000"),
    );
    assert_eq!(moved, 1, "the moved document kept its body");
    drop_slot(primary, "cases");
}

/// A destination that diverged (a row deleted there by hand): the replay reads every result of
/// a batch before it commits, so the source transaction that updates the missing row is rolled
/// back on every shard (its other change too), the position stays, and the replay stops naming
/// the table, the key and the LSN; a rerun stops at the same change.
#[test]
fn a_diverged_destination_stops_the_replay_before_commit() {
    let (source, dest, dir) = copied(
        "replay-diverged",
        "CREATE TABLE logs (id bigint PRIMARY KEY, msg text);
             CREATE TABLE docs (id bigint PRIMARY KEY, body text, tag int);
             CREATE TABLE pairs (a int, b int, v text, PRIMARY KEY (a, b));
             CREATE PUBLICATION pub FOR TABLE docs, pairs, logs;
             INSERT INTO logs SELECT i, 'before ' || i FROM generate_series(1, 100) i;",
    );
    let primary = source.primary();
    // Row 7 disappears from the destination behind the replay's back.
    for s in 0..2 {
        dest.shard(s).psql("DELETE FROM logs WHERE id = 7").unwrap();
    }
    primary
        .psql("BEGIN; INSERT INTO logs VALUES (500, 'same transaction'); UPDATE logs SET msg = 'changed' WHERE id = 7; COMMIT;")
        .unwrap();
    let lsn = current_lsn(primary);
    for attempt in 0..2 {
        let out = replay_until(&dir, &source, "cases", &lsn);
        let said = text(&out);
        assert!(!out.status.success(), "attempt {attempt}: {said}");
        assert!(said.contains("UPDATE 0"), "{said}");
        assert!(said.contains("logs"), "{said}");
        assert!(said.contains("'7'"), "the key is named: {said}");
        assert!(said.contains("from the source transaction at"), "{said}");
        // Nothing of that source transaction was committed anywhere.
        let inserted: i64 = count_on(&dest, 2, "SELECT count(*) FROM logs WHERE id = 500");
        assert_eq!(inserted, 0, "attempt {attempt}: the batch was rolled back");
    }
    drop_slot(primary, "cases");
}
