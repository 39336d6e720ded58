//! Zero-downtime restart (`so_reuseport = true`). Every pgdog on a port binds it with
//! SO_REUSEPORT and keeps a handover socket, `pgdog-<host>-<port>.<pid>.handover` in `handover_dir`
//! (mode 0600: only the same OS user reaches it). A second pgdog started with the same
//! configuration shares the port at once. On SIGTERM the first one picks the newest live
//! pgdog of the port as its successor and sends it, each as a file descriptor over its handover
//! socket:
//! - its listening socket, so the connections waiting in that socket's accept queue are
//!   accepted by the successor instead of being reset when the first one stops listening;
//! - each client that is between transactions, with its session state
//!   (`frontend::handover`): the client keeps its connection and its cancel key.
//!
//! Clients in a transaction finish it first. A CancelRequest for a key no client here holds
//! is passed to the other pgdogs of the port, so cancels work whichever process the kernel
//! hands the cancel's connection to. One connection per message: a kind byte, the payload, and
//! at most one file descriptor, sent with the first byte; the receiver answers `K` (taken) or
//! `E` and a reason.
use sendfd::{RecvWithFd, SendWithFd};
use std::future::Future;
use std::io::{self, ErrorKind};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::OnceLock;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};

const CANCEL: u8 = b'C';
const LISTENER: u8 = b'L';
const SESSION: u8 = b'S';
const PING: u8 = b'P';
/// Largest message accepted (a client's session state with its prepared statements).
const MAX_MESSAGE: usize = 64 << 20;

/// This pgdog's handover socket (set when `so_reuseport` is on).
static OWN: OnceLock<PathBuf> = OnceLock::new();
/// The pgdog that takes over at shutdown (chosen once, when the shutdown starts).
static SUCCESSOR: OnceLock<Option<PathBuf>> = OnceLock::new();

/// The folder and the name prefix of the handover sockets of the pgdogs listening on the same
/// address (host and port) as this one.
fn location() -> (PathBuf, String) {
    let g = crate::config::active();
    let dir = g.handover_dir.clone().unwrap_or_else(std::env::temp_dir);
    (dir, format!("pgdog-{}-{}.", g.host, g.port))
}

/// What another pgdog of the port hands this one.
pub enum Received {
    /// A CancelRequest's key that pgdog did not hold.
    Cancel { pid: i32, secret: [u8; 4] },
    /// Its listening socket.
    Listener(OwnedFd),
    /// A client between transactions: its session state and its socket.
    Session(Vec<u8>, OwnedFd),
}

