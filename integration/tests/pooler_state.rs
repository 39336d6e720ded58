//! Per-client session state in transaction mode: SET/RESET and startup parameters follow the
//! client from server to server and never leak; SET LOCAL and rolled-back SETs do not stick;
//! protocol-level prepared statements are shared, prepared lazily, closed and deallocated; and
//! session state (temp tables, advisory locks, LISTEN, SQL PREPARE, WITH HOLD cursors) pins a
//! client and is wiped before its server serves anyone else.
use crate::common;
use common::raw::{self, Conn};
use common::*;
use std::time::Duration;
use tokio_postgres::types::Type;

/// Client with extra connection keywords (application_name, options).
async fn connect_with(proxy: &topology::Proxy, extra: &str) -> tokio_postgres::Client {
    let conninfo = format!("{} {extra}", proxy.conninfo(USER, PASSWORD, DB));
    connect_str(&conninfo)
        .await
        .unwrap_or_else(|e| panic!("connect with {extra}: {e}"))
        .0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_does_not_leak_between_clients() {
    // Pool of 1: both clients always share the one server connection.
    let (_topo, proxy) = pgdog("", 1);
    let a = connect(&proxy).await;
    let b = connect_with(&proxy, "application_name=b").await;
    exec(&a, "SET statement_timeout = '1234ms'").await;
    exec(&a, "SET application_name = 'a'").await;
    let pid = one(&a, "SELECT pg_backend_pid()").await;

    for round in 0..3 {
        assert_eq!(one(&b, "SELECT pg_backend_pid()").await, pid);
        assert_eq!(
            one(&b, "SHOW statement_timeout").await,
            "0",
            "round {round}"
        );
        assert_eq!(one(&b, "SHOW application_name").await, "b", "round {round}");
        exec(&a, "BEGIN").await;
        assert_eq!(
            one(&a, "SHOW statement_timeout").await,
            "1234ms",
            "round {round}"
        );
        assert_eq!(one(&a, "SHOW application_name").await, "a", "round {round}");
        exec(&a, "COMMIT").await;
    }
    // The value is really in force for A, and really not for B.
    let err = a.simple_query("SELECT pg_sleep(1.6)").await.unwrap_err();
    assert_eq!(sqlstate(&err).as_deref(), Some("57014"), "{err}");
    b.simple_query("SELECT pg_sleep(1.6)")
        .await
        .expect("B has no statement_timeout");

    // RESET goes back to the default for A, wherever it runs.
    exec(&a, "RESET statement_timeout").await;
    assert_eq!(one(&b, "SHOW statement_timeout").await, "0");
    assert_eq!(one(&a, "SHOW statement_timeout").await, "0");
    assert_eq!(one(&a, "SHOW application_name").await, "a");
    exec(&b, "SET statement_timeout = '5s'").await;
    assert_eq!(one(&a, "SHOW statement_timeout").await, "0");
    exec(&a, "RESET ALL").await;
    assert_eq!(one(&b, "SHOW statement_timeout").await, "5s");
    let name = one(&a, "SHOW application_name").await;
    assert!(name != "a" && name != "b", "after RESET ALL: {name}");
    assert_eq!(one(&b, "SHOW application_name").await, "b");
}

/// SHOW values of a connection, in order.
async fn shows(client: &tokio_postgres::Client, names: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for n in names {
        out.push(one(client, &format!("SHOW {n}")).await);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn startup_parameters_are_applied() {
    let (topo, proxy) = pgdog("", 1);
    let pg = topo.primary();
    pg.psql("CREATE SCHEMA myschema; CREATE TABLE myschema.only_there (v text); INSERT INTO myschema.only_there VALUES ('found')")
        .unwrap();
    let extra = "application_name=myapp options='-c search_path=myschema,public -c statement_timeout=2500 -c TimeZone=Asia/Tokyo'";
    let names = [
        "application_name",
        "search_path",
        "statement_timeout",
        "TimeZone",
    ];
    // What PostgreSQL itself makes of these startup parameters.
    let direct = connect_str(&format!(
        "host=127.0.0.1 port={} user=postgres dbname=postgres sslmode=disable {extra}",
        pg.port
    ))
    .await
    .unwrap()
    .0;
    let want = shows(&direct, &names).await;
    assert_eq!(want[0], "myapp");
    let plain_direct = connect_str(&format!(
        "host=127.0.0.1 port={} user=postgres dbname=postgres sslmode=disable",
        pg.port
    ))
    .await
    .unwrap()
    .0;
    let defaults = shows(&plain_direct, &names[1..]).await;

    let x = connect_with(&proxy, extra).await;
    let y = connect(&proxy).await;
    for round in 0..3 {
        assert_eq!(shows(&x, &names).await, want, "round {round}");
        assert_eq!(one(&x, "SELECT v FROM only_there").await, "found");
        assert_eq!(shows(&y, &names[1..]).await, defaults, "round {round}");
        assert_ne!(one(&y, "SHOW application_name").await, "myapp");
        let err = y
            .simple_query("SELECT v FROM only_there")
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&err).as_deref(), Some("42P01"), "{err}");
    }
    // libpq's PGOPTIONS / PGAPPNAME through psql.
    let mut cmd = proxy.psql_command(USER, PASSWORD, DB);
    cmd.env("PGOPTIONS", "-c search_path=myschema -c statement_timeout=4242")
        .env("PGAPPNAME", "psqlapp")
        .args([
            "-c",
            "SELECT v || ' ' || current_setting('statement_timeout') || ' ' || current_setting('application_name') FROM only_there",
        ]);
    let out = run_ok(&mut cmd, "psql with PGOPTIONS");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "found 4242ms psqlapp"
    );
    assert_eq!(shows(&y, &names[1..]).await, defaults);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_local_stays_in_its_transaction() {
    let (_topo, _proxy, a, b) = pgdog_pair("", 1).await;
    exec_each(&a, &["BEGIN", "SET LOCAL statement_timeout = '777ms'"]).await;
    assert_eq!(one(&a, "SHOW statement_timeout").await, "777ms");
    exec(&a, "COMMIT").await;
    assert_eq!(one(&a, "SHOW statement_timeout").await, "0");
    assert_eq!(one(&b, "SHOW statement_timeout").await, "0");
    // In one simple-query batch, and with set_config(..., true).
    exec(
        &a,
        "BEGIN; SET LOCAL lock_timeout = '55s'; SELECT set_config('work_mem', '7MB', true); COMMIT",
    )
    .await;
    assert_eq!(one(&a, "SHOW lock_timeout").await, "0");
    assert_eq!(one(&b, "SHOW lock_timeout").await, "0");
    assert_eq!(
        one(&a, "SHOW work_mem").await,
        one(&b, "SHOW work_mem").await
    );
    assert_eq!(one(&a, "SHOW statement_timeout").await, "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_in_rolled_back_transaction_is_dropped() {
    let (_topo, _proxy, a, b) = pgdog_pair("", 1).await;
    // ROLLBACK.
    exec_each(
        &a,
        &["BEGIN", "SET statement_timeout = '888ms'", "ROLLBACK"],
    )
    .await;
    assert_eq!(one(&a, "SHOW statement_timeout").await, "0");
    exec(&b, "SET statement_timeout = '3s'").await;
    assert_eq!(
        one(&a, "SHOW statement_timeout").await,
        "0",
        "after B used the server"
    );
    // A failed transaction ended by ROLLBACK.
    exec_each(&a, &["BEGIN", "SET statement_timeout = '889ms'"]).await;
    assert!(a.batch_execute("SELECT 1/0").await.is_err());
    exec(&a, "ROLLBACK").await;
    assert_eq!(one(&b, "SHOW statement_timeout").await, "3s");
    assert_eq!(one(&a, "SHOW statement_timeout").await, "0");
    // COMMIT keeps it.
    exec_each(&a, &["BEGIN", "SET statement_timeout = '999ms'", "COMMIT"]).await;
    assert_eq!(one(&b, "SHOW statement_timeout").await, "3s");
    assert_eq!(one(&a, "SHOW statement_timeout").await, "999ms");
    // A multi-statement query is one implicit transaction: its error undoes its SET.
    assert!(a
        .batch_execute("SET statement_timeout = '111ms'; SELECT 1/0")
        .await
        .is_err());
    assert_eq!(one(&a, "SHOW statement_timeout").await, "999ms");
    assert_eq!(one(&b, "SHOW statement_timeout").await, "3s");
    assert_eq!(one(&a, "SHOW statement_timeout").await, "999ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_before_a_rolled_back_savepoint_is_kept() {
    let (_topo, _proxy, a, b) = pgdog_pair("", 1).await;
    // PostgreSQL keeps the SET made before the savepoint and undoes the one after it.
    exec_each(
        &a,
        &[
            "BEGIN",
            "SET statement_timeout = '321ms'",
            "SAVEPOINT s",
            "SET lock_timeout = '654ms'",
            "ROLLBACK TO SAVEPOINT s",
            "COMMIT",
        ],
    )
    .await;
    assert_eq!(
        shows(&a, &["statement_timeout", "lock_timeout"]).await,
        ["321ms", "0"]
    );
    // B takes the server; A must get its setting back on the next checkout.
    assert_eq!(
        shows(&b, &["statement_timeout", "lock_timeout"]).await,
        ["0", "0"],
        "A's settings leaked to B"
    );
    exec(&b, "SET lock_timeout = '2s'").await;
    assert_eq!(
        shows(&a, &["statement_timeout", "lock_timeout"]).await,
        ["321ms", "0"],
        "A's settings after B used the server"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_after_an_error_recovered_by_savepoint_is_kept() {
    let (_topo, _proxy, a, b) = pgdog_pair("", 1).await;
    exec(&a, "BEGIN; SAVEPOINT s").await;
    assert!(a.batch_execute("SELECT 1/0").await.is_err());
    exec_each(
        &a,
        &[
            "ROLLBACK TO SAVEPOINT s",
            "SET statement_timeout = '222ms'",
            "COMMIT",
        ],
    )
    .await;
    assert_eq!(one(&a, "SHOW statement_timeout").await, "222ms");
    assert_eq!(
        one(&b, "SHOW statement_timeout").await,
        "0",
        "A's setting leaked to B"
    );
    exec(&b, "SET statement_timeout = '4s'").await;
    assert_eq!(
        one(&a, "SHOW statement_timeout").await,
        "222ms",
        "A's setting after B used the server"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_shared_by_many_clients() {
    let (_topo, proxy) = pgdog("", 2);
    let tasks: Vec<_> = (0..20i32)
        .map(|i| {
            let conninfo = proxy.conninfo(USER, PASSWORD, DB);
            tokio::spawn(async move {
                let (c, _task) = connect_str(&conninfo).await.unwrap();
                let same = c.prepare("SELECT $1::int * 2 AS doubled").await.unwrap();
                assert_eq!(same.columns()[0].name(), "doubled");
                assert_eq!(same.params(), &[Type::INT4]);
                let own = c
                    .prepare(&format!("SELECT $1::int + {i} AS plus_{i}"))
                    .await
                    .unwrap();
                assert_eq!(own.columns()[0].name(), format!("plus_{i}"));
                // Same text, different parameter types: different statements.
                let typed = if i % 2 == 0 {
                    c.prepare_typed("SELECT $1", &[Type::INT8]).await.unwrap()
                } else {
                    c.prepare_typed("SELECT $1", &[Type::TEXT]).await.unwrap()
                };
                for k in 0..50i32 {
                    if k % 10 == 0 {
                        exec(&c, "BEGIN").await;
                    }
                    let r: i32 = c.query_one(&same, &[&k]).await.unwrap().get(0);
                    assert_eq!(r, 2 * k, "client {i}");
                    let r: i32 = c.query_one(&own, &[&k]).await.unwrap().get(0);
                    assert_eq!(r, k + i, "client {i}");
                    if i % 2 == 0 {
                        let r: i64 = c.query_one(&typed, &[&i64::from(k)]).await.unwrap().get(0);
                        assert_eq!(r, i64::from(k));
                    } else {
                        let r: String =
                            c.query_one(&typed, &[&k.to_string()]).await.unwrap().get(0);
                        assert_eq!(r, k.to_string());
                    }
                    if k % 10 == 0 {
                        exec(&c, "COMMIT").await;
                    }
                    if k % 10 == 5 {
                        // Prepared, used and closed (dropping a Statement sends Close).
                        let tmp = c.prepare(&format!("SELECT {k} + $1::int")).await.unwrap();
                        let r: i32 = c.query_one(&tmp, &[&i]).await.unwrap().get(0);
                        assert_eq!(r, k + i);
                        drop(tmp);
                    }
                }
                i
            })
        })
        .collect();
    for t in tasks {
        if let Err(e) = t.await {
            panic!("a client failed: {e}\n{}", proxy.log());
        }
    }
}

/// Sends `msgs` and returns the answers up to ReadyForQuery.
async fn exchange(c: &mut Conn, msgs: &[Vec<u8>]) -> Vec<raw::Msg> {
    c.send(&msgs.concat()).await;
    c.until_ready().await
}

fn error_code(msgs: &[raw::Msg]) -> Option<String> {
    msgs.iter()
        .find(|m| m.tag == b'E')
        .and_then(|m| m.sqlstate())
}

/// [`exchange`], whose answers must have the message tags `tags`; returns them.
async fn expect_tags(c: &mut Conn, msgs: &[Vec<u8>], tags: &str) -> Vec<raw::Msg> {
    let r = exchange(c, msgs).await;
    assert_eq!(raw::tags(&r), tags, "{:?}", error_code(&r));
    r
}

/// [`exchange`], whose answers must include an error with SQLSTATE `code`.
async fn expect_error(c: &mut Conn, msgs: &[Vec<u8>], code: &str) {
    let r = exchange(c, msgs).await;
    assert_eq!(error_code(&r).as_deref(), Some(code), "{}", raw::tags(&r));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deallocate_protocol_statements() {
    let (_topo, proxy) = pgdog("auth_type = \"trust\"", 2);
    let mut c = Conn::login(proxy.port, USER, DB, None).await;
    let mut other = Conn::login(proxy.port, USER, DB, None).await;
    let mut wrong_tags = Vec::new();

    let parse_one = [raw::parse("mystmt", "SELECT 1 AS one"), raw::sync()];
    expect_tags(&mut c, &parse_one, "1Z").await;
    let run = |name: &str| vec![raw::bind(name, &[]), raw::execute(), raw::sync()];
    let r = expect_tags(&mut c, &run("mystmt"), "2DCZ").await;
    assert_eq!(r[1].text(), "1");

    // Another client may use the same name for something else.
    let parse_other = [raw::parse("mystmt", "SELECT 'other'"), raw::sync()];
    expect_tags(&mut other, &parse_other, "1Z").await;
    let r = exchange(&mut other, &run("mystmt")).await;
    assert_eq!(r[1].text(), "other");

    // DEALLOCATE name.
    let r = expect_tags(&mut c, &[raw::query("DEALLOCATE mystmt")], "CZ").await;
    if r[0].text() != "DEALLOCATE" {
        wrong_tags.push(format!("DEALLOCATE mystmt -> {}", r[0].text()));
    }
    expect_error(&mut c, &run("mystmt"), "26000").await;
    // The name is free again.
    let mut parse_and_run = vec![raw::parse("mystmt", "SELECT 2")];
    parse_and_run.extend(run("mystmt"));
    let r = expect_tags(&mut c, &parse_and_run, "12DCZ").await;
    assert_eq!(r[2].text(), "2");
    // The other client's statement of that name is untouched.
    let r = exchange(&mut other, &run("mystmt")).await;
    assert_eq!(r[1].text(), "other");

    // DEALLOCATE ALL.
    expect_tags(
        &mut c,
        &[raw::parse("second", "SELECT 3"), raw::sync()],
        "1Z",
    )
    .await;
    let r = expect_tags(&mut c, &[raw::query("DEALLOCATE ALL")], "CZ").await;
    if r[0].text() != "DEALLOCATE ALL" {
        wrong_tags.push(format!("DEALLOCATE ALL -> {}", r[0].text()));
    }
    for name in ["mystmt", "second"] {
        expect_error(&mut c, &run(name), "26000").await;
    }
    // DEALLOCATE of a name nobody prepared: PostgreSQL's error.
    let nothing = [raw::query("DEALLOCATE PREPARE nothing_here")];
    expect_error(&mut c, &nothing, "26000").await;

    // tokio-postgres: a statement deallocated by SQL is gone, a new one works.
    let client = connect(&proxy).await;
    let stmt = client.prepare("SELECT 41 + 1").await.unwrap();
    assert_eq!(
        client.query_one(&stmt, &[]).await.unwrap().get::<_, i32>(0),
        42
    );
    exec(&client, "DEALLOCATE ALL").await;
    let err = client.query_one(&stmt, &[]).await.unwrap_err();
    assert_eq!(sqlstate(&err).as_deref(), Some("26000"), "{err}");
    let again = client.prepare("SELECT 41 + 1").await.unwrap();
    assert_eq!(
        client
            .query_one(&again, &[])
            .await
            .unwrap()
            .get::<_, i32>(0),
        42
    );

    // Checked last so that everything above is verified either way.
    assert!(
        wrong_tags.is_empty(),
        "CommandComplete tags differ from PostgreSQL's: {wrong_tags:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_and_describe_protocol_statements() {
    let (_topo, proxy) = pgdog("auth_type = \"trust\"", 2);
    let mut c = Conn::login(proxy.port, USER, DB, None).await;
    let run = |name: &str| vec![raw::bind(name, &[]), raw::execute(), raw::sync()];

    // Close statement, in the same pipeline as its Parse.
    let close_c1 = raw::target(b'C', b'S', "c1");
    let parse_and_close = [raw::parse("c1", "SELECT 4"), close_c1, raw::sync()];
    expect_tags(&mut c, &parse_and_close, "13Z").await;
    expect_error(&mut c, &run("c1"), "26000").await;
    // Close of a name that does not exist is not an error (as in PostgreSQL).
    let close_never = [raw::target(b'C', b'S', "never"), raw::sync()];
    expect_tags(&mut c, &close_never, "3Z").await;
    // Re-using a closed name.
    expect_tags(&mut c, &[raw::parse("c1", "SELECT 5"), raw::sync()], "1Z").await;
    let r = exchange(&mut c, &run("c1")).await;
    assert_eq!(r[1].text(), "5");

    // Describe statement and portal.
    let describe_d1 = || raw::target(b'D', b'S', "d1");
    let parse_d1 = raw::parse("d1", "SELECT $1::int AS x, 'y'::text AS y");
    expect_tags(&mut c, &[parse_d1, describe_d1(), raw::sync()], "1tTZ").await;
    let describe_portal = raw::target(b'D', b'P', "");
    let bound = [
        raw::bind("d1", &["5"]),
        describe_portal,
        raw::execute(),
        raw::sync(),
    ];
    let r = expect_tags(&mut c, &bound, "2TDCZ").await;
    assert_eq!(r[2].text(), "5");
    // Describe of a statement on a server that has not seen it yet: another client holds
    // the server c1/d1 were prepared on, so this one runs on the other.
    let holder = connect(&proxy).await;
    exec(&holder, "BEGIN").await;
    let pid_holder = one(&holder, "SELECT pg_backend_pid()").await;
    expect_tags(&mut c, &[describe_d1(), raw::sync()], "tTZ").await;
    let run_6 = [raw::bind("d1", &["6"]), raw::execute(), raw::sync()];
    let r = expect_tags(&mut c, &run_6, "2DCZ").await;
    assert_eq!(r[1].text(), "6");
    exec(&holder, "COMMIT").await;
    assert!(!pid_holder.is_empty());
}

/// Temporary objects of the session (its temp schema may stay assigned after DISCARD ALL, so
/// the objects in it are counted), its advisory locks, channels, SQL-level prepared statements
/// and A's cursor and table.
const STATE_CHECK: &str = "SELECT pg_backend_pid() || ' ' \
    || (SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema()) || ' ' \
    || (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()) || ' ' \
    || (SELECT count(*) FROM pg_listening_channels()) || ' ' \
    || (SELECT count(*) FROM pg_prepared_statements WHERE from_sql) || ' ' \
    || (SELECT count(*) FROM pg_cursors WHERE name = 'a_cur') || ' ' \
    || (to_regclass('a_tmp') IS NULL)";

/// (pid, "temp_objects advisory_locks channels statements cursors a_tmp_is_missing").
async fn state(client: &tokio_postgres::Client) -> (String, String) {
    let s = one(client, STATE_CHECK).await;
    let (pid, rest) = s.split_once(' ').unwrap();
    (pid.to_string(), rest.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_state_never_reaches_other_clients() {
    let clean = "0 0 0 0 0 true";
    // A's session state.
    let (_topo, proxy, a) = pgdog_client(
        "",
        2,
        &[
            "CREATE TEMP TABLE a_tmp (x int); INSERT INTO a_tmp VALUES (1)",
            "SELECT pg_advisory_lock(42)",
            // (Inside a transaction block LISTEN is the server's; a plain one is pgdog's and
            // leaves nothing on any server: `pooler_listen.rs`.)
            "BEGIN; LISTEN a_chan; COMMIT",
            "PREPARE a_stmt AS SELECT 'prepared'",
            "DECLARE a_cur CURSOR WITH HOLD FOR SELECT generate_series(1, 10)",
        ],
    )
    .await;
    let (a_pid, a_state) = state(&a).await;
    assert_eq!(a_state, "1 1 1 1 1 false", "A's own session state");

    let b = connect(&proxy).await;
    for round in 0..5 {
        // A keeps its server and everything on it...
        assert_eq!(one(&a, "SELECT count(*) FROM a_tmp").await, "1");
        assert_eq!(one(&a, "EXECUTE a_stmt").await, "prepared");
        assert_eq!(one(&a, "FETCH 1 FROM a_cur").await, (round + 1).to_string());
        assert_eq!(state(&a).await.0, a_pid);
        // ...and B, on the other server, sees none of it.
        let (b_pid, b_state) = state(&b).await;
        assert_ne!(b_pid, a_pid, "B got A's pinned server");
        assert_eq!(b_state, clean, "B on server {b_pid}");
        exec(&b, "BEGIN").await;
        assert_eq!(
            one(&b, "SELECT pg_try_advisory_xact_lock(42)").await,
            "f",
            "A's session lock must still be held"
        );
        exec(&b, "COMMIT").await;
    }
    drop(a);

    // New clients until one gets A's former server: it must be clean.
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let c = connect(&proxy).await;
        let (pid, st) = state(&c).await;
        assert_eq!(st, clean, "client on server {pid} (A was on {a_pid})");
        if pid == a_pid {
            exec(&c, "BEGIN").await;
            assert_eq!(one(&c, "SELECT pg_try_advisory_xact_lock(42)").await, "t");
            exec(&c, "COMMIT").await;
            break;
        }
        seen.push(pid);
        assert!(
            std::time::Instant::now() < deadline,
            "no new client got A's server {a_pid} back (got {seen:?})\n{}",
            proxy.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(state(&b).await.1, clean);
}
