//! Resharding a table whose replica identity lacks the sharding key: `orders`, with a
//! surrogate primary key `id`, sharded by `customer_id` ([`reshard_common::orders`]). Its
//! UPDATE and DELETE are applied by identity on every destination shard, and the rows changed
//! are counted across them: exactly one, a key change moving the row (unchanged TOAST values
//! included), anything else stops the replay as a diverged destination.
//!
//! - under a pgbench-style write load on the source, `pgdog reshard` is killed with SIGKILL
//!   mid-replay and run again: `pgdog verify` reports the destination equal, twice;
//! - `pgdog replay` (two-phase commit) of moves, identity changes and deletes (also several of
//!   one row in one transaction) ends equal, with the moved rows' TOAST values kept;
//! - a row missing on the destination, or present on two shards, stops the replay before
//!   anything of its batch commits;
//! - a move committed on its old shard only (a crash between the shards' commits, reproduced)
//!   is finished from the new row; with unchanged TOAST values it is refused, clearly.
use crate::reshard_common;

use pgdog::replication::client::parse_lsn;
use reshard_common::load::{runtime, wait_for_statements};
use reshard_common::orders::{load, sharded_by_customer, SCHEMA, SEED_ROWS, TOAST_ROWS};
use reshard_common::{
    copy_data_ok, count_on, current_lsn, drop_slot, replay_until, schema_sync_pre, set_resharding,
    shard_of, single_to_two_shards, text, verify_ok, verify_until_equal, wait_for, SRC_DST,
};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use topology::Topology;

/// The source with [`SCHEMA`], two destination shards with `orders` sharded by `customer_id`,
/// and the configuration folder `pgdog-<tag>-<pid>`.
fn orders_source(tag: &str) -> (Topology, Topology, PathBuf) {
    let (source, dest, dir) = single_to_two_shards(tag, &sharded_by_customer());
    source.primary().psql(SCHEMA).expect("source schema");
    (source, dest, dir)
}

/// `pgdog reshard` of publication `pub` with slot `ident` in the background, its output
/// appended to `dir/reshard.log`.
fn spawn_reshard(dir: &Path, source: &Topology) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("reshard.log"))
        .unwrap();
    let args = [&SRC_DST[..], &["--publication", "pub", "--slot", "ident"]].concat();
    reshard_common::command(dir, source, "reshard", &args)
        .stdout(Stdio::from(log.try_clone().unwrap()))
        .stderr(Stdio::from(log))
        .spawn()
        .expect("starting pgdog reshard")
}

fn reshard_log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("reshard.log")).unwrap_or_default()
}

/// The furthest replay position stored on the destination shards (0 when none).
fn position(dest: &Topology) -> u64 {
    (0..2)
        .map(|s| {
            let lsn = dest
                .shard(s)
                .psql(
                    "SELECT coalesce((SELECT lsn FROM pgdog_reshard_position \
                     WHERE slot = 'ident'), '0/0')",
                )
                .unwrap_or_else(|_| "0/0".into());
            parse_lsn(&lsn).unwrap_or(0)
        })
        .max()
        .unwrap_or(0)
}

/// Waits until the stored replay position passed `after`, while `child` runs.
fn wait_for_position_past(dir: &Path, dest: &Topology, child: &mut Child, after: u64) {
    wait_for("the replay to store a position", || {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("pgdog reshard ended: {status}: {}", reshard_log(dir));
        }
        position(dest) > after
    });
}

/// Rows of `orders` with a ~64 kB note, on the source and on the destination.
fn toast_rows(source: &Topology, dest: &Topology) -> (i64, i64) {
    let sql = "SELECT count(*) FROM orders WHERE length(note) = 64000";
    let on_source = source.primary().psql(sql).unwrap().parse().unwrap();
    (on_source, count_on(dest, 2, sql))
}

