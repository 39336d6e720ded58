//! Crash safety of the resharding engine: the `pgdog` binary is killed with SIGKILL (or aborts
//! through its test hook) in the middle of `copy-data` and `replay`; running the same command
//! again must finish the job exactly: `pgdog verify` finds no difference and no row is applied
//! twice (the `events` table has no unique key and REPLICA IDENTITY FULL, so a duplicate shows).
//!
//! - mid-copy: another transaction on each destination shard holds an uncommitted row with a
//!   key the copy of `big` will insert, so the copy blocks on it mid-stream (observed in
//!   `pg_stat_activity`), and then pgdog is killed; a kill between two shards' commits is
//!   reproduced by removing `small` and its watermark from destination shard 1 only.
//! - mid-replay: a few thousand source transactions; pgdog is killed once the stored position
//!   moved but before it reached the end.
//! - after a destination commit: `PGDOG_TEST_ABORT_AFTER_COMMIT=N` aborts right after the Nth
//!   commit, before the slot is confirmed.
use crate::reshard_common;

use pgdog::replication::client::parse_lsn;
use reshard_common::{
    copy_data_again, count_on, current_lsn, drop_slot, replay_until, schema_sync_pre,
    set_resharding, single_to_two_shards, text, wait_for_no_slots, SRC_DST,
};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::time::Duration;
use topology::{wait_until, Node, Topology};

/// The rows of the copy tests: `big` large enough to be copied mid-table when pgdog is killed.
const ROWS_TO_COPY: &str =
    "INSERT INTO big SELECT i, repeat('x', 50) FROM generate_series(1, 200000) i;
         INSERT INTO small SELECT i, i FROM generate_series(1, 1000) i;
         INSERT INTO events SELECT i, 'e' || i FROM generate_series(1, 100) i;";

const SCHEMA: &str = "
CREATE TABLE big (id bigint PRIMARY KEY, pad text);
CREATE TABLE small (id bigint PRIMARY KEY, qty int);
CREATE TABLE events (id bigint, v text);
ALTER TABLE events REPLICA IDENTITY FULL;
CREATE PUBLICATION pub FOR TABLE big, small, events;
";

