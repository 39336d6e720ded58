//! A session's server connection lost: banning the server when it is down, and never hiding a
//! transaction that was lost with it (see `frontend::aborted`). A client whose session state
//! lived on that server (session mode, or pinned in transaction mode) is told so the way
//! Postgres tells it: the server's FATAL, unchanged (or FATAL 08006), and its connection closed.
//! So is a client whose protocol violation made the server end the connection (FATAL 08P01).
//! Otherwise (transaction mode) each request that failed gets one error: the FATAL's SQLSTATE
//! and message as an ERROR, or 08006.
use super::{Aborted, Expect, Session, SessionError};
use crate::backend::ServerError;
use crate::config::PoolerMode;
use crate::net::message::{self, ErrorFields};
use crate::net::tag::backend;
use crate::net::{Message, TxStatus};

/// A simple-protocol read sent to a replica, and whether it can still be run on another server
/// if this one dies: only until the client has seen rows of its answer.
pub(super) enum ReadRetry {
    /// Not a retryable read (or answered).
    No,
    /// Not answered yet; `header_sent`: its RowDescription reached the client already.
    Possible { query: Message, header_sent: bool },
    /// Running again elsewhere: the second RowDescription is dropped (the client has one).
    SkipHeader,
    /// More than its RowDescription reached the client (rows, or its end): a loss now is
    /// reported, never hidden by a second answer.
    TooLate,
}

impl ReadRetry {
    pub(super) fn possible(query: Message) -> Self {
        ReadRetry::Possible {
            query,
            header_sent: false,
        }
    }

    /// Notes a server message of the read; false when the client must not get it.
    pub(super) fn forward(&mut self, tag: u8) -> bool {
        match self {
            ReadRetry::SkipHeader if tag == backend::ROW_DESCRIPTION => {
                *self = ReadRetry::No;
                return false;
            }
            ReadRetry::Possible { header_sent, .. } => match tag {
                backend::NOTICE_RESPONSE | backend::PARAMETER_STATUS | backend::ERROR_RESPONSE => {}
                backend::ROW_DESCRIPTION if !*header_sent => *header_sent = true,
                _ => *self = ReadRetry::TooLate,
            },
            _ => {}
        }
        true
    }
}

/// A FATAL (or PANIC) a server sent before closing its connection.
pub(super) struct ServerFatal {
    /// As the server sent it.
    message: Message,
    code: String,
    text: String,
}

impl ServerFatal {
    pub(super) fn new(message: &Message, fields: &ErrorFields) -> ServerFatal {
        ServerFatal {
            message: message.clone(),
            code: fields.code.clone(),
            text: fields.message.clone(),
        }
    }
}

impl Session {
    /// A simple-protocol read whose replica died before answering anything: run it again on
    /// another server (the dead one is banned now), once. Reads have no side effects, so the
    /// client only sees its answer.
    async fn retry_read(&mut self, query: Message, header_sent: bool) -> Result<(), SessionError> {
        tracing::info!(
            "client {}@{}: retrying a read on another server",
            self.client.user,
            self.client.database
        );
        if self.attach(true).await? {
            if header_sent {
                self.retry = ReadRetry::SkipHeader;
            }
            self.expected.push_back(Expect::Ready);
            // Written by the session loop (no flush from here: this is the loss handler).
            self.server_out.extend_from_slice(query.bytes());
        } else {
            // attach sent the error; the query still ends with ReadyForQuery.
            self.send(&message::ready_for_query(TxStatus::Idle));
            self.flush().await?;
        }
        Ok(())
    }

    /// The server connection failed: drop the server and tell the client. Outside a
    /// transaction with nothing in flight the next statement simply gets a new server. A
    /// transaction (or a batch that may have opened one) is never hidden: the client's
    /// transaction becomes failed (see `aborted`) until it ends it.
    pub(super) async fn server_lost(&mut self, e: ServerError) -> Result<(), SessionError> {
        // Boxed: rare, and its state would otherwise size every future that may lose a server.
        Box::pin(self.handle_server_lost(e)).await
    }

