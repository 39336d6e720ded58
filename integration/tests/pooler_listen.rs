//! LISTEN / NOTIFY in transaction mode without a server per listener: pgdog answers LISTEN and
//! UNLISTEN, one listener connection per server database runs them, every client listening on
//! a channel gets its notifications between its transactions (a NOTIFY inside a transaction at
//! its COMMIT, in commit order, as Postgres delivers them), and listening clients hold no server
//! connection: 50 of them on a pool of 2 leave the pool free for queries.
use crate::common;
use common::*;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_postgres::{AsyncMessage, Client, Notification};
use topology::{Proxy, Topology};

/// A client whose notifications arrive on the receiver.
async fn listening_client(proxy: &Proxy) -> (Client, UnboundedReceiver<Notification>) {
    let (client, mut messages) = connect_with_messages(proxy).await;
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(m) = messages.recv().await {
            if let AsyncMessage::Notification(n) = m {
                let _ = tx.send(n);
            }
        }
    });
    (client, rx)
}

/// The next notification as (channel, payload), within 10 s.
async fn next(rx: &mut UnboundedReceiver<Notification>) -> (String, String) {
    let n = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("a notification within 10 s")
        .expect("the connection is open");
    (n.channel().to_string(), n.payload().to_string())
}

fn pair(channel: &str, payload: &str) -> (String, String) {
    (channel.to_string(), payload.to_string())
}

/// Server connections on the primary other than ours and the health checker's.
fn server_connections(topo: &Topology) -> usize {
    let sql = "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' \
               AND pid <> pg_backend_pid() AND application_name <> 'pgdog_healthcheck'";
    topo.primary().psql(sql).unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_listeners_share_one_connection_and_get_every_notification() {
    let topo = Topology::single().unwrap();
    let general = format!("admin_password = \"{ADMIN_PASSWORD}\"\nmin_pool_size = 0");
    let proxy = start_with(&config(&topo, &general, 2), &users(""));
    let mut listeners = Vec::new();
    for _ in 0..50 {
        let (c, rx) = listening_client(&proxy).await;
        exec(&c, "LISTEN jobs").await;
        listeners.push((c, rx));
    }
    // One listener connection, no pool connection held: the pool of 2 still serves.
    let notifier = connect(&proxy).await;
    let other = connect(&proxy).await;
    assert_eq!(one(&other, "SELECT 42").await, "42");
    assert!(
        server_connections(&topo) <= 3,
        "{}",
        server_connections(&topo)
    );
    let admin = admin(&proxy).await;
    let row = &simple_rows(&admin, "SHOW LISTENERS").await[0];
    assert_eq!(
        (row.get("channels"), row.get("clients")),
        (Some("1"), Some("50"))
    );

    // NOTIFY and pg_notify() through the pool; a NOTIFY in a transaction arrives at its
    // COMMIT, after one committed meanwhile (commit order, as Postgres delivers them).
    exec(&notifier, "NOTIFY jobs, 'hello'").await;
    exec(&notifier, "SELECT pg_notify('jobs', 'p2')").await;
    exec(&notifier, "BEGIN; NOTIFY jobs, 'in a transaction'").await;
    exec(&other, "NOTIFY jobs, 'marker'").await;
    exec(&notifier, "COMMIT").await;
    for (_, rx) in listeners.iter_mut() {
        for payload in ["hello", "p2", "marker", "in a transaction"] {
            assert_eq!(next(rx).await, pair("jobs", payload));
        }
    }

    // A client pinned to its server (a session advisory lock) still gets them.
    exec(&listeners[2].0, "SELECT pg_advisory_lock(7)").await;
    exec(&notifier, "NOTIFY jobs, 'pinned'").await;
    assert_eq!(next(&mut listeners[2].1).await, pair("jobs", "pinned"));

    // UNLISTEN: the first client gets `ctl` but nothing of `jobs` sent before it.
    let (first, rx) = &mut listeners[0];
    assert_eq!(next(rx).await, pair("jobs", "pinned"));
    exec(first, "UNLISTEN jobs; ").await;
    exec(first, "LISTEN \"Ctl\"").await;
    exec(&notifier, "NOTIFY jobs, 'after'").await;
    exec(&notifier, "NOTIFY \"Ctl\", 'stop'").await;
    assert_eq!(next(rx).await, pair("Ctl", "stop"));
    assert_eq!(next(&mut listeners[1].1).await, pair("jobs", "pinned"));
    assert_eq!(next(&mut listeners[1].1).await, pair("jobs", "after"));

    // The listener connection is lost: made again, its LISTENs run again.
    topo.primary()
        .psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'pgdog_listener'")
        .unwrap();
    // (Notifications sent until it is back are lost: sent again until one arrives.)
    let rx = &mut listeners[1].1;
    let start = std::time::Instant::now();
    loop {
        exec(&notifier, "NOTIFY jobs, 'again'").await;
        let got = tokio::time::timeout(Duration::from_millis(200), rx.recv()).await;
        if matches!(got, Ok(Some(ref n)) if n.payload() == "again") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "no notification after the listener was lost\n{}",
            proxy.log()
        );
    }

    // Clients that leave stop listening.
    drop(listeners);
    eventually(
        "the listeners' clients to leave",
        Duration::from_secs(10),
        || async { simple_rows(&admin, "SHOW LISTENERS").await[0].get("clients") == Some("0") },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listen_inside_a_transaction_still_reaches_the_server() {
    // Inside a transaction block LISTEN is the server's (it then pins the client, as before).
    let topo = Topology::single().unwrap();
    let proxy = start_with(&config(&topo, "min_pool_size = 0", 2), &users(""));
    let (c, mut rx) = listening_client(&proxy).await;
    exec(&c, "BEGIN; LISTEN inside; COMMIT").await;
    let notifier = connect(&proxy).await;
    exec(&notifier, "NOTIFY inside, 'x'").await;
    assert_eq!(next(&mut rx).await, pair("inside", "x"));
    // What Postgres refuses, it answers: a reserved word as the channel.
    let err = c.simple_query("LISTEN select").await.unwrap_err();
    assert_sqlstate(&err, "42601");
}

/// LISTEN / UNLISTEN prepared with the extended protocol (JDBC prepares every statement;
/// tokio-postgres' `execute` too) are the listener's as well: on a pool of 1 the listening
/// client holds no server, and gets its notifications.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_listen_is_the_listeners_too() {
    let topo = Topology::single().unwrap();
    let proxy = start_with(
        &config(&topo, "min_pool_size = 0\ncheckout_timeout = 2000", 1),
        &users(""),
    );
    let (client, mut rx) = listening_client(&proxy).await;
    // A statement tokio-postgres prepares (named sN: Parse/Describe/Sync, then Bind/Execute/Sync)
    client.execute("LISTEN ext_a", &[]).await.unwrap();
    // ... and a named one prepared first, run twice.
    let listen_b = client.prepare("LISTEN ext_b").await.unwrap();
    client.execute(&listen_b, &[]).await.unwrap();
    client.execute(&listen_b, &[]).await.unwrap();
    // The pool's one connection is free for everyone else.
    let other = connect(&proxy).await;
    assert_eq!(one(&other, "SELECT 1").await, "1");
    exec(&other, "NOTIFY ext_a, 'one'").await;
    exec(&other, "NOTIFY ext_b, 'two'").await;
    assert_eq!(next(&mut rx).await, pair("ext_a", "one"));
    assert_eq!(next(&mut rx).await, pair("ext_b", "two"));
    client.execute("UNLISTEN ext_a", &[]).await.unwrap();
    exec(&other, "NOTIFY ext_a, 'gone'; NOTIFY ext_b, 'three'").await;
    assert_eq!(next(&mut rx).await, pair("ext_b", "three"));
    // Both still share the pool's one connection.
    assert_eq!(one(&other, "SELECT 2").await, "2");
    assert_eq!(one(&client, "SELECT 3").await, "3");
}

/// A prepared LISTEN run in a batch that also has statements on a server would be part of
/// their implicit transaction in Postgres: refused (0A000), and the session goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_listen_in_a_batch_with_server_statements_is_refused() {
    use common::raw::{self, Conn};
    let topo = Topology::single().unwrap();
    let proxy = start_with(&config(&topo, "auth_type = \"plain\"", 2), &users(""));
    let mut conn = Conn::login(proxy.port, USER, DB, Some(PASSWORD)).await;
    conn.send(&[raw::parse("l", "LISTEN mixed"), raw::sync()].concat())
        .await;
    let answer = conn.until_ready().await;
    assert!(answer.iter().all(|m| m.tag != b'E'), "{answer:?}");
    let batch = [
        raw::parse("", "SELECT 1"),
        raw::bind("", &[]),
        raw::execute(),
        raw::bind("l", &[]),
        raw::execute(),
        raw::sync(),
    ]
    .concat();
    conn.send(&batch).await;
    let answer = conn.until_ready().await;
    // In order: the SELECT's answers, the LISTEN's BindComplete, the error, one ReadyForQuery.
    let tags: String = answer.iter().map(|m| m.tag as char).collect();
    assert_eq!(tags, "12DC2EZ", "{answer:?}");
    let error = answer.iter().find(|m| m.tag == b'E').expect("an error");
    assert_eq!(error.sqlstate().as_deref(), Some("0A000"), "{answer:?}");
    conn.send(&raw::query("SELECT 5")).await;
    let answer = conn.until_ready().await;
    assert!(answer.iter().any(|m| m.tag == b'D'), "{answer:?}");
}

