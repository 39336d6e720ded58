//! Shared helpers of the resharding tests: configuration blocks, running the `pgdog` binary on a
//! configuration folder, its output as text, and waiting for a condition with a deadline.
#![allow(dead_code)]
pub mod load;
pub mod orders;
pub mod steps;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};
pub use steps::*;
use topology::Topology;

/// `app` / `secret` on the source `src` and the destination `dst`.
pub const USERS: &str = "[[users]]\nname = \"app\"\ndatabase = \"src\"\npassword = \"secret\"\n\n\
                         [[users]]\nname = \"app\"\ndatabase = \"dst\"\npassword = \"secret\"\n";

/// One `[[databases]]` entry on 127.0.0.1 (`database_name = "postgres"`, user `postgres`).
pub fn database(name: &str, shard: usize, port: u16, role: &str) -> String {
    format!(
        "\n[[databases]]\nname = \"{name}\"\nshard = {shard}\nport = {port}\nrole = \"{role}\"\n\
         database_name = \"postgres\"\nuser = \"postgres\"\n"
    )
}

/// The entries of every shard of `topo` as database `name`.
pub fn shards(name: &str, topo: &Topology, n: usize) -> String {
    (0..n)
        .map(|s| database(name, s, topo.shard(s).port, "primary"))
        .collect()
}

/// One `[[sharded_tables]]` entry.
pub fn sharded_table(database: &str, table: &str, column: &str, data_type: &str) -> String {
    format!(
        "\n[[sharded_tables]]\ndatabase = \"{database}\"\nname = \"{table}\"\ncolumn = \"{column}\"\n\
         data_type = \"{data_type}\"\n"
    )
}

/// One `[[omnisharded_tables]]` entry.
pub fn omnisharded(database: &str, tables: &[&str]) -> String {
    let list: Vec<String> = tables.iter().map(|t| format!("\"{t}\"")).collect();
    format!(
        "\n[[omnisharded_tables]]\ndatabase = \"{database}\"\ntables = [{}]\n",
        list.join(", ")
    )
}

/// Adds a `[resharding]` section (TOML lines) to `dir/pgdog.toml`.
pub fn set_resharding(dir: &Path, lines: &str) {
    let path = dir.join("pgdog.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!("\n[resharding]\n{lines}\n"));
    std::fs::write(&path, text).unwrap();
}

/// Writes `pgdog.toml` and `users.toml` into `dir` (created if needed).
pub fn write_files(dir: &Path, config: &str, users: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("pgdog.toml"), config).unwrap();
    std::fs::write(dir.join("users.toml"), users).unwrap();
}

/// `pgdog <command> --config dir/pgdog.toml --users dir/users.toml <args>`, with the PG18
/// binaries (pg_dump) of `source`'s install.
pub fn command(dir: &Path, source: &Topology, command: &str, args: &[&str]) -> Command {
    let mut c = Command::new(topology::proxy::binary());
    c.arg(command)
        .arg("--config")
        .arg(dir.join("pgdog.toml"))
        .arg("--users")
        .arg(dir.join("users.toml"))
        .args(args)
        .arg("--pg-bin")
        .arg(source.install().bin_dir());
    c
}

/// Runs [`command`] to the end.
pub fn pgdog(dir: &Path, source: &Topology, cmd: &str, args: &[&str]) -> Output {
    command(dir, source, cmd, args)
        .output()
        .unwrap_or_else(|e| panic!("running pgdog {cmd}: {e}"))
}

/// `pgdog <cmd> <dbs...> <more...>` to the end.
pub fn pgdog_with(dir: &Path, source: &Topology, cmd: &str, dbs: &[&str], more: &[&str]) -> Output {
    let args: Vec<&str> = dbs.iter().chain(more).copied().collect();
    pgdog(dir, source, cmd, &args)
}

/// `pgdog <cmd> <dbs...> <more...>`, which must succeed; its stdout and stderr.
pub fn run_ok(dir: &Path, source: &Topology, cmd: &str, dbs: &[&str], more: &[&str]) -> String {
    let args: Vec<&str> = dbs.iter().chain(more).copied().collect();
    let out = pgdog(dir, source, cmd, &args);
    let output = text(&out);
    assert!(out.status.success(), "pgdog {cmd}: {output}");
    output
}

/// The sum over the first `shards` shards of `topo` of a `SELECT count(*) ...`.
pub fn count_on(topo: &Topology, shards: usize, sql: &str) -> i64 {
    (0..shards).map(|s| count_on_shard(topo, s, sql)).sum()
}

/// The ports of database `app`'s servers in `dir/pgdog.toml`.
pub fn app_ports(dir: &Path) -> Vec<u16> {
    let toml = std::fs::read_to_string(dir.join("pgdog.toml")).unwrap();
    toml.split("[[databases]]")
        .filter(|s| s.contains("name = \"app\""))
        .filter_map(|s| {
            s.lines()
                .find_map(|l| l.trim().strip_prefix("port = "))
                .and_then(|p| p.trim().parse().ok())
        })
        .collect()
}

/// Runs `pgdog verify --from-database from --to-database to` until it finds no difference
/// (a replay still applying the last writes); fails after 60 s with its last output.
pub fn verify_until_equal(dir: &Path, source: &Topology, from: &str, to: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = pgdog(
            dir,
            source,
            "verify",
            &["--from-database", from, "--to-database", to],
        );
        if out.status.success() {
            return;
        }
        assert!(Instant::now() < deadline, "verify: {}", text(&out));
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// stdout and stderr, for assertion messages.
pub fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Polls `cond` until it holds; fails after 60 s.
pub fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
