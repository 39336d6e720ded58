//! LISTEN / NOTIFY in transaction mode without a server per listener: pgdog answers LISTEN and
//! UNLISTEN, one listener connection per server database runs them, every client listening on
//! a channel gets its notifications between its transactions (a NOTIFY inside a transaction at
//! its COMMIT, in commit order, as Postgres delivers them), and listening clients hold no server
//! connection: 50 of them on a pool of 2 leave the pool free for queries.
mod common;
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
