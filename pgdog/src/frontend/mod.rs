//! Client side: accepting connections, the startup phase (TLS, cancel requests, protocol
//! negotiation, authentication) and the per-client session that pools server connections.
//! Must not build protocol bytes by hand (that is `net`) or manage connections (`backend`).
pub mod aborted;
pub mod cancel;
pub mod client;
pub mod handover;
pub mod listen;
pub mod listener;
pub mod login;
pub mod mentions;
pub mod params;
pub mod read_only;
pub mod session;
pub mod sharded;
pub mod statements;
pub mod unix_listener;

/// The mirroring tap of a session of (user, database), if that database is mirrored.
fn tap(user: &str, database: &str) -> Option<Box<crate::backend::mirror::Tap>> {
    crate::backend::mirror::Tap::new(user, database, login::serve_mirror_boxed).map(Box::new)
}
