//! Adding a third shard by moving buckets, with the step commands: `src` is shards 0 and 1 with
//! 1,024 buckets in the default map (plain hash over 2), `dst` is the same two servers plus a
//! third one, with the map `pgdog buckets --shards 3` prints (a third of the buckets move to the
//! new shard, taken evenly). `copy-data --slot` copies only the rows of the moving buckets
//! (those whose destination shard is not their own server) and the omnisharded table to the new
//! shard; changes on both source shards (inserts, updates, deletes, on moving and staying
//! buckets and the omnisharded table) replay only onto the new shard; `cleanup --delete` then
//! removes the moved rows from their old shards. Every row ends on its bucket's shard exactly
//! once (Postgres' `satisfies_hash_partition` with modulus 1,024 decides) with the source's
//! values. Key UPDATEs move rows between moving and staying buckets on a source shard. Then
//! the move back: from `dst` to `back` (servers 0 and 1 with the default map), the new shard's
//! rows return to their old shards and nothing else is copied. Without the staying rule the
//! copy would write rows onto their own server (a key conflict) and the replay would delete
//! rows there twice (a diverged DELETE).
use crate::reshard_common;

use pgdog::sharding::Buckets;
use reshard_common::load::{
    admin_url, cutover_args, start_loads, stop_clean_loads, wait_for_cutover, wait_for_statements,
    ADMIN_PASSWORD, USERS,
};
use reshard_common::{
    copy_data_again, drop_slot, omnisharded, replay_applies, run_ok, schema_sync_pre,
    sharded_table, shards, sigterm, slot_active_on_shards, spawn, text,
};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use topology::proxy::Proxy;
use topology::{wait_until, Node, Topology};

const B: u32 = 1024;

fn lsn(node: &Node) -> u64 {
    let text = node.psql("SELECT pg_current_wal_insert_lsn()").unwrap();
    let (hi, lo) = text.split_once('/').unwrap();
    (u64::from_str_radix(hi, 16).unwrap() << 32) | u64::from_str_radix(lo, 16).unwrap()
}

/// Rows of `items` on `node` whose bucket is one of `buckets`: count and checksum of
/// (id, name, qty).
fn in_buckets(node: &Node, buckets: &[u32]) -> String {
    let list: Vec<String> = buckets.iter().map(|b| b.to_string()).collect();
    node.psql(&format!(
        "SELECT count(*) || ' ' || coalesce(sum(hashtext(i::text)::bigint), 0) FROM items i \
         WHERE EXISTS (SELECT 1 FROM unnest('{{{}}}'::int[]) b \
                        WHERE satisfies_hash_partition('probe'::regclass, {B}, b, i.id))",
        list.join(",")
    ))
    .unwrap()
}

fn sum(parts: &[String]) -> (i64, i64) {
    parts.iter().fold((0, 0), |(c, s), p| {
        let (a, b) = p.split_once(' ').unwrap();
        (c + a.parse::<i64>().unwrap(), s + b.parse::<i64>().unwrap())
    })
}

