//! A client transaction whose server connection was lost (or ended by a server FATAL such as
//! `idle_in_transaction_session_timeout`): pgdog answers for it, as Postgres answers a failed
//! transaction, until the client ends it. Every statement gets an error (the first one says the
//! server was lost, SQLSTATE 08006; the next ones 25P02), and COMMIT, ROLLBACK, END or ABORT end
//! it with the tag `ROLLBACK`. Nothing reaches a server meanwhile, so no statement of the lost
//! transaction can run in autocommit on a new server and make its COMMIT look successful.
use crate::net::message::{self, read_bind_names, read_parse, read_query_text, read_target};
use crate::net::tag::{frontend, target};
use crate::net::TxStatus;
use crate::net::{Message, ProtocolError};
use bytes::BytesMut;

/// The state of a lost transaction, owned by the session until the client ends it.
#[derive(Debug)]
pub struct Aborted {
    /// Why, for the first error the client sees.
    reason: String,
    /// The client has already been told why (the next errors are 25P02).
    told: bool,
    /// Dropping extended-protocol messages until Sync after an error.
    skipping: bool,
    /// The unnamed statement ends the transaction.
    unnamed_ends: bool,
    /// The bound (unnamed) portal ends the transaction.
    portal_ends: bool,
    /// An Execute ended the transaction: the next Sync reports idle.
    ended: bool,
}

impl Aborted {
    /// A lost transaction the client has not heard of yet.
    pub fn new(reason: String) -> Aborted {
        Aborted {
            reason,
            told: false,
            skipping: false,
            unnamed_ends: false,
            portal_ends: false,
            ended: false,
        }
    }

    /// A lost transaction whose error the client already received; `skipping` when the rest
    /// of its extended-protocol batch up to Sync must be dropped.
    pub fn told(reason: String, skipping: bool) -> Aborted {
        Aborted {
            told: true,
            skipping,
            ..Aborted::new(reason)
        }
    }

    fn error(&mut self, out: &mut BytesMut) {
        let m = if self.told {
            message::error(
                "25P02",
                "current transaction is aborted, commands ignored until end of transaction block",
            )
        } else {
            self.told = true;
            message::error("08006", &self.reason)
        };
        out.extend_from_slice(m.bytes());
    }

    fn fail_extended(&mut self, out: &mut BytesMut) {
        self.error(out);
        self.skipping = true;
    }

    /// Answers one client message into `out`; true once the transaction is over (the client
    /// was sent ReadyForQuery `I`).
    pub fn answer(
        &mut self,
        m: &Message,
        statements: &mut crate::frontend::session::Statements,
        out: &mut BytesMut,
    ) -> Result<bool, ProtocolError> {
        let put = |out: &mut BytesMut, m: Message| out.extend_from_slice(m.bytes());
        if self.skipping && m.tag() != frontend::SYNC {
            return Ok(false);
        }
        match m.tag() {
            frontend::QUERY => {
                if ends_transaction(&String::from_utf8_lossy(read_query_text(m)?)) {
                    put(out, message::command_complete("ROLLBACK"));
                    put(out, message::ready_for_query(crate::net::TxStatus::Idle));
                    return Ok(true);
                }
                self.error(out);
                put(out, message::ready_for_query(TxStatus::Failed));
            }
            frontend::PARSE => {
                let fields = read_parse(m)?;
                if ends_transaction(&String::from_utf8_lossy(fields.text)) {
                    if fields.name.is_empty() {
                        self.unnamed_ends = true;
                    }
                    put(out, message::parse_complete());
                } else {
                    self.fail_extended(out);
                }
            }
            frontend::BIND => {
                let (_, statement, _) = read_bind_names(m)?;
                let ends = if statement.is_empty() {
                    self.unnamed_ends
                } else {
                    statements
                        .get(&*statement)
                        .is_some_and(|p| ends_transaction(&p.statement.query))
                };
                if ends {
                    self.portal_ends = true;
                    put(out, message::empty(b'2'));
                } else {
                    self.fail_extended(out);
                }
            }
            frontend::DESCRIBE => {
                let (kind, _) = read_target(m)?;
                if kind == target::STATEMENT {
                    // No parameters, no rows.
                    put(out, message::build(b't', |b| b.extend_from_slice(&[0, 0])));
                }
                put(out, message::empty(b'n'));
            }
            frontend::EXECUTE => {
                if self.portal_ends {
                    put(out, message::command_complete("ROLLBACK"));
                    self.ended = true;
                } else {
                    self.fail_extended(out);
                }
            }
            frontend::CLOSE => {
                let (kind, name) = read_target(m)?;
                if kind == target::STATEMENT {
                    statements.remove(&*name);
                }
                put(out, message::close_complete());
            }
            frontend::FUNCTION_CALL => self.fail_extended(out),
            frontend::SYNC => {
                self.skipping = false;
                self.portal_ends = false;
                let status = if self.ended {
                    TxStatus::Idle
                } else {
                    TxStatus::Failed
                };
                put(out, message::ready_for_query(status));
                return Ok(self.ended);
            }
            // Flush, and CopyData/CopyDone/CopyFail outside a COPY: nothing to answer.
            _ => {}
        }
        Ok(false)
    }
}

