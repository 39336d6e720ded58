//! The `pgdog` command line (clap): one subcommand per job, each with its own flags; no
//! subcommand (or `run`) runs the proxy. `--config` / `--users` apply to every subcommand (also
//! after it) and fall back to `PGDOG_CONFIG` / `PGDOG_USERS`. Each subcommand's flags become the
//! options struct of the library function that does the job.
mod jobs;
mod readiness;
mod reshard;

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "pgdog",
    version,
    about = "PostgreSQL proxy: pooler, sharding router and resharding engine"
)]
pub struct Cli {
    /// pgdog.toml
    #[arg(
        long,
        short = 'c',
        global = true,
        env = "PGDOG_CONFIG",
        default_value = "pgdog.toml"
    )]
    pub config: PathBuf,
    /// users.toml
    #[arg(
        long,
        short = 'u',
        global = true,
        env = "PGDOG_USERS",
        default_value = "users.toml"
    )]
    pub users: PathBuf,
    /// The folder holding pg_dump for the resharding commands (overrides `[resharding] pg_bin`).
    #[arg(long, global = true)]
    pub pg_bin: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run the proxy (what `pgdog` without a subcommand does).
    Run,
    /// Validate the configuration files (and warn about per-shard sequences).
    Configcheck,
    /// Print a SCRAM-SHA-256 verifier for users.toml; the password is read from stdin (a prompt
    /// on a terminal), never from the command line.
    Hash,
    /// Print each statement's shards (no server needed).
    Route(RouteArgs),
    /// Print the `[[bucket_maps]]` entry that spreads a database's buckets over N shards,
    /// moving the fewest (from its current map, or the default one), and what moves.
    Buckets(BucketsArgs),
    /// Count the rows each shard holds that the database's layout places elsewhere (moved
    /// buckets left behind); with --delete, delete them in throttled, resumable batches.
    Cleanup(CleanupArgs),
    /// Before sharding: what share of the traffic would go to one shard, and which statements
    /// would be refused or go to all shards (from a dry run's SHOW ROUTES or a statement log).
    Readiness(ReadinessArgs),
    /// Stream a logical replication slot (pgoutput) as JSON lines until --until-lsn or Ctrl-C.
    LogicalDump(DumpArgs),
    /// Copy a publication's table definitions (pg_dump) to every shard of the destination.
    SchemaSync(SchemaSyncArgs),
    /// Create the permanent slot, then copy each table of the publication into the shards.
    CopyData(CopyDataArgs),
    /// Apply the slot's changes to the destination's shards, routed by sharding key.
    Replay(ReplayArgs),
    /// Compare every table of a database with the union of its resharded copy's shards.
    Verify(VerifyArgs),
    /// The whole move with live progress: schema, copy, replay, and with --cutover the switch.
    Reshard(ReshardArgs),
    /// Replay until the lag is small, then switch the proxies' clients to the destination.
    Cutover(CutoverArgs),
    /// Write pgdog.toml and users.toml for a PgBouncer setup; every setting not carried is
    /// listed with its line.
    ImportPgbouncer(ImportArgs),
}

#[derive(Args)]
pub struct ImportArgs {
    /// pgbouncer.ini (its %include files are read too).
    #[arg(long)]
    pub ini: PathBuf,
    /// userlist.txt (default: the ini's auth_file).
    #[arg(long)]
    pub userlist: Option<PathBuf>,
    /// Folder the two files are written to (created if missing; existing files are kept).
    #[arg(long)]
    pub out: PathBuf,
}

/// Source and destination of a resharding command.
#[derive(Args)]
pub struct DatabaseArgs {
    #[arg(long)]
    pub from_database: String,
    #[arg(long)]
    pub to_database: String,
}

impl DatabaseArgs {
    /// The engine's view of the two databases.
    pub fn databases(&self) -> pgdog::reshard::Databases {
        pgdog::reshard::Databases::new(&self.from_database, &self.to_database)
    }
}

#[derive(Args)]
pub struct RouteArgs {
    #[arg(long, short = 'd')]
    pub database: String,
    /// The SQL to route.
    pub sql: String,
    /// A `$n` parameter value (repeat in order).
    #[arg(long, short = 'p')]
    pub param: Vec<String>,
}

