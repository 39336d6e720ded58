//! Shared helpers for the sharding tests (`sharding_differential`, `sharding_behaviour`):
//! pgdog configuration for N shards, clients, running a statement with the simple or the extended
//! protocol and reading every value as text, comparing result sets, deterministic data.
#![allow(dead_code)]
mod client;
#[allow(unused_imports)]
pub use crate::query_rows::simple_rows;
#[allow(unused_imports)]
pub use client::*;
use std::error::Error as StdError;
use std::fmt::Write as _;
use tokio_postgres::types::{FromSql, ToSql, Type};
use tokio_postgres::{Client, SimpleQueryMessage};
use topology::{Proxy, Topology};

pub const USER: &str = "app";
pub const PASSWORD: &str = "secret";
pub const DB: &str = "app";

pub fn users_toml() -> String {
    format!("[[users]]\nname = \"{USER}\"\ndatabase = \"{DB}\"\npassword = \"{PASSWORD}\"\n")
}

/// `[[sharded_tables]]` lines of table `name` sharded over 3 shards by ranges of `column`:
/// below 0 on shard 0, from 0 to `split` (excluded) on shard 1, the rest on shard 2.
pub fn three_ranges(name: &str, column: &str, split: i64) -> String {
    format!(
        r#"
[[sharded_tables]]
database = "app"
name = "{name}"
column = "{column}"

[[sharded_tables.mapping]]
end = 0
shard = 0

[[sharded_tables.mapping]]
start = 0
end = {split}
shard = 1

[[sharded_tables.mapping]]
start = {split}
shard = 2
"#
    )
}

/// pgdog.toml (without the `[general]` header Proxy::start writes): `general` lines (trust auth
/// unless they say otherwise), one `[[databases]]` entry per shard of `topo`, then `tables`
/// (`[[sharded_tables]]` / `[[omnisharded_tables]]`).
pub fn shard_config(topo: &Topology, general: &str, tables: &str) -> String {
    let mut c = String::new();
    if !general.contains("auth_type") {
        c.push_str("auth_type = \"trust\"\n");
    }
    c.push_str(general);
    c.push('\n');
    for (i, node) in topo.nodes().iter().enumerate() {
        write!(
            c,
            "\n[[databases]]\nname = \"{DB}\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"postgres\"\nuser = \"postgres\"\nshard = {i}\npool_size = 8\n",
            node.port
        )
        .unwrap();
    }
    c.push('\n');
    c.push_str(tables);
    c
}

pub fn start_proxy(topo: &Topology, general: &str, tables: &str) -> Proxy {
    Proxy::start(&shard_config(topo, general, tables), &users_toml()).expect("start pgdog")
}

pub async fn connect_str(conninfo: &str) -> Client {
    let (client, connection) = match tokio_postgres::connect(conninfo, tokio_postgres::NoTls).await
    {
        Ok(c) => c,
        // A reset of the TCP handshake itself (once seen in CI, cause not found): what the
        // sockets of the port looked like, then one more try. A refusal or an error from
        // pgdog still fails the test.
        Err(e) if err_text(&e).contains("error connecting to server: Connection reset") => {
            eprintln!(
                "connect {conninfo}: {}; sockets:\n{}",
                err_text(&e),
                sockets()
            );
            tokio_postgres::connect(conninfo, tokio_postgres::NoTls)
                .await
                .unwrap_or_else(|e| panic!("connect {conninfo} (2nd try): {}", err_text(&e)))
        }
        Err(e) => panic!("connect {conninfo}: {}", err_text(&e)),
    };
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// `ss -tanpo` (every TCP socket of the machine), for a failure report.
fn sockets() -> String {
    std::process::Command::new("ss")
        .arg("-tanpo")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_else(|e| format!("ss: {e}"))
}

/// A client through pgdog.
pub async fn connect_proxy(proxy: &Proxy) -> Client {
    connect_str(&proxy.conninfo(USER, PASSWORD, DB)).await
}

/// A client straight to a server (database `postgres`, user `postgres`, trust).
pub async fn connect_port(port: u16) -> Client {
    connect_str(&format!(
        "host=127.0.0.1 port={port} user=postgres dbname=postgres sslmode=disable"
    ))
    .await
}

/// Rows of table `t` on each shard (by port), read directly.
pub async fn shard_counts(ports: &[u16]) -> Vec<i64> {
    let mut out = Vec::new();
    for port in ports {
        let direct = connect_port(*port).await;
        let n: i64 = direct
            .query_one("SELECT count(*) FROM t", &[])
            .await
            .expect("count")
            .get(0);
        out.push(n);
    }
    out
}

/// An error with its SQLSTATE, message, position and context.
pub fn err_text(err: &tokio_postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => {
            let mut s = format!("{} {}: {}", db.severity(), db.code().code(), db.message());
            if let Some(p) = db.position() {
                write!(s, " (position {p:?})").unwrap();
            }
            if let Some(w) = db.where_() {
                write!(s, " (where: {w})").unwrap();
            }
            s
        }
        None => {
            let mut s = format!("{err}");
            let mut src = err.source();
            while let Some(e) = src {
                write!(s, ": {e}").unwrap();
                src = e.source();
            }
            s
        }
    }
}