#[test]
fn reshard_under_writes_resumes_after_kill_and_ends_equal() {
    let (source, dest, dir) = orders_source("identity-load");
    let rt = runtime();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let loads: Vec<_> = (0..2u64)
        .map(|k| {
            let url = source.primary().url("postgres");
            rt.spawn(load(url, 7919 * (k + 1), stop.clone(), done.clone()))
        })
        .collect();
    wait_for_statements(&done, 300);

    let mut reshard = spawn_reshard(&dir, &source);
    wait_for_position_past(&dir, &dest, &mut reshard, 0);
    // Moves of every TOAST row while the replay runs (their notes unchanged, so not sent), and
    // identity changes.
    source
        .primary()
        .psql(&format!(
            "UPDATE orders SET customer_id = customer_id + 1 WHERE id <= {TOAST_ROWS};
             UPDATE orders SET id = id + 1000000 WHERE id BETWEEN 21 AND 30;"
        ))
        .unwrap();
    wait_for_statements(&done, 1000);
    let before_kill = position(&dest);
    wait_for_position_past(&dir, &dest, &mut reshard, before_kill);
    reshard.kill().expect("SIGKILL");
    reshard.wait().unwrap();

    // The writes go on while pgdog is down; the same command resumes.
    wait_for_statements(&done, 500);
    let at_kill = position(&dest);
    let mut reshard = spawn_reshard(&dir, &source);
    wait_for_position_past(&dir, &dest, &mut reshard, at_kill);
    wait_for_statements(&done, 500);

    stop.store(true, Ordering::SeqCst);
    for l in loads {
        let errors = rt.block_on(l).unwrap();
        assert!(errors.is_empty(), "the load saw errors: {errors:?}");
    }
    verify_until_equal(&dir, &source, "src", "dst");
    let (on_source, on_dest) = toast_rows(&source, &dest);
    assert_eq!(on_source, on_dest, "the moved rows kept their TOAST notes");
    assert!(on_source > 0);
    let moved = count_on(
        &dest,
        2,
        "SELECT count(*) FROM orders WHERE id BETWEEN 1000021 AND 1000030",
    );
    let expected: i64 = source
        .primary()
        .psql("SELECT count(*) FROM orders WHERE id BETWEEN 1000021 AND 1000030")
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(moved, expected);

    unsafe {
        libc::kill(reshard.id() as i32, libc::SIGTERM);
    }
    let status = reshard.wait().unwrap();
    let log = reshard_log(&dir);
    assert_eq!(status.code(), Some(3), "{log}");
    assert!(log.contains("stopped during"), "{log}");
    assert!(!log.contains("diverged"), "{log}");
    // The record (cargo test -- --nocapture): what the two runs applied.
    println!(
        "{} statements by the load; reshard output:\n{log}",
        done.load(Ordering::SeqCst)
    );
    drop_slot(source.primary(), "ident");
}

/// The source copied (slot `ident`) into the two shards with the pre-data schema.
fn copied(tag: &str) -> (Topology, Topology, PathBuf) {
    let (source, dest, dir) = orders_source(tag);
    schema_sync_pre(&dir, &source);
    copy_data_ok(&dir, &source, &["--slot", "ident"]);
    (source, dest, dir)
}

#[test]
fn moves_identity_changes_and_deletes_replay_exactly() {
    let (source, dest, dir) = copied("identity-moves");
    // Batches touching both shards commit with two-phase commit here (the other tests commit
    // shard by shard): the changes by identity are made before either.
    set_resharding(&dir, "replay_atomic = true");
    let primary = source.primary();
    // Row 1 (a TOAST note) moves to the other shard with its note unchanged, row 2 moves and is
    // updated again in the same transaction, row 3 moves and is deleted, row 4 changes its id
    // and moves, row 5 is deleted, row 6 is updated in place; new rows are inserted and moved.
    let home = shard_of(&dest, 2, "orders", 1);
    let customer_elsewhere = (0..1000)
        .find(|c| {
            let there = dest
                .shard(1 - home)
                .psql(&format!(
                    "SELECT count(*) FROM orders WHERE customer_id = {c}"
                ))
                .unwrap();
            there != "0"
        })
        .expect("a customer on the other shard");
    primary
        .psql(&format!(
            "UPDATE orders SET customer_id = {customer_elsewhere} WHERE id = 1;
             BEGIN;
             UPDATE orders SET customer_id = customer_id + 1 WHERE id = 2;
             UPDATE orders SET amount = -2 WHERE id = 2;
             UPDATE orders SET customer_id = customer_id + 1 WHERE id = 3;
             DELETE FROM orders WHERE id = 3;
             COMMIT;
             UPDATE orders SET id = 4000, customer_id = customer_id + 1 WHERE id = 4;
             DELETE FROM orders WHERE id = 5;
             UPDATE orders SET amount = 600 WHERE id = 6;
             INSERT INTO orders (customer_id, amount, note)
               SELECT i, i, 'late' FROM generate_series(1, 50) i;
             UPDATE orders SET customer_id = customer_id + 3 WHERE note = 'late';
             UPDATE orders SET customer_id = customer_id + 1 WHERE id BETWEEN 10 AND 300;"
        ))
        .expect("source changes");
    let lsn = current_lsn(primary);
    let out = replay_until(&dir, &source, "ident", &lsn);
    assert!(out.status.success(), "replay: {}", text(&out));

    verify_ok(&dir, &source, &[], "");
    assert_eq!(shard_of(&dest, 2, "orders", 1), 1 - home, "row 1 moved");
    let kept = count_on(
        &dest,
        2,
        "SELECT count(*) FROM orders WHERE id = 1 AND length(note) = 64000",
    );
    assert_eq!(kept, 1, "the moved row kept its TOAST note");
    let rows = count_on(&dest, 2, "SELECT count(*) FROM orders");
    assert_eq!(rows, SEED_ROWS - 2 + 50);
    drop_slot(primary, "ident");
}