#[test]
fn adding_a_shard_moves_only_its_buckets() {
    let topo = Topology::shards(3).expect("3 servers");
    let old = Buckets::default_map(B, 2);
    let new = old.rebalanced(3);
    let config = shards("src", &topo, 2)
        + &shards("dst", &topo, 3)
        + &shards("back", &topo, 2)
        + &sharded_table("back", "items", "id", "bigint")
        + &omnisharded("back", &["kinds"])
        + &sharded_table("src", "items", "id", "bigint")
        + &sharded_table("dst", "items", "id", "bigint")
        + &omnisharded("src", &["kinds"])
        + &omnisharded("dst", &["kinds"])
        + &format!("\n[[bucket_maps]]\ndatabase = \"src\"\nbuckets = {B}\n\n")
        + &new.to_toml("dst");
    let dir = reshard_common::config_dir("buckets", &config);
    for s in 0..3 {
        topo.shard(s)
            .psql("CREATE TABLE probe (k bigint) PARTITION BY HASH (k)")
            .unwrap();
    }
    for s in 0..2 {
        topo.shard(s)
            .psql(&format!(
                "CREATE TABLE items (id bigint PRIMARY KEY, name text, qty int);
                 CREATE TABLE kinds (id int PRIMARY KEY, label text);
                 CREATE PUBLICATION pub FOR TABLE items, kinds;
                 INSERT INTO items SELECT i, 'item ' || i, i FROM generate_series(1, 3000) i
                  WHERE satisfies_hash_partition('probe'::regclass, 2, {s}, i::bigint);
                 INSERT INTO kinds VALUES (1, 'one'), (2, 'two'), (3, NULL);"
            ))
            .expect("source schema");
    }
    schema_sync_pre(&dir, &topo);
    let output = copy_data_again(&dir, &topo, &["--slot", "s1"]);
    // Only the moving buckets' rows reached the new shard; the old ones have no new rows.
    assert_eq!(
        topo.shard(2).psql("SELECT count(*) FROM kinds").unwrap(),
        "3"
    );
    let moved = in_buckets(topo.shard(2), &new.buckets_of(2));
    let all = topo.shard(2).psql("SELECT count(*) FROM items").unwrap();
    assert_eq!(moved.split(' ').next().unwrap(), all, "{output}");
    let before: Vec<String> = (0..2)
        .map(|s| in_buckets(topo.shard(s), &new.buckets_of(2)))
        .collect();
    assert_eq!(sum(&before), sum(std::slice::from_ref(&moved)), "{output}");

    // Changes on both source shards, each on the rows it holds (the old map).
    for s in 0..2 {
        topo.shard(s)
            .psql(&format!(
                "INSERT INTO items SELECT i, 'new ' || i, i FROM generate_series(3001, 3600) i
                  WHERE satisfies_hash_partition('probe'::regclass, 2, {s}, i::bigint);
                 UPDATE items SET qty = qty + 1000 WHERE id BETWEEN 10 AND 400;
                 UPDATE items SET id = id + 10000, name = 'rekeyed' WHERE id BETWEEN 900 AND 1100
                   AND satisfies_hash_partition('probe'::regclass, 2, {s}, id + 10000);
                 DELETE FROM items WHERE id BETWEEN 500 AND 800;
                 UPDATE kinds SET label = 'changed' WHERE id = 2;
                 INSERT INTO kinds VALUES (4, 'four');
                 DELETE FROM kinds WHERE id = 1;"
            ))
            .expect("source changes");
    }
    let until = lsn(topo.shard(0)).max(lsn(topo.shard(1)));
    for s in 0..2 {
        wait_until(
            "the source shard's WAL to pass the target",
            std::time::Duration::from_secs(30),
            std::time::Duration::ZERO,
            || {
                topo.shard(s)
                    .psql("SELECT pg_logical_emit_message(false, 'pad', repeat('x', 8192))")?;
                Ok(lsn(topo.shard(s)) > until)
            },
        )
        .unwrap();
    }
    let until_text = format!("{:X}/{:X}", until >> 32, until & 0xFFFF_FFFF);
    // A replay that dies right after its first destination commit (as kill -9 would), then
    // one that resumes from the stored positions.
    let crashed = reshard_common::command(
        &dir,
        &topo,
        "replay",
        &[
            "--from-database",
            "src",
            "--to-database",
            "dst",
            "--publication",
            "pub",
            "--slot",
            "s1",
            "--until-lsn",
            &until_text,
        ],
    )
    .env("PGDOG_TEST_ABORT_AFTER_COMMIT", "1")
    .output()
    .unwrap();
    assert!(!crashed.status.success(), "{}", text(&crashed));
    // The dead replay's walsenders end on their own; a replay started before would find its
    // slot in use.
    for s in 0..2 {
        wait_until(
            "the crashed replay's slot to be released",
            std::time::Duration::from_secs(30),
            std::time::Duration::from_millis(20),
            || Ok(!reshard_common::slot_active(topo.shard(s), "s1")),
        )
        .unwrap();
    }
    replay_applies(&dir, &topo, "s1", &until_text);

    // The new shard holds exactly the source's rows of its buckets, and the same kinds.
    let source: Vec<String> = (0..2)
        .map(|s| in_buckets(topo.shard(s), &new.buckets_of(2)))
        .collect();
    let moved = in_buckets(topo.shard(2), &new.buckets_of(2));
    assert_eq!(sum(std::slice::from_ref(&moved)), sum(&source));
    let kinds = "SELECT string_agg(id || ':' || coalesce(label, '-'), ',' ORDER BY id) FROM kinds";
    assert_eq!(
        topo.shard(2).psql(kinds).unwrap(),
        topo.shard(0).psql(kinds).unwrap()
    );
    let all = topo.shard(2).psql("SELECT count(*) FROM items").unwrap();
    assert_eq!(moved.split(' ').next().unwrap(), all);
    let total_before = sum(&(0..2)
        .map(|s| in_buckets(topo.shard(s), &(0..B).collect::<Vec<_>>()))
        .collect::<Vec<_>>());

    // Cleanup: the moved rows leave their old shards; every row once, on its bucket's shard.
    let said = run_ok(
        &dir,
        &topo,
        "cleanup",
        &["--database", "dst", "--delete"],
        &[],
    );
    assert!(
        said.contains(&format!(
            "{} rows placed on another shard, {} deleted",
            all, all
        )),
        "{said}"
    );
    let after: Vec<String> = (0..3)
        .map(|s| in_buckets(topo.shard(s), &new.buckets_of(s)))
        .collect();
    assert_eq!(sum(&after), total_before);
    for (s, part) in after.iter().enumerate() {
        let n = topo.shard(s).psql("SELECT count(*) FROM items").unwrap();
        assert_eq!(part.split(' ').next().unwrap(), n, "shard {s}");
    }
    for s in 0..2 {
        drop_slot(topo.shard(s), "s1");
    }
    move_back(&dir, &topo, &new, total_before);
    let _ = std::fs::remove_dir_all(&dir);
}

