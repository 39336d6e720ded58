//! Resharding: schema sync, copy, replay, cutover, verify.

pub mod admin_commands;
pub mod config_swap;
pub mod copy;
mod copy_stream;
pub mod cutover;
pub mod display;
mod fleet;
pub mod orchestrate;
pub mod progress;
pub mod replay;
pub mod schema_sync;
pub mod verify;
