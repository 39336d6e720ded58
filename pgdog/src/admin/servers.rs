//! Admin commands on servers: `BAN host:port [database]` keeps new traffic away from a server
//! until `UNBAN host:port [database]` (health checks do not lift it; UNBAN also lifts the
//! automatic bans), `HEALTHCHECK [host:port [database]]` checks servers now and shows what it
//! saw, `SHOW BANS` lists the banned servers, `SHOW LISTENERS` the listener connections.
use super::{AdminError, Reply};
use crate::backend::host::HostState;
use crate::registry::Registry;
use std::sync::Arc;
use std::time::Instant;

/// A server as the admin names it: `host:port`, and optionally one database on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerRef {
    pub addr: String,
    pub database: Option<String>,
}

type Row = Vec<Option<String>>;

fn rows(columns: &[&str], rows: Vec<Row>, tag: &str) -> Reply {
    Reply::Rows {
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows,
        tag: tag.into(),
    }
}

/// A server of one of pgdog's databases: the database's name and the server's shared state
/// (a server is its host, port and database on it; pgdog databases naming the same one share it).
type Entry = (String, Arc<HostState>);

/// Every server of every database, once each.
fn all_servers() -> Vec<Entry> {
    let registry = Registry::current();
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<Entry> = registry
        .shard_entries()
        .flat_map(|((_, db), shard)| {
            let hosts = shard.hosts().iter();
            hosts
                .map(|h| (db.clone(), h.state.clone()))
                .collect::<Vec<_>>()
        })
        .filter(|(db, h)| seen.insert((db.clone(), Arc::as_ptr(h) as usize)))
        .collect();
    out.sort_by(|a, b| (a.1.addr(), &a.0).cmp(&(b.1.addr(), &b.0)));
    out
}

/// The servers `r` names (all if none); an error naming the known ones if it names none.
fn matching(r: Option<&ServerRef>) -> Result<Vec<Entry>, AdminError> {
    let all = all_servers();
    let Some(r) = r else {
        return Ok(all);
    };
    let wanted =
        |(db, h): &&Entry| h.addr() == r.addr && r.database.as_ref().is_none_or(|d| d == db);
    let found: Vec<Entry> = all.iter().filter(wanted).cloned().collect();
    if found.is_empty() {
        let known: Vec<String> = all
            .iter()
            .map(|(db, h)| format!("{} {db}", h.addr()))
            .collect();
        return Err(AdminError::Invalid(format!(
            "no server {}{} (servers: {})",
            r.addr,
            r.database
                .as_ref()
                .map_or(String::new(), |d| format!(" of database {d}")),
            known.join(", ")
        )));
    }
    Ok(found)
}

pub fn ban(r: &ServerRef) -> Result<Reply, AdminError> {
    matching(Some(r))?
        .iter()
        .for_each(|(_, h)| h.ban_until_unbanned());
    Ok(Reply::Tag("BAN".into()))
}

pub fn unban(r: &ServerRef) -> Result<Reply, AdminError> {
    matching(Some(r))?.iter().for_each(|(_, h)| h.unban());
    Ok(Reply::Tag("UNBAN".into()))
}

/// Checks the servers now: one row each with what the check saw.
pub async fn healthcheck(r: Option<&ServerRef>) -> Result<Reply, AdminError> {
    let entries = matching(r)?;
    let ptr = |h: &HostState| h as *const HostState as usize;
    let wanted: std::collections::HashSet<usize> = entries.iter().map(|(_, h)| ptr(h)).collect();
    let outcomes: std::collections::HashMap<usize, Result<bool, String>> =
        crate::registry::health::check_now(|h| wanted.contains(&ptr(h)))
            .await
            .into_iter()
            .map(|(h, outcome)| (ptr(&h), outcome))
            .collect();
    let data = entries
        .iter()
        .map(|(db, h)| {
            let outcome = outcomes.get(&ptr(h));
            let (ok, recovery, error) = match outcome {
                Some(Ok(in_recovery)) => (true, Some(in_recovery.to_string()), None),
                Some(Err(e)) => (false, None, Some(e.clone())),
                None => (false, None, Some("not checked".to_string())),
            };
            vec![
                Some(db.clone()),
                Some(h.host.clone()),
                Some(h.port.to_string()),
                Some(ok.to_string()),
                recovery,
                Some(h.is_banned().to_string()),
                error,
            ]
        })
        .collect();
    Ok(rows(
        &[
            "database",
            "host",
            "port",
            "ok",
            "in_recovery",
            "banned",
            "error",
        ],
        data,
        "HEALTHCHECK",
    ))
}

/// `SHOW BANS`: each banned server, why, and for how much longer (NULL: until UNBAN or until
/// a health check passes).
pub fn show_bans() -> Reply {
    let now = Instant::now();
    let data = all_servers()
        .into_iter()
        .filter(|(_, h)| h.is_banned())
        .map(|(db, h)| {
            let s = h.status();
            let remaining = s
                .banned_until
                .filter(|_| !h.manually_banned())
                .map(|t| t.saturating_duration_since(now).as_millis().to_string());
            vec![
                Some(db),
                Some(h.host.clone()),
                Some(h.port.to_string()),
                Some(h.role().name().to_string()),
                s.ban_reason.clone(),
                Some(h.manually_banned().to_string()),
                remaining,
            ]
        })
        .collect();
    rows(
        &[
            "database",
            "host",
            "port",
            "role",
            "reason",
            "manual",
            "remaining_ms",
        ],
        data,
        "SHOW",
    )
}

/// `SHOW LISTENERS`: each listener connection (transaction-mode LISTEN): its server database,
/// the channels it listens on, the clients listening, notifications delivered to them, and
/// clients disconnected because they did not read theirs.
pub fn show_listeners() -> Reply {
    use std::sync::atomic::Ordering::Relaxed;
    let data = crate::backend::listener::all()
        .iter()
        .map(|l| {
            let (channels, clients) = l.counts();
            vec![
                Some(l.name.clone()),
                Some(channels.to_string()),
                Some(clients.to_string()),
                Some(l.delivered.load(Relaxed).to_string()),
                Some(l.overflowed.load(Relaxed).to_string()),
            ]
        })
        .collect();
    rows(
        &["listener", "channels", "clients", "delivered", "overflowed"],
        data,
        "SHOW",
    )
}
