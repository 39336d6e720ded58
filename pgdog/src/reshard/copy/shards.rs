//! The servers of a copy and their plumbing: source shards (primary and replicas), destination
//! shards, connecting with errors that name the server, identifier and literal quoting, and the
//! copies already recorded on the destination.
use super::*;

pub(crate) use crate::net::quote::{ident, literal};

/// What every resharding command checks before it touches a server: the databases it names
/// and their shards in pgdog.toml.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error("database `{0}` is not configured in pgdog.toml")]
    UnknownDatabase(String),
    #[error("database `{database}` shard {shard} has no server configured")]
    MissingShard { database: String, shard: usize },
    #[error("sharding configuration of `{database}`: {reason}")]
    Sharding { database: String, reason: String },
}

/// Every database in `databases` is configured.
pub(crate) fn check_databases(settings: &Settings, databases: &[&str]) -> Result<(), SetupError> {
    match databases.iter().find(|db| !settings.has_database(db)) {
        Some(db) => Err(SetupError::UnknownDatabase(db.to_string())),
        None => Ok(()),
    }
}

/// The router's sharding schema of `database`.
pub(crate) fn schema_of(settings: &Settings, database: &str) -> Result<Schema, SetupError> {
    Schema::new(settings, database).map_err(|e| SetupError::Sharding {
        database: database.to_string(),
        reason: e.to_string(),
    })
}

/// A server's failure, naming the server and what was being done.
#[derive(Debug, thiserror::Error)]
#[error("{addr}: {context}: {source}")]
pub struct ServerFailure {
    pub addr: String,
    pub context: String,
    #[source]
    pub source: Box<ServerError>,
}

impl ServerFailure {
    /// `map_err` helper: the failure of `addr` while doing `context`.
    pub fn wrap(addr: &str, context: &str) -> impl FnOnce(ServerError) -> ServerFailure {
        let (addr, context) = (addr.to_string(), context.to_string());
        move |source| ServerFailure {
            addr,
            context,
            source: Box::new(source),
        }
    }
}

pub(crate) fn server_err(addr: &str, context: &str) -> impl FnOnce(ServerError) -> CopyDataError {
    let wrap = ServerFailure::wrap(addr, context);
    move |source| wrap(source).into()
}

pub(crate) async fn connect(t: &ServerTarget) -> Result<Server, CopyDataError> {
    Server::connect(t, CONNECT_TIMEOUT)
        .await
        .map_err(server_err(&t.addr(), "connecting"))
}

/// An ErrorResponse as a [`ServerError`].
pub(crate) fn postgres_error(addr: &str, m: Message) -> ServerError {
    match read_error(&m) {
        Ok(fields) => ServerError::Postgres(fields, m),
        Err(error) => ServerError::Protocol {
            addr: addr.to_string(),
            error,
        },
    }
}

/// Whether two targets are the same server and database (host as written, port, database).
pub(crate) fn same_server(a: &ServerTarget, b: &ServerTarget) -> bool {
    a.host == b.host && a.port == b.port && a.database == b.database
}

/// Per destination shard, whether the rows a copy or a replay of source shard `source_shard`
/// would write there are already there: the destination shard is that source shard's own
/// server (a move of buckets within one set of servers), or, for an omnisharded table
/// (`Everywhere`), any source shard's server. Empty when no destination is a source server.
pub(crate) fn staying(
    dest: &Destination,
    sources: &[ServerTarget],
    dests: &[ServerTarget],
    source_shard: usize,
) -> std::sync::Arc<[bool]> {
    let stays: Vec<bool> = dests
        .iter()
        .map(|d| match dest {
            Destination::Everywhere => sources.iter().any(|s| same_server(s, d)),
            _ => sources.get(source_shard).is_some_and(|s| same_server(s, d)),
        })
        .collect();
    if stays.iter().any(|&s| s) {
        stays.into()
    } else {
        std::sync::Arc::from([])
    }
}

/// One source shard: its primary and replicas.
pub(crate) struct SourceShard {
    pub(crate) primary: ServerTarget,
    pub(crate) replicas: Vec<ServerTarget>,
}

/// The source's shards (at least one).
pub(crate) fn source_primaries(
    settings: &Settings,
    database: &str,
) -> Result<Vec<ServerTarget>, CopyDataError> {
    Ok(shard_targets(settings, database)?)
}

/// The first server (primary) of every shard of `database` (at least one).
pub(crate) fn shard_targets(
    settings: &Settings,
    database: &str,
) -> Result<Vec<ServerTarget>, SetupError> {
    (0..settings.shards(database).max(1))
        .map(|shard| {
            settings
                .shard_server(database, shard)
                .map(|db| target(settings, db))
                .ok_or_else(|| SetupError::MissingShard {
                    database: database.to_string(),
                    shard,
                })
        })
        .collect()
}

/// The destination's shard primaries (at least one).
pub(crate) fn destination_shards(
    settings: &Settings,
    database: &str,
) -> Result<Vec<ServerTarget>, CopyDataError> {
    source_primaries(settings, database)
}

pub(crate) fn source_shards(
    settings: &Settings,
    database: &str,
) -> Result<Vec<SourceShard>, CopyDataError> {
    let primaries = source_primaries(settings, database)?;
    Ok(primaries
        .into_iter()
        .enumerate()
        .map(|(shard, primary)| SourceShard {
            primary,
            replicas: settings
                .config
                .databases
                .iter()
                .filter(|d| d.name == database && d.shard == shard && d.role == Role::Replica)
                .map(|d| target(settings, d))
                .collect(),
        })
        .collect())
}

/// One row of `pgdog_reshard_progress`: progress key, table (or key range) name, and whether
/// its copy committed (a watermark; a key range only planned has none).
pub(crate) type ProgressRow = (String, String, bool);

/// The progress rows of `keys` on each destination shard.
pub(crate) async fn progress_rows(
    dests: &[ServerTarget],
    keys: &[String],
) -> Result<Vec<Vec<ProgressRow>>, CopyDataError> {
    let keys = keys
        .iter()
        .map(|k| literal(k))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "SELECT slot, table_name, (watermark IS NOT NULL)::text FROM pgdog_reshard_progress \
         WHERE slot IN ({keys})"
    );
    let mut out = Vec::with_capacity(dests.len());
    for t in dests {
        let mut server = connect(t).await?;
        let rows = server
            .query_rows(&sql)
            .await
            .map_err(server_err(&t.addr(), "reading the copy progress"))?;
        server.terminate().await;
        out.push(
            rows.into_iter()
                .filter_map(|r| match r.as_slice() {
                    [Some(k), Some(t), Some(done)] => Some((k.clone(), t.clone(), done == "true")),
                    _ => None,
                })
                .collect(),
        );
    }
    Ok(out)
}

/// The `(progress key, table)` watermark rows on each destination shard (copies committed).
pub(crate) async fn copied_tables(
    dests: &[ServerTarget],
    keys: &[String],
) -> Result<Vec<HashSet<(String, String)>>, CopyDataError> {
    Ok(progress_rows(dests, keys)
        .await?
        .into_iter()
        .map(|rows| {
            rows.into_iter()
                .filter(|(_, _, done)| *done)
                .map(|(k, t, _)| (k, t))
                .collect()
        })
        .collect())
}
