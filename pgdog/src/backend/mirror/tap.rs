//! The session side of mirroring: the client's messages of the transaction in flight, handed
//! to its lane of each mirror when the transaction ends. Nothing here waits.
use super::lane::{Job, Lane, ServeFn};
use super::Mirror;
use crate::net::message::{read_parse, read_query};
use crate::net::tag::frontend;
use crate::net::{Message, TxStatus};
use bytes::BytesMut;
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
    buf: BytesMut,
    /// Query and Sync messages: each gets a ReadyForQuery.
    requests: usize,
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
            requests: 0,
            oversized: false,
            ddl: false,
            source_failed: false,
            started: None,
            check_ddl,
        })
    }

    /// A message from the client.
    pub fn message(&mut self, m: &Message) {
        let tag = m.tag();
        if tag == frontend::TERMINATE {
            return;
        }
        self.started.get_or_insert_with(Instant::now);
        if matches!(tag, frontend::QUERY | frontend::SYNC) {
            self.requests += 1;
        }
        if self.check_ddl && !self.ddl {
            let text = match tag {
                frontend::QUERY => read_query(m).ok().map(|t| t.to_string()),
                frontend::PARSE => read_parse(m).ok().map(|p| p.query.to_string()),
                _ => None,
            };
            self.ddl = text.is_some_and(|t| super::has_ddl(&t));
        }
        if self.oversized || self.buf.len() + m.bytes().len() > MAX_TRANSACTION_BYTES {
            self.oversized = true;
            self.buf = BytesMut::new();
            return;
        }
        self.buf.extend_from_slice(m.bytes());
    }

    /// The source sent the client an ErrorResponse.
    pub fn error_sent(&mut self) {
        self.source_failed = true;
    }

    /// A ReadyForQuery went to the client: with `I` the transaction is over and handed on.
    pub fn ready(&mut self, status: TxStatus) {
        if status != TxStatus::Idle || self.requests == 0 {
            return;
        }
        let source_us = self
            .started
            .take()
            .map_or(0, |t| t.elapsed().as_micros() as u64);
        let bytes = std::mem::take(&mut self.buf).freeze();
        let job = Job {
            bytes,
            requests: std::mem::take(&mut self.requests),
            source_failed: std::mem::take(&mut self.source_failed),
            source_us,
        };
        let oversized = std::mem::take(&mut self.oversized);
        let ddl = std::mem::take(&mut self.ddl);
        for t in &mut self.targets {
            if !t.mirror.wants(ddl) {
                continue;
            }
            if t.stopped {
                t.mirror.dropped.fetch_add(1, Relaxed);
                continue;
            }
            if oversized || !t.mirror.enqueue() {
                t.mirror.dropped.fetch_add(1, Relaxed);
                t.stopped = true;
                continue;
            }
            let (user, serve) = (&self.user, self.serve);
            let lane = t
                .lane
                .get_or_insert_with(|| Lane::start(t.mirror.clone(), user.clone(), serve));
            if !lane.send(job.clone()) {
                t.mirror.dequeued();
                t.mirror.dropped.fetch_add(1, Relaxed);
                t.stopped = true;
            }
        }
    }
}
