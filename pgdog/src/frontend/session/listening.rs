//! A transaction-mode client's LISTENs (see `backend::listener`): pgdog answers LISTEN and
//! UNLISTEN between transactions, the database's listener connection runs them, and the
//! notifications reach the client while it is between transactions, as Postgres delivers
//! them. The client holds no server connection while it waits.
use super::{Session, SessionError};
use crate::backend::listener::{self, Listener, Subscriber};
use crate::backend::Shard;
use crate::config::{PoolerMode, Role};
use crate::frontend::listen::{self, Command};
use crate::net::{message, Message, TxStatus};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

type Waiting = tokio::sync::oneshot::Receiver<Result<(), String>>;

/// The channels a client listens on, through its database's listener.
pub(crate) struct Listening {
    listener: Arc<Listener>,
    subscriber: Subscriber,
    channels: HashSet<String>,
}

impl Listening {
    /// Through the listener of the shard's primary (its first server when none is named).
    fn new(shard: &Shard) -> Option<Listening> {
        let hosts = shard.hosts();
        let host = hosts
            .iter()
            .find(|h| h.state.configured == Role::Primary)
            .or(hosts.first())?;
        Some(Listening {
            listener: listener::listener(host.pool.target()),
            subscriber: listener::subscriber(),
            channels: HashSet::new(),
        })
    }

    /// Applies the command; a LISTEN returns what tells when the server listens.
    fn apply(&mut self, command: Command) -> Option<(String, Waiting)> {
        let id = self.subscriber.id;
        match command {
            Command::Listen(c) => {
                let waiting = self.listener.listen(&self.subscriber, &c);
                self.channels.insert(c.clone());
                return Some((c, waiting));
            }
            Command::Unlisten(c) => {
                self.listener.unlisten(id, &c);
                self.channels.remove(&c);
            }
            Command::UnlistenAll => {
                for c in self.channels.drain() {
                    self.listener.unlisten(id, &c);
                }
            }
        }
        None
    }

    /// The channels, for a client handed over to another pgdog.
    pub(super) fn channels(&self) -> Vec<String> {
        self.channels.iter().cloned().collect()
    }

    /// Listens on `channels` again (a client handed over by another pgdog).
    pub(super) fn resume(shard: &Shard, channels: Vec<String>) -> Option<Listening> {
        let mut listening = Listening::new(shard)?;
        for c in channels {
            // Not waited for: the client is not waiting for an answer.
            let _ = listening.apply(Command::Listen(c));
        }
        Some(listening)
    }

    /// Whether a notification is for a channel the client still listens on (one queued
    /// before its UNLISTEN is not sent, as with Postgres).
    fn wants(&self, m: &Message) -> bool {
        let mut r = m.reader();
        r.i32().is_ok() && r.cstr().is_ok_and(|c| self.channels.contains(c))
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        for c in &self.channels {
            self.listener.unlisten(self.subscriber.id, c);
        }
    }
}

/// The next notification for the client (never, while it listens on nothing); None when its
/// queue overflowed.
pub(crate) async fn next(listening: &mut Option<Listening>) -> Option<Message> {
    match listening {
        Some(l) => l.subscriber.next().await,
        None => std::future::pending().await,
    }
}

impl Session {
    /// Between transactions in transaction mode, nothing on the way to or from a server (a
    /// pinned client too): where pgdog answers LISTEN and UNLISTEN.
    pub(super) fn between_transactions(&self) -> bool {
        self.status == TxStatus::Idle
            && self.expected.is_empty()
            && !self.unsynced
            && self.client.mode == PoolerMode::Transaction
    }

    /// LISTEN / UNLISTEN between transactions in transaction mode (also of a client pinned to
    /// its server): answered here once the server listens; false for anything else (which
    /// reaches the server as before).
    pub(super) async fn answer_listen(&mut self, sql: &str) -> bool {
        if !self.between_transactions() {
            return false;
        }
        let Some(command) = listen::parse(sql) else {
            return false;
        };
        // What Postgres would refuse (`LISTEN select`: a reserved word) is its to answer.
        if crate::router::cache::QueryCache::global().get(sql).is_err() {
            return false;
        }
        match self.run_listen(command).await {
            Ok(tag) => self.send(&message::command_complete(tag)),
            Err(error) => self.send(&error),
        }
        self.ready_now();
        true
    }

    /// Runs a LISTEN / UNLISTEN through the database's listener; a LISTEN returns once the
    /// server listens. Its command tag, or the error for the client (08006).
    pub(super) async fn run_listen(&mut self, command: Command) -> Result<&'static str, Message> {
        if self.listening.is_none() {
            self.listening = Listening::new(&self.shard);
        }
        let Some(listening) = self.listening.as_mut() else {
            let m = "LISTEN through pgdog failed: the database has no server";
            return Err(message::error("08006", m));
        };
        let tag = match command {
            Command::Listen(_) => "LISTEN",
            _ => "UNLISTEN",
        };
        if let Some((channel, waiting)) = listening.apply(command) {
            // A NOTIFY sent after the client's LISTEN returns must reach it, as with Postgres.
            let ms = crate::config::active().connect_timeout.max(1000) * 2;
            let failed = match tokio::time::timeout(Duration::from_millis(ms), waiting).await {
                Ok(Ok(Ok(()))) => None,
                Ok(Ok(Err(why))) => Some(why),
                Ok(Err(_)) => Some("the listener connection ended".to_string()),
                Err(_) => Some(format!("no listener connection within {ms} ms")),
            };
            if let Some(why) = failed {
                listening.apply(Command::Unlisten(channel));
                let m = format!("LISTEN through pgdog failed: {why}");
                return Err(message::error("08006", &m));
            }
        }
        Ok(tag)
    }

    /// A notification for the client (and any others waiting), or the end of the session
    /// when it let its queue overflow.
    pub(super) fn notified(&mut self, m: Option<Message>) -> Result<(), SessionError> {
        let Some(m) = m else {
            self.listening = None;
            return Err(SessionError::Terminated(
                "53200",
                format!(
                    "out of memory for notifications: {} were waiting for this client",
                    listener::QUEUE
                ),
            ));
        };
        let Some(l) = self.listening.as_mut() else {
            return Ok(());
        };
        let mut next = Some(m);
        while let Some(m) = next {
            if l.wants(&m) {
                self.client.queue(m.bytes());
            }
            next = l.subscriber.try_next();
        }
        Ok(())
    }
}
