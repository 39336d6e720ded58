//! The `pgdog` binary: `pgdog [--config F] [--users F]` runs the proxy; `pgdog hash PASSWORD`
//! prints a SCRAM-SHA-256 verifier for users.toml; `pgdog configcheck` validates both files;
//! `pgdog logical-dump` prints a logical replication slot's changes as JSON lines;
//! `pgdog schema-sync` copies a publication's table definitions to every destination shard.
//! `pgdog copy-data` copies a publication's tables into the destination's shards.
//! `pgdog replay` applies the permanent slot's changes to the destination's shards.
//! `pgdog verify` compares a database with its resharded copy, table by table.
//! `pgdog reshard` runs the whole move with live progress; `pgdog cutover` switches clients.
use pgdog::backend::Registry;
use pgdog::config::Settings;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage:
  pgdog [--config pgdog.toml] [--users users.toml]     run the proxy
  pgdog configcheck [--config F] [--users F]           validate the configuration files
  pgdog hash <password>                                print a SCRAM-SHA-256 verifier for users.toml
  pgdog route [--config F] [--users F] --database D \"SQL\" [--param V ...]
                                                       print each statement's shards (no server needed)
  pgdog logical-dump --url postgres://user[:pw]@host:port/db --slot S --publication P [--publication P2]
                     [--create-temporary [--primary-url URL]] [--proto 1-4] [--binary] [--streaming on|parallel]
                     [--two-phase] [--until-lsn X/Y]
                                                       stream slot S (pgoutput) as JSON lines until
                                                       --until-lsn or Ctrl-C/SIGTERM, then stop cleanly
  pgdog schema-sync [--config F] [--users F] --from-database A --to-database B --publication P [--phase pre|post]
                                                       copy the publication's table definitions (pg_dump)
                                                       to every shard of B: pre = types, tables, sequences,
                                                       primary keys; post = indexes, foreign keys, triggers
  pgdog copy-data [--config F] [--users F] --from-database A --to-database B --publication P
                  [--slot S] [--parallel N]
                                                       create the permanent slot S on A's primary, then
                                                       copy each table of P (from a replica when there is
                                                       one, under its own snapshot) into B's shards, N
                                                       tables at once (default 2); prints each table's
                                                       rows and LSN watermark
  pgdog replay [--config F] [--users F] --from-database A --to-database B --publication P
               --slot S [--until-lsn X/Y] [--atomic]
                                                       apply slot S's changes (after each table's copy
                                                       watermark) to B's shards, routed by sharding key,
                                                       until --until-lsn or Ctrl-C/SIGTERM; resumes from
                                                       the position stored on B's shards; --atomic:
                                                       two-phase commit on the shards a destination
                                                       transaction touches (also [resharding] replay_atomic)
  pgdog verify [--config F] [--users F] --from-database A --to-database B [--table T ...]
                                                       compare every table of A with the union of B's shards
                                                       (row count, checksum, rows on the right shard);
                                                       exit 1 when anything differs
  pgdog reshard [--config F] [--users F] --from-database A --to-database B --publication P
                [--slot S] [--parallel N] [--cutover --admin-url URL [--reverse]] [--max-lag-bytes N]
                [--abort]
                                                       the whole move: refuse tables without a key,
                                                       schema pre, copy, schema post, replay with live
                                                       progress; --cutover then switches A's clients to
                                                       B's shards through the running pgdog's admin
                                                       database (--reverse: then replicate the new shards
                                                       back to the old ones until Ctrl-C, for a rollback);
                                                       Ctrl-C stops (run again to resume);
                                                       --abort drops the slots and progress tables
  pgdog cutover [--config F] [--users F] --from-database A --to-database B --publication P
                [--slot S] --admin-url URL [--max-lag-bytes N]
                                                       replay until the lag is small, pause A in the
                                                       running pgdog, drain, copy sequences, swap A and
                                                       B in the config file, reload, resume";

