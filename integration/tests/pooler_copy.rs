//! COPY as Postgres runs it, whatever the client sends while it runs: COPY FROM STDIN and COPY
//! TO STDOUT, in the simple and the extended protocol, interrupted by every other message a
//! client may send, failed by CopyFail or by bad data. Each exchange runs directly against
//! PostgreSQL and through pgdog (transaction mode, session mode, two shards), and the two
//! transcripts (message types, severities, SQLSTATEs, tags) must be equal.
use crate::common;
use common::raw::{self, Conn, Msg};
use topology::Topology;

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

const END: &str = "SELECT 'end'";

/// Sends `bytes` then a last query, and reads until that query's ReadyForQuery or until the
/// connection closes: the transcript of everything in between (`HANG` where nothing came for
/// 5 s).
async fn run(c: &mut Conn, bytes: &[u8]) -> String {
    c.send(&[bytes, &raw::query(END)].concat()).await;
    let mut msgs = Vec::new();
    let read = async {
        while let Some(m) = c.recv().await {
            let last = m.tag == b'Z'
                && msgs.last().is_some_and(|p: &Msg| p.tag == b'C')
                && msgs
                    .iter()
                    .rev()
                    .nth(1)
                    .is_some_and(|d: &Msg| d.text() == "end");
            msgs.push(m);
            if last {
                break;
            }
        }
    };
    let hung = tokio::time::timeout(std::time::Duration::from_secs(5), read)
        .await
        .is_err();
    let mut t = transcript(&msgs);
    if hung {
        t.push_str(" HANG");
    }
    t
}

fn copy_in() -> Vec<u8> {
    raw::query("COPY copy_rows FROM STDIN")
}

fn extended(sql: &str) -> Vec<u8> {
    [raw::parse("", sql), raw::bind("", &[]), raw::execute()].concat()
}

fn function_call() -> Vec<u8> {
    // FunctionCall of int4abs (OID 1251) with one text argument.
    let mut body = 1251i32.to_be_bytes().to_vec();
    body.extend_from_slice(&1i16.to_be_bytes());
    body.extend_from_slice(&0i16.to_be_bytes());
    body.extend_from_slice(&1i16.to_be_bytes());
    body.extend_from_slice(&2i32.to_be_bytes());
    body.extend_from_slice(b"-5");
    body.extend_from_slice(&0i16.to_be_bytes());
    raw::msg(b'F', &body)
}

