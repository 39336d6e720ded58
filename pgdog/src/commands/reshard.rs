//! The command-line faces of the orchestration: `pgdog reshard` (with a live progress display
//! and a final report; Ctrl-C/SIGTERM stop it resumably; `--abort` removes what it left on the
//! servers) and `pgdog cutover` (resumes the replay from its stored position and cuts over a
//! running pgdog through its admin database).
use pgdog::config::Settings;
use pgdog::replication::client::url::parse_url;
use pgdog::reshard::cutover::{cutover, CutoverOptions, RunningReplay, Traffic};
use pgdog::reshard::display::render;
use pgdog::reshard::orchestrate::{abort, reshard, Control, ReshardError, ReshardOptions};
use pgdog::reshard::progress::Progress;
use pgdog::reshard::replay::ReplayOptions;
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// How the command line reaches the running proxies for a cutover: one `--admin-url` per
/// pgdog serving the source (all of them are switched together), else `[[resharding.peers]]`.
fn traffic(admin_urls: &[String], settings: &Settings) -> Result<Traffic, String> {
    let from_config: Vec<String> = settings
        .config
        .resharding
        .peers
        .iter()
        .map(|p| p.admin_url.clone())
        .collect();
    let admin_urls = if admin_urls.is_empty() {
        &from_config[..]
    } else {
        admin_urls
    };
    if admin_urls.is_empty() {
        return Err(
            "a cutover needs --admin-url postgres://admin:PASSWORD@HOST:PORT/admin \
             (the admin database of each pgdog serving the source; repeat it per pgdog)"
                .into(),
        );
    }
    let mut peers = Vec::with_capacity(admin_urls.len());
    for url in admin_urls {
        let t = parse_url(url).map_err(|e| format!("--admin-url {url}: {e}"))?;
        if peers
            .iter()
            .any(|p: &pgdog::backend::server::ServerTarget| p.addr() == t.addr())
        {
            return Err(format!("--admin-url {url}: this pgdog is given twice"));
        }
        peers.push(t);
    }
    Ok(Traffic::Admin(peers))
}

/// The configuration `command` works with; an error is printed (the command then exits with 1).
fn load(config: &Path, users: &Path, command: &str) -> Option<pgdog::config::Settings> {
    pgdog::registry::load_settings(config, users)
        .map_err(|e| eprintln!("pgdog: {command}: loading the configuration: {e}"))
        .ok()
}

/// The runtime `command` runs on; an error is printed (the command then exits with 1).
fn runtime(command: &str) -> Option<tokio::runtime::Runtime> {
    super::jobs::runtime(2)
        .map_err(|e| eprintln!("pgdog: {command}: {e}"))
        .ok()
}

/// Prints the progress every second on a terminal, every 10 s otherwise.
async fn display(control: Arc<Control>) {
    let tty = std::io::stdout().is_terminal();
    let every = if tty {
        Duration::from_secs(1)
    } else {
        Duration::from_secs(10)
    };
    let mut tick = tokio::time::interval(every);
    tick.tick().await;
    loop {
        tick.tick().await;
        if control.is_finished() {
            return;
        }
        let text = render(&control);
        if tty {
            print!("\x1b[2J\x1b[H{text}");
        } else {
            print!("{text}");
        }
    }
}

/// What `pgdog reshard` was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// The move (after the checks).
    Run,
    /// `--check`: the checks alone.
    Check,
    /// `--abort`: drop what a stopped move left.
    Abort,
}

/// `pgdog reshard --check`: prints one line per check; 1 when one refuses.
async fn check_only(settings: &Settings, options: &ReshardOptions) -> ExitCode {
    use pgdog::reshard::preflight::{run, Verdict};
    let report = run(settings, options).await;
    print!("{report}");
    match report.verdict() {
        Verdict::Refused => {
            eprintln!("pgdog: reshard --check: refused (nothing was created)");
            ExitCode::FAILURE
        }
        _ => ExitCode::SUCCESS,
    }
}

