//! A reshard outlives server restarts with no operator: a destination shard restarted mid-copy,
//! the source replica restarted under the retried copy, a destination shard restarted
//! mid-replay, then the source primary. Each is retried (`[resharding] retry_timeout`); then the
//! reshard is killed (-9) and run again, which resumes. The destination ends equal to the
//! source (`pgdog verify`), with nothing left behind after `--abort`.
use crate::reshard_common::load::{APP_DBS, USERS};
use crate::reshard_common::*;
use std::process::{Child, Stdio};
use topology::{Kind, Topology};

/// A `COPY ... FROM STDIN` of `items` runs on `node`.
fn copying_into(node: &topology::Node) -> bool {
    let sql = "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'COPY%items%FROM STDIN%'";
    node.psql(sql).is_ok_and(|n| n != "0")
}

/// A running `pgdog reshard`: if the test fails, it is killed and its output printed.
struct Running(Option<Child>);

impl Running {
    fn take(mut self) -> Child {
        self.0.take().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            if let Ok(out) = child.wait_with_output() {
                eprintln!("pgdog reshard:\n{}", text(&out));
            }
        }
    }
}

#[test]
fn a_reshard_outlives_restarts_of_every_server() {
    let source = Topology::start(Kind::Replicas(1)).expect("source");
    let dest = Topology::shards(2).expect("destination");
    let (primary, replica) = (source.primary(), source.node("replica1").unwrap());
    primary
        .psql(
            "CREATE TABLE items (id bigint PRIMARY KEY, v text);
             INSERT INTO items SELECT i, 'row ' || i FROM generate_series(1, 20000) i;
             CREATE PUBLICATION pub FOR TABLE items;",
        )
        .unwrap();
    source
        .wait_for_replay(replica, std::time::Duration::from_secs(30))
        .unwrap();
    let dir = std::env::temp_dir().join(format!("pgdog-reshard-recovery-{}", std::process::id()));
    let config = database("app", 0, primary.port, "primary")
        + &database("app", 0, replica.port, "replica")
        + &shards("app_new", &dest, 2)
        + &sharded_table("app_new", "items", "id", "bigint");
    write_files(&dir, &config, USERS);

    // Every reader pauses 3 s after its first row, twice: the copy's first attempt and its retry.
    let args = [&APP_DBS[..], &["--publication", "pub", "--parallel", "1"]].concat();
    let child = command(&dir, &source, "reshard", &args)
        .env("FAILPOINTS", "reshard-copy-pause=2*return(3000)")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let child = Running(Some(child));

    // 1. A destination shard restarted mid-copy.
    wait_for("the copy into shard 0", || copying_into(dest.shard(0)));
    dest.shard(0).stop().unwrap();
    dest.shard(0).start().unwrap();

    // 2. The source replica restarted under the retried copy (its reader in its snapshot).
    wait_for("the retried copy", || copying_into(dest.shard(0)));
    replica.stop().unwrap();
    replica.start().unwrap();

    // 3. The replay streams: a destination shard restarted mid-replay, then the source primary.
    wait_for("the replay to stream", || {
        (0..2).all(|s| {
            dest.shard(s)
                .psql("SELECT count(*) FROM pgdog_reshard_progress")
                .is_ok_and(|n| n == "1")
        }) && slot_active(primary, "pgdog_reshard")
    });
    let write = |from: i64| {
        primary
            .psql(&format!(
                // Committed durably: the primary is stopped with -m immediate below.
                "SET synchronous_commit = on;
                 INSERT INTO items SELECT i, 'late' FROM generate_series({from}, {}) i;
                 UPDATE items SET v = 'changed' WHERE id % 97 = {}",
                from + 499,
                from % 97
            ))
            .unwrap()
    };
    let arrived = |rows: i64| {
        wait_for(&format!("{rows} rows on the destination"), || {
            count_on(&dest, 2, "SELECT count(*) FROM items") == rows
        })
    };
    write(20_001);
    arrived(20_500);
    dest.shard(1).stop().unwrap();
    write(20_501);
    dest.shard(1).start().unwrap();
    arrived(21_000);
    primary.stop().unwrap();
    primary.start().unwrap();
    write(21_001);
    arrived(21_500);
    // Every restart was retried (the final display lists the retries).
    let out = sigterm(child.take());
    let all = text(&out);
    eprintln!("pgdog reshard:\n{all}");
    assert_eq!(out.status.code(), Some(3), "{all}");
    for (n, cause) in [
        (1, "COPY"),
        (2, "TO STDOUT"),
        (3, "committing the transaction"),
        (4, "replication stream"),
    ] {
        let retry = all.lines().find(|l| l.starts_with(&format!("retry {n} ")));
        assert!(
            retry.is_some_and(|l| l.contains(cause)),
            "retry {n} ({cause}):\n{all}"
        );
    }

    // Resumed, then killed (-9) mid-replay: a rerun resumes again.
    let rerun = Running(Some(spawn(&dir, &source, "reshard", &args)));
    wait_for("the resumed replay", || {
        slot_active(primary, "pgdog_reshard")
    });
    rerun.take().kill().unwrap();
    write(21_501);
    let rerun = Running(Some(spawn(&dir, &source, "reshard", &args)));
    arrived(22_000);
    source
        .wait_for_replay(replica, std::time::Duration::from_secs(30))
        .unwrap();
    verify_until_equal(&dir, &source, "app", "app_new");

    // Stopped, then aborted: nothing left behind.
    let out = sigterm(rerun.take());
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    run_ok(
        &dir,
        &source,
        "reshard",
        &APP_DBS,
        &["--publication", "pub", "--abort"],
    );
    for node in [primary, replica] {
        wait_for_no_slots(node, "slot_type = 'logical'", "no logical slot left");
    }
    for s in 0..2 {
        assert_eq!(
            dest.shard(s)
                .psql("SELECT to_regclass('pgdog_reshard_progress') IS NULL")
                .unwrap(),
            "t"
        );
    }
}
