//! pgdog as a SCRAM client against servers that misbehave in ways no real Postgres does (a
//! real Postgres cannot be made to skip its signature or ask for a billion rounds): the
//! connection must fail, never authenticate.
use super::server::{Server, ServerError, ServerTarget};
use crate::net::message;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Reads one length-prefixed packet (`tagged`: with a leading type byte).
async fn packet(s: &mut TcpStream, tagged: bool) -> Vec<u8> {
    if tagged {
        s.read_u8().await.unwrap();
    }
    let len = s.read_i32().await.unwrap() as usize;
    let mut body = vec![0; len - 4];
    s.read_exact(&mut body).await.unwrap();
    body
}

/// A server that starts SCRAM with `iterations`, then answers the client's proof with
/// AuthenticationOk and no server signature.
async fn fake_server(iterations: u32) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        // SSLRequest (server_tls = prefer): no TLS here; then the startup packet.
        if packet(&mut s, false).await == 80877103i32.to_be_bytes() {
            s.write_all(b"N").await.unwrap();
            packet(&mut s, false).await;
        }
        s.write_all(message::auth_sasl().bytes()).await.unwrap();
        let initial = packet(&mut s, true).await;
        let text = String::from_utf8_lossy(&initial).to_string();
        let nonce = text
            .split("r=")
            .nth(1)
            .unwrap()
            .trim_end_matches('\0')
            .to_string();
        let first = format!("r={nonce}srv,s=c2FsdHNhbHQ=,i={iterations}");
        s.write_all(message::auth_sasl_continue(first.as_bytes()).bytes())
            .await
            .unwrap();
        packet(&mut s, true).await;
        s.write_all(message::auth_ok().bytes()).await.unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest).await;
    });
    port
}

fn target(port: u16) -> ServerTarget {
    ServerTarget {
        host: "127.0.0.1".into(),
        port,
        database: "db".into(),
        user: "u".into(),
        password: Some("pw".into()),
        pass_through: None,
    }
}

#[tokio::test]
async fn authentication_ok_without_the_server_signature_fails() {
    let port = fake_server(4096).await;
    let err = Server::connect(&target(port), Duration::from_secs(5))
        .await
        .expect_err("must not authenticate");
    assert!(
        matches!(&err, ServerError::Auth(_, m) if m.contains("server's identity was not proven")),
        "{err}"
    );
}

#[tokio::test]
async fn absurd_iteration_counts_are_refused_at_once() {
    let port = fake_server(2_000_000_000).await;
    let start = Instant::now();
    let err = Server::connect(&target(port), Duration::from_secs(5))
        .await
        .expect_err("must not authenticate");
    assert!(err.to_string().contains("iteration count"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(2));
}
