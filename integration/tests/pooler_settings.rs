//! Per-database and per-user pool settings (issue 30): the most specific setting wins (the
//! user's entry for the database, then its entry for every database, then `[[databases]]`,
//! then `[general]`), SHOW POOLS shows the values in force, and each one does what it says on
//! a real server: pool_mode, pool_size, min_pool_size, idle_timeout, server_lifetime,
//! statement_timeout (a startup parameter), server_user / server_password, read_only, and the
//! reserve pool (reserve_pool_size after reserve_pool_timeout).
use crate::common;
use common::*;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use topology::{Proxy, Topology};

/// SHOW POOLS rows by user (database `db`), as column -> value.
async fn pools_of(
    admin: &tokio_postgres::Client,
    db: &str,
) -> HashMap<String, HashMap<String, String>> {
    let mut out = HashMap::new();
    for m in admin.simple_query("SHOW POOLS").await.unwrap() {
        if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
            if r.get("database") != Some(db) {
                continue;
            }
            let row: HashMap<String, String> = r
                .columns()
                .iter()
                .enumerate()
                .map(|(i, c)| (c.name().to_string(), r.get(i).unwrap_or("").to_string()))
                .collect();
            out.insert(row["user"].clone(), row);
        }
    }
    out
}

async fn pool_value(admin: &tokio_postgres::Client, db: &str, user: &str, column: &str) -> String {
    pools_of(admin, db).await[user][column].clone()
}

fn user(name: &str, database: &str, extra: &str) -> String {
    format!("[[users]]\nname = \"{name}\"\ndatabase = \"{database}\"\npassword = \"{PASSWORD}\"\n{extra}\n")
}

