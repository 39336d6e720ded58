//! The `pgdog` binary: runs the proxy (no subcommand, or `run`), or one of the commands of
//! [`commands`]: configcheck, hash, route, logical-dump, import-pgbouncer, and the resharding
//! steps (schema-sync, copy-data, replay, verify, reshard, cutover).
mod commands;

use clap::Parser;
use commands::{Cli, Command};
use pgdog::config::Settings;
use pgdog::registry::Registry;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Test hooks (FAILPOINTS), for the proxy and every command.
    #[cfg(feature = "failpoints")]
    let _failpoints = fail::FailScenario::setup();
    match &cli.command {
        None | Some(Command::Run) => run(&cli.config, &cli.users),
        Some(command) => commands::dispatch(&cli, command),
    }
}

fn run(config: &std::path::Path, users: &std::path::Path) -> ExitCode {
    let settings = match pgdog::registry::load_settings(config, users) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pgdog: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = pgdog::ops::logging::init(&settings.config.general) {
        eprintln!("pgdog: {e}");
        return ExitCode::FAILURE;
    }
    match instance_id(&settings, config) {
        Ok(id) => pgdog::backend::twophase::set_instance(&id),
        Err(e) => {
            eprintln!("pgdog: instance id: {e}");
            return ExitCode::FAILURE;
        }
    }
    raise_fd_limit();
    let runtime = match runtime(settings.config.general.workers) {
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
        let reuseport = settings.config.general.so_reuseport;
        // Without so_reuseport the port is taken first (a second pgdog fails at once). With it,
        // once the first health checks are done: the kernel hands this pgdog connections as
        // soon as it listens, and the handover socket says it is ready to take over.
        let (mut listener, mut unix) = (None, None);
        if !reuseport {
            match pgdog::frontend::listener::bind(&addr, false).await {
                Ok(l) => listener = Some(l),
                Err(e) => {
                    eprintln!("pgdog: listening on {addr}: {e}");
                    return ExitCode::FAILURE;
                }
            }
            // The socket file with the port: a client that reached one finds the other.
            match bind_unix(&settings.config.general) {
                Ok(u) => unix = Some(u),
                Err(code) => return code,
            }
        }
        let check_timeout = settings.config.general.healthcheck_timeout;
        // Spill files of a pgdog that was killed while merging.
        let temp = settings.config.general.temp_directory.clone();
        pgdog::merge::sweep_temp_files(&temp.unwrap_or_else(std::env::temp_dir));
        Registry::install(Registry::build(settings, None));
        // `auto` servers get their roles from the first round of health checks.
        let first_checks = pgdog::registry::health::spawn();
        let _ = tokio::time::timeout(
            std::time::Duration::from_millis(check_timeout + 1_000),
            first_checks,
        )
        .await;
        // The handover socket first: when it cannot be made, no client waits on the port.
        if let Err(e) = pgdog::ops::handover::start(pgdog::frontend::handover::take) {
            eprintln!("pgdog: handover socket: {e}");
            return ExitCode::FAILURE;
        }
        let unix = match unix {
            Some(u) => u,
            None => match bind_unix(&Registry::current().settings.config.general) {
                Ok(u) => u,
                Err(code) => {
                    pgdog::ops::handover::remove_own();
                    return code;
                }
            },
        };
        let listener = match listener {
            Some(l) => l,
            None => match pgdog::frontend::listener::bind(&addr, true).await {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("pgdog: listening on {addr}: {e}");
                    pgdog::ops::handover::remove_own();
                    return ExitCode::FAILURE;
                }
            },
        };
        tracing::info!(
            "pgdog listening on {addr}{} ({} worker thread(s))",
            unix.as_ref()
                .map(|u| format!(" and {}", u.path()))
                .unwrap_or_default(),
            settings_workers(&Registry::current())
        );
        let leases = two_phase_start().await;
        tokio::spawn(two_phase_upkeep(leases));
        let unix = unix.map(|u| tokio::spawn(pgdog::frontend::unix_listener::listen(u)));
        tokio::spawn(maintenance());
        // SIGHUP and the admin database's RELOAD share the same reload code and file paths.
        pgdog::admin::set_config_paths(config.to_path_buf(), users.to_path_buf());
        tokio::spawn(pgdog::admin::reload_on_sighup());
        // RESHARD, SHOW RESHARD, CUTOVER, STOP, ABORT RESHARD in the admin database.
        pgdog::reshard::admin_commands::register();
        if let Err(e) = pgdog::ops::http::spawn().await {
            eprintln!("pgdog: metrics endpoint: {e}");
            return ExitCode::FAILURE;
        }
        tokio::spawn(pgdog::stats::counters::roll_every(|| {
            let period = Registry::current().settings.config.general.stats_period;
            std::time::Duration::from_millis(period.max(1))
        }));
        tokio::spawn(pgdog::ops::shutdown::on_signals());
        // Until the shutdown starts; then the listening socket is handed over (so_reuseport),
        // or closed: new clients are refused while the others finish.
        pgdog::frontend::listener::listen(listener).await;
        // Listening sockets other pgdogs handed over go on to the successor too.
        pgdog::frontend::listener::adopted_done().await;
        if let Some(unix) = unix {
            let _ = unix.await;
        }
        pgdog::ops::shutdown::drain().await;
        ExitCode::SUCCESS
    })
}

