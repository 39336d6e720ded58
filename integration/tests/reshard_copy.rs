//! `pgdog copy-data` end to end: a primary + standby source (the standby configured as the
//! replica it copies from) into a two-shard destination whose schema comes from
//! `pgdog schema-sync --phase pre`. A sharded table (bigint key; NULLs, tabs, newlines, bytea)
//! and an omnisharded one; then `pgdog verify` must find no difference, the permanent slot must
//! exist on the primary and no temporary slot may be left on the standby.
use crate::reshard_common;

use pgdog::config::Settings;
use pgdog::reshard::copy::CopyDataOptions;
use pgdog::reshard::Databases;
use reshard_common::{
    assert_spread_over_two_shards, config_dir, count_on, drop_slot, line_starting, omnisharded,
    pgdog_with, schema_sync_pre, sharded_table, shards, text, verify_ok, wait_for_no_slots,
    SRC_DST as DBS,
};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use topology::{wait_until, Topology};

const SCHEMA: &str = "
CREATE TABLE users (
    id bigint PRIMARY KEY,
    name text,
    note text,
    data bytea,
    score numeric,
    created timestamptz
);
CREATE TABLE kinds (id int PRIMARY KEY, label text);
CREATE TABLE other (id int PRIMARY KEY);
CREATE PUBLICATION pub FOR TABLE users, kinds;
CREATE PUBLICATION pub_other FOR TABLE other;
";

const ROWS: i64 = 5000;

/// A primary + standby source with [`SCHEMA`] and `rows`, a two-shard destination with its
/// pre-data schema (`schema-sync`, once the standby caught up), and the configuration folder
/// `pgdog-<tag>-<pid>`: `src` on the primary and the standby (a replica), `dst` on the shards
/// with `users` sharded by id and `kinds` omnisharded.
fn setup(tag: &str, rows: &str) -> (Topology, Topology, PathBuf) {
    let source = Topology::replicated().expect("source topology");
    let dest = Topology::shards(2).expect("destination topology");
    let config = reshard_common::database("src", 0, source.primary().port, "primary")
        + &reshard_common::database("src", 0, source.standby().port, "replica")
        + &shards("dst", &dest, 2)
        + &sharded_table("dst", "users", "id", "bigint")
        + &omnisharded("dst", &["kinds"]);
    let dir = config_dir(tag, &config);
    let primary = source.primary();
    primary.psql(SCHEMA).expect("source schema");
    primary.psql(rows).expect("source rows");
    source
        .wait_for_standby(Duration::from_secs(30))
        .expect("standby caught up");
    schema_sync_pre(&dir, &source);
    (source, dest, dir)
}

/// The settings of `dir` and in-process copy-data options of `pub` from src to dst.
fn copy_options(dir: &Path, slot: &str, parallel: usize) -> (Settings, CopyDataOptions) {
    let settings = Settings::load(&dir.join("pgdog.toml"), &dir.join("users.toml")).unwrap();
    let options = CopyDataOptions {
        databases: Databases::new("src", "dst"),
        publication: "pub".into(),
        slot: Some(slot.into()),
        parallel,
        progress: None,
        keep_slots: false,
    };
    (settings, options)
}

/// The temporary slots of the copies leave with their connections.
fn wait_standby_slots_gone(source: &Topology) {
    wait_for_no_slots(
        source.standby(),
        "slot_type = 'logical'",
        "the temporary slots on the standby to go away",
    );
}

/// `copy-data --publication <publication> --slot <slot> <more...>` from src to dst fails
/// (exit 1) with each of `said` in its output, and leaves no slot `slot` on the primary.
fn copy_data_fails(
    dir: &Path,
    source: &Topology,
    (publication, slot, more): (&str, &str, &[&str]),
    said: &[&str],
) {
    let args = [&["--publication", publication, "--slot", slot], more].concat();
    let out = pgdog_with(dir, source, "copy-data", &DBS, &args);
    let output = text(&out);
    assert_eq!(out.status.code(), Some(1), "{output}");
    for s in said {
        assert!(output.contains(s), "{output}");
    }
    assert_eq!(
        source
            .primary()
            .psql(&format!(
                "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{slot}'"
            ))
            .unwrap(),
        "0",
        "the failed copy's permanent slot {slot} is dropped"
    );
}