/// Takes over what was received; `Err` says why not (sent back to the giver). The sessions
/// live above this transport, so the caller of [`start`] hands it in (`frontend::handover::take`).
pub type Taker = fn(Received) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// Binds this pgdog's handover socket and serves it with `take` (nothing without
/// `so_reuseport`).
pub fn start(take: Taker) -> io::Result<()> {
    if !crate::config::active().so_reuseport {
        return Ok(());
    }
    let (dir, prefix) = location();
    let path = dir.join(format!("{prefix}{}.handover", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    let _ = OWN.set(path);
    tokio::spawn(serve(listener, take));
    Ok(())
}

/// Removes this pgdog's handover socket (at exit).
pub fn remove_own() {
    if let Some(path) = OWN.get() {
        let _ = std::fs::remove_file(path);
    }
}

async fn serve(listener: UnixListener, take: Taker) {
    loop {
        match listener.accept().await {
            Ok((conn, _)) => {
                tokio::spawn(answer(conn, take));
            }
            Err(e) => {
                tracing::warn!("handover socket: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}

/// Whether the process at the other end runs as this pgdog's OS user (the sockets live in a
/// shared folder: another user's process must neither get clients nor give them).
fn same_user(conn: &UnixStream) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let own = unsafe { libc::geteuid() };
    conn.peer_cred().is_ok_and(|c| c.uid() == own)
}

/// Reads one message, acts on it and answers.
async fn answer(mut conn: UnixStream, take: Taker) {
    if !same_user(&conn) {
        tracing::warn!("handover socket: a process of another OS user connected; ignored");
        return;
    }
    let (message, fd) = match tokio::time::timeout(HANDOVER, receive(&conn)).await {
        Ok(Ok(m)) => m,
        Ok(Err(e)) => {
            tracing::warn!("handover socket: reading a message: {e}");
            return;
        }
        Err(_) => {
            tracing::warn!("handover socket: no complete message within {HANDOVER:?}");
            return;
        }
    };
    let Some((&kind, payload)) = message.split_first() else {
        return;
    };
    let outcome = match (kind, fd) {
        // A pgdog shutting down takes nothing over.
        (PING, _) if crate::ops::shutdown::is_shutting_down() => Err("shutting down".into()),
        (PING, _) => Ok(()),
        (CANCEL, _) => match (
            payload.get(..4).and_then(|b| <[u8; 4]>::try_from(b).ok()),
            payload.get(4..8).and_then(|b| <[u8; 4]>::try_from(b).ok()),
        ) {
            (Some(pid), Some(secret)) => {
                let pid = i32::from_be_bytes(pid);
                take(Received::Cancel { pid, secret }).await
            }
            _ => Ok(()),
        },
        (LISTENER, Some(fd)) => take(Received::Listener(fd)).await,
        (SESSION, Some(fd)) => take(Received::Session(payload.to_vec(), fd)).await,
        _ => Err("unknown message".to_string()),
    };
    let reply = match outcome {
        Ok(()) => vec![b'K'],
        Err(why) => {
            tracing::warn!("handover: refused: {why}");
            [b"E".as_slice(), why.as_bytes()].concat()
        }
    };
    let _ = conn.write_all(&reply).await;
    let _ = conn.shutdown().await;
}

/// Reads a whole message (until the sender shuts its side) and the descriptor sent with it.
async fn receive(conn: &UnixStream) -> io::Result<(Vec<u8>, Option<OwnedFd>)> {
    let mut message = Vec::new();
    let mut fd = None;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        conn.readable().await?;
        let mut fds: [RawFd; 2] = [-1; 2];
        match conn.recv_with_fd(&mut buf, &mut fds) {
            Ok((n, nfds)) => {
                for raw in fds.iter().take(nfds) {
                    // SAFETY: the kernel just installed this descriptor for us; we own it.
                    let owned = unsafe { OwnedFd::from_raw_fd(*raw) };
                    // Not inherited by the programs pgdog runs (pg_dump).
                    // SAFETY: fcntl on a descriptor we own.
                    unsafe { libc::fcntl(owned.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
                    if fd.is_none() {
                        fd = Some(owned);
                    }
                }
                if n == 0 {
                    return Ok((message, fd));
                }
                message.extend_from_slice(&buf[..n]);
                if message.len() > MAX_MESSAGE {
                    return Err(io::Error::new(ErrorKind::InvalidData, "message too long"));
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
}

/// How a message to another pgdog went.
#[derive(Debug)]
pub enum Sent {
    /// Taken (`K`).
    Taken,
    /// Refused (`E`), or never delivered: the sender still owns what it sent.
    Refused(String),
    /// The descriptor went out but the answer did not come back: the receiver may be using it.
    Unknown(String),
}

/// Handover messages in flight at once: a burst of thousands of idle clients would overflow
/// the receiver's accept queue (a full Unix socket queue refuses at once).
static IN_FLIGHT: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(32);

/// Sends one message (with `fd`) to the handover socket at `path` within `limit`.
async fn send(
    path: &Path,
    kind: u8,
    payload: &[u8],
    fd: Option<RawFd>,
    limit: std::time::Duration,
) -> Sent {
    let Ok(_permit) = IN_FLIGHT.acquire().await else {
        return Sent::Refused("closed".into());
    };
    let mut delivered = false;
    let exchange = exchange(path, kind, payload, fd, &mut delivered);
    let outcome = tokio::time::timeout(limit, exchange).await;
    let failed = |why: String| {
        if delivered && fd.is_some() {
            Sent::Unknown(why)
        } else {
            Sent::Refused(why)
        }
    };
    match outcome {
        Ok(Ok(reply)) => match reply.split_first() {
            Some((b'K', _)) => Sent::Taken,
            Some((b'E', why)) => Sent::Refused(String::from_utf8_lossy(why).into_owned()),
            _ => failed("no answer".into()),
        },
        Ok(Err(e)) => failed(e.to_string()),
        Err(_) => failed(format!("no answer within {} ms", limit.as_millis())),
    }
}

/// Connects (retrying a full accept queue for a while), sends, reads the answer.
async fn exchange(
    path: &Path,
    kind: u8,
    payload: &[u8],
    fd: Option<RawFd>,
    delivered: &mut bool,
) -> io::Result<Vec<u8>> {
    let mut pause = std::time::Duration::from_millis(2);
    let mut conn = loop {
        match UnixStream::connect(path).await {
            Ok(c) => break c,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(std::time::Duration::from_millis(100));
            }
            Err(e) => return Err(e),
        }
    };
    if !same_user(&conn) {
        return Err(io::Error::new(
            ErrorKind::PermissionDenied,
            format!("{} belongs to another OS user", path.display()),
        ));
    }
    let message = [&[kind], payload].concat();
    let fds: Vec<RawFd> = fd.into_iter().collect();
    let sent = loop {
        conn.writable().await?;
        match conn.send_with_fd(&message, &fds) {
            Ok(n) => break n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    };
    *delivered = true;
    conn.write_all(&message[sent..]).await?;
    conn.shutdown().await?;
    let mut reply = Vec::new();
    conn.read_to_end(&mut reply).await?;
    Ok(reply)
}

/// Short exchanges (PING, CANCEL).
const QUICK: std::time::Duration = std::time::Duration::from_millis(1_000);
/// Exchanges that hand something over (the receiver makes a session).
const HANDOVER: std::time::Duration = std::time::Duration::from_millis(5_000);

/// The other pgdogs' handover sockets on this address, newest first. Sockets nobody serves
/// any more (a pgdog killed with SIGKILL) are removed on the way.
async fn others() -> Vec<PathBuf> {
    let Some(own) = OWN.get() else {
        return Vec::new();
    };
    let (dir, prefix) = location();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let path = entry.path();
        if !name.starts_with(&prefix) || !name.ends_with(".handover") || path == *own {
            continue;
        }
        let modified = entry.metadata().and_then(|m| m.modified()).ok();
        found.push((modified, path));
    }
    found.sort_by_key(|f| std::cmp::Reverse(f.0));
    let mut live = Vec::new();
    for (_, path) in found {
        if !path.exists() {
            continue;
        }
        if let Err(e) = std::os::unix::net::UnixStream::connect(&path) {
            if matches!(e.kind(), ErrorKind::ConnectionRefused | ErrorKind::NotFound) {
                // Nobody serves it any more (a pgdog killed with SIGKILL).
                let _ = std::fs::remove_file(&path);
                continue;
            }
        }
        live.push(path);
    }
    live
}

/// Passes a CancelRequest this pgdog has no client for to the other pgdogs of its port.
pub async fn forward_cancel(pid: i32, secret: [u8; 4]) {
    let mut payload = pid.to_be_bytes().to_vec();
    payload.extend_from_slice(&secret);
    for path in others().await {
        let _ = send(&path, CANCEL, &payload, None, QUICK).await;
    }
}

/// Chooses the successor (the newest other pgdog of the address that is not shutting down
/// itself), once, at shutdown.
pub async fn choose_successor() -> Option<&'static Path> {
    if SUCCESSOR.get().is_none() {
        let mut newest = None;
        for path in others().await {
            match send(&path, PING, &[], None, QUICK).await {
                Sent::Taken => {
                    newest = Some(path);
                    break;
                }
                Sent::Refused(why) | Sent::Unknown(why) => {
                    tracing::debug!("handover socket {}: {why}", path.display())
                }
            }
        }
        if let Some(path) = &newest {
            tracing::info!("shutdown: handing over to {}", path.display());
        }
        let _ = SUCCESSOR.set(newest);
    }
    successor()
}

/// The pgdog taking over, once the shutdown chose one.
pub fn successor() -> Option<&'static Path> {
    SUCCESSOR.get().and_then(|s| s.as_deref())
}

/// Hands a listening socket over to the successor (its accept queue with it). Whether it was
/// taken; either way this pgdog stops accepting on it.
pub async fn pass_listener(listener: &impl AsRawFd) -> bool {
    let Some(path) = choose_successor().await else {
        return false;
    };
    match send(path, LISTENER, &[], Some(listener.as_raw_fd()), HANDOVER).await {
        Sent::Taken => true,
        Sent::Refused(why) | Sent::Unknown(why) => {
            tracing::warn!("handing the listening socket over: {why}");
            false
        }
    }
}

/// Hands a client's connection and session state over to the successor.
pub async fn pass_session(state: &[u8], socket: RawFd) -> Sent {
    match successor() {
        Some(path) => send(path, SESSION, state, Some(socket), HANDOVER).await,
        None => Sent::Refused("no successor".into()),
    }
}