pub fn sqlstate(err: &tokio_postgres::Error) -> Option<String> {
    err.as_db_error().map(|e| e.code().code().to_string())
}

/// Message plus context (`where`) of an error: where pgdog and Postgres name COPY lines.
pub fn err_message_and_context(err: &tokio_postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => format!(
            "{} | {} | {}",
            db.message(),
            db.detail().unwrap_or(""),
            db.where_().unwrap_or("")
        ),
        None => err_text(err),
    }
}

/// splitmix64: reproducible pseudo-random values.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

// ---------------------------------------------------------------------------------------------
// Results.

/// One statement's result: column names, rows (every value as text, NULL as None) and the row
/// count of its command tag.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StmtResult {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Option<String>>>,
    pub tag_count: Option<u64>,
}

/// Runs `sql` with the simple protocol; one result per statement.
pub async fn run_simple(
    client: &Client,
    sql: &str,
) -> Result<Vec<StmtResult>, tokio_postgres::Error> {
    let msgs = client.simple_query(sql).await?;
    let mut out = Vec::new();
    let mut cur = StmtResult::default();
    for m in msgs {
        match m {
            SimpleQueryMessage::RowDescription(cols) => {
                cur.columns = cols.iter().map(|c| c.name().to_string()).collect();
            }
            SimpleQueryMessage::Row(row) => {
                if cur.columns.is_empty() {
                    cur.columns = row.columns().iter().map(|c| c.name().to_string()).collect();
                }
                cur.rows.push(
                    (0..row.len())
                        .map(|i| row.get(i).map(str::to_string))
                        .collect(),
                );
            }
            SimpleQueryMessage::CommandComplete(n) => {
                cur.tag_count = Some(n);
                out.push(std::mem::take(&mut cur));
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Runs `sql` with the extended protocol (Parse/Describe, then Bind/Execute with binary
/// results); values decoded from binary to text with [`AnyText`].
pub async fn run_extended(
    client: &Client,
    sql: &str,
    params: &[P],
) -> Result<StmtResult, tokio_postgres::Error> {
    use futures_util::TryStreamExt;
    let st = client.prepare(sql).await?;
    let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(P::as_sql).collect();
    let stream = client
        .query_raw(&st, refs.iter().map(|p| *p as &dyn ToSql))
        .await?;
    futures_util::pin_mut!(stream);
    let mut rows = Vec::new();
    while let Some(row) = stream.try_next().await? {
        let vals: Vec<Option<String>> =
            (0..row.len()).map(|i| row.get::<_, AnyText>(i).0).collect();
        rows.push(vals);
    }
    Ok(StmtResult {
        columns: st.columns().iter().map(|c| c.name().to_string()).collect(),
        rows,
        tag_count: stream.rows_affected(),
    })
}

/// A bind parameter.
#[derive(Debug, Clone)]
pub enum P {
    I64(i64),
    I32(i32),
    T(String),
    B(bool),
    I64s(Vec<i64>),
    NullI64,
    OT(Option<String>),
    OI32(Option<i32>),
    OB(Option<bool>),
}

impl P {
    /// The parameter as text (what libpq would send).
    pub fn text(&self) -> Option<String> {
        fn b(v: bool) -> String {
            (if v { "t" } else { "f" }).to_string()
        }
        match self {
            P::I64(v) => Some(v.to_string()),
            P::I32(v) => Some(v.to_string()),
            P::T(v) => Some(v.clone()),
            P::B(v) => Some(b(*v)),
            P::I64s(v) => Some(format!(
                "{{{}}}",
                v.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            )),
            P::NullI64 => None,
            P::OT(v) => v.clone(),
            P::OI32(v) => v.map(|x| x.to_string()),
            P::OB(v) => v.map(b),
        }
    }

    pub fn as_sql(&self) -> &(dyn ToSql + Sync) {
        static NULL: Option<i64> = None;
        match self {
            P::I64(v) => v,
            P::I32(v) => v,
            P::T(v) => v,
            P::B(v) => v,
            P::I64s(v) => v,
            P::NullI64 => &NULL,
            P::OT(v) => v,
            P::OI32(v) => v,
            P::OB(v) => v,
        }
    }
}

/// Any value as text: binary results decoded per type (integers, floats, bool, numeric, text,
/// timestamps as microseconds, dates as days, arrays of those); anything else as hex.
pub struct AnyText(pub Option<String>);

impl<'a> FromSql<'a> for AnyText {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(AnyText(Some(decode(ty, raw)?)))
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(AnyText(None))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

fn be<const N: usize>(raw: &[u8]) -> Result<[u8; N], Box<dyn StdError + Sync + Send>> {
    raw.get(..N)
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| format!("value of {} bytes, expected {N}", raw.len()).into())
}

fn decode(ty: &Type, raw: &[u8]) -> Result<String, Box<dyn StdError + Sync + Send>> {
    Ok(match *ty {
        Type::INT2 => i16::from_be_bytes(be(raw)?).to_string(),
        Type::INT4 => i32::from_be_bytes(be(raw)?).to_string(),
        Type::INT8 => i64::from_be_bytes(be(raw)?).to_string(),
        Type::OID => u32::from_be_bytes(be(raw)?).to_string(),
        Type::FLOAT4 => format!("{:?}", f32::from_be_bytes(be(raw)?)),
        Type::FLOAT8 => format!("{:?}", f64::from_be_bytes(be(raw)?)),
        Type::BOOL => (if raw.first() == Some(&1) { "t" } else { "f" }).to_string(),
        Type::NUMERIC => numeric(raw)?,
        Type::TEXT | Type::VARCHAR | Type::NAME | Type::BPCHAR | Type::UNKNOWN | Type::JSON => {
            String::from_utf8(raw.to_vec())?
        }
        Type::TIMESTAMPTZ | Type::TIMESTAMP => {
            format!("ts:{}", i64::from_be_bytes(be(raw)?))
        }
        Type::DATE => format!("date:{}", i32::from_be_bytes(be(raw)?)),
        _ => {
            if let tokio_postgres::types::Kind::Array(elem) = ty.kind() {
                return array(elem, raw);
            }
            let mut s = format!("{}:", ty.name());
            for b in raw {
                write!(s, "{b:02x}").unwrap();
            }
            s
        }
    })
}

fn array(elem: &Type, raw: &[u8]) -> Result<String, Box<dyn StdError + Sync + Send>> {
    let ndim = i32::from_be_bytes(be(raw)?);
    if ndim == 0 {
        return Ok("{}".into());
    }
    if ndim != 1 {
        return Ok(format!("array:{ndim}dims"));
    }
    let n = i32::from_be_bytes(be(&raw[12..])?);
    let mut pos = 20;
    let mut items = Vec::new();
    for _ in 0..n {
        let len = i32::from_be_bytes(be(&raw[pos..])?);
        pos += 4;
        if len < 0 {
            items.push("NULL".to_string());
        } else {
            items.push(decode(elem, &raw[pos..pos + len as usize])?);
            pos += len as usize;
        }
    }
    Ok(format!("{{{}}}", items.join(",")))
}

/// Postgres' binary numeric as its text form (what `numeric_out` prints).
pub fn numeric(raw: &[u8]) -> Result<String, Box<dyn StdError + Sync + Send>> {
    let ndigits = i16::from_be_bytes(be(raw)?) as i32;
    let weight = i16::from_be_bytes(be(&raw[2..])?) as i32;
    let sign = u16::from_be_bytes(be(&raw[4..])?);
    let dscale = u16::from_be_bytes(be(&raw[6..])?) as i32;
    match sign {
        0xC000 => return Ok("NaN".into()),
        0xD000 => return Ok("Infinity".into()),
        0xF000 => return Ok("-Infinity".into()),
        _ => {}
    }
    let digits: Vec<i32> = (0..ndigits as usize)
        .map(|i| i16::from_be_bytes([raw[8 + 2 * i], raw[9 + 2 * i]]) as i32)
        .collect();
    let digit = |i: i32| -> i32 {
        if i >= 0 && (i as usize) < digits.len() {
            digits[i as usize]
        } else {
            0
        }
    };
    let mut s = String::new();
    if sign == 0x4000 {
        s.push('-');
    }
    if weight < 0 {
        s.push('0');
    } else {
        for i in 0..=weight {
            if i == 0 {
                write!(s, "{}", digit(i)).unwrap();
            } else {
                write!(s, "{:04}", digit(i)).unwrap();
            }
        }
    }
    if dscale > 0 {
        s.push('.');
        let mut frac = String::new();
        let mut i = weight + 1;
        while (frac.len() as i32) < dscale {
            write!(frac, "{:04}", digit(i)).unwrap();
            i += 1;
        }
        frac.truncate(dscale as usize);
        s.push_str(&frac);
    }
    Ok(s)
}

// ---------------------------------------------------------------------------------------------
// Comparison.

/// How two row lists must agree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Order {
    /// Same rows in the same order (the query orders them totally).
    Exact,
    /// Same rows in any order.
    Multiset,
    /// Same rows in any order, and the listed columns (the ORDER BY keys, with ties) in the
    /// same order.
    Keys(Vec<usize>),
}

fn show_row(r: &[Option<String>]) -> String {
    let cells: Vec<String> = r
        .iter()
        .map(|v| match v {
            Some(s) => format!("{s:?}"),
            None => "NULL".into(),
        })
        .collect();
    format!("({})", cells.join(", "))
}

fn sorted(rows: &[Vec<Option<String>>]) -> Vec<Vec<Option<String>>> {
    let mut v = rows.to_vec();
    v.sort();
    v
}

/// Rows in `a` but not in `b` (multiset difference), at most `max`.
fn missing(a: &[Vec<Option<String>>], b: &[Vec<Option<String>>], max: usize) -> Vec<String> {
    let mut counts = std::collections::HashMap::new();
    for r in b {
        *counts.entry(r).or_insert(0usize) += 1;
    }
    let mut out = Vec::new();
    for r in a {
        match counts.get_mut(r) {
            Some(n) if *n > 0 => *n -= 1,
            _ => {
                if out.len() < max {
                    out.push(show_row(r));
                }
            }
        }
    }
    out
}

/// Why `got` (pgdog) differs from `want` (reference), or None when they agree.
pub fn compare(got: &StmtResult, want: &StmtResult, order: &Order) -> Option<String> {
    let mut why = Vec::new();
    if got.columns != want.columns {
        why.push(format!(
            "columns: pgdog {:?}, reference {:?}",
            got.columns, want.columns
        ));
    }
    if got.tag_count != want.tag_count {
        why.push(format!(
            "command tag row count: pgdog {:?}, reference {:?}",
            got.tag_count, want.tag_count
        ));
    }
    if got.rows.len() != want.rows.len() {
        why.push(format!(
            "row count: pgdog {}, reference {}",
            got.rows.len(),
            want.rows.len()
        ));
    }
    let same_set = sorted(&got.rows) == sorted(&want.rows);
    if !same_set {
        let extra = missing(&got.rows, &want.rows, 8);
        let lost = missing(&want.rows, &got.rows, 8);
        why.push(format!(
            "rows differ: only from pgdog (first {}): {}; only from the reference (first {}): {}",
            extra.len(),
            extra.join(" "),
            lost.len(),
            lost.join(" ")
        ));
    }
    let first_diff = |a: &[Vec<Option<String>>], b: &[Vec<Option<String>>]| {
        a.iter().zip(b).position(|(x, y)| x != y)
    };
    match order {
        Order::Exact if same_set => {
            if let Some(i) = first_diff(&got.rows, &want.rows) {
                let lo = i.saturating_sub(1);
                let hi = (i + 3).min(got.rows.len());
                why.push(format!(
                    "order differs at row {i}: pgdog rows {lo}..{hi}: {}; reference: {}",
                    got.rows[lo..hi]
                        .iter()
                        .map(|r| show_row(r))
                        .collect::<Vec<_>>()
                        .join(" "),
                    want.rows[lo..hi]
                        .iter()
                        .map(|r| show_row(r))
                        .collect::<Vec<_>>()
                        .join(" ")
                ));
            }
        }
        Order::Keys(cols) => {
            let project = |rows: &[Vec<Option<String>>]| -> Vec<Vec<Option<String>>> {
                rows.iter()
                    .map(|r| cols.iter().map(|&c| r.get(c).cloned().flatten()).collect())
                    .collect()
            };
            let (g, w) = (project(&got.rows), project(&want.rows));
            if let Some(i) = first_diff(&g, &w) {
                why.push(format!(
                    "sort keys out of order at row {i}: pgdog {}, reference {}",
                    show_row(&g[i]),
                    show_row(&w[i])
                ));
            }
        }
        _ => {}
    }
    if why.is_empty() {
        None
    } else {
        Some(why.join("\n      "))
    }
}

/// The first rows of a result, for a report.
pub fn preview(r: &StmtResult, n: usize) -> String {
    let rows: Vec<String> = r.rows.iter().take(n).map(|x| show_row(x)).collect();
    format!(
        "{:?} {} rows{}: {}",
        r.columns,
        r.rows.len(),
        r.tag_count
            .map(|n| format!(" (tag {n})"))
            .unwrap_or_default(),
        rows.join(" ")
    )
}

// ---------------------------------------------------------------------------------------------
// COPY helpers.

/// Sends `data` with `COPY ... FROM STDIN`; the row count.
pub async fn copy_in(client: &Client, sql: &str, data: &str) -> Result<u64, tokio_postgres::Error> {
    use futures_util::SinkExt;
    let sink = client.copy_in::<_, bytes::Bytes>(sql).await?;
    futures_util::pin_mut!(sink);
    // Several CopyData messages, split at arbitrary byte offsets (not at line ends).
    let bytes = data.as_bytes();
    let mut start = 0;
    let mut step = 997;
    while start < bytes.len() {
        let end = (start + step).min(bytes.len());
        sink.send(bytes::Bytes::copy_from_slice(&bytes[start..end]))
            .await?;
        start = end;
        step = step * 7 % 4093 + 13;
    }
    sink.as_mut().finish().await
}

/// `COPY ... TO STDOUT`: the whole output.
pub async fn copy_out(client: &Client, sql: &str) -> Result<String, tokio_postgres::Error> {
    use futures_util::TryStreamExt;
    let stream = client.copy_out(sql).await?;
    futures_util::pin_mut!(stream);
    let mut out = Vec::new();
    while let Some(chunk) = stream.try_next().await? {
        out.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Escapes a value for COPY text format (`\N` for NULL).
pub fn copy_text(v: Option<&str>) -> String {
    match v {
        None => "\\N".into(),
        Some(s) => {
            let mut o = String::with_capacity(s.len());
            for c in s.chars() {
                match c {
                    '\\' => o.push_str("\\\\"),
                    '\t' => o.push_str("\\t"),
                    '\n' => o.push_str("\\n"),
                    '\r' => o.push_str("\\r"),
                    c => o.push(c),
                }
            }
            o
        }
    }
}

/// A value for COPY CSV (empty unquoted for NULL, quoted when needed).
pub fn copy_csv(v: Option<&str>) -> String {
    match v {
        None => String::new(),
        Some(s) => {
            if s.is_empty() || s.contains([',', '"', '\n', '\r']) || s.trim() != s {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        }
    }
}

/// A SQL literal (`NULL` or a quoted string).
pub fn lit(v: Option<&str>) -> String {
    match v {
        None => "NULL".into(),
        Some(s) => format!("'{}'", s.replace('\'', "''")),
    }
}

// ---------------------------------------------------------------------------------------------
// A minimal protocol-3 client for what tokio-postgres only does with the extended protocol:
// COPY through a simple Query message.

pub(crate) use crate::wire as raw;

/// libpq's `PQexecParams` on the raw client.
#[allow(async_fn_in_trait)]
pub trait ExecParams {
    async fn exec_params(
        &mut self,
        sql: &str,
        params: &[Option<String>],
    ) -> Result<StmtResult, (String, String)>;
}

impl ExecParams for raw::Conn {
    /// libpq's `PQexecParams`: Parse (no parameter types) / Bind (text parameters, text
    /// results) / Describe portal / Execute / Sync. The result, or `(SQLSTATE, message)`.
    async fn exec_params(
        &mut self,
        sql: &str,
        params: &[Option<String>],
    ) -> Result<StmtResult, (String, String)> {
        let mut out = raw::parse("", sql);
        out.extend_from_slice(&raw::bind_text("", params));
        out.extend_from_slice(&raw::describe_portal());
        out.extend_from_slice(&raw::execute());
        out.extend_from_slice(&raw::sync());
        self.send(&out).await;
        let msgs = self.until_ready().await;
        if msgs.last().map(|m| m.tag) != Some(b'Z') {
            return Err(("08006".into(), "connection closed".into()));
        }
        if let Some(e) = msgs.iter().find(|m| m.tag == b'E') {
            return Err((e.field(b'C').unwrap_or_default(), e.error_text()));
        }
        let mut r = StmtResult::default();
        for m in &msgs {
            match m.tag {
                b'T' => {
                    let n = i16::from_be_bytes([m.body[0], m.body[1]]) as usize;
                    let mut pos = 2;
                    for _ in 0..n {
                        let end = pos + m.body[pos..].iter().position(|&b| b == 0).unwrap();
                        r.columns
                            .push(String::from_utf8_lossy(&m.body[pos..end]).into_owned());
                        pos = end + 1 + 18;
                    }
                }
                b'D' => {
                    let n = i16::from_be_bytes([m.body[0], m.body[1]]) as usize;
                    let mut pos = 2;
                    let mut row = Vec::with_capacity(n);
                    for _ in 0..n {
                        let len = i32::from_be_bytes([
                            m.body[pos],
                            m.body[pos + 1],
                            m.body[pos + 2],
                            m.body[pos + 3],
                        ]);
                        pos += 4;
                        if len < 0 {
                            row.push(None);
                        } else {
                            let v = &m.body[pos..pos + len as usize];
                            row.push(Some(String::from_utf8_lossy(v).into_owned()));
                            pos += len as usize;
                        }
                    }
                    r.rows.push(row);
                }
                b'C' => {
                    r.tag_count = m.text().rsplit(' ').next().and_then(|n| n.parse().ok());
                }
                _ => {}
            }
        }
        Ok(r)
    }
}