/// A failure on one shard rolls the table back on every shard (kind 1 already exists on shard
/// 1 only) and drops the slot the copy made; the destination is cleared afterwards.
fn failed_copy_rolls_back(dir: &Path, source: &Topology, dest: &Topology) {
    dest.shard(1)
        .psql("INSERT INTO kinds VALUES (1, 'in the way')")
        .unwrap();
    copy_data_fails(
        dir,
        source,
        ("pub", "reshard0", &["--parallel", "1"]),
        &["kinds_pkey", "slot reshard0 created"],
    );
    assert_eq!(
        dest.shard(0).psql("SELECT count(*) FROM kinds").unwrap(),
        "0"
    );
    for s in 0..2 {
        dest.shard(s)
            .psql("TRUNCATE kinds, users")
            .expect("clearing the destination");
    }
}

#[test]
fn copy_data_from_standby_into_two_shards() {
    let rows = format!(
        "INSERT INTO users
             SELECT i,
                    CASE WHEN i % 10 = 0 THEN NULL ELSE 'user ' || i END,
                    CASE WHEN i % 3 = 0 THEN E'tab\\there\\nnew line\\\\ back' WHEN i % 3 = 1 THEN NULL ELSE '' END,
                    CASE WHEN i % 4 = 0 THEN NULL ELSE decode(md5(i::text), 'hex') || '\\x000a0d09'::bytea END,
                    CASE WHEN i % 5 = 0 THEN NULL ELSE i * 1.5 END,
                    '2024-01-01'::timestamptz + i * interval '1 minute'
             FROM generate_series(-{half}, {rest}) i;
             INSERT INTO kinds VALUES (1, 'one'), (2, E'two\\ttabs'), (3, NULL);
             INSERT INTO other VALUES (1);",
        half = ROWS / 2,
        rest = ROWS - ROWS / 2 - 1
    );
    let (source, dest, dir) = setup("copy-data", &rows);
    let primary = source.primary();

    failed_copy_rolls_back(&dir, &source, &dest);

    let out = pgdog_with(
        &dir,
        &source,
        "copy-data",
        &DBS,
        &[
            "--publication",
            "pub",
            "--slot",
            "reshard1",
            "--parallel",
            "2",
        ],
    );
    let output = text(&out);
    assert!(out.status.success(), "copy-data: {output}");
    assert!(
        output.contains(&format!("table public.users: {ROWS} rows, watermark ")),
        "{output}"
    );
    assert!(
        output.contains("table public.kinds: 3 rows, watermark "),
        "{output}"
    );
    assert!(output.contains("slot reshard1 created"), "{output}");
    // Both tables were read from the standby.
    let standby = format!("(read from 127.0.0.1:{})", source.standby().port);
    assert_eq!(output.matches(&standby).count(), 2, "{output}");

    // Both shards got users, each kind is everywhere.
    assert_spread_over_two_shards(&dest, "users", ROWS);
    for s in 0..2 {
        assert_eq!(
            dest.shard(s).psql("SELECT count(*) FROM kinds").unwrap(),
            "3"
        );
    }

    verify_ok(&dir, &source, &["users", "kinds"], "");

    // The permanent slot is on the primary; the temporary ones left with their connections.
    assert_eq!(
        primary
            .psql("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'reshard1' AND NOT temporary AND slot_type = 'logical'")
            .unwrap(),
        "1"
    );
    wait_standby_slots_gone(&source);

    // A table the destination neither shards nor replicates: refused, naming the table, before
    // any slot is made.
    copy_data_fails(
        &dir,
        &source,
        ("pub_other", "reshard2", &[]),
        &["public.other is neither sharded nor omnisharded"],
    );

    drop_slot(primary, "reshard1");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An LSN `X/Y` as a number.
fn lsn(s: &str) -> u64 {
    let (hi, lo) = s.trim().split_once('/').expect("an LSN");
    (u64::from_str_radix(hi, 16).unwrap() << 32) | u64::from_str_radix(lo, 16).unwrap()
}

/// One row inserted by the background writer: its id and the WAL insert position just before
/// the INSERT and just after its commit.
#[derive(Debug, Clone, Copy)]
struct Written {
    id: i64,
    before: u64,
    after: u64,
}

/// While the copy runs, a writer keeps inserting users on the primary (one transaction each).
/// A row committed before the table's watermark must be in the copy; a row whose INSERT began
/// after the watermark must not be.
#[test]
fn copy_data_respects_each_tables_watermark_under_writes() {
    let (source, dest, dir) = setup(
        "copy-data-live",
        "INSERT INTO users (id, name) SELECT i, 'user ' || i FROM generate_series(1, 2000) i",
    );
    let primary = source.primary();

    let stop = Arc::new(AtomicBool::new(false));
    let written: Arc<Mutex<Vec<Written>>> = Arc::default();
    let writer = spawn_writer(primary.url("postgres"), stop.clone(), written.clone());
    wait_written(&written, 0, 20);

    let out = pgdog_with(
        &dir,
        &source,
        "copy-data",
        &DBS,
        &["--publication", "pub", "--parallel", "2"],
    );
    let output = text(&out);
    assert!(out.status.success(), "copy-data: {output}");
    let after_copy = written.lock().unwrap().len();
    wait_written(&written, after_copy, 20);
    stop.store(true, Ordering::SeqCst);
    writer.join().expect("writer");

    let line = line_starting(&output, "table public.users: ");
    let watermark = lsn(line
        .split("watermark ")
        .nth(1)
        .and_then(|w| w.split(' ').next())
        .unwrap());
    let copied = copied_live_ids(&dest);
    assert_watermark(&written.lock().unwrap(), &copied, watermark);
    let base: i64 = count_on(&dest, 2, "SELECT count(*) FROM users WHERE id < 1000000");
    assert_eq!(base, 2000);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Starts a writer inserting one user per transaction on `url` (ids from 1000000) and recording
/// the WAL insert position around each INSERT, until `stop` is set.
fn spawn_writer(
    url: String,
    stop: Arc<AtomicBool>,
    written: Arc<Mutex<Vec<Written>>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .expect("writer connects");
            tokio::spawn(conn);
            let position = "SELECT pg_current_wal_insert_lsn()::text";
            let mut id = 1_000_000i64;
            while !stop.load(Ordering::SeqCst) {
                let before: String = client.query_one(position, &[]).await.unwrap().get(0);
                client
                    .execute("INSERT INTO users (id, name) VALUES ($1, 'live')", &[&id])
                    .await
                    .unwrap();
                let after: String = client.query_one(position, &[]).await.unwrap().get(0);
                written.lock().unwrap().push(Written {
                    id,
                    before: lsn(&before),
                    after: lsn(&after),
                });
                id += 1;
            }
        })
    })
}