/// A destination that diverged: a row missing (deleted by hand), then a row on both shards
/// (copied by hand). Each stops the replay naming the table, the identity and the LSN, with
/// nothing of its batch committed; repaired, the replay goes on and ends equal.
#[test]
fn a_diverged_destination_stops_the_identity_replay() {
    let (source, dest, dir) = copied("identity-diverged");
    let primary = source.primary();
    let missing = shard_of(&dest, 2, "orders", 27);
    let twice = shard_of(&dest, 2, "orders", 28);
    dest.shard(missing)
        .psql("DELETE FROM orders WHERE id = 27")
        .unwrap();
    dest.shard(1 - twice)
        .psql("INSERT INTO orders VALUES (28, 28, 28, 'n28')")
        .unwrap();
    primary
        .psql(
            "BEGIN; INSERT INTO orders (id, customer_id, amount, note) VALUES (5000, 1, 1, 'same'); \
             UPDATE orders SET amount = -7 WHERE id = 27; COMMIT;
             DELETE FROM orders WHERE id = 28;",
        )
        .unwrap();
    let lsn = current_lsn(primary);
    let not_committed = |attempt: &str| {
        let n = count_on(&dest, 2, "SELECT count(*) FROM orders WHERE id = 5000");
        assert_eq!(n, 0, "{attempt}: the batch was rolled back");
    };

    for attempt in ["first", "second"] {
        let out = replay_until(&dir, &source, "ident", &lsn);
        let said = text(&out);
        assert!(!out.status.success(), "{attempt}: {said}");
        assert!(
            said.contains(
                "table public.orders: UPDATE by replica identity (\"id\" = '27') from the source transaction at"
            ) && said.contains("found the row on no destination shard")
                && said.contains("diverged"),
            "{attempt}: {said}"
        );
        not_committed(attempt);
    }

    // Row 27 back as it was copied: now the DELETE of row 28 finds it twice.
    dest.shard(missing)
        .psql("INSERT INTO orders VALUES (27, 27, 27, 'n27')")
        .unwrap();
    let out = replay_until(&dir, &source, "ident", &lsn);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("DELETE by replica identity (\"id\" = '28')")
            && said.contains("found 2 rows across the destination shards"),
        "{said}"
    );

    dest.shard(1 - twice)
        .psql("DELETE FROM orders WHERE id = 28")
        .unwrap();
    let out = replay_until(&dir, &source, "ident", &lsn);
    assert!(out.status.success(), "repaired: {}", text(&out));
    verify_ok(&dir, &source, &[], " once repaired");
    drop_slot(primary, "ident");
}

