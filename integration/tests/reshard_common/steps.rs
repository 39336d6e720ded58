//! The steps of a move from `src` to `dst` as the resharding tests run them: a configuration
//! folder, `schema-sync`, `copy-data`, `replay` and `verify` through the `pgdog` binary, and the
//! checks on the servers that follow them (rows per shard, slots, the shard of a key).
use super::{database, pgdog_with, run_ok, shards, text, write_files, USERS};
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::Duration;
use topology::{wait_until, Node, Topology};

/// `--from-database src --to-database dst`.
pub const SRC_DST: [&str; 4] = ["--from-database", "src", "--to-database", "dst"];

/// A new temporary folder `pgdog-<tag>-<pid>` holding `config` as pgdog.toml and [`USERS`].
pub fn config_dir(tag: &str, config: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pgdog-{tag}-{}", std::process::id()));
    write_files(&dir, config, USERS);
    dir
}

/// The databases of a move from one server to shards: `src` on `source`'s primary, `dst` on
/// the first `n` shards of `dest`.
pub fn primary_to_shards(source: &Topology, dest: &Topology, n: usize) -> String {
    database("src", 0, source.primary().port, "primary") + &shards("dst", dest, n)
}

/// `--publication pub <more...>`.
fn of_pub<'a>(more: &[&'a str]) -> Vec<&'a str> {
    ["--publication", "pub"]
        .into_iter()
        .chain(more.iter().copied())
        .collect()
}

/// A single source server, a two-shard destination and the configuration folder
/// `pgdog-<tag>-<pid>` ([`config_dir`]): `src` on the source, `dst` on the shards, then
/// `tables` (the `dst` table entries).
pub fn single_to_two_shards(tag: &str, tables: &str) -> (Topology, Topology, PathBuf) {
    let source = Topology::single().expect("source topology");
    let dest = Topology::shards(2).expect("destination topology");
    let dir = config_dir(tag, &(primary_to_shards(&source, &dest, 2) + tables));
    (source, dest, dir)
}

/// `pgdog copy-data --publication pub <more...>` from `src` to `dst` run again after an
/// earlier copy: it must succeed; its output.
pub fn copy_data_again(dir: &Path, source: &Topology, more: &[&str]) -> String {
    let out = pgdog_with(dir, source, "copy-data", &SRC_DST, &of_pub(more));
    let output = text(&out);
    assert!(out.status.success(), "copy-data again: {output}");
    output
}

/// `pgdog schema-sync --phase pre` of publication `pub` from `src` to `dst`, which must succeed.
pub fn schema_sync_pre(dir: &Path, source: &Topology) -> String {
    run_ok(
        dir,
        source,
        "schema-sync",
        &SRC_DST,
        &["--publication", "pub", "--phase", "pre"],
    )
}

/// `pgdog copy-data --publication pub <more...>` from `src` to `dst`, which must succeed; its
/// output.
pub fn copy_data_ok(dir: &Path, source: &Topology, more: &[&str]) -> String {
    run_ok(dir, source, "copy-data", &SRC_DST, &of_pub(more))
}

/// `pgdog replay --publication pub --slot <slot> --until-lsn <lsn>` from `src` to `dst`.
pub fn replay_until(dir: &Path, source: &Topology, slot: &str, lsn: &str) -> Output {
    pgdog_with(
        dir,
        source,
        "replay",
        &SRC_DST,
        &["--publication", "pub", "--slot", slot, "--until-lsn", lsn],
    )
}

/// A [`replay_until`] that must succeed and apply something; its output.
pub fn replay_applies(dir: &Path, source: &Topology, slot: &str, lsn: &str) -> String {
    let out = replay_until(dir, source, slot, lsn);
    let output = text(&out);
    assert!(out.status.success(), "replay: {output}");
    assert!(!output.contains("replayed 0 transactions"), "{output}");
    output
}

/// A second [`replay_until`] to the same LSN resumes from the stored position: it succeeds and
/// applies nothing.
pub fn replay_again_applies_nothing(dir: &Path, source: &Topology, slot: &str, lsn: &str) {
    let out = replay_until(dir, source, slot, lsn);
    let output = text(&out);
    assert!(out.status.success(), "second replay: {output}");
    assert!(
        output.contains("replayed 0 transactions, 0 rows applied"),
        "{output}"
    );
}