struct Setup {
    source: Topology,
    dest: Topology,
    dir: PathBuf,
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Setup {
    fn new(name: &str, rows: &str) -> Setup {
        // One name-less sharded table entry: every table sharded by its `id` column.
        let (source, dest, dir) = single_to_two_shards(
            &format!("resume-{name}"),
            "\n[[sharded_tables]]\ndatabase = \"dst\"\ncolumn = \"id\"\ndata_type = \"bigint\"\n",
        );
        source.primary().psql(SCHEMA).expect("source schema");
        source.primary().psql(rows).expect("source rows");
        schema_sync_pre(&dir, &source);
        Setup { source, dest, dir }
    }

    /// `pgdog command` from src to dst with `args`.
    fn command(&self, command: &str, args: &[&str]) -> Command {
        let args = [&SRC_DST[..], args].concat();
        reshard_common::command(&self.dir, &self.source, command, &args)
    }

    fn run(&self, command: &str, args: &[&str]) -> Output {
        self.command(command, args)
            .output()
            .unwrap_or_else(|e| panic!("running pgdog {command}: {e}"))
    }

    /// `pgdog command` in the background (output to a file).
    fn spawn(&self, command: &str, args: &[&str], env: &[(&str, &str)]) -> Child {
        let log = std::fs::File::create(self.dir.join(format!("{command}.log"))).unwrap();
        let mut cmd = self.command(command, args);
        cmd.envs(env.iter().copied())
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log));
        cmd.spawn()
            .unwrap_or_else(|e| panic!("starting pgdog {command}: {e}"))
    }

    fn log(&self, command: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{command}.log"))).unwrap_or_default()
    }

    fn primary(&self) -> &Node {
        self.source.primary()
    }

    fn shard(&self, i: usize) -> &Node {
        self.dest.shard(i)
    }

    fn copy(&self) -> Output {
        self.run("copy-data", &["--publication", "pub", "--slot", "s1"])
    }

    fn replay_until(&self, lsn: &str) -> Output {
        replay_until(&self.dir, &self.source, "s1", lsn)
    }

    fn current_lsn(&self) -> String {
        current_lsn(self.primary())
    }

    /// Copies (slot `s1`), then runs `count` source transactions on `events` ([`event_script`]);
    /// the WAL position after them.
    fn copy_then_events(&self, count: i64) -> String {
        let out = self.copy();
        assert!(out.status.success(), "copy-data: {}", text(&out));
        run_script(self.primary(), &event_script(&self.dir, 0, count));
        self.current_lsn()
    }

    /// `pgdog verify` passes and `events` holds no duplicated row on any shard.
    fn assert_equal(&self) {
        let out = self.run("verify", &[]);
        assert!(out.status.success(), "verify: {}", text(&out));
        for s in 0..2 {
            assert_eq!(
                self.shard(s)
                    .psql("SELECT count(*) - count(DISTINCT (id, v)) FROM events")
                    .unwrap(),
                "0",
                "duplicated events on shard {s}"
            );
        }
    }

    /// The stored replay position on destination shard `s` (0 when none).
    fn position(&self, s: usize) -> u64 {
        let text = self
            .shard(s)
            .psql("SELECT coalesce((SELECT lsn FROM pgdog_reshard_position WHERE slot = 's1'), '0/0')")
            .unwrap();
        parse_lsn(&text).unwrap()
    }

    fn drop_slot(&self) {
        drop_slot(self.primary(), "s1");
    }

    /// The rows of `events` on the destination shards.
    fn events(&self) -> i64 {
        count_on(&self.dest, 2, "SELECT count(*) FROM events")
    }
}

/// SIGKILL, then reap.
fn kill9(child: &mut Child) {
    child.kill().expect("SIGKILL");
    let status = child.wait().expect("waiting for pgdog");
    assert!(!status.success(), "pgdog was killed: {status}");
}

/// A psql session kept open (statements written to its stdin as they come).
struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
}

impl Session {
    fn open(node: &Node) -> Session {
        let mut child = node
            .psql_command("postgres")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("psql session");
        let stdin = child.stdin.take();
        Session { child, stdin }
    }

    fn send(&mut self, sql: &str) {
        let stdin = self.stdin.as_mut().expect("open session");
        writeln!(stdin, "{sql}").unwrap();
        stdin.flush().unwrap();
    }

    fn close(mut self) {
        self.send("ROLLBACK;");
        self.stdin.take();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "psql session: {status}");
    }
}

/// The copy of big waits for the blocker on one shard (after the other tables are done when
/// `others_copied`).
/// What must be committed on the destination, besides big being blocked, before the kill.
#[derive(Clone, Copy, PartialEq)]
enum Before {
    /// The other tables (small, events) on shard 1.
    OtherTables,
    /// Every key range of big but the blocked one, on both shards.
    OtherRanges,
}

/// Key ranges of big on a destination shard: (copied, planned).
fn big_ranges(setup: &Setup, shard: usize) -> (usize, usize) {
    let n = |sql: &str| -> usize {
        setup
            .shard(shard)
            .psql(sql)
            .unwrap_or_default()
            .parse()
            .unwrap_or(0)
    };
    let ranges = "FROM pgdog_reshard_progress WHERE table_name LIKE 'public.big [%'";
    (
        n(&format!(
            "SELECT count(*) {ranges} AND watermark IS NOT NULL"
        )),
        n(&format!("SELECT count(*) {ranges}")),
    )
}

