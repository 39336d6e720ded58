//! PgBouncer 1.25's console commands and signals (issue 49), observed from outside: what the
//! admin client, the application clients and Postgres' `pg_stat_activity` see.
//! - SHOW STATE, MEM, FDS, SOCKETS, ACTIVE_SOCKETS, PEERS, PEER_POOLS, DNS_HOSTS, DNS_ZONES,
//!   TOTALS and HELP with PgBouncer's columns; an unknown command gets its words (08P01).
//! - KILL_CLIENT, KILL with no database, DISABLE / ENABLE, SUSPEND / RESUME, WAIT_CLOSE.
//! - SIGUSR1 / SIGUSR2 (pause, resume), SIGTERM (wait for clients), a second signal.
use crate::common;
use crate::query_rows::simple_rows;
use common::*;
use std::time::Duration;
use tokio_postgres::Client;

/// The column names and rows of a SHOW.
async fn show(a: &Client, sql: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let rows = simple_rows(a, sql).await;
    let columns = match rows.first() {
        Some(r) => r.columns().iter().map(|c| c.name().to_string()).collect(),
        None => Vec::new(),
    };
    let values = rows
        .iter()
        .map(|r| {
            (0..r.len())
                .map(|i| r.get(i).unwrap_or("NULL").to_string())
                .collect()
        })
        .collect();
    (columns, values)
}

/// The admin database on, `extra` general lines, and one `[[peers]]` entry.
fn general(extra: &str) -> String {
    format!("admin_password = \"{ADMIN_PASSWORD}\"\npeer_id = 1\n{extra}\n[[peers]]\npeer_id = 2\nhost = \"127.0.0.1\"\nport = 1")
}

