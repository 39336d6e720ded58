//! The admin database of a running pgdog (`[general] admin_database`): login, SHOW commands,
//! errors that keep the session usable, PAUSE waiting for transactions in flight and holding
//! new ones until RESUME, RELOAD switching servers under a paused client (and ending a session
//! whose database became sharded), and PAUSE giving up after `pause_timeout`.
use crate::common;
use common::*;
use std::time::{Duration, Instant};
use tokio_postgres::{Client, SimpleQueryMessage};
use topology::Topology;

const ADMIN: &str = "admin";

/// Data rows of a simple query, every value as text ("NULL" for NULL).
async fn rows(client: &Client, sql: &str) -> Vec<Vec<String>> {
    simple_rows(client, sql)
        .await
        .iter()
        .map(|r| {
            (0..r.len())
                .map(|i| r.get(i).unwrap_or("NULL").to_string())
                .collect()
        })
        .collect()
}

/// A direct connection to a server (not through pgdog).
async fn direct(port: u16) -> Client {
    connect_str(&format!(
        "host=127.0.0.1 port={port} user=postgres dbname=postgres sslmode=disable"
    ))
    .await
    .expect("direct connection")
    .0
}

/// SHOW PAUSED as (database, clients waiting).
async fn paused(admin: &Client) -> Vec<(String, usize)> {
    rows(admin, "SHOW PAUSED")
        .await
        .into_iter()
        .map(|r| (r[0].clone(), r[1].parse().unwrap()))
        .collect()
}

