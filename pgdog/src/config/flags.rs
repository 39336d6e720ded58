//! Settings read on the hot path, kept as atomics (one load instead of a settings lookup);
//! `store` sets them with every activation of the settings.
use super::{General, UnknownFunctions};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

static CLIENT_CLOCKS: AtomicBool = AtomicBool::new(false);
/// A database's or user's own client timeout is on.
static OVERRIDE_CLOCKS: AtomicBool = AtomicBool::new(false);

pub(super) fn store_override_clocks(on: bool) {
    OVERRIDE_CLOCKS.store(on, Relaxed);
}
static PIN_UNKNOWN_FUNCTIONS: AtomicBool = AtomicBool::new(true);
static CACHE_UNNAMED_STATEMENTS: AtomicBool = AtomicBool::new(true);

pub(super) fn store(general: &General) {
    CLIENT_CLOCKS.store(
        general.query_timeout > 0
            || general.client_idle_timeout > 0
            || general.idle_in_transaction_timeout > 0,
        Relaxed,
    );
    PIN_UNKNOWN_FUNCTIONS.store(general.unknown_functions == UnknownFunctions::Pin, Relaxed);
    CACHE_UNNAMED_STATEMENTS.store(general.cache_unnamed_statements, Relaxed);
}

/// Whether any per-client timeout (query, idle, idle in transaction) is on: sessions skip their
/// clocks entirely otherwise.
pub fn client_clocks() -> bool {
    CLIENT_CLOCKS.load(Relaxed) || OVERRIDE_CLOCKS.load(Relaxed)
}

/// `unknown_functions = "pin"` (the default): a call of a function pgdog does not know pins the
/// session (read on every classified statement).
pub fn pin_unknown_functions() -> bool {
    PIN_UNKNOWN_FUNCTIONS.load(Relaxed)
}

/// `cache_unnamed_statements` (read on every Parse of the unnamed statement).
pub fn cache_unnamed_statements() -> bool {
    CACHE_UNNAMED_STATEMENTS.load(Relaxed)
}