/// Entry point of `pgdog reshard`.
pub(super) fn reshard_main(
    config: &Path,
    users: &Path,
    options: ReshardOptions,
    admin_urls: &[String],
    mode: Mode,
) -> ExitCode {
    let Some(settings) = load(config, users, "reshard") else {
        return ExitCode::FAILURE;
    };
    let abort_it = mode == Mode::Abort;
    if mode == Mode::Check {
        let Some(rt) = runtime("reshard") else {
            return ExitCode::FAILURE;
        };
        return rt.block_on(check_only(&settings, &options));
    }
    let traffic = if options.cutover {
        match traffic(admin_urls, &settings) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("pgdog: reshard: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        Traffic::Detached
    };
    let Some(rt) = runtime("reshard") else {
        return ExitCode::FAILURE;
    };
    rt.block_on(async move {
if abort_it {
            let problems: Vec<String> = abort(&settings, &options)
                .await
                .into_iter()
                .filter(|p| !p.contains("does not exist"))
                .collect();
            for p in &problems {
                eprintln!("pgdog: reshard --abort: {p}");
            }
            if problems.is_empty() {
                println!(
                    "aborted: slot {} dropped on every shard of {}, progress tables removed from {}",
                    options.slot, options.databases.from, options.databases.to
                );
                return ExitCode::SUCCESS;
            }
            return ExitCode::FAILURE;
        }
        let control = Control::new(options);
        let shown = tokio::spawn(display(control.clone()));
        let stopper = {
            let control = control.clone();
            tokio::spawn(async move {
                pgdog::signals::interrupted().await;
                eprintln!("pgdog: reshard: stopping (the permanent slot is kept: run the same command to resume)");
                control.stop();
            })
        };
        let result = reshard(settings, traffic, control.clone()).await;
        stopper.abort();
        shown.abort();
        print!("{}", render(&control));
        match result {
            Ok(report) => {
                println!("{report}");
                if !control.options.cutover {
                    println!("run `pgdog cutover` (or the admin database's CUTOVER) to switch clients");
                }
                if let Some(slot) = report.cutover.as_ref().and_then(|c| c.reverse_slot.as_ref()) {
                    println!(
                        "{}",
                        pgdog::reshard::orchestrate::reverse_hint(&control.options, slot)
                    );
                }
                ExitCode::SUCCESS
            }
            Err(e @ ReshardError::Stopped(_)) => {
                eprintln!("pgdog: reshard: {e}");
                ExitCode::from(3)
            }
            Err(e) => {
                eprintln!("pgdog: reshard: {e}");
                ExitCode::FAILURE
            }
        }
    })
}

/// Entry point of `pgdog cutover`: replays from the stored position and cuts over.
pub(super) fn cutover_main(
    config: &Path,
    users: &Path,
    options: ReshardOptions,
    admin_urls: &[String],
) -> ExitCode {
    let Some(settings) = load(config, users, "cutover") else {
        return ExitCode::FAILURE;
    };
    let traffic = match traffic(admin_urls, &settings) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("pgdog: cutover: {e}");
            return ExitCode::from(2);
        }
    };
    let Some(rt) = runtime("cutover") else {
        return ExitCode::FAILURE;
    };
    rt.block_on(async move {
        let replay = RunningReplay::start(
            settings.clone(),
            ReplayOptions {
                databases: options.databases.clone(),
                publication: options.publication.clone(),
                slot: options.slot.clone(),
                until_lsn: None,
                progress: None,
                stop_at: None,
                atomic: false,
            },
            Arc::new(Progress::default()),
        );
        let cut = CutoverOptions {
            databases: options.databases.clone(),
            slot: options.slot.clone(),
            config: settings.config_path.clone(),
            max_lag_bytes: options.max_lag_bytes,
            lag_timeout: options.lag_timeout,
            drain_timeout: options.drain_timeout,
            publication: options.publication.clone(),
            reverse: false,
        };
        match cutover(&settings, &cut, &traffic, replay).await {
            Ok(report) => {
                println!("{report}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("pgdog: cutover: {e}");
                ExitCode::FAILURE
            }
        }
    })
}
