//! Resharding from a sharded source a table whose replica identity lacks the sharding key:
//! `orders (id bigint PRIMARY KEY, customer_id ...)` sharded by `customer_id` on 2 source
//! shards (written through pgdog), into 4 destination shards. Each destination shard takes
//! keys of one source shard only (the same hash, 4 a multiple of 2), so each stream applies its
//! changes by identity on its own destination shards (`reshard/ownership.rs`).
//!
//! - a row moving between source shards (pgdog's key UPDATE: DELETE on one, INSERT on the
//!   other) in both arrival orders, made deterministic by pausing one stream (verify's hold
//!   row): the INSERT first (both versions on the destination at once, on different shards),
//!   then the DELETE first; the destination ends equal;
//! - into 3 shards (not a multiple), `pgdog reshard` refuses the table, naming why;
//! - under pgbench-style writes through pgdog (inserts, updates, moves between source shards,
//!   deletes, transactions doing several), `pgdog reshard` is killed with SIGKILL mid-replay
//!   and run again: `pgdog verify` reports the destination equal;
//! - ignored (a known bug, `-- --ignored` reproduces it): the same move, INSERT first, of a
//!   table whose primary key holds the sharding key loses the row.
use crate::reshard_common;

use reshard_common::load::{runtime, wait_for_statements};
use reshard_common::{count_on, pgdog, spawn, text, verify_until_equal, wait_for};
use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use topology::proxy::Proxy;
use topology::Topology;

const USERS: &str = "[[users]]\nname = \"app\"\ndatabase = \"app\"\npassword = \"secret\"\n\n\
                     [[users]]\nname = \"app\"\ndatabase = \"app_new\"\npassword = \"secret\"\n\n\
                     [[users]]\nname = \"app\"\ndatabase = \"app_three\"\npassword = \"secret\"\n";
const DBS: [&str; 4] = ["--from-database", "app", "--to-database", "app_new"];
/// Rows `orders` starts with (ids 1..=SEED_ROWS, customer `id % 97`).
const SEED_ROWS: i64 = 2000;
const CLIENTS: i64 = 2;

/// `app` on the 2 source shards, `app_new` on the 4 destination shards, `app_three` on 3 of
/// them; `orders` sharded by `customer_id` in each.
fn config(source: &Topology, dest: &Topology) -> String {
    let mut c = String::from("admin_password = \"admin_pw\"\n");
    for (name, topo, shards) in [
        ("app", source, 2),
        ("app_new", dest, 4),
        ("app_three", dest, 3),
    ] {
        for shard in 0..shards {
            c.push_str(&format!(
                "\n[[databases]]\nname = \"{name}\"\nshard = {shard}\nport = {}\n\
                 database_name = \"postgres\"\nuser = \"postgres\"\n",
                topo.shard(shard).port
            ));
        }
        c.push_str(&format!(
            "\n[[sharded_tables]]\ndatabase = \"{name}\"\nname = \"orders\"\n\
             column = \"customer_id\"\ndata_type = \"bigint\"\n"
        ));
    }
    c
}

/// The 2-shard source with `orders` (seeded through pgdog, its primary key `pk`) and
/// publication `pub`, 4 empty destination shards, and pgdog serving `app`.
fn fixture(pk: &str) -> (Topology, Topology, Proxy) {
    let source = Topology::shards(2).expect("source shards");
    let dest = Topology::shards(4).expect("destination shards");
    for s in 0..2 {
        source
            .shard(s)
            .psql(&format!(
                "CREATE TABLE orders (id bigint, customer_id bigint NOT NULL,
                                      amount int, note text, PRIMARY KEY ({pk}));
                 CREATE PUBLICATION pub FOR TABLE orders;"
            ))
            .expect("source schema");
    }
    let proxy = Proxy::start(&config(&source, &dest), USERS).expect("pgdog");
    let values: Vec<String> = (1..=SEED_ROWS)
        .map(|i| format!("({i}, {}, {i}, 'n{i}')", i % 97))
        .collect();
    for chunk in values.chunks(500) {
        app(
            &proxy,
            &format!(
                "INSERT INTO orders (id, customer_id, amount, note) VALUES {}",
                chunk.join(", ")
            ),
        );
    }
    for s in 0..2 {
        let rows = source.shard(s).psql("SELECT count(*) FROM orders").unwrap();
        assert_ne!(rows, "0", "seed rows on source shard {s}");
    }
    (source, dest, proxy)
}

