//! Shared setup for the pooler tests: a real PostgreSQL 18 server and pgdog in front of it.
#![allow(dead_code)]
use topology::{Proxy, Topology};

pub const USER: &str = "app";
pub const PASSWORD: &str = "secret";
pub const DB: &str = "app";

/// A single server with pgdog in front: database `app` (the server's `postgres` database,
/// server user `postgres`), user `app` / `secret`. `general` is extra `[general]` lines.
pub fn pgdog(general: &str, pool_size: usize) -> (Topology, Proxy) {
    let topo = Topology::single().expect("topology");
    let proxy = start(&topo, general, pool_size);
    (topo, proxy)
}

pub fn start(topo: &Topology, general: &str, pool_size: usize) -> Proxy {
    let config = format!(
        "{general}\n\n[[databases]]\nname = \"{DB}\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"postgres\"\nuser = \"postgres\"\npool_size = {pool_size}\n",
        topo.primary().port
    );
    let users =
        format!("[[users]]\nname = \"{USER}\"\ndatabase = \"{DB}\"\npassword = \"{PASSWORD}\"\n");
    Proxy::start(&config, &users).expect("pgdog")
}

/// A tokio-postgres client through pgdog.
pub async fn connect(proxy: &Proxy) -> tokio_postgres::Client {
    connect_as(proxy, USER, PASSWORD, DB)
        .await
        .expect("connect through pgdog")
}

pub async fn connect_as(
    proxy: &Proxy,
    user: &str,
    password: &str,
    db: &str,
) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let (client, connection) =
        tokio_postgres::connect(&proxy.conninfo(user, password, db), tokio_postgres::NoTls).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

// ---------------------------------------------------------------------------------------------
// Helpers for the pooler_* tests (configuration variants, SQLSTATEs, polling, a raw wire client).

/// pgdog.toml without the `[general]` header (Proxy::start adds it with host and port): `general`
/// lines, then database `app` on the topology's primary as server user `postgres`.
pub fn config(topo: &Topology, general: &str, pool_size: usize) -> String {
    format!(
        "{general}\n\n[[databases]]\nname = \"{DB}\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"postgres\"\nuser = \"postgres\"\npool_size = {pool_size}\n",
        topo.primary().port
    )
}

/// users.toml with user `app` / `secret` on `app` plus `extra` lines inside that entry.
pub fn users(extra: &str) -> String {
    format!(
        "[[users]]\nname = \"{USER}\"\ndatabase = \"{DB}\"\npassword = \"{PASSWORD}\"\n{extra}\n"
    )
}

/// pgdog with full control over both files.
pub fn start_with(config: &str, users: &str) -> Proxy {
    Proxy::start(config, users).expect("pgdog")
}

/// A tokio-postgres client for an arbitrary connection string (extra keywords like
/// `application_name=x options='-c ...'`), with its connection task.
pub async fn connect_str(
    conninfo: &str,
) -> Result<
    (
        tokio_postgres::Client,
        tokio::task::JoinHandle<Result<(), tokio_postgres::Error>>,
    ),
    tokio_postgres::Error,
> {
    let (client, connection) = tokio_postgres::connect(conninfo, tokio_postgres::NoTls).await?;
    let task = tokio::spawn(connection);
    Ok((client, task))
}

/// The SQLSTATE of an error (from the server or pgdog), if it carries one.
pub fn sqlstate(err: &tokio_postgres::Error) -> Option<String> {
    err.as_db_error().map(|e| e.code().code().to_string())
}

