//! A client session's recorder: bytes each way, requests (a Query, or extended-protocol
//! messages up to Sync) timed from their first message to the ReadyForQuery that ends them,
//! transactions timed from their first request to ReadyForQuery `I`, and checkout waits. It
//! also keeps the client's state in the clients table current.
//!
//! Clock reads are the hot path's largest user-space cost after the syscalls, so the meter
//! reads the clock once per read from the client (`arrived`: the messages of that read share
//! the instant, and a request starts at it) and once per ReadyForQuery; a checkout that finds
//! a server at once is not timed (`waited_none`).
use super::clients::{ClientInfo, ClientState};
use super::counters::{self, PoolStats};
use crate::net::tag::frontend;
use crate::net::TxStatus;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct Meter {
    stats: Arc<PoolStats>,
    client: Arc<ClientInfo>,
    request_start: Option<Instant>,
    xact_start: Option<Instant>,
    /// Queries (Query, Execute, FunctionCall messages) in the request in flight.
    queries: u64,
    /// When the client last sent a message.
    last_message: Instant,
    /// Bytes arrived from the client since `last_message` was read: the next message reads
    /// the clock.
    stale: bool,
    /// When the last ReadyForQuery was metered, if it read the clock.
    ready_at: Option<Instant>,
    /// A clock read taken just before the coming ReadyForQuery (`ready_now`), which `ready`
    /// then uses instead of reading the clock again.
    ready_clock: Option<Instant>,
}

impl Meter {
    pub fn new(client: Arc<ClientInfo>, user: &str, database: &str) -> Meter {
        client.set_state(ClientState::Idle);
        Meter {
            stats: counters::pool(user, database),
            client,
            request_start: None,
            xact_start: None,
            queries: 0,
            last_message: Instant::now(),
            stale: false,
            ready_at: None,
            ready_clock: None,
        }
    }

    pub fn client(&self) -> &Arc<ClientInfo> {
        &self.client
    }

    /// More bytes were read from the client (the clock is read at its first message).
    #[inline]
    pub fn arrived(&mut self) {
        self.stale = true;
    }

    /// Bytes of a message from the client.
    #[inline]
    pub fn received(&mut self, n: usize) {
        self.stats.received.fetch_add(n as u64, Relaxed);
        if self.stale {
            self.stale = false;
            self.last_message = Instant::now();
        }
    }

    /// When the request in flight started.
    pub fn request_started(&self) -> Option<Instant> {
        self.request_start
    }

    /// When the client last sent a message.
    pub fn last_message(&self) -> Instant {
        self.last_message
    }

    /// Bytes written to the client.
    #[inline]
    pub fn sent(&self, n: usize) {
        self.stats.sent.fetch_add(n as u64, Relaxed);
    }

    /// A message from the client that is part of a request.
    #[inline]
    pub fn request(&mut self, tag: u8) {
        if self.request_start.is_none() {
            self.ready_clock = None;
            let now = self.last_message;
            self.request_start = Some(now);
            self.xact_start.get_or_insert(now);
            self.client.set_state(ClientState::Active);
            self.client.touch(now);
        }
        if matches!(
            tag,
            frontend::QUERY | frontend::EXECUTE | frontend::FUNCTION_CALL
        ) {
            self.queries += 1;
        }
    }

    /// A ReadyForQuery went to the client: the request is over (and with status `I` the
    /// transaction). Returns how long the request took, when it ran queries.
    #[inline]
    pub fn ready(&mut self, status: TxStatus) -> Option<Duration> {
        let request = self.request_start.take();
        let xact = self.xact_start.take_if(|_| status == TxStatus::Idle);
        let clock = self.ready_clock.take();
        if status == TxStatus::Idle {
            self.client.set_state(ClientState::Idle);
        }
        self.ready_at = None;
        if request.is_none() && xact.is_none() {
            return None;
        }
        let now = clock.unwrap_or_else(Instant::now);
        self.ready_at = Some(now);
        let mut request_took = None;
        if let Some(start) = request {
            let queries = std::mem::take(&mut self.queries);
            if queries > 0 {
                let took = now.saturating_duration_since(start);
                self.stats.query_count.fetch_add(queries, Relaxed);
                self.stats
                    .query_time_us
                    .fetch_add(took.as_micros() as u64, Relaxed);
                self.stats.query_time.observe(took);
                request_took = Some(took);
            }
        }
        if let Some(start) = xact {
            // A transaction of one request took what the request took (one subtraction of
            // Instants less: 37 instructions, callgrind).
            let took = match (request, request_took) {
                (Some(r), Some(took)) if r == start => took,
                _ => now.saturating_duration_since(start),
            };
            self.stats.xact_count.fetch_add(1, Relaxed);
            self.stats
                .xact_time_us
                .fetch_add(took.as_micros() as u64, Relaxed);
            self.stats.xact_time.observe(took);
        }
        request_took
    }

    /// The instant the last ReadyForQuery was metered at (None if it read no clock): the
    /// server going back to its pool right after takes it as its `last_used`.
    pub fn ready_at(&self) -> Option<Instant> {
        self.ready_at
    }

    /// Reads the clock for the ReadyForQuery about to be metered (`ready` reuses it): servers
    /// going back to their pools before it take it as their `last_used`, so a sharded request
    /// reads the clock once at its end, as a one-server session does.
    pub fn ready_now(&mut self) -> Instant {
        *self.ready_clock.get_or_insert_with(Instant::now)
    }

    /// The client starts waiting for a server connection at `at`.
    pub fn waiting(&self, at: Instant) {
        self.client.start_wait(at);
    }

    /// A checkout found a server at once: a wait of zero, not timed.
    pub fn waited_none(&self) {
        self.stats.wait_time.observe(Duration::ZERO);
    }

    /// It got one (or gave up) after `d`.
    pub fn waited(&self, d: Duration) {
        self.stats
            .wait_time_us
            .fetch_add(d.as_micros() as u64, Relaxed);
        self.stats.wait_time.observe(d);
        self.client.set_state(ClientState::Active);
    }
}
