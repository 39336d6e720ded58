//! Unix-domain sockets as Postgres names them: a folder holding `.s.PGSQL.<port>`. A host
//! that starts with `/` is such a folder (libpq's and PgBouncer's rule), for servers as for
//! pgdog's own listening socket (`unix_socket_dir`).

/// Whether `host` names a socket folder rather than a network host.
pub fn is_socket_dir(host: &str) -> bool {
    host.starts_with('/')
}

/// The socket file of `port` in folder `dir`.
pub fn socket_path(dir: &str, port: u16) -> String {
    format!("{}/.s.PGSQL.{port}", dir.trim_end_matches('/'))
}

/// How a server at `host`:`port` is named in logs and errors: its socket file, or
/// `host:port`.
pub fn address(host: &str, port: u16) -> String {
    if is_socket_dir(host) {
        socket_path(host, port)
    } else {
        format!("{host}:{port}")
    }
}

/// Connects to `addr` (`host:port`, or a socket file), writes `bytes` and closes: a
/// CancelRequest's whole exchange.
pub async fn send_and_close(addr: &str, bytes: &[u8]) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt;
    if is_socket_dir(addr) {
        let mut stream = tokio::net::UnixStream::connect(addr).await?;
        stream.write_all(bytes).await?;
        let _ = stream.shutdown().await;
    } else {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream.write_all(bytes).await?;
        let _ = stream.shutdown().await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn folders_and_hosts() {
        assert_eq!(super::address("/run/pg/", 5432), "/run/pg/.s.PGSQL.5432");
        assert_eq!(super::address("/tmp", 6432), "/tmp/.s.PGSQL.6432");
        assert_eq!(super::address("127.0.0.1", 5432), "127.0.0.1:5432");
    }
}
