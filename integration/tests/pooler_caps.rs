//! Caps across pools (`max_db_connections`, `max_user_connections`) with PgBouncer's meaning:
//! the server never sees more connections than the cap, a checkout that needs a new connection
//! closes an idle connection of another pool under the cap (PgBouncer's `evict_connection`),
//! else waits for a slot (and takes a connection coming back to its own pool), then gets 53300
//! naming the cap; the admin database shows the caps.
use crate::common;
use common::*;
use std::time::Duration;
use topology::Topology;

/// Server connections of pgdog's pools on the primary (every client backend but ours and the
/// health checker's, which no cap counts).
fn server_connections(topo: &Topology) -> usize {
    let sql = "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' \
               AND pid <> pg_backend_pid() AND application_name <> 'pgdog_healthcheck'";
    topo.primary().psql(sql).unwrap().parse().unwrap()
}

fn caps_config(topo: &Topology) -> (String, String) {
    let config = config(
        topo,
        &format!("max_db_connections = 2\ncheckout_timeout = 3000\nadmin_password = \"{ADMIN_PASSWORD}\"\nmin_pool_size = 0"),
        5,
    );
    let users: String = [("u1", ""), ("u2", ""), ("u3", "max_user_connections = 1\n")]
        .iter()
        .map(|(u, extra)| format!("[[users]]\nname = \"{u}\"\ndatabase = \"{DB}\"\npassword = \"{PASSWORD}\"\n{extra}\n"))
        .collect();
    (config, users)
}

async fn client(proxy: &topology::Proxy, user: &str) -> tokio_postgres::Client {
    connect_as(proxy, user, PASSWORD, DB).await.unwrap()
}

/// (first column, column `column`) of each row of an admin SHOW.
async fn show(admin: &tokio_postgres::Client, what: &str, column: &str) -> Vec<(String, String)> {
    admin
        .simple_query(&format!("SHOW {what}"))
        .await
        .unwrap()
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => {
                Some((r.get(0)?.to_string(), r.get(column)?.to_string()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_db_connections_caps_every_users_pools_together() {
    let topo = Topology::single().unwrap();
    let (config, users) = caps_config(&topo);
    let proxy = start_with(&config, &users);
    let (a, b) = (client(&proxy, "u1").await, client(&proxy, "u2").await);
    exec(&a, "BEGIN; SELECT 1").await;
    exec(&b, "BEGIN; SELECT 1").await;
    assert_eq!(server_connections(&topo), 2);
    // A third connection would pass the cap: u1's next checkout waits...
    let c = client(&proxy, "u1").await;
    let waiting = tokio::spawn(async move { one(&c, "SELECT 42").await });
    let admin = admin(&proxy).await;
    eventually("u1's checkout to wait", Duration::from_secs(5), || async {
        show(&admin, "POOLS", "cl_waiting")
            .await
            .iter()
            .any(|(db, n)| db == DB && n == "1")
    })
    .await;
    // ... and takes u1's connection when it comes back (the cap's slot stays with it).
    exec(&a, "COMMIT").await;
    assert_eq!(waiting.await.unwrap(), "42");
    assert_eq!(server_connections(&topo), 2);
    // Nothing comes back within checkout_timeout: 53300 naming the cap.
    exec(&a, "BEGIN; SELECT 1").await;
    let d = client(&proxy, "u1").await;
    let err = d.simple_query("SELECT 1").await.unwrap_err();
    assert_sqlstate(&err, "53300");
    assert!(
        err_text(&err).contains("max_db_connections of database \"app\""),
        "{}",
        err_text(&err)
    );
    assert_eq!(server_connections(&topo), 2);
    // The admin database shows the cap.
    let databases = show(&admin, "DATABASES", "max_connections").await;
    assert!(
        databases.contains(&(DB.to_string(), "2".to_string())),
        "{databases:?}"
    );
    // u1's connection back in its pool serves u1's next checkout at once.
    exec(&a, "COMMIT").await;
    assert_eq!(one(&d, "SELECT 'served'").await, "served");
    drop(b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_user_connections_caps_one_user() {
    let topo = Topology::single().unwrap();
    let (config, users) = caps_config(&topo);
    let proxy = start_with(&config, &users);
    let first = client(&proxy, "u3").await;
    exec(&first, "BEGIN; SELECT 1").await;
    let second = client(&proxy, "u3").await;
    let err = second.simple_query("SELECT 1").await.unwrap_err();
    assert_sqlstate(&err, "53300");
    assert!(
        err_text(&err).contains("max_user_connections of user \"u3\" = 1"),
        "{}",
        err_text(&err)
    );
    // Other users are not held back by u3's cap.
    assert_eq!(one(&client(&proxy, "u1").await, "SELECT 'u1'").await, "u1");
    let admin = admin(&proxy).await;
    let users = show(&admin, "USERS", "max_user_connections").await;
    assert!(
        users.contains(&("u3".to_string(), "1".to_string())),
        "{users:?}"
    );
    exec(&first, "COMMIT").await;
    assert_eq!(one(&second, "SELECT 'now'").await, "now");
}

/// Two users' pools hold the cap's two slots with idle connections (first warm `min_pool_size`
/// ones, then ones left idle after use): a third user is served at once by closing one of
/// them, within a checkout_timeout of 1 s, and the server never sees more than the cap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_of_other_pools_make_room_under_a_full_cap() {
    let topo = Topology::single().unwrap();
    let config = config(
        &topo,
        "max_db_connections = 2\ncheckout_timeout = 1000\nmin_pool_size = 1",
        5,
    );
    let users: String = ["u1", "u2", "u3"]
        .iter()
        .map(|u| {
            format!("[[users]]\nname = \"{u}\"\ndatabase = \"{DB}\"\npassword = \"{PASSWORD}\"\n")
        })
        .collect();
    let proxy = start_with(&config, &users);
    eventually(
        "the warm connections to hold the cap",
        Duration::from_secs(10),
        || async { server_connections(&topo) == 2 },
    )
    .await;
    let u3 = client(&proxy, "u3").await;
    let got = simple_value(&u3, "SELECT 'u3 served'").await;
    assert_eq!(
        got.as_deref().map_err(err_text),
        Ok("u3 served"),
        "{}",
        proxy.log()
    );
    assert!(server_connections(&topo) <= 2);

    // u1 and u2 each hold a connection in a transaction, then leave them idle: u3 (whose own
    // connection was taken meanwhile) is served again.
    let (a, b) = (client(&proxy, "u1").await, client(&proxy, "u2").await);
    exec(&a, "BEGIN; SELECT 1").await;
    exec(&b, "BEGIN; SELECT 1").await;
    assert!(server_connections(&topo) <= 2);
    exec(&a, "COMMIT").await;
    exec(&b, "COMMIT").await;
    let got = simple_value(&u3, "SELECT 'u3 again'").await;
    assert_eq!(
        got.as_deref().map_err(err_text),
        Ok("u3 again"),
        "{}",
        proxy.log()
    );
    assert!(server_connections(&topo) <= 2);
}
