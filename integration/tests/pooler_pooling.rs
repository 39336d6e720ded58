//! Pooling itself: many clients on few server connections, checkout timeouts, clients that
//! vanish mid-transaction, session mode, and pgbench in all three query modes.
use crate::common;
use common::*;
use std::collections::HashSet;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_clients_on_a_pool_of_ten() {
    // MD5 keeps 500 logins cheap for the (debug-built) client; pooling is what is tested.
    let (topo, proxy) = pgdog("auth_type = \"md5\"\ncheckout_timeout = 15000", 10);
    const CLIENTS: usize = 500;
    let barrier = Arc::new(tokio::sync::Barrier::new(CLIENTS));
    let conninfo = proxy.conninfo(USER, PASSWORD, DB);
    let started = Instant::now();
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (barrier, conninfo) = (barrier.clone(), conninfo.clone());
            tokio::spawn(async move {
                let (client, _task) = connect_str(&conninfo)
                    .await
                    .map_err(|e| format!("client {i} connect: {e}"))?;
                // Everyone is connected before anyone starts.
                barrier.wait().await;
                let mut pids = Vec::new();
                for t in 0..3 {
                    let tx = async {
                        client.batch_execute("BEGIN").await?;
                        let pid: i32 = client
                            .query_one("SELECT pg_backend_pid()", &[])
                            .await?
                            .get(0);
                        let n: i64 = client
                            .query_one(
                                "SELECT $1::bigint + count(*) * 0 FROM pg_class",
                                &[&(i as i64)],
                            )
                            .await?
                            .get(0);
                        assert_eq!(n, i as i64);
                        // Same server for the whole transaction.
                        let again: i32 = client
                            .query_one("SELECT pg_backend_pid()", &[])
                            .await?
                            .get(0);
                        assert_eq!(pid, again, "client {i} changed server inside a transaction");
                        client.batch_execute("COMMIT").await?;
                        Ok::<i32, tokio_postgres::Error>(pid)
                    };
                    pids.push(
                        tx.await
                            .map_err(|e| format!("client {i} transaction {t}: {e}"))?,
                    );
                }
                Ok::<Vec<i32>, String>(pids)
            })
        })
        .collect();
    let mut all = HashSet::new();
    let mut failures = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            Ok(pids) => all.extend(pids),
            Err(e) => failures.push(e),
        }
    }
    let elapsed = started.elapsed();
    assert!(
        failures.is_empty(),
        "{} of {CLIENTS} clients failed, first: {}\n{}",
        failures.len(),
        failures[0],
        proxy.log()
    );
    assert!(
        all.len() <= 10,
        "{} distinct server connections for a pool of 10: {all:?}",
        all.len()
    );
    // The server agrees: pgdog never had more than 10 connections.
    let server_side = topo
        .primary()
        .psql("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND application_name <> 'pgdog_healthcheck'")
        .unwrap();
    assert!(
        server_side.parse::<usize>().unwrap() <= 10,
        "{server_side} server connections: {}", topo.primary().psql("SELECT string_agg(application_name || ':' || coalesce(usename, ''), ',') FROM pg_stat_activity WHERE backend_type = 'client backend'").unwrap()
    );
    eprintln!(
        "500 clients x 3 transactions in {elapsed:?} on {} servers",
        all.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkout_timeout_gives_a_clear_error() {
    let (_topo, _proxy, holder, waiter) = pgdog_pair("checkout_timeout = 300", 1).await;
    exec(&holder, "BEGIN").await;
    one(&holder, "SELECT 1").await;

    let started = Instant::now();
    let err = waiter
        .simple_query("SELECT 'waited'")
        .await
        .expect_err("the only server is taken: the query must time out");
    let waited = started.elapsed();
    assert_eq!(sqlstate(&err).as_deref(), Some("53300"), "{err:?}");
    let message = err.as_db_error().unwrap().message().to_string();
    assert!(
        message.contains("300") && message.contains("timed out"),
        "the message should name the timeout: {message}"
    );
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_secs(3),
        "error after {waited:?}, expected about 300 ms"
    );
    // The same client again after the holder is done.
    exec(&holder, "COMMIT").await;
    assert_eq!(one(&waiter, "SELECT 'waited'").await, "waited");
    assert_eq!(one(&holder, "SELECT 'holder'").await, "holder");
}

/// Locks row 1 of `locked` in a transaction, then loses the client: by `Client` drop (a
/// Terminate message) or by aborting the connection task (the socket just closes).
async fn lose_client_holding_a_lock(proxy: &topology::Proxy, terminate: bool) {
    let (client, task) = connect_str(&proxy.conninfo(USER, PASSWORD, DB))
        .await
        .unwrap();
    exec(&client, "BEGIN").await;
    client
        .query_one("SELECT id FROM locked WHERE id = 1 FOR UPDATE", &[])
        .await
        .unwrap();
    if terminate {
        drop(client);
        let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
    } else {
        task.abort();
        let _ = task.await;
        drop(client);
    }
}

