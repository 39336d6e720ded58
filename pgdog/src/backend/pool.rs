//! A pool of server connections for one (user, database): checkout with a timeout, idle and
//! lifetime limits, a minimum kept warm, broken connections dropped and replaced. Counts (idle,
//! checked out, clients waiting) are shown by the admin database's SHOW POOLS.
use super::caps::{self, Cap};
use super::host::HostState;
use super::server::{Server, ServerError, ServerTarget};
use crate::config::PoolerMode;
use crate::net::TxStatus;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore};

#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    #[error("timed out after {0} ms waiting for a server connection (pool of {1} for {2}); raise pool_size or checkout_timeout")]
    Timeout(u64, usize, String),
    #[error(transparent)]
    Server(#[from] ServerError),
    #[error("pool for {0} was shut down")]
    Closed(String),
    #[error("timed out after {0} ms waiting for a server connection: {1} reached (connections of other pools hold it until they close)")]
    Cap(u64, String),
}

impl PoolError {
    pub fn code(&self) -> String {
        match self {
            PoolError::Timeout(..) => "53300".into(),
            PoolError::Server(e) => e.code(),
            PoolError::Closed(_) => "57P01".into(),
            PoolError::Cap(..) => "53300".into(),
        }
    }
}

/// Pool sizes and timeouts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolSettings {
    pub size: usize,
    pub min: usize,
    /// Connections beyond `size` for clients that waited `reserve_timeout` (PgBouncer's
    /// `reserve_pool_size`).
    pub reserve: usize,
    pub reserve_timeout: Duration,
    pub mode: PoolerMode,
    pub checkout_timeout: Duration,
    /// Its clients' timeouts (query, idle in transaction, idle).
    pub clocks: crate::config::ClientClocks,
    pub idle_timeout: Duration,
    pub server_lifetime: Duration,
    pub connect_timeout: Duration,
    /// Startup parameters of its server connections (`statement_timeout`, read-only).
    pub startup: Vec<(String, String)>,
    /// Statements that would turn the read-only default off are refused.
    pub read_only: bool,
    /// The caps a new server connection of this pool takes a slot of (its database's
    /// `max_db_connections`, its user's `max_user_connections`).
    pub caps: Vec<Arc<Cap>>,
    /// A connection idle this long runs `check_query` before it is handed out
    /// (`server_check_delay`; zero: before every use).
    pub check_delay: Duration,
    /// PgBouncer's `server_check_query`: None turns the check off, "" sends an empty query.
    pub check_query: Option<String>,
}

impl PoolSettings {
    /// Whether `server` runs `check_query` before it is handed out.
    fn check_due(&self, server: &Server) -> bool {
        self.check_query.is_some() && (server.check_due || self.check_delay.is_zero())
    }
}

struct Inner {
    target: ServerTarget,
    /// The server's shared health state (bans on failed connects).
    host: Arc<HostState>,
    settings: PoolSettings,
    /// Idle connections, checked-out ones and the RECONNECT cutoff: one lock per checkout and
    /// one per return.
    state: Mutex<State>,
    permits: Arc<Semaphore>,
    /// The reserve: taken by clients that waited `reserve_timeout` for `permits`.
    reserve: Arc<Semaphore>,
    checked_out: AtomicUsize,
    /// Clients waiting for a connection in `get`.
    waiting: AtomicUsize,
    /// Woken when a connection comes back to a pool under a cap (see `get`).
    returned: tokio::sync::Notify,
    closed: AtomicBool,
    /// A maintenance pass is running (see `start_maintenance`).
    maintaining: Arc<AtomicBool>,
    /// ParameterStatus values of the first connection, sent to clients at login.
    params: Mutex<Option<Vec<(String, String)>>>,
}

/// What a pool's lock guards. Servers are boxed: a checkout or a return moves a pointer, not
/// the connection's few hundred bytes.
#[derive(Default)]
struct State {
    // Boxed on purpose (see above): memcpy of servers was 3% of the checkout path's user time.
    #[allow(clippy::vec_box)]
    idle: Vec<Box<Server>>,
    /// Checked-out connections (SHOW SERVERS), by id: a hash table whose hash is the id (a
    /// BTreeMap shifted its leaf on every insert and remove: 2% of the hot path's user time).
    active: HashMap<u64, ServerRow, BuildHasherDefault<IdHasher>>,
    /// RECONNECT: connections made before this instant are closed when they come back.
    reconnect_before: Option<Instant>,
}

