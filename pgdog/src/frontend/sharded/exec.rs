//! Running one routed statement: what each shard is sent, and how their answers become one
//! answer for the client (passed through from one shard, or merged: RowDescriptions checked,
//! rows streamed or merged by the cross-shard plan, CommandComplete counts added up).
use super::{in_client_encoding, ClientError, ShardedSession, Statement};
use crate::backend::prepared;
use crate::backend::ServerError;
use crate::merge::{CrossShardPlan, MemoryLimits, MergePlan, Merger};
use crate::net::bind::Bind;
use crate::net::message::{self, read_error};
use crate::net::tag::{backend, frontend, target};
use crate::net::Message;
use crate::net::TxStatus;
use crate::router::Route;
use bytes::BytesMut;
use std::sync::Arc;

/// The client's request for one statement.
pub enum Request<'a> {
    Simple(&'a str),
    Extended {
        statement: &'a Statement,
        bind: &'a Bind<'a>,
        describe: bool,
    },
}

/// What one shard is sent for a statement.
struct Work {
    shard: usize,
    sql: String,
    /// For split INSERTs with parameters: which client parameters this shard's statement takes.
    params: Option<Vec<u32>>,
}

/// How CommandComplete tags of several shards combine.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Tags {
    /// Counts added up.
    Sum,
    /// Every shard did the same thing: the first tag.
    First,
}

/// What [`ShardedSession::collect`] gathers from the shards' answers.
pub(super) struct Collected<'a> {
    pub(super) shards: &'a [usize],
    pub(super) merger: Option<Merger>,
    /// ParseComplete seen, per shard.
    pub(super) parse_ok: &'a mut [bool],
    /// Relay the row description (Describe, or a simple query).
    pub(super) describe: bool,
    /// Relay the rows of a single shard without a merge.
    pub(super) keep_rows: bool,
    pub(super) error: Option<ClientError>,
    pub(super) tag_parts: Vec<String>,
    pub(super) described: bool,
    pub(super) empty_query: bool,
}

impl ShardedSession {
    /// Sends the statement where `route` says and relays the combined answer.
    /// Whether `probe` (a one-value SELECT) answers true on any shard.
    async fn probe_nulls(&mut self, probe: &str) -> Result<bool, ClientError> {
        for shard in 0..self.shards.len() {
            let row = self.server(shard).await?.query_row(probe).await?;
            if row.first().cloned().flatten().as_deref() == Some("t") {
                return Ok(true);
            }
        }
        Ok(false)
    }

    pub(super) async fn run_route(
        &mut self,
        route: &Route,
        req: Request<'_>,
    ) -> Result<(), ClientError> {
        let original = match &req {
            Request::Simple(sql) => sql.to_string(),
            Request::Extended { statement, .. } => statement.sql.to_string(),
        };
        // `NOT IN (SELECT key ...)`: a NULL on any shard changes every shard's answer.
        let with_null = match route {
            Route::Multi { plan: Some(p), .. } => match &p.null_guard {
                Some(g) => self
                    .probe_nulls(&g.probe)
                    .await?
                    .then(|| g.with_null.clone()),
                None => None,
            },
            _ => None,
        };
        let (work, plan, tags): (Vec<Work>, Option<Arc<CrossShardPlan>>, Tags) = match route {
            Route::Shard(s) => (
                vec![Work {
                    shard: *s,
                    sql: original,
                    params: None,
                }],
                None,
                Tags::First,
            ),
            Route::Multi {
                shards,
                plan,
                sum_tags,
                ..
            } => {
                let sql = with_null
                    .or_else(|| plan.as_ref().and_then(|p| p.shard_sql.clone()))
                    .unwrap_or(original);
                (
                    shards
                        .iter()
                        .map(|s| Work {
                            shard: *s,
                            sql: sql.clone(),
                            params: None,
                        })
                        .collect(),
                    plan.clone(),
                    if *sum_tags { Tags::Sum } else { Tags::First },
                )
            }
            Route::Split(parts) => (
                parts
                    .iter()
                    .map(|p| Work {
                        shard: p.shard,
                        sql: p.sql.clone(),
                        params: Some(p.params.clone()),
                    })
                    .collect(),
                None,
                Tags::Sum,
            ),
        };
        // A statement on several shards outside a transaction runs in one, so that it
        // succeeds or fails as a whole (two-phase commit when configured).
        let wrap = work.len() > 1 && writes(route) && self.begin_implicit();
        let result = if writes(route) && work.len() > 1 {
            // One shard after the other, in shard order: concurrent writers then take row locks
            // in the same order everywhere, as in one database, instead of deadlocking across
            // shards where no server can see the cycle.
            let mut parts = Vec::new();
            let mut outcome = Ok(());
            for (i, w) in work.iter().enumerate() {
                match self
                    .run_work(
                        std::slice::from_ref(w),
                        None,
                        &req,
                        i == 0,
                        // Every shard of an omnisharded table returns the same RETURNING rows.
                        i == 0 || tags == Tags::Sum,
                    )
                    .await
                {
                    Ok(p) => parts.extend(p),
                    Err(e) => {
                        outcome = Err(e);
                        break;
                    }
                }
            }
            outcome.map(|()| {
                if let Some(tag) = combine_tags(&parts, tags) {
                    self.send(&message::command_complete(&tag));
                }
            })
        } else {
            self.run_work(&work, plan.as_deref(), &req, true, true)
                .await
                .map(|parts| {
                    if let Some(tag) = combine_tags(&parts, tags) {
                        self.send(&message::command_complete(&tag));
                    }
                })
        };
        self.end_implicit(wrap, result).await
    }

