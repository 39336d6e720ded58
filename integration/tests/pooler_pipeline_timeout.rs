//! A statement timeout that fires between a Parse and its Describe (the Describe reaches the
//! server 200 ms after the Parse, under `statement_timeout = '100ms'`): the batch gets 57014
//! where Postgres gives it, and the client's next batches stay in step (a driver's suite once
//! got the aborted batch's ParameterDescription in its next batch). Raw protocol, named and
//! unnamed statements, session and transaction mode, against Postgres' own transcripts.
use crate::common;
use common::raw::{self, Conn};
use common::*;
use std::time::Duration;

/// The delayed batch's shape: what goes before the pause and what after it.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// Parse; Describe, Sync.
    ParseThenDescribe,
    /// Parse, Flush; Describe, Sync.
    FlushedParse,
    /// A first query run, Parse; Describe, Bind, Execute, Sync.
    SecondQuery,
}

/// The transcripts (one per round trip) of `shape` on `port`, then of the batches after it.
async fn transcript(port: u16, user: &str, db: &str, name: &str, shape: Shape) -> Vec<String> {
    let mut c = Conn::login(port, user, db, None).await;
    let mut out = Vec::new();
    c.send(&raw::query("SET statement_timeout = '100ms'")).await;
    out.push(raw::tags_and_codes(&c.until_ready().await));
    let (before, after) = match shape {
        Shape::ParseThenDescribe => (
            raw::parse(name, "SELECT $1::int AS x"),
            [raw::target(b'D', b'S', name), raw::sync()].concat(),
        ),
        Shape::FlushedParse => (
            [raw::parse(name, "SELECT $1::int AS x"), raw::flush()].concat(),
            [raw::target(b'D', b'S', name), raw::sync()].concat(),
        ),
        Shape::SecondQuery => (
            [
                raw::run_unnamed("SELECT 1 AS one", &[]),
                raw::parse(name, "SELECT $1::int AS x"),
            ]
            .concat(),
            [
                raw::target(b'D', b'S', name),
                raw::bind(name, &["1"]),
                raw::execute(),
                raw::sync(),
            ]
            .concat(),
        ),
    };
    c.send(&before).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    c.send(&after).await;
    out.push(raw::tags_and_codes(&c.until_ready().await));
    c.send(&raw::query("SET statement_timeout = 0")).await;
    out.push(raw::tags_and_codes(&c.until_ready().await));
    let next = if name.is_empty() { "" } else { "s2" };
    let describe = [
        raw::parse(next, "SELECT $1::int AS y"),
        raw::target(b'D', b'S', next),
        raw::sync(),
    ];
    c.send(&describe.concat()).await;
    out.push(raw::tags_and_codes(&c.until_ready().await));
    c.send(&[raw::bind(next, &["5"]), raw::execute(), raw::sync()].concat())
        .await;
    out.push(raw::tags_and_codes(&c.until_ready().await));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_timeout_between_parse_and_describe_keeps_the_pipeline_in_step() {
    for mode in ["session", "transaction"] {
        let general = format!("auth_type = \"trust\"\npooler_mode = \"{mode}\"");
        let (topo, proxy) = pgdog(&general, 2);
        for name in ["", "s1"] {
            for shape in [
                Shape::ParseThenDescribe,
                Shape::FlushedParse,
                Shape::SecondQuery,
            ] {
                let what = format!("{mode} mode, statement {name:?}, {shape:?}");
                let direct =
                    transcript(topo.primary().port, "postgres", "postgres", name, shape).await;
                let through = transcript(proxy.port, USER, DB, name, shape).await;
                assert!(direct[1].contains("E57014"), "{what}: Postgres {direct:?}");
                if mode == "session" {
                    assert_eq!(through, direct, "{what}");
                    continue;
                }
                // Transaction mode may answer a Parse of a statement it already prepared
                // without the server (no parse runs, so no timeout can fire): the delayed batch
                // is then answered as if it had been quick. Everything after it is Postgres'.
                let quick = direct[1].replace("E57014", "").split_whitespace().count() > 0;
                assert!(
                    through[1] == direct[1] || (quick && !through[1].contains('E')),
                    "{what}: {through:?} vs Postgres {direct:?}"
                );
                assert_eq!(through[2..], direct[2..], "{what}: the batches after it");
            }
        }
    }
}