/// The hash of a server id: one multiplication (ids are unique and sequential; the constant
/// spreads them over the high bits the table probes by).
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

impl caps::Evict for Inner {
    fn oldest_idle(&self) -> Option<Instant> {
        self.state.lock().idle.iter().map(|s| s.last_used).min()
    }

    fn evict_idle(&self) -> bool {
        let evicted = {
            let mut state = self.state.lock();
            let oldest = state
                .idle
                .iter()
                .enumerate()
                .min_by_key(|(_, s)| s.last_used)
                .map(|(i, _)| i);
            oldest.map(|i| state.idle.remove(i))
        };
        match evicted {
            Some(server) => {
                close(server);
                true
            }
            None => false,
        }
    }
}

/// A running maintenance pass of one pool (`Pool::start_maintenance`).
pub struct MaintenancePass(Arc<AtomicBool>);

impl Drop for MaintenancePass {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

/// Closes a connection in the background (Terminate, then the socket).
fn close(server: Box<Server>) {
    tokio::spawn((*server).terminate());
}

/// One server connection as SHOW SERVERS lists it.
#[derive(Debug, Clone)]
pub struct ServerRow {
    pub id: u64,
    /// The server process id.
    pub pid: i32,
    pub active: bool,
    pub created: Instant,
    pub last_used: Instant,
    /// Statements prepared on it by pgdog.
    pub prepared: usize,
}

impl ServerRow {
    fn of(s: &Server, active: bool) -> ServerRow {
        ServerRow {
            id: s.id,
            pid: s.pid,
            active,
            created: s.created,
            last_used: s.last_used,
            prepared: s.prepared.len(),
        }
    }
}

/// Cheap to clone handle.
#[derive(Clone)]
pub struct Pool {
    inner: Arc<Inner>,
}

/// A checked-out connection; goes back to its pool when dropped (if it is clean).
pub struct PooledServer {
    server: Option<Box<Server>>,
    pool: Pool,
    _permit: OwnedSemaphorePermit,
    /// When its client was done with it, if the client read the clock then (else it is read
    /// on the way back).
    returned_at: Option<Instant>,
}

impl std::ops::Deref for PooledServer {
    type Target = Server;
    fn deref(&self) -> &Server {
        self.server.as_deref().expect("present until dropped")
    }
}

impl std::ops::DerefMut for PooledServer {
    fn deref_mut(&mut self) -> &mut Server {
        self.server.as_deref_mut().expect("present until dropped")
    }
}

impl Drop for PooledServer {
    fn drop(&mut self) {
        self.pool.inner.checked_out.fetch_sub(1, Ordering::Relaxed);
        if let Some(mut server) = self.server.take() {
            let now = self.returned_at.unwrap_or_else(Instant::now);
            server.last_used = now;
            server.check_due = false;
            let inner = &self.pool.inner;
            let reusable = server.healthy
                && server.status == TxStatus::Idle
                && now.saturating_duration_since(server.created) < inner.settings.server_lifetime
                && !inner.closed.load(Ordering::Relaxed);
            let mut state = inner.state.lock();
            state.active.remove(&server.id);
            if reusable && state.reconnect_before.is_none_or(|t| server.created >= t) {
                state.idle.push(server);
                drop(state);
                // A checkout waiting for a cap's slot takes this one instead (pools without
                // caps skip it: nobody waits there).
                if !inner.settings.caps.is_empty() {
                    inner.returned.notify_one();
                }
                return;
            }
            drop(state);
            tracing::debug!(
                "closing {server:?} (healthy {}, status {})",
                server.healthy,
                server.status
            );
            close(server);
        }
    }
}

/// Counts a client waiting in `Pool::get` (also when the wait is cancelled).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(counter: &'a AtomicUsize) -> Waiting<'a> {
        counter.fetch_add(1, Ordering::Relaxed);
        Waiting(counter)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl PooledServer {
    /// The pool (and through it the server's shared state) this connection came from.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The client was done with it at `at` (its last ReadyForQuery): no clock read on return.
    pub fn returned_at(&mut self, at: Option<Instant>) {
        self.returned_at = at;
    }

    /// Closes the connection instead of returning it (its state is unknown).
    pub fn discard(&mut self) {
        if let Some(s) = self.server.as_mut() {
            s.healthy = false;
        }
    }

    /// Its client is gone: rolls back what it left open and, with `reset` (session mode, a
    /// pinned client), discards its session state, so the next client finds it clean; closes it
    /// instead when that fails.
    pub async fn leave_clean(mut self, reset: bool) {
        let mut ok = true;
        if self.status != TxStatus::Idle {
            ok = self.execute("ROLLBACK").await.is_ok();
        }
        if ok && reset {
            ok = self.execute("DISCARD ALL").await.is_ok();
            self.prepared.clear();
            self.set_settings(Default::default());
        }
        if !ok || self.status != TxStatus::Idle {
            self.discard();
        }
    }
}

impl Pool {
    pub fn new(target: ServerTarget, settings: PoolSettings, host: Arc<HostState>) -> Pool {
        let permits = Arc::new(Semaphore::new(settings.size));
        let reserve = Arc::new(Semaphore::new(settings.reserve));
        let pool = Pool {
            inner: Arc::new(Inner {
                target,
                host,
                settings,
                state: Mutex::new(State::default()),
                permits,
                reserve,
                checked_out: AtomicUsize::new(0),
                waiting: AtomicUsize::new(0),
                returned: tokio::sync::Notify::new(),
                closed: AtomicBool::new(false),
                maintaining: Arc::new(AtomicBool::new(false)),
                params: Mutex::new(None),
            }),
        };
        for cap in &pool.inner.settings.caps {
            let weak: std::sync::Weak<dyn caps::Evict> = Arc::downgrade(&pool.inner) as _;
            cap.join(weak);
        }
        pool
    }