/// The cost of applying by identity, for the record (`cargo test --test e2e reshard_identity::
/// -- --ignored --nocapture`): 20,000 updates of `orders` (one round trip each), then 2,000
/// deletes (pipelined, counted at the commit), against the same on a table whose primary key
/// holds the sharding key (pipelined).
#[test]
#[ignore]
fn replay_rate_by_identity_and_by_key() {
    let (source, _dest, dir) = single_to_two_shards(
        "identity-rate",
        &(sharded_by_customer()
            + &reshard_common::sharded_table("dst", "keyed", "customer_id", "bigint")),
    );
    let primary = source.primary();
    primary
        .psql(
            "CREATE TABLE orders (id bigint PRIMARY KEY, customer_id bigint NOT NULL, amount int);
             CREATE TABLE keyed (id bigint, customer_id bigint NOT NULL, amount int,
                                 PRIMARY KEY (customer_id, id));
             CREATE PUBLICATION pub FOR TABLE orders, keyed;
             INSERT INTO orders SELECT i, i % 97, 0 FROM generate_series(1, 2000) i;
             INSERT INTO keyed SELECT i, i % 97, 0 FROM generate_series(1, 2000) i;",
        )
        .unwrap();
    schema_sync_pre(&dir, &source);
    copy_data_ok(&dir, &source, &["--slot", "ident"]);
    let replayed = |what: &str, sql: &str, changes: f64| {
        primary.psql(sql).unwrap();
        let lsn = current_lsn(primary);
        let started = std::time::Instant::now();
        let out = replay_until(&dir, &source, "ident", &lsn);
        assert!(out.status.success(), "replay: {}", text(&out));
        let secs = started.elapsed().as_secs_f64();
        println!("{what} replayed in {secs:.2} s ({:.0}/s)", changes / secs);
        verify_ok(&dir, &source, &[], "");
    };
    for table in ["orders", "keyed"] {
        let updates = format!("UPDATE {table} SET amount = amount + 1;\n").repeat(10);
        replayed(&format!("{table}: 20000 updates"), &updates, 20000.0);
        let deletes = format!("DELETE FROM {table}");
        replayed(&format!("{table}: 2000 deletes"), &deletes, 2000.0);
    }
    drop_slot(primary, "ident");
}

/// `pgdog replay --until-lsn <lsn>` aborted by the test hook right after its first destination
/// commit (before the slot is confirmed).
fn replay_aborted_after_first_commit(dir: &Path, source: &Topology, lsn: &str) {
    let args = [
        &SRC_DST[..],
        &[
            "--publication",
            "pub",
            "--slot",
            "ident",
            "--until-lsn",
            lsn,
        ],
    ]
    .concat();
    let out = reshard_common::command(dir, source, "replay", &args)
        .env("PGDOG_TEST_ABORT_AFTER_COMMIT", "1")
        .output()
        .unwrap();
    assert!(!out.status.success(), "the hook aborts: {}", text(&out));
    assert!(
        text(&out).contains("PGDOG_TEST_ABORT_AFTER_COMMIT=1"),
        "{}",
        text(&out)
    );
}

/// A crash between two shards' commits, reproduced: the move of row `id` to another customer
/// is committed on both shards, then taken back on its new shard (row and position), so the
/// rerun finds the row gone from its old shard, which skips the change. Returns the new shard.
fn move_committed_on_the_old_shard_only(
    source: &Topology,
    dest: &Topology,
    dir: &Path,
    id: i64,
) -> (usize, String) {
    let primary = source.primary();
    let old = shard_of(dest, 2, "orders", id);
    let customer = dest
        .shard(1 - old)
        .psql("SELECT min(customer_id) FROM orders")
        .unwrap();
    let before = current_lsn(primary);
    primary
        .psql(&format!(
            "UPDATE orders SET customer_id = {customer} WHERE id = {id}"
        ))
        .unwrap();
    let lsn = current_lsn(primary);
    replay_aborted_after_first_commit(dir, source, &lsn);
    assert_eq!(shard_of(dest, 2, "orders", id), 1 - old, "moved");
    dest.shard(1 - old)
        .psql(&format!(
            "DELETE FROM orders WHERE id = {id};
             UPDATE pgdog_reshard_position SET lsn = '{before}' WHERE slot = 'ident'"
        ))
        .unwrap();
    (1 - old, lsn)
}

/// The shards' positions differ after a crash: the change is counted on the shards that still
/// need it only. A row whose old shard already applied its move is upserted from the new row
/// on its new shard; with unchanged TOAST values (not sent) that is refused, clearly.
#[test]
fn a_move_half_committed_before_a_crash_is_finished() {
    let (source, dest, dir) = copied("identity-half");
    let (new_shard, lsn) = move_committed_on_the_old_shard_only(&source, &dest, &dir, 30);
    let out = replay_until(&dir, &source, "ident", &lsn);
    assert!(out.status.success(), "replay: {}", text(&out));
    assert_eq!(shard_of(&dest, 2, "orders", 30), new_shard);
    verify_ok(&dir, &source, &[], "");

    let (_, lsn) = move_committed_on_the_old_shard_only(&source, &dest, &dir, 1);
    let out = replay_until(&dir, &source, "ident", &lsn);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("unchanged TOAST values the source did not send, and its old shard already applied the move"),
        "{said}"
    );
    drop_slot(source.primary(), "ident");
}
