//! A slot created on the standby with an exported snapshot, while a writer keeps inserting on
//! the primary: a COPY under that snapshot from a normal connection plus the slot's stream
//! from its consistent point cover every row exactly once (no overlap, no gap).
use crate::replication_common;

use pgdog::replication::client::SnapshotAction;
use replication_common::*;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_copy_and_stream_cover_every_row_once() {
    let topo =
        replicated("CREATE TABLE snap (id int PRIMARY KEY); CREATE PUBLICATION pub FOR TABLE snap");

    // The writer: one row per transaction through a normal connection, until told to stop.
    let writer = sql_client(topo.primary()).await;
    let written = Arc::new(AtomicI64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let task = {
        let (written, stop) = (written.clone(), stop.clone());
        tokio::spawn(async move {
            let insert = writer
                .prepare("INSERT INTO snap VALUES ($1)")
                .await
                .unwrap();
            let mut id = 0i64;
            while !stop.load(Ordering::SeqCst) {
                id += 1;
                writer.execute(&insert, &[&(id as i32)]).await.unwrap();
                written.store(id, Ordering::SeqCst);
            }
            id
        })
    };
    let wait_written = |n: i64| {
        let written = written.clone();
        async move {
            tokio::time::timeout(DEADLINE, async {
                while written.load(Ordering::SeqCst) < n {
                    tokio::task::yield_now().await;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            })
            .await
            .unwrap_or_else(|_| panic!("the writer did not reach {n} rows"))
        }
    };
    wait_written(50).await;

    // The slot, created while rows keep arriving.
    let (client, slot) = standby_slot(&topo, "snap", true, SnapshotAction::Export, false).await;
    let snapshot = slot.snapshot.clone().expect("an exported snapshot");
    let at_slot = written.load(Ordering::SeqCst);

    // The COPY under the exported snapshot, on the standby, while the writer goes on.
    let reader = sql_client(topo.standby()).await;
    reader
        .batch_execute(&format!(
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT '{snapshot}'"
        ))
        .await
        .unwrap();
    let copied = {
        use futures_util::StreamExt;
        let stream = reader.copy_out("COPY snap (id) TO STDOUT").await.unwrap();
        futures_util::pin_mut!(stream);
        let mut text = Vec::new();
        while let Some(chunk) = stream.next().await {
            text.extend_from_slice(&chunk.unwrap());
        }
        String::from_utf8(text)
            .unwrap()
            .lines()
            .map(|l| l.parse::<i64>().unwrap())
            .collect::<Vec<_>>()
    };
    reader.batch_execute("COMMIT").await.unwrap();

    wait_written(at_slot + 100).await;
    stop.store(true, Ordering::SeqCst);
    let last = task.await.unwrap();

    // The stream from the consistent point, until the writer's last row.
    let mut c = Collector::start(client, &slot.name, slot.consistent_point, &options()).await;
    c.until(&format!("row {last}"), |m| inserted_ids(m).contains(&last))
        .await;
    let streamed = c.inserted_ids();

    let copied_set: BTreeSet<i64> = copied.iter().copied().collect();
    let streamed_set: BTreeSet<i64> = streamed.iter().copied().collect();
    assert_eq!(copied_set.len(), copied.len(), "COPY repeated a row");
    assert_eq!(
        streamed_set.len(),
        streamed.len(),
        "the stream repeated a row"
    );
    let overlap: Vec<_> = copied_set.intersection(&streamed_set).collect();
    assert!(
        overlap.is_empty(),
        "rows both copied and streamed: {overlap:?}"
    );
    let all: BTreeSet<i64> = copied_set.union(&streamed_set).copied().collect();
    assert_eq!(all, (1..=last).collect::<BTreeSet<_>>(), "a gap");
    // Both halves took part: the writer ran before and after the consistent point.
    assert!(
        !copied.is_empty() && !streamed.is_empty(),
        "copied {} streamed {}",
        copied.len(),
        streamed.len()
    );
    // The copy is exactly the rows up to some id, the stream exactly the rest.
    let max_copied = copied_set.iter().next_back().copied().unwrap_or(0);
    assert_eq!(copied_set, (1..=max_copied).collect::<BTreeSet<_>>());
}

/// `SNAPSHOT 'use'` on the standby: inside the replication connection's own REPEATABLE READ
/// transaction the slot's snapshot shows exactly the rows before its consistent point, and the
/// stream (after COMMIT) exactly the later ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_use_in_the_replication_connection() {
    let topo = replicated(
        "CREATE TABLE u (id int PRIMARY KEY); CREATE PUBLICATION pub FOR TABLE u;
         INSERT INTO u SELECT generate_series(1, 100)",
    );
    let mut client = connect(topo.standby()).await;
    client
        .query("BEGIN ISOLATION LEVEL REPEATABLE READ")
        .await
        .unwrap();
    let mut slot = pgdog::replication::client::SlotOptions::new("use1");
    slot.temporary = true;
    slot.snapshot = SnapshotAction::Use;
    let created = client
        .create_slot_on_standby(&slot, &target(topo.primary()), DEADLINE)
        .await
        .unwrap();
    assert_eq!(created.snapshot, None);
    topo.primary()
        .psql("INSERT INTO u SELECT generate_series(101, 110)")
        .unwrap();
    topo.wait_for_standby(DEADLINE).unwrap();
    let rows = client
        .query("SELECT count(*), max(id) FROM u")
        .await
        .unwrap();
    assert_eq!(
        rows,
        [vec![Some("100".to_string()), Some("100".to_string())]],
        "the slot's snapshot, not the standby's latest state"
    );
    client.query("COMMIT").await.unwrap();
    let mut c = Collector::start(client, "use1", created.consistent_point, &options()).await;
    c.until_ends(1).await;
    assert_eq!(c.inserted_ids(), (101..=110).collect::<Vec<_>>());
}
