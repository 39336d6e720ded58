//! Resharding from a sharded source: 2 source shards into 4 destination shards.
//!
//! `copy-data --slot` (in process, with live [`Progress`]) must create the slot on both source primaries, copy the sharded table
//! from both source shards (watermarks keyed `s1` and `s1/1`) and the omnisharded one from
//! source shard 0 only; `replay --until-lsn` must run one stream per source shard, apply the
//! omnisharded table's changes once, and `pgdog verify` must find no difference. Then, in
//! process, a replay with live [`Progress`] and a [`StopAt`] set while it runs must return soon
//! after both streams reached their targets, with per stream progress filled in.
use crate::reshard_common;

use pgdog::config::Settings;
use pgdog::replication::client::parse_lsn;
use pgdog::reshard::copy::{copy_data, CopyDataOptions};
use pgdog::reshard::progress::{Progress, StopAt};
use pgdog::reshard::replay::{replay, ReplayOptions};
use pgdog::reshard::Databases;
use reshard_common::{
    config_dir, copy_data_again, drop_slot, omnisharded, replay_again_applies_nothing,
    replay_applies, schema_sync_pre, sharded_table, shards, verify_ok,
};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use topology::{wait_until, Node, Topology};

fn lsn(node: &Node) -> u64 {
    parse_lsn(&node.psql("SELECT pg_current_wal_insert_lsn()").unwrap()).unwrap()
}

/// Writes WAL on `node` (a non-transactional logical message, which the publication ignores)
/// until its position passes `target`.
fn advance_past(node: &Node, target: u64) {
    wait_until(
        "the source shard's WAL to pass the target",
        Duration::from_secs(30),
        Duration::ZERO,
        || {
            node.psql("SELECT pg_logical_emit_message(false, 'pad', repeat('x', 8192))")?;
            Ok(lsn(node) > target)
        },
    )
    .unwrap();
}

/// The first copy, in process with live progress: a slot on each source shard, one copy per
/// (table, source shard) but the omnisharded table once, watermarks keyed per source shard.
fn copy_in_process(dir: &Path, source: &Topology, dest: &Topology) -> Settings {
    let settings = Settings::load(&dir.join("pgdog.toml"), &dir.join("users.toml")).unwrap();
    let progress = Arc::new(Progress::default());
    let copy_options = CopyDataOptions {
        databases: Databases::new("src", "dst"),
        publication: "pub".into(),
        slot: Some("s1".into()),
        parallel: 2,
        progress: Some(progress.clone()),
        keep_slots: false,
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (slots, copies) = runtime
        .block_on(copy_data(&settings, &copy_options, |_| {}))
        .expect("copy-data");
    assert_eq!(
        slots
            .iter()
            .map(|s| (s.source_shard, s.created))
            .collect::<Vec<_>>(),
        [(0, true), (1, true)]
    );
    assert_eq!(copies.len(), 3, "{copies:?}");
    let mut tables: Vec<_> = progress
        .tables()
        .into_iter()
        .map(|t| {
            assert!(
                t.started.is_some() && t.finished.is_some() && !t.skipped,
                "{t:?}"
            );
            assert!(t.bytes > 0, "{t:?}");
            (t.table, t.source_shard, t.rows)
        })
        .collect();
    tables.sort();
    assert_eq!(
        tables,
        [
            ("public.items".to_string(), 0, 1000),
            ("public.items".to_string(), 1, 1000),
            ("public.kinds".to_string(), 0, 3)
        ]
    );
    for s in 0..2 {
        assert_eq!(
            source
                .shard(s)
                .psql("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 's1'")
                .unwrap(),
            "1",
            "slot on source shard {s}"
        );
    }
    for d in 0..4 {
        assert_eq!(
            dest.shard(d)
                .psql(
                    "SELECT string_agg(slot || ' ' || table_name, ',' ORDER BY slot, table_name) \
                     FROM pgdog_reshard_progress"
                )
                .unwrap(),
            "s1 public.items,s1 public.kinds,s1/1 public.items",
            "watermarks on destination shard {d}"
        );
        assert_eq!(
            dest.shard(d).psql("SELECT count(*) FROM kinds").unwrap(),
            "3",
            "the omnisharded table is copied once"
        );
    }
    settings
}

/// In process: the replay's progress and the per-stream stop targets set while it runs; it
/// returns soon after both streams reached theirs, and verify finds the destination equal.
fn replay_in_process_to_targets(dir: &Path, source: &Topology, settings: Settings) {
    let progress = Arc::new(Progress::default());
    let stop_at = Arc::new(StopAt::default());
    let options = ReplayOptions {
        databases: Databases::new("src", "dst"),
        publication: "pub".into(),
        slot: "s1".into(),
        until_lsn: None,
        progress: Some(progress.clone()),
        stop_at: Some(stop_at.clone()),
        atomic: false,
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let task = runtime
        .spawn(async move { replay(&settings, &options, std::future::pending::<()>()).await });
    for s in 0..2 {
        source
            .shard(s)
            .psql(&format!(
                "INSERT INTO items SELECT i, 'late', 1 FROM generate_series(5001, 5100) i
                  WHERE i % 2 = {s}"
            ))
            .unwrap();
    }
    let targets = vec![lsn(source.shard(0)), lsn(source.shard(1))];
    wait_until(
        "both streams to apply the late inserts",
        Duration::from_secs(30),
        Duration::from_millis(20),
        || {
            let streams = progress.streams();
            Ok(streams.len() == 2
                && streams
                    .iter()
                    .all(|s| s.applied_lsn > 0 && s.transactions >= 1 && s.rows >= 50))
        },
    )
    .unwrap();
    assert!(!task.is_finished(), "no stop target yet");
    let set = Instant::now();
    stop_at.set(targets.clone());
    let summary = runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(10), task).await })
        .expect("replay returns once the targets are reached")
        .unwrap()
        .expect("replay");
    let took = set.elapsed();
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert_eq!(summary.last_lsns.len(), 2);
    let streams = progress.streams();
    for (s, target) in streams.iter().zip(&targets) {
        assert!(
            s.applied_lsn >= *target,
            "stream {} applied {:X}, target {target:X}",
            s.source_shard,
            s.applied_lsn
        );
        assert!(s.last_commit_time.is_some());
        assert!(s.received_lsn >= s.applied_lsn.min(*target));
    }
    verify_ok(dir, source, &[], " at the end");
}

