//! Errors of the topology harness.
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("PostgreSQL binaries not found ({0}); run scripts/provision.sh or set PGDOG_PG_BIN")]
    InstallNotFound(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` failed ({status}): {stderr}")]
    Command {
        command: String,
        status: String,
        stderr: String,
    },
    #[error("OS user `{0}` for the servers is missing and could not be created: {1}")]
    ServerUser(String, String),
    #[error("no free port in {0}..{1}")]
    NoFreePort(u16, u16),
    #[error("timed out after {seconds:.1}s waiting for {what}")]
    Timeout { what: String, seconds: f64 },
    #[error("a thread panicked while {0}")]
    Panicked(String),
    #[error("{0} has no node named `{1}`")]
    NoSuchNode(PathBuf, String),
}

pub type Result<T> = std::result::Result<T, Error>;

/// Attaches a description to an I/O error.
pub trait IoContext<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn context(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| Error::Io {
            what: what(),
            source,
        })
    }
}
