//! The client's unnamed statement in transaction mode with `cache_unnamed_statements` (the
//! default): a repeated one runs from a statement pgdog already prepared on the server (the
//! server skips the parse), while each client keeps Postgres' meaning of its own unnamed
//! statement. Every sequence runs directly against PostgreSQL and through pgdog, and the
//! answers (message tags, values, SQLSTATEs) must match.
use crate::common;
use common::raw::{self, Conn};
use common::*;

/// Sends `msgs` and returns the answers up to ReadyForQuery, as "tags|values|sqlstate".
async fn answer(c: &mut Conn, msgs: &[Vec<u8>]) -> String {
    answers(c, msgs, 1).await
}

/// Parse of the unnamed statement as `sql`, then Sync.
fn parsed(sql: &str) -> [Vec<u8>; 2] {
    [raw::parse("", sql), raw::sync()]
}

fn run() -> Vec<Vec<u8>> {
    vec![raw::bind("", &[]), raw::execute(), raw::sync()]
}

/// The sequences a client can send about its unnamed statement, each with its answer.
async fn sequences(a: &mut Conn, b: &mut Conn) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut step = |what: &str, got: String| out.push((what.to_string(), got));
    // Parsed in one round trip, bound in the next (pgx's describe-exec), by two clients.
    let parse_a = [raw::parse("", "SELECT 'a'::text"), raw::sync()];
    step("a parses", answer(a, &parse_a).await);
    let parse_b = [raw::parse("", "SELECT 'b'::text"), raw::sync()];
    step("b parses", answer(b, &parse_b).await);
    step("a runs its own", answer(a, &run()).await);
    step("b runs its own", answer(b, &run()).await);
    // Described: parameters and columns.
    let describe = [
        raw::parse("", "SELECT $1::int + 1 AS n"),
        raw::target(b'D', b'S', ""),
        raw::sync(),
    ];
    step("parse and describe", answer(a, &describe).await);
    let with_param = vec![raw::bind("", &["41"]), raw::execute(), raw::sync()];
    step("bound with a parameter", answer(a, &with_param).await);
    // A repeated Parse of the same text (the cached path), many times.
    for i in 0..3 {
        let mut again = vec![raw::parse("", "SELECT $1::int + 1 AS n")];
        again.append(&mut with_param.clone());
        step(&format!("parsed again {i}"), answer(a, &again).await);
    }
    // A simple query drops it.
    step("simple query", answer(a, &[raw::query("SELECT 1")]).await);
    step("run after a simple query", answer(a, &run()).await);
    // Close drops it.
    step(
        "b closes",
        answer(b, &[raw::target(b'C', b'S', ""), raw::sync()]).await,
    );
    step("b runs after close", answer(b, &run()).await);
    // A Parse that fails leaves none.
    step("a parses again", answer(a, &parsed("SELECT 7")).await);
    step("failed parse", answer(a, &parsed("SELEC 8")).await);
    step("run after a failed parse", answer(a, &run()).await);
    // A Parse skipped after an earlier error keeps the one before it.
    step("a parses first", answer(a, &parsed("SELECT 'first'")).await);
    let skipped = [
        raw::parse("broken", "SELEC 9"),
        raw::parse("", "SELECT 'second'"),
        raw::sync(),
    ];
    step("parse skipped after an error", answer(a, &skipped).await);
    step("run after the skipped parse", answer(a, &run()).await);
    // The same once the statement is known to the server (pgdog answers the Parse itself).
    step(
        "a parses second",
        answer(a, &parsed("SELECT 'second'")).await,
    );
    step(
        "a parses first again",
        answer(a, &parsed("SELECT 'first'")).await,
    );
    step("known parse skipped", answer(a, &skipped).await);
    step("run after the known skipped parse", answer(a, &run()).await);
    // In one pipeline: two unnamed statements one after the other.
    let mut pipeline = vec![raw::parse("", "SELECT 'x'::text")];
    pipeline.extend([raw::bind("", &[]), raw::execute()]);
    pipeline.extend([
        raw::parse("", "SELECT 'y'::text"),
        raw::bind("", &[]),
        raw::execute(),
    ]);
    pipeline.push(raw::sync());
    step("two in one pipeline", answer(b, &pipeline).await);
    // Two batches in one write: the first fails, the second's statement is the one left.
    let batches = [
        raw::parse("", "SELEC 1"),
        raw::sync(),
        raw::parse("", "SELECT 'kept'"),
        raw::sync(),
    ];
    step("failed batch, then another", answers(b, &batches, 2).await);
    step("run the later batch's statement", answer(b, &run()).await);
    // The same failing text twice in one write: both fail.
    let mut twice = vec![
        raw::parse("", "SELEC 2"),
        raw::sync(),
        raw::parse("", "SELEC 2"),
    ];
    twice.extend(run());
    step("a failing text twice", answers(b, &twice, 2).await);
    // A new text twice in one write: both run.
    let mut new_twice = vec![raw::parse("", "SELECT 'new'::text"), raw::sync()];
    new_twice.extend([raw::parse("", "SELECT 'new'::text"), raw::bind("", &[])]);
    new_twice.extend([raw::execute(), raw::sync()]);
    step("a new text twice", answers(b, &new_twice, 2).await);
    // A skipped Parse, then a simple query in the same write: the query drops the statement.
    step("b parses", answer(b, &parsed("SELECT 5")).await);
    let skipped_then_query = [
        raw::bind("nosuch", &[]),
        raw::parse("", "SELECT 6"),
        raw::sync(),
        raw::query("SELECT 1"),
    ];
    step(
        "skipped, then a query",
        answers(b, &skipped_then_query, 2).await,
    );
    step("run after that query", answer(b, &run()).await);
    // DEALLOCATE ALL (run from a named statement) leaves the unnamed statement alone.
    step("b parses 7", answer(b, &parsed("SELECT 7")).await);
    let dealloc = [
        raw::parse("d", "DEALLOCATE ALL"),
        raw::bind("d", &[]),
        raw::execute(),
        raw::sync(),
    ];
    step("deallocate all", answer(b, &dealloc).await);
    step("run after deallocate all", answer(b, &run()).await);
    step(
        "deallocate \"\"",
        answer(b, &[raw::query("DEALLOCATE \"\"")]).await,
    );
    // A Parse of "" that pgdog answers itself replaces the statement too.
    step("b parses 8", answer(b, &parsed("SELECT 8")).await);
    step("parse a LISTEN", answer(b, &parsed("LISTEN ch")).await);
    step(
        "close it",
        answer(b, &[raw::target(b'C', b'S', ""), raw::sync()]).await,
    );
    step("run after closing the LISTEN", answer(b, &run()).await);
    out
}

