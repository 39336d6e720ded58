//! Changes made on the primary, streamed from a logical slot on the standby through pgdog's
//! replication client and decoded to the exact rows: INSERT / UPDATE / DELETE / TRUNCATE under
//! replica identity default, full and index; unchanged TOAST columns; a transaction larger
//! than `logical_decoding_work_mem` streamed in segments; two-phase transactions.
use crate::replication_common;

use pgdog::replication::client::{SnapshotAction, StartOptions, Streaming};
use pgdog::replication::pgoutput::LogicalMessage;
use replication_common::*;
use topology::Topology;

/// Streams with `opts` from a new temporary slot `name` on the standby of `topo` (a two-phase
/// slot when `opts.two_phase`), after running `session` on the replication connection if given.
async fn stream(
    topo: &Topology,
    name: &str,
    opts: &StartOptions,
    session: Option<&str>,
) -> Collector {
    let (mut client, slot) =
        standby_slot(topo, name, true, SnapshotAction::Nothing, opts.two_phase).await;
    if let Some(sql) = session {
        client.query(sql).await.unwrap();
    }
    Collector::start(client, &slot.name, slot.consistent_point, opts).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dml_under_each_replica_identity_decodes_exact_rows() {
    let topo = replicated(
        "CREATE TABLE t_default (id int PRIMARY KEY, v text);
         CREATE TABLE t_full (id int PRIMARY KEY, v text);
         ALTER TABLE t_full REPLICA IDENTITY FULL;
         CREATE TABLE t_index (a int NOT NULL, b int NOT NULL, v text);
         CREATE UNIQUE INDEX t_index_ab ON t_index (a, b);
         ALTER TABLE t_index REPLICA IDENTITY USING INDEX t_index_ab;
         CREATE TABLE unpublished (id int);
         CREATE PUBLICATION pub FOR TABLE t_default, t_full, t_index",
    );
    let mut c = stream(&topo, "dml", &options(), None).await;
    let p = topo.primary();
    for table in ["t_default", "t_full"] {
        p.psql(&format!(
            "INSERT INTO {table} VALUES (1, 'a'), (2, NULL);
             UPDATE {table} SET v = 'a2' WHERE id = 1;
             UPDATE {table} SET id = 3 WHERE id = 2;
             DELETE FROM {table} WHERE id = 1;"
        ))
        .unwrap();
    }
    p.psql(
        "INSERT INTO t_index VALUES (1, 1, 'x'), (1, 2, 'y');
         UPDATE t_index SET v = 'x2' WHERE b = 1;
         UPDATE t_index SET b = 3 WHERE b = 2;
         DELETE FROM t_index WHERE b = 1;",
    )
    .unwrap();
    p.psql("INSERT INTO unpublished VALUES (1)").unwrap();
    p.psql("TRUNCATE t_default, t_full").unwrap();
    c.until_ends(4).await;
    assert_eq!(
        c.render(),
        [
            "insert t_default (1,a)",
            "insert t_default (2,null)",
            // default identity: no old row when the key is unchanged, the old key otherwise
            "update t_default new=(1,a2)",
            "update t_default key=(2,null) new=(3,null)",
            "delete t_default key=(1,null)",
            "insert t_full (1,a)",
            "insert t_full (2,null)",
            // full identity: the whole old row
            "update t_full old=(1,a) new=(1,a2)",
            "update t_full old=(2,null) new=(3,null)",
            "delete t_full old=(1,a2)",
            "insert t_index (1,1,x)",
            "insert t_index (1,2,y)",
            "update t_index new=(1,1,x2)",
            "update t_index key=(1,2,null) new=(1,3,y)",
            "delete t_index key=(1,1,null)",
            "truncate t_default,t_full",
        ]
    );
    // The transaction on the unpublished table is skipped entirely: 4 begins, 4 commits.
    let begins = c
        .messages
        .iter()
        .filter(|(_, m)| matches!(m, LogicalMessage::Begin { .. }))
        .count();
    assert_eq!(begins, 4);
    let identities: Vec<(String, char)> = c
        .decoder
        .relations()
        .map(|r| (r.name.clone(), r.replica_identity as char))
        .collect();
    for (name, ident) in [("t_default", 'd'), ("t_full", 'f'), ("t_index", 'i')] {
        assert!(
            identities.contains(&(name.to_string(), ident)),
            "{identities:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unchanged_toast_column_is_marked_unchanged() {
    let topo = replicated(
        "CREATE TABLE toasty (id int PRIMARY KEY, big text, n int);
         ALTER TABLE toasty ALTER COLUMN big SET STORAGE EXTERNAL;
         CREATE PUBLICATION pub FOR TABLE toasty",
    );
    let mut c = stream(&topo, "toast", &options(), None).await;
    let p = topo.primary();
    p.psql("INSERT INTO toasty SELECT 1, string_agg(md5(i::text), '') , 0 FROM generate_series(1, 3000) i")
        .unwrap();
    p.psql("UPDATE toasty SET n = 1 WHERE id = 1").unwrap();
    p.psql("UPDATE toasty SET big = 'small' WHERE id = 1")
        .unwrap();
    c.until_ends(3).await;
    let rows = c.render();
    assert_eq!(rows.len(), 3, "{rows:?}");
    let expected = p
        .psql("SELECT string_agg(md5(i::text), '') FROM generate_series(1, 3000) i")
        .unwrap();
    assert_eq!(rows[0], format!("insert toasty (1,{expected},0)"));
    assert_eq!(
        rows[1], "update toasty new=(1,~,1)",
        "the TOAST value is not resent"
    );
    assert_eq!(rows[2], "update toasty new=(1,small,1)");
}

/// `logical_decoding_work_mem = 64kB` on the walsender: a 5000-row transaction is streamed in
/// segments (Stream Start / Stop) and committed with Stream Commit; a large rolled-back one
/// ends with Stream Abort; a small one still comes as Begin / Commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_transaction_is_streamed() {
    large_transaction(Streaming::On).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_transaction_is_streamed_parallel() {
    large_transaction(Streaming::Parallel).await
}

async fn large_transaction(streaming: Streaming) {
    let topo = replicated(
        "CREATE TABLE big (id int PRIMARY KEY, pad text); CREATE PUBLICATION pub FOR TABLE big",
    );
    let opts = StartOptions {
        streaming,
        ..options()
    };
    let work_mem = "SET logical_decoding_work_mem = '64kB'";
    let mut c = stream(&topo, "large", &opts, Some(work_mem)).await;
    let p = topo.primary();
    p.psql("INSERT INTO big SELECT i, repeat('x', 100) FROM generate_series(1, 5000) i")
        .unwrap();
    p.psql("BEGIN; INSERT INTO big SELECT i, repeat('y', 100) FROM generate_series(5001, 10000) i; ROLLBACK")
        .unwrap();
    p.psql("INSERT INTO big VALUES (0, 'small')").unwrap();
    c.until("the small commit", |m| {
        m.iter()
            .any(|(_, m)| matches!(m, LogicalMessage::Commit { .. }))
    })
    .await;

    let ids = c.inserted_ids();
    let (streamed, aborted, small) = {
        let kinds: Vec<&LogicalMessage> = c.messages.iter().map(|(_, m)| m).collect();
        let starts = kinds
            .iter()
            .filter(|m| matches!(m, LogicalMessage::StreamStart { .. }))
            .count();
        let commits = kinds
            .iter()
            .filter(|m| matches!(m, LogicalMessage::StreamCommit { .. }))
            .count();
        let aborts = kinds
            .iter()
            .filter(|m| matches!(m, LogicalMessage::StreamAbort { .. }))
            .count();
        assert!(starts >= 2, "several segments expected, got {starts}");
        (commits, aborts, ids.last().copied())
    };
    // The rolled-back transaction is streamed only if the walsender decodes it before its abort
    // record (PG16+ drops transactions it already knows aborted instead of streaming them).
    assert_eq!((streamed, small), (1, Some(0)));
    assert!(aborted <= 1, "{aborted} stream aborts");
    // Under parallel streaming (protocol 4) Stream Abort carries the abort LSN and time.
    let abort_info = c.messages.iter().find_map(|(_, m)| match m {
        LogicalMessage::StreamAbort { abort, .. } => Some(abort.is_some()),
        _ => None,
    });
    if aborted == 1 {
        assert_eq!(abort_info, Some(streaming == Streaming::Parallel));
    }
    // Every streamed insert carries its transaction's xid; the committed rows are exact.
    let committed_xid = c.messages.iter().find_map(|(_, m)| match m {
        LogicalMessage::StreamCommit { xid, .. } => Some(*xid),
        _ => None,
    });
    let mut committed: Vec<i64> = c
        .messages
        .iter()
        .filter_map(|(_, m)| match m {
            LogicalMessage::Insert { xid, new, .. } if *xid == committed_xid => {
                match new.columns.first() {
                    Some(pgdog::replication::pgoutput::ColumnValue::Text(t)) => {
                        std::str::from_utf8(t).ok()?.parse().ok()
                    }
                    _ => None,
                }
            }
            _ => None,
        })
        .collect();
    committed.sort();
    assert_eq!(committed, (1..=5000).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_phase_transactions() {
    let topo =
        replicated("CREATE TABLE tp (id int PRIMARY KEY); CREATE PUBLICATION pub FOR TABLE tp");
    let opts = StartOptions {
        two_phase: true,
        ..options()
    };
    let mut c = stream(&topo, "twophase", &opts, None).await;
    let p = topo.primary();
    p.psql("BEGIN; INSERT INTO tp VALUES (1); PREPARE TRANSACTION 'g1'")
        .unwrap();
    c.until_ends(1).await;
    p.psql("COMMIT PREPARED 'g1'").unwrap();
    p.psql("BEGIN; INSERT INTO tp VALUES (2); PREPARE TRANSACTION 'g2'")
        .unwrap();
    p.psql("ROLLBACK PREPARED 'g2'").unwrap();
    c.until_ends(4).await;
    let seq: Vec<String> = c
        .messages
        .iter()
        .filter_map(|(_, m)| match m {
            LogicalMessage::BeginPrepare(i) => Some(format!("begin_prepare {}", i.gid)),
            LogicalMessage::Prepare(i) => Some(format!("prepare {}", i.gid)),
            LogicalMessage::CommitPrepared { gid, .. } => Some(format!("commit_prepared {gid}")),
            LogicalMessage::RollbackPrepared { gid, .. } => {
                Some(format!("rollback_prepared {gid}"))
            }
            m => render(&c.decoder, m),
        })
        .collect();
    assert_eq!(
        seq,
        [
            "begin_prepare g1",
            "insert tp (1)",
            "prepare g1",
            "commit_prepared g1",
            "begin_prepare g2",
            "insert tp (2)",
            "prepare g2",
            "rollback_prepared g2",
        ]
    );
}