/// Runs `sql` through pgdog on `app`.
fn app(proxy: &Proxy, sql: &str) -> String {
    proxy
        .psql("app", "secret", "app", sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// The source shard where pgdog put row `id`.
fn source_shard_of(source: &Topology, id: i64) -> usize {
    (0..2)
        .find(|&s| {
            source
                .shard(s)
                .psql(&format!("SELECT count(*) FROM orders WHERE id = {id}"))
                .unwrap()
                == "1"
        })
        .unwrap_or_else(|| panic!("row {id} on no source shard"))
}

/// A customer whose rows pgdog puts on source shard `shard` (read from the seeded rows).
fn customer_on(source: &Topology, shard: usize) -> i64 {
    source
        .shard(shard)
        .psql("SELECT min(customer_id) FROM orders")
        .unwrap()
        .parse()
        .unwrap()
}

/// schema-sync (pre) and copy-data with slot `ident`, both through the binary.
fn copy(dir: &Path, source: &Topology) {
    let of_pub = ["--publication", "pub"];
    let pre = [&DBS[..], &of_pub, &["--phase", "pre"]].concat();
    let out = pgdog(dir, source, "schema-sync", &pre);
    assert!(out.status.success(), "schema-sync: {}", text(&out));
    let args = [&DBS[..], &of_pub, &["--slot", "ident"]].concat();
    let out = pgdog(dir, source, "copy-data", &args);
    assert!(out.status.success(), "copy-data: {}", text(&out));
}

/// The hold row of the stream of source shard `s` (its progress key) on destination shard 0.
fn stream_key(s: usize) -> String {
    if s == 0 {
        "ident".into()
    } else {
        format!("ident/{s}")
    }
}

/// Pauses the stream of source shard `s` between transactions (as verify does) and waits
/// until it says it stands still.
fn pause_stream(dest: &Topology, s: usize) {
    let key = stream_key(s);
    dest.shard(0)
        .psql(&format!(
            "INSERT INTO pgdog_reshard_hold (slot, state) VALUES ('{key}', 'pause')"
        ))
        .unwrap();
    wait_for("the stream to pause", || {
        dest.shard(0)
            .psql(&format!(
                "SELECT state FROM pgdog_reshard_hold WHERE slot = '{key}'"
            ))
            .unwrap()
            == "paused"
    });
}

fn release_stream(dest: &Topology, s: usize) {
    dest.shard(0)
        .psql(&format!(
            "DELETE FROM pgdog_reshard_hold WHERE slot = '{}'",
            stream_key(s)
        ))
        .unwrap();
}

/// Rows of `orders` with this id (and this customer, if given) on the 4 destination shards.
fn on_dest(dest: &Topology, id: i64, customer: Option<i64>) -> i64 {
    let and = customer
        .map(|c| format!(" AND customer_id = {c}"))
        .unwrap_or_default();
    count_on(
        dest,
        4,
        &format!("SELECT count(*) FROM orders WHERE id = {id}{and}"),
    )
}

/// Moves row `id` through pgdog to a customer of the other source shard; (old, new) customer.
fn move_to_other_source_shard(proxy: &Proxy, source: &Topology, id: i64) -> (i64, i64) {
    let from = source_shard_of(source, id);
    let old: i64 = source
        .shard(from)
        .psql(&format!("SELECT customer_id FROM orders WHERE id = {id}"))
        .unwrap()
        .parse()
        .unwrap();
    let new = customer_on(source, 1 - from);
    app(
        proxy,
        &format!("UPDATE orders SET customer_id = {new} WHERE customer_id = {old} AND id = {id}"),
    );
    assert_eq!(
        source_shard_of(source, id),
        1 - from,
        "pgdog moved row {id}"
    );
    (old, new)
}

/// Moves row `id` to the other source shard while the stream of its old one stands still: the
/// new version arrives first (both on the destination at once), then the old one goes.
fn insert_first(proxy: &Proxy, source: &Topology, dest: &Topology, id: i64) {
    let from = source_shard_of(source, id);
    pause_stream(dest, from);
    let (old, new) = move_to_other_source_shard(proxy, source, id);
    wait_for("the INSERT on the new stream", || {
        on_dest(dest, id, Some(new)) == 1
    });
    assert_eq!(
        on_dest(dest, id, Some(old)),
        1,
        "both versions on the destination, on different shards"
    );
    release_stream(dest, from);
    wait_for("the DELETE on the old stream", || {
        on_dest(dest, id, Some(old)) == 0
    });
    assert_eq!(on_dest(dest, id, None), 1, "the new version stays");
}

/// The same move of a table whose primary key holds the sharding key, the INSERT first. The
/// old stream sees pgdog's key UPDATE as an UPDATE to the new key, then a DELETE of the row by
/// its new key: applied one by one, the UPDATE would move its version onto the new key's shard
/// (over the new stream's version) and the DELETE would remove it there, losing the row. The
/// replay applies the pair as its net effect, a DELETE of the old key.
#[test]
fn a_keyed_move_with_the_insert_first_keeps_the_row() {
    let (source, dest, proxy) = fixture("customer_id, id");
    copy(&proxy.dir, &source);
    let args = [&DBS[..], &["--publication", "pub", "--slot", "ident"]].concat();
    let mut replay = spawn(&proxy.dir, &source, "replay", &args);
    insert_first(&proxy, &source, &dest, 11);
    let _ = replay.kill();
    let _ = replay.wait();
    for s in 0..2 {
        reshard_common::drop_slot(source.shard(s), "ident");
    }
}

#[test]
fn a_move_between_source_shards_in_both_arrival_orders() {
    let (source, dest, proxy) = fixture("id");
    let dir = proxy.dir.clone();

    // Into 3 shards a destination shard would take keys of both source shards: refused.
    let three = ["--from-database", "app", "--to-database", "app_three"];
    let args = [&three[..], &["--publication", "pub", "--slot", "three"]].concat();
    let out = pgdog(&dir, &source, "reshard", &args);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("table public.orders: its replica identity (id) does not contain the sharding key \"customer_id\" and the source has 2 shards, but the destination's 3 shards are not a multiple of the source's 2"),
        "{said}"
    );

    copy(&dir, &source);
    let args = [&DBS[..], &["--publication", "pub", "--slot", "ident"]].concat();
    let mut replay = spawn(&dir, &source, "replay", &args);

    // The INSERT first: the old stream stands still while the new one applies the move.
    insert_first(&proxy, &source, &dest, 11);

    // The DELETE first: the new stream stands still while the old one applies the move.
    let id = 12;
    let from = source_shard_of(&source, id);
    pause_stream(&dest, 1 - from);
    let (old, new) = move_to_other_source_shard(&proxy, &source, id);
    wait_for("the DELETE on the old stream", || {
        on_dest(&dest, id, None) == 0
    });
    release_stream(&dest, 1 - from);
    wait_for("the INSERT on the new stream", || {
        on_dest(&dest, id, Some(new)) == 1
    });
    assert_eq!(on_dest(&dest, id, Some(old)), 0);
    // The moved rows change again on their new source shard, in place.
    app(
        &proxy,
        &format!("UPDATE orders SET amount = -1 WHERE customer_id = {new} AND id IN (11, 12)"),
    );

    verify_until_equal(&dir, &source, "app", "app_new");
    assert!(
        replay.try_wait().unwrap().is_none(),
        "the replay ended early"
    );
    let _ = replay.kill();
    let out = replay.wait_with_output().unwrap();
    assert!(!text(&out).contains("diverged"), "{}", text(&out));
    for s in 0..2 {
        reshard_common::drop_slot(source.shard(s), "ident");
    }
}

/// A small deterministic generator (xorshift), one per client.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Writes through pgdog until `stop`, on client `k`'s rows only (ids `k mod CLIENTS` of the
/// seed and the ones it inserts), whose customers it tracks so every statement names the key:
/// inserts, updates of `amount`, moves to a random customer (half of them to the other source
/// shard), deletes, and transactions moving a row and updating it again. Returns the errors.
async fn load(url: String, k: i64, stop: Arc<AtomicBool>, done: Arc<AtomicU64>) -> Vec<String> {
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .expect("load client connects");
    tokio::spawn(conn);
    let mut rows: HashMap<i64, i64> = (1..=SEED_ROWS)
        .filter(|i| i % CLIENTS == k)
        .map(|i| (i, i % 97))
        .collect();
    let mut ids: Vec<i64> = rows.keys().copied().collect();
    ids.sort();
    let mut rng = Rng((7919 * (k as u64 + 1)) | 1);
    let mut next = (k + 1) * 1_000_000;
    let mut errors = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        let id = ids[rng.below(ids.len() as u64) as usize];
        let customer = rng.below(1000) as i64;
        let sql = match (rows.get(&id).copied(), rng.below(10)) {
            (_, 0..=2) | (None, _) => {
                next += 1;
                rows.insert(next, customer);
                ids.push(next);
                format!("INSERT INTO orders (id, customer_id, amount, note) VALUES ({next}, {customer}, 1, 'new')")
            }
            (Some(c), 3..=5) => format!(
                "UPDATE orders SET amount = amount + 1 WHERE customer_id = {c} AND id = {id}"
            ),
            (Some(c), 6 | 7) => {
                rows.insert(id, customer);
                format!(
                    "UPDATE orders SET customer_id = {customer} WHERE customer_id = {c} AND id = {id}"
                )
            }
            (Some(c), 8) => {
                rows.remove(&id);
                format!("DELETE FROM orders WHERE customer_id = {c} AND id = {id}")
            }
            (Some(c), _) => {
                rows.insert(id, customer);
                format!(
                    "BEGIN; UPDATE orders SET customer_id = {customer} WHERE customer_id = {c} AND id = {id}; \
                     UPDATE orders SET amount = amount * 2, note = 'moved' \
                     WHERE customer_id = {customer} AND id = {id}; COMMIT"
                )
            }
        };
        if let Err(e) = client.batch_execute(&sql).await {
            errors.push(format!("{sql}: {e}"));
            let _ = client.batch_execute("ROLLBACK").await;
        }
        done.fetch_add(1, Ordering::SeqCst);
    }
    errors
}