/// Every exchange: a name and its bytes (the last query is added by `run`).
fn cases() -> Vec<(String, Vec<u8>)> {
    let row = || raw::copy_data(b"1\n");
    let mut cases: Vec<(String, Vec<u8>)> = vec![
        (
            "COPY FROM with Flush and Sync inside".into(),
            [
                copy_in(),
                row(),
                raw::flush(),
                raw::sync(),
                row(),
                raw::copy_done(),
            ]
            .concat(),
        ),
        (
            "COPY FROM failed by CopyFail".into(),
            [copy_in(), row(), raw::copy_fail("stop")].concat(),
        ),
        (
            "COPY FROM with bad data, then more data".into(),
            [copy_in(), raw::copy_data(b"x\n"), row(), raw::copy_done()].concat(),
        ),
        (
            "COPY FROM inside a transaction".into(),
            [
                raw::query("BEGIN"),
                copy_in(),
                row(),
                raw::copy_done(),
                raw::query("SELECT 1 FROM copy_rows WHERE i = 1 LIMIT 1"),
                raw::query("COMMIT"),
            ]
            .concat(),
        ),
        (
            "COPY FROM failing inside a transaction".into(),
            [
                raw::query("BEGIN"),
                copy_in(),
                raw::copy_fail("stop"),
                raw::query("SELECT 1"),
                raw::query("ROLLBACK"),
            ]
            .concat(),
        ),
        (
            "extended COPY FROM, Sync after Execute and after CopyDone".into(),
            [
                extended("COPY copy_rows FROM STDIN"),
                raw::sync(),
                row(),
                row(),
                raw::copy_done(),
                raw::sync(),
            ]
            .concat(),
        ),
        (
            "extended COPY FROM, Flush after Execute".into(),
            [
                extended("COPY copy_rows FROM STDIN"),
                raw::flush(),
                row(),
                raw::copy_done(),
                raw::sync(),
            ]
            .concat(),
        ),
        (
            "extended COPY FROM failed by CopyFail".into(),
            [
                extended("COPY copy_rows FROM STDIN"),
                raw::sync(),
                raw::copy_fail("stop"),
                raw::sync(),
            ]
            .concat(),
        ),
        (
            "COPY TO, then a query sent before its end".into(),
            [
                raw::query("COPY (SELECT generate_series(1, 3)) TO STDOUT"),
                raw::query("SELECT 2"),
            ]
            .concat(),
        ),
        (
            "COPY TO with CopyData, CopyDone and CopyFail from the client".into(),
            [
                raw::query("COPY (SELECT 1) TO STDOUT"),
                row(),
                raw::copy_done(),
                raw::copy_fail("ignored"),
            ]
            .concat(),
        ),
        (
            "extended COPY TO".into(),
            [
                extended("COPY (SELECT generate_series(1, 2)) TO STDOUT"),
                raw::sync(),
            ]
            .concat(),
        ),
        (
            "CopyData, CopyDone and CopyFail outside COPY".into(),
            [row(), raw::copy_done(), raw::copy_fail("x")].concat(),
        ),
    ];
    let intruders: Vec<(&str, Vec<u8>)> = vec![
        ("Query", raw::query("SELECT 1")),
        ("Parse", raw::parse("", "SELECT 1")),
        ("named Parse", raw::parse("copy_s1", "SELECT 1")),
        ("Bind", raw::bind("", &[])),
        ("Describe", raw::target(b'D', b'S', "nothing")),
        ("Execute", raw::execute()),
        ("Close", raw::target(b'C', b'S', "nothing")),
        ("FunctionCall", function_call()),
    ];
    for (name, intruder) in intruders {
        cases.push((
            format!("{name} during COPY FROM"),
            [copy_in(), row(), intruder.clone()].concat(),
        ));
        cases.push((
            format!("{name} during extended COPY FROM"),
            [
                extended("COPY copy_rows FROM STDIN"),
                raw::sync(),
                row(),
                intruder,
            ]
            .concat(),
        ));
    }
    cases
}

/// Each case directly on `direct` and through pgdog on `proxy`: equal transcripts; a fresh
/// connection for each (a case may end the connection).
async fn same_as_postgres(direct_port: u16, proxy: &topology::Proxy, what: &str) {
    let mut failures = Vec::new();
    for (name, bytes) in cases() {
        let mut directly = Conn::login(direct_port, "postgres", "postgres", None).await;
        let want = run(&mut directly, &bytes).await;
        let mut c = Conn::login(proxy.port, common::USER, common::DB, None).await;
        let got = run(&mut c, &bytes).await;
        if got != want {
            failures.push(format!("{name}:\n  postgres: {want}\n  pgdog:    {got}"));
        }
    }
    assert!(failures.is_empty(), "{what}:\n{}", failures.join("\n"));
}