    /// Sends the work to its shards at once and collects their answers; returns the
    /// CommandComplete tags still to combine (none when the merger already sent its own).
    /// `first`: RowDescription may be sent (false for later rounds of a sequential write).
    async fn run_work(
        &mut self,
        work: &[Work],
        plan: Option<&CrossShardPlan>,
        req: &Request<'_>,
        first: bool,
        keep_rows: bool,
    ) -> Result<Vec<String>, ClientError> {
        // Write to every shard first, so they all work at once.
        let mut parsed_ids: Vec<Vec<u64>> = Vec::with_capacity(work.len());
        let codec = self.client.codec;
        for w in work {
            let mut buf = BytesMut::with_capacity(256);
            let mut ids = Vec::new();
            {
                let text = in_client_encoding(codec, &w.sql)?;
                let server = self.server(w.shard).await?;
                match req {
                    Request::Simple(_) => {
                        buf.extend_from_slice(message::query_bytes(&text).bytes())
                    }
                    Request::Extended {
                        statement,
                        bind,
                        describe,
                    } => {
                        let sub;
                        let (bind, types): (&Bind<'_>, Vec<i32>) = match &w.params {
                            Some(params) => {
                                sub = bind.subset(params);
                                let types = params
                                    .iter()
                                    .map(|n| {
                                        statement
                                            .param_types
                                            .get((*n as usize).saturating_sub(1))
                                            .copied()
                                            .unwrap_or(0)
                                    })
                                    .collect();
                                (&sub, types)
                            }
                            None => (*bind, statement.param_types.clone()),
                        };
                        let p = prepared::intern(&w.sql, &types, 0);
                        if !server.prepared.contains(&p.id) {
                            buf.extend_from_slice(
                                message::parse_bytes(p.server_name(), &text, &types).bytes(),
                            );
                            server.prepared.insert(p.id);
                            ids.push(p.id);
                        }
                        let mut b = bind.clone();
                        b.portal = "".into();
                        let hidden = plan.map(|p| p.merge.hidden_columns()).unwrap_or(0);
                        let mut formats = b.result_formats.clone();
                        if hidden > 0 && formats.len() > 1 {
                            formats.extend(std::iter::repeat_n(0, hidden));
                            b.result_formats = formats;
                        }
                        buf.extend_from_slice(b.to_message(p.server_name()).bytes());
                        // The merger needs the shards' RowDescription even when the client
                        // did not ask for one (it is then not forwarded).
                        if *describe || plan.is_some() {
                            buf.extend_from_slice(
                                message::target(frontend::DESCRIBE, target::PORTAL, "").bytes(),
                            );
                        }
                        buf.extend_from_slice(execute_all().bytes());
                        buf.extend_from_slice(message::sync().bytes());
                    }
                }
                if let Err(e) = server.write_raw(&buf).await {
                    return Err(self.lose(w.shard, &e));
                }
            }
            parsed_ids.push(ids);
        }
        let describe = first
            && match req {
                Request::Simple(_) => true,
                Request::Extended { describe, .. } => *describe,
            };
        let shards: Vec<usize> = work.iter().map(|w| w.shard).collect();
        let merge_plan: Option<MergePlan> = match (plan, req) {
            (Some(p), Request::Extended { bind, .. }) if p.merge.needs_params() => Some(
                p.merge
                    .bind(&bind.values, &bind.param_formats)
                    .map_err(|e| ClientError::new(e.code(), e.to_string()))?,
            ),
            (Some(p), _) => Some(p.merge.clone()),
            (None, _) => None,
        };
        let mut parse_ok = vec![false; shards.len()];
        let outcome = self
            .collect(
                &shards,
                merge_plan.as_ref(),
                describe,
                keep_rows,
                &mut parse_ok,
            )
            .await;
        if outcome.is_err() {
            // A Parse that failed left nothing on its server: prepare it again next time.
            for ((w, ids), ok) in work.iter().zip(&parsed_ids).zip(&parse_ok) {
                if *ok {
                    continue;
                }
                if let Some(server) = self.servers[w.shard].as_mut() {
                    for id in ids {
                        server.prepared.remove(id);
                    }
                }
            }
        }
        outcome
    }

