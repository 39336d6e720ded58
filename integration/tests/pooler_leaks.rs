//! No session state leaks from one client to the next in transaction mode, on a pool of one
//! server connection: after each kind of state change by one client (kept connected, then
//! gone), a fresh client on that server sees exactly what it saw on a fresh server: the same
//! `pg_settings`, no temporary objects, prepared statements, cursors, listeners or advisory
//! locks. Also: startup parameters Postgres would refuse fail the login, and
//! `query_parser = false` resets the server between clients.
use crate::common;
use common::*;
use std::time::Duration;

/// Everything about the session that must not leak, as one text.
const STATE: &str = "SELECT \
    (SELECT string_agg(name || '=' || setting, ',' ORDER BY name) FROM pg_settings \
       WHERE name NOT IN ('application_name')) \
    || '|temp ' || (SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema()) \
    || '|tempfn ' || (SELECT count(*) FROM pg_proc WHERE pronamespace = pg_my_temp_schema()) \
    || '|prepared ' || (SELECT count(*) FROM pg_prepared_statements WHERE name NOT LIKE '\\_\\_pgdog%') \
    || '|cursors ' || (SELECT count(*) FROM pg_cursors) \
    || '|listen ' || (SELECT count(*) FROM pg_listening_channels()) \
    || '|locks ' || (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid())";

/// The state a new client sees once it gets the server (polling for up to 5 s).
async fn observed_eventually(proxy: &topology::Proxy, what: &str) -> String {
    let start = std::time::Instant::now();
    loop {
        if let Some(v) = observed(proxy).await {
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "timed out: {what}"
        );
    }
}

/// The state a new client sees (it connects, reads, leaves), or None when it cannot get the
/// server (the first client is pinned to it: that is fine too).
async fn observed(proxy: &topology::Proxy) -> Option<String> {
    let c = connect(proxy).await;
    match simple_value(&c, STATE).await {
        Ok(v) => Some(v),
        Err(e) => {
            assert_eq!(sqlstate(&e).as_deref(), Some("53300"), "{e}");
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_session_state_reaches_the_next_client() {
    let (_topo, proxy) = pgdog_after(
        "checkout_timeout = 300",
        1,
        "CREATE OR REPLACE FUNCTION leaky_setter() RETURNS int LANGUAGE plpgsql AS \
             $$ BEGIN PERFORM set_config('work_mem', '7777kB', false); RETURN 1; END $$",
    )
    .await;
    let fresh = observed(&proxy).await.expect("baseline");
    let changes = [
        "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE",
        "SET statement_timeout = 1234",
        "SELECT set_config('lock_timeout', '4321', false)",
        "SELECT leaky_setter()",
        "DO $$ BEGIN PERFORM set_config('search_path', 'leak', false); END $$",
        "CREATE TEMP TABLE leak_t (v int)",
        "SELECT 1 AS v INTO TEMP leak_into",
        "CREATE FUNCTION pg_temp.leak_fn() RETURNS int LANGUAGE sql AS 'SELECT 1'",
        // (A plain LISTEN is pgdog's and never reaches a server: `pooler_listen.rs`.)
        "BEGIN; LISTEN leak_channel; COMMIT",
        "SELECT pg_advisory_lock(4242)",
        "BEGIN; DECLARE leak_cur CURSOR WITH HOLD FOR SELECT 1; COMMIT",
        "PREPARE leak_stmt AS SELECT 1",
    ];
    for change in changes {
        let a = connect(&proxy).await;
        a.batch_execute(change)
            .await
            .unwrap_or_else(|e| panic!("{change}: {e}"));
        // The client stays: the next one gets the server only if nothing stays on it.
        if let Some(seen) = observed(&proxy).await {
            assert_eq!(
                seen, fresh,
                "after `{change}` with its client still connected"
            );
        }
        // The client leaves: the next one gets the server, clean.
        drop(a);
        let seen = observed_eventually(&proxy, change).await;
        assert_eq!(seen, fresh, "after `{change}` and its client left");
    }
    report("session_state_kinds_checked", changes.len());
    report("session_state_leaks", 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_startup_parameters_fail_the_login() {
    let (_topo, proxy) = pgdog("", 2);
    let cases = [
        ("options='-c statement_timeout=abc'", "22023"),
        ("options='-c no_such_setting=1'", "42704"),
        ("options='-c'", "42601"),
        ("options='nonsense'", "42601"),
    ];
    for (extra, code) in cases {
        let conninfo = format!("{} {extra}", proxy.conninfo(USER, PASSWORD, DB));
        let err = connect_str(&conninfo)
            .await
            .err()
            .unwrap_or_else(|| panic!("{extra}: login succeeded"));
        assert_eq!(sqlstate(&err).as_deref(), Some(code), "{extra}: {err}");
    }
    // Good ones apply at login.
    let conninfo = format!(
        "{} options='-c statement_timeout=4321'",
        proxy.conninfo(USER, PASSWORD, DB)
    );
    let (c, _) = connect_str(&conninfo).await.unwrap();
    assert_eq!(one(&c, "SHOW statement_timeout").await, "4321ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_parser_servers_are_reset_between_clients() {
    let (_topo, proxy) = pgdog("query_parser = false", 1);
    let fresh = observed(&proxy).await.expect("baseline");
    let a = connect(&proxy).await;
    exec(&a, "SET work_mem = '9999kB'").await;
    drop(a);
    assert_eq!(observed_eventually(&proxy, "the server back").await, fresh);
}
