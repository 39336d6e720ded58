//! Transaction integrity when a server dies: a transaction whose server connection is lost (a
//! restart with `pg_ctl stop -m immediate`, or a server FATAL such as
//! idle_in_transaction_session_timeout) is never hidden. The client's transaction becomes
//! failed: statements get errors until it ends it, COMMIT answers ROLLBACK, and no statement of
//! it runs in autocommit on a new server. Unsharded (transaction mode, simple, extended and
//! pipelined; session mode, where the client is disconnected as by Postgres) and sharded.
use crate::common;
use common::raw::{self, Conn};
use common::*;
use std::time::Duration;
use topology::{Node, Topology};

/// Table `lost`, made durable before a test crashes the server (the test servers run with
/// synchronous_commit = off).
fn create_table(node: &Node) {
    node.psql("CREATE TABLE IF NOT EXISTS lost (id int PRIMARY KEY)")
        .unwrap();
    node.psql("CHECKPOINT").unwrap();
}

fn count(node: &Node) -> String {
    node.psql("SELECT count(*) FROM lost").unwrap()
}

/// The statement failed with 08006 (server connection lost).
fn expect_08006(result: Result<(), tokio_postgres::Error>, what: &str) {
    let err = result.expect_err(what);
    assert_eq!(
        sqlstate(&err).as_deref(),
        Some("08006"),
        "{what}: {}",
        err_text(&err)
    );
}

/// pgdog (plain-text passwords) on a server with table `lost`, and a raw client logged in.
async fn with_raw_client() -> (Topology, topology::Proxy, Conn) {
    let (topo, proxy) = pgdog("auth_type = \"plain\"", 2);
    create_table(topo.primary());
    let conn = Conn::login(proxy.port, USER, DB, Some(PASSWORD)).await;
    (topo, proxy, conn)
}

/// INSERT INTO lost VALUES (`id`), which must succeed.
async fn insert(client: &tokio_postgres::Client, id: i32) {
    exec(client, &format!("INSERT INTO lost VALUES ({id})")).await;
}

/// `pg_ctl stop -m immediate`, then start again (the pool's connections are now dead).
fn restart(node: &Node) {
    tokio::task::block_in_place(|| {
        node.stop().unwrap();
        node.start().unwrap();
    });
}

/// BEGIN; INSERT 1 -> restart -> INSERT 2 fails -> COMMIT answers ROLLBACK -> no row.
async fn lost_transaction_is_never_committed(mode: &str, extended: bool) {
    let (topo, proxy) = pgdog(&format!("pooler_mode = \"{mode}\""), 2);
    let pg = topo.primary();
    create_table(pg);
    let client = connect(&proxy).await;
    exec(&client, "BEGIN").await;
    // One prepared statement kept for both inserts (a statement dropped by tokio-postgres sends
    // Close + Sync in the background, whose error would be the one that says why).
    let insert = client
        .prepare("INSERT INTO lost VALUES ($1)")
        .await
        .unwrap();
    if extended {
        client.execute(&insert, &[&1i32]).await.unwrap();
    } else {
        exec(&client, "INSERT INTO lost VALUES (1)").await;
    }
    restart(pg);
    let second = if extended {
        client.execute(&insert, &[&2i32]).await.map(|_| ())
    } else {
        client.batch_execute("INSERT INTO lost VALUES (2)").await
    };
    let err = second.expect_err("a statement after the server was lost mid-transaction");
    assert_sqlstate(&err, "08006");
    // Still failed: a third statement gets 25P02, not autocommit.
    let third = client.batch_execute("INSERT INTO lost VALUES (3)").await;
    assert_eq!(
        third.as_ref().err().and_then(sqlstate).as_deref(),
        Some("25P02"),
        "{third:?}"
    );
    let commit = client.simple_query("COMMIT").await.unwrap();
    let tag = commit.iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::CommandComplete(_) => Some(()),
        _ => None,
    });
    assert!(tag.is_some());
    assert_eq!(
        count(pg),
        "0",
        "{mode}: rows of a lost transaction were committed"
    );
    // The session goes on normally afterwards.
    exec(&client, "INSERT INTO lost VALUES (4)").await;
    assert_eq!(count(pg), "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_mode_simple_protocol() {
    lost_transaction_is_never_committed("transaction", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_mode_extended_protocol() {
    lost_transaction_is_never_committed("transaction", true).await;
}

/// Session mode: the client's session lived on the lost server, so it ends as with Postgres
/// (FATAL 08006, then the connection closes); nothing of its transaction is committed, and a
/// new client is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_mode() {
    let (topo, proxy) = pgdog("pooler_mode = \"session\"", 2);
    let pg = topo.primary();
    create_table(pg);
    let client = connect(&proxy).await;
    exec(&client, "BEGIN").await;
    exec(&client, "INSERT INTO lost VALUES (1)").await;
    restart(pg);
    let second = client.batch_execute("INSERT INTO lost VALUES (2)").await;
    let err = second.expect_err("a statement after the session's server was lost");
    assert!(
        client.is_closed() || sqlstate(&err).as_deref() == Some("08006"),
        "{}",
        err_text(&err)
    );
    assert!(
        client.batch_execute("SELECT 1").await.is_err(),
        "the session is over"
    );
    assert_eq!(count(pg), "0", "rows of a lost transaction were committed");
    let next = connect(&proxy).await;
    exec(&next, "INSERT INTO lost VALUES (4)").await;
    assert_eq!(count(pg), "1");
}

/// COMMIT through raw messages answers the tag ROLLBACK (as Postgres does for a failed one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_of_a_lost_transaction_answers_rollback() {
    let (topo, _proxy, mut conn) = with_raw_client().await;
    let pg = topo.primary();
    conn.send(&raw::query("BEGIN; INSERT INTO lost VALUES (1)"))
        .await;
    let reply = conn.until_ready().await;
    assert_eq!(reply.last().map(|m| m.body.clone()), Some(vec![b'T']));
    restart(pg);
    conn.send(&raw::query("COMMIT")).await;
    let mut reply = conn.until_ready().await;
    // The server's own WARNING about its shutdown may come first.
    reply.retain(|m| m.tag != b'N');
    let texts: Vec<String> = reply.iter().map(|m| m.text()).collect();
    assert_eq!(raw::tags(&reply), "CZ", "{texts:?}");
    assert_eq!(reply[0].text(), "ROLLBACK");
    assert_eq!(reply[1].body, vec![b'I']);
    assert_eq!(count(pg), "0");
}