/// Polls `check` every 20 ms until it returns true; panics after `timeout` with `what`.
pub async fn eventually<F, Fut>(what: &str, timeout: std::time::Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = std::time::Instant::now();
    loop {
        if check().await {
            return;
        }
        assert!(
            start.elapsed() < timeout,
            "timed out after {:.1}s waiting for {what}",
            start.elapsed().as_secs_f64()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// A single value of the first row, as text (simple query protocol).
pub async fn one(client: &tokio_postgres::Client, sql: &str) -> String {
    simple_value(client, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

pub async fn simple_value(
    client: &tokio_postgres::Client,
    sql: &str,
) -> Result<String, tokio_postgres::Error> {
    let msgs = client.simple_query(sql).await?;
    for m in msgs {
        if let tokio_postgres::SimpleQueryMessage::Row(row) = m {
            return Ok(row.get(0).unwrap_or("NULL").to_string());
        }
    }
    panic!("{sql}: no row returned");
}

/// A hand-driven protocol-3 client, for what libraries will not send: garbage, truncated
/// messages, raw CancelRequests, exact DEALLOCATE/Close sequences.
pub mod raw {
    use std::collections::HashMap;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

    /// A backend message: type byte and payload.
    #[derive(Debug, Clone)]
    pub struct Msg {
        pub tag: u8,
        pub body: Vec<u8>,
    }

    impl Msg {
        /// ErrorResponse / NoticeResponse fields by code byte.
        pub fn fields(&self) -> HashMap<u8, String> {
            let mut out = HashMap::new();
            let mut rest = &self.body[..];
            while let Some((&code, tail)) = rest.split_first() {
                if code == 0 {
                    break;
                }
                let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
                out.insert(code, String::from_utf8_lossy(&tail[..end]).into_owned());
                rest = tail.get(end + 1..).unwrap_or(&[]);
            }
            out
        }

        pub fn sqlstate(&self) -> Option<String> {
            self.fields().get(&b'C').cloned()
        }

        /// CommandComplete tag / first column of a DataRow, as text.
        pub fn text(&self) -> String {
            match self.tag {
                b'D' => {
                    let len = i32::from_be_bytes([
                        self.body[2],
                        self.body[3],
                        self.body[4],
                        self.body[5],
                    ]);
                    if len < 0 {
                        "NULL".into()
                    } else {
                        String::from_utf8_lossy(&self.body[6..6 + len as usize]).into_owned()
                    }
                }
                _ => String::from_utf8_lossy(self.body.strip_suffix(&[0]).unwrap_or(&self.body))
                    .into_owned(),
            }
        }
    }

    /// A tagged frontend message.
    pub fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        out.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    fn cstr(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(s.as_bytes());
        out.push(0);
    }

    pub fn query(sql: &str) -> Vec<u8> {
        let mut b = Vec::new();
        cstr(&mut b, sql);
        msg(b'Q', &b)
    }

    pub fn parse(name: &str, sql: &str) -> Vec<u8> {
        let mut b = Vec::new();
        cstr(&mut b, name);
        cstr(&mut b, sql);
        b.extend_from_slice(&0i16.to_be_bytes());
        msg(b'P', &b)
    }

    /// Bind of unnamed portal to `statement` with text parameters.
    pub fn bind(statement: &str, params: &[&str]) -> Vec<u8> {
        let mut b = Vec::new();
        cstr(&mut b, "");
        cstr(&mut b, statement);
        b.extend_from_slice(&0i16.to_be_bytes());
        b.extend_from_slice(&(params.len() as i16).to_be_bytes());
        for p in params {
            b.extend_from_slice(&(p.len() as i32).to_be_bytes());
            b.extend_from_slice(p.as_bytes());
        }
        b.extend_from_slice(&0i16.to_be_bytes());
        msg(b'B', &b)
    }

    pub fn execute() -> Vec<u8> {
        let mut b = Vec::new();
        cstr(&mut b, "");
        b.extend_from_slice(&0i32.to_be_bytes());
        msg(b'E', &b)
    }

    /// Describe / Close of a statement (`kind` b'S') or portal (b'P').
    pub fn target(tag: u8, kind: u8, name: &str) -> Vec<u8> {
        let mut b = vec![kind];
        cstr(&mut b, name);
        msg(tag, &b)
    }

    pub fn sync() -> Vec<u8> {
        msg(b'S', &[])
    }

    /// StartupMessage (protocol 3.0).
    pub fn startup(params: &[(&str, &str)]) -> Vec<u8> {
        let mut b = 196608i32.to_be_bytes().to_vec();
        for (k, v) in params {
            cstr(&mut b, k);
            cstr(&mut b, v);
        }
        b.push(0);
        let mut out = ((b.len() + 4) as i32).to_be_bytes().to_vec();
        out.extend_from_slice(&b);
        out
    }

    /// CancelRequest with the given key.
    pub fn cancel_request(pid: i32, secret: &[u8]) -> Vec<u8> {
        let mut out = ((12 + secret.len()) as i32).to_be_bytes().to_vec();
        out.extend_from_slice(&80877102i32.to_be_bytes());
        out.extend_from_slice(&pid.to_be_bytes());
        out.extend_from_slice(secret);
        out
    }

    pub struct Conn {
        pub stream: TcpStream,
        buf: Vec<u8>,
        /// BackendKeyData from the login.
        pub key: Option<(i32, Vec<u8>)>,
    }

    impl Conn {
        pub async fn connect(port: u16) -> Conn {
            let stream = TcpStream::connect(("127.0.0.1", port))
                .await
                .expect("tcp connect to pgdog");
            stream.set_nodelay(true).unwrap();
            Conn {
                stream,
                buf: Vec::new(),
                key: None,
            }
        }

        /// Connects and logs in (trust, or cleartext with `password`); returns at ReadyForQuery.
        pub async fn login(port: u16, user: &str, db: &str, password: Option<&str>) -> Conn {
            let mut c = Conn::connect(port).await;
            c.send(&startup(&[("user", user), ("database", db)])).await;
            loop {
                let m = c.recv().await.expect("login: connection closed");
                match m.tag {
                    b'R' => {
                        let code = i32::from_be_bytes([m.body[0], m.body[1], m.body[2], m.body[3]]);
                        match code {
                            0 => {}
                            3 => {
                                let mut b = Vec::new();
                                cstr(&mut b, password.expect("server asks for a password"));
                                c.send(&msg(b'p', &b)).await;
                            }
                            other => panic!("raw client: unsupported auth request {other}"),
                        }
                    }
                    b'K' => {
                        let pid = i32::from_be_bytes([m.body[0], m.body[1], m.body[2], m.body[3]]);
                        c.key = Some((pid, m.body[4..].to_vec()));
                    }
                    b'E' => panic!("login failed: {:?}", m.fields()),
                    b'Z' => return c,
                    _ => {}
                }
            }
        }

        pub async fn send(&mut self, bytes: &[u8]) {
            self.stream.write_all(bytes).await.expect("write to pgdog");
        }

        /// Sends, ignoring errors (the peer may already have closed).
        pub async fn try_send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
            self.stream.write_all(bytes).await
        }

        /// The next message; `None` at end of stream (or a reset). Panics after READ_TIMEOUT.
        pub async fn recv(&mut self) -> Option<Msg> {
            loop {
                if self.buf.len() >= 5 {
                    let len =
                        i32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]])
                            as usize;
                    if self.buf.len() > len {
                        let body = self.buf[5..1 + len].to_vec();
                        let tag = self.buf[0];
                        self.buf.drain(..1 + len);
                        return Some(Msg { tag, body });
                    }
                }
                let mut chunk = [0u8; 16384];
                let n = tokio::time::timeout(READ_TIMEOUT, self.stream.read(&mut chunk))
                    .await
                    .expect("raw client: no answer from pgdog within the timeout");
                match n {
                    Ok(0) | Err(_) => return None,
                    Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                }
            }
        }

        /// Messages up to and including ReadyForQuery.
        pub async fn until_ready(&mut self) -> Vec<Msg> {
            let mut out = Vec::new();
            loop {
                let m = self
                    .recv()
                    .await
                    .expect("connection closed before ReadyForQuery");
                let done = m.tag == b'Z';
                out.push(m);
                if done {
                    return out;
                }
            }
        }

        /// Everything until the peer closes the connection.
        pub async fn until_closed(&mut self) -> Vec<Msg> {
            let mut out = Vec::new();
            while let Some(m) = self.recv().await {
                out.push(m);
            }
            out
        }
    }

    /// Message type bytes, for assertion messages.
    pub fn tags(msgs: &[Msg]) -> String {
        msgs.iter().map(|m| m.tag as char).collect()
    }
}

/// An error with its server message and SQLSTATE (tokio-postgres' Display says only "db error").
pub fn err_text(err: &tokio_postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => format!("{} {}: {}", db.severity(), db.code().code(), db.message()),
        None => format!("{err} ({err:?})"),
    }
}

/// A figure for `benchmarks/faults.sh`: printed, and appended as `key<TAB>value` to the file
/// named by `FAULTS_REPORT` when it is set.
pub fn report(key: &str, value: impl std::fmt::Display) {
    eprintln!("figure {key} = {value}");
    if let Some(path) = std::env::var_os("FAULTS_REPORT") {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .expect("FAULTS_REPORT file");
        writeln!(f, "{key}\t{value}").expect("FAULTS_REPORT write");
    }
}