/// The pool's one server connection was never handed on mid-COPY: a next client sees no row
/// of a COPY that did not finish, and the server answers it from an idle state.
async fn next_client_sees_a_clean_server(proxy: &topology::Proxy) {
    let mut next = Conn::login(proxy.port, common::USER, common::DB, None).await;
    let got = run(&mut next, &raw::query("SELECT 1")).await;
    assert_eq!(got, "T D(1) C(SELECT 1) Z(I) T D(end) C(SELECT 1) Z(I)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_interrupted_as_postgres_in_both_pooling_modes() {
    for mode in ["transaction", "session"] {
        let (topo, proxy) = common::pgdog_after(
            &format!("auth_type = \"trust\"\npooler_mode = \"{mode}\"\ncheckout_timeout = 10000"),
            1,
            "CREATE TABLE IF NOT EXISTS copy_rows (i int)",
        )
        .await;
        same_as_postgres(topo.primary().port, &proxy, &format!("{mode} mode")).await;
        next_client_sees_a_clean_server(&proxy).await;
    }
}

/// Two shards, each after `setup` (run directly as `postgres`).
async fn two_shards_with(setup: &str) -> Topology {
    let topo = Topology::shards(2).expect("topology");
    for node in topo.nodes() {
        let mut c = Conn::login(node.port, "postgres", "postgres", None).await;
        c.send(&raw::query(setup)).await;
        let answer = c.until_ready().await;
        assert!(answer.iter().all(|m| m.tag != b'E'), "{setup}");
    }
    topo
}

/// pgdog over the shards of `topo` (trust auth), with `tables`.
fn sharded_pgdog(topo: &Topology, tables: &str) -> topology::Proxy {
    let mut config = String::from("auth_type = \"trust\"\ncheckout_timeout = 10000\n");
    for (i, node) in topo.nodes().iter().enumerate() {
        config.push_str(&format!(
            "\n[[databases]]\nname = \"{}\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"postgres\"\nuser = \"postgres\"\nshard = {i}\n",
            common::DB,
            node.port
        ));
    }
    config.push('\n');
    config.push_str(tables);
    common::start_with(&config, &common::users(""))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_copy_interrupted_as_postgres() {
    let topo = two_shards_with("CREATE TABLE copy_rows (i int)").await;
    let tables = "[[sharded_tables]]\ndatabase = \"app\"\nname = \"copy_rows\"\ncolumn = \"i\"\n";
    let proxy = sharded_pgdog(&topo, tables);
    same_as_postgres(topo.nodes()[0].port, &proxy, "two shards").await;
    next_client_sees_a_clean_server(&proxy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_copy_of_a_query_reads_where_the_router_plans_it() {
    let topo = two_shards_with("CREATE TABLE copy_keys (i int, v text)").await;
    let tables = "[[sharded_tables]]\ndatabase = \"app\"\nname = \"copy_keys\"\ncolumn = \"i\"\n";
    let proxy = sharded_pgdog(&topo, tables);
    let mut c = Conn::login(proxy.port, common::USER, common::DB, None).await;
    let rows: String = (1..=20).map(|i| format!("{i}\trow {i}\n")).collect();
    assert_eq!(
        c.copy_in("COPY copy_keys FROM STDIN", rows.as_bytes(), 7)
            .await,
        Ok("COPY 20".into())
    );
    let lines = |data: &[u8]| {
        let mut l: Vec<String> = String::from_utf8_lossy(data)
            .lines()
            .map(String::from)
            .collect();
        l.sort();
        l
    };
    // A query with no table runs once, not once per shard.
    let (data, tag) = c
        .copy_out("COPY (SELECT generate_series(1, 3)) TO STDOUT")
        .await
        .unwrap();
    assert_eq!(
        (lines(&data), tag.as_str()),
        (vec!["1".into(), "2".into(), "3".into()], "COPY 3")
    );
    // One key: its shard only.
    let (data, tag) = c
        .copy_out("COPY (SELECT v FROM copy_keys WHERE i = 7) TO STDOUT")
        .await
        .unwrap();
    assert_eq!(
        (lines(&data), tag.as_str()),
        (vec!["row 7".into()], "COPY 1")
    );
    // No key: every shard's rows, each once.
    let (data, tag) = c
        .copy_out("COPY (SELECT i FROM copy_keys) TO STDOUT")
        .await
        .unwrap();
    let mut want: Vec<String> = (1..=20).map(|i| i.to_string()).collect();
    want.sort();
    assert_eq!((lines(&data), tag.as_str()), (want, "COPY 20"));
    // Rows that would need a merge (here: one row of each shard's first) are refused.
    for sql in [
        "COPY (SELECT i FROM copy_keys ORDER BY i LIMIT 1) TO STDOUT",
        "COPY (SELECT count(*) FROM copy_keys) TO STDOUT",
        "COPY (SELECT DISTINCT v IS NULL FROM copy_keys) TO STDOUT",
    ] {
        let err = c.copy_out(sql).await.expect_err(sql);
        assert!(err.contains("0A000"), "{sql}: {err}");
    }
}
