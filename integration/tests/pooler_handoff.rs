//! A server connection goes back to the pool clean, always, and nothing of one client reaches
//! another: a client that leaves in any state (mid-pipeline without Sync, mid-transaction,
//! mid-COPY, mid-result) leaves nothing open for the next one; a server FATAL ends the session
//! where session state lived; session mode is transparent for prepared statements; a client's
//! unnamed statement is its own; a redefined name gets 42P05 and Close always its CloseComplete.
//! Where Postgres defines the answer, the same exchange runs directly against it and through
//! pgdog, and the two transcripts must be equal.
use crate::common;
use common::raw::{self, Conn, Msg};
use common::*;

const TRUST: &str = "auth_type = \"trust\"";

/// Messages as a comparable text: tag, with the DataRow's first value, the CommandComplete
/// tag, the ErrorResponse's severity and SQLSTATE, the ReadyForQuery status.
fn transcript(msgs: &[Msg]) -> String {
    let one = |m: &Msg| match m.tag {
        b'D' | b'C' => format!("{}({})", m.tag as char, m.text()),
        b'E' => format!("E({}/{})", m.severity(), m.sqlstate().unwrap_or_default()),
        b'Z' => format!("Z({})", m.body[0] as char),
        b'N' | b'S' => String::new(),
        other => (other as char).to_string(),
    };
    let parts: Vec<String> = msgs.iter().map(one).filter(|s| !s.is_empty()).collect();
    parts.join(" ")
}

async fn through_pgdog(proxy: &topology::Proxy) -> Conn {
    Conn::login(proxy.port, USER, DB, None).await
}

async fn direct(topo: &topology::Topology) -> Conn {
    Conn::login(topo.primary().port, "postgres", "postgres", None).await
}

/// Sends `bytes` and reads `syncs` answers up to ReadyForQuery (or until the connection
/// closes): their transcript.
async fn exchange(c: &mut Conn, bytes: &[u8], syncs: usize) -> String {
    c.send(bytes).await;
    let mut msgs = Vec::new();
    for _ in 0..syncs {
        msgs.extend(c.until_ready().await);
    }
    transcript(&msgs)
}

/// pgdog with a pool of one server connection in `mode`, trust auth; `handoff_rows` exists.
async fn pool_of_one(mode: &str) -> (topology::Topology, topology::Proxy) {
    pgdog_after(
        &format!("{TRUST}\npooler_mode = \"{mode}\"\ncheckout_timeout = 10000"),
        1,
        "CREATE TABLE IF NOT EXISTS handoff_rows (i int)",
    )
    .await
}

/// A way for a client to leave: what it sends, and how many messages it reads before it
/// drops its connection.
struct Leave {
    name: &'static str,
    send: Vec<u8>,
    read: usize,
}

