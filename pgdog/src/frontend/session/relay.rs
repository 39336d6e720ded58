//! The relay core of a one-server session. Waiting: with no clock running and no LISTEN, one
//! hand-written poll over the stop flag, the server and the client (`wait`), as PgBouncer's
//! and Odyssey's relays do, instead of a `select!` that builds its futures each time.
//! Server to client, the steady state of a transaction: a run of messages the session only
//! counts (rows, command tags, descriptions, notices...) goes to the client straight from the
//! server's read buffer in one copy, headers read in place; the ReadyForQuery that ends it
//! too. Only the messages pgdog reads or rewrites (errors, ParseComplete, CloseComplete,
//! ParameterStatus, COPY IN, hidden answers) become `Message`s, for `server_message`, at the
//! point where the run stops. Every message still goes through the same bookkeeping
//! (`ReadRetry::forward`, the queue of expected answers), in order.
use super::listening;
use super::timeouts::{expiry, stopped};
use super::{Expect, Session, SessionError};
use crate::backend::ServerError;
use crate::net::tag::backend;
use crate::net::{ProtocolError, TxStatus};
use std::task::{Context, Poll};

/// What woke a session waiting with no clock running.
enum Woke {
    Stop,
    Server(Result<(), ServerError>),
    Client(Result<(), ProtocolError>),
}

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
    /// Waits for what comes next (the client, its server, a stop, a clock, a notification)
    /// and handles it. With no clock running and no LISTEN (the steady state), that is one
    /// poll over the stop flag and both sockets, no futures made per wake-up; else a
    /// `select!` over all of them.
    pub(super) async fn wait(&mut self) -> Result<(), SessionError> {
        let (deadline, idle) = self.deadline();
        if deadline.is_none() && self.listening.is_none() {
            return match std::future::poll_fn(|cx| self.poll_woke(cx, idle)).await {
                Woke::Stop if self.server.is_none() => Err(self.stop_between_transactions().await),
                Woke::Stop => Err(stopped(&self.info)),
                Woke::Server(r) => self.server_read(r).await,
                Woke::Client(r) => Ok(r?),
            };
        }
        let stop = self.info.stop_requested(idle);
        let timer = expiry(deadline);
        match self.server.as_mut() {
            // `biased`: fixed order, no random start per wake-up (tokio's rng: 40
            // instructions a select, callgrind).
            None => tokio::select! {
                biased;
                _ = stop => return Err(self.stop_between_transactions().await),
                r = self.client.read(true) => r?,
                n = listening::next(&mut self.listening), if self.listening.is_some() => {
                    self.notified(n)?
                }
                _ = timer, if deadline.is_some() => self.timed_out(deadline).await?,
            },
            Some(server) => {
                let idle = self.expected.is_empty();
                // Server first: its answers are drained before more requests are read.
                tokio::select! {
                    biased;
                    _ = stop => return Err(stopped(&self.info)),
                    _ = timer, if deadline.is_some() => self.timed_out(deadline).await?,
                    r = server.fill() => self.server_read(r).await?,
                    r = self.client.read(idle) => r?,
                    // A pinned client between transactions gets its LISTENs' notifications.
                    n = listening::next(&mut self.listening),
                        if self.listening.is_some()
                            && self.expected.is_empty()
                            && self.status == TxStatus::Idle =>
                    {
                        self.notified(n)?
                    }
                }
            }
        }
        Ok(())
    }

    /// The stop flag, then the server (its answers are drained before more requests are
    /// read), then the client, in the order of `wait`'s `select!`.
    fn poll_woke(&mut self, cx: &mut Context<'_>, idle: bool) -> Poll<Woke> {
        if self.info.poll_stop(cx, idle).is_ready() {
            return Poll::Ready(Woke::Stop);
        }
        let client_idle = match self.server.as_mut() {
            Some(server) => {
                if let Poll::Ready(r) = server.poll_fill(cx) {
                    return Poll::Ready(Woke::Server(r));
                }
                self.expected.is_empty()
            }
            None => true,
        };
        self.client.poll_read(cx, client_idle).map(Woke::Client)
    }

    /// Bytes from the server arrived (or it was lost): its answers go to the client, then
    /// what pgdog runs on the server between requests.
    async fn server_read(&mut self, read: Result<(), ServerError>) -> Result<(), SessionError> {
        if let Err(e) = read {
            return self.server_lost(e).await;
        }
        self.server_messages().await?;
        if self.verify.is_some() {
            self.verify_settings().await;
        }
        if self.fetch_lsn {
            self.record_write_lsn().await;
        }
        if self.reset_due {
            self.reset_server().await;
        }
        self.replay_batch().await
    }

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
