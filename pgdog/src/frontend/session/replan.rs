//! A shared statement whose plan went stale (transaction mode). When DDL that did not go
//! through pgdog changes a table's row type, the server answers a Bind of pgdog's statement
//! with 0A000 `cached plan must not change result type`. Directly, a client that prepares the
//! same text after the DDL gets a fresh plan (one that prepared it before DDL that went through
//! pgdog gets the error, as directly); so the statement is retired (the next Parse of
//! its text is a new statement, planned afresh on each server) and the client's name points to
//! a fresh one. The client's batch is run again when that is safe: the failed Bind (or Describe
//! of the statement, as asyncpg prepares) is the first thing of the batch that runs, the batch
//! is the last thing sent, no transaction is open, and the client gets the new row description
//! (from that Describe, or a Describe of the portal before it executes). Else
//! the client gets the error, as Postgres gives it for a statement prepared before the DDL.
use super::{Expect, Session};
use crate::backend::prepared::{self, Prepared};
use crate::config::PoolerMode;
use crate::net::message::{self, read_error};
use crate::net::tag::{frontend, target};
use crate::net::{Message, TxStatus};
use bytes::{Bytes, BytesMut};

/// Client messages of the current and of the last synced batch (transaction mode), each kept
/// as their bytes back to back: a copy of a few dozen bytes costs less than a reference to
/// each message (about 80 instructions a message, callgrind), and holds no client read buffer.
#[derive(Default)]
pub(super) struct Replan {
    batch: BytesMut,
    /// Too large to keep: not run again.
    overflow: bool,
    last: BytesMut,
    /// Messages to run again once the server has skipped to its Sync.
    pub(super) replay: Option<Vec<Message>>,
    /// The batch being noted is a replay; `last_replayed`: the last one was (not run a third
    /// time).
    replaying: bool,
    last_replayed: bool,
}

/// Batches larger than this are not kept for running again.
const MAX_BATCH: usize = 64 * 1024;

impl Replan {
    /// Notes a client message of the extended protocol.
    pub(super) fn note(&mut self, m: &Message) {
        if !self.overflow {
            self.overflow = self.batch.len() + m.len() > MAX_BATCH;
            if !self.overflow {
                self.batch.extend_from_slice(m.bytes());
            }
        }
        if m.tag() == frontend::SYNC {
            // The two buffers trade places: no allocation per batch.
            std::mem::swap(&mut self.last, &mut self.batch);
            self.batch.clear();
            if self.overflow {
                self.last.clear();
            }
            if self.batch.capacity() > 2 * MAX_BATCH {
                // (A large batch's room is not kept.)
                self.batch = BytesMut::new();
            }
            self.last_replayed = self.replaying;
            self.overflow = false;
        }
    }
}

/// The messages of a batch's bytes (whole messages, as `note` kept them).
fn messages(bytes: &[u8]) -> Vec<Message> {
    let all = Bytes::copy_from_slice(bytes);
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(h) = all.get(at..at + 5) {
        let len = i32::from_be_bytes([h[1], h[2], h[3], h[4]]).max(4) as usize + 1;
        let end = (at + len).min(all.len());
        out.push(Message::from_bytes(all.slice(at..end)));
        at = end;
    }
    out
}

/// Where `batch` can run again from: its first message of type `failed` (a Bind, or a Describe
/// of a statement), when only Parse, Close and Flush come before it; after a Bind, a Describe
/// of the portal must come before any Execute (the client then learns the new row type).
fn rerun_from(batch: &[Message], failed: u8) -> Option<usize> {
    let at = batch.iter().position(|m| m.tag() == failed)?;
    let before_ok = batch[..at]
        .iter()
        .all(|m| matches!(m.tag(), frontend::PARSE | frontend::CLOSE | frontend::FLUSH));
    let rest = &batch[at + 1..];
    let execute = rest.iter().position(|m| m.tag() == frontend::EXECUTE);
    let describe = rest.iter().position(|m| {
        m.tag() == frontend::DESCRIBE
            && message::read_target(m).is_ok_and(|(kind, _)| kind == target::PORTAL)
    });
    let described =
        failed == frontend::DESCRIBE || matches!((describe, execute), (Some(d), Some(e)) if d < e);
    (before_ok && described).then_some(at)
}

/// Postgres' message for a prepared statement whose row type changed under it.
const STALE_PLAN: &str = "cached plan must not change result type";