fn wait_for_big_to_block(setup: &Setup, copy: &mut Child, before: Option<Before>) {
    let what = match before {
        Some(Before::OtherTables) => "the copy of big to block mid-table",
        Some(Before::OtherRanges) => "big's last key range to block, the others copied",
        None => "the copy of big to block",
    };
    wait_until(
        what,
        Duration::from_secs(60),
        Duration::from_millis(10),
        || {
            if let Some(status) = copy.try_wait().unwrap() {
                panic!("copy-data ended: {status}: {}", setup.log("copy-data"));
            }
            let blocked = (0..2).any(|s| {
                setup
                    .shard(s)
                    .psql(
                        "SELECT count(*) FROM pg_stat_activity \
                         WHERE query LIKE 'COPY \"public\".\"big\"%' AND wait_event_type = 'Lock'",
                    )
                    .is_ok_and(|n| n == "1")
            });
            let others = match before {
                None => true,
                Some(Before::OtherTables) => {
                    setup
                        .shard(1)
                        .psql(
                            "SELECT count(*) FROM pgdog_reshard_progress \
                             WHERE table_name NOT LIKE 'public.big%'",
                        )
                        .unwrap_or_default()
                        == "2"
                }
                Some(Before::OtherRanges) => (0..2).all(|s| {
                    let (copied, planned) = big_ranges(setup, s);
                    planned > 2 && copied + 1 == planned
                }),
            };
            Ok(blocked && others)
        },
    )
    .unwrap();
}

/// With an uncommitted row of `big` (key 199990, near its end) held on both destination shards,
/// `copy-data --parallel 3` runs until its copy of big blocks on it on the shard the key belongs
/// to ([`wait_for_big_to_block`]) and is killed; the blockers are released. Nothing of big is
/// committed, and the killed walsenders take the temporary slots with them.
fn kill_copy_blocked_in_big(setup: &Setup, before: Option<Before>) {
    let mut blockers: Vec<Session> = (0..2).map(|s| Session::open(setup.shard(s))).collect();
    for b in blockers.iter_mut() {
        b.send("BEGIN; INSERT INTO big VALUES (199990, 'blocker');");
    }
    wait_until(
        "the blocking rows to be inserted",
        Duration::from_secs(10),
        Duration::from_millis(10),
        || {
            Ok((0..2).all(|s| {
                setup
                    .shard(s)
                    .psql(
                        "SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction'",
                    )
                    .is_ok_and(|n| n == "1")
            }))
        },
    )
    .unwrap();

    let mut copy = setup.spawn(
        "copy-data",
        &["--publication", "pub", "--slot", "s1", "--parallel", "3"],
        &[],
    );
    wait_for_big_to_block(setup, &mut copy, before);
    kill9(&mut copy);
    for b in blockers {
        b.close();
    }
    for s in 0..2 {
        assert_eq!(
            setup
                .shard(s)
                .psql(
                    "SELECT count(*) FROM pgdog_reshard_progress WHERE watermark IS NOT NULL \
                     AND (table_name = 'public.big' OR table_name LIKE 'public.big [%..)')"
                )
                .unwrap(),
            "0",
            "big was not committed on shard {s}"
        );
    }
    wait_for_no_slots(
        setup.primary(),
        "temporary",
        "the temporary slots to vanish",
    );
}

