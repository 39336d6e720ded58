//! The admin database's commands: splitting a Query into statements, recognising the built-in
//! commands (SHOW DATABASES/POOLS/VERSION/PAUSED, PAUSE, RESUME, RELOAD), handing anything else
//! to the registered extensions, and building the replies.
use super::{AdminError, Reply};
use crate::backend::Registry;
use crate::config::{PoolerMode, Role};

/// The built-in commands, for error messages.
pub const COMMANDS: &str =
    "SHOW DATABASES, SHOW POOLS, SHOW VERSION, SHOW PAUSED, PAUSE [db], RESUME [db], RELOAD";

/// A built-in command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    ShowDatabases,
    ShowPools,
    ShowVersion,
    ShowPaused,
    Pause(Option<String>),
    Resume(Option<String>),
    Reload,
}

/// Splits a Query's text at `;` outside quotes; statements trimmed, empty ones dropped.
pub fn split(sql: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut quote: Option<char> = None;
    for (i, c) in sql.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, ';') => {
                out.push(&sql[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&sql[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// A database name as typed: `"Quoted"` keeps its case, otherwise as is.
fn name(token: &str) -> String {
    token
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(token)
        .to_string()
}

/// The built-in command a statement is, if any.
pub fn parse(statement: &str) -> Option<Command> {
    let tokens: Vec<&str> = statement.split_whitespace().collect();
    let upper: Vec<String> = tokens.iter().map(|t| t.to_ascii_uppercase()).collect();
    let words: Vec<&str> = upper.iter().map(String::as_str).collect();
    Some(match words.as_slice() {
        ["SHOW", "DATABASES"] => Command::ShowDatabases,
        ["SHOW", "POOLS"] => Command::ShowPools,
        ["SHOW", "VERSION"] => Command::ShowVersion,
        ["SHOW", "PAUSED"] => Command::ShowPaused,
        ["PAUSE"] => Command::Pause(None),
        ["PAUSE", _] => Command::Pause(Some(name(tokens[1]))),
        ["RESUME"] => Command::Resume(None),
        ["RESUME", _] => Command::Resume(Some(name(tokens[1]))),
        ["RELOAD"] => Command::Reload,
        _ => return None,
    })
}

/// Runs one statement: a built-in command, else the first extension that takes it.
pub async fn run(statement: &str) -> Result<Reply, AdminError> {
    if let Some(command) = parse(statement) {
        return run_command(command).await;
    }
    for ext in super::extensions() {
        if let Some(reply) = ext.handle(statement) {
            return reply.await;
        }
    }
    Err(AdminError::UnknownCommand {
        statement: statement.to_string(),
        commands: COMMANDS.into(),
    })
}

async fn run_command(command: Command) -> Result<Reply, AdminError> {
    match command {
        Command::ShowDatabases => Ok(show_databases()),
        Command::ShowPools => Ok(show_pools()),
        Command::ShowVersion => Ok(rows(
            &["version"],
            vec![vec![Some(format!("pgdog {}", env!("CARGO_PKG_VERSION")))]],
            "SHOW",
        )),
        Command::ShowPaused => Ok(show_paused()),
        Command::Pause(db) => {
            super::pause(db.as_deref()).await?;
            Ok(Reply::Tag("PAUSE".into()))
        }
        Command::Resume(db) => {
            super::resume(db.as_deref());
            Ok(Reply::Tag("RESUME".into()))
        }
        Command::Reload => {
            super::reload()?;
            Ok(Reply::Tag("RELOAD".into()))
        }
    }
}

fn rows(columns: &[&str], rows: Vec<Vec<Option<String>>>, tag: &str) -> Reply {
    Reply::Rows {
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows,
        tag: tag.to_string(),
    }
}

fn role(r: Role) -> &'static str {
    r.name()
}

/// One row per configured server.
fn show_databases() -> Reply {
    let registry = Registry::current();
    let data = registry
        .settings
        .config
        .databases
        .iter()
        .map(|d| {
            vec![
                Some(d.name.clone()),
                Some(d.shard.to_string()),
                Some(role(d.role).to_string()),
                Some(d.host.clone()),
                Some(d.port.to_string()),
                Some(d.database_name().to_string()),
            ]
        })
        .collect();
    rows(
        &["name", "shard", "role", "host", "port", "database_name"],
        data,
        "SHOW",
    )
}

/// One row per pool: (user, database, shard) and one server of the shard, with its role now
/// (an `auto` server's as the health checks see it), whether it is banned and its lag.
fn show_pools() -> Reply {
    let registry = Registry::current();
    let mut entries: Vec<_> = registry.shard_entries().collect();
    entries.sort_by(|a, b| (&a.0 .1, &a.0 .0, a.1.index()).cmp(&(&b.0 .1, &b.0 .0, b.1.index())));
    let mut data = Vec::new();
    for ((user, database), shard) in entries {
        for host in shard.hosts() {
            let pool = &host.pool;
            let (idle, active) = pool.counts();
            let target = pool.target();
            let mode = match pool.settings().mode {
                PoolerMode::Transaction => "transaction",
                PoolerMode::Session => "session",
            };
            let status = host.state.status();
            data.push(vec![
                Some(database.clone()),
                Some(user.clone()),
                Some(shard.index().to_string()),
                Some(host.state.role().name().to_string()),
                Some(target.host.clone()),
                Some(target.port.to_string()),
                Some(mode.to_string()),
                Some(pool.settings().size.to_string()),
                Some(idle.to_string()),
                Some(active.to_string()),
                Some(pool.waiting().to_string()),
                Some(super::pause::is_paused(database).to_string()),
                Some(host.state.is_banned().to_string()),
                status.lag_bytes.map(|l| l.to_string()),
            ]);
        }
    }
    rows(
        &[
            "database",
            "user",
            "shard",
            "role",
            "host",
            "port",
            "pool_mode",
            "pool_size",
            "sv_idle",
            "sv_active",
            "cl_waiting",
            "paused",
            "banned",
            "replica_lag_bytes",
        ],
        data,
        "SHOW",
    )
}

/// Paused databases, with the clients waiting in the pause.
fn show_paused() -> Reply {
    let data = super::pause::states()
        .into_iter()
        .filter(|(_, paused, _, _)| *paused)
        .map(|(name, _, in_flight, waiting)| {
            vec![
                Some(name),
                Some(waiting.to_string()),
                Some(in_flight.to_string()),
            ]
        })
        .collect();
    rows(&["database", "cl_waiting", "in_flight"], data, "SHOW")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_parse() {
        assert_eq!(
            split("show pools; PAUSE app;; 'a;b'"),
            vec!["show pools", "PAUSE app", "'a;b'"]
        );
        assert_eq!(parse("show   Pools"), Some(Command::ShowPools));
        assert_eq!(
            parse("pause \"App\""),
            Some(Command::Pause(Some("App".into())))
        );
        assert_eq!(parse("Resume"), Some(Command::Resume(None)));
        assert_eq!(parse("reload"), Some(Command::Reload));
        assert_eq!(parse("show reshard"), None);
        assert_eq!(parse("pause a b"), None);
    }
}
