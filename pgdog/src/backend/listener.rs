//! LISTEN without a server per listener (transaction mode): one listener connection per
//! server database runs the LISTENs of every client (`LISTEN "x"` while at least one client
//! listens on `x`, `UNLISTEN "x"` after the last one leaves) and hands each notification to the
//! clients listening on its channel. A client's queue holds up to `QUEUE` notifications; one
//! that does not read them is disconnected (53200) rather than losing any. A lost listener
//! connection is made again and its LISTENs run again (notifications sent meanwhile are lost,
//! and logged).
use super::server::{Server, ServerTarget};
use crate::net::quote::ident;
use crate::net::tag::backend;
use crate::net::Message;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, LazyLock};
use std::time::Duration;
use tokio::sync::mpsc;

/// Notifications one client may have waiting.
pub const QUEUE: usize = 10_000;

/// What a listening client holds: its id and the end notifications arrive at.
pub struct Subscriber {
    pub id: u64,
    rx: mpsc::Receiver<Message>,
    tx: Queue,
}

/// A client's queue, and how it learns that the queue overflowed.
#[derive(Clone)]
struct Queue {
    tx: mpsc::Sender<Message>,
    overflow: Arc<tokio::sync::Notify>,
    /// Set at the first overflow (the client is counted once).
    overflowed: Arc<std::sync::atomic::AtomicBool>,
}

impl Subscriber {
    /// The next notification; None once the queue overflowed (the session ends, 53200).
    /// A notification already waiting, if any.
    pub fn try_next(&mut self) -> Option<Message> {
        self.rx.try_recv().ok()
    }

    pub async fn next(&mut self) -> Option<Message> {
        tokio::select! {
            m = self.rx.recv() => m,
            _ = self.tx.overflow.notified() => None,
        }
    }
}

/// One server database's listener connection and its clients.
pub struct Listener {
    /// `host:port/database`.
    pub name: String,
    /// channel -> (client id, its queue).
    channels: Mutex<HashMap<String, HashMap<u64, Queue>>>,
    /// Channels to bring in line on the server (LISTEN or UNLISTEN), with who waits for it.
    sync: mpsc::UnboundedSender<(String, Option<Ack>)>,
    pub delivered: AtomicU64,
    /// Clients disconnected because their queue was full.
    pub overflowed: AtomicU64,
}

/// Told once the server listens on a channel (a client's LISTEN is answered then, so that a
/// NOTIFY sent after it reaches the client, as with Postgres), or why it could not.
pub type Ack = tokio::sync::oneshot::Sender<Result<(), String>>;

static LISTENERS: LazyLock<Mutex<HashMap<String, Arc<Listener>>>> = LazyLock::new(Default::default);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A new client end.
pub fn subscriber() -> Subscriber {
    let (tx, rx) = mpsc::channel(QUEUE);
    Subscriber {
        id: NEXT_ID.fetch_add(1, Relaxed),
        rx,
        tx: Queue {
            tx,
            overflow: Arc::new(tokio::sync::Notify::new()),
            overflowed: Default::default(),
        },
    }
}

/// The listener of `target`'s server database, started on first use.
pub fn listener(target: &ServerTarget) -> Arc<Listener> {
    let name = format!("{}/{}", target.addr(), target.database);
    let mut all = LISTENERS.lock();
    if let Some(l) = all.get(&name) {
        return l.clone();
    }
    let (sync, commands) = mpsc::unbounded_channel();
    let l = Arc::new(Listener {
        name: name.clone(),
        channels: Mutex::new(HashMap::new()),
        sync,
        delivered: AtomicU64::new(0),
        overflowed: AtomicU64::new(0),
    });
    tokio::spawn(run(l.clone(), target.clone(), commands));
    all.insert(name, l.clone());
    l
}