#[test]
fn copy_killed_mid_table_resumes() {
    let setup = Setup::new("copy", ROWS_TO_COPY);
    // An uncommitted row with a key near the end of `big` on both destination shards: the copy
    // blocks on it on the shard the key belongs to.
    kill_copy_blocked_in_big(&setup, Some(Before::OtherTables));

    // A kill between two shards' commits: small committed on shard 0 only.
    setup
        .shard(1)
        .psql(
            "DELETE FROM small; \
             DELETE FROM pgdog_reshard_progress WHERE table_name = 'public.small'",
        )
        .unwrap();
    // Source changes between the two runs: shard 0 must get them from the replay, shard 1 from
    // the new copy (a DELETE applied there again would find no row and fail the replay).
    setup
        .primary()
        .psql(
            "UPDATE small SET qty = -qty WHERE id <= 100;
             DELETE FROM small WHERE id BETWEEN 500 AND 600;
             INSERT INTO small SELECT i, i FROM generate_series(2001, 2100) i;
             DELETE FROM big WHERE id BETWEEN 1000 AND 1100;
             INSERT INTO events SELECT i, 'late' || i FROM generate_series(101, 200) i;",
        )
        .unwrap();

    let small_watermark = |s: usize| {
        setup
            .shard(s)
            .psql("SELECT watermark FROM pgdog_reshard_progress WHERE table_name = 'public.small'")
            .unwrap()
    };
    let first = small_watermark(0);
    let output = copy_data_again(&setup.dir, &setup.source, &["--slot", "s1"]);
    assert!(output.contains("slot s1 reused"), "{output}");
    assert!(
        output.contains("table public.events: already copied"),
        "{output}"
    );
    assert!(output.contains("table public.big: 199899 rows"), "{output}");
    assert!(output.contains("table public.small: 999 rows"), "{output}");
    assert_eq!(small_watermark(0), first, "shard 0 kept its copy of small");
    assert_ne!(small_watermark(1), first, "shard 1 got a new copy of small");

    let lsn = setup.current_lsn();
    let out = setup.replay_until(&lsn);
    assert!(out.status.success(), "replay: {}", text(&out));
    setup.assert_equal();

    // The slot is gone but its copies are there: a new slot would miss changes.
    setup.drop_slot();
    let out = setup.copy();
    let output = text(&out);
    assert!(
        !out.status.success(),
        "copy-data without its slot: {output}"
    );
    assert!(output.contains("no longer exists"), "{output}");
    assert_eq!(
        setup
            .primary()
            .psql("SELECT count(*) FROM pg_replication_slots")
            .unwrap(),
        "0",
        "the slot created for the refused copy is dropped"
    );
}

/// `count` source transactions on `events`: inserts, with an update and a delete every tenth.
fn event_script(dir: &Path, from: i64, count: i64) -> PathBuf {
    let mut sql = String::new();
    for k in from..from + count {
        sql.push_str(&format!(
            "INSERT INTO events SELECT i, 'v' || i FROM generate_series({}, {}) i;\n",
            k * 10,
            k * 10 + 9
        ));
        if k % 10 == 0 {
            sql.push_str(&format!(
                "BEGIN; UPDATE events SET v = 'u' || id WHERE id = {}; DELETE FROM events WHERE id = {}; COMMIT;\n",
                k * 10,
                k * 10 + 1
            ));
        }
    }
    let path = dir.join(format!("events-{from}.sql"));
    std::fs::write(&path, sql).unwrap();
    path
}