    /// When the request in flight reaches `query_timeout` (none when it is off).
    pub(super) fn query_deadline(&self) -> Option<tokio::time::Instant> {
        if !crate::config::client_clocks() {
            return None;
        }
        let ms = self.shards.first().map(|s| s.clocks().query).unwrap_or(0);
        let start = self.client.meter.request_started()?;
        (ms > 0)
            .then(|| tokio::time::Instant::from_std(start + std::time::Duration::from_millis(ms)))
    }

    /// Sends a CancelRequest to the servers of `shards` still answering.
    pub(super) fn cancel_running(&self, shards: &[usize], pending: &[bool]) {
        tracing::info!(
            "client {}@{}: query_timeout, cancelling the query on its shards",
            self.client.user,
            self.client.database
        );
        for (shard, _) in shards.iter().zip(pending).filter(|(_, p)| **p) {
            if let Some(server) = self.servers[*shard].as_ref() {
                let key = server.cancel_key.clone();
                tokio::spawn(async move { crate::frontend::cancel::cancel_server(&key).await });
            }
        }
    }

    /// One message of shard `idx` while collecting; whether the shard reached ReadyForQuery.
    pub(super) async fn collect_message(
        &mut self,
        c: &mut Collected<'_>,
        idx: usize,
        m: Message,
    ) -> bool {
        let shard = c.shards[idx];
        let merge_error = |e: crate::merge::MergeError| ClientError::new(e.code(), e.to_string());
        match m.tag() {
            backend::PARSE_COMPLETE => c.parse_ok[idx] = true,
            backend::BIND_COMPLETE | backend::CLOSE_COMPLETE | backend::PORTAL_SUSPENDED => {}
            backend::ROW_DESCRIPTION => {
                if let Some(mg) = c.merger.as_mut() {
                    match mg.row_description(idx, &m) {
                        Ok(Some(rd)) if c.describe => self.send(&rd),
                        Ok(_) => {}
                        Err(e) => {
                            c.error.get_or_insert(merge_error(e));
                        }
                    }
                } else if c.describe && !c.described {
                    self.send(&m);
                }
                c.described = true;
            }
            backend::NO_DATA => {
                if c.describe && !c.described {
                    self.send(&m);
                }
                c.described = true;
            }
            backend::DATA_ROW => match c.merger.as_mut() {
                Some(mg) => {
                    if let Err(e) = mg.row(idx, m) {
                        c.error.get_or_insert(merge_error(e));
                    }
                }
                None if c.keep_rows => self.send(&m),
                None => {}
            },
            backend::COMMAND_COMPLETE => {
                if let Some(mg) = c.merger.as_mut() {
                    mg.shard_done(idx);
                }
                if let Ok(tag) = m.reader().cstr() {
                    c.tag_parts.push(tag.to_string());
                }
            }
            backend::EMPTY_QUERY_RESPONSE => c.empty_query = true,
            backend::ERROR_RESPONSE => {
                let e = match read_error(&m) {
                    Ok(f) => ClientError {
                        code: f.code,
                        message: f.message,
                        raw: Some(if c.shards.len() == 1 {
                            m.clone()
                        } else {
                            with_shard(&m, shard)
                        }),
                    },
                    Err(_) => ClientError::new("XX000", "malformed error from server"),
                };
                if let Some(mg) = c.merger.as_mut() {
                    mg.shard_done(idx);
                }
                c.error.get_or_insert(e);
            }
            backend::NOTICE_RESPONSE | backend::NOTIFICATION_RESPONSE => self.send(&m),
            backend::PARAMETER_STATUS => {
                if let Some(s) = self.servers[shard].as_mut() {
                    s.record_parameter(&m);
                }
                self.client.parameter_reported(&m);
            }
            backend::READY_FOR_QUERY => {
                if let Some(s) = self.servers[shard].as_mut() {
                    s.status = TxStatus::of(&m);
                }
                return true;
            }
            backend::COPY_IN_RESPONSE
            | backend::COPY_OUT_RESPONSE
            | backend::COPY_BOTH_RESPONSE => {
                // COPY started by a statement we did not see as COPY.
                c.error.get_or_insert(ClientError::new(
                    "0A000",
                    "COPY inside this statement is not supported on sharded databases",
                ));
                if let Some(s) = self.servers[shard].as_mut() {
                    let fail = message::build(b'f', |b| {
                        message::put_cstr(b, "not supported through pgdog")
                    });
                    let _ = s.write(&fail).await;
                }
            }
            _ => self.send(&m),
        }
        false
    }

