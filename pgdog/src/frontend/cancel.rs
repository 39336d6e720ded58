//! Cancel keys: pgdog hands each client its own BackendKeyData and forwards a CancelRequest with
//! that key to the server currently running the client's query. A wrong key does nothing.
//! With `peer_id` set, a key's process id carries it (bits 16 to 30): a CancelRequest for a
//! client of another pgdog of `[[peers]]` is sent on to that pgdog, and one for a key that no
//! client here holds goes to the pgdogs sharing this port (`ops::handover`: a client handed
//! over keeps its key).
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::LazyLock;

use crate::backend::CancelKey;

/// The server a client is attached to, shared between its session and the registry.
pub type Slot = Arc<Mutex<Option<Arc<CancelKey>>>>;

/// The other servers a sharded session's query runs on (cancelled together with `Slot`'s).
pub type Others = Arc<Mutex<Vec<Arc<CancelKey>>>>;

type Keys = HashMap<(i32, [u8; 4]), (Slot, Others)>;

static KEYS: LazyLock<Mutex<Keys>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// A registered client key; unregistered when dropped.
pub struct Registration {
    pub pid: i32,
    pub secret: [u8; 4],
    pub slot: Slot,
    pub others: Others,
}

impl Drop for Registration {
    fn drop(&mut self) {
        KEYS.lock().remove(&(self.pid, self.secret));
    }
}

/// Issues a fresh random key for a client (its process id carries `peer_id`, when set).
pub fn register() -> Registration {
    use rand::Rng;
    let peer = i32::from(crate::config::active().peer_id);
    let mut rng = rand::thread_rng();
    loop {
        let pid: i32 = if peer > 0 {
            (peer << 16) | rng.gen_range(0..=0xffff)
        } else {
            rng.gen_range(1..i32::MAX)
        };
        if let Some(registration) = register_as(pid, rng.gen()) {
            return registration;
        }
    }
}

/// Registers a given key (a client handed over by another pgdog keeps its key); None when a
/// client here holds it already.
pub fn register_as(pid: i32, secret: [u8; 4]) -> Option<Registration> {
    let mut keys = KEYS.lock();
    if keys.contains_key(&(pid, secret)) {
        return None;
    }
    let slot: Slot = Arc::new(Mutex::new(None));
    let others: Others = Arc::new(Mutex::new(Vec::new()));
    keys.insert((pid, secret), (slot.clone(), others.clone()));
    Some(Registration {
        pid,
        secret,
        slot,
        others,
    })
}

/// The pgdog of `[[peers]]` a key belongs to, when it is not this one.
fn peer_of(pid: i32) -> Option<crate::config::CancelPeer> {
    let own = crate::config::active().peer_id;
    let id = u16::try_from(pid >> 16).ok()?;
    if own == 0 || id == own {
        return None;
    }
    let registry = crate::registry::Registry::current();
    let peer = registry
        .settings
        .config
        .peers
        .iter()
        .find(|p| p.peer_id == id);
    peer.cloned()
}

/// A CancelRequest from a client: sent on to the peer that issued the key, else served here,
/// else passed to the pgdogs sharing this port (a client handed over, or not yet).
pub async fn cancel(pid: i32, secret: &[u8]) {
    let Ok(secret) = <[u8; 4]>::try_from(secret) else {
        return;
    };
    // A client here first (one handed over keeps the key another pgdog issued).
    if cancel_here(pid, secret).await {
        return;
    }
    if let Some(peer) = peer_of(pid) {
        let request = crate::net::message::cancel_request(pid, &secret);
        send_cancel(&crate::net::unix::address(&peer.host, peer.port), &request).await;
        return;
    }
    crate::ops::handover::forward_cancel(pid, secret).await;
}

/// Cancels the query of this pgdog's client with key (pid, secret), if it is attached to a
/// server. Whether the key is one of this pgdog's clients.
pub async fn cancel_here(pid: i32, secret: [u8; 4]) -> bool {
    let found = KEYS.lock().get(&(pid, secret)).map(|(slot, others)| {
        slot.lock()
            .iter()
            .cloned()
            .chain(others.lock().iter().cloned())
            .collect::<Vec<Arc<CancelKey>>>()
    });
    let Some(targets) = found else {
        return false;
    };
    for key in targets {
        cancel_server(&key).await;
    }
    true
}

/// Sends a CancelRequest for a server connection's running query.
pub async fn cancel_server(key: &CancelKey) {
    let request = crate::net::message::cancel_request(key.pid, &key.secret);
    send_cancel(&key.addr, &request).await;
}

/// Writes a CancelRequest packet to `addr` (a server, or a peer pgdog; `host:port` or a
/// socket file) and closes.
async fn send_cancel(addr: &str, request: &[u8]) {
    if let Err(e) = crate::net::unix::send_and_close(addr, request).await {
        tracing::warn!("forwarding cancel to {addr}: {e}");
    }
}