/// Asserts that `task` has not finished within `wait`.
async fn still_pending<T>(task: &tokio::task::JoinHandle<T>, wait: Duration, what: &str) {
    let start = Instant::now();
    while start.elapsed() < wait {
        assert!(!task.is_finished(), "{what} finished but should be waiting");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// pgdog.toml lines of the admin database.
fn admin_general(extra: &str) -> String {
    format!("admin_password = \"{ADMIN_PASSWORD}\"\n{extra}")
}

type Pending<T> = tokio::task::JoinHandle<Result<T, tokio_postgres::Error>>;

/// Sends `PAUSE app` on `a` while a transaction is in flight: the pause shows in SHOW PAUSED
/// (asked on `watcher`) but the command keeps waiting. Gives `a` back once PAUSE returns.
async fn pause_behind_a_transaction(a: Client, watcher: &Client) -> Pending<Client> {
    let pause = tokio::spawn(async move { a.simple_query("PAUSE app").await.map(|_| a) });
    eventually("app to be paused", Duration::from_secs(10), || async {
        paused(watcher).await.iter().any(|(db, _)| db == "app")
    })
    .await;
    still_pending(
        &pause,
        Duration::from_millis(300),
        "PAUSE with X in a transaction",
    )
    .await;
    pause
}

/// What `task` returns; it must finish within 10 s and succeed (`what` says what it was).
async fn completes<T>(task: Pending<T>, what: &str) -> T {
    tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect(what)
        .unwrap()
        .unwrap_or_else(|e| panic!("{what}: {}", err_text(&e)))
}

/// Sends `sql` on Y while app is paused and waits until SHOW PAUSED (on `watcher`) counts it.
async fn held_in_the_pause(
    y: &std::sync::Arc<Client>,
    sql: &'static str,
    watcher: &Client,
) -> Pending<String> {
    let held = tokio::spawn({
        let y = y.clone();
        async move { simple_value(&y, sql).await }
    });
    eventually(
        "Y to wait in the pause",
        Duration::from_secs(10),
        || async { paused(watcher).await == vec![("app".to_string(), 1)] },
    )
    .await;
    held
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_show_commands_and_errors() {
    let (topo, proxy) = pgdog(&admin_general(""), 4);
    let port = topo.primary().port;

    let err = connect_as(&proxy, ADMIN, "wrong", ADMIN).await.unwrap_err();
    assert_sqlstate(&err, "28P01");
    let err = connect_as(&proxy, USER, PASSWORD, ADMIN).await.unwrap_err();
    assert_sqlstate(&err, "28P01");

    let app = connect(&proxy).await;
    assert_eq!(one(&app, "SELECT 41 + 1").await, "42");
    let a = admin(&proxy).await;

    // PgBouncer's columns (name, host, port, database, ...), then shard and role.
    let dbs = rows(&a, "show databases").await;
    assert_eq!(dbs.len(), 1, "{dbs:?}");
    assert_eq!(
        dbs[0][..4],
        ["app", "127.0.0.1", &port.to_string(), "postgres"],
        "{dbs:?}"
    );
    assert_eq!(dbs[0][14..], ["0", "primary"], "{dbs:?}");
    let msgs = a.simple_query("SHOW POOLS;").await.unwrap();
    let Some(row) = msgs.iter().find_map(|m| match m {
        SimpleQueryMessage::Row(r) => Some(r),
        _ => None,
    }) else {
        panic!("SHOW POOLS: no row: {msgs:?}");
    };
    let col = |name: &str| {
        let i = row
            .columns()
            .iter()
            .position(|c| c.name() == name)
            .unwrap_or_else(|| panic!("SHOW POOLS has no column {name}"));
        row.get(i).unwrap().to_string()
    };
    assert_eq!(col("database"), "app");
    assert_eq!(col("user"), "app");
    assert_eq!(col("shard"), "0");
    assert_eq!(col("port"), port.to_string());
    assert_eq!(col("pool_size"), "4");
    let idle: usize = col("sv_idle").parse().unwrap();
    let active: usize = col("sv_active").parse().unwrap();
    assert!(idle >= 1 && active == 0, "idle {idle} active {active}");
    assert_eq!(col("cl_waiting"), "0");
    assert_eq!(col("paused"), "false");

    let version = rows(&a, "SHOW VERSION").await;
    assert!(version[0][0].starts_with("pgdog "), "{version:?}");

    // Unknown commands and the extended protocol: an error, the session goes on.
    let err = a.simple_query("SELECT 1").await.unwrap_err();
    assert_sqlstate(&err, "08P01");
    assert_eq!(
        err_text(&err),
        "ERROR 08P01: invalid command 'SELECT 1', use SHOW HELP;"
    );
    let err = a.query("SHOW VERSION", &[]).await.unwrap_err();
    assert_sqlstate(&err, "0A000");
    // Several statements in one Query; an error stops the rest of it.
    let msgs = a.simple_query("SHOW VERSION; show paused").await.unwrap();
    let done = msgs
        .iter()
        .filter(|m| matches!(m, SimpleQueryMessage::CommandComplete(_)))
        .count();
    assert_eq!(done, 2, "{msgs:?}");
    // RESUME of a name no longer configured is harmless (a reload may have removed it).
    rows(&a, "RESUME nope_db").await;
    let err = a
        .simple_query("PAUSE nope_db; SHOW VERSION")
        .await
        .unwrap_err();
    assert_sqlstate(&err, "3D000");
    assert!(paused(&a).await.is_empty());
    // PAUSE without a name: every database (nothing in flight here, so it returns at once).
    rows(&a, "PAUSE").await;
    assert_eq!(paused(&a).await, vec![("app".to_string(), 0)]);
    rows(&a, "RESUME").await;
    assert!(paused(&a).await.is_empty());

    // psql -c works.
    let out = tokio::task::spawn_blocking({
        let cmd = proxy.psql_command(ADMIN, ADMIN_PASSWORD, ADMIN);
        move || {
            let mut cmd = cmd;
            cmd.arg("-c").arg("SHOW VERSION").output().unwrap()
        }
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("pgdog "));
    assert_eq!(one(&app, "SELECT 1").await, "1");

    // Without admin_password the admin database does not exist.
    drop(proxy);
    let plain = start(&topo, "", 2);
    let err = connect_as(&plain, ADMIN, ADMIN_PASSWORD, ADMIN)
        .await
        .unwrap_err();
    assert_sqlstate(&err, "28P01");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_waits_for_transactions_and_holds_new_ones_until_resume() {
    let (topo, proxy) = pgdog(&admin_general(""), 4);
    let server = direct(topo.primary().port).await;
    exec(&server, "CREATE TABLE admin_t (v int)").await;
    let x = connect(&proxy).await;
    let y = std::sync::Arc::new(connect(&proxy).await);
    let a = admin(&proxy).await;
    let watcher = admin(&proxy).await;

    exec(&x, "BEGIN; INSERT INTO admin_t VALUES (1)").await;
    let pause = pause_behind_a_transaction(a, &watcher).await;
    // X's transaction goes on normally while the pause waits for it.
    assert_eq!(one(&x, "SELECT count(*) FROM admin_t").await, "1");
    still_pending(
        &pause,
        Duration::from_millis(100),
        "PAUSE with X in a transaction",
    )
    .await;
    exec(&x, "COMMIT").await;
    let a = completes(pause, "PAUSE completes once X committed").await;

    // Y's next statement waits in the pause: it never reaches the server.
    let query = "SELECT 'marker-y', count(*) FROM admin_t";
    let held = held_in_the_pause(&y, query, &watcher).await;
    still_pending(&held, Duration::from_millis(300), "Y's query while paused").await;
    let seen = rows(
        &server,
        "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%marker-y%' AND pid <> pg_backend_pid()",
    )
    .await;
    assert_eq!(seen[0][0], "0", "Y's query reached the server while paused");

    rows(&a, "RESUME app").await;
    let got = completes(held, "Y continues after RESUME").await;
    assert_eq!(got, "marker-y");
    assert_eq!(
        rows(&y, query).await,
        vec![vec!["marker-y".to_string(), "1".into()]]
    );
    assert!(paused(&watcher).await.is_empty());
}

/// pgdog.toml with the admin database and database `app` on `port` (and `shard1` as its
/// second shard when given).
fn config_for(port: u16, shard1: Option<u16>) -> String {
    let mut c = admin_general("") + &database(port, "pool_size = 4\n");
    if let Some(p) = shard1 {
        c.push_str(&database(p, "pool_size = 4\nshard = 1\n"));
    }
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_switches_a_paused_client_to_the_new_server() {
    let topo = Topology::shards(2).expect("topology");
    let (p0, p1) = (topo.shard(0).port, topo.shard(1).port);
    let proxy = start_with(&config_for(p0, None), &users(""));
    let y = std::sync::Arc::new(connect(&proxy).await);
    let a = admin(&proxy).await;
    assert_eq!(one(&y, "SHOW port").await, p0.to_string());

    rows(&a, "PAUSE app").await;
    let held = held_in_the_pause(&y, "SHOW port", &a).await;

    proxy.rewrite(&config_for(p1, None), &users("")).unwrap();
    rows(&a, "RELOAD").await;
    assert_eq!(rows(&a, "SHOW DATABASES").await[0][2], p1.to_string());
    assert_eq!(
        paused(&a).await,
        vec![("app".to_string(), 1)],
        "the pause survives RELOAD"
    );
    still_pending(&held, Duration::from_millis(100), "Y's query while paused").await;
    rows(&a, "RESUME").await;
    let got = completes(held, "Y continues after RESUME").await;
    assert_eq!(
        got,
        p1.to_string(),
        "the resumed client uses the new server"
    );

    // A broken file: RELOAD fails, the running configuration stays.
    proxy.rewrite("[general\nnot toml", &users("")).unwrap();
    let err = a.simple_query("RELOAD").await.unwrap_err();
    assert_sqlstate(&err, "F0000");
    assert_eq!(rows(&a, "SHOW DATABASES").await[0][2], p1.to_string());
    assert_eq!(one(&y, "SHOW port").await, p1.to_string());

    // The database becomes sharded: the single-server session ends at its next transaction.
    proxy
        .rewrite(&config_for(p0, Some(p1)), &users(""))
        .unwrap();
    rows(&a, "RELOAD").await;
    let err = y.simple_query("SHOW port").await.unwrap_err();
    assert_sqlstate(&err, "57P01");
    assert!(
        err_text(&err).contains("reconfigured"),
        "{}",
        err_text(&err)
    );
    let fresh = connect(&proxy).await;
    assert_eq!(one(&fresh, "SELECT 7").await, "7");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_gives_up_after_pause_timeout_on_a_session_mode_client() {
    let (topo, proxy) = pgdog(
        &admin_general("pause_timeout = 300\npooler_mode = \"session\""),
        4,
    );
    let s = connect(&proxy).await;
    assert_eq!(one(&s, "SELECT 1").await, "1");
    let a = admin(&proxy).await;
    let start = Instant::now();
    let err = a.simple_query("PAUSE app").await.unwrap_err();
    let took = start.elapsed();
    assert_sqlstate(&err, "57014");
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(10),
        "{took:?}"
    );
    assert!(paused(&a).await.is_empty(), "a failed PAUSE is undone");
    let t = connect(&proxy).await;
    assert_eq!(one(&t, "SELECT 2").await, "2");
    assert_eq!(one(&s, "SELECT 3").await, "3");

    // The database becomes sharded (both shards on the same server here): the session-mode
    // client, which keeps its server, ends before its next transaction instead of going on.
    let port = topo.primary().port;
    let sharded = config(&topo, &admin_general("pooler_mode = \"session\""), 4)
        + &database(port, "shard = 1\n");
    proxy.rewrite(&sharded, &users("")).unwrap();
    rows(&a, "RELOAD").await;
    let err = s.simple_query("SELECT 4").await.unwrap_err();
    assert_sqlstate(&err, "57P01");
    assert_eq!(one(&connect(&proxy).await, "SELECT 5").await, "5");
}

/// `config_for` two shards plus table `t` list-sharded by `id`: id 1 on `one_on`, id 2 on the
/// other shard.
fn sharded_config(p0: u16, p1: u16, one_on: usize) -> String {
    format!(
        "{}\n[[sharded_tables]]\ndatabase = \"{DB}\"\nname = \"t\"\ncolumn = \"id\"\ndata_type = \"integer\"\n\n[[sharded_tables.mapping]]\nvalues = [1]\nshard = {one_on}\n\n[[sharded_tables.mapping]]\nvalues = [2]\nshard = {}\n",
        config_for(p0, Some(p1)),
        1 - one_on
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_sessions_wait_in_the_pause_and_route_with_the_reloaded_config() {
    let topo = Topology::shards(2).expect("topology");
    let (p0, p1) = (topo.shard(0).port, topo.shard(1).port);
    for port in [p0, p1] {
        direct(port)
            .await
            .batch_execute("CREATE TABLE t (id int); INSERT INTO t VALUES (1), (2)")
            .await
            .unwrap();
    }
    let proxy = start_with(&sharded_config(p0, p1, 0), &users(""));
    let where_is_1 = "SELECT current_setting('port') FROM t WHERE id = 1";
    let x = connect(&proxy).await;
    let y = std::sync::Arc::new(connect(&proxy).await);
    let a = admin(&proxy).await;
    let watcher = admin(&proxy).await;
    assert_eq!(one(&y, where_is_1).await, p0.to_string());

    exec(&x, "BEGIN").await;
    assert_eq!(
        one(&x, "SELECT current_setting('port') FROM t WHERE id = 2").await,
        p1.to_string()
    );
    let pause = pause_behind_a_transaction(a, &watcher).await;
    exec(&x, "COMMIT").await;
    let a = completes(pause, "PAUSE completes once X committed").await;

    let held = held_in_the_pause(&y, where_is_1, &watcher).await;
    // id 1 moves to the other shard while Y waits: Y must be routed by the new configuration.
    proxy
        .rewrite(&sharded_config(p0, p1, 1), &users(""))
        .unwrap();
    rows(&a, "RELOAD").await;
    still_pending(&held, Duration::from_millis(100), "Y's query while paused").await;
    rows(&a, "RESUME app").await;
    let got = completes(held, "Y continues after RESUME").await;
    assert_eq!(got, p1.to_string(), "routed with the reloaded mapping");

    // No longer sharded: the sharded sessions end at their next transaction.
    proxy.rewrite(&config_for(p0, None), &users("")).unwrap();
    rows(&a, "RELOAD").await;
    for client in [&*y, &x] {
        let err = client.simple_query("SELECT 1").await.unwrap_err();
        assert_sqlstate(&err, "57P01");
    }
    let fresh = connect(&proxy).await;
    assert_eq!(
        one(&fresh, "SELECT current_setting('port')").await,
        p0.to_string()
    );
}
