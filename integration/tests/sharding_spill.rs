//! Cross-shard merges past `merge_work_mem` (64kB here) on real PostgreSQL 18: pgdog in front of
//! three shards against one PostgreSQL holding every row, with enough rows and groups that every
//! blocking merge spills to temporary files.
//!
//! - GROUP BY (with ORDER BY / LIMIT / HAVING / array_agg), DISTINCT (ordered and not), UNION /
//!   INTERSECT / EXCEPT (ALL) give the reference's answer, and the temporary files are gone
//!   after each statement;
//! - INSERT ... SELECT of 60,000 rows (the load itself, and a copy across shards) lands every
//!   row on its shard; an UPDATE of the sharding key moves 2,500 rows (in batches) with RETURNING;
//! - a spill write that fails (failpoint `merge-spill-write`, as ENOSPC) gives the client
//!   53100, removes the files, and the next statement works;
//! - past `merge_memory_limit`, growth that cannot spill gets 53200 while another client's
//!   queries go on answering;
//! - a pgdog killed with SIGKILL while spilling leaves its files; the next pgdog started on the
//!   same `temp_directory` removes them.
use crate::sharding_common;

use sharding_common::*;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio_postgres::Client;
use topology::{Proxy, Topology};

const ADMIN: &str = "spill-admin";
const ROWS: i64 = 60_000;

const TABLES: &str = r#"
[[sharded_tables]]
database = "app"
name = "events"
column = "user_id"
data_type = "bigint"

[[sharded_tables]]
database = "app"
name = "copies"
column = "user_id"
data_type = "bigint"
"#;

const SCHEMA: &str =
    "CREATE TABLE events (user_id bigint NOT NULL, id bigint NOT NULL, kind text, amount int); \
     CREATE TABLE copies (user_id bigint NOT NULL, id bigint NOT NULL, kind text, amount int)";

const LOAD: &str = "INSERT INTO events SELECT g % 20000, g, 'kind-' || (g % 7), (g * 7919) % 997 \
     FROM generate_series(1, 60000) g";

fn general(temp: &Path, extra: &str) -> String {
    format!(
        "admin_password = \"{ADMIN}\"\nmerge_work_mem = \"64kB\"\ntemp_directory = \"{}\"\n{extra}",
        temp.display()
    )
}

/// The spill files in `dir`.
fn spill_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("pgdog-merge-"))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pgdog-spill-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

async fn rows(
    client: &Client,
    sql: &str,
) -> Result<Vec<Vec<Option<String>>>, tokio_postgres::Error> {
    let msgs = client.simple_query(sql).await?;
    Ok(msgs
        .into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => {
                Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
            }
            _ => None,
        })
        .collect())
}

async fn admin_value(proxy: &Proxy, column: &str) -> u64 {
    let admin = connect_str(&proxy.conninfo("admin", ADMIN, "admin")).await;
    let r = rows(&admin, "SHOW MERGE").await.expect("SHOW MERGE");
    let cols = admin.simple_query("SHOW MERGE").await.expect("SHOW MERGE");
    let idx = cols
        .iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => {
                r.columns().iter().position(|c| c.name() == column)
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("SHOW MERGE has no column {column}"));
    r[0][idx].as_deref().unwrap_or("0").parse().unwrap()
}

/// Reads that hold rows in pgdog's merge; `true`: ordered totally (compare in order).
const READS: &[(&str, bool)] = &[
    ("SELECT user_id, count(*), sum(amount), min(kind), max(id) FROM events GROUP BY user_id", false),
    ("SELECT user_id, count(*), sum(amount) FROM events GROUP BY user_id ORDER BY sum(amount) DESC, user_id LIMIT 300 OFFSET 20", true),
    ("SELECT user_id, avg(amount), max(kind) FROM events GROUP BY user_id HAVING count(*) > 2 ORDER BY user_id", true),
    ("SELECT kind, amount, count(*) FROM events GROUP BY kind, amount", false),
    ("SELECT user_id % 500 AS b, array_agg(id ORDER BY id) FROM events GROUP BY 1", false),
    ("SELECT DISTINCT amount, kind FROM events", false),
    ("SELECT DISTINCT user_id FROM events ORDER BY user_id", true),
    ("SELECT DISTINCT ON (user_id) user_id, id FROM events ORDER BY user_id, id", true),
    ("SELECT user_id FROM events WHERE amount < 500 INTERSECT SELECT user_id FROM events WHERE amount >= 500", false),
    ("SELECT user_id, kind FROM events WHERE amount < 800 EXCEPT SELECT user_id, kind FROM events WHERE amount < 200 ORDER BY 1, 2", true),
    ("SELECT user_id FROM events WHERE amount < 300 EXCEPT ALL SELECT user_id FROM events WHERE amount > 900", false),
    ("SELECT amount, kind FROM events WHERE id < 30000 UNION SELECT amount, kind FROM events WHERE id > 20000", false),
];