/// Whether `sql` is one statement that ends a transaction block (COMMIT, ROLLBACK, END, ABORT,
/// without TO SAVEPOINT or PREPARED).
pub fn ends_transaction(sql: &str) -> bool {
    let text = sql.trim().trim_end_matches(';').trim();
    if text.contains(';') {
        return false;
    }
    let mut words = text.split_whitespace().map(|w| w.to_ascii_lowercase());
    let first = words.next().unwrap_or_default();
    if !matches!(first.as_str(), "commit" | "rollback" | "end" | "abort") {
        return false;
    }
    words.all(|w| matches!(w.as_str(), "work" | "transaction" | "and" | "no" | "chain"))
}

/// Whether `sql` may open a transaction block (mentions BEGIN or START): a batch lost in flight
/// with such a statement leaves the client in an unknown transaction state.
pub fn may_begin(sql: &str) -> bool {
    super::mentions::Mentions::of(sql).may_begin()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tags of the messages in `bytes`.
    fn messages(bytes: &BytesMut) -> Vec<u8> {
        let mut tags = Vec::new();
        let mut at = 0;
        while at + 5 <= bytes.len() {
            tags.push(bytes[at]);
            let len =
                i32::from_be_bytes([bytes[at + 1], bytes[at + 2], bytes[at + 3], bytes[at + 4]]);
            at += 1 + len as usize;
        }
        tags
    }

    #[test]
    fn statements_that_end_a_transaction() {
        for sql in [
            "COMMIT",
            "rollback;",
            " END work ",
            "abort transaction",
            "COMMIT AND NO CHAIN",
        ] {
            assert!(ends_transaction(sql), "{sql}");
        }
        for sql in [
            "ROLLBACK TO SAVEPOINT a",
            "COMMIT PREPARED 'x'",
            "INSERT INTO t VALUES (1); COMMIT",
            "SELECT 1",
            "",
        ] {
            assert!(!ends_transaction(sql), "{sql}");
        }
        assert!(may_begin("begin"));
        assert!(may_begin("START TRANSACTION"));
        assert!(!may_begin("SELECT 1"));
    }

    #[test]
    fn first_error_says_why_then_25p02_until_commit_answers_rollback() {
        let mut statements = crate::frontend::session::Statements::default();
        let mut a = Aborted::new("server connection lost".into());
        let mut out = BytesMut::new();
        assert!(!a
            .answer(
                &message::query("INSERT INTO t VALUES (2)"),
                &mut statements,
                &mut out
            )
            .unwrap());
        let text = String::from_utf8_lossy(&out).to_string();
        assert!(
            text.contains("08006") && text.contains("server connection lost"),
            "{text}"
        );
        out.clear();
        assert!(!a
            .answer(&message::query("SELECT 1"), &mut statements, &mut out)
            .unwrap());
        assert!(String::from_utf8_lossy(&out).contains("25P02"));
        out.clear();
        assert!(a
            .answer(&message::query("COMMIT"), &mut statements, &mut out)
            .unwrap());
        assert!(String::from_utf8_lossy(&out).contains("ROLLBACK"));
        assert_eq!(messages(&out), vec![b'C', b'Z']);
    }

    #[test]
    fn extended_commit_ends_it_and_other_batches_fail_until_sync() {
        let mut statements = crate::frontend::session::Statements::default();
        let mut a = Aborted::told("lost".into(), false);
        let mut out = BytesMut::new();
        for m in [message::parse("", "SELECT 1", &[]), message::sync()] {
            a.answer(&m, &mut statements, &mut out).unwrap();
        }
        assert_eq!(messages(&out), vec![b'E', b'Z']);
        assert!(out.ends_with(&[b'Z', 0, 0, 0, 5, b'E']));
        out.clear();
        let bind = message::build(b'B', |b| b.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]));
        let execute = message::build(b'E', |b| b.extend_from_slice(&[0, 0, 0, 0, 0]));
        let mut ended = false;
        for m in [
            message::parse("", "COMMIT", &[]),
            bind,
            execute,
            message::sync(),
        ] {
            ended = a.answer(&m, &mut statements, &mut out).unwrap();
        }
        assert!(ended);
        assert_eq!(messages(&out), vec![b'1', b'2', b'C', b'Z']);
        assert!(out.ends_with(&[b'Z', 0, 0, 0, 5, b'I']));
    }
}
