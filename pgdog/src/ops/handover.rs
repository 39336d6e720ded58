//! Zero-downtime restart (`so_reuseport = true`). Every pgdog on a port binds it with
//! SO_REUSEPORT and keeps a handover socket, `pgdog-<port>.<pid>.handover` in `handover_dir`
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
use std::io::{self, ErrorKind};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
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

/// The folder and the name prefix of the handover sockets of `port`.
fn location(port: u16) -> (PathBuf, String) {
    let g = crate::config::active();
    let dir = g.handover_dir.clone().unwrap_or_else(std::env::temp_dir);
    (dir, format!("pgdog-{port}."))
}

/// Binds this pgdog's handover socket and serves it (nothing without `so_reuseport`).
pub fn start(port: u16) -> io::Result<()> {
    if !crate::config::active().so_reuseport {
        return Ok(());
    }
    let (dir, prefix) = location(port);
    let path = dir.join(format!("{prefix}{}.handover", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    let _ = OWN.set(path);
    tokio::spawn(serve(listener));
    Ok(())
}

/// Removes this pgdog's handover socket (at exit).
pub fn remove_own() {
    if let Some(path) = OWN.get() {
        let _ = std::fs::remove_file(path);
    }
}

async fn serve(listener: UnixListener) {
    loop {
        match listener.accept().await {
            Ok((conn, _)) => {
                tokio::spawn(answer(conn));
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
async fn answer(mut conn: UnixStream) {
    if !same_user(&conn) {
        tracing::warn!("handover socket: a process of another OS user connected; ignored");
        return;
    }
    let (message, fd) = match receive(&conn).await {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!("handover socket: reading a message: {e}");
            return;
        }
    };
    let Some((&kind, payload)) = message.split_first() else {
        return;
    };
    let outcome = match (kind, fd) {
        (PING, _) => Ok(()),
        (CANCEL, _) => {
            if let (Ok(pid), Some(secret)) = (
                payload.get(..4).map_or(Err(()), |b| {
                    <[u8; 4]>::try_from(b)
                        .map(i32::from_be_bytes)
                        .map_err(|_| ())
                }),
                payload.get(4..8).and_then(|b| <[u8; 4]>::try_from(b).ok()),
            ) {
                crate::frontend::cancel::cancel_here(pid, secret).await;
            }
            Ok(())
        }
        (LISTENER, Some(fd)) => crate::frontend::listener::adopt(fd),
        (SESSION, Some(fd)) => crate::frontend::handover::resume(payload, fd),
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

/// Sends one message (with `fd`) to the handover socket at `path`; Ok when it was taken.
async fn send(path: &Path, kind: u8, payload: &[u8], fd: Option<RawFd>) -> io::Result<()> {
    let mut conn = UnixStream::connect(path).await?;
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
    conn.write_all(&message[sent..]).await?;
    conn.shutdown().await?;
    let mut reply = Vec::new();
    conn.read_to_end(&mut reply).await?;
    match reply.split_first() {
        Some((b'K', _)) => Ok(()),
        Some((_, why)) => Err(io::Error::other(String::from_utf8_lossy(why).into_owned())),
        None => Err(io::Error::other("no answer")),
    }
}

/// The other pgdogs' handover sockets on this port, newest first. Sockets nobody serves any
/// more (a pgdog killed with SIGKILL) are removed on the way.
async fn others() -> Vec<PathBuf> {
    let Some(own) = OWN.get() else {
        return Vec::new();
    };
    let port = crate::config::active().port;
    let (dir, prefix) = location(port);
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
        match send(&path, PING, &[], None).await {
            Ok(()) => live.push(path),
            Err(e) if matches!(e.kind(), ErrorKind::ConnectionRefused | ErrorKind::NotFound) => {
                let _ = std::fs::remove_file(&path);
            }
            Err(e) => tracing::debug!("handover socket {}: {e}", path.display()),
        }
    }
    live
}

/// Passes a CancelRequest this pgdog has no client for to the other pgdogs of its port.
pub async fn forward_cancel(pid: i32, secret: [u8; 4]) {
    let mut payload = pid.to_be_bytes().to_vec();
    payload.extend_from_slice(&secret);
    for path in others().await {
        let _ = send(&path, CANCEL, &payload, None).await;
    }
}

/// Chooses the successor (the newest other live pgdog of the port), once, at shutdown.
pub async fn choose_successor() -> Option<&'static Path> {
    if SUCCESSOR.get().is_none() {
        let newest = others().await.into_iter().next();
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
    match send(path, LISTENER, &[], Some(listener.as_raw_fd())).await {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!("handing the listening socket over: {e}");
            false
        }
    }
}

/// Hands a client's connection and session state over to the successor.
pub async fn pass_session(state: &[u8], socket: RawFd) -> io::Result<()> {
    let path = successor().ok_or_else(|| io::Error::other("no successor"))?;
    send(path, SESSION, state, Some(socket)).await
}
