//! The admin database's resharding commands, run inside the proxy process:
//!
//! - `RESHARD <from> <to> <publication> [SLOT <name>] [PARALLEL <n>] [CUTOVER [REVERSE]]` starts
//!   a reshard in the background (one at a time) and returns at once; REVERSE keeps replicating
//!   the new shards back to the old ones after the cutover until `STOP`;
//! - `SHOW RESHARD`: its phase, per table progress, per source shard replication lag;
//! - `CUTOVER`: cut over once the replay caught up; returns when the cutover is done (or failed);
//! - `STOP`: stop the running reshard (resumable with the same `RESHARD`; in reverse
//!   replication, its slots stay for a rollback);
//! - `ABORT RESHARD <from> <to> [SLOT <name>]`: stop it and drop its permanent slots and
//!   progress tables.
//!
//! The cutover pauses, reloads and resumes this process's own traffic.
use crate::admin::{AdminError, Extension, Reply};
use crate::backend::server::ServerTarget;
use crate::registry::Registry;
use crate::replication::client::url::parse_url;
use crate::reshard::cutover::Traffic;
use crate::reshard::display;
use crate::reshard::orchestrate::{abort, reshard, Control, ReshardOptions, Step};
use futures_util::future::BoxFuture;
use parking_lot::Mutex;
use std::sync::Arc;

static RUNNING: Mutex<Option<Arc<Control>>> = Mutex::new(None);

/// The reshard still running, or 55000 with `otherwise`.
fn unfinished(otherwise: &str) -> Result<Arc<Control>, AdminError> {
    running()
        .filter(|c| !c.is_finished())
        .ok_or_else(|| failed("55000", otherwise))
}

/// The reshard running in this process, if any (for the metrics).
pub fn running() -> Option<Arc<Control>> {
    RUNNING.lock().clone()
}

/// Registers the commands with the admin database.
pub fn register() {
    crate::admin::register_extension(Arc::new(ReshardCommands));
}

struct ReshardCommands;

fn failed(code: &'static str, message: impl Into<String>) -> AdminError {
    AdminError::Failed {
        code,
        message: message.into(),
    }
}

/// A parsed command.
#[derive(Debug)]
enum Command {
    Start(ReshardOptions),
    /// `RESHARD ... CHECK`: the checks alone, one row each.
    Check(ReshardOptions),
    Show,
    Cutover,
    Stop,
    Abort(ReshardOptions),
    /// `SWITCH <from> <to>`: this proxy's part of a fleet cutover.
    Switch(String, String),
}

fn words(statement: &str) -> Vec<String> {
    statement
        .trim()
        .trim_end_matches(';')
        .split_whitespace()
        .map(|w| w.trim_matches('"').to_string())
        .collect()
}

/// `[resharding]` of the running configuration.
fn defaults() -> crate::config::Resharding {
    Registry::current().settings.config.resharding.clone()
}

/// How a reshard started here reaches the traffic: this process alone, or, with
/// `[[resharding.peers]]`, this proxy (through its own admin database) and every peer, paused,
/// switched and resumed together like the command line's `--admin-url` fleet.
fn traffic(settings: &crate::config::Settings) -> Result<Traffic, AdminError> {
    let peers = &settings.config.resharding.peers;
    if peers.is_empty() {
        return Ok(Traffic::InProcess);
    }
    let g = &settings.config.general;
    let host = match g.host.as_str() {
        "0.0.0.0" | "*" | "" => "127.0.0.1".to_string(),
        "::" => "::1".to_string(),
        h => h.to_string(),
    };
    let mut targets = vec![ServerTarget {
        host,
        port: g.port,
        database: g.admin_database.clone(),
        user: g.admin_user.clone(),
        password: g.admin_password.clone(),
        pass_through: None,
    }];
    for p in peers {
        let t = parse_url(&p.admin_url).map_err(|e| {
            failed(
                "22023",
                format!("[[resharding.peers]] {}: {e}", p.admin_url),
            )
        })?;
        if targets.iter().any(|o| o.addr() == t.addr()) {
            return Err(failed(
                "22023",
                format!(
                    "[[resharding.peers]] {}: this pgdog is listed twice (or is this one)",
                    p.admin_url
                ),
            ));
        }
        targets.push(t);
    }
    Ok(Traffic::Admin(targets))
}