async fn compare_reads(dog: &Client, pg: &Client, temp: &Path) -> Vec<String> {
    let mut failures = Vec::new();
    for (sql, ordered) in READS {
        let got = rows(dog, sql).await.map_err(|e| err_text(&e));
        let want = rows(pg, sql).await.map_err(|e| err_text(&e));
        let (mut got, mut want) = match (got, want) {
            (Ok(g), Ok(w)) => (g, w),
            (g, w) => {
                failures.push(format!("{sql}\n  pgdog: {g:?}\n  reference: {w:?}"));
                continue;
            }
        };
        assert!(
            want.len() > 50,
            "{sql}: too few rows to spill ({})",
            want.len()
        );
        if !ordered {
            got.sort();
            want.sort();
        }
        if got != want {
            failures.push(format!(
                "{sql}\n  pgdog {} rows, reference {} rows; first difference: {:?}",
                got.len(),
                want.len(),
                got.iter().zip(&want).find(|(a, b)| a != b)
            ));
        }
        let left = spill_files(temp);
        if !left.is_empty() {
            failures.push(format!("{sql}: temporary files left: {left:?}"));
        }
    }
    failures
}

async fn run(reference: &Topology, shards: &Topology) {
    let temp = temp_dir("main");
    let proxy = start_proxy(shards, &general(&temp, ""), TABLES);
    let dog = connect_proxy(&proxy).await;
    let pg = connect_port(reference.primary().port).await;
    for c in [&dog, &pg] {
        c.batch_execute(SCHEMA).await.expect("schema");
    }
    // The load is an INSERT ... SELECT of 60,000 rows read by pgdog (spooled past 64kB).
    let loaded = dog.execute(LOAD, &[]).await.expect("load through pgdog");
    assert_eq!(loaded, ROWS as u64);
    pg.batch_execute(LOAD).await.expect("load reference");
    let before = admin_value(&proxy, "spilled_bytes").await;
    assert!(
        before > 0,
        "the 60,000-row INSERT ... SELECT did not spill its rows"
    );

    let failures = compare_reads(&dog, &pg, &temp).await;
    assert!(
        failures.is_empty(),
        "spilled merges differ from PostgreSQL:\n{}",
        failures.join("\n")
    );
    assert!(admin_value(&proxy, "spill_files").await > 10);
    assert_eq!(
        admin_value(&proxy, "memory_bytes").await,
        0,
        "merge memory still counted"
    );

    // INSERT ... SELECT across shards: every row lands on its shard once.
    let copied = dog
        .execute(
            "INSERT INTO copies SELECT * FROM events WHERE amount < 700",
            &[],
        )
        .await
        .expect("INSERT ... SELECT across shards");
    pg.batch_execute("INSERT INTO copies SELECT * FROM events WHERE amount < 700")
        .await
        .unwrap();
    let check = "SELECT count(*), sum(id), sum(amount), count(DISTINCT user_id) FROM copies";
    let want = rows(&pg, check).await.unwrap();
    assert_eq!(copied.to_string(), want[0][0].clone().unwrap());
    let mut direct = Vec::new();
    for node in shards.nodes() {
        direct.push(connect_port(node.port).await);
    }
    let probe = hash_probe(shards.nodes()[0].port).await;
    let mut total = 0;
    for (i, c) in direct.iter().enumerate() {
        let users = rows(c, "SELECT DISTINCT user_id FROM copies")
            .await
            .unwrap();
        for u in users.iter().take(50) {
            let k: i64 = u[0].as_deref().unwrap().parse().unwrap();
            assert_eq!(
                hash_shard(&probe, 3, k).await,
                i,
                "user {k} on the wrong shard"
            );
        }
        total += count_i64(c, "SELECT count(*) FROM copies").await;
    }
    assert_eq!(total.to_string(), want[0][0].clone().unwrap());
    let got = rows(&dog, check).await;
    // count(DISTINCT user_id) on the sharding key is exact across shards.
    assert_eq!(got.unwrap(), want);
    assert!(spill_files(&temp).is_empty());

    // An UPDATE of the sharding key moving 2,500 rows (in batches of 1,000) with RETURNING.
    let from = 900_001;
    let mut to = from + 1;
    while hash_shard(&probe, 3, to).await == hash_shard(&probe, 3, from).await {
        to += 1;
    }
    let fill = format!(
        "INSERT INTO copies SELECT {from}, g, 'moved', g % 10 FROM generate_series(1, 2500) g"
    );
    dog.batch_execute(&fill).await.expect("fill through pgdog");
    pg.batch_execute(&fill).await.unwrap();
    let update =
        format!("UPDATE copies SET user_id = {to} WHERE user_id = {from} RETURNING id, amount");
    let mut got = rows(&dog, &update).await.expect("key update through pgdog");
    let mut want = rows(&pg, &update).await.unwrap();
    got.sort();
    want.sort();
    assert_eq!(got.len(), 2500);
    assert_eq!(got, want);
    let moved = format!("SELECT count(*) FROM copies WHERE user_id = {to}");
    let on = hash_shard(&probe, 3, to).await;
    assert_eq!(
        count_i64(&direct[on], &moved).await,
        2500,
        "rows on their new shard"
    );
    let left = format!("SELECT count(*) FROM copies WHERE user_id IN ({from}, {to})");
    let total: i64 = {
        let mut t = 0;
        for c in &direct {
            t += count_i64(c, &left).await;
        }
        t
    };
    assert_eq!(total, 2500, "each moved row exactly once");
    assert!(spill_files(&temp).is_empty());
    drop(proxy);
    let _ = std::fs::remove_dir_all(&temp);
}