fn ways_to_leave() -> Vec<Leave> {
    let three_selects = [
        raw::run_unnamed("select 1", &[]),
        raw::run_unnamed("select 1", &[]),
        raw::run_unnamed("select 1", &[]),
        raw::flush(),
    ]
    .concat();
    let begin_then_insert = [
        raw::run_unnamed("begin", &[]),
        raw::sync(),
        raw::run_unnamed("insert into handoff_rows values (1)", &[]),
        raw::flush(),
    ]
    .concat();
    vec![
        Leave {
            name: "three selects with Flush, no Sync",
            send: three_selects,
            read: 12,
        },
        Leave {
            name: "an insert with Flush, no Sync",
            send: [
                raw::run_unnamed("insert into handoff_rows values (1)", &[]),
                raw::flush(),
            ]
            .concat(),
            read: 3,
        },
        Leave {
            name: "an error with Flush, no Sync",
            send: [raw::run_unnamed("select 1/0", &[]), raw::flush()].concat(),
            // Postgres sends the error at the next Sync, not at Flush.
            read: 2,
        },
        Leave {
            name: "inside BEGIN after an insert",
            send: raw::query("BEGIN; INSERT INTO handoff_rows VALUES (1)"),
            read: 3,
        },
        Leave {
            name: "extended BEGIN, then an insert with Flush",
            send: begin_then_insert,
            read: 7,
        },
        Leave {
            name: "in the middle of COPY FROM STDIN",
            send: [
                raw::query("COPY handoff_rows FROM STDIN"),
                raw::copy_data(b"1\n"),
            ]
            .concat(),
            read: 1,
        },
        Leave {
            name: "in the middle of a large result",
            send: raw::query("SELECT g FROM generate_series(1, 3000000) g"),
            read: 2,
        },
        // Found by the protocol fuzzer: the COPY swallows the Sync after Execute, so after
        // the CopyFail's error the server waits for another Sync.
        Leave {
            name: "extended COPY FROM STDIN failed, its Sync swallowed",
            send: [
                raw::run_unnamed("COPY handoff_rows FROM STDIN", &[]),
                raw::sync(),
                raw::copy_data(b"1\n"),
                raw::copy_fail("stop"),
            ]
            .concat(),
            read: 4,
        },
        // Found by the protocol fuzzer: a Flush with a body fails; the server then skips to
        // a Sync, inside the client's transaction.
        Leave {
            name: "inside BEGIN after a malformed Flush",
            send: [
                raw::query("BEGIN"),
                raw::query("INSERT INTO handoff_rows VALUES (1)"),
                raw::msg(b'H', b"junk"),
            ]
            .concat(),
            read: 5,
        },
    ]
}