/// From `dst` (3 shards, the new map) back to `back` (shards 0 and 1, the default map): the
/// third shard's rows return, the rows already on 0 and 1 stay, and every row is once on its
/// old shard.
fn move_back(dir: &std::path::Path, topo: &Topology, new: &Buckets, total: (i64, i64)) {
    let old = Buckets::default_map(B, 2);
    topo.shard(2)
        .psql("CREATE PUBLICATION pub FOR TABLE items, kinds")
        .unwrap();
    let dbs = ["--from-database", "dst", "--to-database", "back"];
    let said = run_ok(
        dir,
        topo,
        "copy-data",
        &dbs,
        &["--publication", "pub", "--slot", "s2"],
    );
    let moved = topo.shard(2).psql("SELECT count(*) FROM items").unwrap();
    assert!(
        said.contains(&format!("{moved} rows")) || moved == "0",
        "only the third shard's rows are copied: {said}"
    );
    let back: Vec<String> = (0..2)
        .map(|s| in_buckets(topo.shard(s), &old.buckets_of(s)))
        .collect();
    assert_eq!(sum(&back), total);
    for (s, part) in back.iter().enumerate() {
        let n = topo.shard(s).psql("SELECT count(*) FROM items").unwrap();
        assert_eq!(part.split(' ').next().unwrap(), n, "shard {s}");
    }
    assert!(new.buckets_of(2).iter().all(|&b| old.shard(b) < 2));
    for s in 0..3 {
        drop_slot(topo.shard(s), "s2");
    }
}

/// The same move by `pgdog reshard --cutover --reverse` while clients write through pgdog: the
/// proxy switches to the 3-shard map with no client error, reverse replication keeps the old
/// layout's servers in step (only the new shard's changes travel back), and after the reshard
/// stops, `cleanup` on the switched name leaves every row once, on its bucket's shard.
#[test]
fn adding_a_shard_by_buckets_with_cutover_under_load() {
    let topo = Topology::shards(3).expect("3 servers");
    let new = Buckets::default_map(B, 2).rebalanced(3);
    for s in 0..3 {
        topo.shard(s)
            .psql("CREATE TABLE probe (k bigint) PARTITION BY HASH (k)")
            .unwrap();
    }
    for s in 0..2 {
        topo.shard(s)
            .psql(
                "CREATE TABLE items (id bigint PRIMARY KEY, v text, n bigserial);
                 CREATE PUBLICATION pub FOR TABLE items;",
            )
            .unwrap();
    }
    let config = format!("admin_password = \"{ADMIN_PASSWORD}\"\n")
        + &shards("app", &topo, 2)
        + &shards("app_new", &topo, 3)
        + &sharded_table("app", "items", "id", "bigint")
        + &sharded_table("app_new", "items", "id", "bigint")
        + &format!("\n[[bucket_maps]]\ndatabase = \"app\"\nbuckets = {B}\n\n")
        + &new.to_toml("app_new");
    let proxy = Proxy::start(&config, USERS).expect("pgdog starts");
    let dir = proxy.dir.clone();
    let url = proxy.url("app", "secret", "app");
    let rt = topology::runtime();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let loads = start_loads(
        &rt,
        (1..=2).map(|k| (url.clone(), k * 1_000_000)),
        &stop,
        &done,
    );
    wait_for_statements(&done, 200);

    let admin_urls = [admin_url(proxy.port)];
    let mut child = spawn(&dir, &topo, "reshard", &cutover_args("grow", &admin_urls));
    let switched = || {
        dir.join("pgdog.toml.before-cutover").is_file()
            && slot_active_on_shards(&topo, 3, "grow_reverse")
    };
    wait_for_cutover(
        &mut child,
        180,
        "pgdog reshard did not cut over",
        || proxy.log(),
        switched,
    );
    wait_for_statements(&done, 200);
    let last = stop_clean_loads(&rt, &stop, loads, || proxy.log());
    // The last rows are on their new shard (and, through reverse replication, on an old one
    // when their bucket moved).
    let where_is = |id: i64| -> Vec<usize> {
        (0..3)
            .filter(|&s| {
                topo.shard(s)
                    .psql(&format!("SELECT count(*) FROM items WHERE id = {}", id - 1))
                    .unwrap()
                    == "1"
            })
            .collect()
    };
    let out = sigterm(child);
    assert!(out.status.success(), "pgdog reshard: {}", text(&out));

    // `app` is the 3-shard layout now: cleanup removes the copies left on the old shards.
    let said = run_ok(
        &dir,
        &topo,
        "cleanup",
        &["--database", "app", "--delete"],
        &[],
    );
    assert!(said.contains(" deleted"), "{said}");
    let mut rows = 0;
    for s in 0..3 {
        let n: i64 = topo
            .shard(s)
            .psql("SELECT count(*) FROM items")
            .unwrap()
            .parse()
            .unwrap();
        let placed = in_buckets(topo.shard(s), &new.buckets_of(s));
        assert_eq!(
            placed.split(' ').next().unwrap(),
            n.to_string(),
            "shard {s}"
        );
        rows += n;
    }
    assert!(rows > 0);
    for id in last {
        assert_eq!(where_is(id).len(), 1, "row {} once", id - 1);
    }
    for s in 0..3 {
        let _ = topo
            .shard(s)
            .psql("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots");
    }
}
