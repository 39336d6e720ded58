//! pgdog's Unix-domain socket, `<unix_socket_dir>/.s.PGSQL.<port>` next to the TCP port, as
//! PgBouncer makes it: refused when Postgres' lock file `<socket>.lock` says a server owns
//! the name; a stale socket file (a pgdog killed without its cleanup) is replaced; the mode and
//! group of `unix_socket_mode` and `unix_socket_group`. A pgdog sharing the port
//! (`so_reuseport`) binds the name anew and takes the new clients; at shutdown the file is
//! removed only while it is still this pgdog's.
use crate::config::General;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::sync::Arc;
use tokio::net::UnixListener;

/// A bound Unix-domain listening socket and the file it is known by.
pub struct UnixSocket {
    listener: UnixListener,
    path: Arc<str>,
    /// The socket file's inode when bound: the file is ours while it still has it.
    inode: u64,
}

impl UnixSocket {
    /// The socket file.
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// Binds the socket `general` asks for; None when `unix_socket_dir` is empty.
pub fn bind(general: &General) -> Result<Option<UnixSocket>, String> {
    if general.unix_socket_dir.is_empty() {
        return Ok(None);
    }
    let path = crate::net::unix::socket_path(&general.unix_socket_dir, general.port);
    if std::path::Path::new(&format!("{path}.lock")).exists() {
        return Err(format!(
            "unix port {} is in use ({path}.lock exists: a Postgres server owns {path})",
            general.port
        ));
    }
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("{path}: removing the old socket: {e}"))
        }
        _ => {}
    }
    let listener = UnixListener::bind(&path).map_err(|e| format!("{path}: {e}"))?;
    let mode = general.unix_socket_mode_bits().unwrap_or(0o777);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("{path}: setting mode {mode:o}: {e}"))?;
    if !general.unix_socket_group.is_empty() {
        set_group(&path, &general.unix_socket_group)?;
    }
    let inode = std::fs::metadata(&path)
        .map_err(|e| format!("{path}: {e}"))?
        .ino();
    Ok(Some(UnixSocket {
        listener,
        path: path.into(),
        inode,
    }))
}

/// Gives the socket file to group `group` (by name).
fn set_group(path: &str, group: &str) -> Result<(), String> {
    let name = std::ffi::CString::new(group).map_err(|_| format!("bad group name {group:?}"))?;
    // SAFETY: getgrnam reads a NUL-terminated name and returns a pointer to static data or
    // null; only its gr_gid is read, at once.
    let gid = unsafe {
        let entry = libc::getgrnam(name.as_ptr());
        if entry.is_null() {
            return Err(format!("unix_socket_group: no group named {group:?}"));
        }
        (*entry).gr_gid
    };
    std::os::unix::fs::chown(path, None, Some(gid))
        .map_err(|e| format!("{path}: giving it to group {group}: {e}"))
}

/// Serves clients of the socket until the shutdown starts; then removes the file if it is
/// still this pgdog's.
pub async fn listen(socket: UnixSocket) {
    tokio::select! {
        _ = accept(&socket) => {}
        _ = crate::ops::shutdown::requested() => {}
    }
    let ours = std::fs::metadata(&*socket.path).is_ok_and(|m| m.ino() == socket.inode);
    if ours {
        let _ = std::fs::remove_file(&*socket.path);
    }
}

async fn accept(socket: &UnixSocket) {
    loop {
        crate::ops::suspend::accepting().await;
        match socket.listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(super::login::serve_unix(stream, socket.path.clone()));
            }
            Err(e) => {
                tracing::warn!("accept on {}: {e}", socket.path);
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_stale_file_is_replaced_and_a_lock_file_refuses() {
        let dir = std::env::temp_dir().join(format!("pgdog-unix-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let general = General {
            unix_socket_dir: dir.display().to_string(),
            unix_socket_mode: "0700".into(),
            port: 45999,
            ..General::default()
        };
        let path = crate::net::unix::socket_path(&general.unix_socket_dir, general.port);
        std::fs::write(&path, b"stale").unwrap();
        let socket = bind(&general).unwrap().unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert!(std::os::unix::fs::FileTypeExt::is_socket(&meta.file_type()));
        assert_eq!(meta.permissions().mode() & 0o777, 0o700);
        drop(socket);
        std::fs::write(format!("{path}.lock"), b"4242").unwrap();
        let err = bind(&general).err().unwrap();
        assert!(err.contains("unix port 45999 is in use"), "{err}");
        let none = General {
            unix_socket_dir: String::new(),
            ..general
        };
        assert!(bind(&none).unwrap().is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