    async fn handle_server_lost(&mut self, e: ServerError) -> Result<(), SessionError> {
        let fatal = self.server_fatal.take();
        let why = match &fatal {
            Some(f) => format!("server closed the connection: {} ({})", f.text, f.code),
            None => format!("server connection lost: {e}"),
        };
        tracing::warn!(
            "client {}@{}: {why}",
            self.client.user,
            self.client.database
        );
        let unavailable = match &fatal {
            Some(f) => f.code.starts_with("57P"),
            None => e.is_unavailable(),
        };
        // Banned only when the loss says the server is down, not for a FATAL that ended this
        // one connection (issue 27: one client must not take a server out of rotation).
        let down = match &fatal {
            Some(f) => crate::backend::server::server_down_code(&f.code),
            None => e.says_server_down(),
        };
        if down {
            if let Some(s) = self.server.as_ref() {
                s.pool().host().mark_down(&why);
            }
        }
        let in_flight = self
            .expected
            .iter()
            .filter(|e| matches!(e, Expect::Ready))
            .count();
        let after_last_sync = self
            .expected
            .iter()
            .rev()
            .take_while(|e| !matches!(e, Expect::Ready))
            .any(|e| !matches!(e, Expect::Synthetic(_) | Expect::CopyEnd));
        // A batch not ended by Sync was lost too (its implicit transaction): the client hears
        // of it, and its Sync does not report success.
        let waiting = !self.expected.is_empty() || self.copy_in || self.unsynced;
        let in_tx = self.status != TxStatus::Idle || self.may_begin || in_flight > 1;
        // What the unanswered messages would have created does not exist.
        for expect in std::mem::take(&mut self.expected) {
            self.not_done(expect, false);
        }
        if let Some(s) = self.server.as_mut() {
            s.discard();
        }
        self.detach();
        self.server_out.clear();
        self.copy_in = false;
        self.pending.clear();
        self.may_begin = false;
        let was_pinned = self.pinned.take().is_some();
        match std::mem::replace(&mut self.retry, ReadRetry::No) {
            ReadRetry::Possible { query, header_sent }
                if !in_tx && in_flight == 1 && unavailable =>
            {
                return self.retry_read(query, header_sent).await;
            }
            ReadRetry::TooLate => tracing::warn!(
                "client {}@{}: a read lost after part of its answer reached the client: not retried",
                self.client.user,
                self.client.database
            ),
            _ => {}
        }
        // 08P01: the client broke the protocol (a Query during COPY FROM STDIN...); Postgres
        // closes such a client, in any mode, since its requests and replies are out of step.
        let out_of_step = fatal.as_ref().is_some_and(|f| f.code == "08P01");
        if self.client.mode == PoolerMode::Session || was_pinned || out_of_step {
            // The session state the client was told it has is gone with the server.
            let m = fatal.map_or_else(|| message::fatal("08006", &why), |f| f.message);
            return Err(SessionError::ServerClosed(m));
        }
        let code = fatal.as_ref().map_or("08006", |f| f.code.as_str());
        if in_tx {
            let why = format!("{why}; the transaction is aborted: end it with ROLLBACK");
            let status = TxStatus::Failed;
            if waiting {
                for _ in 0..in_flight.max(1) {
                    self.send(&message::error(code, &why));
                    if in_flight > 0 {
                        self.send(&message::ready_for_query(status));
                    }
                }
                self.aborted = Some(Aborted::told(why, in_flight == 0 || after_last_sync));
            } else {
                // Idle in the transaction: the next statement hears of it.
                self.aborted = Some(Aborted::new(why));
            }
            self.status = status;
        } else if waiting {
            self.send(&message::error(code, &why));
            if in_flight > 0 {
                self.send(&message::ready_for_query(TxStatus::Idle));
            }
            self.skip_until_sync = in_flight == 0 || after_last_sync;
            self.status = TxStatus::Idle;
        }
        self.flush().await?;
        Ok(())
    }
}