impl Session {
    /// An ErrorResponse to a Bind of pgdog's statement `p`: when it says the plan is stale,
    /// the statement is replaced (see the module); true when the batch runs again (the error
    /// is not the client's).
    pub(super) fn stale_plan(&mut self, m: &Message) -> bool {
        let (p, failed) = match self.expected.front() {
            Some(Expect::Bind(Some(p))) => (p, frontend::BIND),
            Some(Expect::Describe(Some(p))) => (p, frontend::DESCRIBE),
            _ => return false,
        };
        let stale = read_error(m).is_ok_and(|f| f.code == "0A000" && f.message == STALE_PLAN);
        if !stale {
            return false;
        }
        let p = p.clone();
        if p.prepared_before_ddl() {
            // DDL through pgdog came after the client's Parse: Postgres gives it this error
            // for its old statement too. Others preparing the text get a fresh one.
            prepared::retire(&p);
            return false;
        }
        self.replace_statement(&p);
        let safe = self.client.mode == PoolerMode::Transaction
            && self.status == TxStatus::Idle
            && !self.may_begin
            && !self.replan.last_replayed;
        let readies = self
            .expected
            .iter()
            .filter(|e| matches!(e, Expect::Ready))
            .count();
        // The failed batch: synced and the last thing sent (its Ready ends the queue), or the
        // one the client is still sending (no Sync yet, nothing after it).
        let synced = readies == 1 && matches!(self.expected.back(), Some(Expect::Ready));
        let replay = match (safe, synced, readies) {
            (true, true, _) => {
                let last = messages(&self.replan.last);
                rerun_from(&last, failed).map(|at| last[at..].to_vec())
            }
            (true, false, 0) if !self.replan.overflow => {
                let mut batch = messages(&self.replan.batch);
                rerun_from(&batch, failed).map(|at| {
                    // What runs again leaves the batch being noted.
                    let kept: usize = batch[..at].iter().map(Message::len).sum();
                    self.replan.batch.truncate(kept);
                    batch.split_off(at)
                })
            }
            _ => None,
        };
        let Some(replay) = replay else {
            return false;
        };
        tracing::info!(
            "client {}@{}: statement {} planned again (the table's row type changed)",
            self.client.user,
            self.client.database,
            p.server_name()
        );
        // The server skips to a Sync (the client's, or one pgdog sends now), whose
        // ReadyForQuery the client does not see; then the batch runs again from there.
        self.expected.clear();
        self.expected.push_back(Expect::HiddenReady);
        if !synced {
            self.server_out
                .extend_from_slice(message::empty(frontend::SYNC).bytes());
        }
        self.replan.replay = Some(replay);
        true
    }

    /// `p` has a stale plan on this server: retired everywhere (other clients that hold it
    /// meet the same error here, as their own statement would directly), and every client
    /// name for it in this session points to a fresh statement of the same text.
    fn replace_statement(&mut self, p: &Prepared) {
        prepared::retire(p);
        let fresh = prepared::intern_wire(
            &p.statement.query,
            p.statement.wire_text(),
            &p.statement.param_types,
            p.statement.settings,
        );
        for held in self.statements.values_mut() {
            if held.id == p.id {
                *held = fresh.clone();
            }
        }
    }

    /// Runs the batch again (see `stale_plan`), after the server answered what came before.
    pub(super) async fn replay_batch(&mut self) -> Result<(), super::SessionError> {
        let Some(batch) = self.replan.replay.take() else {
            return Ok(());
        };
        self.replan.replaying = true;
        let mut result = Ok(());
        for m in batch {
            // Boxed: a replay is rare; its state stays out of the session's future.
            result = Box::pin(self.extended(m)).await;
            if result.is_err() {
                break;
            }
        }
        self.replan.replaying = false;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::message::{build, put_cstr};

    fn parse(name: &str) -> Message {
        build(frontend::PARSE, |b| {
            put_cstr(b, name);
            put_cstr(b, "SELECT 1");
            b.extend_from_slice(&0i16.to_be_bytes());
        })
    }

    #[test]
    fn a_synced_batch_reads_back_message_by_message() {
        let mut r = Replan::default();
        let batch = [parse("a"), message::empty(frontend::FLUSH), parse("")];
        for m in &batch {
            r.note(m);
        }
        r.note(&message::sync());
        let mut expected = batch.to_vec();
        expected.push(message::sync());
        assert_eq!(messages(&r.last), expected);
        assert!(r.batch.is_empty());
        // The next batch starts empty; the last one stays until the next Sync.
        r.note(&parse("b"));
        assert_eq!(messages(&r.batch), vec![parse("b")]);
        assert_eq!(messages(&r.last).len(), 4);
    }

    #[test]
    fn a_batch_over_the_limit_is_not_kept() {
        let mut r = Replan::default();
        let big = build(frontend::PARSE, |b| {
            put_cstr(b, "");
            put_cstr(b, &"x".repeat(MAX_BATCH));
            b.extend_from_slice(&0i16.to_be_bytes());
        });
        r.note(&parse("a"));
        r.note(&big);
        assert!(r.overflow);
        r.note(&message::sync());
        assert!(r.last.is_empty() && !r.overflow);
    }
}
