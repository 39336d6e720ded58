//! The `pgdog` binary: `pgdog [--config F] [--users F]` runs the proxy; `pgdog hash PASSWORD`
//! prints a SCRAM-SHA-256 verifier for users.toml; `pgdog configcheck` validates both files.
use pgdog::backend::Registry;
use pgdog::config::Settings;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage:
  pgdog [--config pgdog.toml] [--users users.toml]     run the proxy
  pgdog configcheck [--config F] [--users F]           validate the configuration files
  pgdog hash <password>                                print a SCRAM-SHA-256 verifier for users.toml
  pgdog route [--config F] [--users F] --database D \"SQL\" [--param V ...]
                                                       print each statement's shards (no server needed)";

struct Args {
    command: Option<String>,
    positional: Vec<String>,
    config: PathBuf,
    users: PathBuf,
    database: Option<String>,
    params: Vec<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        command: None,
        positional: Vec::new(),
        config: "pgdog.toml".into(),
        users: "users.toml".into(),
        database: None,
        params: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--config" | "-c" => args.config = it.next().ok_or("--config needs a file")?.into(),
            "--users" | "-u" => args.users = it.next().ok_or("--users needs a file")?.into(),
            "--database" | "-d" => {
                args.database = Some(it.next().ok_or("--database needs a name")?)
            }
            "--param" | "-p" => args.params.push(it.next().ok_or("--param needs a value")?),
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
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("pgdog: {e}");
                ExitCode::FAILURE
            }
        },
        Some("route") => route(&args),
        Some(other) => {
            eprintln!("pgdog: unknown command {other}\n{USAGE}");
            ExitCode::from(2)
        }
        None => run(args),
    }
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
        Registry::install(Registry::build(settings, None));
        tracing::info!("pgdog listening on {addr}");
        tokio::spawn(maintenance());
        tokio::spawn(recover_in_doubt());
        tokio::spawn(reload_on_sighup(args.config.clone(), args.users.clone()));
        pgdog::frontend::listener::listen(listener).await;
        ExitCode::SUCCESS
    })
}

/// Two-phase transactions left prepared by a pgdog that died are committed or rolled back.
async fn recover_in_doubt() {
    let registry = Registry::current();
    let mut done = std::collections::HashSet::new();
    for user in &registry.settings.users.users {
        if registry.settings.shards(&user.database) < 2 || !done.insert(user.database.clone()) {
            continue;
        }
        if let Some(pools) = registry.shard_pools(&user.name, &user.database) {
            let (c, r) = pgdog::backend::twophase::recover(&user.database, &pools).await;
            if c + r > 0 {
                tracing::info!(
                    "database {}: resolved in-doubt transactions: {c} committed, {r} rolled back",
                    user.database
                );
            }
        }
    }
}

/// Pool upkeep once a second: idle and lifetime limits, minimum connections.
async fn maintenance() {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    loop {
        tick.tick().await;
        let registry = Registry::current();
        for pool in registry.pools() {
            pool.maintain().await;
        }
    }
}

/// SIGHUP re-reads both files; connected clients stay, changed pools drain.
async fn reload_on_sighup(config: PathBuf, users: PathBuf) {
    let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) else {
        tracing::error!("cannot listen for SIGHUP: reload disabled");
        return;
    };
    while hup.recv().await.is_some() {
        match Settings::load(&config, &users) {
            Ok(settings) => {
                let current = Registry::current();
                Registry::install(Registry::build(settings, Some(&current)));
                tracing::info!("configuration reloaded");
            }
            Err(e) => tracing::error!("reload failed, keeping the current configuration: {e}"),
        }
    }
}