    /// Whether both handles are the same pool.
    pub fn same(&self, other: &Pool) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    pub fn settings(&self) -> &PoolSettings {
        &self.inner.settings
    }

    pub fn target(&self) -> &ServerTarget {
        &self.inner.target
    }

    pub fn host(&self) -> &Arc<HostState> {
        &self.inner.host
    }

    fn name(&self) -> String {
        format!(
            "{}@{}/{}",
            self.inner.target.user,
            self.inner.target.addr(),
            self.inner.target.database
        )
    }

    /// An idle server connection if one is free now: no timer, no clock read, no connect (the
    /// hot path of a checkout). Lifetimes are checked when connections come back and once a
    /// second (`maintain`), so an idle one may outlive `server_lifetime` by up to a second.
    pub fn try_get(&self) -> Option<PooledServer> {
        if self.inner.closed.load(Ordering::Relaxed) {
            return None;
        }
        let permit = self.inner.permits.clone().try_acquire_owned().ok()?;
        loop {
            let mut state = self.inner.state.lock();
            let mut server = state.idle.pop()?;
            if server.is_broken() {
                drop(state);
                close(server);
                continue;
            }
            if self.inner.settings.check_due(&server) {
                // The check takes a round trip: `get` runs it.
                state.idle.push(server);
                return None;
            }
            return Some(self.wrap(server, permit, state));
        }
    }

    /// A server connection, waiting up to `checkout_timeout` for one to be free.
    pub async fn get(&self) -> Result<PooledServer, PoolError> {
        let s = &self.inner.settings;
        if self.inner.closed.load(Ordering::Relaxed) {
            return Err(PoolError::Closed(self.name()));
        }
        let permit = {
            let _waiting = Waiting::new(&self.inner.waiting);
            self.permit().await
        }
        .map_err(|_| {
            PoolError::Timeout(s.checkout_timeout.as_millis() as u64, s.size, self.name())
        })?
        .map_err(|_| PoolError::Closed(self.name()))?;
        loop {
            let candidate = self.inner.state.lock().idle.pop();
            match candidate {
                Some(mut server) => {
                    if server.is_broken() || server.created.elapsed() >= s.server_lifetime {
                        close(server);
                        continue;
                    }
                    if s.check_due(&server) && !self.passes_check(&mut server).await {
                        close(server);
                        continue;
                    }
                    return Ok(self.wrap(server, permit, self.inner.state.lock()));
                }
                None => {
                    // A new connection: a slot of each cap first (within checkout_timeout,
                    // counted from here: no clock read on the checkout path), unless a
                    // connection of this pool comes back meanwhile.
                    let deadline = tokio::time::Instant::now() + s.checkout_timeout;
                    let slots = {
                        // Counted as waiting (SHOW POOLS cl_waiting) while the cap is full.
                        let _waiting = Waiting::new(&self.inner.waiting);
                        tokio::select! {
                            slots = caps::take(&s.caps, deadline) => slots.map_err(|cap| {
                                PoolError::Cap(s.checkout_timeout.as_millis() as u64, cap)
                            })?,
                            _ = self.inner.returned.notified(), if !s.caps.is_empty() => continue,
                        }
                    };
                    let mut server = self.connect().await.inspect_err(|e| {
                        if e.is_unavailable() {
                            self.inner.host.mark_down(&format!("connect failed: {e}"));
                        }
                    })?;
                    server.cap_slots = slots;
                    self.remember_params(&server);
                    let state = self.inner.state.lock();
                    return Ok(self.wrap(Box::new(server), permit, state));
                }
            }
        }
    }

