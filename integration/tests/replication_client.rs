//! pgdog's replication-protocol client against real PostgreSQL 18 (primary + streaming
//! standby): commands and their errors, slot creation on the standby (nudged, and really
//! cancelled at its deadline), binary values, and a restart from the confirmed LSN that
//! delivers nothing twice and loses nothing.
use crate::replication_common;

use pgdog::replication::client::{
    parse_lsn, ReplicationError, SlotOptions, SnapshotAction, StartOptions,
};
use replication_common::*;
use std::time::Duration;
use topology::wait_until;

/// The SQLSTATE of a server error inside a replication error.
fn sqlstate(e: &ReplicationError) -> String {
    match e {
        ReplicationError::Command { source, .. } | ReplicationError::Stream { source, .. } => {
            source.code()
        }
        other => panic!("not a server error: {other}"),
    }
}

/// Waits until no connection holds the standby's slot `slot`.
fn wait_released(topo: &topology::Topology, slot: &str) {
    let sql = format!("SELECT active FROM pg_replication_slots WHERE slot_name = '{slot}'");
    wait_until(
        "the slot to be released",
        DEADLINE,
        Duration::from_millis(20),
        || Ok(topo.standby().psql(&sql)? == "f"),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identify_system_on_primary_and_standby() {
    let topo = replicated("");
    let mut primary = connect(topo.primary()).await;
    let mut standby = connect(topo.standby()).await;
    let p = primary.identify_system().await.unwrap();
    let s = standby.identify_system().await.unwrap();
    assert_eq!(p.system_id, s.system_id, "a standby shares the system id");
    assert!(p.system_id.parse::<u64>().is_ok(), "{p:?}");
    assert_eq!((p.timeline, s.timeline), (1, 1));
    assert_eq!(p.dbname.as_deref(), Some("postgres"));
    let current = parse_lsn(
        &topo
            .primary()
            .psql("SELECT pg_current_wal_flush_lsn()")
            .unwrap(),
    )
    .unwrap();
    assert!(
        p.xlogpos > 0 && p.xlogpos <= current,
        "{p:?} vs {current:X}"
    );
    assert!(s.xlogpos > 0, "{s:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slot_commands_and_server_errors() {
    let topo =
        replicated("CREATE TABLE t (id int PRIMARY KEY); CREATE PUBLICATION pub FOR TABLE t");
    let mut c = connect(topo.primary()).await;

    let mut slot = SlotOptions::new("p1");
    slot.snapshot = SnapshotAction::Export;
    let created = c.create_slot(&slot).await.unwrap();
    assert_eq!(created.name, "p1");
    assert!(created.consistent_point > 0);
    assert!(created.snapshot.is_some(), "{created:?}");
    assert_eq!(created.plugin.as_deref(), Some("pgoutput"));

    // Errors from the server are errors with their SQLSTATE, and the connection stays usable.
    let dup = c.create_slot(&SlotOptions::new("p1")).await.unwrap_err();
    assert_eq!(sqlstate(&dup), "42710", "{dup}");
    assert!(
        dup.to_string().contains("CREATE_REPLICATION_SLOT p1"),
        "{dup}"
    );
    let missing = c.start("nope", 0, &options()).await.unwrap_err();
    assert_eq!(sqlstate(&missing), "42704", "{missing}");
    assert!(!c.is_streaming());

    // Refused locally, before the server sees them.
    let bad = StartOptions::new(5, &["pub"]);
    assert!(matches!(
        c.start("p1", 0, &bad).await,
        Err(ReplicationError::Option(_))
    ));
    assert!(matches!(
        c.create_slot(&SlotOptions::new("Bad Name")).await,
        Err(ReplicationError::Option(_))
    ));

    // While streaming, commands are refused; after a clean stop they run again.
    c.start("p1", 0, &options()).await.unwrap();
    assert!(matches!(
        c.identify_system().await,
        Err(ReplicationError::State(_))
    ));
    c.stop().await.unwrap();
    c.identify_system().await.unwrap();
    c.drop_slot("p1", true).await.unwrap();
    assert_eq!(
        topo.primary()
            .psql("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'p1'")
            .unwrap(),
        "0"
    );
    let gone = c.drop_slot("p1", true).await.unwrap_err();
    assert_eq!(sqlstate(&gone), "42704", "{gone}");
}

/// An open transaction with an xid on the primary keeps a standby slot from reaching a
/// consistent point however often the primary is nudged: the create must hit its deadline,
/// be cancelled on the server (the backend goes idle, the slot never appears), and leave the
/// connection usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standby_slot_create_is_cancelled_at_deadline() {
    let topo = replicated("CREATE TABLE blocker (id int)");
    let blocker = sql_client(topo.primary()).await;
    blocker
        .batch_execute("BEGIN; INSERT INTO blocker VALUES (1)")
        .await
        .unwrap();

    let mut client = connect(topo.standby()).await;
    let pid = client.backend_pid();
    let started = std::time::Instant::now();
    let err = client
        .create_slot_on_standby(
            &SlotOptions::new("never"),
            &target(topo.primary()),
            Duration::from_secs(2),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, ReplicationError::SlotTimeout { .. }), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );

    // The server stopped waiting: the walsender is idle and the connection answers.
    wait_until(
        "the walsender to go idle",
        DEADLINE,
        Duration::from_millis(20),
        || {
            Ok(topo.standby().psql(&format!(
                "SELECT state FROM pg_stat_activity WHERE pid = {pid}"
            ))? == "idle")
        },
    )
    .unwrap();
    client.identify_system().await.unwrap();

    // Even once the blocker ends and the primary logs snapshots, no slot appears.
    blocker.batch_execute("COMMIT").await.unwrap();
    for _ in 0..5 {
        topo.primary()
            .psql("SELECT pg_log_standby_snapshot()")
            .unwrap();
    }
    topo.wait_for_standby(DEADLINE).unwrap();
    assert_eq!(
        topo.standby()
            .psql("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'never'")
            .unwrap(),
        "0"
    );
    // And the same connection can now create a slot.
    let created = client
        .create_slot_on_standby(
            &SlotOptions::new("later"),
            &target(topo.primary()),
            DEADLINE,
        )
        .await
        .unwrap();
    assert_eq!(created.name, "later");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_option_sends_binary_values() {
    let topo = replicated(
        "CREATE TABLE b (id int PRIMARY KEY, n bigint, s text); CREATE PUBLICATION pub FOR TABLE b",
    );
    let (client, slot) = standby_slot(&topo, "bin", true, SnapshotAction::Nothing, false).await;
    let mut opts = options();
    opts.binary = true;
    let mut c = Collector::start(client, &slot.name, slot.consistent_point, &opts).await;
    topo.primary()
        .psql("INSERT INTO b VALUES (7, -2, 'hi')")
        .unwrap();
    c.until_ends(1).await;
    assert_eq!(
        c.render(),
        ["insert b (0x00000007,0xfffffffffffffffe,0x6869)"]
    );
}

/// Ten transactions; the first session confirms five and stops cleanly, a restart on the
/// new connection from the confirmed LSN gets the next ones, and a new connection resuming
/// from the slot's confirmed position gets the rest: each row exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_from_confirmed_lsn_loses_and_repeats_nothing() {
    let topo =
        replicated("CREATE TABLE r (id int PRIMARY KEY); CREATE PUBLICATION pub FOR TABLE r");
    let (client, slot) = standby_slot(&topo, "r1", false, SnapshotAction::Nothing, false).await;
    let sql: String = (1..=10)
        .map(|i| format!("INSERT INTO r VALUES ({i});"))
        .collect();
    // psql -c sends it all as one query string (one transaction): run them separately.
    for stmt in sql.split_inclusive(';') {
        topo.primary().psql(stmt).unwrap();
    }

    // Session 1: five commits, confirmed, then a clean stop (later data is dropped unconfirmed).
    let mut c = Collector::start(client, &slot.name, slot.consistent_point, &options()).await;
    c.until_ends(5).await;
    let first = c.inserted_ids();
    assert_eq!(first, [1, 2, 3, 4, 5]);
    let confirmed = c.client.progress().flushed;
    c.client.stop().await.unwrap();
    let slot_confirmed = topo
        .standby()
        .psql("SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'r1'")
        .unwrap();
    assert_eq!(parse_lsn(&slot_confirmed).unwrap(), confirmed);

    // The same connection refuses a second stream (Postgres would end it at once).
    assert!(matches!(
        c.client.start("r1", confirmed, &options()).await,
        Err(ReplicationError::State(_))
    ));
    c.client.close().await;
    wait_released(&topo, "r1");

    // Session 2, new connection, from the confirmed LSN: three more commits.
    let client = connect(topo.standby()).await;
    let mut c2 = Collector::start(client, "r1", confirmed, &options()).await;
    c2.until_ends(3).await;
    let second = c2.inserted_ids();
    assert_eq!(second, [6, 7, 8]);
    c2.client.stop().await.unwrap();
    c2.client.close().await;
    wait_released(&topo, "r1");

    // Session 3, new connection, LSN 0: the slot's own confirmed position; plus new rows.
    topo.primary().psql("INSERT INTO r VALUES (11)").unwrap();
    topo.primary().psql("INSERT INTO r VALUES (12)").unwrap();
    let client = connect(topo.standby()).await;
    let mut c3 = Collector::start(client, "r1", 0, &options()).await;
    c3.until_ends(4).await;
    let third = c3.inserted_ids();
    let mut all: Vec<i64> = first
        .into_iter()
        .chain(second)
        .chain(third.clone())
        .collect();
    assert_eq!(third, [9, 10, 11, 12]);
    all.sort();
    assert_eq!(all, (1..=12).collect::<Vec<_>>());
    c3.client.stop().await.unwrap();
    c3.client.drop_slot("r1", true).await.unwrap();
}

/// With `wal_sender_timeout = 300ms` the server asks for a reply every ~150 ms and drops a
/// client that does not answer: after many requests the stream still delivers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keepalive_requests_are_answered() {
    let topo =
        replicated("CREATE TABLE k (id int PRIMARY KEY); CREATE PUBLICATION pub FOR TABLE k");
    let (mut client, slot) = standby_slot(&topo, "ka", true, SnapshotAction::Nothing, false).await;
    client
        .query("SET wal_sender_timeout = '300ms'")
        .await
        .unwrap();
    client
        .start(&slot.name, slot.consistent_point, &options())
        .await
        .unwrap();
    let mut requests = 0;
    let wait = async {
        while requests < 10 {
            match client.next_event().await.unwrap() {
                Some(pgdog::replication::client::ReplicationEvent::Keepalive {
                    reply_requested: true,
                    ..
                }) => requests += 1,
                Some(_) => {}
                None => panic!("the server ended the stream"),
            }
        }
    };
    tokio::time::timeout(DEADLINE, wait)
        .await
        .expect("10 keepalive requests");
    let mut c = Collector {
        client,
        decoder: pgdog::replication::pgoutput::Decoder::new(4),
        boundary: Default::default(),
        messages: Vec::new(),
    };
    topo.primary().psql("INSERT INTO k VALUES (1)").unwrap();
    c.until_ends(1).await;
    assert_eq!(c.render(), ["insert k (1)"]);
}

