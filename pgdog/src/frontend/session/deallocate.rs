//! Extended-protocol statements pgdog answers itself in transaction mode, in order with the
//! server's answers: their Parse, Bind, Describe, Execute and Close, and those of their portal.
//! - DEALLOCATE (psycopg with `prepare_threshold = 0` prepares its DEALLOCATE ALL under a name
//!   of its own): it drops the client's own statements, never pgdog's shared ones on the
//!   server (the next client given that server would get 26000); done at Execute.
//! - LISTEN / UNLISTEN prepared between transactions (JDBC prepares every statement): run by
//!   the database's listener at Execute, as a simple-protocol LISTEN is (`listening`), so the
//!   client holds no server for it.
use super::{Session, SessionError};
use crate::frontend::listen::{self, Command};
use crate::frontend::mentions::{Mentions, Word};
use crate::frontend::statements;
use crate::net::message::{self, read_bind_names, read_target};
use crate::net::tag::{frontend, target};
use crate::net::Message;
use std::collections::HashMap;

/// A statement pgdog answers.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
enum Answered {
    /// DEALLOCATE of this statement (None: ALL).
    Deallocate(Option<String>),
    Listen(Command),
}

/// The client's statements pgdog answers (carried when the client moves to another pgdog).
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Deallocs {
    /// The unnamed statement is one.
    unnamed: Option<Answered>,
    named: HashMap<String, Answered>,
    /// The unnamed portal is bound to one.
    portal: Option<Answered>,
    /// Statements (by name, "" unnamed) that are a DISCARD ALL: it takes effect when their
    /// portal runs, not at Parse (psycopg prepares it in a batch of its own).
    discards: std::collections::HashSet<String>,
    /// The last portal bound runs a DISCARD ALL.
    discard_bound: bool,
}

impl Deallocs {
    /// A simple query or a Close dropped the unnamed statement (and portal).
    pub(super) fn unnamed_closed(&mut self) {
        self.unnamed = None;
        self.portal = None;
        // (Hashing "" on every simple query cost 200 instructions a transaction: callgrind.)
        if !self.discards.is_empty() {
            self.discards.remove("");
        }
    }

    /// The client parsed statement `name`; `discards`: it is a DISCARD ALL.
    pub(super) fn parsed(&mut self, name: &str, discards: bool) {
        if discards {
            self.discards.insert(name.to_string());
        } else if !self.discards.is_empty() {
            self.discards.remove(name);
        }
    }

    /// A Bind of statement `name`.
    pub(super) fn bound(&mut self, name: &str) {
        self.discard_bound = !self.discards.is_empty() && self.discards.contains(name);
    }

    /// An Execute: true when it runs a DISCARD ALL.
    pub(super) fn executes_discard(&mut self) -> bool {
        std::mem::take(&mut self.discard_bound)
    }
}

impl Session {
    /// A Parse of `name` with `text`: when it is a DEALLOCATE or a LISTEN pgdog answers, its
    /// ParseComplete is queued and true returned.
    pub(super) fn parse_deallocate(&mut self, name: &str, text: &str, mentions: Mentions) -> bool {
        let target = self
            .deallocate_target(text, mentions)
            .map(Answered::Deallocate)
            .or_else(|| self.listen_target(text, mentions).map(Answered::Listen));
        let Some(target) = target else {
            if name.is_empty() {
                self.dealloc.unnamed = None;
            }
            return false;
        };
        if name.is_empty() {
            self.unnamed = None;
            self.unnamed_forgotten();
            self.dealloc.unnamed = Some(target);
        } else {
            if self.statements.contains_key(name) || self.dealloc.named.contains_key(name) {
                return false; // the server answers 42P05 as for any redefinition
            }
            self.dealloc.named.insert(name.to_string(), target);
        }
        self.synthetic(message::parse_complete());
        true
    }

    /// What a DEALLOCATE pgdog answers drops (None: ALL).
    fn deallocate_target(&self, text: &str, mentions: Mentions) -> Option<Option<String>> {
        // DEALLOCATE ALL of a session pinned by SQL PREPARE, and of a name that is not one of
        // the client's protocol-level statements, reach the server.
        let sql_prepare = self.pinned == Some("SQL-level PREPARE");
        let dropped = mentions
            .has(Word::Deallocate)
            .then(|| statements::deallocate(text));
        dropped.flatten().filter(|t| match t {
            None => !sql_prepare,
            Some(dropped) => self.statements.contains_key(dropped),
        })
    }