/// Backends of the test server in an open transaction (one left by a killed client).
async fn in_transaction(direct: &Client) -> String {
    one(
        direct,
        "SELECT count(*)::text FROM pg_stat_activity WHERE state = 'idle in transaction'",
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shows_and_errors_as_pgbouncer() {
    let (_topo, proxy) = pgdog(&general(""), 2);
    let a = admin(&proxy).await;
    let app = connect(&proxy).await;
    assert_eq!(one(&app, "SELECT 1").await, "1");
    let (columns, rows) = show(&a, "SHOW STATE").await;
    assert_eq!(columns, ["key", "value"]);
    assert_eq!(
        rows,
        [["active", "yes"], ["paused", "no"], ["suspended", "no"]]
    );
    let (columns, rows) = show(&a, "SHOW TOTALS").await;
    assert_eq!(columns, ["name", "value"]);
    assert_eq!(rows.len(), 24);
    assert_eq!(rows[0][0], "total_server_assignment_count");
    let queries = rows.iter().find(|r| r[0] == "total_query_count").unwrap();
    assert!(queries[1].parse::<u64>().unwrap() >= 1, "{rows:?}");
    let (columns, rows) = show(&a, "SHOW SOCKETS").await;
    assert_eq!(columns.len(), 28);
    assert_eq!(&columns[19..22], ["prepared_statements", "id", "recv_pos"]);
    assert!(rows.iter().any(|r| r[0] == "C" && r[1] == USER), "{rows:?}");
    assert!(rows.iter().any(|r| r[0] == "S"), "{rows:?}");
    let (_, active) = show(&a, "SHOW ACTIVE_SOCKETS").await;
    assert!(active.len() < rows.len(), "{active:?}");
    let (columns, rows) = show(&a, "SHOW PEERS").await;
    assert_eq!(columns, ["peer_id", "host", "port", "pool_size"]);
    assert_eq!(rows, [["2", "127.0.0.1", "1", "0"]]);
    let (columns, _) = show(&a, "SHOW PEER_POOLS").await;
    assert_eq!(columns[0], "peer_id");
    let (columns, rows) = show(&a, "SHOW MEM").await;
    assert_eq!(columns, ["name", "size", "used", "free", "memtotal"]);
    assert!(rows.iter().any(|r| r[0] == "clients"), "{rows:?}");
    for empty in ["SHOW FDS", "SHOW DNS_HOSTS", "SHOW DNS_ZONES"] {
        let msgs = a.simple_query(empty).await.expect(empty);
        assert!(!msgs.is_empty(), "{empty}");
    }
    let (_, help) = show(&a, "SHOW HELP").await;
    assert!(help.iter().any(|r| r[0] == "KILL_CLIENT id"), "{help:?}");
    let err = a.simple_query("SHOW FOO").await.unwrap_err();
    assert_eq!(
        err_text(&err),
        "ERROR 08P01: invalid command 'SHOW FOO', use SHOW HELP;"
    );
    let err = a.simple_query("KILL_CLIENT 987654").await.unwrap_err();
    assert_eq!(err_text(&err), "ERROR 08P01: client not found");
    let err = a.simple_query("KILL_CLIENT x").await.unwrap_err();
    assert_eq!(
        err_text(&err),
        "ERROR 08P01: invalid client pointer supplied"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_commands_as_pgbouncer() {
    let (topo, proxy) = pgdog(&general(""), 3);
    let direct = connect_str(&topo.primary().url("postgres"))
        .await
        .expect("direct")
        .0;
    let a = admin(&proxy).await;
    let victim = connect(&proxy).await;
    let bystander = connect(&proxy).await;
    exec(&victim, "BEGIN; SELECT 1").await;
    assert_eq!(in_transaction(&direct).await, "1");
    // KILL_CLIENT: that client only, with PgBouncer's FATAL; its transaction is rolled back.
    let (_, clients) = show(&a, "SHOW CLIENTS").await;
    let ids: Vec<&String> = clients
        .iter()
        .filter(|r| r[1] == USER)
        .map(|r| &r[19])
        .collect();
    assert_eq!(ids.len(), 2, "{clients:?}");
    // The victim connected first: the lower id.
    let id = ids.iter().map(|i| i.parse::<u64>().unwrap()).min().unwrap();
    a.simple_query(&format!("KILL_CLIENT {id}")).await.unwrap();
    let err = victim.simple_query("SELECT 1").await.unwrap_err();
    assert!(
        err_text(&err).contains("admin forced disconnect") || victim.is_closed(),
        "{}",
        err_text(&err)
    );
    eventually(
        "the victim's transaction to end",
        Duration::from_secs(5),
        || async { in_transaction(&direct).await == "0" },
    )
    .await;
    assert_eq!(one(&bystander, "SELECT 2").await, "2");
    // DISABLE: new clients get PgBouncer's FATAL, connected ones go on; ENABLE undoes it.
    a.simple_query(&format!("DISABLE {DB}")).await.unwrap();
    let err = connect_as(&proxy, USER, PASSWORD, DB).await.unwrap_err();
    assert_eq!(
        err_text(&err),
        format!("FATAL 08P01: database \"{DB}\" is disabled")
    );
    assert_eq!(one(&bystander, "SELECT 3").await, "3");
    let (columns, databases) = show(&a, "SHOW DATABASES").await;
    let disabled = columns.iter().position(|c| c == "disabled").unwrap();
    assert_eq!(databases[0][disabled], "1");
    a.simple_query(&format!("ENABLE {DB}")).await.unwrap();
    let fresh = connect(&proxy).await;
    assert_eq!(one(&fresh, "SELECT 4").await, "4");
    // WAIT_CLOSE answers once the connections a RECONNECT marked are back (and closed).
    exec(&fresh, "BEGIN; SELECT 5").await;
    a.simple_query("RECONNECT").await.unwrap();
    let admin2 = admin(&proxy).await;
    let waited = tokio::spawn(async move { admin2.simple_query("WAIT_CLOSE").await.is_ok() });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !waited.is_finished(),
        "a marked connection is still in a transaction"
    );
    exec(&fresh, "COMMIT").await;
    assert!(waited.await.unwrap());
    // SUSPEND: no connection accepted until RESUME (the one waiting then gets in).
    a.simple_query("SUSPEND").await.unwrap();
    let (_, state) = show(&a, "SHOW STATE").await;
    assert_eq!(state[2], ["suspended", "yes"]);
    let port = proxy.port;
    let pending = tokio::spawn(async move {
        let c = connect_as_port(port).await;
        one(&c, "SELECT 6").await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !pending.is_finished(),
        "no connection is accepted while suspended"
    );
    a.simple_query("RESUME").await.unwrap();
    assert_eq!(pending.await.unwrap(), "6");
    // KILL with no database: every client ended, new ones wait until RESUME.
    exec(&bystander, "BEGIN; SELECT 7").await;
    a.simple_query("KILL").await.unwrap();
    eventually(
        "the bystander to be ended",
        Duration::from_secs(5),
        || async { bystander.is_closed() || bystander.simple_query("SELECT 1").await.is_err() },
    )
    .await;
    eventually(
        "no transaction left open",
        Duration::from_secs(5),
        || async { in_transaction(&direct).await == "0" },
    )
    .await;
    let later = tokio::spawn(async move {
        let c = connect_as_port(port).await;
        one(&c, "SELECT 8").await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!later.is_finished(), "a killed database waits for RESUME");
    a.simple_query("RESUME").await.unwrap();
    assert_eq!(later.await.unwrap(), "8");
}

/// A client of the proxy on `port` (for tasks that do not hold the Proxy).
async fn connect_as_port(port: u16) -> Client {
    let conninfo =
        format!("host=127.0.0.1 port={port} user={USER} dbname={DB} password={PASSWORD}");
    connect_str(&conninfo).await.expect("login").0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signals_as_pgbouncer() {
    let (_topo, mut proxy) = pgdog(&general("shutdown_timeout = 20000"), 2);
    let a = admin(&proxy).await;
    let app = connect(&proxy).await;
    // SIGUSR1 pauses every database; SIGUSR2 resumes.
    proxy.signal(libc::SIGUSR1);
    eventually("the pause", Duration::from_secs(5), || async {
        show(&a, "SHOW STATE").await.1[1] == ["paused", "yes"]
    })
    .await;
    let port = proxy.port;
    let paused = tokio::spawn(async move {
        let c = connect_as_port(port).await;
        one(&c, "SELECT 1").await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!paused.is_finished(), "paused");
    proxy.signal(libc::SIGUSR2);
    assert_eq!(paused.await.unwrap(), "1");
    // SIGTERM: WAIT_FOR_CLIENTS. The connected client keeps working, new ones are refused,
    // and pgdog exits when the last client leaves.
    drop(a);
    proxy.signal(libc::SIGTERM);
    eventually(
        "new connections to be refused",
        Duration::from_secs(5),
        || async { connect_as(&proxy, USER, PASSWORD, DB).await.is_err() },
    )
    .await;
    assert_eq!(one(&app, "SELECT 'still served'").await, "still served");
    exec(&app, "BEGIN; SELECT 1; COMMIT").await;
    drop(app);
    let status = tokio::task::block_in_place(|| proxy.wait_exit(Duration::from_secs(10)))
        .expect("pgdog exits when its clients are gone");
    assert!(status.success(), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_exits_at_once() {
    let (_topo, mut proxy) = pgdog("shutdown_timeout = 60000", 2);
    let app = connect(&proxy).await;
    proxy.signal(libc::SIGTERM);
    eventually("the shutdown to start", Duration::from_secs(5), || async {
        connect_as(&proxy, USER, PASSWORD, DB).await.is_err()
    })
    .await;
    proxy.signal(libc::SIGINT);
    let status = tokio::task::block_in_place(|| proxy.wait_exit(Duration::from_secs(5)))
        .expect("pgdog exits at the second signal");
    assert!(status.success(), "{status}");
    assert!(app.simple_query("SELECT 1").await.is_err());
}

/// Admin `SHUTDOWN WAIT_FOR_CLIENTS`: as SIGTERM, the connected client keeps being served and
/// pgdog exits once it leaves; `SHUTDOWN WAIT_FOR_SERVERS`: as SIGINT, the idle client is
/// ended (57P01) and pgdog exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_shutdown_modes() {
    let (topo, mut proxy) = pgdog(&general("shutdown_timeout = 20000"), 2);
    let app = connect(&proxy).await;
    let a = admin(&proxy).await;
    let _ = a.simple_query("SHUTDOWN WAIT_FOR_CLIENTS").await;
    drop(a);
    eventually(
        "new connections to be refused",
        Duration::from_secs(5),
        || async { connect_as(&proxy, USER, PASSWORD, DB).await.is_err() },
    )
    .await;
    assert_eq!(one(&app, "SELECT 'served'").await, "served");
    drop(app);
    let status = tokio::task::block_in_place(|| proxy.wait_exit(Duration::from_secs(10)))
        .expect("exits once its clients left");
    assert!(status.success(), "{status}");
    drop(proxy);

    let mut proxy = start(&topo, &general("shutdown_timeout = 20000"), 2);
    let idle = connect(&proxy).await;
    let a = admin(&proxy).await;
    let _ = a.simple_query("SHUTDOWN WAIT_FOR_SERVERS").await;
    let status = tokio::task::block_in_place(|| proxy.wait_exit(Duration::from_secs(10)))
        .expect("exits with its idle client ended");
    assert!(status.success(), "{status}");
    assert!(idle.simple_query("SELECT 1").await.is_err());
}

/// The last admin session leaving a SUSPEND resumes pgdog (nobody could connect to RESUME
/// it any more), as PgBouncer does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_admin_leaving_a_suspend_resumes() {
    let (_topo, proxy) = pgdog(&general(""), 2);
    let a = admin(&proxy).await;
    a.simple_query("SUSPEND").await.unwrap();
    let port = proxy.port;
    let pending = tokio::spawn(async move {
        let c = connect_as_port(port).await;
        one(&c, "SELECT 'in'").await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!pending.is_finished(), "suspended");
    drop(a);
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(10), pending)
            .await
            .expect("resumed when the admin left")
            .unwrap(),
        "in"
    );
}