#[test]
fn sharded_source_into_four_shards() {
    let source = Topology::shards(2).expect("source topology");
    let dest = Topology::shards(4).expect("destination topology");
    let config = shards("src", &source, 2)
        + &shards("dst", &dest, 4)
        + &sharded_table("dst", "items", "id", "bigint")
        + &omnisharded("dst", &["kinds"]);
    let dir = config_dir("sharded-source", &config);
    for s in 0..2 {
        source
            .shard(s)
            .psql(&format!(
                "CREATE TABLE items (id bigint PRIMARY KEY, name text, qty int);
                 CREATE TABLE kinds (id int PRIMARY KEY, label text);
                 CREATE PUBLICATION pub FOR TABLE items, kinds;
                 INSERT INTO items SELECT i, 'item ' || i, i FROM generate_series(1, 2000) i
                  WHERE i % 2 = {s};
                 INSERT INTO kinds VALUES (1, 'one'), (2, 'two'), (3, NULL);"
            ))
            .expect("source schema");
    }

    schema_sync_pre(&dir, &source);
    let settings = copy_in_process(&dir, &source, &dest);
    verify_ok(&dir, &source, &[], " after copy");

    // A second copy-data with the same slot finds everything done.
    let output = copy_data_again(&dir, &source, &["--slot", "s1"]);
    assert!(output.contains("reused"), "{output}");
    assert!(
        output.contains("copied 0 tables, 0 rows, 3 already copied"),
        "{output}"
    );

    // Changes on both source shards; the omnisharded table gets the same writes on both.
    for s in 0..2i64 {
        source
            .shard(s as usize)
            .psql(&format!(
                "INSERT INTO items SELECT i, 'new ' || i, i FROM generate_series(3001, 3200) i
                  WHERE i % 2 = {s};
                 UPDATE items SET qty = qty + 1000 WHERE id BETWEEN 10 AND 60;
                 BEGIN;
                 DELETE FROM items WHERE id BETWEEN 100 AND 130;
                 UPDATE items SET id = id + 100000 WHERE id BETWEEN 200 AND 220;
                 UPDATE kinds SET label = 'changed' WHERE id = 2;
                 INSERT INTO kinds VALUES (4, 'four');
                 COMMIT;
                 DELETE FROM kinds WHERE id = 1;"
            ))
            .expect("source changes");
    }
    let until = lsn(source.shard(0)).max(lsn(source.shard(1)));
    for s in 0..2 {
        advance_past(source.shard(s), until);
    }
    let until_text = format!("{:X}/{:X}", until >> 32, until & 0xFFFF_FFFF);
    replay_applies(&dir, &source, "s1", &until_text);
    verify_ok(&dir, &source, &[], " after replay");
    assert_eq!(
        dest.shard(0)
            .psql("SELECT string_agg(slot, ',' ORDER BY slot) FROM pgdog_reshard_position")
            .unwrap(),
        "s1,s1/1"
    );
    replay_again_applies_nothing(&dir, &source, "s1", &until_text);

    replay_in_process_to_targets(&dir, &source, settings);

    for s in 0..2 {
        drop_slot(source.shard(s), "s1");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
