//! The admin database of a running pgdog (`[general] admin_database`, default `admin`): a client
//! that logs in to it as `admin_user` with `admin_password` (always a password check, whatever
//! `auth_type` says) gets an admin session (simple query protocol) with PgBouncer's commands
//! (SHOW CLIENTS/SERVERS/POOLS/STATS/..., PAUSE, RESUME, RELOAD, SHUTDOWN, KILL, RECONNECT,
//! SET), plus commands registered by other parts of the binary (resharding) through
//! [`Extension`]. The same operations are callable in-process: [`pause`], [`resume`],
//! [`reload`].
//!
//! - `error`: [`AdminError`] and its SQLSTATEs;
//! - `pause`: the per-database gate sessions pass before each transaction;
//! - `commands`: parsing and running one statement;
//! - `show`: the SHOW listings;
//! - `settings`: SHOW CONFIG and SET;
//! - `session`: the admin client's protocol loop.
pub mod commands;
mod control;
pub mod error;
mod mirrors;
pub mod routes;
pub mod servers;
pub mod session;
pub mod settings;
pub mod show;
mod show_more;

pub use error::AdminError;

use crate::registry::Registry;
use futures_util::future::BoxFuture;
use parking_lot::RwLock;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The answer to an admin command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// A result set (all columns text) and its CommandComplete tag.
    Rows {
        columns: Vec<String>,
        rows: Vec<Vec<Option<String>>>,
        tag: String,
    },
    /// Only a CommandComplete tag.
    Tag(String),
}

/// Extra commands (RESHARD, CUTOVER, STOP, SHOW RESHARD) registered by the resharding code.
pub trait Extension: Send + Sync {
    /// None when the statement is not this extension's; otherwise its reply.
    /// `statement` is trimmed, without its trailing `;`, as the client typed it.
    fn handle(&self, statement: &str) -> Option<BoxFuture<'static, Result<Reply, AdminError>>>;
}

static EXTENSIONS: RwLock<Vec<Arc<dyn Extension>>> = RwLock::new(Vec::new());

/// Adds commands to the admin database; tried in registration order after the built-in ones.
pub fn register_extension(ext: Arc<dyn Extension>) {
    EXTENSIONS.write().push(ext);
}

/// The registered extensions, in order.
pub(crate) fn extensions() -> Vec<Arc<dyn Extension>> {
    EXTENSIONS.read().clone()
}

static PATHS: RwLock<Option<(PathBuf, PathBuf)>> = RwLock::new(None);

/// Records the pgdog.toml and users.toml paths RELOAD (and SIGHUP) read.
pub fn set_config_paths(config: PathBuf, users: PathBuf) {
    *PATHS.write() = Some((config, users));
}

/// The recorded paths (else those the current configuration was loaded from, if any).
pub fn config_paths() -> Option<(PathBuf, PathBuf)> {
    if let Some(p) = PATHS.read().clone() {
        return Some(p);
    }
    let registry = Registry::current();
    let s = &registry.settings;
    if s.config_path.as_os_str().is_empty() {
        return None;
    }
    Some((s.config_path.clone(), s.users_path.clone()))
}

/// Re-reads pgdog.toml and users.toml and installs them (pools whose settings did not change
/// keep their connections). On error the current configuration stays in force. Paused
/// databases stay paused (the pause is keyed by database name).
pub fn reload() -> Result<(), AdminError> {
    let (config, users) = config_paths().ok_or(AdminError::NoConfigPaths)?;
    let settings = crate::registry::load_settings(&config, &users);
    // The logfile is opened again whatever the outcome (logrotate's SIGHUP).
    let logfile = settings
        .as_ref()
        .ok()
        .and_then(|s| s.config.general.logfile.clone());
    crate::ops::logging::reopen(logfile.as_ref());
    let settings = settings?;
    let current = Registry::current();
    let changed = crate::config::restart_only_changes(
        &current.settings.config.general,
        &settings.config.general,
    );
    if !changed.is_empty() {
        return Err(AdminError::NeedsRestart(changed.join(", ")));
    }
    Registry::install(Registry::build(settings, Some(&current)));
    tracing::info!("configuration reloaded");
    Ok(())
}

/// SIGHUP calls [`reload`] until the process ends.
pub async fn reload_on_sighup() {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut hup) = signal(SignalKind::hangup()) else {
        tracing::error!("cannot listen for SIGHUP: reload disabled");
        return;
    };
    while hup.recv().await.is_some() {
        if let Err(e) = reload() {
            tracing::error!("{e}");
        }
    }
}

/// The configured database names (sorted, once each).
pub(crate) fn configured_databases() -> Vec<String> {
    Registry::current().settings.database_names()
}

/// Pauses one database (`None`: every configured database): new transactions of its clients
/// wait; returns once no transaction is in flight. Gives up after `pause_timeout` (sessions
/// holding a server in session mode or pinned by session state), undoing the pause.
pub async fn pause(database: Option<&str>) -> Result<(), AdminError> {
    let databases = match database {
        Some(db) => {
            if !Registry::current().settings.has_database(db) {
                return Err(AdminError::UnknownDatabase(db.to_string()));
            }
            vec![db.to_string()]
        }
        None => configured_databases(),
    };
    let timeout = Duration::from_millis(Registry::current().settings.config.general.pause_timeout);
    crate::backend::pause::pause_all(&databases, timeout).await?;
    tracing::info!("paused {}", databases.join(", "));
    Ok(())
}

/// Resumes one database (`None`: every paused database); its waiting clients continue.
pub fn resume(database: Option<&str>) {
    let databases = match database {
        Some(db) => vec![db.to_string()],
        None => crate::backend::pause::paused(),
    };
    crate::backend::pause::resume_all(&databases);
    tracing::info!("resumed {}", databases.join(", "));
}
