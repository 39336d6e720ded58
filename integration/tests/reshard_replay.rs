//! `pgdog replay` end to end: a single source into a two-shard destination. After
//! `schema-sync --phase pre` and `copy-data --slot`, the source gets inserts, updates (one not
//! touching the key, one moving a row to another shard), deletes, some in multi-statement
//! transactions; `replay --until-lsn` must leave the destination equal to the source
//! (`pgdog verify`), and a second run must apply nothing (resume from the stored position).
mod reshard_common;

use reshard_common::{pgdog, run_ok, sharded_table, shards, text, write_files, USERS};
use std::path::Path;
use topology::Topology;

const DBS: [&str; 4] = ["--from-database", "src", "--to-database", "dst"];

fn write_config(dir: &Path, source: &Topology, dest: &Topology) {
    let config = reshard_common::database("src", 0, source.primary().port, "primary")
        + &shards("dst", dest, 2)
        + &sharded_table("dst", "items", "id", "bigint");
    write_files(dir, &config, USERS);
}

#[test]
fn replay_applies_changes_and_resumes() {
    let source = Topology::single().expect("source topology");
    let dest = Topology::shards(2).expect("destination topology");
    let dir = std::env::temp_dir().join(format!("pgdog-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    write_config(&dir, &source, &dest);
    let primary = source.primary();
    primary
        .psql(
            "CREATE TABLE items (id bigint PRIMARY KEY, name text, qty int);
             CREATE PUBLICATION pub FOR TABLE items;
             INSERT INTO items SELECT i, 'item ' || i, i FROM generate_series(1, 200) i;",
        )
        .expect("source schema");

    run_ok(
        &dir,
        &source,
        "schema-sync",
        &DBS,
        &["--publication", "pub", "--phase", "pre"],
    );
    run_ok(
        &dir,
        &source,
        "copy-data",
        &DBS,
        &["--publication", "pub", "--slot", "s1"],
    );
    assert_eq!(
        dest.shard(1)
            .psql("SELECT count(*) FROM pgdog_reshard_progress WHERE slot = 's1'")
            .unwrap(),
        "1"
    );

    // Find a key on the other shard than id 5, to move the row there.
    let shard_of = |id: i64| -> usize {
        (0..2)
            .find(|&s| {
                dest.shard(s)
                    .psql(&format!("SELECT count(*) FROM items WHERE id = {id}"))
                    .unwrap()
                    == "1"
            })
            .expect("copied row")
    };
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
    let lsn = primary.psql("SELECT pg_current_wal_insert_lsn()").unwrap();

    let replay = || {
        pgdog(
            &dir,
            &source,
            "replay",
            &[
                DBS[0],
                DBS[1],
                DBS[2],
                DBS[3],
                "--publication",
                "pub",
                "--slot",
                "s1",
                "--until-lsn",
                &lsn,
            ],
        )
    };
    let out = replay();
    let output = text(&out);
    assert!(out.status.success(), "replay: {output}");
    assert!(output.contains("replayed "), "{output}");
    assert!(!output.contains("replayed 0 transactions"), "{output}");

    let verify = || pgdog(&dir, &source, "verify", &DBS);
    let out = verify();
    assert!(out.status.success(), "verify: {}", text(&out));

    let out = replay();
    let output = text(&out);
    assert!(out.status.success(), "second replay: {output}");
    assert!(
        output.contains("replayed 0 transactions, 0 rows applied"),
        "{output}"
    );
    let out = verify();
    assert!(out.status.success(), "verify after resume: {}", text(&out));

    primary
        .psql("SELECT pg_drop_replication_slot('s1')")
        .expect("dropping the slot");
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
    let source = Topology::single().expect("source topology");
    let dest = Topology::shards(2).expect("destination topology");
    let dir = std::env::temp_dir().join(format!("pgdog-replay-batch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    write_config(&dir, &source, &dest);
    let primary = source.primary();
    primary
        .psql(
            "CREATE TABLE items (id bigint PRIMARY KEY, name text, qty int);
             CREATE PUBLICATION pub FOR TABLE items;
             INSERT INTO items SELECT i, 'item ' || i, i FROM generate_series(1, 100) i;",
        )
        .expect("source schema");
    let with_dbs =
        |rest: &[&str]| -> Vec<String> { DBS.iter().chain(rest).map(|s| s.to_string()).collect() };
    let run = |command: &str, rest: &[&str]| {
        let args = with_dbs(rest);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        pgdog(&dir, &source, command, &args)
    };
    let out = run("schema-sync", &["--publication", "pub", "--phase", "pre"]);
    assert!(out.status.success(), "schema-sync: {}", text(&out));
    let out = run("copy-data", &["--publication", "pub", "--slot", "s1"]);
    assert!(out.status.success(), "copy-data: {}", text(&out));

    // 300 source transactions, each one row, then an update of each: 600 in all.
    let mut sql = String::new();
    for i in 101..=400 {
        sql.push_str(&format!("INSERT INTO items VALUES ({i}, 'new', {i});\n"));
    }
    for i in 101..=400 {
        sql.push_str(&format!("UPDATE items SET qty = qty + 1 WHERE id = {i};\n"));
    }
    script(primary, &dir, "batch.sql", &sql);
    let lsn = primary.psql("SELECT pg_current_wal_insert_lsn()").unwrap();
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
    let out = run("verify", &[]);
    assert!(out.status.success(), "verify: {}", text(&out));

    // --atomic: every source transaction touches both shards.
    let mut sql = String::new();
    for i in 1..=100 {
        sql.push_str(&format!(
            "UPDATE items SET name = 'atomic' WHERE id IN ({i}, {});\n",
            i + 100
        ));
    }
    script(primary, &dir, "atomic.sql", &sql);
    let lsn = primary.psql("SELECT pg_current_wal_insert_lsn()").unwrap();
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
    let out = run("verify", &[]);
    assert!(
        out.status.success(),
        "verify after --atomic: {}",
        text(&out)
    );

    primary
        .psql("SELECT pg_drop_replication_slot('s1')")
        .expect("dropping the slot");
}