fn general(extra: &str) -> String {
    format!("admin_password = \"{ADMIN_PASSWORD}\"\nmin_pool_size = 0\n{extra}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_most_specific_setting_is_in_force_and_shown() {
    let topo = Topology::single().unwrap();
    let config = format!(
        "{}{}",
        general("statement_timeout = 100000\nidle_timeout = 60000"),
        database(
            topo.primary().port,
            "pool_size = 4\npool_mode = \"transaction\"\nidle_timeout = 30000\n\
             server_lifetime = 600000\nstatement_timeout = 200000\n"
        )
    );
    let users = [
        user("u1", DB, "pool_size = 2\nstatement_timeout = 1500"),
        user(
            "u1",
            "*",
            "pool_size = 3\nidle_timeout = 20000\npool_mode = \"session\"",
        ),
        user("u2", DB, ""),
    ]
    .concat();
    let proxy = start_with(&config, &users);
    let u1 = connect_as(&proxy, "u1", PASSWORD, DB).await.unwrap();
    let u2 = connect_as(&proxy, "u2", PASSWORD, DB).await.unwrap();
    let admin = admin(&proxy).await;
    let pools = pools_of(&admin, DB).await;
    let shown = |u: &str, c: &str| pools[u][c].clone();
    // u1: its entry for the database, then its entry for every database, then the database's.
    assert_eq!(shown("u1", "pool_size"), "2");
    assert_eq!(shown("u1", "pool_mode"), "session");
    assert_eq!(shown("u1", "idle_timeout"), "20000");
    assert_eq!(shown("u1", "statement_timeout"), "1500");
    assert_eq!(shown("u1", "server_lifetime"), "600000");
    // u2: the database's, then [general]'s.
    assert_eq!(shown("u2", "pool_size"), "4");
    assert_eq!(shown("u2", "pool_mode"), "transaction");
    assert_eq!(shown("u2", "idle_timeout"), "30000");
    assert_eq!(shown("u2", "statement_timeout"), "200000");
    assert_eq!(shown("u2", "read_only"), "false");
    // statement_timeout reaches the server as a startup parameter...
    assert_eq!(one(&u1, "SHOW statement_timeout").await, "1500ms");
    assert_eq!(one(&u2, "SHOW statement_timeout").await, "200s");
    // ... which the server enforces (57014), a client's SET overrides and RESET restores.
    let err = u1.simple_query("SELECT pg_sleep(5)").await.unwrap_err();
    assert_sqlstate(&err, "57014");
    exec(&u1, "SET statement_timeout = 0").await;
    assert_eq!(one(&u1, "SHOW statement_timeout").await, "0");
    exec(&u1, "RESET statement_timeout").await;
    assert_eq!(one(&u1, "SHOW statement_timeout").await, "1500ms");
    // Session mode for u1: its server stays with it; transaction mode for u2.
    assert_eq!(
        pool_value(&admin, DB, "u1", "sv_active").await,
        "1",
        "{}",
        proxy.log()
    );
    assert_eq!(pool_value(&admin, DB, "u2", "sv_active").await, "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_user_logs_in_to_the_servers_as_another_role() {
    let topo = Topology::single().unwrap();
    topo.primary()
        .psql("CREATE ROLE owner_role LOGIN PASSWORD 'owner-pw'; CREATE ROLE other_role LOGIN PASSWORD 'other-pw'")
        .unwrap();
    // The server checks these roles' passwords.
    server_hba_first(
        &topo,
        "host all owner_role,other_role 127.0.0.1/32 scram-sha-256",
    );
    until_server_checks_password(&topo, "owner_role").await;
    let config = format!(
        "{}{}\n[[databases]]\nname = \"app2\"\nhost = \"127.0.0.1\"\nport = {}\n\
         database_name = \"postgres\"\nserver_user = \"other_role\"\nserver_password = \"other-pw\"\n",
        general(""),
        database(topo.primary().port, "pool_size = 2\n"),
        topo.primary().port
    );
    let users = [
        user(
            "u1",
            DB,
            "server_user = \"owner_role\"\nserver_password = \"owner-pw\"",
        ),
        user("u2", DB, ""),
        user("u2", "app2", ""),
        // The user's entry for every database gives it for app2 too (over the database's).
        user("u3", "app2", ""),
        user("u3", "*", "server_user = \"owner_role\""),
        "[[users]]\nname = \"owner_role\"\ndatabase = \"app\"\npassword = \"owner-pw\"\n".into(),
    ]
    .concat();
    let proxy = start_with(&config, &users);
    let who = |user: &'static str, db: &'static str| {
        let proxy: &Proxy = &proxy;
        async move {
            let c = connect_as(proxy, user, PASSWORD, db).await.unwrap();
            one(&c, "SELECT current_user").await
        }
    };
    assert_eq!(who("u1", DB).await, "owner_role");
    // [[databases]] user = "postgres" for app; server_user (its other name) on app2.
    assert_eq!(who("u2", DB).await, "postgres");
    assert_eq!(who("u2", "app2").await, "other_role");
    // No server_password beside it: the role's own users.toml password.
    assert_eq!(who("u3", "app2").await, "owner_role");
    let admin = admin(&proxy).await;
    assert_eq!(
        pool_value(&admin, "app2", "u3", "server_user").await,
        "owner_role"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_pools_refuse_writes_and_turning_it_off() {
    let topo = Topology::single().unwrap();
    topo.primary().psql("CREATE TABLE ro_t (id int)").unwrap();
    let config = format!(
        "{}{}\n[[databases]]\nname = \"ro\"\nhost = \"127.0.0.1\"\nport = {}\n\
         database_name = \"postgres\"\nuser = \"postgres\"\npool_size = 1\nread_only = true\n",
        general(""),
        database(topo.primary().port, "pool_size = 1\n"),
        topo.primary().port
    );
    let users = [user(USER, DB, ""), user(USER, "ro", "")].concat();
    let proxy = start_with(&config, &users);
    let ro = connect_as(&proxy, USER, PASSWORD, "ro").await.unwrap();
    assert_eq!(one(&ro, "SELECT count(*) FROM ro_t").await, "0");
    // Postgres refuses the write (the session's default is read-only).
    let err = ro
        .simple_query("INSERT INTO ro_t VALUES (1)")
        .await
        .unwrap_err();
    assert_sqlstate(&err, "25006");
    // pgdog refuses what would turn that off, simple and extended protocol.
    for sql in [
        "BEGIN READ WRITE",
        "SET default_transaction_read_only = off",
        "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
        "SELECT set_config('default_transaction_read_only', 'off', false)",
    ] {
        let err = ro.simple_query(sql).await.unwrap_err();
        assert_sqlstate(&err, "25006");
        let err = ro.query(sql, &[]).await.unwrap_err();
        assert_sqlstate(&err, "25006");
    }
    // Inside a transaction the refusal aborts it, as Postgres' own error would.
    exec(&ro, "BEGIN").await;
    let err = ro
        .simple_query("SET transaction_read_only = off")
        .await
        .unwrap_err();
    assert_sqlstate(&err, "25006");
    let err = ro.simple_query("SELECT 1").await.unwrap_err();
    assert_sqlstate(&err, "25P02");
    exec(&ro, "ROLLBACK").await;
    assert_eq!(one(&ro, "SHOW default_transaction_read_only").await, "on");
    // Reads and RESET stay allowed; the other pool of the same server writes.
    exec(&ro, "RESET default_transaction_read_only").await;
    let rw = connect(&proxy).await;
    exec(&rw, "INSERT INTO ro_t VALUES (1)").await;
    assert_eq!(one(&ro, "SELECT count(*) FROM ro_t").await, "1");
    // A startup option turning it off would be synced to the servers: refused.
    let conninfo = format!(
        "{} options='-c default_transaction_read_only=off'",
        proxy.conninfo(USER, PASSWORD, "ro")
    );
    let refused = match connect_str(&conninfo).await {
        Err(e) => Some(sqlstate(&e)),
        Ok((c, _task)) => c.simple_query("SELECT 1").await.err().map(|e| sqlstate(&e)),
    };
    // The FATAL follows the login: the client sees it, or the connection closing after it.
    let refused = refused.expect("a read-write startup option was accepted");
    assert!(
        refused.as_deref() == Some("25006") || proxy.log().contains("cannot turn off read-only"),
        "{refused:?}\n{}",
        proxy.log()
    );
    let admin = admin(&proxy).await;
    assert_eq!(pool_value(&admin, "ro", USER, "read_only").await, "true");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn min_pool_size_idle_timeout_and_server_lifetime_per_user() {
    let topo = Topology::single().unwrap();
    let config = format!(
        "{}{}",
        general(""),
        database(topo.primary().port, "pool_size = 3\n")
    );
    let users = [
        user("warm", DB, "min_pool_size = 2"),
        user("brief", DB, "idle_timeout = 300"),
        user("aging", DB, "server_lifetime = 500\npool_size = 1"),
    ]
    .concat();
    let proxy = start_with(&config, &users);
    let admin = admin(&proxy).await;
    // min_pool_size: the pool opens its connections without any client.
    eventually(
        "warm's pool to open 2 connections",
        Duration::from_secs(10),
        || async { pool_value(&admin, DB, "warm", "sv_idle").await == "2" },
    )
    .await;
    assert_eq!(pool_value(&admin, DB, "brief", "sv_idle").await, "0");
    // idle_timeout: brief's connection closes once unused for 300 ms.
    let brief = connect_as(&proxy, "brief", PASSWORD, DB).await.unwrap();
    exec(&brief, "SELECT 1").await;
    assert_eq!(pool_value(&admin, DB, "brief", "sv_idle").await, "1");
    eventually(
        "brief's idle connection to close",
        Duration::from_secs(10),
        || async { pool_value(&admin, DB, "brief", "sv_idle").await == "0" },
    )
    .await;
    // server_lifetime: aging's one connection is replaced after 500 ms.
    let aging = connect_as(&proxy, "aging", PASSWORD, DB).await.unwrap();
    let first = one(&aging, "SELECT pg_backend_pid()").await;
    eventually_value(
        "aging's connection to be replaced",
        Duration::from_secs(10),
        &aging,
        "SELECT pg_backend_pid()",
        |pid| pid != first,
    )
    .await;
    assert_eq!(pool_value(&admin, DB, "warm", "min_pool_size").await, "2");
    assert_eq!(
        pool_value(&admin, DB, "aging", "server_lifetime").await,
        "500"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reserve_serves_a_client_that_waited_reserve_pool_timeout() {
    let topo = Topology::single().unwrap();
    let config = config(
        &topo,
        &general("reserve_pool_size = 1\nreserve_pool_timeout = 300\ncheckout_timeout = 2000"),
        1,
    );
    let proxy = start_with(&config, &users(""));
    let admin = admin(&proxy).await;
    let (a, b, c) = (
        connect(&proxy).await,
        connect(&proxy).await,
        connect(&proxy).await,
    );
    exec(&a, "BEGIN; SELECT 1").await;
    // The pool's one connection is taken: B gets the reserve after 300 ms, not an error.
    let started = Instant::now();
    exec(&b, "BEGIN; SELECT 2").await;
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(250),
        "no wait for the reserve: {waited:?}"
    );
    assert_eq!(pool_value(&admin, DB, USER, "reserve_in_use").await, "1");
    // The reserve is 1: C waits for the pool or the reserve, then gets 53300.
    let err = c.simple_query("SELECT 3").await.unwrap_err();
    assert_sqlstate(&err, "53300");
    // A connection coming back serves the next client at once.
    exec(&b, "COMMIT").await;
    assert_eq!(pool_value(&admin, DB, USER, "reserve_in_use").await, "0");
    assert_eq!(one(&c, "SELECT 4").await, "4");
    exec(&a, "COMMIT").await;
}
