//! Resharding: schema sync, copy, replay, cutover, verify.

pub mod copy;
pub mod replay;
pub mod schema_sync;
pub mod verify;
