//! Client authentication to pgdog: SCRAM-SHA-256 (default), MD5, cleartext and trust, each with
//! the right password, a wrong one, an unknown user and an unknown database, the SQLSTATEs
//! PostgreSQL clients expect, and a SCRAM verifier made by `pgdog hash`.
use crate::common;
use common::*;
use tokio_postgres::error::SqlState;

/// The SQLSTATE of a failed login.
async fn login_error(proxy: &topology::Proxy, user: &str, password: &str, db: &str) -> SqlState {
    match connect_as(proxy, user, password, db).await {
        Ok(_) => panic!("login as {user}/{password} on {db} should fail"),
        Err(e) => e
            .as_db_error()
            .unwrap_or_else(|| panic!("login as {user} on {db}: no DbError in {e:?}"))
            .code()
            .clone(),
    }
}

/// The message of a failed login.
async fn login_message(proxy: &topology::Proxy, user: &str, password: &str, db: &str) -> String {
    match connect_as(proxy, user, password, db).await {
        Ok(_) => panic!("login as {user} on {db} should fail"),
        Err(e) => e
            .as_db_error()
            .map(|d| d.message().to_string())
            .unwrap_or_default(),
    }
}

async fn check_auth_type(auth_type: &str) {
    let (_topo, proxy) = pgdog(&format!("auth_type = \"{auth_type}\""), 2);
    let client = connect_as(&proxy, USER, PASSWORD, DB)
        .await
        .unwrap_or_else(|e| panic!("{auth_type}: right password refused: {e}\n{}", proxy.log()));
    assert_eq!(one(&client, "SELECT 'in'").await, "in");

    assert_eq!(
        login_error(&proxy, USER, "wrong", DB).await,
        SqlState::INVALID_PASSWORD,
        "{auth_type}: wrong password"
    );
    // Unknown users and databases answer exactly as a wrong password (no enumeration).
    let wrong = login_message(&proxy, USER, "wrong", DB).await;
    for (user, db, what) in [
        ("nobody", DB, "unknown user"),
        (USER, "nodb", "unknown database"),
    ] {
        assert_eq!(
            login_error(&proxy, user, PASSWORD, db).await,
            SqlState::INVALID_PASSWORD,
            "{auth_type}: {what}"
        );
        assert_eq!(
            login_message(&proxy, user, PASSWORD, db).await,
            wrong.replace(USER, user),
            "{auth_type}: {what}"
        );
    }
    // libpq (psql) logs in with the same method.
    assert_eq!(
        proxy.psql(USER, PASSWORD, DB, "SELECT 'libpq'").unwrap(),
        "libpq"
    );
    let err = proxy
        .psql(USER, "wrong", DB, "SELECT 1")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("password authentication failed"),
        "{auth_type}: {err}"
    );
    // The refused logins left the first client alone.
    assert_eq!(one(&client, "SELECT 'still in'").await, "still in");
}

