//! The client's unnamed prepared statement. Postgres keeps one per connection; behind a pool a
//! client that parses it in one round trip and binds it in the next (pgx's describe-exec mode)
//! may hold another server connection by then, one that has no unnamed statement or another
//! client's. So the session remembers the client's last Parse of "" and each server connection
//! which Parse it holds (`backend::Unnamed`): before a Bind or Describe of "" on a connection
//! that holds something else, the client's Parse is sent again (its answer hidden); when the
//! client has none, the connection's is closed first, so the server answers 26000 as directly.
//! A simple query drops the unnamed statement, on the client's side as on the server's.
//! In transaction mode with `cache_unnamed_statements` (the default) this is the fallback: a
//! Parse of "" becomes one of the global statements (`backend::prepared`) under the client's
//! name "" in `Session::statements`, prepared once per server, so a repeated one skips the
//! server's parse (`extended`); what Postgres does with a failed or skipped Parse of "" is
//! kept by `Expect::unnamed_before`.
use super::{Expect, Session};
use crate::backend::Unnamed;
use crate::net::message;
use crate::net::tag::{frontend, target};
use crate::net::Message;
use std::sync::atomic::{AtomicU64, Ordering};

/// Ids of unnamed-statement Parses, unique in the process.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The client's unnamed statement: the id of its Parse and the Parse itself.
#[derive(Debug, Clone)]
pub(super) struct ClientUnnamed {
    id: u64,
    parse: Message,
}

/// A client's Parse of the unnamed statement on its way: its id, and the statement it replaces
/// (the client's again if the server skips this Parse).
#[derive(Debug)]
pub(super) struct UnnamedParse {
    id: u64,
    previous: Option<ClientUnnamed>,
}

impl ClientUnnamed {
    /// The client's Parse, for a client handed over to another pgdog.
    pub(super) fn parse_bytes(&self) -> Vec<u8> {
        self.parse.bytes().to_vec()
    }

    /// The unnamed statement of a client handed over by another pgdog.
    pub(super) fn from_parse_bytes(parse: Vec<u8>) -> ClientUnnamed {
        ClientUnnamed {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            parse: Message::from_bytes(parse.into()),
        }
    }
}

impl Session {
    /// The client parses the unnamed statement (on the attached server).
    pub(super) fn unnamed_parsed(&mut self, parse: &Message) -> UnnamedParse {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        // A copy: the message itself shares the client reader's buffer, which could not be
        // reused while it is kept.
        let mine = ClientUnnamed {
            id,
            parse: Message::from_bytes(bytes::Bytes::copy_from_slice(parse.bytes())),
        };
        if let Some(s) = self.server.as_mut() {
            s.unnamed = Unnamed::Parsed(id);
        }
        UnnamedParse {
            id,
            previous: self.unnamed.replace(mine),
        }
    }

    /// The client closed its unnamed statement, or sent a simple query (which drops it). Sent
    /// behind an unsynced batch, the server may skip it: what it holds is not known then.
    pub(super) fn unnamed_closed(&mut self) {
        self.unnamed = None;
        self.unnamed_forgotten();
        self.dealloc.unnamed_closed();
        let unsynced = self.unsynced;
        if let Some(s) = self.server.as_mut() {
            s.unnamed = if unsynced {
                Unnamed::Unknown
            } else {
                Unnamed::Empty
            };
        }
    }

    /// The client's cached unnamed statement (`cache_unnamed_statements`) is gone or replaced
    /// by one that is not cached.
    pub(super) fn unnamed_forgotten(&mut self) {
        if !self.statements.is_empty() {
            self.statements.remove("");
        }
    }

    /// The server skipped a message about its unnamed statement, or a Parse of it failed.
    pub(super) fn unnamed_unknown(&mut self) {
        if let Some(s) = self.server.as_mut() {
            s.unnamed = Unnamed::Unknown;
        }
    }

    /// The client's Parse of "" failed (`failed`: the client has no unnamed statement, as
    /// with Postgres) or was skipped (the one before it is the client's again).
    pub(super) fn unnamed_parse_failed(&mut self, parse: UnnamedParse, failed: bool) {
        self.unnamed_unknown();
        if self.unnamed.as_ref().is_some_and(|u| u.id == parse.id) {
            self.unnamed = if failed { None } else { parse.previous };
        }
    }

    /// Before a Bind or Describe of the unnamed statement: the attached server holds the
    /// client's (parsed again if needed), or none when the client has none.
    pub(super) async fn ensure_unnamed(&mut self) {
        let Some(server) = self.server.as_mut() else {
            return;
        };
        match (&self.unnamed, server.unnamed) {
            (Some(mine), Unnamed::Parsed(id)) if mine.id == id => {}
            (Some(mine), _) => {
                server.unnamed = Unnamed::Parsed(mine.id);
                let parse = mine.parse.clone();
                self.forward(&parse, Expect::HiddenParse { prepared: None })
                    .await;
            }
            (None, Unnamed::Empty) => {}
            (None, _) => {
                server.unnamed = Unnamed::Empty;
                let close = message::target(frontend::CLOSE, target::STATEMENT, "");
                self.forward(&close, Expect::HiddenClose).await;
            }
        }
    }
}
