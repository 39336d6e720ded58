//! An extended-protocol batch on a sharded database is one implicit transaction, as Postgres
//! runs it: Executes up to the Sync commit together at the Sync, on every shard they touched,
//! and are rolled back together when a later statement fails or the client leaves first.
//! Raw batches through pgdog against one Postgres holding all rows (rows of shard 0 and 2).
use crate::common::raw::{self, Conn};
use crate::sharding_common::*;
use std::time::Duration;
use topology::{Node, Topology};

/// Table `t` on every node of `nodes`.
fn create_table(nodes: &[Node]) {
    for n in nodes {
        n.psql("CREATE TABLE t (id bigint PRIMARY KEY)").unwrap();
    }
}

fn insert(id: i64) -> Vec<u8> {
    raw::run_unnamed(&format!("INSERT INTO t (id) VALUES ({id})"), &[])
}

/// Reads until `n` CommandCompletes (or an error) arrived.
async fn completes(c: &mut Conn, n: usize) -> String {
    let mut got = Vec::new();
    while got.iter().filter(|m: &&raw::Msg| m.tag == b'C').count() < n {
        let Some(m) = c.recv().await else { break };
        let error = m.tag == b'E';
        got.push(m);
        if error {
            break;
        }
    }
    raw::tags_and_codes(&got)
}

/// The batches on `port`: (1) two INSERTs on different shards, read, then the client leaves
/// before its Sync; (2) two INSERTs then a failing third statement, then Sync; (3) two INSERTs
/// then Sync. The transcripts of (2) and (3).
async fn batches(port: u16, user: &str, db: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut c = Conn::login(port, user, db, None).await;
    c.send(&[insert(-5), insert(150), raw::flush()].concat())
        .await;
    out.push(completes(&mut c, 2).await);
    drop(c);
    let mut c = Conn::login(port, user, db, None).await;
    let failing = [insert(-6), insert(160), insert(-6), raw::sync()].concat();
    c.send(&failing).await;
    out.push(raw::tags_and_codes(&c.until_ready().await));
    c.send(&[insert(-7), insert(170), raw::sync()].concat())
        .await;
    out.push(raw::tags_and_codes(&c.until_ready().await));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_without_sync_is_one_transaction_across_shards() {
    let shards = Topology::shards(3).expect("shards");
    let reference = Topology::single().expect("reference");
    create_table(shards.nodes());
    create_table(reference.nodes());
    for two_phase in [false, true] {
        let general = format!("two_phase_commit = {two_phase}");
        let proxy = start_proxy(&shards, &general, &three_ranges("t", "id", 100));
        let what = format!("two_phase_commit = {two_phase}");
        let direct = batches(reference.primary().port, "postgres", "postgres").await;
        let through = batches(proxy.port, USER, DB).await;
        assert_eq!(through, direct, "{what}: transcripts\n{}", proxy.log());
        // The client that left: its transaction is rolled back on every shard.
        for node in shards.nodes() {
            topology::wait_until(
                "no transaction left open on the shards",
                Duration::from_secs(10),
                Duration::from_millis(20),
                || {
                    Ok(node.psql("SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'")? == "0")
                },
            )
            .unwrap();
        }
        let rows = |nodes: &[Node]| {
            let mut ids: Vec<i64> = nodes
                .iter()
                .flat_map(|n| {
                    n.psql("SELECT coalesce(string_agg(id::text, ' '), '') FROM t")
                        .unwrap()
                        .split_whitespace()
                        .map(|s| s.parse::<i64>().unwrap())
                        .collect::<Vec<_>>()
                })
                .collect();
            ids.sort();
            ids
        };
        assert_eq!(
            rows(shards.nodes()),
            rows(reference.nodes()),
            "{what}: rows"
        );
        assert_eq!(rows(shards.nodes()), vec![-7, 170], "{what}: rows");
        for n in shards.nodes().iter().chain(reference.nodes()) {
            n.psql("TRUNCATE t").unwrap();
        }
        drop(proxy);
    }
}
