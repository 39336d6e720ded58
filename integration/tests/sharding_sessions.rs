//! Sessions on a sharded database under stress: a cross-shard query is cancelled on every
//! shard; a client that disconnects inside a cross-shard transaction leaves nothing behind; a
//! shard that is down gives a clear error (not a hang) while the other shards keep serving; many
//! concurrent clients share small pools; binary COPY out of and back into every shard.
use crate::sharding_common;

use sharding_common::*;
use std::time::{Duration, Instant};
use topology::Topology;

const TABLES: &str = "[[sharded_tables]]\ndatabase = \"app\"\nname = \"t\"\ncolumn = \"id\"\n";

/// Rows of `t` as `client` counts them (extended protocol); `what` names the query on failure.
async fn rows_in_t(client: &tokio_postgres::Client, what: &str) -> i64 {
    client
        .query_one("SELECT count(*) FROM t", &[])
        .await
        .expect(what)
        .get(0)
}

/// Binary COPY round trip: out of every shard (one header, one trailer), back in split by key
/// (each shard gets the header and a trailer), same rows on the same shards.
async fn binary_copy_round_trip(client: &tokio_postgres::Client, ports: &[u16]) {
    {
        use futures_util::{SinkExt, TryStreamExt};
        let before: Vec<i64> = shard_counts(ports).await;
        let stream = client
            .copy_out("COPY t TO STDOUT (FORMAT binary)")
            .await
            .expect("copy out");
        futures_util::pin_mut!(stream);
        let mut data = Vec::new();
        while let Some(chunk) = stream.try_next().await.expect("copy data") {
            data.extend_from_slice(&chunk);
        }
        assert!(data.starts_with(b"PGCOPY\n\xff\r\n\0"), "one binary header");
        assert!(data.ends_with(&[0xff, 0xff]), "one trailer at the end");
        assert_eq!(
            data.windows(11)
                .filter(|w| w == b"PGCOPY\n\xff\r\n\0")
                .count(),
            1
        );
        client.batch_execute("TRUNCATE t").await.expect("truncate");
        let sink = client
            .copy_in::<_, bytes::Bytes>("COPY t FROM STDIN (FORMAT binary)")
            .await
            .expect("copy in");
        futures_util::pin_mut!(sink);
        for piece in data.chunks(37) {
            sink.send(bytes::Bytes::copy_from_slice(piece))
                .await
                .expect("send");
        }
        let n = sink.as_mut().finish().await.expect("copy in done");
        assert_eq!(n, 30);
        assert_eq!(
            shard_counts(ports).await,
            before,
            "rows back on their shards"
        );
    }
}

/// A client that disconnects inside a transaction touching every shard leaves nothing.
async fn abandoned_transaction_rolls_back(proxy: &topology::Proxy, ports: &[u16]) {
    {
        let c2 = connect_proxy(proxy).await;
        c2.batch_execute(
            "BEGIN; UPDATE t SET v = 99; INSERT INTO t (id, v) VALUES (100, 1), (101, 1), (102, 1)",
        )
        .await
        .expect("work in a transaction");
        drop(c2);
    }
    let mut clean = false;
    for _ in 0..200 {
        let mut total = 0i64;
        for port in ports {
            let direct = connect_port(*port).await;
            total += direct
                .query_one("SELECT count(*) FROM t WHERE v = 99 OR id >= 100", &[])
                .await
                .expect("direct")
                .get::<_, i64>(0);
        }
        if total == 0 {
            clean = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        clean,
        "the abandoned transaction was rolled back on every shard"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_disconnect_shard_down_and_concurrency() {
    let topo = Topology::shards(3).expect("topology");
    let proxy = start_proxy(&topo, "", TABLES);
    let client = connect_proxy(&proxy).await;
    client
        .batch_execute("CREATE TABLE t (id bigint PRIMARY KEY, v int)")
        .await
        .expect("ddl");
    let values: Vec<String> = (1..=30).map(|i| format!("({i}, 0)")).collect();
    client
        .batch_execute(&format!(
            "INSERT INTO t (id, v) VALUES {}",
            values.join(",")
        ))
        .await
        .expect("insert");

    // Cancel: a query sleeping on every shard stops everywhere.
    let token = client.cancel_token();
    let started = Instant::now();
    let sleeper = tokio::spawn(async move {
        let r = client
            .simple_query("SELECT pg_sleep(30) FROM t WHERE id <= 3")
            .await;
        (client, r)
    });
    // Wait until the query runs on every shard before cancelling.
    let ports: Vec<u16> = topo.nodes().iter().map(|n| n.port).collect();
    let mut running = 0;
    for _ in 0..200 {
        running = 0;
        for port in &ports {
            let direct = connect_port(*port).await;
            let n: i64 = direct
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(30)%'",
                    &[],
                )
                .await
                .expect("activity")
                .get(0);
            running += (n > 0) as usize;
        }
        if running == ports.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(running, ports.len(), "the query runs on every shard");
    token
        .cancel_query(tokio_postgres::NoTls)
        .await
        .expect("cancel");
    let (client, r) = sleeper.await.expect("join");
    let err = r.expect_err("cancelled");
    assert_eq!(
        sqlstate(&err).as_deref(),
        Some("57014"),
        "{}",
        err_text(&err)
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    // Every shard stopped sleeping.
    for port in &ports {
        let direct = connect_port(*port).await;
        let mut left = 1;
        for _ in 0..200 {
            left = direct
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(30)%' AND state = 'active'",
                    &[],
                )
                .await
                .expect("activity")
                .get::<_, i64>(0);
            if left == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(left, 0, "shard on port {port} still sleeping");
    }
    // The session carries on.
    assert_eq!(rows_in_t(&client, "count").await, 30);

    binary_copy_round_trip(&client, &ports).await;
    abandoned_transaction_rolls_back(&proxy, &ports).await;

    // Many clients over small pools (8 per shard).
    let mut tasks = Vec::new();
    for i in 0..100i64 {
        let conninfo = proxy.conninfo(USER, PASSWORD, DB);
        tasks.push(tokio::spawn(async move {
            let c = connect_str(&conninfo).await;
            let id = i % 30 + 1;
            let row = c
                .query_one("SELECT id FROM t WHERE id = $1", &[&id])
                .await
                .expect("point");
            assert_eq!(row.get::<_, i64>(0), id);
            assert_eq!(rows_in_t(&c, "all shards").await, 30);
        }));
    }
    for t in tasks {
        t.await.expect("client task");
    }

    // A shard that is down: clear errors for what needs it, the others keep serving.
    topo.nodes()[2].stop().expect("stop shard 2");
    let started = Instant::now();
    let err = client
        .query_one("SELECT count(*) FROM t", &[])
        .await
        .expect_err("a shard is down");
    let code = sqlstate(&err).unwrap_or_default();
    assert!(
        code == "08006" || code == "08001" || code == "57P01",
        "unexpected error: {}",
        err_text(&err)
    );
    assert!(started.elapsed() < Duration::from_secs(10), "no hang");
    // Keys on shards 0 and 1 still work (find one per shard through pgdog route).
    let mut served = 0;
    for id in 1..=30i64 {
        if let Ok(row) = client
            .query_one("SELECT id FROM t WHERE id = $1", &[&id])
            .await
        {
            assert_eq!(row.get::<_, i64>(0), id);
            served += 1;
        }
    }
    assert!(
        (10..30).contains(&served),
        "only shard 2's keys fail: {served}"
    );
}
