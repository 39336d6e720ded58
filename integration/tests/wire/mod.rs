//! A hand-driven protocol-3 client shared by the integration tests (`common` and `sharding_common`
//! re-export it as their `raw` module): for what libraries will not send (garbage, truncated
//! messages, raw CancelRequests, exact DEALLOCATE/Close sequences) and COPY through a simple
//! Query message.
#![allow(dead_code)]
use std::collections::HashMap;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub const READ_TIMEOUT: Duration = Duration::from_secs(20);

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

    /// One ErrorResponse / NoticeResponse field by code byte.
    pub fn field(&self, code: u8) -> Option<String> {
        self.fields().remove(&code)
    }

    /// `CODE: message | where` of an ErrorResponse.
    pub fn error_text(&self) -> String {
        format!(
            "{}: {} | {}",
            self.field(b'C').unwrap_or_default(),
            self.field(b'M').unwrap_or_default(),
            self.field(b'W').unwrap_or_default()
        )
    }

    /// CommandComplete tag / first column of a DataRow, as text.
    pub fn text(&self) -> String {
        match self.tag {
            b'D' => {
                let len =
                    i32::from_be_bytes([self.body[2], self.body[3], self.body[4], self.body[5]]);
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
    let params: Vec<Option<String>> = params.iter().map(|p| Some(p.to_string())).collect();
    bind_text(statement, &params)
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

pub fn flush() -> Vec<u8> {
    msg(b'H', &[])
}

/// Parse, Bind (text parameters), Execute of the unnamed statement and portal.
pub fn run_unnamed(sql: &str, params: &[&str]) -> Vec<u8> {
    [parse("", sql), bind("", params), execute()].concat()
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

/// Bind of the unnamed portal with text parameters (None: NULL) and text results.
pub fn bind_text(statement: &str, params: &[Option<String>]) -> Vec<u8> {
    let mut b = Vec::new();
    cstr(&mut b, "");
    cstr(&mut b, statement);
    b.extend_from_slice(&0i16.to_be_bytes());
    b.extend_from_slice(&(params.len() as i16).to_be_bytes());
    for p in params {
        match p {
            None => b.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(v) => {
                b.extend_from_slice(&(v.len() as i32).to_be_bytes());
                b.extend_from_slice(v.as_bytes());
            }
        }
    }
    b.extend_from_slice(&0i16.to_be_bytes());
    msg(b'B', &b)
}

/// Describe of the unnamed portal.
pub fn describe_portal() -> Vec<u8> {
    msg(b'D', b"P\0")
}

pub fn copy_data(data: &[u8]) -> Vec<u8> {
    msg(b'd', data)
}

pub fn copy_done() -> Vec<u8> {
    msg(b'c', &[])
}

pub fn copy_fail(why: &str) -> Vec<u8> {
    let mut b = Vec::new();
    cstr(&mut b, why);
    msg(b'f', &b)
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
                let len = i32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]])
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

    /// Messages up to and including ReadyForQuery (or until the connection closes: the caller
    /// sees no `Z` at the end).
    pub async fn until_ready(&mut self) -> Vec<Msg> {
        let mut out = Vec::new();
        while let Some(m) = self.recv().await {
            let done = m.tag == b'Z';
            out.push(m);
            if done {
                break;
            }
        }
        out
    }

    /// `COPY ... FROM STDIN` as a simple query: the data in CopyData messages of `chunk`
    /// bytes, then CopyDone. The CommandComplete tag, or the error.
    pub async fn copy_in(
        &mut self,
        sql: &str,
        data: &[u8],
        chunk: usize,
    ) -> Result<String, String> {
        self.send(&query(sql)).await;
        let first = self.recv().await.ok_or("connection closed")?;
        match first.tag {
            b'G' => {}
            b'E' => {
                let err = first.error_text();
                self.until_ready().await;
                return Err(err);
            }
            other => return Err(format!("unexpected message {}", other as char)),
        }
        let mut out = Vec::new();
        for piece in data.chunks(chunk.max(1)) {
            out.extend_from_slice(&copy_data(piece));
        }
        out.extend_from_slice(&copy_done());
        self.send(&out).await;
        let msgs = self.until_ready().await;
        if let Some(e) = msgs.iter().find(|m| m.tag == b'E') {
            return Err(e.error_text());
        }
        if msgs.last().map(|m| m.tag) != Some(b'Z') {
            return Err("connection closed".into());
        }
        msgs.iter()
            .find(|m| m.tag == b'C')
            .map(|m| m.text())
            .ok_or_else(|| "no CommandComplete".into())
    }

    /// `COPY ... TO STDOUT` as a simple query: all CopyData bytes and the tag, or the error.
    pub async fn copy_out(&mut self, sql: &str) -> Result<(Vec<u8>, String), String> {
        self.send(&query(sql)).await;
        let msgs = self.until_ready().await;
        if let Some(e) = msgs.iter().find(|m| m.tag == b'E') {
            return Err(e.error_text());
        }
        if msgs.last().map(|m| m.tag) != Some(b'Z') {
            return Err("connection closed".into());
        }
        let mut data = Vec::new();
        for m in msgs.iter().filter(|m| m.tag == b'd') {
            data.extend_from_slice(&m.body);
        }
        let tag = msgs
            .iter()
            .find(|m| m.tag == b'C')
            .map(|m| m.text())
            .unwrap_or_default();
        Ok((data, tag))
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

impl Msg {
    /// The ErrorResponse's severity (`V`, not localized).
    pub fn severity(&self) -> String {
        self.field(b'V').unwrap_or_default()
    }
}

/// Message type bytes separated by spaces, an ErrorResponse as `E` and its SQLSTATE: a
/// transcript to compare with Postgres'.
pub fn tags_and_codes(msgs: &[Msg]) -> String {
    msgs.iter()
        .map(|m| match m.sqlstate() {
            Some(code) if m.tag == b'E' => format!("E{code}"),
            _ => (m.tag as char).to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Message type bytes, for assertion messages.
pub fn tags(msgs: &[Msg]) -> String {
    msgs.iter().map(|m| m.tag as char).collect()
}