#[derive(Args)]
pub struct BucketsArgs {
    #[arg(long, short = 'd')]
    pub database: String,
    /// The shard count to spread the buckets over.
    #[arg(long)]
    pub shards: usize,
    /// The bucket count when the database has no `[[bucket_maps]]` entry yet (its default map
    /// is then plain hash placement: a multiple of the current shard count).
    #[arg(long, default_value_t = 1024)]
    pub buckets: u32,
}

#[derive(Args)]
pub struct CleanupArgs {
    #[arg(long, short = 'd')]
    pub database: String,
    /// Delete the misplaced rows (without it, only count them). Only once every proxy routes
    /// by this configuration's layout: what it places elsewhere is deleted.
    #[arg(long)]
    pub delete: bool,
    /// Heap blocks (8 KiB) read and cleaned per batch, one transaction each.
    #[arg(long, default_value_t = 128)]
    pub batch_blocks: u64,
    /// Milliseconds to sleep between batches.
    #[arg(long, default_value_t = 10)]
    pub pause_ms: u64,
}

#[derive(Args)]
pub struct ReadinessArgs {
    /// A running pgdog's admin database (postgres://admin:PASSWORD@HOST:PORT/admin), whose
    /// databases run with dry_run = true.
    #[arg(long)]
    pub admin_url: Option<String>,
    /// A statement log instead: Postgres' own (log_statement = 'all' or
    /// log_min_duration_statement) or plain SQL, one query per line; routed by the
    /// configuration's [[sharded_tables]].
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// The database to report on (default: all of them; with --file, the one with
    /// [[sharded_tables]]).
    #[arg(long, short = 'd')]
    pub database: Option<String>,
    /// With --file: the planned shard count (default: dry_run_shards, else the database's).
    #[arg(long)]
    pub shards: Option<usize>,
    /// Shapes listed per section.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum StreamingArg {
    Off,
    On,
    Parallel,
}

#[derive(Args)]
pub struct DumpArgs {
    /// postgres://user[:pw]@host:port/db
    #[arg(long)]
    pub url: String,
    #[arg(long)]
    pub slot: String,
    #[arg(long, required = true)]
    pub publication: Vec<String>,
    /// Create the slot as a temporary one (on --primary-url when reading a standby).
    #[arg(long)]
    pub create_temporary: bool,
    #[arg(long)]
    pub primary_url: Option<String>,
    /// pgoutput protocol version.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=4))]
    pub proto: u32,
    #[arg(long)]
    pub binary: bool,
    #[arg(long, value_enum, default_value = "off")]
    pub streaming: StreamingArg,
    #[arg(long)]
    pub two_phase: bool,
    /// Stop at this LSN (X/Y).
    #[arg(long)]
    pub until_lsn: Option<String>,
}

#[derive(Args)]
pub struct SchemaSyncArgs {
    #[command(flatten)]
    pub db: DatabaseArgs,
    #[arg(long)]
    pub publication: String,
    /// pre (types, tables, sequences, keys) or post (indexes, foreign keys, triggers); both
    /// when left out.
    #[arg(long)]
    pub phase: Option<String>,
}

#[derive(Args)]
pub struct CopyDataArgs {
    #[command(flatten)]
    pub db: DatabaseArgs,
    #[arg(long)]
    pub publication: String,
    #[arg(long)]
    pub slot: Option<String>,
    /// Tables (and ranges) copied at once (default `[resharding] copy_parallel`).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub parallel: Option<u32>,
}

#[derive(Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub db: DatabaseArgs,
    #[arg(long)]
    pub publication: String,
    #[arg(long)]
    pub slot: String,
    #[arg(long)]
    pub until_lsn: Option<String>,
    /// Two-phase commit on the shards a destination transaction touches.
    #[arg(long)]
    pub atomic: bool,
}

// The argument structs repeat `--from-database`/`--to-database` (flattened `DatabaseArgs`) and
// `--slot`: clap derives each subcommand's flags from its own struct, and one struct per
// subcommand keeps each command's --help exactly its flags (a shape the duplicates tool reports).
#[derive(Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub db: DatabaseArgs,
    /// Only these tables (repeat).
    #[arg(long)]
    pub table: Vec<String>,
    /// The replay to hold at one LSN while the snapshots are taken; default: the one running
    /// between the two databases, if any.
    #[arg(long)]
    pub slot: Option<String>,
}