/// Every listener, by name.
pub fn all() -> Vec<Arc<Listener>> {
    let mut v: Vec<_> = LISTENERS.lock().values().cloned().collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

impl Listener {
    /// Adds the client to `channel`; the receiver is told once the server listens on it.
    pub fn listen(
        &self,
        s: &Subscriber,
        channel: &str,
    ) -> tokio::sync::oneshot::Receiver<Result<(), String>> {
        self.channels
            .lock()
            .entry(channel.to_string())
            .or_default()
            .insert(s.id, s.tx.clone());
        let (ack, done) = tokio::sync::oneshot::channel();
        let _ = self.sync.send((channel.to_string(), Some(ack)));
        done
    }

    pub fn unlisten(&self, id: u64, channel: &str) {
        let mut channels = self.channels.lock();
        let Some(clients) = channels.get_mut(channel) else {
            return;
        };
        clients.remove(&id);
        if clients.is_empty() {
            channels.remove(channel);
            let _ = self.sync.send((channel.to_string(), None));
        }
    }

    /// (channels listened on, client subscriptions).
    pub fn counts(&self) -> (usize, usize) {
        let channels = self.channels.lock();
        (channels.len(), channels.values().map(HashMap::len).sum())
    }

    /// A NotificationResponse from the server, to each client listening on its channel.
    fn dispatch(&self, m: &Message) {
        let mut r = m.reader();
        let channel = match (r.i32(), r.cstr()) {
            (Ok(_), Ok(c)) => c.to_string(),
            _ => {
                tracing::warn!("listener {}: malformed NotificationResponse", self.name);
                return;
            }
        };
        let mut channels = self.channels.lock();
        let Some(clients) = channels.get_mut(&channel) else {
            return;
        };
        clients.retain(|id, q| match q.tx.try_send(m.clone()) {
            Ok(()) => {
                self.delivered.fetch_add(1, Relaxed);
                true
            }
            // The client left; its session unlistens too.
            Err(mpsc::error::TrySendError::Closed(_)) => false,
            Err(mpsc::error::TrySendError::Full(_)) => {
                // Its session ends (53200): nothing is lost silently.
                if !q.overflowed.swap(true, Relaxed) {
                    q.overflow.notify_one();
                    tracing::warn!(
                        "listener {}: client {id} has {QUEUE} notifications waiting: disconnecting it",
                        self.name
                    );
                    self.overflowed.fetch_add(1, Relaxed);
                }
                false
            }
        });
        if clients.is_empty() {
            channels.remove(&channel);
            let _ = self.sync.send((channel, None));
        }
    }

    fn wanted(&self, channel: &str) -> bool {
        self.channels.lock().contains_key(channel)
    }
}

/// Why a statement on the listener connection failed.
enum Failed {
    /// The connection is lost: made again.
    Connection(String),
    /// The server refused the statement (an ErrorResponse): the connection goes on.
    Statement(String),
}

/// Runs `sql` on the listener connection, handing on notifications that arrive meanwhile.
async fn execute(l: &Listener, server: &mut Server, sql: &str) -> Result<(), Failed> {
    let lost = |e: crate::backend::ServerError| Failed::Connection(e.to_string());
    server
        .write(&crate::net::message::query(sql))
        .await
        .map_err(lost)?;
    let mut refused = None;
    loop {
        let m = server.read().await.map_err(lost)?;
        match m.tag() {
            backend::NOTIFICATION_RESPONSE => l.dispatch(&m),
            backend::ERROR_RESPONSE => {
                let why = crate::net::message::read_error(&m).map_or_else(
                    |_| "an error".into(),
                    |f| format!("{} ({})", f.message, f.code),
                );
                tracing::warn!("listener {}: {sql}: {why}", l.name);
                refused = Some(why);
            }
            backend::READY_FOR_QUERY => {
                return refused.map_or(Ok(()), |why| Err(Failed::Statement(why)))
            }
            _ => {}
        }
    }
}

/// Brings `channel` in line on the server: LISTEN while a client wants it, else UNLISTEN.
async fn sync(
    l: &Listener,
    server: &mut Server,
    listening: &mut HashSet<String>,
    channel: String,
) -> Result<(), Failed> {
    let wanted = l.wanted(&channel);
    if wanted == listening.contains(&channel) {
        return Ok(());
    }
    let verb = if wanted { "LISTEN" } else { "UNLISTEN" };
    execute(l, server, &format!("{verb} {}", ident(&channel))).await?;
    if wanted {
        listening.insert(channel);
    } else {
        listening.remove(&channel);
    }
    Ok(())
}

/// One listener connection's life: serves channel changes and notifications until it fails.
async fn serve(
    l: &Listener,
    server: &mut Server,
    commands: &mut mpsc::UnboundedReceiver<(String, Option<Ack>)>,
) -> Result<(), String> {
    let mut listening = HashSet::new();
    let current: Vec<String> = l.channels.lock().keys().cloned().collect();
    for channel in current {
        match sync(l, server, &mut listening, channel).await {
            Err(Failed::Connection(e)) => return Err(e),
            _ => continue,
        }
    }
    dispatch_buffered(l, server)?;
    loop {
        tokio::select! {
            command = commands.recv() => match command {
                Some((channel, ack)) => {
                    let done = sync(l, server, &mut listening, channel).await;
                    let (told, lost) = match done {
                        Ok(()) => (Ok(()), None),
                        Err(Failed::Statement(why)) => (Err(why), None),
                        Err(Failed::Connection(e)) => (Err(e.clone()), Some(e)),
                    };
                    if let Some(ack) = ack {
                        let _ = ack.send(told);
                    }
                    if let Some(e) = lost {
                        return Err(e);
                    }
                }
                None => return Ok(()),
            },
            filled = server.fill() => filled.map_err(|e| e.to_string())?,
        }
        // Also what arrived behind a LISTEN's or UNLISTEN's ReadyForQuery (read with it, it
        // waits in the buffer: `fill` only wakes for more bytes).
        dispatch_buffered(l, server)?;
    }
}

/// Hands on the notifications already read from the listener connection.
fn dispatch_buffered(l: &Listener, server: &mut Server) -> Result<(), String> {
    while let Some(m) = server.try_read().map_err(|e| e.to_string())? {
        if m.tag() == backend::NOTIFICATION_RESPONSE {
            l.dispatch(&m);
        }
    }
    Ok(())
}

async fn run(
    l: Arc<Listener>,
    target: ServerTarget,
    mut commands: mpsc::UnboundedReceiver<(String, Option<Ack>)>,
) {
    let params = [("application_name", "pgdog_listener")];
    loop {
        let timeout = Duration::from_millis(crate::config::active().connect_timeout);
        match Server::connect_with_params(&target, &params, timeout).await {
            Ok(mut server) => {
                match serve(&l, &mut server, &mut commands).await {
                    Ok(()) => return,
                    Err(e) => tracing::warn!(
                        "listener {}: connection lost ({e}); notifications sent until it is back are lost",
                        l.name
                    ),
                }
            }
            Err(e) => tracing::warn!("listener {}: {e}", l.name),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