/// A pipeline of extended-protocol batches in flight when the server dies: every batch gets an
/// error and ReadyForQuery `E`, nothing commits, ROLLBACK ends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_batches_in_flight() {
    let (topo, _proxy, mut conn) = with_raw_client().await;
    let pg = topo.primary();
    let statement = |sql: &str| {
        let mut b = raw::parse("", sql);
        b.extend(raw::bind("", &[]));
        b.extend(raw::execute());
        b
    };
    let mut pipeline = statement("BEGIN");
    pipeline.extend(raw::sync());
    pipeline.extend(statement("INSERT INTO lost VALUES (1)"));
    pipeline.extend(statement("SELECT pg_sleep(30)"));
    pipeline.extend(raw::sync());
    pipeline.extend(statement("INSERT INTO lost VALUES (2)"));
    pipeline.extend(raw::sync());
    pipeline.extend(statement("COMMIT"));
    pipeline.extend(raw::sync());
    conn.send(&pipeline).await;
    let first = conn.until_ready().await;
    assert_eq!(first.last().map(|m| m.body.clone()), Some(vec![b'T']));
    let sleeping = || {
        pg.psql("SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)'")
            .unwrap()
            == "1"
    };
    eventually("the sleep to run", Duration::from_secs(10), || async {
        sleeping()
    })
    .await;
    restart(pg);
    for batch in 0..3 {
        let reply = conn.until_ready().await;
        let last = reply.last().expect("a reply");
        assert_eq!(last.tag, b'Z', "batch {batch}: {}", raw::tags(&reply));
        assert_eq!(
            last.body,
            vec![b'E'],
            "batch {batch}: {}",
            raw::tags(&reply)
        );
        assert!(
            reply.iter().any(|m| m.tag == b'E'),
            "batch {batch} got no error: {}",
            raw::tags(&reply)
        );
    }
    conn.send(&raw::query("ROLLBACK")).await;
    let mut reply = conn.until_ready().await;
    reply.retain(|m| m.tag != b'N');
    assert_eq!(raw::tags(&reply), "CZ");
    assert_eq!(reply[1].body, vec![b'I']);
    assert_eq!(count(pg), "0");
    // And the connection works again.
    conn.send(&raw::query("SELECT 7")).await;
    let reply = conn.until_ready().await;
    assert_eq!(
        reply.iter().find(|m| m.tag == b'D').map(|m| m.text()),
        Some("7".into())
    );
}

