//! What the proxy counts: per (user, database) traffic counters and latency histograms
//! (`counters`), the table of connected clients (`clients`), errors by SQLSTATE class, and the
//! per-session recorder that feeds them (`meter`). Read by the admin database's SHOW commands
//! and the OpenMetrics endpoint; written with relaxed atomics on the hot path.
pub mod clients;
pub mod counters;
pub mod meter;
pub mod readiness;
pub mod routes;

pub use clients::{ClientInfo, ClientState};
pub use counters::{Histogram, PoolStats};
pub use meter::Meter;

use parking_lot::Mutex;
use std::collections::BTreeMap;

static ERRORS: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());

/// Counts an error sent to a client, by the class of its SQLSTATE (first two characters).
pub fn error(code: &str) {
    let class = code.get(..2).unwrap_or("XX").to_string();
    *ERRORS.lock().entry(class).or_default() += 1;
}

/// Counts an ErrorResponse on its way to a client (server's or pgdog's).
pub fn error_response(m: &crate::net::Message) {
    // Fields: a type byte and a C string each; `C` holds the SQLSTATE.
    let mut rest = m.payload();
    while let Some((&kind, tail)) = rest.split_first() {
        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        if kind == b'C' {
            error(std::str::from_utf8(&tail[..end]).unwrap_or("XX000"));
            return;
        }
        if kind == 0 {
            break;
        }
        rest = tail.get(end + 1..).unwrap_or(&[]);
    }
    error("XX000");
}

/// Errors sent to clients so far, by SQLSTATE class.
pub fn errors() -> Vec<(String, u64)> {
    ERRORS.lock().iter().map(|(k, v)| (k.clone(), *v)).collect()
}
