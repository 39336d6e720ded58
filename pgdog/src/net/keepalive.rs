//! TCP keepalive on client and server sockets (`tcp_keepalive`, `tcp_keepalive_idle`,
//! `tcp_keepalive_interval`, `tcp_keepalive_count`): a peer that vanished without closing
//! (a dead host, a dropped NAT entry) is noticed instead of holding a connection for ever.
use crate::config::General;
use std::time::Duration;
use tokio::net::TcpStream;

/// Sets the keepalive options of `general` on `socket` (a failure is logged, not fatal).
pub fn apply(socket: &TcpStream, general: &General) {
    if !general.tcp_keepalive {
        return;
    }
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(Duration::from_millis(general.tcp_keepalive_idle))
        .with_interval(Duration::from_millis(general.tcp_keepalive_interval))
        .with_retries(general.tcp_keepalive_count);
    if let Err(e) = socket2::SockRef::from(socket).set_tcp_keepalive(&keepalive) {
        tracing::debug!("TCP keepalive: {e}");
    }
}
