//! Point queries on a sharded database (`router::point`): a simple-protocol SELECT of one table
//! by its key, whose shape pgdog routes by the key literal alone and whose answer it passes on
//! from the server's read buffer. Every key of a table spread over 3 shards answers with its own
//! row (a wrong shard has none), through the point path (`shape_points` counts it); a server
//! error and a key the router cannot read give their SQLSTATE with the session going on; a
//! point query waiting on a row lock is cancelled at `query_timeout` (57014) and answers once
//! the lock is gone. The debug build the tests run checks every point against the full route.
use crate::sharding_common;

use sharding_common::*;
use std::time::{Duration, Instant};
use topology::Topology;

const TABLES: &str = "[[sharded_tables]]\ndatabase = \"app\"\nname = \"t\"\ncolumn = \"id\"\n";
const ADMIN_PASSWORD: &str = "points-admin";
const KEYS: i64 = 60;

/// The shape cache's counter `column` (SHOW QUERY_CACHE).
async fn shape_stat(proxy: &topology::Proxy, column: &str) -> u64 {
    let admin = connect_str(&proxy.conninfo("admin", ADMIN_PASSWORD, "admin")).await;
    let rows = admin
        .simple_query("SHOW QUERY_CACHE")
        .await
        .expect("SHOW QUERY_CACHE");
    rows.iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => {
                r.get(column).and_then(|v| v.parse().ok())
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("SHOW QUERY_CACHE has no {column}"))
}

/// The rows (first column) and the CommandComplete count of a simple query.
async fn rows(client: &tokio_postgres::Client, sql: &str) -> (Vec<String>, u64) {
    let mut out = Vec::new();
    let mut count = None;
    for m in client
        .simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {}", err_text(&e)))
    {
        match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => {
                out.push(r.get(0).unwrap_or("").to_string())
            }
            tokio_postgres::SimpleQueryMessage::CommandComplete(n) => count = Some(n),
            _ => {}
        }
    }
    (out, count.expect("a CommandComplete"))
}

async fn fails_with(client: &tokio_postgres::Client, sql: &str, code: &str) {
    let err = client.simple_query(sql).await.expect_err(sql);
    assert_eq!(
        sqlstate(&err).as_deref(),
        Some(code),
        "{sql}: {}",
        err_text(&err)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn point_queries_answer_like_the_full_path() {
    let topo = Topology::shards(3).expect("topology");
    let general = format!("admin_password = \"{ADMIN_PASSWORD}\"\nquery_timeout = 400");
    let proxy = start_proxy(&topo, &general, TABLES);
    let client = connect_proxy(&proxy).await;
    client
        .batch_execute("CREATE TABLE t (id bigint PRIMARY KEY, v text)")
        .await
        .expect("ddl");
    let values: Vec<String> = (1..=KEYS).map(|i| format!("({i}, 'v{i}')")).collect();
    client
        .batch_execute(&format!(
            "INSERT INTO t (id, v) VALUES {}",
            values.join(",")
        ))
        .await
        .expect("insert");
    let ports: Vec<u16> = topo.nodes().iter().map(|n| n.port).collect();
    let per_shard = shard_counts(&ports).await;
    assert!(
        per_shard.iter().all(|n| *n > 0),
        "rows on every shard: {per_shard:?}"
    );

    // Every key, two shapes: its own row from its own shard, with its count.
    let before = shape_stat(&proxy, "shape_points").await;
    for i in 1..=KEYS {
        let want = format!("v{i}");
        assert_eq!(
            rows(&client, &format!("SELECT v FROM t WHERE id = {i}")).await,
            (vec![want.clone()], 1)
        );
        let other = format!("SELECT v FROM t WHERE v = 'v{i}' AND {i} = id");
        assert_eq!(rows(&client, &other).await, (vec![want], 1));
    }
    // No row anywhere: an absent key, a fraction no bigint equals.
    assert_eq!(
        rows(&client, "SELECT v FROM t WHERE id = 1000").await,
        (vec![], 0)
    );
    assert_eq!(
        rows(&client, "SELECT v FROM t WHERE id = 1.5").await,
        (vec![], 0)
    );
    let points = shape_stat(&proxy, "shape_points").await - before;
    assert!(
        points >= 2 * (KEYS as u64 - 1),
        "{points} texts served as points"
    );
    assert_eq!(shape_stat(&proxy, "shape_mismatches").await, 0);

    // Errors: the server's (a column that does not exist) and the router's (a key that is no
    // bigint), each twice (the second through the point path); the session goes on.
    for i in 1..=3 {
        fails_with(
            &client,
            &format!("SELECT nope FROM t WHERE id = {i}"),
            "42703",
        )
        .await;
        fails_with(
            &client,
            &format!("SELECT v FROM t WHERE id = 'x{i}'"),
            "22P02",
        )
        .await;
        assert_eq!(
            rows(&client, &format!("SELECT v FROM t WHERE id = {i}"))
                .await
                .0,
            [format!("v{i}")]
        );
    }

    // query_timeout: a point query waiting on a row lock is cancelled, every time.
    let holder = connect_proxy(&proxy).await;
    holder
        .batch_execute("BEGIN; SELECT v FROM t WHERE id = 5 FOR UPDATE")
        .await
        .expect("lock");
    let before = shape_stat(&proxy, "shape_points").await;
    for _ in 0..3 {
        let started = Instant::now();
        fails_with(&client, "SELECT v FROM t WHERE id = 5 FOR UPDATE", "57014").await;
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "cancelled at query_timeout"
        );
    }
    assert!(
        shape_stat(&proxy, "shape_points").await > before,
        "the waits were point queries"
    );
    holder.batch_execute("COMMIT").await.expect("commit");
    assert_eq!(
        rows(&client, "SELECT v FROM t WHERE id = 5 FOR UPDATE")
            .await
            .0,
        ["v5"]
    );
}