/// `None` when the statement is not a resharding command.
fn parse(statement: &str) -> Option<Result<Command, AdminError>> {
    let w = words(statement);
    let upper: Vec<String> = w.iter().map(|s| s.to_ascii_uppercase()).collect();
    let u: Vec<&str> = upper.iter().map(String::as_str).collect();
    let usage = "RESHARD <from_database> <to_database> <publication> [SLOT <name>] \
                 [PARALLEL <n>] [CUTOVER [REVERSE] | CHECK]";
    match u.as_slice() {
        ["SHOW", "RESHARD"] => Some(Ok(Command::Show)),
        ["CUTOVER"] => Some(Ok(Command::Cutover)),
        ["STOP"] => Some(Ok(Command::Stop)),
        ["SWITCH", _, _] => Some(Ok(Command::Switch(w[1].clone(), w[2].clone()))),
        ["SWITCH", ..] => Some(Err(failed(
            "42601",
            "usage: SWITCH <from_database> <to_database>",
        ))),
        ["ABORT", "RESHARD", ..] => Some(match w.get(2..4) {
            Some([from, to]) => {
                let mut o = ReshardOptions::new(from, to, "", &defaults());
                match u.get(4..) {
                    Some(["SLOT", _]) => o.slot = w[5].clone(),
                    Some([]) | None => {}
                    _ => {
                        return Some(Err(failed(
                            "42601",
                            "usage: ABORT RESHARD <from_database> <to_database> [SLOT <name>]",
                        )))
                    }
                }
                Ok(Command::Abort(o))
            }
            _ => Err(failed(
                "42601",
                "usage: ABORT RESHARD <from_database> <to_database> [SLOT <name>]",
            )),
        }),
        ["RESHARD", ..] => Some((|| {
            let [from, to, publication] = w
                .get(1..4)
                .ok_or_else(|| failed("42601", format!("usage: {usage}")))?
            else {
                return Err(failed("42601", format!("usage: {usage}")));
            };
            let mut o = ReshardOptions::new(from, to, publication, &defaults());
            let mut check = false;
            let mut i = 4;
            while i < w.len() {
                match u[i] {
                    "CHECK" => {
                        check = true;
                        i += 1;
                    }
                    "CUTOVER" => {
                        o.cutover = true;
                        i += 1;
                    }
                    "REVERSE" => {
                        o.reverse = true;
                        i += 1;
                    }
                    "SLOT" if i + 1 < w.len() => {
                        o.slot = w[i + 1].clone();
                        i += 2;
                    }
                    "PARALLEL" if i + 1 < w.len() => {
                        o.parallel = w[i + 1]
                            .parse::<usize>()
                            .ok()
                            .filter(|n| *n >= 1)
                            .ok_or_else(|| {
                                failed("22023", "PARALLEL needs a number of at least 1")
                            })?;
                        i += 2;
                    }
                    _ => return Err(failed("42601", format!("usage: {usage}"))),
                }
            }
            match (check, o.cutover) {
                (true, true) => Err(failed("42601", format!("usage: {usage}"))),
                (true, false) => Ok(Command::Check(o)),
                (false, _) => Ok(Command::Start(o)),
            }
        })()),
        _ => None,
    }
}

/// Waits until the running reshard ended (done, stopped or failed) or, with `or_reverse`,
/// reached its reverse replication.
async fn finished(control: &Control, or_reverse: bool) {
    control
        .wait_for_step(|s| s.is_final() || (or_reverse && *s == Step::Reverse))
        .await;
}

