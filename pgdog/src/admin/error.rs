//! Errors of the admin database (`[general] admin_database`): every one carries the SQLSTATE
//! the admin client receives in its ErrorResponse.
use crate::config::ConfigError;

/// What went wrong running an admin command.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// Not an admin command (or not one with these arguments): PgBouncer's words.
    #[error("invalid command '{statement}', use SHOW HELP;")]
    UnknownCommand { statement: String },
    /// The admin database speaks the simple query protocol only.
    #[error("the admin database only supports the simple query protocol; commands: {commands}")]
    Unsupported { commands: String },
    #[error("database \"{0}\" is not configured")]
    UnknownDatabase(String),
    /// PAUSE gave up (pause_timeout, or a RESUME while it waited); it was undone.
    #[error(transparent)]
    Pause(#[from] crate::backend::pause::PauseError),
    /// RELOAD could not read or validate the files; the old configuration stays in force.
    #[error("reload failed, keeping the current configuration: {0}")]
    Reload(#[from] ConfigError),
    /// RELOAD of files that change settings read only at start; the old configuration stays.
    #[error("reload failed, keeping the current configuration: {0} changed and takes effect only at a restart")]
    NeedsRestart(String),
    /// RELOAD before `set_config_paths` (only possible in-process, not from the binary).
    #[error("reload: the configuration file paths were never recorded (set_config_paths)")]
    NoConfigPaths,
    /// A bad argument (SET of an unknown or fixed key, a value of the wrong type).
    #[error("{0}")]
    Invalid(String),
    /// Any other failure, for extensions: SQLSTATE and message.
    #[error("{message}")]
    Failed { code: &'static str, message: String },
}

impl AdminError {
    /// The SQLSTATE sent to the admin client.
    pub fn code(&self) -> &'static str {
        match self {
            // PgBouncer's code for every console error.
            AdminError::UnknownCommand { .. } => "08P01",
            AdminError::Unsupported { .. } => "0A000",
            AdminError::UnknownDatabase(_) => "3D000",
            AdminError::Pause(e) => e.code(),
            AdminError::Reload(_) => "F0000",
            // Postgres' code for a parameter that cannot be changed without a restart.
            AdminError::NeedsRestart(_) => "55P02",
            AdminError::NoConfigPaths => "55000",
            AdminError::Invalid(_) => "22023",
            AdminError::Failed { code, .. } => code,
        }
    }
}
