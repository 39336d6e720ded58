//! The connected clients: one entry per client connection from accept to close (SHOW CLIENTS,
//! the clients-by-state gauges, `max_client_connections`), each with a flag the admin
//! database's KILL and the shutdown set to make the session end.
use futures_util::task::AtomicWaker;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, LazyLock};
use std::task::Poll;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// What a client is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ClientState {
    /// Logging in (startup, TLS, authentication).
    Login = 0,
    /// Between transactions.
    Idle = 1,
    /// In a request or transaction (holding or using server connections).
    Active = 2,
    /// Waiting for a server connection.
    Waiting = 3,
}

impl ClientState {
    pub fn name(self) -> &'static str {
        match self {
            ClientState::Login => "login",
            ClientState::Idle => "idle",
            ClientState::Active => "active",
            ClientState::Waiting => "waiting",
        }
    }

    fn from_u8(v: u8) -> ClientState {
        match v {
            1 => ClientState::Idle,
            2 => ClientState::Active,
            3 => ClientState::Waiting,
            _ => ClientState::Login,
        }
    }
}

/// One client connection.
#[derive(Debug)]
pub struct ClientInfo {
    pub id: u64,
    pub addr: String,
    pub port: u16,
    pub local_addr: String,
    pub local_port: u16,
    /// Unix time of the connection, in microseconds.
    pub connect_time: u64,
    state: AtomicU8,
    /// Unix time of the last request, in microseconds.
    request_time: AtomicU64,
    /// Unix time the current checkout wait started, in microseconds.
    wait_since: AtomicU64,
    /// Set after login.
    login: Mutex<Login>,
    killed: AtomicBool,
    /// Killed by KILL_CLIENT: ends with PgBouncer's "admin forced disconnect" (08P01).
    forced: AtomicBool,
    /// Why the session keeps its server connection until it leaves (transaction mode).
    pinned: Mutex<Option<&'static str>>,
    /// Shutdown: end the session once it is between transactions.
    draining: AtomicBool,
    /// The session task waiting in `stop_requested` (one waiter: a waker swap, no lock).
    stop: AtomicWaker,
}

/// Who the client logged in as.
#[derive(Debug, Clone, Default)]
pub struct Login {
    pub user: String,
    pub database: String,
    pub application_name: String,
    pub tls: bool,
    /// Backend key pid pgdog gave the client.
    pub pid: i32,
}

pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// A monotonic instant and the Unix time (µs) read together once, so later instants convert
/// to Unix time without reading the wall clock again (one clock read less per request).
static EPOCH: LazyLock<(Instant, u64)> = LazyLock::new(|| (Instant::now(), now_us()));

/// The Unix time (µs) of a monotonic instant.
pub fn unix_us(at: Instant) -> u64 {
    let (base, base_us) = *EPOCH;
    match at.checked_duration_since(base) {
        Some(d) => base_us + d.as_micros() as u64,
        None => base_us.saturating_sub(base.duration_since(at).as_micros() as u64),
    }
}

impl ClientInfo {
    pub fn state(&self) -> ClientState {
        ClientState::from_u8(self.state.load(Relaxed))
    }

    pub fn set_state(&self, s: ClientState) {
        self.state.store(s as u8, Relaxed);
    }

    /// Marks the start of a checkout wait at `at`.
    pub fn start_wait(&self, at: Instant) {
        self.wait_since.store(unix_us(at), Relaxed);
        self.set_state(ClientState::Waiting);
    }

    pub fn wait_since(&self) -> u64 {
        self.wait_since.load(Relaxed)
    }

    pub fn request_time(&self) -> u64 {
        self.request_time.load(Relaxed)
    }

    /// A request started at `at`.
    pub fn touch(&self, at: Instant) {
        self.request_time.store(unix_us(at), Relaxed);
    }

    pub fn login(&self) -> Login {
        self.login.lock().clone()
    }

    pub fn set_login(&self, login: Login) {
        *self.login.lock() = login;
    }

    /// The session keeps its server until it leaves, for `why` (SHOW CLIENTS' `pinned`).
    pub fn pin(&self, why: &'static str) {
        self.pinned.lock().get_or_insert(why);
    }

