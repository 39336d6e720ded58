//! Users from the database: a client who is not in users.toml logs in against the secret
//! `auth_query` returns (PgBouncer's `auth_user` + `auth_query`). pgdog runs the query on the
//! database's primary (shard 0) as `auth_user`, with the user name as `$1` (extended protocol,
//! never spliced into the text), and keeps a secret found for `auth_query_cache_ttl`.
use super::secrets::Secret;
use super::Refusal;
use crate::backend::server::{Server, ServerTarget};
use crate::config::Settings;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

/// Secrets found, by (database, user): when found and the secret.
type Cache = HashMap<(String, String), (Instant, String)>;

static CACHE: LazyLock<Mutex<Cache>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// The secret of `user` for `database` (`None`: no row, NULL, or a role that may not log in:
/// the client gets the same answer as for a wrong password). A server that is down or too
/// slow is a refusal with 08006.
pub async fn secret(
    settings: &Settings,
    user: &str,
    database: &str,
) -> Result<Option<Secret>, Refusal> {
    let Some((auth_user, query)) = settings.auth_query(database) else {
        return Ok(None);
    };
    let g = &settings.config.general;
    let ttl = Duration::from_millis(g.auth_query_cache_ttl);
    let key = (database.to_string(), user.to_string());
    if let Some((at, secret)) = CACHE.lock().get(&key) {
        if at.elapsed() < ttl {
            return Ok(Some(Secret::parse(secret)));
        }
    }
    let target = target(settings, auth_user, database).ok_or_else(|| {
        Refusal(
            "08006",
            format!("database \"{database}\" has no server to run auth_query on"),
        )
    })?;
    let limit = Duration::from_millis(g.auth_query_timeout);
    let found = match tokio::time::timeout(limit, look_up(&target, query, user, limit)).await {
        Ok(Ok(found)) => found,
        Ok(Err(why)) => return Err(failed(&target, &why)),
        Err(_) => {
            let why = format!(
                "no answer within auth_query_timeout ({} ms)",
                limit.as_millis()
            );
            return Err(failed(&target, &why));
        }
    };
    let mut cache = CACHE.lock();
    cache.retain(|_, (at, _)| at.elapsed() < ttl);
    match found {
        Some(secret) => {
            cache.insert(key, (Instant::now(), secret.clone()));
            Ok(Some(Secret::parse(&secret)))
        }
        None => {
            cache.remove(&key);
            Ok(None)
        }
    }
}

/// The refusal of a look-up that could not run (the details go to the log, not to a client
/// that has not logged in).
fn failed(target: &ServerTarget, why: &str) -> Refusal {
    tracing::warn!(
        "auth_query as \"{}\" on {}/{} failed: {why}",
        target.user,
        target.addr(),
        target.database
    );
    Refusal(
        "08006",
        "could not look up the user: auth_query failed (see pgdog's log)".into(),
    )
}

/// Where and as whom the look-up runs: the primary of shard 0, as `auth_user` with its
/// users.toml password.
fn target(settings: &Settings, auth_user: &str, database: &str) -> Option<ServerTarget> {
    let hosts = settings.database_hosts(database, 0);
    let db = hosts
        .iter()
        .find(|d| d.role == crate::config::Role::Primary)
        .or(hosts.first())?;
    let entry = settings.auth_user_entry(auth_user, database)?;
    Some(ServerTarget {
        host: db.host.clone(),
        port: db.port,
        database: db.database_name().to_string(),
        user: auth_user.to_string(),
        password: entry.password.clone(),
        pass_through: None,
    })
}

/// Connects, runs the query with `user` as `$1` and leaves: the secret in the second column
/// of the first row, if any.
async fn look_up(
    target: &ServerTarget,
    query: &str,
    user: &str,
    limit: Duration,
) -> Result<Option<String>, String> {
    let mut server = Server::connect(target, limit)
        .await
        .map_err(|e| e.to_string())?;
    let rows = server
        .query_rows_with(query, &[Some(user)])
        .await
        .map_err(|e| e.to_string());
    server.terminate().await;
    let rows = rows?;
    let Some(row) = rows.into_iter().next() else {
        return Ok(None);
    };
    if row.len() < 2 {
        return Err(format!(
            "auth_query returned {} column(s); it must return the user name and its secret",
            row.len()
        ));
    }
    Ok(row.into_iter().nth(1).flatten().filter(|s| !s.is_empty()))
}