/// Confirmed progress reaches the slot through the periodic status update, while streaming
/// (no stop, no keepalive request: `wal_sender_timeout` stays at its 60 s default).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_updates_report_confirmed_progress_on_interval() {
    let topo =
        replicated("CREATE TABLE s (id int PRIMARY KEY); CREATE PUBLICATION pub FOR TABLE s");
    let (mut client, slot) = standby_slot(&topo, "st", false, SnapshotAction::Nothing, false).await;
    client.status_interval = Duration::from_millis(50);
    let mut c = Collector::start(client, &slot.name, slot.consistent_point, &options()).await;
    topo.primary().psql("INSERT INTO s VALUES (1)").unwrap();
    c.until_ends(1).await;
    let confirmed = c.client.progress().flushed;
    assert!(confirmed > slot.consistent_point);
    let slot_lsn = || {
        parse_lsn(
            &topo
                .standby()
                .psql("SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'st'")
                .unwrap(),
        )
        .unwrap()
    };
    let start = std::time::Instant::now();
    while slot_lsn() < confirmed {
        assert!(
            start.elapsed() < DEADLINE,
            "the slot never saw {confirmed:X}"
        );
        // Drive the stream (which sends the periodic update) for a moment.
        let _ = tokio::time::timeout(Duration::from_millis(100), c.client.next_event()).await;
    }
    assert_eq!(slot_lsn(), confirmed);
    c.client.stop().await.unwrap();
}
