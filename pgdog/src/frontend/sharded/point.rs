//! Point queries (`router::point`): a simple-protocol SELECT of one sharded table by its key,
//! whose shape the router routes by the key literal alone, runs without a parse of its own or
//! a walk of the router. Everything `statement` does for such a SELECT is done here too (the
//! pins its text asks for, the read/write split); what the text itself may change (comments
//! such as `pgdog_shard`, `unique_id`, manual overrides, a dry run, an open transaction) sends
//! it down the full path instead.
use super::exec::{combine_tags, Collected, Tags};
use super::{in_client_encoding, ClientError, ShardedSession};
use crate::net::message;
use crate::net::tag::backend;
use crate::net::TxStatus;
use crate::router::{generate, read_write, PointHit, Router};

impl ShardedSession {
    /// The router, when a text of a point shape may run as one here (see the module doc).
    pub(super) fn point_router(&self, sql: &str) -> Option<&Router> {
        let plain = self.tx.is_none()
            && self.router.dry_run().is_none()
            && self.overrides.shard.is_none()
            && self.overrides.sharding_key.is_none()
            && self.captured.is_none()
            && memchr::memmem::find(sql.as_bytes(), b"/*").is_none()
            && !generate::mentions_unique_id(sql);
        plain.then_some(&*self.router)
    }

    /// Runs `sql`, a text of a point shape, on the shard of its key.
    pub(super) async fn point(&mut self, hit: &PointHit, sql: &str) -> Result<(), ClientError> {
        let shard = hit.shard(&self.router, sql)?;
        let st = &hit.statements()[0];
        self.note_pin(sql, st);
        // The shape calls no function: nothing unknown to pin the session for. Its statement's
        // offsets are the shape's: the text read for the read/write split is all of `sql`.
        self.read_intent = self.may_read(sql, |strategy| {
            read_write::statement_is_read(st, sql, strategy)
        });
        let result = self.run_point(shard, sql).await;
        self.read_intent = false;
        result
    }

    /// What `run_route` does for one shard and a simple query, with less per message: the
    /// Query written from a buffer the session keeps, and the rows, row description, notices
    /// and CommandComplete of the answer passed on straight from the server's read buffer (in
    /// `collect` each becomes a message, and the tag a string). Anything else (an error,
    /// ParameterStatus, COPY) goes through `collect_message` as in `collect`.
    async fn run_point(&mut self, shard: usize, sql: &str) -> Result<(), ClientError> {
        let text = in_client_encoding(self.client.codec, sql)?;
        self.server(shard).await?;
        let len = i32::try_from(text.len() + 5)
            .map_err(|_| ClientError::new("54000", "query text too long"))?;
        self.query.clear();
        self.query.push(b'Q');
        self.query.extend_from_slice(&len.to_be_bytes());
        self.query.extend_from_slice(&text);
        self.query.push(0);
        let written = match self.servers[shard].as_mut() {
            Some(server) => server.write_raw(&self.query).await,
            None => return Err(ClientError::new("08006", "server connection lost")),
        };
        if self.query.capacity() > 64 * 1024 {
            // A long text's buffer is not kept for the session's life.
            self.query = Vec::new();
        }
        if let Err(e) = written {
            return Err(self.lose(shard, &e));
        }
        let shards = [shard];
        let mut parse_ok = [false];
        let mut c = Collected {
            shards: &shards,
            merger: None,
            parse_ok: &mut parse_ok,
            describe: true,
            keep_rows: true,
            error: None,
            tag_parts: Vec::new(),
            described: false,
            empty_query: false,
        };
        let mut deadline = self.query_deadline();
        while !self.pass_through(shard, &mut c) {
            let next = match self.servers[shard].as_mut() {
                Some(server) => server.try_read(),
                None => break,
            };
            match next {
                Ok(Some(m)) => {
                    if self.collect_message(&mut c, 0, m).await {
                        break;
                    }
                    continue;
                }
                Ok(None) => {}
                Err(e) => {
                    c.error.get_or_insert(self.lose(shard, &e));
                    break;
                }
            }
            if self.client.out.len() > 64 * 1024 && self.flush().await.is_err() {
                // The client is gone; finish reading the server anyway.
            }
            let Some(server) = self.servers[shard].as_mut() else {
                break;
            };
            let filled = match deadline {
                Some(at) => match tokio::time::timeout_at(at, server.fill()).await {
                    Ok(r) => r,
                    Err(_) => {
                        // query_timeout: cancel it; the shard answers 57014.
                        deadline = None;
                        self.cancel_running(&shards, &[true]);
                        continue;
                    }
                },
                None => server.fill().await,
            };
            if let Err(e) = filled {
                c.error.get_or_insert(self.lose(shard, &e));
                break;
            }
        }
        if let Some(e) = c.error {
            return Err(e);
        }
        if self.servers[shard].is_none() {
            return Err(ClientError::new("08006", "server connection lost"));
        }
        if c.empty_query {
            self.send(&message::empty(b'I'));
        } else if let Some(tag) = combine_tags(&c.tag_parts, Tags::First) {
            self.send(&message::command_complete(&tag));
        }
        Ok(())
    }

    /// Passes the complete messages at the front of `shard`'s read buffer to the client while
    /// they need no closer look; consumes the ReadyForQuery after them (the session sends its
    /// own) and then says true.
    fn pass_through(&mut self, shard: usize, c: &mut Collected<'_>) -> bool {
        let Some(server) = self.servers[shard].as_mut() else {
            return false;
        };
        let mut at = 0;
        let mut ready = None;
        while let Some((tag, len)) = server.complete_at(at) {
            match tag {
                backend::DATA_ROW
                | backend::COMMAND_COMPLETE
                | backend::NOTICE_RESPONSE
                | backend::NOTIFICATION_RESPONSE => {}
                backend::ROW_DESCRIPTION if !c.described => c.described = true,
                backend::READY_FOR_QUERY => {
                    ready = Some(len);
                    break;
                }
                _ => break,
            }
            at += len;
        }
        if at > 0 {
            self.client.queue(&server.unread()[..at]);
        }
        let Some(len) = ready else {
            server.consume(at);
            return false;
        };
        // A ReadyForQuery without a status byte counts as idle, as `TxStatus::of` reads it.
        let status = if len > 5 {
            server.unread()[at + len - 1]
        } else {
            b'I'
        };
        server.status = TxStatus::from_byte(status);
        server.consume(at + len);
        true
    }
}