fn run_script(node: &Node, path: &Path) {
    let out = node
        .psql_command("postgres")
        .arg("-f")
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn replay_killed_mid_stream_resumes_exactly() {
    let setup = Setup::new(
        "replay",
        "INSERT INTO small VALUES (1, 1); INSERT INTO big VALUES (1, 'x');",
    );
    let lsn = setup.copy_then_events(3000);
    let end = parse_lsn(&lsn).unwrap();

    let mut replay = setup.spawn("replay", &["--publication", "pub", "--slot", "s1"], &[]);
    wait_until(
        "the replay to store a position",
        Duration::from_secs(60),
        Duration::from_millis(5),
        || {
            if let Some(status) = replay.try_wait().unwrap() {
                panic!("replay ended: {status}: {}", setup.log("replay"));
            }
            Ok((0..2).any(|s| setup.position(s) > 0))
        },
    )
    .unwrap();
    kill9(&mut replay);
    let at_kill = (0..2).map(|s| setup.position(s)).max().unwrap();
    assert!(
        at_kill > 0 && at_kill < end,
        "killed mid-stream: position {at_kill:X}, end {end:X}"
    );

    let out = setup.replay_until(&lsn);
    let output = text(&out);
    assert!(out.status.success(), "replay again: {output}");
    assert!(!output.contains("replayed 0 transactions"), "{output}");
    setup.assert_equal();
    assert_eq!(setup.events(), 30000 - 300);
    setup.drop_slot();
}

#[test]
fn replay_aborted_after_a_commit_resumes_exactly() {
    let setup = Setup::new("abort", "INSERT INTO small VALUES (1, 1);");
    // Batches of 4 source transactions: the 7th destination commit is mid-stream.
    set_resharding(&setup.dir, "replay_batch = 4");
    let lsn = setup.copy_then_events(50);

    let mut replay = setup.spawn(
        "replay",
        &["--publication", "pub", "--slot", "s1", "--until-lsn", &lsn],
        // Batches of 4 source transactions: the 7th destination commit is mid-stream.
        &[("PGDOG_TEST_ABORT_AFTER_COMMIT", "7")],
    );
    let status = replay.wait().unwrap();
    let log = setup.log("replay");
    assert!(!status.success(), "the hook aborts: {status}: {log}");
    assert!(
        log.contains("PGDOG_TEST_ABORT_AFTER_COMMIT=7"),
        "aborted by the hook: {log}"
    );
    // Committed on the destination, not confirmed on the slot.
    let applied = setup.events();
    assert!(applied > 0 && applied < 490, "applied {applied}");

    let out = setup.replay_until(&lsn);
    assert!(out.status.success(), "replay again: {}", text(&out));
    setup.assert_equal();
    setup.drop_slot();
}

/// Prepared transactions left on the destination shards.
fn prepared(setup: &Setup) -> usize {
    (0..2)
        .map(|s| {
            setup
                .shard(s)
                .psql("SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'pgdog_replay_s1_%'")
                .unwrap()
                .parse::<usize>()
                .unwrap()
        })
        .sum()
}

#[test]
fn atomic_replay_aborted_between_prepare_and_commit_resumes() {
    let setup = Setup::new("atomic", "INSERT INTO small VALUES (1, 1);");
    // Two-phase batches of 4 source transactions, each touching both shards.
    set_resharding(&setup.dir, "replay_batch = 4\nreplay_atomic = true");
    let lsn = setup.copy_then_events(50);
    let args = ["--publication", "pub", "--slot", "s1", "--until-lsn", &lsn];
    let aborted = |hook: &str| {
        let mut replay = setup.spawn("replay", &args, &[("PGDOG_TEST_ABORT_IN_2PC", hook)]);
        let status = replay.wait().unwrap();
        let log = setup.log("replay");
        assert!(!status.success(), "the hook aborts: {status}: {log}");
        assert!(
            log.contains(&format!("PGDOG_TEST_ABORT_IN_2PC={hook}")),
            "{log}"
        );
        log
    };

    // Every shard prepared the third transaction, none committed it: rolled back on resume.
    aborted("3:0");
    assert_eq!(prepared(&setup), 2);
    // The resumed run rolls those back, then stops in its second two-phase transaction after
    // one shard committed it: committed on the other shard on resume.
    let log = aborted("2:1");
    assert!(
        log.contains("0 prepared transactions of a crashed run committed, 2 rolled back"),
        "{log}"
    );
    assert_eq!(prepared(&setup), 1);

    let mut atomic_args = args.to_vec();
    atomic_args.push("--atomic");
    let out = setup.run("replay", &atomic_args);
    let output = text(&out);
    assert!(out.status.success(), "replay to the end: {output}");
    assert!(
        output.contains("1 prepared transactions of a crashed run committed, 0 rolled back"),
        "{output}"
    );
    assert_eq!(prepared(&setup), 0);
    setup.assert_equal();
    setup.drop_slot();
}

/// A copy of big in key ranges (`[resharding] copy_split_bytes` lowered; its key is a bigint
/// primary key) killed while its last range blocks on a destination shard, after its other
/// ranges committed; then `between` on the source, and a rerun that copies only the last range
/// again (the others are "already copied", each with its own watermark). Returns the setup,
/// ready for the replay.
fn split_copy_killed_then(name: &str, between: &str) -> Setup {
    let setup = Setup::new(name, ROWS_TO_COPY);
    // big is about 17 MiB: 5 key ranges.
    set_resharding(&setup.dir, "copy_split_bytes = 4194304");
    kill_copy_blocked_in_big(&setup, Some(Before::OtherRanges));
    let (copied, planned) = big_ranges(&setup, 0);
    assert_eq!(copied + 1, planned);
    setup.primary().psql(between).unwrap();
    let output = copy_data_again(
        &setup.dir,
        &setup.source,
        &["--slot", "s1", "--parallel", "4"],
    );
    assert!(output.contains("slot s1 reused"), "{output}");
    let again: Vec<&str> = output
        .lines()
        .filter(|l| l.starts_with("table public.big ["))
        .collect();
    assert_eq!(again.len(), planned, "{output}");
    let skipped = again.iter().filter(|l| l.ends_with(": already copied"));
    assert_eq!(skipped.count(), copied, "{output}");
    let last = again
        .iter()
        .find(|l| !l.ends_with(": already copied"))
        .expect("the last range copied again");
    assert!(last.contains("..): "), "the unbounded last range: {output}");
    assert_eq!(big_ranges(&setup, 1), (planned, planned));
    setup
}

/// The replay to the source's current position, which must succeed; then source and
/// destination match: each change was skipped by its key range's watermark.
fn replay_equal(setup: Setup) {
    let lsn = setup.current_lsn();
    let out = setup.replay_until(&lsn);
    assert!(out.status.success(), "replay: {}", text(&out));
    setup.assert_equal();
    setup.drop_slot();
}

/// Changes while no copy runs: above the copied ranges' watermarks, below the last one's
/// (copied again next); keys moving between two copied ranges, from a copied range into the
/// last one and from the last one into a copied one.
#[test]
fn copy_killed_mid_split_table_resumes() {
    replay_equal(split_copy_killed_then(
        "copy-split",
        "DELETE FROM big WHERE id BETWEEN 1000 AND 1100; \
         UPDATE big SET pad = 'moved', id = id - 59000 WHERE id BETWEEN 60000 AND 60010; \
         UPDATE big SET pad = 'out', id = id + 300000 WHERE id BETWEEN 2000 AND 2010; \
         UPDATE big SET id = -id WHERE id BETWEEN 199000 AND 199005; \
         INSERT INTO big VALUES (250000, 'new')",
    ));
}

/// A TRUNCATE between the copied ranges' watermarks and the last one's: the replay empties
/// the copied ranges (by key range), not the last one, whose copy already has the rows written
/// after the TRUNCATE.
#[test]
fn copy_killed_mid_split_table_then_truncated() {
    replay_equal(split_copy_killed_then(
        "copy-split-trunc",
        "TRUNCATE big; \
         INSERT INTO big SELECT i, 'after' FROM generate_series(1, 300) i; \
         INSERT INTO big SELECT i, 'after' FROM generate_series(199800, 200100) i",
    ));
}

/// The same TRUNCATE of two tables at once: DELETEs by key range cannot keep its order (nor
/// CASCADE's), so the replay stops on it, naming the table, with nothing applied wrong.
#[test]
fn copy_killed_mid_split_table_then_truncated_with_another_is_refused() {
    let setup = split_copy_killed_then("copy-split-trunc2", "TRUNCATE big, small");
    let lsn = setup.current_lsn();
    let out = setup.replay_until(&lsn);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("a TRUNCATE of public.big with other tables, CASCADE or RESTART IDENTITY"),
        "{said}"
    );
    setup.drop_slot();
}