struct Args {
    command: Option<String>,
    positional: Vec<String>,
    config: PathBuf,
    users: PathBuf,
    database: Option<String>,
    params: Vec<String>,
    dump: DumpArgs,
    from_database: Option<String>,
    to_database: Option<String>,
    phase: Option<String>,
    tables: Vec<String>,
    parallel: Option<String>,
    cutover: bool,
    reverse: bool,
    abort: bool,
    /// `pgdog replay --atomic`: two-phase commit across shards.
    atomic: bool,
    /// `--admin-url`, once per pgdog of the fleet.
    admin_urls: Vec<String>,
    max_lag_bytes: Option<String>,
}

/// Flags of `pgdog logical-dump`.
#[derive(Default)]
struct DumpArgs {
    url: Option<String>,
    primary_url: Option<String>,
    slot: Option<String>,
    publications: Vec<String>,
    create_temporary: bool,
    proto: Option<String>,
    binary: bool,
    streaming: Option<String>,
    two_phase: bool,
    until_lsn: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        command: None,
        positional: Vec::new(),
        config: "pgdog.toml".into(),
        users: "users.toml".into(),
        database: None,
        params: Vec::new(),
        dump: DumpArgs::default(),
        from_database: None,
        to_database: None,
        phase: None,
        tables: Vec::new(),
        parallel: None,
        cutover: false,
        reverse: false,
        abort: false,
        atomic: false,
        admin_urls: Vec::new(),
        max_lag_bytes: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--config" | "-c" => args.config = it.next().ok_or("--config needs a file")?.into(),
            "--users" | "-u" => args.users = it.next().ok_or("--users needs a file")?.into(),
            "--database" | "-d" => {
                args.database = Some(it.next().ok_or("--database needs a name")?)
            }
            "--from-database" => {
                args.from_database = Some(it.next().ok_or("--from-database needs a name")?)
            }
            "--to-database" => {
                args.to_database = Some(it.next().ok_or("--to-database needs a name")?)
            }
            "--table" => args.tables.push(it.next().ok_or("--table needs a name")?),
            "--parallel" => args.parallel = Some(it.next().ok_or("--parallel needs a number")?),
            "--cutover" => args.cutover = true,
            "--reverse" => args.reverse = true,
            "--abort" => args.abort = true,
            "--atomic" => args.atomic = true,
            "--pg-bin" => pgdog::reshard::schema_sync::set_pg_bin(
                it.next().ok_or("--pg-bin needs a folder")?.into(),
            ),
            "--admin-url" => args
                .admin_urls
                .push(it.next().ok_or("--admin-url needs a URL")?),
            "--max-lag-bytes" => {
                args.max_lag_bytes = Some(it.next().ok_or("--max-lag-bytes needs a number")?)
            }
            "--phase" => args.phase = Some(it.next().ok_or("--phase needs pre or post")?),
            "--param" | "-p" => args.params.push(it.next().ok_or("--param needs a value")?),
            "--url" => args.dump.url = Some(it.next().ok_or("--url needs a URL")?),
            "--primary-url" => {
                args.dump.primary_url = Some(it.next().ok_or("--primary-url needs a URL")?)
            }
            "--slot" => args.dump.slot = Some(it.next().ok_or("--slot needs a name")?),
            "--publication" => args
                .dump
                .publications
                .push(it.next().ok_or("--publication needs a name")?),
            "--create-temporary" => args.dump.create_temporary = true,
            "--proto" => args.dump.proto = Some(it.next().ok_or("--proto needs 1 to 4")?),
            "--binary" => args.dump.binary = true,
            "--streaming" => {
                args.dump.streaming = Some(it.next().ok_or("--streaming needs on or parallel")?)
            }
            "--two-phase" => args.dump.two_phase = true,
            "--until-lsn" => {
                args.dump.until_lsn = Some(it.next().ok_or("--until-lsn needs an LSN")?)
            }
            "-h" | "--help" => return Err(String::new()),
            _ if args.command.is_none() && !a.starts_with('-') => args.command = Some(a),
            _ if !a.starts_with('-') => args.positional.push(a),
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("pgdog: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match args.command.as_deref() {
        Some("hash") => match args.positional.first() {
            Some(password) => {
                println!("{}", pgdog::auth::scram::hash_password(password));
                ExitCode::SUCCESS
            }
            None => {
                eprintln!("{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("configcheck") => match Settings::load(&args.config, &args.users) {
            Ok(s) => {
                println!(
                    "{} and {}: OK ({} database entries, {} users)",
                    args.config.display(),
                    args.users.display(),
                    s.config.databases.len(),
                    s.users.users.len()
                );
                // Best effort: sharded tables' columns fed by per-shard sequences.
                let warnings = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
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
        },
        Some("route") => route(&args),
        Some("logical-dump") => match dump_options(args.dump) {
            Ok(options) => pgdog::replication::dump::main(options),
            Err(e) => {
                eprintln!("pgdog: logical-dump: {e}\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("schema-sync") => match schema_sync_options(&args) {
            Ok(options) => pgdog::reshard::schema_sync::main(options),
            Err(e) => {
                eprintln!("pgdog: schema-sync: {e}\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("copy-data") => match copy_data_options(&args) {
            Ok(options) => pgdog::reshard::copy::main(options),
            Err(e) => {
                eprintln!("pgdog: copy-data: {e}\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("replay") => match replay_options(&args) {
            Ok(options) => pgdog::reshard::replay::main(options),
            Err(e) => {
                eprintln!("pgdog: replay: {e}\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("verify") => match (args.from_database.clone(), args.to_database.clone()) {
            (Some(from_database), Some(to_database)) => {
                pgdog::reshard::verify::main(pgdog::reshard::verify::VerifyOptions {
                    config: args.config.clone(),
                    users: args.users.clone(),
                    from_database,
                    to_database,
                    tables: args.tables.clone(),
                })
            }
            _ => {
                eprintln!("pgdog: verify needs --from-database and --to-database\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some(cmd @ ("reshard" | "cutover")) => match reshard_options(&args) {
            Ok(options) if cmd == "reshard" => pgdog::reshard::cli::reshard_main(
                &args.config,
                &args.users,
                options,
                &args.admin_urls,
                args.abort,
            ),
            Ok(options) => pgdog::reshard::cli::cutover_main(
                &args.config,
                &args.users,
                options,
                &args.admin_urls,
            ),
            Err(e) => {
                eprintln!("pgdog: {cmd}: {e}\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some(other) => {
            eprintln!("pgdog: unknown command {other}\n{USAGE}");
            ExitCode::from(2)
        }
        None => run(args),
    }
}

/// Checks the flags of `pgdog logical-dump`.
fn dump_options(a: DumpArgs) -> Result<pgdog::replication::dump::DumpOptions, String> {
    use pgdog::replication::client::{parse_lsn, Streaming};
    let proto = match a.proto.as_deref() {
        None => 4,
        Some(p) => match p.parse::<u32>() {
            Ok(v) if (1..=4).contains(&v) => v,
            _ => return Err(format!("--proto {p}: use 1, 2, 3 or 4")),
        },
    };
    let streaming = match a.streaming.as_deref() {
        None | Some("off") => Streaming::Off,
        Some("on") => Streaming::On,
        Some("parallel") => Streaming::Parallel,
        Some(other) => return Err(format!("--streaming {other}: use off, on or parallel")),
    };
    let until_lsn = match a.until_lsn.as_deref() {
        None => None,
        Some(l) => Some(parse_lsn(l).map_err(|e| e.to_string())?),
    };
    if a.publications.is_empty() {
        return Err("--publication is required".into());
    }
    Ok(pgdog::replication::dump::DumpOptions {
        url: a.url.ok_or("--url is required")?,
        slot: a.slot.ok_or("--slot is required")?,
        publications: a.publications,
        create_temporary: a.create_temporary,
        primary_url: a.primary_url,
        proto,
        binary: a.binary,
        streaming,
        two_phase: a.two_phase,
        until_lsn,
    })
}

/// Checks the flags of `pgdog schema-sync`.
fn schema_sync_options(
    args: &Args,
) -> Result<pgdog::reshard::schema_sync::SchemaSyncOptions, String> {
    use pgdog::reshard::schema_sync::{Phase, SchemaSyncOptions};
    let phase = match args.phase.as_deref() {
        None => Phase::Both,
        Some(p) => p.parse::<Phase>()?,
    };
    let publication = one_publication(args)?;
    Ok(SchemaSyncOptions {
        config: args.config.clone(),
        users: args.users.clone(),
        from_database: required(&args.from_database, "--from-database")?,
        to_database: required(&args.to_database, "--to-database")?,
        publication,
        phase,
    })
}

/// The one `--publication` a resharding command needs.
fn one_publication(args: &Args) -> Result<String, String> {
    match args.dump.publications.as_slice() {
        [p] => Ok(p.clone()),
        [] => Err("--publication is required".into()),
        _ => Err("give one --publication".into()),
    }
}

/// A flag's value, or an error naming it.
fn required(value: &Option<String>, flag: &str) -> Result<String, String> {
    value.clone().ok_or_else(|| format!("{flag} is required"))
}

/// Checks the flags of `pgdog reshard` and `pgdog cutover`.
fn reshard_options(args: &Args) -> Result<pgdog::reshard::orchestrate::ReshardOptions, String> {
    let from = required(&args.from_database, "--from-database")?;
    let to = required(&args.to_database, "--to-database")?;
    let publication = if args.abort {
        args.dump.publications.first().cloned().unwrap_or_default()
    } else {
        one_publication(args)?
    };
    // `[resharding]` gives the defaults (a file that does not load is reported by the command).
    let defaults = Settings::load(&args.config, &args.users)
        .map(|s| s.config.resharding)
        .unwrap_or_default();
    let mut o =
        pgdog::reshard::orchestrate::ReshardOptions::new(&from, &to, &publication, &defaults);
    if let Some(slot) = &args.dump.slot {
        o.slot = slot.clone();
    }
    if let Some(n) = args.parallel.as_deref() {
        o.parallel = match n.parse::<usize>() {
            Ok(v) if v >= 1 => v,
            _ => return Err(format!("--parallel {n}: use a number of at least 1")),
        };
    }
    if let Some(n) = args.max_lag_bytes.as_deref() {
        o.max_lag_bytes = n
            .parse::<u64>()
            .map_err(|_| format!("--max-lag-bytes {n}: use a number of bytes"))?;
    }
    o.cutover = args.cutover;
    o.reverse = args.reverse;
    if o.reverse && !o.cutover {
        return Err("--reverse needs --cutover".into());
    }
    Ok(o)
}

/// Checks the flags of `pgdog copy-data`.
fn copy_data_options(args: &Args) -> Result<pgdog::reshard::copy::CopyDataOptions, String> {
    let publication = one_publication(args)?;
    let parallel = match args.parallel.as_deref() {
        None => Settings::load(&args.config, &args.users)
            .map(|s| s.config.resharding.copy_parallel)
            .unwrap_or(2),
        Some(n) => match n.parse::<usize>() {
            Ok(v) if v >= 1 => v,
            _ => return Err(format!("--parallel {n}: use a number of at least 1")),
        },
    };
    Ok(pgdog::reshard::copy::CopyDataOptions {
        config: args.config.clone(),
        users: args.users.clone(),
        from_database: required(&args.from_database, "--from-database")?,
        to_database: required(&args.to_database, "--to-database")?,
        publication,
        slot: args.dump.slot.clone(),
        parallel,
        progress: None,
    })
}

/// Checks the flags of `pgdog replay`.
fn replay_options(args: &Args) -> Result<pgdog::reshard::replay::ReplayOptions, String> {
    let publication = one_publication(args)?;
    let until_lsn = match args.dump.until_lsn.as_deref() {
        None => None,
        Some(l) => Some(pgdog::replication::client::parse_lsn(l).map_err(|e| e.to_string())?),
    };
    Ok(pgdog::reshard::replay::ReplayOptions {
        config: args.config.clone(),
        users: args.users.clone(),
        from_database: required(&args.from_database, "--from-database")?,
        to_database: required(&args.to_database, "--to-database")?,
        publication,
        slot: args.dump.slot.clone().ok_or("--slot is required")?,
        until_lsn,
        progress: None,
        stop_at: None,
        atomic: args.atomic,
    })
}

/// `pgdog route`: the routing decision for each statement, without connecting anywhere.
fn route(args: &Args) -> ExitCode {
    let settings = match Settings::load(&args.config, &args.users) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pgdog: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (Some(database), Some(sql)) = (args.database.as_deref(), args.positional.first()) else {
        eprintln!("pgdog: route needs --database and the SQL\n{USAGE}");
        return ExitCode::from(2);
    };
    if !settings.has_database(database) {
        eprintln!("pgdog: database `{database}` is not configured");
        return ExitCode::FAILURE;
    }
    let lines = match pgdog::router::explain::explain(&settings, database, sql, &args.params) {
        Ok(lines) => lines,
        Err(e) => {
            eprintln!("pgdog: {e}");
            return ExitCode::FAILURE;
        }
    };
    for line in lines {
        println!("{line}");
    }
    ExitCode::SUCCESS
}

fn run(args: Args) -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let settings = match Settings::load(&args.config, &args.users) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pgdog: {e}");
            return ExitCode::FAILURE;
        }
    };
    match instance_id(&settings, &args.config) {
        Ok(id) => pgdog::backend::twophase::set_instance(&id),
        Err(e) => {
            eprintln!("pgdog: instance id: {e}");
            return ExitCode::FAILURE;
        }
    }
    #[cfg(feature = "failpoints")]
    let _failpoints = fail::FailScenario::setup();
    raise_fd_limit();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if settings.config.general.workers > 0 {
        builder.worker_threads(settings.config.general.workers);
    }
    let runtime = match builder.enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("pgdog: starting the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let addr = format!(
            "{}:{}",
            settings.config.general.host, settings.config.general.port
        );
        let listener = match tokio::net::TcpListener::bind(&addr).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("pgdog: listening on {addr}: {e}");
                return ExitCode::FAILURE;
            }
        };
        let check_timeout = settings.config.general.healthcheck_timeout;
        Registry::install(Registry::build(settings, None));
        // `auto` servers get their roles from the first round of health checks.
        let first_checks = pgdog::backend::health::spawn();
        let _ = tokio::time::timeout(
            std::time::Duration::from_millis(check_timeout + 1_000),
            first_checks,
        )
        .await;
        tracing::info!("pgdog listening on {addr}");
        tokio::spawn(maintenance());
        tokio::spawn(two_phase_upkeep());
        // SIGHUP and the admin database's RELOAD share the same reload code and file paths.
        pgdog::admin::set_config_paths(args.config.clone(), args.users.clone());
        tokio::spawn(pgdog::admin::reload_on_sighup());
        // RESHARD, SHOW RESHARD, CUTOVER, STOP, ABORT RESHARD in the admin database.
        pgdog::reshard::admin_commands::register();
        if let Err(e) = pgdog::ops::http::spawn().await {
            eprintln!("pgdog: metrics endpoint: {e}");
            return ExitCode::FAILURE;
        }
        let period = Registry::current().settings.config.general.stats_period;
        tokio::spawn(pgdog::stats::counters::roll_every(
            std::time::Duration::from_millis(period),
        ));
        tokio::spawn(pgdog::ops::shutdown::on_signals());
        tokio::select! {
            _ = pgdog::frontend::listener::listen(listener) => {}
            _ = pgdog::ops::shutdown::requested() => {}
        }
        // The listener is closed: new clients are refused while the others finish.
        pgdog::ops::shutdown::drain().await;
        ExitCode::SUCCESS
    })
}

/// Two-phase commit upkeep: this instance's id, the decision tables, and recovery of the
/// in-doubt transactions this instance left (at start, then every
/// `two_phase_recovery_interval`).
async fn two_phase_upkeep() {
    let registry = Registry::current();
    if !registry.settings.config.general.two_phase_commit {
        return;
    }
    let databases = two_phase_databases(&registry);
    for (database, pools) in &databases {
        pgdog::backend::twophase::prepare_tables(database, pools).await;
    }
    let every = registry.settings.config.general.two_phase_recovery_interval;
    drop(registry);
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(every));
    loop {
        tick.tick().await;
        let registry = Registry::current();
        for (database, pools) in two_phase_databases(&registry) {
            let (c, r) = pgdog::backend::twophase::recover(&database, &pools).await;
            if c + r > 0 {
                tracing::info!(
                    "database {database}: resolved in-doubt transactions: {c} branch(es) committed, {r} rolled back"
                );
            }
        }
    }
}

/// Each sharded database once, with its primary pools in shard order.
fn two_phase_databases(registry: &Registry) -> Vec<(String, Vec<pgdog::backend::Pool>)> {
    let mut done = std::collections::HashSet::new();
    let mut out = Vec::new();
    for user in &registry.settings.users.users {
        if registry.settings.shards(&user.database) < 2 || !done.insert(user.database.clone()) {
            continue;
        }
        if let Some(pools) = registry.primary_pools(&user.name, &user.database) {
            out.push((user.database.clone(), pools));
        }
    }
    out
}

/// `instance_id`, else the one kept next to pgdog.toml (generated at first start).
fn instance_id(settings: &Settings, config: &std::path::Path) -> Result<String, String> {
    if let Some(id) = &settings.config.general.instance_id {
        return Ok(id.clone());
    }
    if !settings.config.general.two_phase_commit {
        // Only two-phase transaction ids carry it: no file to keep.
        return Ok("pgdog".into());
    }
    let path = config
        .parent()
        .unwrap_or(std::path::Path::new("."))
        .join("pgdog.instance_id");
    match std::fs::read_to_string(&path) {
        Ok(id) if !id.trim().is_empty() => Ok(id.trim().to_string()),
        _ => {
            let id = format!("{:012x}", rand::random::<u64>() & 0xffff_ffff_ffff);
            std::fs::write(&path, format!("{id}\n")).map_err(|e| {
                format!(
                    "writing {}: {e} (or set general.instance_id)",
                    path.display()
                )
            })?;
            Ok(id)
        }
    }
}

/// Each client and server connection is a file descriptor: the soft limit (often 1024) goes up
/// to the hard one, so thousands of clients fit.
fn raise_fd_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit write and read the struct passed; no other memory.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max
        {
            limit.rlim_cur = limit.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                tracing::warn!("could not raise the open files limit");
            }
        }
    }
}

/// Pool upkeep once a second: idle and lifetime limits, minimum connections; and memory back
/// to the system after many clients left.
async fn maintenance() {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    let mut peak = 0;
    loop {
        tick.tick().await;
        let registry = Registry::current();
        for pool in registry.pools() {
            pool.maintain().await;
        }
        let clients = pgdog::stats::clients::count();
        peak = peak.max(clients);
        if peak >= clients + 500 {
            // The allocator keeps freed session buffers otherwise (188 MiB after 10,000 idle
            // clients left, against 14 MiB at rest).
            // SAFETY: malloc_trim only returns free heap memory to the system.
            #[cfg(all(target_os = "linux", target_env = "gnu"))]
            unsafe {
                libc::malloc_trim(0);
            }
            peak = clients;
        }
    }
}