/// Sends what `leave` sends and reads as many messages as it reads: their transcript.
async fn leave_after(c: &mut Conn, leave: &Leave, what: &str) -> String {
    c.send(&leave.send).await;
    let mut msgs = Vec::new();
    for n in 0..leave.read {
        let m = tokio::time::timeout(std::time::Duration::from_secs(5), c.recv()).await;
        let m = m.unwrap_or_else(|_| panic!("{what}: no message {n}"));
        msgs.push(m.unwrap_or_else(|| panic!("{what}: closed")));
    }
    transcript(&msgs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_leaving_in_any_state_hands_nothing_on() {
    for mode in ["transaction", "session"] {
        let (topo, proxy) = pool_of_one(mode).await;
        for (i, leave) in ways_to_leave().into_iter().enumerate() {
            let what = format!("{mode} mode, {}", leave.name);
            // Postgres answers that much before the client leaves; so does pgdog.
            let mut directly = direct(&topo).await;
            let want = leave_after(&mut directly, &leave, &format!("{what}, directly")).await;
            drop(directly);
            let mut a = through_pgdog(&proxy).await;
            let got = leave_after(&mut a, &leave, &what).await;
            assert_eq!(got, want, "{what}");
            drop(a);
            // The next client's autocommit write is committed at once...
            let mut b = through_pgdog(&proxy).await;
            let table = format!("leak_{mode}_{i}");
            let created = exchange(
                &mut b,
                &raw::query(&format!("CREATE TABLE {table} (i int)")),
                1,
            )
            .await;
            assert_eq!(created, "C(CREATE TABLE) Z(I)", "{what}");
            drop(b);
            // ...so a third client sees it, and nothing the first one left uncommitted.
            let mut c = through_pgdog(&proxy).await;
            let seen = exchange(
                &mut c,
                &raw::query(&format!(
                    "SELECT (to_regclass('{table}') IS NOT NULL)::text || ' ' || \
                     (SELECT count(*) FROM handoff_rows)"
                )),
                1,
            )
            .await;
            assert_eq!(seen, "T D(true 0) C(SELECT 1) Z(I)", "{what}");
        }
    }
}

/// `SELECT pg_terminate_backend(pg_backend_pid())` as the client's query.
fn terminate_own_backend() -> Vec<u8> {
    raw::query("SELECT pg_terminate_backend(pg_backend_pid())")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_fatal_closes_the_session_that_lived_on_it() {
    let (topo, session) = pool_of_one("session").await;
    let mut direct = direct(&topo).await;
    let expected = exchange(&mut direct, &terminate_own_backend(), 1).await;
    assert_eq!(
        expected, "T D(t) E(FATAL/57P01)",
        "Postgres: the FATAL, then closed"
    );
    // Session mode: the FATAL unchanged, then the connection closes.
    let mut c = through_pgdog(&session).await;
    exchange(
        &mut c,
        &raw::query("SET application_name = 'fatal_test'"),
        1,
    )
    .await;
    assert_eq!(
        exchange(&mut c, &terminate_own_backend(), 1).await,
        expected
    );
    assert!(
        c.recv().await.is_none(),
        "session mode: the client is closed"
    );
    drop(session);

    // Transaction mode (functions trusted not to pin): one error for the failed statement, and
    // the client goes on...
    let general = format!("{TRUST}\ncheckout_timeout = 10000\nunknown_functions = \"trust\"");
    let txn = start(&topo, &general, 1);
    let mut c = through_pgdog(&txn).await;
    let answer = exchange(&mut c, &terminate_own_backend(), 1).await;
    assert_eq!(
        answer, "T D(t) E(ERROR/57P01) Z(I)",
        "transaction mode: one error"
    );
    let next = exchange(&mut c, &raw::query("SELECT 1"), 1).await;
    assert_eq!(next, "T D(1) C(SELECT 1) Z(I)");
    // ...unless it was pinned to its server by session state: that is gone, so is the client.
    let pinned = exchange(&mut c, &raw::query("CREATE TEMP TABLE pin_me (i int)"), 1).await;
    assert_eq!(pinned, "C(CREATE TABLE) Z(I)");
    assert_eq!(
        exchange(&mut c, &terminate_own_backend(), 1).await,
        expected
    );
    assert!(c.recv().await.is_none(), "a pinned client is closed");
    // The server was not banned for it: the next client is served.
    let mut d = through_pgdog(&txn).await;
    let next = exchange(&mut d, &raw::query("SELECT 1"), 1).await;
    assert_eq!(next, "T D(1) C(SELECT 1) Z(I)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_mode_prepared_statements_are_the_servers() {
    let (_topo, proxy) = pool_of_one("session").await;
    let c = connect(&proxy).await;
    exec(
        &c,
        "DROP TYPE IF EXISTS handoff_ty; CREATE TYPE handoff_ty AS (a int)",
    )
    .await;
    let sql = "SELECT ROW(1)::handoff_ty::text";
    let st = c.prepare(sql).await.expect("prepare");
    let names = "SELECT coalesce(string_agg(name, ','), '') FROM pg_prepared_statements";
    let listed = one(&c, names).await;
    assert!(
        !listed.is_empty() && !listed.contains("__pgdog"),
        "the client's own names: {listed}"
    );
    exec(&c, "DEALLOCATE ALL").await;
    assert_eq!(
        one(&c, names).await,
        "",
        "DEALLOCATE ALL reached the server"
    );
    drop(st);
    exec(
        &c,
        "DROP TYPE handoff_ty; CREATE TYPE handoff_ty AS (a int)",
    )
    .await;
    let again = c.prepare(sql).await.expect("prepare after DDL");
    let row = c.query_one(&again, &[]).await.expect("run after DDL");
    assert_eq!(row.get::<_, String>(0), "(1)");
}

/// The same exchanges, directly and through pgdog (each step: which client, what it sends, how
/// many ReadyForQuery it waits for; with a pool of one the clients share its server
/// connection): the transcripts must be equal.
async fn same_as_postgres(
    topo: &topology::Topology,
    proxy: &topology::Proxy,
    steps: &[(usize, Vec<u8>, usize)],
) {
    let clients = steps.iter().map(|s| s.0).max().unwrap_or(0) + 1;
    let (mut directly, mut pgdog) = (Vec::new(), Vec::new());
    for _ in 0..clients {
        directly.push(direct(topo).await);
        pgdog.push(through_pgdog(proxy).await);
    }
    for (i, (client, bytes, syncs)) in steps.iter().enumerate() {
        let want = exchange(&mut directly[*client], bytes, *syncs).await;
        let got = exchange(&mut pgdog[*client], bytes, *syncs).await;
        assert_eq!(got, want, "step {i} (client {client})");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_client_binds_its_own_unnamed_statement() {
    let (topo, proxy) = pool_of_one("transaction").await;
    let describe = raw::target(b'D', b'S', "");
    let bind_a = [raw::bind("", &["x"]), raw::execute(), raw::sync()].concat();
    let bind_c = [raw::bind("", &["4"]), raw::execute(), raw::sync()].concat();
    let steps = vec![
        // A parses in one round trip and binds in the next (pgx's describe-exec mode).
        (
            0,
            [
                raw::parse("", "select $1::text || '-a'"),
                describe.clone(),
                raw::sync(),
            ]
            .concat(),
            1,
        ),
        // B's own unnamed statement, with two parameters, on the one server connection.
        (
            1,
            [raw::parse("", "select $1::int + $2::int"), raw::sync()].concat(),
            1,
        ),
        (0, bind_a.clone(), 1),
        (0, [describe.clone(), raw::sync()].concat(), 1),
        // B has one too, and binds it.
        (
            1,
            [raw::bind("", &["1", "2"]), raw::execute(), raw::sync()].concat(),
            1,
        ),
        (0, bind_a.clone(), 1),
        // A simple query drops the client's unnamed statement, as directly.
        (0, raw::query("select 2"), 1),
        (0, bind_a.clone(), 1),
        (
            1,
            [raw::bind("", &["1", "2"]), raw::execute(), raw::sync()].concat(),
            1,
        ),
        // C never parsed one: B's, on the server, is not C's (26000, as directly)...
        (2, bind_c.clone(), 1),
        (
            1,
            [raw::parse("", "select $1::int * 10"), raw::sync()].concat(),
            1,
        ),
        (2, bind_c.clone(), 1),
        // ...also when an error makes the server skip what pgdog sent to make sure of it.
        (
            1,
            [raw::parse("", "select $1::int * 10"), raw::sync()].concat(),
            1,
        ),
        (2, [raw::bind("nope", &[]), bind_c.clone()].concat(), 1),
        (2, bind_c.clone(), 1),
        // A failed Parse of "" leaves the client none; a skipped one leaves its previous one.
        (0, [raw::parse("", "selec"), raw::sync()].concat(), 1),
        (0, bind_a.clone(), 1),
        (
            0,
            [raw::parse("", "select $1::text || '-a2'"), raw::sync()].concat(),
            1,
        ),
        (
            0,
            [
                raw::run_unnamed("select 1/0", &[]),
                raw::parse("", "select 3"),
                raw::sync(),
            ]
            .concat(),
            1,
        ),
        (0, bind_a.clone(), 1),
    ];
    same_as_postgres(&topo, &proxy, &steps).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_mode_unnamed_and_named_statements_as_postgres() {
    let (topo, proxy) = pool_of_one("session").await;
    let run = [raw::bind("", &[]), raw::execute(), raw::sync()].concat();
    let set_p = [
        raw::parse("p", "SET work_mem = '6MB'"),
        raw::bind("p", &[]),
        raw::execute(),
    ];
    let steps = vec![
        (0, [raw::parse("", "select 11"), raw::sync()].concat(), 1),
        // A named Parse that fails leaves the unnamed statement alone.
        (0, [raw::parse("bad", "selec"), raw::sync()].concat(), 1),
        (0, run.clone(), 1),
        // pgdog's own queries between requests (reading back a SET) do not drop it either.
        (0, [raw::parse("", "select 12"), raw::sync()].concat(), 1),
        (0, raw::query("SET work_mem = '5MB'"), 1),
        (0, [set_p.concat(), raw::sync()].concat(), 1),
        (0, [raw::parse("", "select 13"), raw::sync()].concat(), 1),
        (0, run.clone(), 1),
        (0, [raw::parse("q", "select 1"), raw::sync()].concat(), 1),
        (0, raw::query("DEALLOCATE q"), 1),
        (0, [raw::parse("q", "select 1"), raw::sync()].concat(), 1),
    ];
    same_as_postgres(&topo, &proxy, &steps).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_lost_with_their_server_are_not_defined() {
    let general = format!("{TRUST}\ncheckout_timeout = 10000\nunknown_functions = \"trust\"");
    let (_topo, proxy) = pgdog_after(&general, 1, "SELECT 1").await;
    let mut c = through_pgdog(&proxy).await;
    // The server dies before it reads the Parse: each request gets one error.
    let batch = [
        terminate_own_backend(),
        raw::parse("lost", "select 9"),
        raw::sync(),
    ]
    .concat();
    let answer = exchange(&mut c, &batch, 2).await;
    // (Two requests in flight may have opened a transaction: pgdog reports it failed.)
    assert_eq!(answer, "T D(t) E(ERROR/57P01) Z(E) E(ERROR/57P01) Z(E)");
    let rollback = exchange(&mut c, &raw::query("ROLLBACK"), 1).await;
    assert_eq!(rollback, "C(ROLLBACK) Z(I)");
    // "lost" does not exist: parsing it again is no redefinition.
    let again = [
        raw::parse("lost", "select 9"),
        raw::bind("lost", &[]),
        raw::execute(),
    ];
    let answer = exchange(&mut c, &[again.concat(), raw::sync()].concat(), 1).await;
    assert_eq!(answer, "1 2 D(9) C(SELECT 1) Z(I)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_lost_before_its_sync_is_reported_at_the_sync() {
    let general = format!("{TRUST}\nadmin_password = \"{ADMIN_PASSWORD}\"");
    let (topo, proxy) = pgdog_after(&general, 1, "CREATE TABLE handoff_rows (i int)").await;
    let mut c = through_pgdog(&proxy).await;
    let insert = [
        raw::run_unnamed("insert into handoff_rows values (5)", &[]),
        raw::flush(),
    ];
    c.send(&insert.concat()).await;
    let mut answers = Vec::new();
    for _ in 0..3 {
        answers.push(c.recv().await.expect("answer"));
    }
    assert_eq!(transcript(&answers), "1 2 C(INSERT 0 1)");
    // Its server connection ends while the implicit transaction waits for Sync...
    let mut admin_pg = direct(&topo).await;
    let kill = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                WHERE query LIKE 'insert into handoff_rows values (5)%'";
    assert_eq!(
        exchange(&mut admin_pg, &raw::query(kill), 1).await,
        "T D(t) C(SELECT 1) Z(I)"
    );
    // ...and pgdog has let it go before the client's Sync arrives.
    let pgdog_admin = admin(&proxy).await;
    eventually(
        "pgdog drops the lost server",
        std::time::Duration::from_secs(10),
        || async {
            let rows = pgdog_admin
                .simple_query("SHOW POOLS")
                .await
                .expect("SHOW POOLS");
            rows.iter().any(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => {
                    let at = r.columns().iter().position(|c| c.name() == "sv_active");
                    at.and_then(|i| r.get(i)) == Some("0")
                }
                _ => false,
            })
        },
    )
    .await;
    // The Sync does not report success: the insert was rolled back with the server.
    let synced = exchange(&mut c, &raw::sync(), 1).await;
    assert_eq!(synced, "E(ERROR/57P01) Z(I)");
    let rows = exchange(
        &mut admin_pg,
        &raw::query("SELECT count(*) FROM handoff_rows"),
        1,
    )
    .await;
    assert_eq!(rows, "T D(0) C(SELECT 1) Z(I)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_names_close_and_redefinition_as_postgres() {
    let (topo, proxy) = pool_of_one("transaction").await;
    let close = |name: &str| raw::target(b'C', b'S', name);
    let steps = vec![
        (0, [raw::parse("s", "select 1"), raw::sync()].concat(), 1),
        (0, [raw::parse("s", "select 2"), raw::sync()].concat(), 1),
        (0, [raw::parse("s", "select 1"), raw::sync()].concat(), 1),
        // Inside a transaction the redefinition fails it, as Postgres does.
        (0, raw::query("BEGIN"), 1),
        (
            0,
            [
                raw::parse("s", "select 3"),
                raw::bind("s", &[]),
                raw::execute(),
                raw::sync(),
            ]
            .concat(),
            1,
        ),
        (0, raw::query("ROLLBACK"), 1),
        // A Parse that fails defines nothing.
        (0, [raw::parse("bad", "selec 1"), raw::sync()].concat(), 1),
        (
            0,
            [
                raw::parse("bad", "select 5"),
                raw::bind("bad", &[]),
                raw::execute(),
                raw::sync(),
            ]
            .concat(),
            1,
        ),
        // Nor does one skipped after an error in its batch.
        (
            0,
            [
                raw::run_unnamed("select 1/0", &[]),
                raw::parse("skipped", "select 6"),
                raw::sync(),
            ]
            .concat(),
            1,
        ),
        (
            0,
            [raw::parse("skipped", "select 7"), raw::sync()].concat(),
            1,
        ),
        // Close always gets its CloseComplete, also queued behind a failing batch.
        (
            0,
            [
                raw::parse("c1", "select 1"),
                raw::parse("c2", "selec"),
                raw::sync(),
                close("c1"),
                close("c2"),
                close("never"),
                raw::sync(),
            ]
            .concat(),
            2,
        ),
        (0, raw::query("SET statement_timeout = '50ms'"), 1),
        (
            0,
            [
                raw::parse("t1", "select pg_sleep(0.3)"),
                raw::target(b'D', b'S', "t1"),
                raw::bind("t1", &[]),
                raw::execute(),
                raw::parse("t2", "select 1"),
                raw::target(b'D', b'S', "t2"),
                raw::sync(),
                close("t1"),
                close("t2"),
                raw::sync(),
            ]
            .concat(),
            2,
        ),
        (
            0,
            [close("s"), raw::parse("s", "select 8"), raw::sync()].concat(),
            1,
        ),
    ];
    same_as_postgres(&topo, &proxy, &steps).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_statements_are_planned_afresh_after_ddl() {
    let (_topo, proxy) = pool_of_one("transaction").await;
    let a = connect(&proxy).await;
    exec(
        &a,
        "CREATE TABLE ddl_t (a int); INSERT INTO ddl_t VALUES (1)",
    )
    .await;
    exec(&a, "CREATE TYPE ddl_enum AS ENUM ('x', 'y')").await;
    let sql = "SELECT * FROM ddl_t";
    let before = a.prepare(sql).await.expect("prepare");
    assert_eq!(a.query_one(&before, &[]).await.expect("run").len(), 1);
    // A statement whose parameter has the enum's type (fixed when it is parsed).
    let mut raw_client = through_pgdog(&proxy).await;
    let cast = |value: &str| {
        let run = [raw::bind("e", &[value]), raw::execute(), raw::sync()];
        [raw::parse("e", "SELECT $1::ddl_enum::text"), run.concat()].concat()
    };
    let first = exchange(&mut raw_client, &cast("x"), 1).await;
    assert_eq!(first, "1 2 D(x) C(SELECT 1) Z(I)");
    // DDL, then the same texts prepared again (by another client; by this one after
    // DEALLOCATE ALL, as psycopg does): they see the new catalog, as directly.
    exec(&a, "ALTER TABLE ddl_t ADD COLUMN b int").await;
    exec(
        &a,
        "DROP TYPE ddl_enum; CREATE TYPE ddl_enum AS ENUM ('x', 'z')",
    )
    .await;
    let b = connect(&proxy).await;
    let after = b.prepare(sql).await.expect("prepare after DDL");
    assert_eq!(
        b.query_one(&after, &[]).await.expect("run after DDL").len(),
        2
    );
    drop(b);
    let dealloc = exchange(&mut raw_client, &raw::query("DEALLOCATE ALL"), 1).await;
    assert_eq!(dealloc, "C(DEALLOCATE ALL) Z(I)");
    let again = exchange(&mut raw_client, &cast("z"), 1).await;
    assert_eq!(again, "1 2 D(z) C(SELECT 1) Z(I)");
}

/// SHOW POOLS' `banned` and `sv_active` of the one pool, through pgdog's admin database.
async fn pool_state(admin: &tokio_postgres::Client) -> (String, String) {
    let rows = admin.simple_query("SHOW POOLS").await.expect("SHOW POOLS");
    rows.iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some((
                r.get("banned").unwrap_or_default().to_string(),
                r.get("sv_active").unwrap_or_default().to_string(),
            )),
            _ => None,
        })
        .expect("a pool")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_clients_fatal_never_bans_its_server() {
    let general = format!(
        "{TRUST}\nadmin_password = \"{ADMIN_PASSWORD}\"\nunknown_functions = \"trust\"\n\
         checkout_timeout = 10000"
    );
    let (_topo, proxy) = pgdog_after(&general, 1, "CREATE TABLE handoff_rows (i int)").await;
    let admin = admin(&proxy).await;
    let idle_timeout = [
        raw::query("SET idle_in_transaction_session_timeout = '100ms'"),
        raw::query("BEGIN"),
    ]
    .concat();
    let copy_then_query = [
        raw::query("COPY handoff_rows FROM STDIN"),
        raw::copy_data(b"1\n"),
        raw::query("SELECT 1"),
    ]
    .concat();
    // What each client sends, and how many ReadyForQuery it waits for before the server ends
    // its connection (57P01, 25P03, 08P01).
    let cases: [(&str, Vec<u8>, usize); 3] = [
        ("its own backend terminated", terminate_own_backend(), 1),
        ("idle in transaction too long", idle_timeout, 2),
        ("a Query in the middle of COPY", copy_then_query, 0),
    ];
    for (what, bytes, syncs) in cases {
        let mut c = through_pgdog(&proxy).await;
        exchange(&mut c, &bytes, syncs).await;
        eventually(what, std::time::Duration::from_secs(10), || async {
            pool_state(&admin).await.1 == "0"
        })
        .await;
        assert_eq!(
            pool_state(&admin).await.0,
            "false",
            "{what}: the server was banned"
        );
        let mut next = through_pgdog(&proxy).await;
        let answer = exchange(&mut next, &raw::query("SELECT 1"), 1).await;
        assert_eq!(answer, "T D(1) C(SELECT 1) Z(I)", "{what}: the next client");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_in_the_middle_of_copy_ends_the_session_as_postgres() {
    let intruders = [
        ("Query", raw::query("SELECT 1")),
        ("Parse", raw::parse("", "SELECT 1")),
        ("Describe", raw::target(b'D', b'S', "nothing")),
        ("Execute", raw::execute()),
    ];
    for mode in ["transaction", "session"] {
        let (topo, proxy) = pool_of_one(mode).await;
        for (what, intruder) in &intruders {
            let bytes = [
                raw::query("COPY handoff_rows FROM STDIN"),
                raw::copy_data(b"1\n"),
                intruder.clone(),
            ]
            .concat();
            let mut directly = direct(&topo).await;
            directly.send(&bytes).await;
            let want = transcript(&directly.until_closed().await);
            assert_eq!(want, "G E(ERROR/08P01) E(FATAL/08P01)", "Postgres, {what}");
            let mut c = through_pgdog(&proxy).await;
            c.send(&bytes).await;
            assert_eq!(
                transcript(&c.until_closed().await),
                want,
                "{mode} mode, {what}"
            );
        }
        // Nothing of the COPY was committed, and the server connection was not reused as it was.
        let mut next = through_pgdog(&proxy).await;
        let rows = exchange(
            &mut next,
            &raw::query("SELECT count(*) FROM handoff_rows"),
            1,
        )
        .await;
        assert_eq!(rows, "T D(0) C(SELECT 1) Z(I)", "{mode} mode");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deallocate_as_a_prepared_statement_drops_only_the_clients_statements() {
    let (topo, proxy) = pool_of_one("transaction").await;
    let run = |name: &str| [raw::bind(name, &[]), raw::execute(), raw::sync()].concat();
    let dealloc = |sql: &str| {
        let bound = [
            raw::bind("", &[]),
            raw::describe_portal(),
            raw::execute(),
            raw::sync(),
        ];
        [raw::parse("", sql), bound.concat()].concat()
    };
    let steps = vec![
        (0, [raw::parse("s1", "select 1"), raw::sync()].concat(), 1),
        (0, run("s1"), 1),
        (0, [raw::parse("s2", "select 2"), raw::sync()].concat(), 1),
        // As psycopg sends it with prepare_threshold = 0.
        (0, dealloc("DEALLOCATE s2"), 1),
        (0, run("s2"), 1),
        (0, dealloc("DEALLOCATE ALL"), 1),
        (0, run("s1"), 1),
        // Another client on the same server connection still has the statement it prepares.
        (1, [raw::parse("t1", "select 1"), run("t1")].concat(), 1),
        (0, [raw::parse("s1", "select 1"), run("s1")].concat(), 1),
    ];
    same_as_postgres(&topo, &proxy, &steps).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_describe_or_close_subtype_is_an_error_as_postgres() {
    for mode in ["transaction", "session"] {
        let (topo, proxy) = pool_of_one(mode).await;
        for tag in [b'D', b'C'] {
            // Found by the protocol fuzzer: pgdog closed the connection here.
            let bytes = [
                raw::run_unnamed("select 1", &[]),
                raw::target(tag, b'X', "s"),
                raw::sync(),
                raw::query("SELECT 2"),
            ]
            .concat();
            let mut directly = direct(&topo).await;
            let want = exchange(&mut directly, &bytes, 2).await;
            assert_eq!(
                want,
                "1 2 D(1) C(SELECT 1) E(ERROR/08P01) Z(I) T D(2) C(SELECT 1) Z(I)"
            );
            let mut c = through_pgdog(&proxy).await;
            let got = exchange(&mut c, &bytes, 2).await;
            assert_eq!(got, want, "{mode} mode, {}", tag as char);
        }
    }
}

/// Found by the protocol fuzzer: an extended COPY FROM STDIN swallows the Sync sent after its
/// Execute; a simple query sent after the CopyDone, before any other Sync, leaves the server's
/// transaction state broken (its next statement fails with XX000). The client gets what
/// Postgres gives it; the next client on the one server connection gets a sound one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_after_an_unsynced_extended_copy_hands_nothing_on() {
    let (topo, proxy) = pool_of_one("transaction").await;
    let batch = [
        raw::run_unnamed("COPY handoff_rows FROM STDIN", &[]),
        raw::sync(),
        raw::copy_data(b"7\n"),
        raw::copy_done(),
        raw::query("SELECT 'queried'"),
        raw::sync(),
    ]
    .concat();
    let mut directly = direct(&topo).await;
    let want = exchange(&mut directly, &batch, 2).await;
    drop(directly);
    let mut a = through_pgdog(&proxy).await;
    assert_eq!(
        exchange(&mut a, &batch, 2).await,
        want,
        "the client's own answers"
    );
    let mut b = through_pgdog(&proxy).await;
    let next = exchange(&mut b, &raw::query("SELECT 'sound'"), 1).await;
    assert_eq!(
        next, "T D(sound) C(SELECT 1) Z(I)",
        "the next client on the server"
    );
}
