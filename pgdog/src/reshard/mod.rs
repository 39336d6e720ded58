//! Resharding: schema sync, copy, replay, cutover, verify.

pub mod admin_commands;
pub mod cleanup;
pub mod config_swap;
pub mod copy;
mod copy_stream;
pub mod cutover;
pub mod display;
mod fleet;
pub mod moving;
pub mod orchestrate;
mod ownership;
pub mod preflight;
pub mod progress;
pub mod replay;
pub mod retry;
pub mod schema_sync;
pub mod verify;

/// The two databases of a move, by their pgdog.toml names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Databases {
    /// The source: the database whose rows move.
    pub from: String,
    /// The destination.
    pub to: String,
}

impl Databases {
    pub fn new(from: impl Into<String>, to: impl Into<String>) -> Databases {
        Databases {
            from: from.into(),
            to: to.into(),
        }
    }
}
