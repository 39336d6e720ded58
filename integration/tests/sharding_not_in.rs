//! `x NOT IN (SELECT key ...)` across shards, compared with one PostgreSQL holding all rows:
//! each shard answers for its own rows, except that one NULL in the subquery on any shard makes
//! NOT IN NULL for every row it does not match, on every shard. pgdog probes the shards for such
//! a NULL first (`router::not_in`). The NULL is put on one shard only, directly.
use crate::sharding_common;
use sharding_common::*;
use topology::Topology;

const TABLES: &str = r#"
[[sharded_tables]]
database = "app"
name = "ni_a"
column = "id"
data_type = "bigint"

[[sharded_tables]]
database = "app"
name = "ni_b"
column = "k"
data_type = "bigint"
"#;

const QUERIES: [&str; 4] = [
    "SELECT count(*) FROM ni_a WHERE id NOT IN (SELECT k FROM ni_b)",
    "SELECT id, id NOT IN (SELECT k FROM ni_b WHERE k > 3) FROM ni_a ORDER BY id",
    "SELECT id FROM ni_a WHERE id NOT IN (SELECT k FROM ni_b) OR id = 2 ORDER BY id",
    "SELECT count(*) FROM ni_a WHERE id NOT IN (SELECT k FROM ni_b WHERE k IS NOT NULL)",
];

/// Every query's rows (as text) through the simple and the extended protocol.
async fn answers(c: &tokio_postgres::Client) -> Vec<String> {
    let mut out = Vec::new();
    for q in QUERIES {
        let simple: Vec<String> = match c.simple_query(q).await {
            Ok(msgs) => msgs
                .iter()
                .filter_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(r) => Some(
                        (0..r.len())
                            .map(|i| r.get(i).unwrap_or("NULL").to_string())
                            .collect::<Vec<_>>()
                            .join(","),
                    ),
                    _ => None,
                })
                .collect(),
            Err(e) => vec![format!("error {}", err_text(&e))],
        };
        let extended: Vec<String> = match c.query(q, &[]).await {
            Ok(rows) => rows
                .iter()
                .map(|r| {
                    (0..r.len())
                        .map(|i| match r.columns()[i].type_().name() {
                            "bool" => format!("{:?}", r.get::<_, Option<bool>>(i)),
                            _ => format!("{:?}", r.get::<_, Option<i64>>(i)),
                        })
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .collect(),
            Err(e) => vec![format!("error {}", err_text(&e))],
        };
        out.push(format!("{q}\n  simple {simple:?}\n  extended {extended:?}"));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_in_on_the_key_with_nulls_on_one_shard_only() {
    let topo = Topology::shards(2).expect("topology");
    let reference = Topology::single().expect("reference");
    let schema = "CREATE TABLE ni_a (id bigint); CREATE TABLE ni_b (k bigint)";
    for node in topo.nodes().iter().chain(reference.nodes()) {
        connect_port(node.port)
            .await
            .batch_execute(schema)
            .await
            .unwrap();
    }
    let proxy = start_proxy(&topo, "", TABLES);
    let dog = connect_proxy(&proxy).await;
    let pg = connect_port(reference.primary().port).await;
    let data = "INSERT INTO ni_a (id) VALUES (1), (2), (3), (4), (5), (6), (7), (8); \
                INSERT INTO ni_b (k) VALUES (2), (4), (7)";
    for c in [&dog, &pg] {
        c.batch_execute(data).await.unwrap();
    }
    assert_eq!(answers(&dog).await, answers(&pg).await, "without NULLs");
    // A NULL on shard 1 only (and in the reference).
    connect_port(topo.nodes()[1].port)
        .await
        .batch_execute("INSERT INTO ni_b (k) VALUES (NULL)")
        .await
        .unwrap();
    pg.batch_execute("INSERT INTO ni_b (k) VALUES (NULL)")
        .await
        .unwrap();
    let want = answers(&pg).await;
    assert!(want[0].contains("simple [\"0\"]"), "{}", want[0]);
    assert_eq!(answers(&dog).await, want, "with a NULL on one shard");
}
