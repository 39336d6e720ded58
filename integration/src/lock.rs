//! File locks that die with their process: run ownership and port reservations.
//!
//! A `flock` is released by the kernel when its holder exits, even on `kill -9`, so a lock that can
//! be taken marks a run whose owner is gone. Rust opens files close-on-exec, so servers started
//! by the harness never inherit (and keep) these locks.
use crate::error::{Error, IoContext, Result};
use std::fs::{File, OpenOptions};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// Ports handed out to test servers.
pub const PORT_RANGE: (u16, u16) = (21000, 29000);

/// The folder holding every run, the template cluster and the port locks: `$PGDOG_TOPOLOGY_DIR`,
/// else `/dev/shm/pgdog-topology-<uid>` when tmpfs has 2 GiB free, else the temp dir.
pub fn base_dir() -> Result<PathBuf> {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let dir = match std::env::var_os("PGDOG_TOPOLOGY_DIR") {
        Some(dir) => PathBuf::from(dir),
        None if free_bytes(Path::new("/dev/shm")) >= 2 << 30 => {
            PathBuf::from(format!("/dev/shm/pgdog-topology-{uid}"))
        }
        None => std::env::temp_dir().join(format!("pgdog-topology-{uid}")),
    };
    for sub in ["", "runs", "ports"] {
        let path = dir.join(sub);
        std::fs::create_dir_all(&path).context(|| format!("creating {}", path.display()))?;
        // The server user must be able to traverse it.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
            .context(|| format!("chmod {}", path.display()))?;
    }
    Ok(dir)
}

fn free_bytes(path: &Path) -> u64 {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return 0;
    };
    // SAFETY: statvfs writes into the zeroed struct we pass; c is a valid C string.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut st) != 0 {
            return 0;
        }
        st.f_bavail as u64 * st.f_frsize as u64
    }
}

/// Opens (creating it if missing) the file locked at `path`.
fn open_lock_file(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .context(|| format!("opening lock {}", path.display()))
}

/// Takes an exclusive lock on `path` (created if missing). `Ok(None)`: someone else holds it.
pub fn try_lock(path: &Path) -> Result<Option<File>> {
    let file = open_lock_file(path)?;
    // SAFETY: flock on a file descriptor we own.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        Ok(Some(file))
    } else {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
            Ok(None)
        } else {
            Err(err).context(|| format!("locking {}", path.display()))
        }
    }
}

/// Waits for an exclusive lock on `path`.
pub fn lock(path: &Path) -> Result<File> {
    let file = open_lock_file(path)?;
    // SAFETY: flock on a file descriptor we own.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(std::io::Error::last_os_error())
            .context(|| format!("locking {}", path.display()));
    }
    Ok(file)
}

/// A TCP port reserved for this process until dropped.
#[derive(Debug)]
pub struct PortLease {
    pub port: u16,
    _lock: File,
}

/// Reserves a port nobody else has reserved and nothing listens on.
pub fn lease_port(base: &Path) -> Result<PortLease> {
    let (lo, hi) = PORT_RANGE;
    let span = (hi - lo) as u32;
    // Start somewhere different in each process to avoid walking over each other's locks.
    let seed = std::process::id().wrapping_mul(2654435761)
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
    for i in 0..span {
        let port = lo + ((seed.wrapping_add(i)) % span) as u16;
        let Some(lock) = try_lock(&base.join("ports").join(format!("{port}.lock")))? else {
            continue;
        };
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(PortLease { port, _lock: lock });
        }
    }
    Err(Error::NoFreePort(lo, hi))
}

/// Whether a process with this pid exists and is not a zombie.
pub fn process_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence and permission.
    let exists = unsafe { libc::kill(pid, 0) } == 0
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    if !exists {
        return false;
    }
    // "pid (comm) S ...": a zombie has exited already.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
            .unwrap_or(true),
        Err(_) => false,
    }
}