/// psql through pgdog (`general`: its `[general]` lines) with `PGREQUIREAUTH=require`, so
/// that libpq accepts only that method: the login must succeed.
fn psql_requiring(general: &str, require: &str, sql: &str, what: &str) {
    let (_topo, proxy) = pgdog(general, 2);
    let mut cmd = proxy.psql_command(USER, PASSWORD, DB);
    cmd.env("PGREQUIREAUTH", require).args(["-c", sql]);
    run_ok(&mut cmd, what);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_is_the_default() {
    // libpq with require_auth: only a SCRAM exchange is accepted by the client.
    psql_requiring("", "scram-sha-256", "SELECT 'scram'", "SCRAM login");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram() {
    check_auth_type("scram").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn md5() {
    check_auth_type("md5").await;
    psql_requiring("auth_type = \"md5\"", "md5", "SELECT 1", "MD5 login");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain() {
    check_auth_type("plain").await;
    psql_requiring(
        "auth_type = \"plain\"",
        "password",
        "SELECT 1",
        "cleartext login",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_hash_from_pgdog_hash() {
    // The password comes on stdin (never on the command line, where ps would show it).
    let mut child = std::process::Command::new(topology::proxy::binary())
        .arg("hash")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{PASSWORD}").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let refused = std::process::Command::new(topology::proxy::binary())
        .args(["hash", PASSWORD])
        .output()
        .unwrap();
    assert_eq!(
        refused.status.code(),
        Some(2),
        "a password argument is refused"
    );
    let hash = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(hash.starts_with("SCRAM-SHA-256$4096:"), "{hash}");
    assert!(!hash.contains(PASSWORD));

    let topo = topology::Topology::single().unwrap();
    let users =
        format!("[[users]]\nname = \"{USER}\"\ndatabase = \"{DB}\"\npassword_hash = \"{hash}\"\n");
    let proxy = start_with(&config(&topo, "", 2), &users);
    let client = connect_as(&proxy, USER, PASSWORD, DB)
        .await
        .unwrap_or_else(|e| panic!("password_hash login: {e}\n{}", proxy.log()));
    assert_eq!(one(&client, "SELECT 2").await, "2");
    assert_eq!(
        proxy.psql(USER, PASSWORD, DB, "SELECT 'psql'").unwrap(),
        "psql"
    );
    assert_eq!(
        login_error(&proxy, USER, "Secret", DB).await,
        SqlState::INVALID_PASSWORD
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trust_needs_no_password() {
    let (_topo, proxy) = pgdog("auth_type = \"trust\"", 2);
    let conninfo = format!(
        "host=127.0.0.1 port={} user={USER} dbname={DB} sslmode=disable",
        proxy.port
    );
    let (client, _task) = connect_str(&conninfo)
        .await
        .unwrap_or_else(|e| panic!("trust login: {e}\n{}", proxy.log()));
    assert_eq!(one(&client, "SELECT 'trusted'").await, "trusted");
    // psql with no password at all (and no prompt).
    let mut cmd = proxy.psql_command(USER, "", DB);
    cmd.env_remove("PGPASSWORD")
        .arg("-w")
        .args(["-c", "SELECT 1"]);
    run_ok(&mut cmd, "psql without password");
    // Users and databases are still checked, with one answer for both.
    assert_eq!(
        login_error(&proxy, "nobody", "x", DB).await,
        SqlState::INVALID_AUTHORIZATION_SPECIFICATION
    );
    assert_eq!(
        login_error(&proxy, USER, "x", "nodb").await,
        SqlState::INVALID_AUTHORIZATION_SPECIFICATION
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleartext_to_servers_only_when_allowed() {
    let topo = topology::Topology::single().unwrap();
    let node = topo.primary();
    node.psql("CREATE ROLE clear_user LOGIN PASSWORD 'clear-pw'")
        .unwrap();
    // This role must send its password in cleartext (first matching pg_hba line).
    let hba = node.data_dir().join("pg_hba.conf");
    let old = std::fs::read_to_string(&hba).unwrap();
    std::fs::write(
        &hba,
        format!("host all clear_user 127.0.0.1/32 password\n{old}"),
    )
    .unwrap();
    node.psql("SELECT pg_reload_conf()").unwrap();
    let config = |extra: &str| {
        format!(
            "auth_type = \"trust\"\n{extra}\n\n[[databases]]\nname = \"{DB}\"\nport = {}\ndatabase_name = \"postgres\"\nuser = \"clear_user\"\npassword = \"clear-pw\"\n",
            node.port
        )
    };
    let refused = start_with(&config(""), &users(""));
    let err = connect_as(&refused, USER, "x", DB).await.err();
    let text = match &err {
        Some(e) => {
            e.to_string()
                + &e.as_db_error()
                    .map(|d| d.message().to_string())
                    .unwrap_or_default()
        }
        None => {
            // Logins need no server; the first query does.
            let c = connect_as(&refused, USER, "x", DB).await.unwrap();
            let e = c.simple_query("SELECT 1").await.unwrap_err();
            e.as_db_error()
                .map(|d| d.message().to_string())
                .unwrap_or_default()
        }
    };
    assert!(text.contains("server_allow_cleartext"), "{text}");
    drop(refused);
    let allowed = start_with(&config("server_allow_cleartext = true"), &users(""));
    let c = connect_as(&allowed, USER, "x", DB).await.unwrap();
    assert_eq!(one(&c, "SELECT current_user").await, "clear_user");
}