/// `pgdog reshard` of `app` into `app_new` in the background, its output appended to
/// `dir/reshard.log`.
fn spawn_reshard(dir: &Path, source: &Topology) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("reshard.log"))
        .unwrap();
    let args = [&DBS[..], &["--publication", "pub", "--slot", "ident"]].concat();
    reshard_common::command(dir, source, "reshard", &args)
        .stdout(Stdio::from(log.try_clone().unwrap()))
        .stderr(Stdio::from(log))
        .spawn()
        .expect("starting pgdog reshard")
}

fn reshard_log(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("reshard.log")).unwrap_or_default()
}

/// The furthest replay position of either stream stored on the destination shards, as text
/// comparable by `pg_lsn` (0/0 when none).
fn position(dest: &Topology) -> u64 {
    (0..4)
        .map(|s| {
            let lsn = dest
                .shard(s)
                .psql(
                    "SELECT coalesce((SELECT max(lsn) FROM pgdog_reshard_position \
                     WHERE slot LIKE 'ident%'), '0/0') - '0/0'",
                )
                .unwrap_or_else(|_| "0".into());
            lsn.parse().unwrap_or(0)
        })
        .max()
        .unwrap_or(0)
}

fn wait_for_position_past(dir: &Path, dest: &Topology, child: &mut Child, after: u64) {
    wait_for("the replay to store a position", || {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("pgdog reshard ended: {status}: {}", reshard_log(dir));
        }
        position(dest) > after
    });
}

