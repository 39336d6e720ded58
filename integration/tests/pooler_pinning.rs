//! Pinning, exact: a transaction-mode session keeps its server connection only for what really
//! leaves state on it. Built-in functions are told from user functions by the server's own
//! catalog (`pg_proc` OIDs below 16384), so calls of harmless built-ins never pin, while a user
//! function (under `unknown_functions = "pin"`), a session advisory lock or `nextval` still do.
use crate::common;
use common::*;

/// SHOW CLIENTS' `pinned` column of every client that has one.
async fn pinned_clients(admin: &tokio_postgres::Client) -> Vec<String> {
    let mut out = Vec::new();
    for m in admin.simple_query("SHOW CLIENTS").await.unwrap() {
        if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
            if let Some(why) = r.get("pinned") {
                out.push(why.to_string());
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn built_in_calls_through_an_asyncpg_pool_never_pin() {
    let general = format!(
        "admin_password = \"{ADMIN_PASSWORD}\"\npooler_mode = \"transaction\"\ncheckout_timeout = 5000"
    );
    let (topo, proxy) = pgdog(&general, 10);
    let direct = format!(
        "postgres://postgres@127.0.0.1:{}/postgres",
        topo.primary().port
    );
    let (ok, out) = python_client("asyncpg_builtins.py", &[&direct, "40", "20"]);
    assert!(ok, "directly against Postgres: {out}");
    let through = format!("postgres://{USER}:{PASSWORD}@127.0.0.1:{}/{DB}", proxy.port);
    // 40 clients over 10 server connections: one pinned client too many and the others wait
    // out checkout_timeout (53300).
    let admin = admin(&proxy).await;
    let (ok, out) = python_client("asyncpg_builtins.py", &[&through, "40", "20"]);
    assert!(ok, "through pgdog: {out}");
    assert_eq!(out.trim(), "ok 800");
    assert_eq!(pinned_clients(&admin).await, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_leaves_session_state_still_pins() {
    let general = format!("admin_password = \"{ADMIN_PASSWORD}\"\npooler_mode = \"transaction\"");
    let (_topo, proxy) = pgdog_after(
        &general,
        4,
        "CREATE FUNCTION my_setter() RETURNS int LANGUAGE sql AS 'SELECT 1';
         CREATE SEQUENCE pin_seq;
         CREATE FUNCTION public.hashtext(int) RETURNS int LANGUAGE sql AS 'SELECT 7'",
    )
    .await;
    let admin = admin(&proxy).await;
    let cases = [
        ("SELECT my_setter()", Some("unknown_functions")),
        ("SELECT pg_advisory_lock(1)", Some("session advisory locks")),
        ("SELECT nextval('pin_seq')", Some("unknown_functions")),
        ("SELECT pg_terminate_backend(0)", Some("unknown_functions")),
        // A user function shares the name: the call may resolve to it.
        ("SELECT hashtext(1)", Some("unknown_functions")),
        ("SELECT public.hashtext(1)", Some("unknown_functions")),
        (
            "SELECT txid_current(), pg_column_size(1), date_bin('1h', now(), now())",
            None,
        ),
        ("SELECT pg_advisory_unlock_all()", None),
    ];
    for (sql, want) in cases {
        // The DDL above made pgdog read the catalog again (a health check round): until then
        // every call outside the fixed lists pins, so a harmless call is retried until it
        // runs unpinned.
        eventually(sql, std::time::Duration::from_secs(15), || async {
            let c = connect(&proxy).await;
            c.simple_query(sql).await.unwrap();
            let pinned = pinned_clients(&admin).await;
            drop(c);
            let gone = || async { pinned_clients(&admin).await.is_empty() };
            eventually("client gone", std::time::Duration::from_secs(5), gone).await;
            match want {
                Some(why) => {
                    assert!(
                        pinned.len() == 1 && pinned[0].contains(why),
                        "{sql}: {pinned:?}"
                    );
                    true
                }
                None => pinned.is_empty(),
            }
        })
        .await;
    }
}