    /// A LISTEN / UNLISTEN prepared between transactions, which the listener runs.
    fn listen_target(&self, text: &str, mentions: Mentions) -> Option<Command> {
        // A pinned client's LISTEN reaches its server, as in a simple query.
        if !mentions.has(Word::Listen) || !self.between_transactions() || self.server.is_some() {
            return None;
        }
        let command = listen::parse(text)?;
        // What Postgres would refuse (`LISTEN select`: a reserved word) is its to answer.
        crate::router::cache::QueryCache::global().get(text).ok()?;
        Some(command)
    }

    /// Answers a Bind, Describe, Execute or Close of a statement pgdog answers (or of its
    /// portal); false when `m` is not one of those (it goes its usual way).
    pub(super) async fn answer_deallocate(&mut self, m: &Message) -> Result<bool, SessionError> {
        let d = &self.dealloc;
        if d.unnamed.is_none() && d.named.is_empty() && d.portal.is_none() {
            // None to answer (nearly always): no names read (a malformed message fails where
            // it goes next).
            return Ok(false);
        }
        match m.tag() {
            frontend::BIND => {
                let (portal, statement, _) = read_bind_names(m)?;
                let target = match &*statement {
                    "" => self.dealloc.unnamed.clone(),
                    _ if self.dealloc.named.is_empty() => None,
                    name => self.dealloc.named.get(name).cloned(),
                };
                let Some(target) = target.filter(|_| portal.is_empty()) else {
                    if portal.is_empty() {
                        self.dealloc.portal = None;
                    }
                    return Ok(false);
                };
                self.dealloc.portal = Some(target);
                self.synthetic(message::empty(b'2'));
            }
            frontend::DESCRIBE => {
                let (kind, name) = read_target(m)?;
                let ours = match (kind, &*name) {
                    (target::PORTAL, "") => self.dealloc.portal.is_some(),
                    (target::STATEMENT, "") => self.dealloc.unnamed.is_some(),
                    (target::STATEMENT, name) => self.dealloc.named.contains_key(name),
                    _ => false,
                };
                if !ours {
                    return Ok(false);
                }
                if kind == target::STATEMENT {
                    self.synthetic(message::parameter_description(&[]));
                }
                self.synthetic(message::empty(b'n'));
            }
            frontend::EXECUTE if self.dealloc.portal.is_some() => {
                if !m.reader().name()?.is_empty() {
                    return Ok(false);
                }
                match self.dealloc.portal.take() {
                    Some(Answered::Deallocate(target)) => self.execute_deallocate(target).await,
                    Some(Answered::Listen(command)) => self.execute_listen(command).await,
                    None => {}
                }
            }
            frontend::CLOSE => {
                let (kind, name) = read_target(m)?;
                let ours = match (kind, &*name) {
                    (target::STATEMENT, "") => self.dealloc.unnamed.take().is_some(),
                    (target::STATEMENT, name) => self.dealloc.named.remove(name).is_some(),
                    (target::PORTAL, "") => self.dealloc.portal.take().is_some(),
                    _ => false,
                };
                if !ours {
                    return Ok(false);
                }
                self.synthetic(message::close_complete());
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The client's DEALLOCATE runs: its statements go (the portal can run once).
    async fn execute_deallocate(&mut self, target: Option<String>) {
        let tag = match target {
            None => "DEALLOCATE ALL",
            Some(_) => "DEALLOCATE",
        };
        if self.deallocate(target.clone()) {
            self.synthetic(message::command_complete(tag));
            return;
        }
        // Closed since its Parse: Postgres' answer, and the rest of the batch fails.
        let name = target.unwrap_or_default();
        let m = format!("prepared statement \"{name}\" does not exist");
        let error = message::error("26000", &m);
        if self.server.is_some() {
            self.fail_on_server(error).await;
        } else {
            self.send(&error);
            self.skip_until_sync = true;
        }
    }

    /// The client's prepared LISTEN / UNLISTEN runs. Alone in its batch (nothing of it on a
    /// server) it is the listener's. In a batch with statements on a server, or inside a
    /// transaction block, Postgres would run it in their transaction, which pgdog cannot
    /// follow for a statement the server does not have: refused.
    async fn execute_listen(&mut self, command: Command) {
        let alone = self.server.is_none() && self.expected.is_empty() && !self.unsynced;
        if !alone || self.status != crate::net::TxStatus::Idle {
            let error = message::error(
                "0A000",
                "pgdog: in transaction mode a LISTEN or UNLISTEN prepared between transactions runs alone in its batch, outside a transaction block (send a Sync before it, or use the simple protocol)",
            );
            self.fail_in_order(error).await;
            return;
        }
        match self.run_listen(command).await {
            Ok(tag) => self.synthetic(message::command_complete(tag)),
            Err(error) => self.fail_in_order(error).await,
        }
    }
}
