//! The steady state of a transaction, server to client: a run of messages the session only
//! counts (rows, command tags, descriptions, notices...) goes to the client straight from the
//! server's read buffer in one copy, headers read in place; the ReadyForQuery that ends it
//! too. Only the messages pgdog reads or rewrites (errors, ParseComplete, CloseComplete,
//! ParameterStatus, COPY IN, hidden answers) become `Message`s, for `server_message`, at the
//! point where the run stops. Every message still goes through the same bookkeeping
//! (`ReadRetry::forward`, the queue of expected answers), in order.
use super::{Expect, Session};
use crate::net::tag::backend;
use crate::net::TxStatus;

/// What a counted message answers in the queue of expected answers.
#[derive(Clone, Copy)]
enum Answers {
    Nothing,
    Execute,
    Describe,
    Bind,
}

/// The counted messages, with what each answers; None: the message needs a closer look.
fn counted(tag: u8) -> Option<Answers> {
    Some(match tag {
        backend::DATA_ROW
        | backend::NOTICE_RESPONSE
        | backend::NOTIFICATION_RESPONSE
        | backend::PARAMETER_DESCRIPTION
        | backend::COPY_DATA
        | backend::COPY_DONE
        | backend::COPY_OUT_RESPONSE => Answers::Nothing,
        backend::COMMAND_COMPLETE | backend::EMPTY_QUERY_RESPONSE | backend::PORTAL_SUSPENDED => {
            Answers::Execute
        }
        backend::ROW_DESCRIPTION | backend::NO_DATA => Answers::Describe,
        backend::BIND_COMPLETE => Answers::Bind,
        _ => return None,
    })
}

impl Answers {
    fn pops(self, e: &Expect) -> bool {
        match self {
            Answers::Nothing => false,
            Answers::Execute => matches!(e, Expect::Execute),
            Answers::Describe => matches!(e, Expect::Describe(_)),
            Answers::Bind => matches!(e, Expect::Bind(_)),
        }
    }
}

/// An answer pgdog made itself is due before the next server message.
fn synthetic_due(front: Option<&Expect>) -> bool {
    matches!(
        front,
        Some(Expect::Synthetic(_) | Expect::LocalParse { .. } | Expect::CopyEnd)
    )
}

impl Session {
    /// Relays the counted messages at the front of the server's read buffer, and the
    /// ReadyForQuery after them; stops at the first message that needs a closer look (left in
    /// the buffer) or one that has not fully arrived.
    pub(super) fn relay_in_place(&mut self) {
        let Some(server) = self.server.as_mut() else {
            return;
        };
        // Bytes [from, at) are relayed; a message the client must not get moves `from`.
        let (mut from, mut at) = (0, 0);
        let mut ready = None;
        while let Some((tag, len)) = server.complete_at(at) {
            if synthetic_due(self.expected.front()) {
                break;
            }
            let answers = match counted(tag) {
                Some(a) => a,
                None if tag == backend::READY_FOR_QUERY
                    && !matches!(self.expected.front(), Some(Expect::HiddenReady)) =>
                {
                    Answers::Nothing
                }
                None => break,
            };
            if !self.retry.forward(tag) {
                // (A second RowDescription of a read run again elsewhere.)
                self.client.queue(&server.unread()[from..at]);
                from = at + len;
            } else if self.expected.front().is_some_and(|e| answers.pops(e)) {
                self.expected.pop_front();
            }
            at += len;
            if tag == backend::READY_FOR_QUERY {
                // Its status byte (a ReadyForQuery without one counts as idle, as
                // `TxStatus::of` reads it).
                let status = if len > 5 {
                    server.unread()[at - 1]
                } else {
                    b'I'
                };
                ready = Some(TxStatus::from_byte(status));
                break;
            }
        }
        if at > from {
            self.client.queue(&server.unread()[from..at]);
        }
        server.consume(at);
        if let Some(status) = ready {
            // As `server_message` does for a ReadyForQuery (which may hand the server back).
            self.ready_sent(status);
            self.ready(status);
        }
    }
}