    /// Reads every shard's answer up to ReadyForQuery and relays the combined result.
    async fn collect(
        &mut self,
        shards: &[usize],
        plan: Option<&MergePlan>,
        describe: bool,
        keep_rows: bool,
        parse_ok: &mut [bool],
    ) -> Result<Vec<String>, ClientError> {
        let mut merger = plan.map(|p| Merger::with_limits(p, shards.len(), MemoryLimits::active()));
        if let Some(mg) = merger.as_mut() {
            // Dates and timestamps are compared as the servers print them.
            let style = shards
                .first()
                .and_then(|s| self.servers[*s].as_ref())
                .and_then(|s| s.params.get("DateStyle").cloned());
            if let Some(style) = style {
                mg.set_datestyle(&style);
            }
            if !self.client.codec.orders_text_as_bytes() {
                mg.set_text_unordered();
            }
        }
        let mut c = Collected {
            shards,
            merger,
            parse_ok,
            describe,
            keep_rows,
            error: None,
            tag_parts: Vec::new(),
            described: false,
            empty_query: false,
        };
        let mut pending: Vec<bool> = vec![true; shards.len()];
        let mut ready_rows: Vec<Message> = Vec::new();
        let mut deadline = self.query_deadline();
        while pending.iter().any(|p| *p) {
            let readable = readable(c.merger.as_ref(), &pending);
            let waited = match deadline {
                Some(at) => {
                    match tokio::time::timeout_at(at, self.wait_any(shards, &readable)).await {
                        Ok(r) => r,
                        Err(_) => {
                            // query_timeout: cancel what still runs; the shards answer 57014.
                            deadline = None;
                            self.cancel_running(shards, &pending);
                            continue;
                        }
                    }
                }
                None => self.wait_any(shards, &readable).await,
            };
            let idx = match waited {
                Ok(i) => i,
                Err((i, e)) => {
                    pending[i] = false;
                    c.error.get_or_insert(self.lose(shards[i], &e));
                    continue;
                }
            };
            let shard = shards[idx];
            while let Some(s) = self.servers[shard].as_mut() {
                match s.try_read() {
                    Ok(Some(m)) => {
                        if self.collect_message(&mut c, idx, m).await {
                            pending[idx] = false;
                            break;
                        }
                    }
                    Ok(None) => break,
                    Err(e) => {
                        pending[idx] = false;
                        c.error.get_or_insert(self.lose(shard, &e));
                        break;
                    }
                }
            }
            if let Some(mg) = c.merger.as_mut() {
                mg.take_ready(&mut ready_rows);
                self.send_rows(&mut ready_rows);
            }
            if self.client.out.len() > 64 * 1024 && self.flush().await.is_err() {
                // The client is gone; finish reading the servers anyway.
            }
        }
        if let Some(e) = c.error {
            return Err(e);
        }
        if c.empty_query {
            self.send(&message::empty(b'I'));
            return Ok(Vec::new());
        }
        if let Some(mg) = c.merger.as_mut() {
            // In batches: a merge larger than memory is read back from disk as it is sent.
            while mg
                .finish_some(&mut ready_rows, 1024)
                .map_err(|e| ClientError::new(e.code(), e.to_string()))?
            {
                self.send_rows(&mut ready_rows);
                if self.client.out.len() > 64 * 1024 && self.flush().await.is_err() {
                    return Err(ClientError::new("08006", "client connection lost"));
                }
            }
            self.send_rows(&mut ready_rows);
            if c.tag_parts.iter().all(|t| t.starts_with("SELECT")) {
                self.send(&message::command_complete(&format!(
                    "SELECT {}",
                    mg.rows_sent()
                )));
                return Ok(Vec::new());
            }
        }
        Ok(c.tag_parts)
    }

