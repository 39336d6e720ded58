//! PgBouncer 1.26's session tracking and per-user limits (issue 49):
//! - a parameter the server reports (`search_path` on Postgres 18) changed by `set_config` (no
//!   SET for pgdog to parse) follows the client to another server connection;
//! - `query_timeout`, `idle_transaction_timeout`, `client_idle_timeout`,
//!   `query_wait_timeout`, `transaction_timeout` and `pool_idle_timeout` set for one user (under
//!   PgBouncer's names) apply to that user and not to another.
use crate::common;
use common::*;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reported_parameter_follows_the_client_to_its_next_server() {
    let (_topo, proxy) = pgdog("", 2);
    let a = connect(&proxy).await;
    let b = connect(&proxy).await;
    exec(&a, "CREATE SCHEMA IF NOT EXISTS tracked").await;
    let first = one(
        &a,
        "SELECT pg_backend_pid()::text || ' ' || set_config('search_path', 'tracked, public', false)",
    )
    .await;
    let first_pid = first.split(' ').next().unwrap().to_string();
    // b holds a server in a transaction: a's next statement may land on the other one.
    exec(&b, "BEGIN").await;
    let b_pid = one(&b, "SELECT pg_backend_pid()::text").await;
    let next = one(
        &a,
        "SELECT pg_backend_pid()::text || ' ' || current_setting('search_path')",
    )
    .await;
    let (pid, path) = next.split_once(' ').unwrap();
    assert_eq!(
        path, "tracked, public",
        "first on {first_pid}, now on {pid} (b on {b_pid})"
    );
    if b_pid == first_pid {
        assert_ne!(pid, first_pid, "a moved to the other server");
    }
    exec(&b, "COMMIT").await;
}

/// One user per timeout, each set under PgBouncer's name; `app` keeps [general]'s (none).
fn users_with_limits() -> String {
    let mut out = users("");
    for (user, setting) in [
        ("q", "query_timeout = 300"),
        ("itx", "idle_transaction_timeout = 400"),
        ("idle", "client_idle_timeout = 1000"),
        ("wait", "query_wait_timeout = 500"),
        ("ttx", "transaction_timeout = 600"),
        ("pidle", "pool_idle_timeout = 1234"),
    ] {
        out.push_str(&format!(
            "\n[[users]]\nname = \"{user}\"\ndatabase = \"{DB}\"\npassword = \"{PASSWORD}\"\n{setting}\n"
        ));
    }
    out
}

async fn as_user(proxy: &topology::Proxy, user: &str) -> tokio_postgres::Client {
    connect_as(proxy, user, PASSWORD, DB).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_per_user() {
    let topo = topology::Topology::single().unwrap();
    let config = config(&topo, "admin_password = \"admin-pw\"", 1);
    let proxy = start_with(&config, &users_with_limits());
    let app = connect(&proxy).await;
    // query_timeout: q's query is cancelled, app's is not.
    let start = Instant::now();
    let err = as_user(&proxy, "q")
        .await
        .simple_query("SELECT pg_sleep(3)")
        .await
        .unwrap_err();
    assert_sqlstate(&err, "57014");
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(one(&app, "SELECT pg_sleep(0.5)::text").await, "");
    // transaction_timeout (Postgres' own, sent at connect): ttx's session ends with 25P04.
    let err = as_user(&proxy, "ttx")
        .await
        .batch_execute("BEGIN; SELECT pg_sleep(1); COMMIT")
        .await
        .unwrap_err();
    assert!(err_text(&err).contains("25P04"), "{}", err_text(&err));
    exec(&app, "BEGIN; SELECT pg_sleep(1); COMMIT").await;
    // idle_transaction_timeout: itx's idle transaction ends it (25P03), app's stays open.
    let itx = as_user(&proxy, "itx").await;
    exec(&itx, "BEGIN").await;
    exec(&app, "BEGIN; SELECT 1").await;
    // (Polled without a query: a query would restart the clock.)
    eventually(
        "itx's idle transaction to end",
        Duration::from_secs(5),
        || async { itx.is_closed() },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(one(&app, "SELECT 'open'").await, "open");
    exec(&app, "COMMIT").await;
    // client_idle_timeout: an idle `idle` client is closed, an idle app client is not.
    let idle = as_user(&proxy, "idle").await;
    eventually(
        "the idle client to be closed",
        Duration::from_secs(6),
        || async { idle.is_closed() },
    )
    .await;
    assert_eq!(one(&app, "SELECT 'still'").await, "still");
    // query_wait_timeout: with wait's only connection busy, another wait client gives up at
    // 500 ms.
    let holder = as_user(&proxy, "wait").await;
    let busy = tokio::spawn(async move { holder.simple_query("SELECT pg_sleep(2)").await.is_ok() });
    let waiter = as_user(&proxy, "wait").await;
    let admin = admin(&proxy).await;
    eventually(
        "the holder's query to run",
        Duration::from_secs(5),
        || async {
            crate::query_rows::simple_rows(&admin, "SHOW POOLS")
                .await
                .iter()
                .any(|r| r.get("user") == Some("wait") && r.get("sv_active") == Some("1"))
        },
    )
    .await;
    let start = Instant::now();
    let err = waiter.simple_query("SELECT 1").await.unwrap_err();
    let waited = start.elapsed();
    assert!(err_text(&err).contains("500 ms"), "{}", err_text(&err));
    assert!(waited < Duration::from_millis(1500), "{waited:?}");
    assert!(busy.await.unwrap());
    // pool_idle_timeout is idle_timeout: SHOW POOLS shows 1234 for pidle, [general]'s for app.
    as_user(&proxy, "pidle")
        .await
        .simple_query("SELECT 1")
        .await
        .unwrap();
    let pools = crate::query_rows::simple_rows(&admin, "SHOW POOLS").await;
    let idle_of = |user: &str| {
        pools
            .iter()
            .find(|r| r.get("user") == Some(user))
            .and_then(|r| r.get("idle_timeout").map(str::to_string))
    };
    assert_eq!(idle_of("pidle").as_deref(), Some("1234"));
    assert_ne!(idle_of(USER).as_deref(), Some("1234"));
}