async fn execute(command: Command) -> Result<Reply, AdminError> {
    match command {
        Command::Start(options) => {
            let mut slot = RUNNING.lock();
            if let Some(c) = slot.as_ref() {
                if !c.is_finished() {
                    return Err(failed(
                        "55000",
                        format!(
                            "a reshard of {} is already running ({}): STOP it first",
                            c.options.databases.from,
                            c.step()
                        ),
                    ));
                }
            }
            let settings = Registry::current().settings.clone();
            for db in [&options.databases.from, &options.databases.to] {
                if !settings.has_database(db) {
                    return Err(failed(
                        "3D000",
                        format!("database `{db}` is not configured in pgdog.toml"),
                    ));
                }
            }
            let traffic = traffic(&settings)?;
            let control = Control::new(options);
            *slot = Some(control.clone());
            drop(slot);
            tokio::spawn(async move {
                match reshard(settings, traffic, control).await {
                    Ok(r) => tracing::info!("reshard done: {r}"),
                    Err(e) => tracing::warn!("reshard ended: {e}"),
                }
            });
            Ok(Reply::Tag("RESHARD".into()))
        }
        Command::Check(options) => {
            let settings = Registry::current().settings.clone();
            let report = crate::reshard::preflight::run(&settings, &options).await;
            let rows = report
                .checks
                .iter()
                .map(|c| {
                    vec![
                        Some(c.name.to_string()),
                        Some(c.verdict().to_string()),
                        Some(c.detail()),
                    ]
                })
                .collect();
            Ok(Reply::Rows {
                columns: vec!["check".into(), "verdict".into(), "detail".into()],
                rows,
                tag: "RESHARD".into(),
            })
        }
        Command::Show => {
            let Some(c) = running() else {
                return Ok(Reply::Rows {
                    columns: columns(),
                    rows: Vec::new(),
                    tag: "SHOW".into(),
                });
            };
            let rows = display::rows(&c)
                .into_iter()
                .map(|r| {
                    vec![
                        Some(r.kind.to_string()),
                        Some(r.name),
                        r.shard.map(|s| s.to_string()),
                        Some(r.rows.to_string()),
                        Some(r.bytes.to_string()),
                        Some(format!("{:.0}", r.rate)),
                        r.eta_seconds.map(|e| format!("{e:.0}")),
                        r.lag_bytes.map(|b| b.to_string()),
                        r.lag_seconds.map(|s| format!("{s:.1}")),
                        Some(r.status),
                        r.server,
                        r.mb_per_s.map(|m| format!("{m:.1}")),
                    ]
                })
                .collect();
            Ok(Reply::Rows {
                columns: columns(),
                rows,
                tag: "SHOW".into(),
            })
        }
        Command::Cutover => {
            let c = unfinished("no reshard is running: start one with RESHARD")?;
            c.request_cutover();
            finished(&c, true).await;
            match c.step() {
                Step::Done | Step::Reverse => Ok(Reply::Tag("CUTOVER".into())),
                other => Err(failed("55000", format!("cutover: {other}"))),
            }
        }
        Command::Switch(from, to) => {
            let settings = Registry::current().settings.clone();
            let path = settings.config_path.clone();
            crate::reshard::config_swap::switch_file(&path, &from, &to, &settings)
                .map_err(|e| failed("58030", e.to_string()))?;
            crate::admin::reload().map_err(|e| failed("F0000", format!("RELOAD: {e}")))?;
            Ok(Reply::Tag("SWITCH".into()))
        }
        Command::Stop => {
            let c = unfinished("no reshard is running")?;
            c.stop();
            finished(&c, false).await;
            Ok(Reply::Tag("STOP".into()))
        }
        Command::Abort(options) => {
            if let Some(c) = running().filter(|c| !c.is_finished()) {
                c.stop();
                finished(&c, false).await;
            }
            let settings = Registry::current().settings.clone();
            let problems = abort(&settings, &options).await;
            // A slot that does not exist is what an abort wants.
            let problems: Vec<String> = problems
                .into_iter()
                .filter(|p| !p.contains("does not exist"))
                .collect();
            if problems.is_empty() {
                Ok(Reply::Tag("ABORT".into()))
            } else {
                Err(failed("55000", problems.join("; ")))
            }
        }
    }
}

fn columns() -> Vec<String> {
    [
        "kind",
        "name",
        "shard",
        "rows",
        "bytes",
        "rate",
        "eta_s",
        "lag_bytes",
        "lag_s",
        "status",
        "server",
        "mb_s",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

impl Extension for ReshardCommands {
    fn handle(&self, statement: &str) -> Option<BoxFuture<'static, Result<Reply, AdminError>>> {
        let command = parse(statement)?;
        Some(Box::pin(async move { execute(command?).await }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands() {
        assert!(parse("SELECT 1").is_none());
        assert!(matches!(parse("show reshard;"), Some(Ok(Command::Show))));
        assert!(matches!(parse("cutover"), Some(Ok(Command::Cutover))));
        match parse("reshard app app_new pub slot s1 parallel 4 cutover reverse") {
            Some(Ok(Command::Start(o))) => {
                assert_eq!(o.databases.from, "app");
                assert_eq!(o.databases.to, "app_new");
                assert_eq!(o.publication, "pub");
                assert_eq!(o.slot, "s1");
                assert_eq!(o.parallel, 4);
                assert!(o.cutover);
                assert!(o.reverse);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(parse("RESHARD app"), Some(Err(_))));
        assert!(matches!(parse("RESHARD a b c PARALLEL 0"), Some(Err(_))));
        assert!(matches!(
            parse("RESHARD a b c CHECK"),
            Some(Ok(Command::Check(_)))
        ));
        assert!(matches!(parse("RESHARD a b c CUTOVER CHECK"), Some(Err(_))));
        match parse("ABORT RESHARD a b SLOT x") {
            Some(Ok(Command::Abort(o))) => assert_eq!(o.slot, "x"),
            other => panic!("{other:?}"),
        }
    }
}
