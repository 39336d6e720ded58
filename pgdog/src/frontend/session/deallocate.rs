//! DEALLOCATE sent as an extended-protocol statement in transaction mode (psycopg with
//! `prepare_threshold = 0` sends its DEALLOCATE ALL so): it drops the client's own statements,
//! never pgdog's shared ones on the server (the next client given that server would get 26000),
//! so pgdog answers the unnamed statement's Parse, Bind, Describe and Execute itself, in order
//! with the server's answers, and forgets the client's statements at Execute.
use super::{Session, SessionError};
use crate::frontend::statements;
use crate::net::message::{self, read_bind_names, read_target};
use crate::net::tag::{frontend, target};
use crate::net::Message;

/// The client's unnamed statement is a DEALLOCATE of `target` (None: ALL); `bound`: its
/// unnamed portal too.
#[derive(Debug)]
pub(super) struct Deallocate {
    target: Option<String>,
    bound: bool,
}

impl Session {
    /// A Parse of `name` with `text`: when it is an unnamed DEALLOCATE pgdog answers, its
    /// ParseComplete is queued and true returned.
    pub(super) fn parse_deallocate(&mut self, name: &str, text: &str) -> bool {
        let target = statements::deallocate(text).filter(|_| name.is_empty());
        // DEALLOCATE ALL of a session pinned by SQL PREPARE, and of a name that is not one of
        // the client's protocol-level statements, reach the server.
        let sql_prepare = self.pinned == Some("SQL-level PREPARE");
        self.dealloc = target
            .filter(|t| match t {
                None => !sql_prepare,
                Some(name) => self.statements.contains_key(name),
            })
            .map(|target| Deallocate {
                target,
                bound: false,
            });
        if self.dealloc.is_none() {
            return false;
        }
        self.unnamed = None;
        self.synthetic(message::parse_complete());
        true
    }

    /// Answers a Bind, Describe or Execute of the unnamed DEALLOCATE statement (or its
    /// portal); false when `m` is not one of those (it goes its usual way).
    pub(super) async fn answer_deallocate(&mut self, m: &Message) -> Result<bool, SessionError> {
        match m.tag() {
            frontend::BIND if self.dealloc.is_some() => {
                let (portal, statement, _) = read_bind_names(m)?;
                if !portal.is_empty() || !statement.is_empty() {
                    return Ok(false);
                }
                if let Some(d) = self.dealloc.as_mut() {
                    d.bound = true;
                }
                self.synthetic(message::empty(b'2'));
            }
            frontend::DESCRIBE if self.dealloc.is_some() => {
                let (kind, name) = read_target(m)?;
                let bound = self.dealloc.as_ref().is_some_and(|d| d.bound);
                if !name.is_empty() || (kind == target::PORTAL && !bound) {
                    return Ok(false);
                }
                if kind == target::STATEMENT {
                    self.synthetic(message::parameter_description(&[]));
                }
                self.synthetic(message::empty(b'n'));
            }
            frontend::EXECUTE if self.dealloc.as_ref().is_some_and(|d| d.bound) => {
                if !m.reader().cstr()?.is_empty() {
                    return Ok(false);
                }
                let target = self.dealloc.as_ref().and_then(|d| d.target.clone());
                let tag = match target {
                    None => "DEALLOCATE ALL",
                    Some(_) => "DEALLOCATE",
                };
                if let Some(d) = self.dealloc.as_mut() {
                    d.bound = false;
                }
                if self.deallocate(target.clone()) {
                    self.synthetic(message::command_complete(tag));
                } else {
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
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}