#[test]
fn reshard_under_writes_through_pgdog_resumes_after_kill_and_ends_equal() {
    let (source, dest, proxy) = fixture("id");
    let dir = proxy.dir.clone();
    let rt = runtime();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let loads: Vec<_> = (0..CLIENTS)
        .map(|k| {
            let url = proxy.url("app", "secret", "app");
            rt.spawn(load(url, k, stop.clone(), done.clone()))
        })
        .collect();
    wait_for_statements(&done, 300);

    let mut reshard = spawn_reshard(&dir, &source);
    wait_for_position_past(&dir, &dest, &mut reshard, 0);
    wait_for_statements(&done, 3000);
    let before_kill = position(&dest);
    wait_for_position_past(&dir, &dest, &mut reshard, before_kill);
    reshard.kill().expect("SIGKILL");
    reshard.wait().unwrap();

    // The writes go on while pgdog reshard is down; the same command resumes.
    wait_for_statements(&done, 500);
    let at_kill = position(&dest);
    let mut reshard = spawn_reshard(&dir, &source);
    wait_for_position_past(&dir, &dest, &mut reshard, at_kill);
    wait_for_statements(&done, 2000);

    stop.store(true, Ordering::SeqCst);
    for l in loads {
        let errors = rt.block_on(l).unwrap();
        assert!(errors.is_empty(), "the load saw errors: {errors:?}");
    }
    verify_until_equal(&dir, &source, "app", "app_new");
    let moved = |sql: &str| -> i64 {
        (0..2)
            .map(|s| source.shard(s).psql(sql).unwrap().parse::<i64>().unwrap())
            .sum()
    };
    assert!(
        moved("SELECT count(*) FROM orders WHERE note = 'moved'") > 0,
        "the load moved rows"
    );

    unsafe {
        libc::kill(reshard.id() as i32, libc::SIGTERM);
    }
    let status = reshard.wait().unwrap();
    let log = reshard_log(&dir);
    assert_eq!(status.code(), Some(3), "{log}");
    assert!(!log.contains("diverged"), "{log}");
    println!(
        "{} statements by the load; reshard output:\n{log}",
        done.load(Ordering::SeqCst)
    );
    for s in 0..2 {
        reshard_common::drop_slot(source.shard(s), "ident");
    }
}