/// pgdog's Unix-domain socket (None: `unix_socket_dir` is empty); the exit status when it
/// cannot be made.
fn bind_unix(
    general: &pgdog::config::General,
) -> Result<Option<pgdog::frontend::unix_listener::UnixSocket>, ExitCode> {
    pgdog::frontend::unix_listener::bind(general).map_err(|e| {
        eprintln!("pgdog: Unix-domain socket: {e}");
        ExitCode::FAILURE
    })
}

/// Two-phase commit upkeep: this instance's id, the decision tables, and recovery of the
/// in-doubt transactions this instance left (at start, then every
/// `two_phase_recovery_interval`).
/// Two-phase commit's start, before clients are served (a first commit needs the decision
/// table): this process' lease on each database's first shard (another process of the
/// instance leaves its transactions alone while it is held), then the decision tables. Bounded
/// by `connect_timeout` per step: servers down at start are retried by the upkeep.
async fn two_phase_start() -> Leases {
    let registry = Registry::current();
    if !registry.settings.config.general.two_phase_commit {
        return Vec::new();
    }
    let databases = two_phase_databases(&registry);
    let mut leases: Leases = databases
        .iter()
        .filter_map(|(_, pools)| pools.first().cloned())
        .map(|p| (p, None))
        .collect();
    let bound = std::time::Duration::from_millis(
        registry.settings.config.general.connect_timeout.max(1) * 2,
    );
    let _ = tokio::time::timeout(bound, keep_leases(&mut leases)).await;
    for (database, pools) in &databases {
        let prepare = pgdog::backend::twophase::prepare_tables(database, pools);
        if tokio::time::timeout(bound, prepare).await.is_err() {
            tracing::warn!("two-phase commit: {database}: decision tables not made at start");
        }
    }
    leases
}

/// Leases held by this process (see `keep_leases`).
type Leases = Vec<(pgdog::backend::Pool, Option<pgdog::backend::server::Server>)>;

async fn two_phase_upkeep(mut leases: Leases) {
    if !Registry::current().settings.config.general.two_phase_commit {
        return;
    }
    loop {
        keep_leases(&mut leases).await;
        let registry = Registry::current();
        for (database, pools) in two_phase_databases(&registry) {
            let (c, r) = pgdog::backend::twophase::recover(&database, &pools).await;
            if c + r > 0 {
                tracing::info!(
                    "database {database}: resolved in-doubt transactions: {c} branch(es) committed, {r} rolled back"
                );
            }
        }
        // Read each time: a reload's interval takes effect at the next pass.
        let every = registry.settings.config.general.two_phase_recovery_interval;
        drop(registry);
        tokio::time::sleep(std::time::Duration::from_millis(every.max(1))).await;
    }
}

/// The worker threads serving clients (`workers`; 0: one per core).
fn settings_workers(registry: &Registry) -> String {
    match registry.settings.config.general.workers {
        0 => "one per core".into(),
        n => n.to_string(),
    }
}

/// Takes (again, after its connection was lost) this process' two-phase lease on each first
/// shard, on a connection of its own that is kept open.
async fn keep_leases(
    leases: &mut [(pgdog::backend::Pool, Option<pgdog::backend::server::Server>)],
) {
    use pgdog::backend::server::Server;
    let timeout = std::time::Duration::from_millis(
        Registry::current().settings.config.general.connect_timeout,
    );
    for (pool, lease) in leases.iter_mut() {
        if lease.as_mut().is_some_and(|s| !s.is_broken()) {
            continue;
        }
        *lease = match Server::connect(pool.target(), timeout).await {
            Ok(mut server) => match server.execute(&pgdog::backend::twophase::lease_sql()).await {
                Ok(()) => Some(server),
                Err(e) => {
                    tracing::warn!(
                        "two-phase commit: taking the lease on {}: {e}",
                        pool.target().addr()
                    );
                    None
                }
            },
            Err(e) => {
                tracing::warn!(
                    "two-phase commit: taking the lease on {}: {e}",
                    pool.target().addr()
                );
                None
            }
        };
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

/// Pool upkeep once a second, each pool on its own (one still busy with its last pass is
/// skipped): idle and lifetime limits, minimum connections; and memory back to the system after
/// many clients left.
async fn maintenance() {
    let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
    let mut peak = 0;
    loop {
        tick.tick().await;
        Registry::sweep_unused();
        let registry = Registry::current();
        for pool in registry.pools() {
            // Each pool's pass is its own task: a server that swallows connection attempts
            // holds up its own pool's warm-up (up to connect_timeout), no other's.
            if let Some(pass) = pool.start_maintenance() {
                tokio::spawn(async move {
                    pool.maintain().await;
                    drop(pass);
                });
            }
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

/// The runtime serving clients. `workers = 1` is one event loop on the main thread (tokio's
/// current-thread scheduler): no hand-offs between threads, and none of the multi-thread
/// scheduler's per-wake-up bookkeeping (two clock reads and a `powf` per batch of tasks). At a
/// fixed 4,000 tx/s on 2 cores it cost less CPU per transaction than `workers = 2` (see
/// benchmarks/results/pooler.md). 0 is one worker per core.
fn runtime(workers: usize) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = if workers == 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        if workers > 1 {
            b.worker_threads(workers);
        }
        b
    };
    builder.enable_all().build()
}
