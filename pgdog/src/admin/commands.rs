//! The admin database's commands: splitting a Query into statements, recognising the built-in
//! commands (SHOW ..., PAUSE, RESUME, RELOAD, SHUTDOWN, KILL, RECONNECT, SET), handing anything
//! else to the registered extensions, and building the replies. Case-insensitive; a trailing
//! `;` is optional.
use super::servers::{self, ServerRef};
use super::{control, show_more};
use super::{show, AdminError, Reply};
use crate::ops::shutdown::Mode;
use crate::registry::Registry;

/// The built-in commands, for error messages.
pub const COMMANDS: &str =
    "SHOW CLIENTS, SHOW SERVERS, SHOW POOLS, SHOW STATS, SHOW STATS_TOTALS, \
SHOW STATS_AVERAGES, SHOW CONFIG, SHOW LISTS, SHOW DATABASES, SHOW USERS, SHOW VERSION, \
SHOW PREPARED_STATEMENTS, SHOW QUERY_CACHE, SHOW MERGE, SHOW ROUTES, RESET ROUTES, SHOW MIRRORS, SHOW PAUSED, SHOW BANS, SHOW LISTENERS, \
SHOW STATE, SHOW MEM, SHOW FDS, SHOW SOCKETS, SHOW ACTIVE_SOCKETS, SHOW PEERS, SHOW PEER_POOLS, SHOW DNS_HOSTS, \
SHOW DNS_ZONES, SHOW TOTALS, SHOW HELP, SHOW <setting>, PAUSE [db], \
RESUME [db], RELOAD, SHUTDOWN [WAIT_FOR_SERVERS|WAIT_FOR_CLIENTS], KILL [db], KILL_CLIENT id, \
SUSPEND, DISABLE db, ENABLE db, WAIT_CLOSE [db], RECONNECT [db], SET key = value, BAN host:port [db], \
UNBAN host:port [db], HEALTHCHECK [host:port [db]], and RESHARD, SHOW RESHARD, CUTOVER, STOP, \
ABORT RESHARD";

/// A built-in command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `SHOW <what>` of a built-in listing (upper case name).
    Show(&'static str),
    Pause(Option<String>),
    Resume(Option<String>),
    Reload,
    Shutdown(Mode),
    Kill(Option<String>),
    KillClient(String),
    Suspend,
    Disable(String),
    Enable(String),
    WaitClose(Option<String>),
    Reconnect(Option<String>),
    Set(String, String),
    /// `SHOW <key>` of a setting (lower case).
    ShowSetting(String),
    Ban(ServerRef),
    Unban(ServerRef),
    Healthcheck(Option<ServerRef>),
    ResetRoutes,
}

/// The SHOW listings.
const SHOWS: &[&str] = &[
    "CLIENTS",
    "SERVERS",
    "POOLS",
    "STATS",
    "STATS_TOTALS",
    "STATS_AVERAGES",
    "CONFIG",
    "LISTS",
    "DATABASES",
    "USERS",
    "VERSION",
    "PREPARED_STATEMENTS",
    "QUERY_CACHE",
    "MERGE",
    "ROUTES",
    "MIRRORS",
    "PAUSED",
    "BANS",
    "LISTENERS",
    "STATE",
    "MEM",
    "FDS",
    "SOCKETS",
    "ACTIVE_SOCKETS",
    "PEERS",
    "PEER_POOLS",
    "DNS_HOSTS",
    "DNS_ZONES",
    "TOTALS",
    "HELP",
];

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

/// `SET key = value` / `SET key TO value`.
fn parse_set(statement: &str) -> Option<Command> {
    let rest = statement.get(3..)?.trim_start();
    let (key, value) = match rest.split_once('=') {
        Some((k, v)) => (k.trim(), v.trim()),
        None => {
            let mut parts = rest.splitn(3, char::is_whitespace);
            let key = parts.next()?;
            if !parts.next()?.eq_ignore_ascii_case("to") {
                return None;
            }
            (key, parts.next()?.trim())
        }
    };
    (!key.is_empty() && !value.is_empty() && !key.contains(char::is_whitespace))
        .then(|| Command::Set(key.to_string(), value.to_string()))
}

/// `host:port [database]`.
fn server_ref(tokens: &[&str]) -> Option<ServerRef> {
    let (addr, database) = match tokens {
        [addr] => (addr, None),
        [addr, db] => (addr, Some(name(db))),
        _ => return None,
    };
    let (host, port) = addr.rsplit_once(':')?;
    (!host.is_empty() && port.parse::<u16>().is_ok()).then(|| ServerRef {
        addr: addr.to_string(),
        database,
    })
}

