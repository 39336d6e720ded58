//! Statement pooling (`pooler_mode = "statement"`, issue 49): the server goes back after each
//! statement (two clients share one connection statement by statement, prepared statements
//! included); a statement that leaves a transaction open ends its client with PgBouncer's FATAL
//! 08P01 "transaction blocks not allowed in statement pooling mode" (its ReadyForQuery is not
//! sent), and the transaction is rolled back on the server; a sharded database refuses it.
use crate::common;
use common::raw::{self, Conn};
use common::*;

const BLOCKS: &str = "transaction blocks not allowed in statement pooling mode";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_statement_at_a_time() {
    let (topo, proxy) = pgdog("pooler_mode = \"statement\"\nauth_type = \"plain\"", 1);
    let a = connect(&proxy).await;
    let b = connect(&proxy).await;
    // One server for both: each statement gives it back.
    let pid_a = one(&a, "SELECT pg_backend_pid()::text").await;
    let pid_b = one(&b, "SELECT pg_backend_pid()::text").await;
    assert_eq!(pid_a, pid_b);
    assert_eq!(one(&a, "SELECT 1; SELECT 2").await, "1");
    let statement = a.prepare("SELECT $1::int * 2").await.unwrap();
    assert_eq!(
        b.query_one("SELECT 5", &[]).await.unwrap().get::<_, i32>(0),
        5
    );
    assert_eq!(
        a.query_one(&statement, &[&21i32])
            .await
            .unwrap()
            .get::<_, i32>(0),
        42
    );
    // A transaction block: the client is ended, as PgBouncer ends it.
    let mut raw = Conn::login(proxy.port, USER, DB, Some(PASSWORD)).await;
    raw.send(&raw::query("BEGIN")).await;
    let msgs = raw.until_closed().await;
    let tags: Vec<u8> = msgs.iter().map(|m| m.tag).collect();
    assert_eq!(tags, [b'C', b'E'], "{msgs:?}");
    assert_eq!(msgs[1].severity(), "FATAL");
    assert_eq!(msgs[1].sqlstate().as_deref(), Some("08P01"));
    assert!(
        msgs[1].error_text().contains(BLOCKS),
        "{}",
        msgs[1].error_text()
    );
    // The same through the extended protocol, and the others go on; nothing is left open.
    let err = b.execute("BEGIN", &[]).await.unwrap_err();
    assert!(err_text(&err).contains(BLOCKS), "{}", err_text(&err));
    assert_eq!(one(&a, "SELECT 3").await, "3");
    let direct = connect_str(&topo.primary().url("postgres"))
        .await
        .unwrap()
        .0;
    eventually(
        "no transaction left open",
        std::time::Duration::from_secs(5),
        || async {
            one(
            &direct,
            "SELECT count(*)::text FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'",
        )
        .await
            == "0"
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_databases_refuse_statement_pooling() {
    let topo = topology::Topology::shards(2).expect("topology");
    let mut config = String::from("pooler_mode = \"statement\"\n");
    for (i, node) in topo.nodes().iter().enumerate() {
        config.push_str(&database(node.port, &format!("shard = {i}\n")));
    }
    config.push_str("\n[[sharded_tables]]\ndatabase = \"app\"\nname = \"t\"\ncolumn = \"id\"\n");
    let proxy = start_with(&config, &users(""));
    let err = connect_as(&proxy, USER, PASSWORD, DB).await.unwrap_err();
    assert_sqlstate(&err, "0A000");
}
