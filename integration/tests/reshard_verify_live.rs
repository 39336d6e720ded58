//! `pgdog verify` while writes go on: a 2-shard source written through pgdog, `pgdog replay`
//! running into 4 destination shards. verify holds the replay at the LSN of its source
//! snapshots, so it reports equal every time while the clients keep writing; a row altered
//! directly on one destination shard is reported; the replay goes on after each verify.
use crate::reshard_common;

use reshard_common::load::{
    config, runtime, source_and_destination, start_loads, stop_loads, wait_for_statements,
    APP_DBS as DBS, USERS,
};
use reshard_common::{
    count_on, line_starting, pgdog, run_ok, slot_active_on_shards, spawn, text, wait_for,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use topology::proxy::Proxy;

#[test]
fn verify_under_writes_holds_the_replay() {
    let (source, dest) = source_and_destination();
    let proxy = Proxy::start(&config(&source, &dest), USERS).expect("pgdog");
    let dir = proxy.dir.clone();
    let rt = runtime();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let urls = (0..2).map(|k| (proxy.url("app", "secret", "app"), (k + 1) * 1_000_000));
    let loads = start_loads(&rt, urls, &stop, &done);
    wait_for_statements(&done, 200);

    let publication = ["--publication", "pub"];
    run_ok(
        &dir,
        &source,
        "schema-sync",
        &DBS,
        &[publication[0], publication[1], "--phase", "pre"],
    );
    let move_args = [&DBS[..], &publication, &["--slot", "live"]].concat();
    let out = pgdog(&dir, &source, "copy-data", &move_args);
    assert!(out.status.success(), "copy-data: {}", text(&out));
    let mut replay = spawn(&dir, &source, "replay", &move_args);
    wait_for("the replay to read both source slots", || {
        slot_active_on_shards(&source, 2, "live")
    });

    let verify = || {
        let out = pgdog(&dir, &source, "verify", &DBS);
        (out.status.success(), text(&out))
    };
    let dest_rows = || -> i64 { count_on(&dest, 4, "SELECT count(*) FROM items") };
    for round in 0..3 {
        let before = done.load(Ordering::SeqCst);
        let (ok, out) = verify();
        assert!(ok, "verify under writes, round {round}:\n{out}");
        // The hold time, for the record (cargo test -- --nocapture).
        println!("round {round}: {}", out.lines().next().unwrap_or_default());
        assert!(
            out.contains("the replay of slot live held there for "),
            "{out}"
        );
        let items = line_starting(&out, "items: OK (");
        assert!(items.contains(", 0 misplaced) at "), "{out}");
        // Writes went on meanwhile, and the replay goes on after the hold.
        assert!(done.load(Ordering::SeqCst) > before, "the load stood still");
        let rows = dest_rows();
        wait_for("the replay to go on after verify", || dest_rows() != rows);
        for s in 0..4 {
            assert_eq!(
                dest.shard(s)
                    .psql("SELECT count(*) FROM pgdog_reshard_hold")
                    .unwrap(),
                "0",
                "verify left its hold request on shard {s}"
            );
        }
    }

    // A row the load no longer touches (it only changes ids just below its newest), altered
    // on its destination shard.
    let (shard, id) = (0..4)
        .find_map(|s| {
            let id = dest.shard(s).psql("SELECT min(id) FROM items").unwrap();
            (!id.is_empty()).then_some((s, id))
        })
        .expect("copied rows");
    wait_for_statements(&done, 50);
    dest.shard(shard)
        .psql(&format!("UPDATE items SET v = 'tampered' WHERE id = {id}"))
        .unwrap();
    let (ok, out) = verify();
    assert!(!ok, "an altered row must be reported:\n{out}");
    let items = out.lines().find(|l| l.starts_with("items: ")).expect(&out);
    assert!(
        items.contains("DIFFERENT: checksum: source ") && items.contains("same row count"),
        "{out}"
    );

    for (_, errors, _) in stop_loads(&rt, &stop, loads) {
        assert!(errors.is_empty(), "clients saw errors: {errors:?}");
    }
    assert!(
        replay.try_wait().unwrap().is_none(),
        "the replay ended early"
    );
    let _ = replay.kill();
    let out = replay.wait_with_output().unwrap();
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("hold_timeout"),
        "{}",
        text(&out)
    );
}
