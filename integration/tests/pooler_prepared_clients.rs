//! Shared prepared statements (transaction mode) seen from real drivers, compared with the
//! same driver straight on PostgreSQL: asyncpg (which re-prepares by itself after a stale
//! plan) and psycopg 3 with server-side prepare on every statement
//! (`prepare_threshold=0`) sends DEALLOCATE ALL and DISCARD ALL as prepared statements and
//! re-prepares after DDL; DDL that does not go through pgdog leaves pgdog's statements with
//! stale plans (0A000 `cached plan must not change result type`), which pgdog prepares again.
use crate::common;
use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psycopg_prepare_everything_as_directly() {
    let (topo, proxy) = pgdog("pooler_mode = \"transaction\"", 1);
    let direct = format!(
        "postgres://postgres@127.0.0.1:{}/postgres",
        topo.primary().port
    );
    let through = format!("postgres://{USER}:{PASSWORD}@127.0.0.1:{}/{DB}", proxy.port);
    let (ok, want) = python_client("psycopg_prepared.py", &[&direct, &direct]);
    assert!(ok, "directly against Postgres: {want}");
    let (ok, got) = python_client("psycopg_prepared.py", &[&through, &direct]);
    assert!(ok, "through pgdog: {got}");
    assert_eq!(got, want, "through pgdog, then directly");
    // The steps that broke before: another client's DEALLOCATE ALL and DISCARD ALL, and a
    // statement prepared after DDL that did not go through pgdog.
    for line in [
        "other again: [(1,)]",
        "one DISCARD ALL: DISCARD ALL",
        "third select * after outside ALTER: [(1, 7, 8)]",
    ] {
        assert!(want.lines().any(|l| l == line), "{line}: {want}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asyncpg_statements_as_directly() {
    let (topo, proxy) = pgdog("pooler_mode = \"transaction\"", 1);
    let direct = format!(
        "postgres://postgres@127.0.0.1:{}/postgres",
        topo.primary().port
    );
    let through = format!("postgres://{USER}:{PASSWORD}@127.0.0.1:{}/{DB}", proxy.port);
    let (ok, want) = python_client("asyncpg_prepared.py", &[&direct, &direct]);
    assert!(ok, "directly against Postgres: {want}");
    let (ok, got) = python_client("asyncpg_prepared.py", &[&through, &direct]);
    assert!(ok, "through pgdog: {got}");
    assert_eq!(got, want, "through pgdog, then directly");
    assert!(
        want.lines()
            .any(|l| l == "third select * after outside ALTER: [(1, 7, 8)]"),
        "{want}"
    );
}