/// Flags `reshard` and `cutover` share.
#[derive(Args)]
pub struct MoveArgs {
    #[command(flatten)]
    pub db: DatabaseArgs,
    #[arg(long)]
    pub slot: Option<String>,
    /// The admin database of each pgdog serving the source (repeat per pgdog), e.g.
    /// postgres://admin:PASSWORD@HOST:PORT/admin; default `[[resharding.peers]]`.
    #[arg(long)]
    pub admin_url: Vec<String>,
    /// Pause traffic once the replay lag is under this many bytes.
    #[arg(long)]
    pub max_lag_bytes: Option<u64>,
}

#[derive(Args)]
pub struct ReshardArgs {
    #[command(flatten)]
    pub common: MoveArgs,
    /// Required unless --abort.
    #[arg(long, required_unless_present = "abort")]
    pub publication: Option<String>,
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub parallel: Option<u32>,
    /// Switch the clients once the replay caught up.
    #[arg(long)]
    pub cutover: bool,
    /// After the cutover, replicate the new shards back to the old ones (for a rollback).
    #[arg(long, requires = "cutover")]
    pub reverse: bool,
    /// Drop the slots and progress tables a stopped reshard left.
    #[arg(long)]
    pub abort: bool,
    /// Run the checks only (every reshard runs them first) and create nothing: one line per
    /// check, ok / warning / refused; exits 1 if one refuses.
    /// With --cutover --reverse, the reverse replication's needs are checked too.
    #[arg(long, conflicts_with = "abort")]
    pub check: bool,
}

#[derive(Args)]
pub struct CutoverArgs {
    #[command(flatten)]
    pub common: MoveArgs,
    #[arg(long)]
    pub publication: String,
}

fn fail(what: &str, e: impl std::fmt::Display) -> ExitCode {
    eprintln!("pgdog: {what}: {e}");
    ExitCode::from(2)
}

fn lsn(value: Option<&str>) -> Result<Option<u64>, String> {
    value
        .map(|l| pgdog::replication::client::parse_lsn(l).map_err(|e| e.to_string()))
        .transpose()
}

/// `[resharding]` of the configuration (defaults when it does not load: the command reports
/// that itself).
fn resharding(cli: &Cli) -> pgdog::config::Resharding {
    pgdog::registry::load_settings(&cli.config, &cli.users)
        .map(|s| s.config.resharding)
        .unwrap_or_default()
}

/// Runs a subcommand other than the proxy.
pub fn dispatch(cli: &Cli, command: &Command) -> ExitCode {
    if let Some(dir) = &cli.pg_bin {
        pgdog::reshard::schema_sync::set_pg_bin(dir.clone());
    }
    match command {
        Command::Run => unreachable_run(),
        Command::Configcheck => configcheck(cli),
        Command::ImportPgbouncer(a) => import_pgbouncer(a),
        Command::Hash => hash(),
        Command::Route(a) => route(cli, a),
        Command::Buckets(a) => buckets(cli, a),
        Command::Cleanup(a) => cleanup(cli, a),
        Command::Readiness(a) => readiness::run(cli, a),
        Command::LogicalDump(a) => match dump_options(a) {
            Ok(o) => jobs::logical_dump(o),
            Err(e) => fail("logical-dump", e),
        },
        Command::SchemaSync(a) => {
            use pgdog::reshard::schema_sync::{Phase, SchemaSyncOptions};
            let phase = match a.phase.as_deref().map(str::parse::<Phase>).transpose() {
                Ok(p) => p.unwrap_or(Phase::Both),
                Err(e) => return fail("schema-sync", e),
            };
            jobs::schema_sync(
                cli,
                SchemaSyncOptions {
                    databases: a.db.databases(),
                    publication: a.publication.clone(),
                    phase,
                },
            )
        }
        Command::CopyData(a) => {
            let parallel = a
                .parallel
                .map(|n| n as usize)
                .unwrap_or_else(|| resharding(cli).copy_parallel);
            jobs::copy_data(
                cli,
                pgdog::reshard::copy::CopyDataOptions {
                    databases: a.db.databases(),
                    publication: a.publication.clone(),
                    slot: a.slot.clone(),
                    parallel,
                    progress: None,
                    keep_slots: false,
                },
            )
        }
        Command::Replay(a) => match lsn(a.until_lsn.as_deref()) {
            Ok(until_lsn) => jobs::replay(
                cli,
                pgdog::reshard::replay::ReplayOptions {
                    databases: a.db.databases(),
                    publication: a.publication.clone(),
                    slot: a.slot.clone(),
                    until_lsn,
                    progress: None,
                    stop_at: None,
                    atomic: a.atomic,
                },
            ),
            Err(e) => fail("replay", e),
        },
        Command::Verify(a) => jobs::verify(
            cli,
            pgdog::reshard::verify::VerifyOptions {
                databases: a.db.databases(),
                tables: a.table.clone(),
                slot: a.slot.clone(),
            },
        ),
        Command::Reshard(a) => {
            let publication = a.publication.clone().unwrap_or_default();
            let mut o = move_options(cli, &a.common, &publication);
            if let Some(n) = a.parallel {
                o.parallel = n as usize;
            }
            o.cutover = a.cutover;
            o.reverse = a.reverse;
            let mode = if a.abort {
                reshard::Mode::Abort
            } else if a.check {
                reshard::Mode::Check
            } else {
                reshard::Mode::Run
            };
            reshard::reshard_main(&cli.config, &cli.users, o, &a.common.admin_url, mode)
        }
        Command::Cutover(a) => {
            let o = move_options(cli, &a.common, &a.publication);
            reshard::cutover_main(&cli.config, &cli.users, o, &a.common.admin_url)
        }
    }
}