    /// A place in the pool within `checkout_timeout`: one of its `size`, or after waiting
    /// `reserve_timeout`, whichever of those and the reserve comes first (the client keeps its
    /// place in the pool's queue meanwhile).
    async fn permit(
        &self,
    ) -> Result<Result<OwnedSemaphorePermit, AcquireError>, tokio::time::error::Elapsed> {
        let s = &self.inner.settings;
        let pool = self.inner.permits.clone().acquire_owned();
        if s.reserve == 0 || s.reserve_timeout >= s.checkout_timeout {
            return tokio::time::timeout(s.checkout_timeout, pool).await;
        }
        let deadline = tokio::time::Instant::now() + s.checkout_timeout;
        tokio::pin!(pool);
        if let Ok(permit) = tokio::time::timeout(s.reserve_timeout, &mut pool).await {
            return Ok(permit);
        }
        let reserve = self.inner.reserve.clone().acquire_owned();
        tokio::time::timeout_at(deadline, async {
            tokio::select! {
                permit = &mut pool => permit,
                permit = reserve => permit,
            }
        })
        .await
    }

    /// Runs `server_check_query` on an idle connection: false if it failed (the connection is
    /// closed and another taken, as PgBouncer does).
    async fn passes_check(&self, server: &mut Server) -> bool {
        let Some(query) = self.inner.settings.check_query.as_deref() else {
            return true;
        };
        let limit = self.inner.settings.connect_timeout;
        let checked = tokio::time::timeout(limit, server.execute(query)).await;
        match checked {
            Ok(Ok(())) if server.status == TxStatus::Idle => {
                server.check_due = false;
                true
            }
            other => {
                tracing::info!("{}: server_check_query failed: {other:?}", self.name());
                false
            }
        }
    }

    /// Reserve connections in use.
    pub fn reserve_in_use(&self) -> usize {
        self.inner.settings.reserve - self.inner.reserve.available_permits()
    }

    /// Opens a server connection with the pool's startup parameters.
    async fn connect(&self) -> Result<Server, ServerError> {
        let s = &self.inner.settings;
        let startup: Vec<(&str, &str)> = s
            .startup
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        Server::connect_with_params(&self.inner.target, &startup, s.connect_timeout).await
    }

    /// A checked-out connection, entered in the pool's active list (under the pool's lock).
    fn wrap(
        &self,
        server: Box<Server>,
        permit: OwnedSemaphorePermit,
        mut state: parking_lot::MutexGuard<'_, State>,
    ) -> PooledServer {
        self.inner.checked_out.fetch_add(1, Ordering::Relaxed);
        state.active.insert(server.id, ServerRow::of(&server, true));
        drop(state);
        PooledServer {
            server: Some(server),
            pool: self.clone(),
            _permit: permit,
            returned_at: None,
        }
    }

    fn remember_params(&self, server: &Server) {
        let mut params = self.inner.params.lock();
        if params.is_none() {
            let mut v: Vec<(String, String)> = server
                .params
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            v.sort();
            *params = Some(v);
        }
    }

    /// The server's ParameterStatus values (connecting once if no connection was made yet).
    pub async fn params(&self) -> Result<Vec<(String, String)>, PoolError> {
        if let Some(p) = self.inner.params.lock().clone() {
            return Ok(p);
        }
        let server = self.get().await?;
        drop(server);
        Ok(self.inner.params.lock().clone().unwrap_or_default())
    }

    /// Idle and checked-out connection counts.
    pub fn counts(&self) -> (usize, usize) {
        (
            self.inner.state.lock().idle.len(),
            self.inner.checked_out.load(Ordering::Relaxed),
        )
    }

    /// Every connection: checked out, then idle.
    pub fn servers(&self) -> Vec<ServerRow> {
        let state = self.inner.state.lock();
        let mut rows: Vec<ServerRow> = state.active.values().cloned().collect();
        rows.sort_unstable_by_key(|r| r.id);
        rows.extend(state.idle.iter().map(|s| ServerRow::of(s, false)));
        rows
    }

