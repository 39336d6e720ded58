//! PgBouncer's control commands beyond PAUSE and RESUME, with its meanings and words:
//! `KILL [db]` (no db: every database), `KILL_CLIENT id`, `SUSPEND`, `DISABLE db`,
//! `ENABLE db`, `WAIT_CLOSE [db]`, and `SHUTDOWN WAIT_FOR_SERVERS | WAIT_FOR_CLIENTS`. Errors
//! are PgBouncer's text with its SQLSTATE (08P01).
use super::{AdminError, Reply};
use crate::backend::pause;
use crate::ops::shutdown::{self, Mode};
use crate::registry::Registry;
use crate::stats::clients;
use std::time::Duration;

/// PgBouncer's admin error: its text, SQLSTATE 08P01.
fn refused(message: impl Into<String>) -> AdminError {
    AdminError::Failed {
        code: "08P01",
        message: message.into(),
    }
}

/// The databases a command names (`None`: every configured one); an unknown one is refused.
fn databases(database: Option<&str>) -> Result<Vec<String>, AdminError> {
    let registry = Registry::current();
    match database {
        Some(db) if registry.settings.has_database(db) => Ok(vec![db.to_string()]),
        Some(db) => Err(refused(format!("no such database: {db}"))),
        None => Ok(registry.settings.database_names()),
    }
}

/// `KILL [db]`: the database's clients are ended and its servers closed; new clients wait
/// until `RESUME` (the database stays paused), as PgBouncer's KILL.
pub fn kill(database: Option<&str>) -> Result<Reply, AdminError> {
    if crate::ops::suspend::is_suspended() {
        return Err(refused("already suspended/paused"));
    }
    let names = databases(database)?;
    pause::hold(&names);
    let registry = Registry::current();
    let mut n = 0;
    for db in &names {
        n += clients::kill(Some(db));
    }
    for ((_, db), shard) in registry.shard_entries() {
        if names.contains(&db) {
            shard.hosts().iter().for_each(|h| h.pool.reconnect());
        }
    }
    tracing::info!("KILL {}: {n} client(s) disconnected", names.join(", "));
    Ok(Reply::Tag("KILL".into()))
}

/// `KILL_CLIENT id`: the client of SHOW CLIENTS' `id` ends at once with PgBouncer's FATAL
/// "admin forced disconnect" (08P01).
pub fn kill_client(id: &str) -> Result<Reply, AdminError> {
    let id: u64 = id
        .parse()
        .map_err(|_| refused("invalid client pointer supplied"))?;
    let client = clients::list()
        .into_iter()
        .find(|c| c.id == id)
        .ok_or_else(|| refused("client not found"))?;
    client.kill_forced();
    tracing::info!("KILL_CLIENT {id}");
    Ok(Reply::Tag("KILL_CLIENT".into()))
}

/// `SUSPEND`: every database paused (transactions finish first) and no connection accepted
/// until `RESUME`. The admin sessions already connected stay.
pub async fn suspend() -> Result<Reply, AdminError> {
    if crate::ops::suspend::is_suspended() {
        return Err(refused("already suspended/paused"));
    }
    if !pause::paused().is_empty() {
        return Err(refused("cannot suspend with paused databases"));
    }
    crate::ops::suspend::set(true);
    if let Err(e) = super::pause(None).await {
        crate::ops::suspend::set(false);
        return Err(e);
    }
    tracing::info!("suspended: no new connections until RESUME");
    Ok(Reply::Tag("SUSPEND".into()))
}

/// `RESUME` after a SUSPEND: connections are accepted again.
pub fn unsuspend() {
    if crate::ops::suspend::is_suspended() {
        crate::ops::suspend::set(false);
        tracing::info!("resumed accepting connections");
    }
}

/// `DISABLE db` / `ENABLE db`: new clients of the database are refused with PgBouncer's
/// FATAL `database "db" is disabled`; connected ones are untouched.
pub fn disable(database: &str, disabled: bool) -> Result<Reply, AdminError> {
    databases(Some(database))?;
    pause::set_disabled(database, disabled);
    let tag = if disabled { "DISABLE" } else { "ENABLE" };
    tracing::info!("{tag} {database}");
    Ok(Reply::Tag(tag.into()))
}

/// `WAIT_CLOSE [db]`: answers once no server connection a RECONNECT (or KILL) marked is still
/// checked out; up to `shutdown_timeout`.
pub async fn wait_close(database: Option<&str>) -> Result<Reply, AdminError> {
    let names = databases(database)?;
    let limit = Registry::current().settings.config.general.shutdown_timeout;
    let deadline = tokio::time::Instant::now() + Duration::from_millis(limit);
    loop {
        let registry = Registry::current();
        let left: usize = registry
            .shard_entries()
            .filter(|((_, db), _)| names.contains(db))
            .flat_map(|(_, shard)| {
                shard
                    .hosts()
                    .iter()
                    .map(|h| h.pool.close_needed())
                    .collect::<Vec<_>>()
            })
            .sum();
        drop(registry);
        if left == 0 {
            return Ok(Reply::Tag("WAIT_CLOSE".into()));
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(refused(format!(
                "WAIT_CLOSE: {left} server connection(s) still in use after {limit} ms"
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `SHUTDOWN`, `SHUTDOWN WAIT_FOR_SERVERS`, `SHUTDOWN WAIT_FOR_CLIENTS` (see `ops::shutdown`).
pub fn shutdown(mode: Mode) -> Reply {
    shutdown::request(mode);
    Reply::Tag("SHUTDOWN".into())
}
