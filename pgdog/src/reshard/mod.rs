//! Resharding: schema sync, copy, replay, cutover, verify.

pub mod schema_sync;
pub mod verify;
