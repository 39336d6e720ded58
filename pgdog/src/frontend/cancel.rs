//! Cancel keys: pgdog hands each client its own BackendKeyData and forwards a CancelRequest with
//! that key to the server currently running the client's query. A wrong key does nothing.
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

/// Issues a fresh random key for a client.
pub fn register() -> Registration {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    loop {
        let pid: i32 = rng.gen_range(1..i32::MAX);
        let secret: [u8; 4] = rng.gen();
        let mut keys = KEYS.lock();
        if keys.contains_key(&(pid, secret)) {
            continue;
        }
        let slot: Slot = Arc::new(Mutex::new(None));
        let others: Others = Arc::new(Mutex::new(Vec::new()));
        keys.insert((pid, secret), (slot.clone(), others.clone()));
        return Registration {
            pid,
            secret,
            slot,
            others,
        };
    }
}

/// Forwards a cancel request for client key (pid, secret), if it exists and the client is
/// attached to a server.
pub async fn cancel(pid: i32, secret: &[u8]) {
    let Ok(secret) = <[u8; 4]>::try_from(secret) else {
        return;
    };
    let targets: Vec<Arc<CancelKey>> = KEYS
        .lock()
        .get(&(pid, secret))
        .map(|(slot, others)| {
            slot.lock()
                .iter()
                .cloned()
                .chain(others.lock().iter().cloned())
                .collect()
        })
        .unwrap_or_default();
    if targets.is_empty() {
        tracing::debug!("cancel request with an unknown key ignored");
        return;
    }
    for key in targets {
        cancel_server(&key).await;
    }
}

/// Sends a CancelRequest for a server connection's running query.
pub async fn cancel_server(key: &CancelKey) {
    let request = crate::net::message::cancel_request(key.pid, &key.secret);
    match tokio::net::TcpStream::connect(&key.addr).await {
        Ok(mut stream) => {
            use tokio::io::AsyncWriteExt;
            let _ = stream.write_all(&request).await;
            let _ = stream.shutdown().await;
        }
        Err(e) => tracing::warn!("forwarding cancel to {}: {e}", key.addr),
    }
}