/// A failing spill write: 53100, files removed, the next statement works.
async fn disk_full(reference: &Topology, shards: &Topology) {
    let temp = temp_dir("full");
    let config = shard_config(
        shards,
        &general(&temp, "merge_memory_limit = \"256kB\""),
        TABLES,
    );
    let proxy = Proxy::start_with_env(
        &config,
        &users_toml(),
        &[("FAILPOINTS", "merge-spill-write=1*return")],
    )
    .expect("pgdog with a failing disk");
    let dog = connect_proxy(&proxy).await;
    let (sql, _) = READS[0];
    let e = dog
        .simple_query(sql)
        .await
        .expect_err("spill on a full disk");
    assert_eq!(sqlstate(&e).as_deref(), Some("53100"), "{}", err_text(&e));
    assert!(
        spill_files(&temp).is_empty(),
        "files left after 53100: {:?}",
        spill_files(&temp)
    );
    let pg = connect_port(reference.primary().port).await;
    let mut got = rows(&dog, sql)
        .await
        .expect("the same query once the disk has room");
    let mut want = rows(&pg, sql).await.unwrap();
    got.sort();
    want.sort();
    assert_eq!(got, want);

    // merge_memory_limit: one group's array_agg cannot spill (a group is never split): 53200,
    // others go on.
    let big = "SELECT array_agg(id) FROM events";
    let other = connect_proxy(&proxy).await;
    let busy = async {
        let mut answered = 0;
        for i in 0..40 {
            let n = count_i64(
                &other,
                &format!("SELECT count(*) FROM events WHERE user_id = {i}"),
            )
            .await;
            assert_eq!(n, 3, "user {i}");
            answered += 1;
        }
        answered
    };
    let (refused, answered) = tokio::join!(dog.simple_query(big), busy);
    let e = refused.expect_err("array_agg past merge_memory_limit");
    assert_eq!(sqlstate(&e).as_deref(), Some("53200"), "{}", err_text(&e));
    assert!(
        err_text(&e).contains("merge_memory_limit"),
        "{}",
        err_text(&e)
    );
    assert_eq!(answered, 40);
    assert_eq!(count_i64(&dog, "SELECT count(*) FROM events").await, ROWS);
    assert!(admin_value(&proxy, "refused").await >= 1);
    assert_eq!(admin_value(&proxy, "memory_bytes").await, 0);
    drop(proxy);
    let _ = std::fs::remove_dir_all(&temp);
}

/// SIGKILL while spilling leaves files; the next pgdog on the directory removes them.
async fn killed_while_spilling(shards: &Topology) {
    let temp = temp_dir("killed");
    let config = general(&temp, "");
    let proxy = start_proxy(shards, &config, TABLES);
    let dog = connect_proxy(&proxy).await;
    // The shard holding id 1 sleeps before answering; the others' rows spill meanwhile.
    let slow = "SELECT user_id, count(*), sum(CASE WHEN id = 1 THEN length(pg_sleep(8)::text) ELSE 0 END) \
                FROM events GROUP BY user_id";
    let query = tokio::spawn(async move { dog.simple_query(slow).await.map(|_| ()) });
    let deadline = Instant::now() + Duration::from_secs(20);
    while spill_files(&temp).is_empty() {
        assert!(Instant::now() < deadline, "no spill file appeared");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    proxy.signal(libc::SIGKILL);
    let left = spill_files(&temp);
    assert!(!left.is_empty());
    let _ = query.await;
    drop(proxy);
    assert!(
        !spill_files(&temp).is_empty(),
        "a killed pgdog cannot remove its files"
    );
    let next = start_proxy(shards, &config, TABLES);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !spill_files(&temp).is_empty() {
        assert!(
            Instant::now() < deadline,
            "leftovers not removed: {:?}",
            spill_files(&temp)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Cancel the sleeping shard query: its client is gone, the server ends it on its own.
    drop(next);
    let _ = std::fs::remove_dir_all(&temp);
}

#[test]
fn spilled_merges_answer_like_postgres() {
    let (reference, shards) = std::thread::scope(|s| {
        let r = s.spawn(|| Topology::single().expect("reference server"));
        let sh = Topology::shards(3).expect("shards");
        (r.join().expect("reference thread"), sh)
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        run(&reference, &shards).await;
        disk_full(&reference, &shards).await;
        killed_while_spilling(&shards).await;
    });
}
