//! Resharding: schema sync, copy, replay, cutover, verify.

pub mod copy;
pub mod schema_sync;
pub mod verify;