/// Waits until the writer has `n` rows more than `from`.
fn wait_written(written: &Arc<Mutex<Vec<Written>>>, from: usize, n: usize) {
    wait_until(
        "the writer to insert rows",
        Duration::from_secs(30),
        Duration::from_millis(10),
        || Ok(written.lock().unwrap().len() >= from + n),
    )
    .unwrap();
}

/// The writer's rows (ids from 1000000) the destination shards hold.
fn copied_live_ids(dest: &Topology) -> std::collections::HashSet<i64> {
    let mut copied = std::collections::HashSet::new();
    for s in 0..2 {
        let ids = dest
            .shard(s)
            .psql("SELECT string_agg(id::text, ',') FROM users WHERE id >= 1000000")
            .unwrap();
        copied.extend(
            ids.split(',')
                .filter(|x| !x.is_empty())
                .map(|x| x.parse::<i64>().unwrap()),
        );
    }
    copied
}

/// Every row committed before `watermark` was copied and none inserted after it; at least
/// 20 of each kind, so the check had something to check.
fn assert_watermark(written: &[Written], copied: &std::collections::HashSet<i64>, watermark: u64) {
    assert_watermarks(written, copied, |_| watermark);
}

/// [`assert_watermark`] with each row's own watermark (its key range's).
fn assert_watermarks(
    written: &[Written],
    copied: &std::collections::HashSet<i64>,
    watermark_of: impl Fn(i64) -> u64,
) {
    let (mut inside, mut outside) = (0, 0);
    for w in written {
        let watermark = watermark_of(w.id);
        if w.after <= watermark {
            assert!(copied.contains(&w.id), "{w:?} before {watermark:X} missing");
            inside += 1;
        } else if w.before >= watermark {
            assert!(!copied.contains(&w.id), "{w:?} after {watermark:X} copied");
            outside += 1;
        }
    }
    assert!(
        inside >= 20 && outside >= 20,
        "inside {inside}, outside {outside}"
    );
}

/// Count and order-independent checksum of the users below id 1000000 on one node.
const USERS_SUM: &str =
    "SELECT count(*) || ' ' || coalesce(sum(hashtext(u::text)::bigint), 0) FROM users u WHERE id < 1000000";

fn sum_of(rows: &[String]) -> (i64, i64) {
    rows.iter()
        .map(|r| {
            let (c, s) = r.split_once(' ').unwrap();
            (c.parse::<i64>().unwrap(), s.parse::<i64>().unwrap())
        })
        .fold((0, 0), |(c, s), (c2, s2)| (c + c2, s + s2))
}