/// The built-in command a statement is, if any.
pub fn parse(statement: &str) -> Option<Command> {
    let statement = statement.trim().trim_end_matches(';').trim();
    if statement.len() > 3 && statement[..4].eq_ignore_ascii_case("set ") {
        return parse_set(statement);
    }
    let tokens: Vec<&str> = statement.split_whitespace().collect();
    let upper: Vec<String> = tokens.iter().map(|t| t.to_ascii_uppercase()).collect();
    let words: Vec<&str> = upper.iter().map(String::as_str).collect();
    Some(match words.as_slice() {
        ["SHOW", what] => match SHOWS.iter().find(|s| *s == what) {
            Some(listing) => Command::Show(listing),
            None if super::settings::is_setting(tokens[1]) => {
                Command::ShowSetting(tokens[1].to_ascii_lowercase())
            }
            // (Extensions' SHOWs: SHOW RESHARD.)
            None => return None,
        },
        ["BAN", ..] => Command::Ban(server_ref(&tokens[1..])?),
        ["UNBAN", ..] => Command::Unban(server_ref(&tokens[1..])?),
        ["HEALTHCHECK"] => Command::Healthcheck(None),
        ["HEALTHCHECK", ..] => Command::Healthcheck(Some(server_ref(&tokens[1..])?)),
        ["PAUSE"] => Command::Pause(None),
        ["PAUSE", _] => Command::Pause(Some(name(tokens[1]))),
        ["RESUME"] => Command::Resume(None),
        ["RESUME", _] => Command::Resume(Some(name(tokens[1]))),
        ["RELOAD"] => Command::Reload,
        ["RESET", "ROUTES"] => Command::ResetRoutes,
        ["SHUTDOWN"] => Command::Shutdown(Mode::WaitForServers),
        ["SHUTDOWN", "WAIT_FOR_SERVERS"] => Command::Shutdown(Mode::WaitForServers),
        ["SHUTDOWN", "WAIT_FOR_CLIENTS"] => Command::Shutdown(Mode::WaitForClients),
        ["KILL"] => Command::Kill(None),
        ["KILL", _] => Command::Kill(Some(name(tokens[1]))),
        ["KILL_CLIENT", _] => Command::KillClient(tokens[1].to_string()),
        ["SUSPEND"] => Command::Suspend,
        ["DISABLE", _] => Command::Disable(name(tokens[1])),
        ["ENABLE", _] => Command::Enable(name(tokens[1])),
        ["WAIT_CLOSE"] => Command::WaitClose(None),
        ["WAIT_CLOSE", _] => Command::WaitClose(Some(name(tokens[1]))),
        ["RECONNECT"] => Command::Reconnect(None),
        ["RECONNECT", _] => Command::Reconnect(Some(name(tokens[1]))),
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
    })
}

fn show(what: &str) -> Reply {
    match what {
        "CLIENTS" => show::clients(),
        "SERVERS" => show::servers(),
        "POOLS" => show::pools(),
        "STATS" => show::stats(),
        "STATS_TOTALS" => show::stats_totals(),
        "STATS_AVERAGES" => show::stats_averages(),
        "CONFIG" => show::config(),
        "LISTS" => show::lists(),
        "DATABASES" => show::databases(),
        "USERS" => show::users(),
        "PREPARED_STATEMENTS" => show::prepared_statements(),
        "QUERY_CACHE" => show::query_cache(),
        "MERGE" => show::merge(),
        "ROUTES" => super::routes::show(),
        "MIRRORS" => super::mirrors::show(),
        "PAUSED" => show_paused(),
        "BANS" => servers::show_bans(),
        "LISTENERS" => servers::show_listeners(),
        "STATE" => show_more::state(),
        "MEM" => show_more::mem(),
        "FDS" => show_more::fds(),
        "SOCKETS" => show_more::sockets(false),
        "ACTIVE_SOCKETS" => show_more::sockets(true),
        "PEERS" => show_more::peers(),
        "PEER_POOLS" => show_more::peer_pools(),
        "DNS_HOSTS" => show_more::dns_hosts(),
        "DNS_ZONES" => show_more::dns_zones(),
        "TOTALS" => show_more::totals(),
        "HELP" => show_more::help(),
        _ => rows(
            &["version"],
            vec![vec![Some(format!("pgdog {}", env!("CARGO_PKG_VERSION")))]],
            "SHOW",
        ),
    }
}