fn unreachable_run() -> ExitCode {
    eprintln!("pgdog: run is handled by main");
    ExitCode::FAILURE
}

/// The options of `reshard` / `cutover`: `[resharding]` values where no flag gives one.
fn move_options(
    cli: &Cli,
    m: &MoveArgs,
    publication: &str,
) -> pgdog::reshard::orchestrate::ReshardOptions {
    let defaults = resharding(cli);
    let mut o = pgdog::reshard::orchestrate::ReshardOptions::new(
        &m.db.from_database,
        &m.db.to_database,
        publication,
        &defaults,
    );
    if let Some(slot) = &m.slot {
        o.slot = slot.clone();
    }
    if let Some(n) = m.max_lag_bytes {
        o.max_lag_bytes = n;
    }
    o
}

fn configcheck(cli: &Cli) -> ExitCode {
    match pgdog::registry::load_settings(&cli.config, &cli.users) {
        Ok(s) => {
            println!(
                "{} and {}: OK ({} database entries, {} users)",
                cli.config.display(),
                cli.users.display(),
                s.config.databases.len(),
                s.users.users.len()
            );
            // Best effort: sharded tables' columns fed by per-shard sequences.
            let warnings = jobs::runtime(1)
                .map(|rt| rt.block_on(pgdog::ops::sequences::warnings(&s)))
                .unwrap_or_default();
            for w in warnings {
                println!("warning: {w}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pgdog: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `pgdog hash`: the password from stdin (first line), with a prompt on a terminal.
fn import_pgbouncer(a: &ImportArgs) -> ExitCode {
    let imported = match pgdog::config::pgbouncer::import(&a.ini, a.userlist.as_deref()) {
        Ok(i) => i,
        Err(e) => return fail("import-pgbouncer", e),
    };
    let (config, users) = (a.out.join("pgdog.toml"), a.out.join("users.toml"));
    for path in [&config, &users] {
        if path.exists() {
            return fail(
                "import-pgbouncer",
                format!("{} exists; not overwritten", path.display()),
            );
        }
    }
    let written = std::fs::create_dir_all(&a.out)
        .and_then(|()| std::fs::write(&config, &imported.config))
        .and_then(|()| std::fs::write(&users, &imported.users));
    if let Err(e) = written {
        return fail("import-pgbouncer", format!("{}: {e}", a.out.display()));
    }
    println!("wrote {} and {}", config.display(), users.display());
    if !imported.notes.is_empty() {
        println!("not carried as is ({}):", imported.notes.len());
        for note in &imported.notes {
            println!("  {note}");
        }
    }
    println!(
        "check them with: pgdog configcheck --config {} --users {}",
        config.display(),
        users.display()
    );
    ExitCode::SUCCESS
}

fn hash() -> ExitCode {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprint!("password: ");
        let _ = std::io::stderr().flush();
    }
    let mut line = String::new();
    if let Err(e) = stdin.lock().read_line(&mut line) {
        return fail("hash", format!("reading the password from stdin: {e}"));
    }
    let password = line.trim_end_matches(['\n', '\r']);
    if password.is_empty() {
        return fail("hash", "no password on stdin");
    }
    println!("{}", pgdog::auth::scram::hash_password(password));
    ExitCode::SUCCESS
}

/// `pgdog route`: the routing decision for each statement, without connecting anywhere.
fn route(cli: &Cli, a: &RouteArgs) -> ExitCode {
    let settings = match pgdog::registry::load_settings(&cli.config, &cli.users) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pgdog: {e}");
            return ExitCode::FAILURE;
        }
    };
    if !settings.has_database(&a.database) {
        eprintln!("pgdog: database `{}` is not configured", a.database);
        return ExitCode::FAILURE;
    }
    match pgdog::router::explain::explain(&settings, &a.database, &a.sql, &a.param) {
        Ok(lines) => {
            for line in lines {
                println!("{line}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pgdog: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `pgdog buckets`: the database's bucket map rebalanced over `--shards`, as TOML, with what
/// moves in comments.
fn buckets(cli: &Cli, a: &BucketsArgs) -> ExitCode {
    use pgdog::sharding::Buckets;
    let settings = match pgdog::registry::load_settings(&cli.config, &cli.users) {
        Ok(s) => s,
        Err(e) => return fail("buckets", e),
    };
    let shards = settings.shards(&a.database);
    if shards == 0 {
        return fail(
            "buckets",
            format!("database `{}` is not configured", a.database),
        );
    }
    let default = pgdog::config::BucketMap {
        database: a.database.clone(),
        buckets: a.buckets,
        shards: None,
    };
    let map = (settings.config.bucket_maps.iter())
        .find(|m| m.database == a.database)
        .unwrap_or(&default);
    let now = match Buckets::new(map, shards) {
        Ok(b) => b,
        Err(e) => return fail("buckets", e),
    };
    let next = now.rebalanced(a.shards);
    let moved = now.moved_to(&next);
    println!(
        "# {} of {} buckets move ({:.1}% of the keys), from {shards} shards to {}:",
        moved.len(),
        now.count(),
        100.0 * moved.len() as f64 / now.count() as f64,
        a.shards
    );
    let mut pairs: std::collections::BTreeMap<(usize, usize), usize> = Default::default();
    for (_, from, to) in &moved {
        *pairs.entry((*from, *to)).or_default() += 1;
    }
    for ((from, to), n) in pairs {
        println!("#   shard {from} -> shard {to}: {n} buckets");
    }
    print!("{}", next.to_toml(&a.database));
    ExitCode::SUCCESS
}

/// `pgdog cleanup`: a line per (shard, table), then the totals.
fn cleanup(cli: &Cli, a: &CleanupArgs) -> ExitCode {
    use pgdog::reshard::cleanup::{cleanup, CleanupOptions};
    let settings = match pgdog::registry::load_settings(&cli.config, &cli.users) {
        Ok(s) => s,
        Err(e) => return fail("cleanup", e),
    };
    let options = CleanupOptions {
        database: a.database.clone(),
        delete: a.delete,
        batch_blocks: a.batch_blocks,
        pause: std::time::Duration::from_millis(a.pause_ms),
    };
    let rt = match jobs::runtime(1) {
        Ok(rt) => rt,
        Err(e) => return fail("cleanup", e),
    };
    match rt.block_on(cleanup(&settings, &options, |r| println!("{r}"))) {
        Ok(reports) => {
            let misplaced: u64 = reports.iter().map(|r| r.misplaced).sum();
            let deleted: u64 = reports.iter().map(|r| r.deleted).sum();
            println!("{misplaced} rows placed on another shard, {deleted} deleted");
            ExitCode::SUCCESS
        }
        Err(e) => fail("cleanup", e),
    }
}

/// The options of `pgdog logical-dump`.
fn dump_options(a: &DumpArgs) -> Result<pgdog::replication::dump::DumpOptions, String> {
    use pgdog::replication::client::Streaming;
    Ok(pgdog::replication::dump::DumpOptions {
        url: a.url.clone(),
        slot: a.slot.clone(),
        publications: a.publication.clone(),
        create_temporary: a.create_temporary,
        primary_url: a.primary_url.clone(),
        proto: a.proto,
        binary: a.binary,
        streaming: match a.streaming {
            StreamingArg::Off => Streaming::Off,
            StreamingArg::On => Streaming::On,
            StreamingArg::Parallel => Streaming::Parallel,
        },
        two_phase: a.two_phase,
        until_lsn: lsn(a.until_lsn.as_deref())?,
    })
}
