//! The session side of mirroring: the client's messages, cut into requests (a Query, or the
//! extended-protocol messages up to a Sync), handed to the client's lane of each mirror when
//! the ReadyForQuery that ends a transaction (`I`) has gone to the client. Requests the client
//! pipelined beyond it stay for the next transaction. Nothing here waits.
use super::lane::{Job, Lane, ServeFn};
use super::Mirror;
use crate::net::message::{read_parse, read_query_text};
use crate::net::tag::frontend;
use crate::net::{Message, TxStatus};
use bytes::BytesMut;
use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

/// A transaction bigger than this is not mirrored (dropped, counted).
pub const MAX_TRANSACTION_BYTES: usize = 1 << 20;

struct Target {
    mirror: Arc<Mirror>,
    lane: Option<Lane>,
    /// A transaction of this client was lost: nothing after it is replayed.
    stopped: bool,
}

/// One source session's tap.
pub struct Tap {
    user: String,
    serve: ServeFn,
    targets: Vec<Target>,
    /// The client's messages not handed on yet.
    buf: BytesMut,
    /// Where each request the client sent (and not yet handed on) ends in `buf`.
    ends: VecDeque<usize>,
    /// Requests of the transaction in flight that got their ReadyForQuery.
    answered: usize,
    /// The buffer passed MAX_TRANSACTION_BYTES: this transaction is dropped.
    oversized: bool,
    ddl: bool,
    /// The source sent the client an error in this transaction.
    source_failed: bool,
    started: Option<Instant>,
    check_ddl: bool,
}

impl Tap {
    /// The tap of a session of `user` on `database`, if the database is mirrored; `serve`
    /// starts the session of a lane's other end.
    pub fn new(user: &str, database: &str, serve: ServeFn) -> Option<Tap> {
        let mirrors = super::of_source(database);
        if mirrors.is_empty() {
            return None;
        }
        let check_ddl = mirrors
            .iter()
            .any(|m| m.config.level != crate::config::MirrorLevel::All);
        Some(Tap {
            user: user.to_string(),
            serve,
            targets: mirrors
                .into_iter()
                .map(|mirror| Target {
                    mirror,
                    lane: None,
                    stopped: false,
                })
                .collect(),
            buf: BytesMut::new(),
            ends: VecDeque::new(),
            answered: 0,
            oversized: false,
            ddl: false,
            source_failed: false,
            started: None,
            check_ddl,
        })
    }

    /// A message from the client (COPY data included).
    pub fn message(&mut self, m: &Message) {
        let tag = m.tag();
        if tag == frontend::TERMINATE {
            return;
        }
        self.started.get_or_insert_with(Instant::now);
        if self.check_ddl && !self.ddl {
            let text = match tag {
                frontend::QUERY => read_query_text(m).ok().map(String::from_utf8_lossy),
                frontend::PARSE => read_parse(m).ok().map(|p| String::from_utf8_lossy(p.text)),
                _ => None,
            };
            self.ddl = text.is_some_and(|t| super::has_ddl(&t));
        }
        if matches!(
            tag,
            frontend::COPY_DATA | frontend::COPY_DONE | frontend::COPY_FAIL
        ) && self.ends.back() == Some(&self.buf.len())
        {
            // A Sync right before COPY data was sent after the Execute that started a COPY
            // FROM STDIN: Postgres ignores it (no ReadyForQuery), so it ends no request.
            self.ends.pop_back();
        }
        if self.buf.len() + m.bytes().len() > MAX_TRANSACTION_BYTES {
            self.oversized = true;
        } else {
            self.buf.extend_from_slice(m.bytes());
        }
        if matches!(
            tag,
            frontend::QUERY | frontend::SYNC | frontend::FUNCTION_CALL
        ) {
            self.ends.push_back(self.buf.len());
        }
    }

    /// The source sent the client an ErrorResponse.
    pub fn error_sent(&mut self) {
        self.source_failed = true;
    }

    /// A ReadyForQuery went to the client: one request is answered; with `I` the
    /// transaction's requests are handed on.
    pub fn ready(&mut self, status: TxStatus) {
        if self.answered < self.ends.len() {
            self.answered += 1;
        }
        if status != TxStatus::Idle || self.answered == 0 {
            return;
        }
        let end = self.ends[self.answered - 1];
        let bytes = self.buf.split_to(end.min(self.buf.len())).freeze();
        self.ends.drain(..self.answered);
        self.ends.iter_mut().for_each(|e| *e -= end);
        let requests = std::mem::take(&mut self.answered);
        let source_us = self
            .started
            .take()
            .map_or(0, |t| t.elapsed().as_micros() as u64);
        let job = Job {
            bytes,
            requests,
            source_failed: std::mem::take(&mut self.source_failed),
            source_us,
        };
        let oversized = std::mem::take(&mut self.oversized);
        if oversized {
            // What was not kept cannot be cut into requests: start over.
            self.buf.clear();
            self.ends.clear();
        }
        let ddl = std::mem::take(&mut self.ddl);
        if !self.buf.is_empty() {
            self.started = Some(Instant::now());
        }
        for t in &mut self.targets {
            Self::hand_on(t, &job, oversized, ddl, &self.user, self.serve);
        }
    }

    fn hand_on(t: &mut Target, job: &Job, oversized: bool, ddl: bool, user: &str, serve: ServeFn) {
        if !t.mirror.wants(ddl) {
            return;
        }
        if t.stopped {
            t.mirror.dropped.fetch_add(1, Relaxed);
            return;
        }
        if oversized || !t.mirror.enqueue() {
            Self::stop(t);
            return;
        }
        let lane = t
            .lane
            .get_or_insert_with(|| Lane::start(t.mirror.clone(), user.to_string(), serve));
        if !lane.send(job.clone()) {
            t.mirror.dequeued();
            Self::stop(t);
        }
    }

    /// Drops this job and stops the lane: the lane's session ends with its connection, so
    /// nothing stays open there.
    fn stop(t: &mut Target) {
        t.mirror.dropped.fetch_add(1, Relaxed);
        t.stopped = true;
        t.lane = None;
    }
}