/// `pgdog verify` from `src` to `dst` (of `tables` only, when given) finds no difference;
/// `when` names the moment in the failure message.
pub fn verify_ok(dir: &Path, source: &Topology, tables: &[&str], when: &str) {
    let args: Vec<&str> = tables.iter().flat_map(|t| ["--table", t]).collect();
    let out = pgdog_with(dir, source, "verify", &SRC_DST, &args);
    assert!(out.status.success(), "verify{when}: {}", text(&out));
}

/// The WAL insert position of `node`, as text (`X/Y`).
pub fn current_lsn(node: &Node) -> String {
    node.psql("SELECT pg_current_wal_insert_lsn()").unwrap()
}

/// Drops the replication slot `slot` on `node`.
pub fn drop_slot(node: &Node, slot: &str) {
    node.psql(&format!("SELECT pg_drop_replication_slot('{slot}')"))
        .expect("dropping the slot");
}

/// Waits up to 30 s until `node` has no replication slot `WHERE condition`.
pub fn wait_for_no_slots(node: &Node, condition: &str, what: &str) {
    let sql = format!("SELECT count(*) FROM pg_replication_slots WHERE {condition}");
    wait_until(
        what,
        Duration::from_secs(30),
        Duration::from_millis(20),
        || Ok(node.psql(&sql)? == "0"),
    )
    .unwrap_or_else(|e| panic!("{what}: {e}"));
}

/// The destination rows of `table` are spread over both shards (each has some) and add up to
/// `rows`.
pub fn assert_spread_over_two_shards(dest: &Topology, table: &str, rows: i64) {
    let counts: Vec<i64> = (0..2)
        .map(|s| count_on_shard(dest, s, &format!("SELECT count(*) FROM {table}")))
        .collect();
    assert!(counts.iter().all(|&c| c > 0), "{counts:?}");
    assert_eq!(counts.iter().sum::<i64>(), rows);
}

/// A `SELECT count(*) ...` on shard `s` of `topo`.
pub fn count_on_shard(topo: &Topology, s: usize, sql: &str) -> i64 {
    let n = topo.shard(s).psql(sql).unwrap();
    n.parse::<i64>()
        .unwrap_or_else(|_| panic!("{sql} on shard {s}: {n}"))
}

/// The shard (of the first `n` of `dest`) holding the row of `table` with `id`.
pub fn shard_of(dest: &Topology, n: usize, table: &str, id: i64) -> usize {
    (0..n)
        .find(|&s| {
            dest.shard(s)
                .psql(&format!("SELECT count(*) FROM {table} WHERE id = {id}"))
                .unwrap()
                == "1"
        })
        .unwrap_or_else(|| panic!("{table} row {id} is on no shard"))
}

/// The line of `output` starting with `prefix`.
pub fn line_starting<'a>(output: &'a str, prefix: &str) -> &'a str {
    output
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting {prefix:?} in:\n{output}"))
}

/// The replication slot `slot` of `node` is in use.
pub fn slot_active(node: &Node, slot: &str) -> bool {
    node.psql(&format!(
        "SELECT count(*) FROM pg_replication_slots WHERE slot_name = '{slot}' AND active"
    ))
    .is_ok_and(|n| n == "1")
}

/// The replication slot `slot` is in use on each of the first `n` shards of `topo`.
pub fn slot_active_on_shards(topo: &Topology, n: usize, slot: &str) -> bool {
    (0..n).all(|s| slot_active(topo.shard(s), slot))
}

/// `pgdog <cmd> <args...>` in the background, its stdout and stderr piped.
pub fn spawn(dir: &Path, source: &Topology, cmd: &str, args: &[&str]) -> Child {
    super::command(dir, source, cmd, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting pgdog {cmd}: {e}"))
}

/// Stops a [`spawn`]ed pgdog with SIGTERM; its output.
pub fn sigterm(child: Child) -> Output {
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    child.wait_with_output().unwrap()
}
