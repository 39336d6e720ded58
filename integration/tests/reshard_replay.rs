//! `pgdog replay` end to end: a single source into a two-shard destination. After
//! `schema-sync --phase pre` and `copy-data --slot`, the source gets inserts, updates (one not
//! touching the key, one moving a row to another shard), deletes, some in multi-statement
//! transactions; `replay --until-lsn` must leave the destination equal to the source
//! (`pgdog verify`), and a second run must apply nothing (resume from the stored position).
use crate::reshard_common;

use reshard_common::{
    copy_data_ok, current_lsn, drop_slot, pgdog_with, replay_again_applies_nothing, replay_applies,
    schema_sync_pre, shard_of, sharded_table, single_to_two_shards, text, verify_ok, SRC_DST,
};
use std::path::{Path, PathBuf};
use topology::Topology;

/// A single source with `items (id bigint PRIMARY KEY, name text, qty int)`, publication `pub`
/// and rows 1 to `rows`, copied (slot `s1`) into a two-shard destination with the pre-data
/// schema; the configuration folder `pgdog-<tag>-<pid>`.
fn copied_items(tag: &str, rows: i64) -> (Topology, Topology, PathBuf) {
    let (source, dest, dir) =
        single_to_two_shards(tag, &sharded_table("dst", "items", "id", "bigint"));
    source
        .primary()
        .psql(&format!(
            "CREATE TABLE items (id bigint PRIMARY KEY, name text, qty int);
             CREATE PUBLICATION pub FOR TABLE items;
             INSERT INTO items SELECT i, 'item ' || i, i FROM generate_series(1, {rows}) i;"
        ))
        .expect("source schema");
    schema_sync_pre(&dir, &source);
    copy_data_ok(&dir, &source, &["--slot", "s1"]);
    (source, dest, dir)
}

#[test]
fn replay_applies_changes_and_resumes() {
    let (source, dest, dir) = copied_items("replay", 200);
    let primary = source.primary();
    assert_eq!(
        dest.shard(1)
            .psql("SELECT count(*) FROM pgdog_reshard_progress WHERE slot = 's1'")
            .unwrap(),
        "1"
    );

    // Find a key on the other shard than id 5, to move the row there.
    let shard_of = |id: i64| shard_of(&dest, 2, "items", id);
    let home = shard_of(5);
    let other = (6..200).find(|&id| shard_of(id) != home).unwrap();
    primary
        .psql(&format!(
            "INSERT INTO items SELECT i, 'new ' || i, i FROM generate_series(201, 260) i;
             UPDATE items SET qty = qty + 1000 WHERE id BETWEEN 10 AND 40;
             BEGIN;
             UPDATE items SET name = NULL WHERE id = 7;
             DELETE FROM items WHERE id BETWEEN 50 AND 70;
             INSERT INTO items VALUES (300, 'three hundred', 3);
             COMMIT;
             DELETE FROM items WHERE id = 300;
             BEGIN;
             UPDATE items SET id = -{other} WHERE id = 5;
             UPDATE items SET id = {other} + 500 WHERE id = {other};
             UPDATE items SET id = 100000 + id WHERE id BETWEEN 100 AND 120;
             INSERT INTO items VALUES (5, 'back', 5) ON CONFLICT (id) DO UPDATE SET name = 'x';
             COMMIT;"
        ))
        .expect("source changes");
    let lsn = current_lsn(primary);

    let output = replay_applies(&dir, &source, "s1", &lsn);
    assert!(output.contains("replayed "), "{output}");
    verify_ok(&dir, &source, &[], "");

    replay_again_applies_nothing(&dir, &source, "s1", &lsn);
    verify_ok(&dir, &source, &[], " after resume");

    drop_slot(primary, "s1");
}

/// Runs a script with psql -f: each statement outside BEGIN/COMMIT its own transaction.
fn script(node: &topology::Node, dir: &Path, name: &str, sql: &str) {
    let path = dir.join(name);
    std::fs::write(&path, sql).unwrap();
    let out = node
        .psql_command("postgres")
        .arg("-f")
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{name}: {}", text(&out));
}

/// The next transaction id of a destination shard: every writing transaction takes one (and
/// so does this query), so the difference counts the writing transactions in between.
fn commits(dest: &Topology, shard: usize) -> i64 {
    dest.shard(shard)
        .psql("SELECT txid_current()")
        .unwrap()
        .parse()
        .unwrap()
}

/// Group commit: source transactions already in the slot share destination transactions (far
/// fewer destination commits than source transactions), the result still equal to the source;
/// then `--atomic` (two-phase commit of batches touching both shards) leaves no prepared
/// transaction behind.
#[test]
fn replay_groups_transactions_and_atomic_flag() {
    let (source, dest, dir) = copied_items("replay-batch", 100);
    let primary = source.primary();
    let run = |command: &str, rest: &[&str]| pgdog_with(&dir, &source, command, &SRC_DST, rest);

    // 300 source transactions, each one row, then an update of each: 600 in all.
    let mut sql = String::new();
    for i in 101..=400 {
        sql.push_str(&format!("INSERT INTO items VALUES ({i}, 'new', {i});\n"));
    }
    for i in 101..=400 {
        sql.push_str(&format!("UPDATE items SET qty = qty + 1 WHERE id = {i};\n"));
    }
    script(primary, &dir, "batch.sql", &sql);
    let lsn = current_lsn(primary);
    let before = commits(&dest, 0) + commits(&dest, 1);
    let out = run(
        "replay",
        &["--publication", "pub", "--slot", "s1", "--until-lsn", &lsn],
    );
    let output = text(&out);
    assert!(out.status.success(), "replay: {output}");
    assert!(
        output.contains("replayed 600 transactions, 600 rows applied"),
        "{output}"
    );
    let destination_commits = commits(&dest, 0) + commits(&dest, 1) - before;
    assert!(
        destination_commits < 150,
        "600 source transactions took {destination_commits} destination transactions"
    );
    verify_ok(&dir, &source, &[], "");

    // --atomic: every source transaction touches both shards.
    let mut sql = String::new();
    for i in 1..=100 {
        sql.push_str(&format!(
            "UPDATE items SET name = 'atomic' WHERE id IN ({i}, {});\n",
            i + 100
        ));
    }
    script(primary, &dir, "atomic.sql", &sql);
    let lsn = current_lsn(primary);
    let out = run(
        "replay",
        &[
            "--publication",
            "pub",
            "--slot",
            "s1",
            "--until-lsn",
            &lsn,
            "--atomic",
        ],
    );
    let output = text(&out);
    assert!(out.status.success(), "replay --atomic: {output}");
    assert!(output.contains("replayed 100 transactions"), "{output}");
    for s in 0..2 {
        assert_eq!(
            dest.shard(s)
                .psql("SELECT count(*) FROM pg_prepared_xacts")
                .unwrap(),
            "0"
        );
    }
    verify_ok(&dir, &source, &[], " after --atomic");
    drop_slot(primary, "s1");
}