    pub fn pinned(&self) -> Option<&'static str> {
        *self.pinned.lock()
    }

    /// Asks the session to end now (admin KILL, end of the shutdown wait).
    pub fn kill(&self) {
        self.killed.store(true, Relaxed);
        self.stop.wake();
    }

    /// KILL_CLIENT: ends the session at once with "admin forced disconnect".
    pub fn kill_forced(&self) {
        self.forced.store(true, Relaxed);
        self.kill();
    }

    pub fn is_forced(&self) -> bool {
        self.forced.load(Relaxed)
    }

    /// Asks the session to end once it is between transactions (shutdown).
    pub fn drain(&self) {
        self.draining.store(true, Relaxed);
        self.stop.wake();
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Relaxed)
    }

    /// Resolves when the session must end: killed, or draining while `idle` (between
    /// transactions). One task at a time waits on a client (its session).
    pub fn stop_requested(&self, idle: bool) -> impl std::future::Future<Output = ()> + '_ {
        std::future::poll_fn(move |cx| self.poll_stop(cx, idle))
    }

    /// `stop_requested` as a poll (the session's own poll over its sockets checks it first).
    pub fn poll_stop(&self, cx: &mut std::task::Context<'_>, idle: bool) -> Poll<()> {
        let due = || self.is_killed() || (idle && self.draining.load(Relaxed));
        if due() {
            return Poll::Ready(());
        }
        self.stop.register(cx.waker());
        // Set between the check and the registration: seen now.
        if due() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

static CLIENTS: LazyLock<Mutex<BTreeMap<u64, Arc<ClientInfo>>>> = LazyLock::new(Default::default);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The client's entry, removed from the table when dropped.
pub struct ClientGuard(pub Arc<ClientInfo>);

impl Drop for ClientGuard {
    fn drop(&mut self) {
        CLIENTS.lock().remove(&self.0.id);
    }
}

impl std::ops::Deref for ClientGuard {
    type Target = ClientInfo;
    fn deref(&self) -> &ClientInfo {
        &self.0
    }
}

fn split(addr: Option<std::net::SocketAddr>) -> (String, u16) {
    addr.map_or((String::new(), 0), |a| (a.ip().to_string(), a.port()))
}

/// Registers a new client connection.
pub fn register(
    peer: Option<std::net::SocketAddr>,
    local: Option<std::net::SocketAddr>,
) -> ClientGuard {
    register_at(split(peer), split(local))
}

/// Registers a client of the Unix-domain socket `path`: its address is `unix` (as PgBouncer
/// shows it), pgdog's is the socket file.
pub fn register_unix(path: &str) -> ClientGuard {
    register_at(("unix".into(), 0), (path.into(), 0))
}

fn register_at(
    (addr, port): (String, u16),
    (local_addr, local_port): (String, u16),
) -> ClientGuard {
    let now = now_us();
    let info = Arc::new(ClientInfo {
        id: NEXT_ID.fetch_add(1, Relaxed),
        addr,
        port,
        local_addr,
        local_port,
        connect_time: now,
        state: AtomicU8::new(ClientState::Login as u8),
        request_time: AtomicU64::new(now),
        wait_since: AtomicU64::new(0),
        login: Mutex::new(Login::default()),
        killed: AtomicBool::new(false),
        forced: AtomicBool::new(false),
        pinned: Mutex::new(None),
        draining: AtomicBool::new(false),
        stop: AtomicWaker::new(),
    });
    CLIENTS.lock().insert(info.id, info.clone());
    ClientGuard(info)
}

/// Every connected client, oldest first.
pub fn list() -> Vec<Arc<ClientInfo>> {
    CLIENTS.lock().values().cloned().collect()
}

/// Clients connected now.
pub fn count() -> usize {
    CLIENTS.lock().len()
}

/// Ends the sessions of `database`'s clients (every client: `None`). Returns how many.
pub fn kill(database: Option<&str>) -> usize {
    let mut n = 0;
    for c in list() {
        if database.is_none_or(|d| c.login().database == d) {
            c.kill();
            n += 1;
        }
    }
    n
}

/// Asks every client to leave once it is between transactions.
pub fn drain_all() {
    for c in list() {
        c.drain();
    }
}
