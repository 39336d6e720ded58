//! EXPLAIN through a sharded database on real PostgreSQL 18 (3 shards): the route first, then
//! each shard's plan under "shard N:"; EXPLAIN ANALYZE with each shard's timings; the query the
//! shards run when pgdog rewrites it; EXPLAIN ANALYZE of a write on several shards only inside
//! the client's transaction.
use crate::sharding_common;

use sharding_common::*;
use tokio_postgres::Client;
use topology::Topology;

const TABLES: &str = r#"
[[sharded_tables]]
database = "app"
name = "accounts"
column = "id"
data_type = "bigint"
"#;

async fn plan(client: &Client, sql: &str) -> Vec<String> {
    simple_rows(client, sql)
        .await
        .iter()
        .map(|r| r.get(0).unwrap_or_default().to_string())
        .collect()
}

/// The lines of `shard`'s section.
fn section(lines: &[String], shard: usize) -> Vec<String> {
    lines
        .iter()
        .skip_while(|l| **l != format!("shard {shard}:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .cloned()
        .collect()
}

async fn run(shards: &Topology) {
    let proxy = start_proxy(shards, "", TABLES);
    let dog = connect_proxy(&proxy).await;
    dog.batch_execute(
        "CREATE TABLE accounts (id bigint PRIMARY KEY, balance int); \
         INSERT INTO accounts SELECT g, g % 100 FROM generate_series(1, 300) g",
    )
    .await
    .expect("setup");
    let probe = hash_probe(shards.nodes()[0].port).await;
    let shard_of_7 = hash_shard(&probe, 3, 7).await;

    // One shard by key: the route names it, and only its plan follows.
    let lines = plan(&dog, "EXPLAIN SELECT balance FROM accounts WHERE id = 7").await;
    assert_eq!(
        lines[0],
        format!("pgdog route: shard {shard_of_7}"),
        "{lines:#?}"
    );
    assert!(
        lines.contains(&format!("shard {shard_of_7}:")),
        "{lines:#?}"
    );
    assert_eq!(lines.iter().filter(|l| l.starts_with("shard ")).count(), 1);
    assert!(
        section(&lines, shard_of_7)
            .iter()
            .any(|l| l.contains("Scan")),
        "{lines:#?}"
    );

    // All shards with a merge; the shards' query is rewritten (avg as sum and count).
    let lines = plan(
        &dog,
        "EXPLAIN SELECT balance % 10 AS b, avg(balance) FROM accounts GROUP BY 1 ORDER BY 1 LIMIT 3",
    )
    .await;
    assert_eq!(lines[0], "pgdog route: 3 shards (0, 1, 2)", "{lines:#?}");
    let merge = lines
        .iter()
        .find(|l| l.starts_with("pgdog merge:"))
        .expect("merge line");
    assert!(
        merge.contains("groups merged") && merge.contains("LIMIT 3"),
        "{merge}"
    );
    let rewritten = lines
        .iter()
        .find(|l| l.starts_with("pgdog shard query:"))
        .expect("rewritten query");
    assert!(
        rewritten.contains("sum(") && rewritten.contains("count("),
        "{rewritten}"
    );
    for shard in 0..3 {
        let own = section(&lines, shard);
        assert!(
            own.iter().any(|l| l.contains("Aggregate")),
            "shard {shard}: {lines:#?}"
        );
    }

    // EXPLAIN ANALYZE: each shard's timings, and its row count (100 rows each, by key).
    let lines = plan(&dog, "EXPLAIN (ANALYZE, COSTS OFF) SELECT * FROM accounts").await;
    let mut counted = 0;
    for shard in 0..3 {
        let own = section(&lines, shard);
        assert!(
            own.iter().any(|l| l.contains("actual")),
            "shard {shard}: {lines:#?}"
        );
        let direct = connect_port(shards.nodes()[shard].port).await;
        let n = count_i64(&direct, "SELECT count(*) FROM accounts").await;
        counted += n;
        assert!(
            own.iter().any(|l| l.contains(&format!("rows={n}.00 "))),
            "shard {shard} holds {n} rows: {own:#?}"
        );
    }
    assert_eq!(counted, 300);

    // A write on several shards: only inside the client's transaction.
    let e = dog
        .simple_query("EXPLAIN ANALYZE UPDATE accounts SET balance = 0")
        .await
        .expect_err("EXPLAIN ANALYZE of a write on every shard outside a transaction");
    assert_eq!(sqlstate(&e).as_deref(), Some("0A000"), "{}", err_text(&e));
    dog.batch_execute("BEGIN").await.unwrap();
    let lines = plan(&dog, "EXPLAIN ANALYZE UPDATE accounts SET balance = 0").await;
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("shard ")).count(),
        3,
        "{lines:#?}"
    );
    dog.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(
        count_i64(&dog, "SELECT count(*) FROM accounts WHERE balance = 0").await,
        3,
        "the rolled back EXPLAIN ANALYZE changed rows"
    );
    // Plain EXPLAIN of a write changes nothing and needs no transaction.
    let lines = plan(&dog, "EXPLAIN UPDATE accounts SET balance = 1 WHERE id = 7").await;
    assert_eq!(lines[0], format!("pgdog route: shard {shard_of_7}"));
    // The extended protocol: the same route and plans (RowDescription from the Describe).
    let extended: Vec<String> = dog
        .query("EXPLAIN SELECT count(*) FROM accounts", &[])
        .await
        .expect("extended EXPLAIN")
        .iter()
        .map(|r| r.get::<_, String>(0))
        .collect();
    assert_eq!(
        extended[0], "pgdog route: 3 shards (0, 1, 2)",
        "{extended:#?}"
    );
    assert_eq!(
        extended.iter().filter(|l| l.starts_with("shard ")).count(),
        3,
        "{extended:#?}"
    );
    let one: Vec<String> = dog
        .query(
            "EXPLAIN ANALYZE SELECT balance FROM accounts WHERE id = 7",
            &[],
        )
        .await
        .expect("extended EXPLAIN ANALYZE")
        .iter()
        .map(|r| r.get::<_, String>(0))
        .collect();
    assert_eq!(
        one[0],
        format!("pgdog route: shard {shard_of_7}"),
        "{one:#?}"
    );
    assert!(one.iter().any(|l| l.contains("actual")), "{one:#?}");
    // With a parameter the shards could not run it: refused, not one shard's plan.
    let e = dog
        .query(
            "EXPLAIN SELECT balance FROM accounts WHERE id = $1",
            &[&7_i64],
        )
        .await
        .expect_err("EXPLAIN with a parameter");
    assert_eq!(sqlstate(&e).as_deref(), Some("0A000"), "{}", err_text(&e));
    // A statement that does not parse: Postgres' error.
    let e = dog
        .simple_query("EXPLAIN SELEC 1")
        .await
        .expect_err("syntax");
    assert_eq!(sqlstate(&e).as_deref(), Some("42601"));
    drop(proxy);
}

#[test]
fn explain_shows_the_route_and_each_shards_plan() {
    let shards = Topology::shards(3).expect("shards");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run(&shards));
}