/// The pools of `database` (every database: `None`), checking the name.
fn pools_of(database: Option<&str>) -> Result<Vec<crate::backend::Pool>, AdminError> {
    let registry = Registry::current();
    if let Some(db) = database {
        if !registry.settings.has_database(db) {
            return Err(AdminError::UnknownDatabase(db.to_string()));
        }
    }
    Ok(registry
        .shard_entries()
        .filter(|((_, d), _)| database.is_none_or(|db| d == db))
        .flat_map(|(_, shard)| {
            shard
                .hosts()
                .iter()
                .map(|h| h.pool.clone())
                .collect::<Vec<_>>()
        })
        .collect())
}

async fn run_command(command: Command) -> Result<Reply, AdminError> {
    match command {
        Command::Show(what) => Ok(show(what)),
        Command::Pause(db) => {
            super::pause(db.as_deref()).await?;
            Ok(Reply::Tag("PAUSE".into()))
        }
        Command::Resume(db) => {
            if db.is_none() {
                control::unsuspend();
            }
            super::resume(db.as_deref());
            Ok(Reply::Tag("RESUME".into()))
        }
        Command::ResetRoutes => Ok(super::routes::reset()),
        Command::Reload => {
            super::reload()?;
            Ok(Reply::Tag("RELOAD".into()))
        }
        Command::Shutdown(mode) => Ok(control::shutdown(mode)),
        Command::Kill(db) => control::kill(db.as_deref()),
        Command::KillClient(id) => control::kill_client(&id),
        Command::Suspend => control::suspend().await,
        Command::Disable(db) => control::disable(&db, true),
        Command::Enable(db) => control::disable(&db, false),
        Command::WaitClose(db) => control::wait_close(db.as_deref()).await,
        Command::Reconnect(db) => {
            for p in pools_of(db.as_deref())? {
                p.reconnect();
            }
            Ok(Reply::Tag("RECONNECT".into()))
        }
        Command::Set(key, value) => {
            super::settings::set(&key, &value)?;
            Ok(Reply::Tag("SET".into()))
        }
        Command::ShowSetting(key) => {
            super::settings::show_one(&key).ok_or_else(|| AdminError::UnknownCommand {
                statement: format!("SHOW {key}"),
            })
        }
        Command::Ban(r) => servers::ban(&r),
        Command::Unban(r) => servers::unban(&r),
        Command::Healthcheck(r) => servers::healthcheck(r.as_ref()).await,
    }
}

fn rows(columns: &[&str], rows: Vec<Vec<Option<String>>>, tag: &str) -> Reply {
    Reply::Rows {
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows,
        tag: tag.to_string(),
    }
}

/// Paused databases, with the clients waiting in the pause.
fn show_paused() -> Reply {
    let data = crate::backend::pause::states()
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
        assert_eq!(parse("show   Pools"), Some(Command::Show("POOLS")));
        assert_eq!(
            parse("SHOW stats_totals;"),
            Some(Command::Show("STATS_TOTALS"))
        );
        assert_eq!(
            parse("show Default_Pool_Size"),
            Some(Command::ShowSetting("default_pool_size".into()))
        );
        let server = |db: Option<&str>| ServerRef {
            addr: "127.0.0.1:5432".into(),
            database: db.map(String::from),
        };
        assert_eq!(
            parse("BAN 127.0.0.1:5432"),
            Some(Command::Ban(server(None)))
        );
        assert_eq!(
            parse("unban 127.0.0.1:5432 \"App\";"),
            Some(Command::Unban(server(Some("App"))))
        );
        assert_eq!(parse("HEALTHCHECK"), Some(Command::Healthcheck(None)));
        assert_eq!(parse("show nothing"), None);
        assert_eq!(parse("BAN nowhere"), None);
        assert_eq!(parse("BAN"), None);
        assert_eq!(
            parse("set query_timeout = 5000"),
            Some(Command::Set("query_timeout".into(), "5000".into()))
        );
        assert_eq!(
            parse("SET client_idle_timeout TO 10"),
            Some(Command::Set("client_idle_timeout".into(), "10".into()))
        );
        assert_eq!(parse("set x"), None);
        assert_eq!(parse("kill app"), Some(Command::Kill(Some("app".into()))));
        assert_eq!(parse("kill"), Some(Command::Kill(None)));
        assert_eq!(
            parse("kill_client 7"),
            Some(Command::KillClient("7".into()))
        );
        assert_eq!(
            parse("shutdown wait_for_clients"),
            Some(Command::Shutdown(Mode::WaitForClients))
        );
        assert_eq!(parse("wait_close"), Some(Command::WaitClose(None)));
        assert_eq!(parse("disable app"), Some(Command::Disable("app".into())));
        assert_eq!(parse("RECONNECT"), Some(Command::Reconnect(None)));
        assert_eq!(
            parse("shutdown"),
            Some(Command::Shutdown(Mode::WaitForServers))
        );
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
