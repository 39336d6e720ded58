//! Users from the database (`auth_user` + `auth_query`): roles that exist only on the server
//! log in through pgdog, with pass-through SCRAM (the server requires `scram-sha-256` for
//! them and pgdog's files hold no password of theirs) or MD5, a role created after pgdog
//! started, a password changed on the server (after `auth_query_cache_ttl`), unknown users and
//! wrong passwords answered alike, and a server that is down (08006, no hang).
use crate::common;
use common::*;
use std::time::Duration;
use topology::{Proxy, Topology};

const AUTH_USER: &str = "pgdog_auth";
const AUTH_PASSWORD: &str = "auth-pw";

/// The server's roles: the look-up user (a superuser: it reads pg_authid), and `roles`
/// (name, password, password_encryption).
fn create_roles(topo: &Topology, roles: &[(&str, &str, &str)]) {
    let mut sql = format!("CREATE ROLE {AUTH_USER} LOGIN SUPERUSER PASSWORD '{AUTH_PASSWORD}';");
    for (name, password, encryption) in roles {
        sql.push_str(&format!(
            "SET password_encryption = '{encryption}'; CREATE ROLE {name} LOGIN PASSWORD '{password}'; GRANT ALL ON SCHEMA public TO {name};"
        ));
    }
    topo.primary().psql(&sql).unwrap();
}

/// pgdog with database `app` on the primary, logging in to it as the client (no `user`), and
/// users.toml holding only the look-up user.
fn proxy(topo: &Topology, general: &str) -> Proxy {
    let config = format!(
        "auth_user = \"{AUTH_USER}\"\n{general}\n\n[[databases]]\nname = \"{DB}\"\nport = {}\ndatabase_name = \"postgres\"\npool_size = 2\n",
        topo.primary().port
    );
    let users = format!(
        "[[users]]\nname = \"{AUTH_USER}\"\ndatabase = \"{DB}\"\npassword = \"{AUTH_PASSWORD}\"\n"
    );
    start_with(&config, &users)
}