/// The bounds of a key range's progress name, `schema.table ["column" lo..hi)`.
fn range_bounds(name: &str) -> (Option<i64>, Option<i64>) {
    let inner = &name[name.rfind(" [").expect(name) + 2..name.len() - 1];
    let (lo, hi) = inner.rsplit_once(' ').unwrap().1.split_once("..").unwrap();
    let end = |s: &str| (!s.is_empty()).then(|| s.parse::<i64>().unwrap());
    (end(lo), end(hi))
}

/// A table above the (lowered) split threshold, whose key is a bigint primary key, is copied
/// from the standby in key ranges, each under its own snapshot, while a writer keeps inserting
/// on the primary: the ranges cover every key once, the destination shards together hold
/// exactly the source's rows (count and checksum), each row committed before its range's
/// watermark and none inserted after it, and the small omnisharded table is read whole.
#[test]
fn copy_data_splits_a_large_table_into_key_ranges_under_writes() {
    use pgdog::reshard::copy::{copy_data_tuned, CopyTuning, TableCopy};
    let (source, dest, dir) = setup(
        "copy-data-split",
        "INSERT INTO users (id, name, note, data, score)
         SELECT i, 'user ' || i, CASE WHEN i % 7 = 0 THEN NULL ELSE repeat('n', i % 90) END,
                decode(md5(i::text), 'hex'), i * 0.5
         FROM generate_series(1, 20000) i;
         DELETE FROM users WHERE id % 11 = 0;
         INSERT INTO kinds VALUES (1, 'one'), (2, NULL);",
    );
    let primary = source.primary();
    let expected = sum_of(&[primary.psql(USERS_SUM).unwrap()]);
    assert_eq!(expected.0, 20000 - 20000 / 11);

    let stop = Arc::new(AtomicBool::new(false));
    let written: Arc<Mutex<Vec<Written>>> = Arc::default();
    let writer = spawn_writer(primary.url("postgres"), stop.clone(), written.clone());
    wait_written(&written, 0, 20);

    let (settings, options) = copy_options(&dir, "split", 3);
    let tuning = CopyTuning {
        split_bytes: 512 * 1024,
    };
    let mut copies: Vec<TableCopy> = Vec::new();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime
        .block_on(copy_data_tuned(&settings, &options, tuning, |t| {
            copies.push(t.clone())
        }))
        .expect("copy-data");
    let after_copy = written.lock().unwrap().len();
    wait_written(&written, after_copy, 20);
    stop.store(true, Ordering::SeqCst);
    writer.join().expect("writer");

    let mut users: Vec<(Option<i64>, Option<i64>, &TableCopy)> = copies
        .iter()
        .filter(|c| c.table.starts_with("public.users [\"id\" "))
        .map(|c| {
            let (lo, hi) = range_bounds(&c.table);
            (lo, hi, c)
        })
        .collect();
    users.sort_by_key(|(lo, _, _)| *lo);
    assert!(users.len() >= 3, "{copies:?}");
    assert_eq!(users.first().unwrap().0, None);
    assert_eq!(users.last().unwrap().1, None);
    assert!(users
        .windows(2)
        .all(|w| w[0].1.is_some() && w[0].1 == w[1].0));
    for (_, _, c) in &users {
        assert_eq!(c.readers, 1, "{c}");
        assert_eq!(c.source, format!("127.0.0.1:{}", source.standby().port));
    }
    let kinds = copies
        .iter()
        .find(|c| c.table == "public.kinds")
        .expect("kinds copied");
    assert_eq!(kinds.readers, 1, "{kinds}");
    assert_eq!(kinds.rows, 2);

    // The rows before the writer: exactly the source's.
    let got = sum_of(
        &(0..2)
            .map(|s| dest.shard(s).psql(USERS_SUM).unwrap())
            .collect::<Vec<_>>(),
    );
    assert_eq!(got, expected);
    for s in 0..2 {
        assert_ne!(
            dest.shard(s).psql("SELECT count(*) FROM users").unwrap(),
            "0"
        );
    }
    // The live rows: by their range's watermark.
    let copied = copied_live_ids(&dest);
    assert_watermarks(&written.lock().unwrap(), &copied, |id| {
        let (_, _, c) = users
            .iter()
            .find(|(lo, hi, _)| lo.is_none_or(|lo| lo <= id) && hi.is_none_or(|hi| id < hi))
            .expect("a range holds every key");
        c.watermark
    });
    let rows: u64 = users.iter().map(|(_, _, c)| c.rows).sum();
    assert_eq!(rows as i64, expected.0 + copied.len() as i64);
    // A watermark row per range, and kinds', on both shards.
    for s in 0..2 {
        assert_eq!(
            dest.shard(s)
                .psql(
                    "SELECT count(*) FROM pgdog_reshard_progress \
                     WHERE slot = 'split' AND watermark IS NOT NULL"
                )
                .unwrap(),
            (users.len() + 1).to_string()
        );
    }
    wait_standby_slots_gone(&source);
    drop_slot(primary, "split");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Dropping the `copy_data` future (what the orchestrator does on Ctrl-C or STOP) while a copy
/// holds its destination transactions open stops that copy: its temporary slot on the
/// standby goes away while the destination is still blocked, and once unblocked no row and
/// no watermark was committed.
#[test]
fn dropping_copy_data_aborts_its_copies() {
    use pgdog::reshard::copy::{copy_data_tuned, CopyTuning, PROGRESS_DDL};
    let (source, dest, dir) = setup(
        "copy-data-drop",
        "INSERT INTO users (id, name) SELECT i, 'user ' || i FROM generate_series(1, 5000) i;
         INSERT INTO kinds VALUES (1, 'one');",
    );
    let primary = source.primary();
    for s in 0..2 {
        dest.shard(s).psql(PROGRESS_DDL).expect("progress tables");
    }

    let (settings, options) = copy_options(&dir, "dropped", 2);
    // Whole tables: key ranges would first record their plan in the locked progress table.
    let tuning = CopyTuning { split_bytes: 0 };
    let standby_url = source.standby().url("postgres");
    let shard1_url = dest.shard(1).url("postgres");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let connect = |url: String| async move {
            let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .expect("connects");
            tokio::spawn(conn);
            client
        };
        // Shard 1 blocks the watermark rows: every table's rows are sent, none can commit.
        let locker = connect(shard1_url.clone()).await;
        locker
            .batch_execute("BEGIN; LOCK TABLE pgdog_reshard_progress IN EXCLUSIVE MODE")
            .await
            .expect("lock");
        let watcher = connect(shard1_url).await;
        let standby = connect(standby_url).await;
        let temporary_slots = || async {
            standby
                .query_one(
                    "SELECT count(*) FROM pg_replication_slots WHERE temporary",
                    &[],
                )
                .await
                .expect("slots")
                .get::<_, i64>(0)
        };

        // Boxed, so that dropping it drops the future itself.
        let mut copy = Box::pin(copy_data_tuned(&settings, &options, tuning, |t| {
            panic!("nothing may finish: {t}")
        }));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            tokio::select! {
                r = &mut copy => panic!("copy-data ended while blocked: {r:?}"),
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
            let waiting: i64 = watcher
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO pgdog_reshard_progress%'",
                    &[],
                )
                .await
                .expect("activity")
                .get(0);
            // One copy blocked at its watermark row is enough.
            if waiting >= 1 {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no copy reached its watermark row"
            );
        }
        assert!(temporary_slots().await >= 1);
        drop(copy);

        // Still locked: only aborting the copies can close their replication connections.
        wait_for_zero(
            "the temporary slots stayed after the copy was dropped",
            temporary_slots,
        )
        .await;
        // A backend waiting for a lock notices its client is gone only once it gets the lock:
        // unblock, then the copy's sessions end without committing.
        locker.batch_execute("COMMIT").await.expect("unlock");
        let copy_sessions = || async {
            watcher
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'INSERT INTO pgdog_reshard_progress%' \
                        OR query LIKE 'COPY %FROM STDIN%'",
                    &[],
                )
                .await
                .expect("activity")
                .get::<_, i64>(0)
        };
        wait_for_zero(
            "the copy's destination sessions stayed after the copy was dropped",
            copy_sessions,
        )
        .await;
    });
    for s in 0..2 {
        for table in ["users", "kinds", "pgdog_reshard_progress"] {
            assert_eq!(
                dest.shard(s)
                    .psql(&format!("SELECT count(*) FROM {table}"))
                    .unwrap(),
                "0",
                "shard {s} {table}"
            );
        }
    }
    drop_slot(primary, "dropped");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Polls the async `count` every 20 ms until it is 0; fails with `stayed` after 30 s.
async fn wait_for_zero<F: Future<Output = i64>>(stayed: &str, count: impl Fn() -> F) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while count().await > 0 {
        assert!(tokio::time::Instant::now() < deadline, "{stayed}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