/// The unnamed statement (JDBC's usual way): Parse "", Bind, Describe, Execute, Sync of a
/// LISTEN, answered by pgdog in order; the client holds no server afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unnamed_prepared_listen_is_answered_in_order() {
    use common::raw::{self, Conn};
    let topo = Topology::single().unwrap();
    let general = "auth_type = \"plain\"\nmin_pool_size = 0\ncheckout_timeout = 2000";
    let proxy = start_with(&config(&topo, general, 1), &users(""));
    let mut conn = Conn::login(proxy.port, USER, DB, Some(PASSWORD)).await;
    let batch = [
        raw::parse("", "LISTEN unnamed_chan"),
        raw::bind("", &[]),
        raw::describe_portal(),
        raw::execute(),
        raw::sync(),
    ]
    .concat();
    conn.send(&batch).await;
    let answer = conn.until_ready().await;
    let tags: String = answer.iter().map(|m| m.tag as char).collect();
    assert_eq!(tags, "12nCZ", "{answer:?}");
    assert_eq!(answer[3].text(), "LISTEN");
    // The pool's one connection is free: another client gets it and notifies.
    let other = connect(&proxy).await;
    exec(&other, "NOTIFY unnamed_chan, 'hi'").await;
    // Delivered while the client is idle, as Postgres does.
    let notification = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match conn.recv().await {
                Some(m) if m.tag == b'A' => return Some(m),
                Some(_) => continue,
                None => return None,
            }
        }
    })
    .await
    .expect("a notification within 10 s");
    assert!(notification.is_some(), "the connection closed");
}