/// The server ends an idle transaction with FATAL (idle_in_transaction_session_timeout): the
/// client learns why on its next statement and its transaction stays failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_in_transaction_timeout_fails_the_transaction() {
    let (topo, proxy) = pgdog("", 2);
    let pg = topo.primary();
    create_table(pg);
    let client = connect(&proxy).await;
    exec(&client, "SET idle_in_transaction_session_timeout = 300").await;
    exec(&client, "BEGIN; INSERT INTO lost VALUES (1)").await;
    eventually(
        "the server to end the idle transaction",
        Duration::from_secs(10),
        || async {
            pg.psql("SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'")
                .unwrap()
                == "0"
        },
    )
    .await;
    let err = client
        .batch_execute("INSERT INTO lost VALUES (2)")
        .await
        .expect_err("the transaction was ended by the server");
    let text = err_text(&err);
    // 08006 when pgdog read the server's FATAL before the statement came (the loss, with its
    // reason); 25P03 when the FATAL came as the statement's answer (relayed as an ERROR).
    let code = sqlstate(&err);
    assert!(
        matches!(code.as_deref(), Some("08006") | Some("25P03")),
        "{text}"
    );
    assert!(text.contains("idle-in-transaction"), "{text}");
    exec(&client, "COMMIT").await;
    assert_eq!(count(pg), "0");
}

/// Sharded: a shard's server dies while the client is idle in a transaction that wrote on
/// both shards: COMMIT fails and neither shard keeps its row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_commit_after_a_lost_shard_commits_nothing() {
    let topo = Topology::shards(2).unwrap();
    for node in topo.nodes() {
        create_table(node);
    }
    let config = format!(
        "auth_type = \"trust\"\n\n[[databases]]\nname = \"{DB}\"\nport = {}\ndatabase_name = \"postgres\"\nuser = \"postgres\"\nshard = 0\n\n[[databases]]\nname = \"{DB}\"\nport = {}\ndatabase_name = \"postgres\"\nuser = \"postgres\"\nshard = 1\n\n[[sharded_tables]]\ndatabase = \"{DB}\"\nname = \"lost\"\ncolumn = \"id\"\ndata_type = \"integer\"\n",
        topo.shard(0).port,
        topo.shard(1).port
    );
    let proxy = start_with(&config, &users(""));
    let client = connect(&proxy).await;
    // Two ids on different shards.
    let mut ids = Vec::new();
    for id in 1..50 {
        insert(&client, id).await;
        let on0 = topo
            .shard(0)
            .psql(&format!("SELECT count(*) FROM lost WHERE id = {id}"))
            .unwrap()
            == "1";
        if ids.iter().all(|(_, s)| *s != on0) {
            ids.push((id, on0));
        }
        if ids.len() == 2 {
            break;
        }
    }
    for node in topo.nodes() {
        node.psql("TRUNCATE lost").unwrap();
    }
    let (a, b) = (ids[0].0, ids[1].0);
    let lost_shard = if ids[1].1 {
        topo.shard(0)
    } else {
        topo.shard(1)
    };
    exec(&client, "BEGIN").await;
    insert(&client, a).await;
    insert(&client, b).await;
    restart(lost_shard);
    expect_08006(
        client.batch_execute("COMMIT").await,
        "COMMIT with a lost shard",
    );
    for node in topo.nodes() {
        assert_eq!(
            count(node),
            "0",
            "{}: a row of the lost transaction",
            node.name
        );
    }
    // The next transaction works on both shards.
    exec(
        &client,
        &format!("BEGIN; INSERT INTO lost VALUES ({a}); INSERT INTO lost VALUES ({b}); COMMIT"),
    )
    .await;
    assert_eq!(count(topo.shard(0)), "1");
    assert_eq!(count(topo.shard(1)), "1");

    // A lost shard cannot be repaired with ROLLBACK TO SAVEPOINT.
    for node in topo.nodes() {
        node.psql("TRUNCATE lost").unwrap();
    }
    exec(&client, "BEGIN; SAVEPOINT s").await;
    insert(&client, b).await;
    restart(lost_shard);
    expect_08006(
        client
            .batch_execute(&format!("INSERT INTO lost VALUES ({b})"))
            .await,
        "the shard's server is gone",
    );
    expect_08006(
        client.batch_execute("ROLLBACK TO SAVEPOINT s").await,
        "a savepoint cannot bring back a lost shard",
    );
    exec(&client, "COMMIT").await;
    assert_eq!(count(lost_shard), "0");
}