    /// Closes the idle connections now and the checked-out ones when they come back
    /// (RECONNECT): the pool then opens fresh ones.
    pub fn reconnect(&self) {
        let idle = {
            let mut state = self.inner.state.lock();
            state.reconnect_before = Some(Instant::now());
            std::mem::take(&mut state.idle)
        };
        idle.into_iter().for_each(close);
    }

    /// Checked-out connections a RECONNECT marked (they close when they come back): what
    /// `WAIT_CLOSE` waits for.
    pub fn close_needed(&self) -> usize {
        let state = self.inner.state.lock();
        match state.reconnect_before {
            Some(t) => state.active.values().filter(|r| r.created < t).count(),
            None => 0,
        }
    }

    /// Clients waiting for a connection.
    pub fn waiting(&self) -> usize {
        self.inner.waiting.load(Ordering::Relaxed)
    }

    /// Stops handing out connections; idle ones close, checked-out ones close when returned.
    pub fn shutdown(&self) {
        self.inner.closed.store(true, Ordering::Relaxed);
        let idle = std::mem::take(&mut self.inner.state.lock().idle);
        idle.into_iter().for_each(close);
    }

    /// Idle connections holding more than `prepared_statements_limit` statements close the
    /// oldest ones (DEALLOCATE), then go back.
    async fn trim_prepared(&self) {
        let limit = crate::config::active().prepared_statements_limit;
        let over: Vec<Box<Server>> = {
            let mut state = self.inner.state.lock();
            let idle = &mut state.idle;
            let (over, keep) = std::mem::take(idle)
                .into_iter()
                .partition(|s| s.prepared.len() > limit);
            *idle = keep;
            over
        };
        for mut server in over {
            let mut ids: Vec<u64> = server.prepared.iter().copied().collect();
            ids.sort_unstable();
            let oldest = &ids[..ids.len() - limit];
            let sql: Vec<String> = oldest
                .iter()
                .map(|id| format!("DEALLOCATE {}", super::prepared::server_name(*id)))
                .collect();
            if server.execute(&sql.join("; ")).await.is_ok() && server.status == TxStatus::Idle {
                for id in oldest {
                    server.prepared.remove(id);
                }
                self.inner.state.lock().idle.push(server);
            } else {
                close(server);
            }
        }
    }

    /// Marks a maintenance pass as running until the guard is dropped; None while one is.
    pub fn start_maintenance(&self) -> Option<MaintenancePass> {
        let flag = &self.inner.maintaining;
        (!flag.swap(true, Ordering::AcqRel)).then(|| MaintenancePass(flag.clone()))
    }

    /// One maintenance pass: close idle connections past `idle_timeout` (above the minimum) or
    /// past `server_lifetime`, and open connections up to `min_pool_size`.
    pub async fn maintain(&self) {
        if self.inner.closed.load(Ordering::Relaxed) {
            return;
        }
        let s = &self.inner.settings;
        let expired: Vec<Box<Server>> = {
            let mut state = self.inner.state.lock();
            let idle = &mut state.idle;
            let total = idle.len() + self.inner.checked_out.load(Ordering::Relaxed);
            let mut keep = Vec::with_capacity(idle.len());
            let mut out = Vec::new();
            let mut count = total;
            // Oldest-used first.
            idle.sort_by_key(|srv| std::cmp::Reverse(srv.last_used));
            while let Some(mut srv) = idle.pop() {
                let unused = srv.last_used.elapsed();
                srv.check_due = unused >= s.check_delay;
                let too_idle = unused >= s.idle_timeout && count > s.min;
                if too_idle || srv.created.elapsed() >= s.server_lifetime || srv.is_broken() {
                    count -= 1;
                    out.push(srv);
                } else {
                    keep.push(srv);
                }
            }
            *idle = keep;
            out
        };
        expired.into_iter().for_each(close);
        self.trim_prepared().await;
        let (idle, out) = self.counts();
        for _ in (idle + out)..s.min.min(s.size) {
            // A warm connection counts against the pool size while it is being made, so a
            // burst of checkouts opening their own cannot push the total past `size`.
            let Ok(_permit) = self.inner.permits.clone().try_acquire_owned() else {
                break;
            };
            // Warm connections never wait for a cap's slot.
            let Some(slots) = caps::try_take(&s.caps) else {
                break;
            };
            match self.connect().await {
                Ok(mut server) => {
                    server.cap_slots = slots;
                    self.remember_params(&server);
                    self.inner.state.lock().idle.push(Box::new(server));
                }
                Err(e) => {
                    tracing::warn!("warming pool {}: {e}", self.name());
                    break;
                }
            }
        }
    }
}