async fn whoami(proxy: &Proxy, user: &str, password: &str) -> Result<String, String> {
    let client = connect_as(proxy, user, password, DB)
        .await
        .map_err(|e| format!("{}: {}", sqlstate(&e).unwrap_or_default(), err_text(&e)))?;
    Ok(one(&client, "SELECT current_user").await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_roles_of_the_server_log_in_by_pass_through() {
    let topo = Topology::single().unwrap();
    create_roles(&topo, &[("alice", "alice-pw", "scram-sha-256")]);
    let rules = format!(
        "host all alice 127.0.0.1/32 scram-sha-256\nhost all {AUTH_USER} 127.0.0.1/32 scram-sha-256"
    );
    server_hba_first(&topo, &rules);
    // The server checks alice's password itself (once it has read the new rules).
    until_server_checks_password(&topo, "alice").await;

    let proxy = proxy(&topo, "");
    assert_eq!(whoami(&proxy, "alice", "alice-pw").await.unwrap(), "alice");
    // Wrong password and unknown user: one answer.
    let wrong = login_refusal(&proxy, "alice", "nope", DB).await;
    assert_eq!(wrong.0, "28P01");
    let unknown = login_refusal(&proxy, "nobody", "alice-pw", DB).await;
    assert_eq!(
        unknown,
        (wrong.0.clone(), wrong.1.replace("alice", "nobody"))
    );
    // A role created after pgdog started.
    topo.primary()
        .psql("CREATE ROLE bob LOGIN PASSWORD 'bob-pw'")
        .unwrap();
    server_hba_first(&topo, "host all bob 127.0.0.1/32 scram-sha-256");
    assert_eq!(whoami(&proxy, "bob", "bob-pw").await.unwrap(), "bob");
    // Its pool shows like any other, and pgdog's files hold no password of theirs.
    let files = std::fs::read_to_string(proxy.dir.join("users.toml")).unwrap()
        + &std::fs::read_to_string(proxy.dir.join("pgdog.toml")).unwrap();
    assert!(
        !files.contains("alice") && !files.contains("bob"),
        "{files}"
    );
    let c = connect_as(&proxy, "alice", "alice-pw", DB).await.unwrap();
    exec(
        &c,
        "CREATE TABLE alice_t (v int); INSERT INTO alice_t VALUES (1)",
    )
    .await;
    assert_eq!(one(&c, "SELECT count(*) FROM alice_t").await, "1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn md5_roles_log_in_and_pools_show() {
    let topo = Topology::single().unwrap();
    create_roles(&topo, &[("carol", "carol-pw", "md5")]);
    server_hba_first(&topo, "host all carol 127.0.0.1/32 md5");
    let proxy = proxy(
        &topo,
        &format!("auth_type = \"md5\"\nadmin_password = \"{ADMIN_PASSWORD}\""),
    );
    assert_eq!(whoami(&proxy, "carol", "carol-pw").await.unwrap(), "carol");
    assert_eq!(login_refusal(&proxy, "carol", "wrong", DB).await.0, "28P01");
    let admin = admin(&proxy).await;
    let pools = admin.simple_query("SHOW POOLS").await.unwrap();
    let users: Vec<String> = pools
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get("user").map(str::to_string),
            _ => None,
        })
        .collect();
    assert!(users.iter().any(|u| u == "carol"), "{users:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_password_takes_effect_after_the_cache_ttl() {
    let topo = Topology::single().unwrap();
    create_roles(&topo, &[("dave", "pw-1", "scram-sha-256")]);
    server_hba_first(&topo, "host all dave 127.0.0.1/32 scram-sha-256");
    let proxy = proxy(&topo, "auth_query_cache_ttl = 5000");
    assert_eq!(whoami(&proxy, "dave", "pw-1").await.unwrap(), "dave");
    let before = connect_as(&proxy, "dave", "pw-1", DB).await.unwrap();
    topo.primary()
        .psql("ALTER ROLE dave PASSWORD 'pw-2'")
        .unwrap();
    // Within the TTL the cached secret answers: the new password is not known yet.
    assert_eq!(login_refusal(&proxy, "dave", "pw-2", DB).await.0, "28P01");
    eventually(
        "the new password to log in",
        Duration::from_secs(20),
        || async { whoami(&proxy, "dave", "pw-2").await.is_ok() },
    )
    .await;
    // The pool logs in with the new keys (its connections made with the old ones are gone);
    // the old password is refused.
    topo.primary()
        .psql("SELECT count(pg_terminate_backend(pid)) >= 0 FROM pg_stat_activity WHERE usename = 'dave'")
        .unwrap();
    eventually(
        "dave's server connections to end",
        Duration::from_secs(10),
        || async {
            let left = "SELECT count(*) FROM pg_stat_activity WHERE usename = 'dave'";
            topo.primary().psql(left).unwrap() == "0"
        },
    )
    .await;
    let c = connect_as(&proxy, "dave", "pw-2", DB).await.unwrap();
    assert_eq!(one(&c, "SELECT current_user").await, "dave");
    assert_eq!(login_refusal(&proxy, "dave", "pw-1", DB).await.0, "28P01");
    // A client that logged in before the change moved to the new pool and goes on.
    for _ in 0..3 {
        assert_eq!(one(&before, "SELECT current_user").await, "dave");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_is_down_fails_the_look_up_with_08006() {
    let topo = Topology::single().unwrap();
    create_roles(&topo, &[("erin", "erin-pw", "scram-sha-256")]);
    let proxy = proxy(&topo, "auth_query_timeout = 2000");
    topo.primary().stop().unwrap();
    let started = std::time::Instant::now();
    let (code, message) = login_refusal(&proxy, "erin", "erin-pw", DB).await;
    assert_eq!(code, "08006", "{message}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(proxy.log().contains("auth_query"), "{}", proxy.log());
}