/// [`answer`] for `batches` ReadyForQuery-ended answers, joined by " / ".
async fn answers(c: &mut Conn, msgs: &[Vec<u8>], batches: usize) -> String {
    c.send(&msgs.concat()).await;
    let mut all = Vec::new();
    for _ in 0..batches {
        let r = c.until_ready().await;
        let values: Vec<String> = r
            .iter()
            .filter(|m| m.tag == b'D')
            .map(|m| m.text())
            .collect();
        let code = r.iter().find(|m| m.tag == b'E').and_then(|m| m.sqlstate());
        all.push(format!(
            "{}|{}|{}",
            raw::tags(&r),
            values.join(","),
            code.unwrap_or_default()
        ));
    }
    all.join(" / ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unnamed_statements_answer_as_postgres_and_are_parsed_once() {
    let (topo, proxy) = pgdog("auth_type = \"trust\"", 1);
    let direct = topo.primary().port;
    let mut a = Conn::login(direct, "postgres", "postgres", None).await;
    let mut b = Conn::login(direct, "postgres", "postgres", None).await;
    let expected = sequences(&mut a, &mut b).await;
    let mut a = Conn::login(proxy.port, USER, DB, None).await;
    let mut b = Conn::login(proxy.port, USER, DB, None).await;
    let got = sequences(&mut a, &mut b).await;
    for (e, g) in expected.iter().zip(&got) {
        assert_eq!(e, g, "direct vs through pgdog");
    }
    assert_eq!(expected.len(), got.len());
    // Pool of 1: the one server connection holds the cached statement under pgdog's name.
    let listed = answer(
        &mut a,
        &[raw::query(
            "SELECT statement FROM pg_prepared_statements \
             WHERE name LIKE '\\_\\_pgdog\\_%' AND statement LIKE 'SELECT $1::int + 1%'",
        )],
    )
    .await;
    assert_eq!(
        listed, "TDCZ|SELECT $1::int + 1 AS n|",
        "pg_prepared_statements"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unnamed_statements_stay_unnamed_when_the_cache_is_off() {
    let (_topo, proxy) = pgdog("auth_type = \"trust\"\ncache_unnamed_statements = false", 1);
    let mut a = Conn::login(proxy.port, USER, DB, None).await;
    let parse = [raw::parse("", "SELECT $1::int + 1 AS n"), raw::sync()];
    assert_eq!(answer(&mut a, &parse).await, "1Z||");
    let with_param = [raw::bind("", &["1"]), raw::execute(), raw::sync()];
    assert_eq!(answer(&mut a, &with_param).await, "2DCZ|2|");
    let listed = answer(
        &mut a,
        &[raw::query("SELECT count(*) FROM pg_prepared_statements")],
    )
    .await;
    assert_eq!(listed, "TDCZ|0|");
}

/// Clients with different settings never share a statement: parse analysis reads TimeZone
/// (a timestamptz literal without an offset is read in the session's zone when parsed).
async fn zones(a: &mut Conn, b: &mut Conn) -> Vec<String> {
    let sql = "SELECT '2000-01-02 03:00:00'::timestamptz::text";
    let mut out = Vec::new();
    for (c, zone) in [(&mut *a, "UTC"), (&mut *b, "Asia/Tokyo")] {
        out.push(answer(c, &[raw::query(&format!("SET TimeZone TO '{zone}'"))]).await);
        for _ in 0..2 {
            out.push(answer(c, &[raw::run_unnamed(sql, &[]), raw::sync()]).await);
        }
    }
    // Changed inside a transaction, for the transaction or for the session after it.
    for set in [
        "BEGIN; SET LOCAL TimeZone TO 'Asia/Kolkata'",
        "BEGIN; SET TimeZone TO 'America/New_York'",
    ] {
        out.push(answer(a, &[raw::query(set)]).await);
        out.push(answer(a, &[raw::run_unnamed(sql, &[]), raw::sync()]).await);
        out.push(answer(a, &[raw::query("COMMIT")]).await);
        out.push(answer(a, &[raw::run_unnamed(sql, &[]), raw::sync()]).await);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_with_other_settings_do_not_share_a_statement() {
    let (topo, proxy) = pgdog("auth_type = \"trust\"", 1);
    let direct = topo.primary().port;
    let mut a = Conn::login(direct, "postgres", "postgres", None).await;
    let mut b = Conn::login(direct, "postgres", "postgres", None).await;
    let expected = zones(&mut a, &mut b).await;
    assert!(expected[5].contains("03:00:00+09"), "{expected:?}");
    let mut a = Conn::login(proxy.port, USER, DB, None).await;
    let mut b = Conn::login(proxy.port, USER, DB, None).await;
    assert_eq!(
        zones(&mut a, &mut b).await,
        expected,
        "direct vs through pgdog"
    );
}
