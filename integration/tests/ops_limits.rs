//! Timeouts, limits and graceful shutdown on a real PostgreSQL 18 server: `query_timeout`
//! (57014, the session goes on), `client_idle_timeout` (FATAL 57P05),
//! `idle_in_transaction_timeout` (FATAL 25P03, the transaction rolled back, the server reused),
//! `client_login_timeout` (57014 during authentication), `max_client_connections` (53300),
//! pre-authentication message limits, `prepared_statements_limit` (the global cache and each
//! server's statements), `server_query_timeout` (pgdog's ROLLBACK on a frozen server), and
//! SIGINT / SIGQUIT / SHUTDOWN draining (SIGTERM and the other signals: `admin_pgbouncer.rs`).
use crate::common;
use common::raw::{self, Conn};
use common::*;
use std::time::{Duration, Instant};
use tokio_postgres::SimpleQueryMessage;

/// Asserts that less than 5 s passed since `start` (a timeout of 300 ms fired, not a late one).
#[track_caller]
fn assert_quick(start: Instant) {
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

/// The FATAL (or ERROR) a raw connection receives before it is closed.
async fn closing_error(c: &mut Conn) -> Option<String> {
    c.until_closed()
        .await
        .into_iter()
        .find(|m| m.tag == b'E')
        .and_then(|m| m.sqlstate())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_timeout_cancels_and_the_session_goes_on() {
    let (_topo, proxy) = pgdog("query_timeout = 300", 2);
    let app = connect(&proxy).await;
    let start = Instant::now();
    let err = app.simple_query("SELECT pg_sleep(10)").await.unwrap_err();
    assert_sqlstate(&err, "57014");
    assert_quick(start);
    assert_eq!(one(&app, "SELECT 7").await, "7");
    // Extended protocol too.
    let err = app
        .query("SELECT pg_sleep($1)", &[&10f64])
        .await
        .unwrap_err();
    assert_sqlstate(&err, "57014");
    // A query under the limit is untouched.
    assert_eq!(one(&app, "SELECT pg_sleep(0.05)::text || 'ok'").await, "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_timeouts_end_idle_clients() {
    let (_topo, proxy) = pgdog(
        "auth_type = \"plain\"\nclient_idle_timeout = 300\nidle_in_transaction_timeout = 300",
        2,
    );
    // Idle between transactions: FATAL 57P05.
    let mut idle = Conn::login(proxy.port, USER, DB, Some(PASSWORD)).await;
    assert_eq!(closing_error(&mut idle).await.as_deref(), Some("57P05"));

    // Idle in a transaction: FATAL 25P03, the insert rolled back, the server reused.
    let app = connect(&proxy).await;
    exec(&app, "CREATE TABLE IF NOT EXISTS idle_t (v int)").await;
    let mut tx = Conn::login(proxy.port, USER, DB, Some(PASSWORD)).await;
    tx.send(&raw::query("BEGIN; INSERT INTO idle_t VALUES (1)"))
        .await;
    tx.until_ready().await;
    assert_eq!(closing_error(&mut tx).await.as_deref(), Some("25P03"));
    let other = connect(&proxy).await;
    assert_eq!(one(&other, "SELECT count(*) FROM idle_t").await, "0");
    // A client that keeps talking is not idle.
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert_eq!(one(&other, "SELECT 1").await, "1");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_timeout_and_client_limit() {
    let (_topo, proxy) = pgdog(
        "auth_type = \"plain\"\nclient_login_timeout = 300\nmax_client_connections = 2",
        2,
    );
    // Startup sent, password never: 57014 at the deadline.
    let mut slow = Conn::connect(proxy.port).await;
    slow.send(&raw::startup(&[("user", USER), ("database", DB)]))
        .await;
    let start = Instant::now();
    let msgs = slow.until_closed().await;
    assert!(
        msgs.iter()
            .any(|m| m.tag == b'E' && m.sqlstate().as_deref() == Some("57014")),
        "{:?}",
        msgs.iter().map(|m| m.tag as char).collect::<String>()
    );
    assert_quick(start);
    // Nothing sent at all: closed at the deadline.
    let mut silent = Conn::connect(proxy.port).await;
    assert!(silent.until_closed().await.is_empty());

    // Two clients fit; the third gets 53300.
    let a = connect(&proxy).await;
    let b = connect(&proxy).await;
    let err = connect_as(&proxy, USER, PASSWORD, DB).await.unwrap_err();
    assert_sqlstate(&err, "53300");
    drop(b);
    eventually("a slot to free up", Duration::from_secs(5), || async {
        connect_as(&proxy, USER, PASSWORD, DB).await.is_ok()
    })
    .await;
    assert_eq!(one(&a, "SELECT 1").await, "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_before_authentication_are_bounded() {
    let (_topo, proxy) = pgdog("auth_type = \"plain\"", 2);
    // A startup packet announcing more than 10,000 bytes.
    let mut c = Conn::connect(proxy.port).await;
    c.send(&20_000i32.to_be_bytes()).await;
    assert_eq!(closing_error(&mut c).await.as_deref(), Some("08P01"));
    // A password message announcing 100 MB before authentication: refused at once, without
    // waiting for (or reserving) the announced bytes.
    let mut c = Conn::connect(proxy.port).await;
    c.send(&raw::startup(&[("user", USER), ("database", DB)]))
        .await;
    let _auth_request = c.recv().await.expect("authentication request");
    let mut header = vec![b'p'];
    header.extend_from_slice(&100_000_000i32.to_be_bytes());
    c.send(&header).await;
    assert_eq!(closing_error(&mut c).await.as_deref(), Some("08P01"));
    // The proxy is fine.
    let app = connect(&proxy).await;
    assert_eq!(one(&app, "SELECT 1").await, "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_limit_bounds_the_caches() {
    let (_topo, proxy) = pgdog("prepared_statements_limit = 3", 1);
    let app = connect(&proxy).await;
    for i in 0..8 {
        let st = app
            .prepare(&format!("SELECT $1::int + {i} AS limit_test"))
            .await
            .unwrap();
        let row = app.query_one(&st, &[&1i32]).await.unwrap();
        assert_eq!(row.get::<_, i32>(0), 1 + i);
    }
    // The one server connection (pool_size 1) trims to the limit in the pool's upkeep.
    eventually_value(
        "the server to keep at most 3 statements",
        Duration::from_secs(10),
        &app,
        "SELECT count(*) FROM pg_prepared_statements WHERE name LIKE '\\_\\_pgdog\\_%'",
        |n| n.parse::<usize>().unwrap() <= 3,
    )
    .await;
    // Statements evicted everywhere still work for the client that holds them.
    let first = app
        .prepare("SELECT $1::int + 0 AS limit_test")
        .await
        .unwrap();
    assert_eq!(
        app.query_one(&first, &[&5i32])
            .await
            .unwrap()
            .get::<_, i32>(0),
        5
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_query_timeout_closes_a_frozen_server() {
    let (_topo, proxy) = pgdog("auth_type = \"plain\"\nserver_query_timeout = 300", 1);
    let mut tx = Conn::login(proxy.port, USER, DB, Some(PASSWORD)).await;
    tx.send(&raw::query("BEGIN; SELECT pg_backend_pid()")).await;
    let msgs = tx.until_ready().await;
    let pid: i32 = msgs
        .iter()
        .find(|m| m.tag == b'D')
        .map(|m| String::from_utf8_lossy(&m.body[6..]).parse().unwrap())
        .unwrap();
    // Freeze the backend, then leave in the middle of the transaction: pgdog's ROLLBACK on it
    // hangs, and server_query_timeout gives up on that connection.
    // SAFETY: kill(2) on a server process of this test's own cluster.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    drop(tx);
    let app = connect(&proxy).await;
    let start = Instant::now();
    assert_eq!(one(&app, "SELECT 3").await, "3");
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
    assert_ne!(one(&app, "SELECT pg_backend_pid()").await, pid.to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_drains_transactions_then_exits() {
    let (_topo, mut proxy) = pgdog("shutdown_timeout = 10000", 4);
    let idle = connect(&proxy).await;
    let busy = connect(&proxy).await;
    exec(
        &busy,
        "CREATE TABLE IF NOT EXISTS drain_t (v int); BEGIN; INSERT INTO drain_t VALUES (1)",
    )
    .await;
    // SIGINT: PgBouncer's SHUTDOWN WAIT_FOR_SERVERS.
    proxy.signal(libc::SIGINT);
    // The idle client is told and dropped; new clients are refused.
    eventually(
        "the idle client to be closed",
        Duration::from_secs(5),
        || async { idle.is_closed() },
    )
    .await;
    eventually(
        "new connections to be refused",
        Duration::from_secs(5),
        || async { connect_as(&proxy, USER, PASSWORD, DB).await.is_err() },
    )
    .await;
    // The transaction in flight finishes.
    busy.batch_execute("INSERT INTO drain_t VALUES (2); COMMIT")
        .await
        .expect("COMMIT after SIGINT");
    let status = proxy
        .wait_exit(Duration::from_secs(10))
        .expect("pgdog exits");
    assert!(status.success(), "{status}");
    assert!(busy.is_closed() || busy.simple_query("SELECT 1").await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigquit_and_admin_shutdown() {
    // SIGQUIT: no wait for the transaction in flight.
    let (topo, mut proxy) = pgdog("shutdown_timeout = 60000", 2);
    let busy = connect(&proxy).await;
    exec(&busy, "BEGIN; SELECT 1").await;
    proxy.signal(libc::SIGQUIT);
    let status = proxy
        .wait_exit(Duration::from_secs(10))
        .expect("pgdog exits");
    assert!(status.success(), "{status}");
    assert!(busy.simple_query("SELECT 1").await.is_err());
    drop(proxy);

    // Admin SHUTDOWN: graceful, as SIGINT.
    let proxy = start(&topo, "admin_password = \"pw\"", 2);
    let mut proxy = proxy;
    let a = connect_as(&proxy, "admin", "pw", "admin").await.unwrap();
    let msgs = a.simple_query("SHUTDOWN").await;
    assert!(
        matches!(
            msgs.as_deref(),
            Ok([SimpleQueryMessage::CommandComplete(_)]) | Err(_)
        ),
        "{msgs:?}"
    );
    let status = proxy
        .wait_exit(Duration::from_secs(10))
        .expect("pgdog exits");
    assert!(status.success(), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_timeout_on_a_sharded_database() {
    let topo = topology::Topology::shards(2).expect("shards");
    let mut config = String::from("query_timeout = 300\n");
    for (i, node) in topo.nodes().iter().enumerate() {
        config.push_str(&database(node.port, &format!("shard = {i}\n")));
    }
    config.push_str("\n[[sharded_tables]]\ndatabase = \"app\"\nname = \"t\"\ncolumn = \"id\"\n");
    let proxy = start_with(&config, &users(""));
    let app = connect(&proxy).await;
    exec(
        &app,
        "CREATE TABLE t (id bigint); INSERT INTO t VALUES (1), (2), (3), (4)",
    )
    .await;
    let start = Instant::now();
    // Runs on both shards (no key): both are cancelled.
    let err = app
        .simple_query("SELECT pg_sleep(10) FROM t")
        .await
        .unwrap_err();
    assert_sqlstate(&err, "57014");
    assert_quick(start);
    assert_eq!(one(&app, "SELECT 8").await, "8");
}