    /// Waits until one of the pending shards has something to read; its index.
    async fn wait_any(
        &mut self,
        shards: &[usize],
        pending: &[bool],
    ) -> Result<usize, (usize, ServerError)> {
        // Something already buffered needs no wait.
        let mut futures = Vec::new();
        for (i, slot) in self.servers.iter_mut().enumerate() {
            let Some(idx) = shards.iter().position(|s| *s == i) else {
                continue;
            };
            if !pending[idx] {
                continue;
            }
            let Some(server) = slot.as_mut() else {
                continue;
            };
            if server.has_buffered() {
                return Ok(idx);
            }
            futures.push(Box::pin(async move { (idx, server.fill().await) }));
        }
        if futures.is_empty() {
            return Err((
                0,
                ServerError::Protocol {
                    addr: String::new(),
                    error: crate::net::ProtocolError::Closed,
                },
            ));
        }
        let ((idx, result), _, _) = futures_util::future::select_all(futures).await;
        match result {
            Ok(()) => Ok(idx),
            Err(e) => Err((idx, e)),
        }
    }
}

/// Rows an ORDER BY merge queues for one shard before pgdog stops reading that shard.
const KWAY_QUEUE: usize = 1024;

/// The pending shards to read from. An ORDER BY merge sends a row once every unfinished shard
/// has one queued: a shard far ahead of the others is not read until they catch up (its server
/// waits on TCP), so a slow shard never makes pgdog queue the fast ones' rows without limit.
fn readable(merger: Option<&Merger>, pending: &[bool]) -> Vec<bool> {
    let Some(mg) = merger else {
        return pending.to_vec();
    };
    let ok: Vec<bool> = pending
        .iter()
        .enumerate()
        .map(|(i, p)| *p && mg.queued(i) < KWAY_QUEUE)
        .collect();
    if ok.iter().any(|r| *r) {
        ok
    } else {
        pending.to_vec()
    }
}

/// Whether a route changes data (so it runs in a transaction across shards).
fn writes(route: &Route) -> bool {
    match route {
        Route::Shard(_) => false,
        Route::Split(_) => true,
        Route::Multi { atomic, .. } => *atomic,
    }
}

fn execute_all() -> Message {
    message::build(b'E', |b| {
        message::put_cstr(b, "");
        bytes::BufMut::put_i32(b, 0);
    })
}

/// An ErrorResponse with "shard N" added to its detail... kept whole: the message already says
/// what failed; the shard goes into the `where` field.
fn with_shard(m: &Message, shard: usize) -> Message {
    let payload = m.payload();
    let body = payload.strip_suffix(&[0]).unwrap_or(payload);
    message::build(b'E', |b| {
        b.extend_from_slice(body);
        b.extend_from_slice(b"W");
        message::put_cstr(b, &format!("pgdog shard {shard}"));
        bytes::BufMut::put_u8(b, 0);
    })
}

/// One CommandComplete tag for several shards.
pub(super) fn combine_tags(parts: &[String], how: Tags) -> Option<String> {
    let first = parts.first()?;
    if how == Tags::First || parts.len() == 1 {
        return Some(first.clone());
    }
    let mut words: Vec<&str> = first.split(' ').collect();
    let Some(last) = words.last() else {
        return Some(first.clone());
    };
    if last.parse::<u64>().is_err() {
        return Some(first.clone());
    }
    let total: u64 = parts.iter().map(|p| message::rows_in_tag(p)).sum();
    let total = total.to_string();
    words.pop();
    words.push(&total);
    Some(words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags() {
        let parts = vec!["INSERT 0 2".to_string(), "INSERT 0 3".to_string()];
        assert_eq!(combine_tags(&parts, Tags::Sum).unwrap(), "INSERT 0 5");
        assert_eq!(combine_tags(&parts, Tags::First).unwrap(), "INSERT 0 2");
        let parts = vec!["CREATE TABLE".to_string(), "CREATE TABLE".to_string()];
        assert_eq!(combine_tags(&parts, Tags::Sum).unwrap(), "CREATE TABLE");
    }
}