/// Whether `client` can lock row 1 right now.
async fn can_lock(client: &tokio_postgres::Client) -> bool {
    exec(client, "BEGIN").await;
    let r = client
        .query("SELECT id FROM locked WHERE id = 1 FOR UPDATE NOWAIT", &[])
        .await;
    exec(client, "ROLLBACK").await;
    match r {
        Ok(rows) => rows.len() == 1,
        Err(e) if sqlstate(&e).as_deref() == Some("55P03") => false,
        Err(e) => panic!("locking: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_gone_mid_transaction_is_rolled_back() {
    let (topo, proxy) = pgdog("", 2);
    topo.primary()
        .psql("CREATE TABLE locked (id int PRIMARY KEY); INSERT INTO locked VALUES (1)")
        .unwrap();
    let other = connect(&proxy).await;
    for terminate in [true, false] {
        lose_client_holding_a_lock(&proxy, terminate).await;
        eventually(
            &format!("the row lock to be released (terminate: {terminate})"),
            Duration::from_secs(5),
            || can_lock(&other),
        )
        .await;
    }
    eventually(
        "no server connection idle in transaction",
        Duration::from_secs(5),
        || async {
            topo.primary()
                .psql(
                    "SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'",
                )
                .unwrap()
                == "0"
        },
    )
    .await;
    // Both servers still serve.
    let a = connect(&proxy).await;
    let b = connect(&proxy).await;
    exec(&a, "BEGIN").await;
    exec(&b, "BEGIN").await;
    assert_eq!(one(&a, "SELECT count(*) FROM locked").await, "1");
    assert_eq!(one(&b, "SELECT count(*) FROM locked").await, "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_mode_keeps_settings_per_client_only() {
    let (_topo, proxy, first) = pgdog_client(
        "pooler_mode = \"session\"",
        1,
        &[
            "SET statement_timeout = '4321ms'; SET application_name = 'first'",
            "CREATE TEMP TABLE session_tmp (x int); PREPARE session_stmt AS SELECT 1",
        ],
    )
    .await;
    let pid = one(&first, "SELECT pg_backend_pid()").await;
    for _ in 0..3 {
        exec(&first, "BEGIN").await;
        assert_eq!(one(&first, "SHOW statement_timeout").await, "4321ms");
        assert_eq!(one(&first, "SHOW application_name").await, "first");
        assert_eq!(one(&first, "SELECT pg_backend_pid()").await, pid);
        exec(&first, "COMMIT").await;
    }
    drop(first);

    // Pool of 1: the next client gets the same server, reset.
    let second = connect(&proxy).await;
    assert_eq!(one(&second, "SELECT pg_backend_pid()").await, pid);
    assert_eq!(one(&second, "SHOW statement_timeout").await, "0");
    assert_ne!(one(&second, "SHOW application_name").await, "first");
    assert_eq!(
        one(&second, "SELECT count(*) FROM pg_prepared_statements").await,
        "0"
    );
    assert_eq!(
        one(&second, "SELECT to_regclass('session_tmp') IS NULL").await,
        "t"
    );
}

/// Runs pgbench through pgdog, killed after `limit`; its stdout (panics on failure).
fn pgbench(
    topo: &topology::Topology,
    proxy: &topology::Proxy,
    args: &[&str],
    limit: Duration,
) -> String {
    let mut child = Command::new(topo.install().tool("pgbench"))
        .args(["-h", "127.0.0.1", "-p", &proxy.port.to_string(), "-U", USER])
        .args(args)
        .arg(DB)
        .env("PGPASSWORD", PASSWORD)
        .env("PGSSLMODE", "disable")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut killed = false;
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            killed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let stderr_head: String = stderr.lines().take(15).collect::<Vec<_>>().join("\n");
    assert!(
        out.status.success() && !killed,
        "pgbench {args:?} failed ({}{}) after {:?}:\n{stdout}\n{stderr_head}\n(stderr: {} lines)",
        out.status,
        if killed {
            ", killed at the time limit"
        } else {
            ""
        },
        started.elapsed(),
        stderr.lines().count()
    );
    stdout
}

/// `pgbench -i -s 1`, then `-M mode -c 32 -j 2 -t 30` on a pool of 4.
fn pgbench_mode(mode: &str) {
    let (topo, proxy) = pgdog("", 4);
    pgbench(
        &topo,
        &proxy,
        &["-i", "-s", "1", "-q"],
        Duration::from_secs(30),
    );
    assert_eq!(
        topo.primary()
            .psql("SELECT count(*) FROM pgbench_accounts")
            .unwrap(),
        "100000"
    );
    let started = Instant::now();
    let out = pgbench(
        &topo,
        &proxy,
        &["-M", mode, "-c", "32", "-j", "2", "-t", "30", "-n"],
        Duration::from_secs(15),
    );
    assert!(
        out.contains("number of transactions actually processed: 960/960"),
        "{mode}: {out}"
    );
    assert!(
        out.contains("number of failed transactions: 0 (0.000%)"),
        "{mode}: {out}"
    );
    eprintln!("pgbench -M {mode}: {:?}", started.elapsed());
    // Every transaction reached the server.
    assert_eq!(
        topo.primary()
            .psql("SELECT count(*) FROM pgbench_history")
            .unwrap(),
        "960"
    );
}

#[test]
fn pgbench_simple() {
    pgbench_mode("simple");
}

#[test]
fn pgbench_extended() {
    pgbench_mode("extended");
}

#[test]
fn pgbench_prepared() {
    pgbench_mode("prepared");
}
