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

/// [`pgdog`] and a client through it that has run each of `setup` in turn (see [`exec_each`]).
pub async fn pgdog_client(
    general: &str,
    pool_size: usize,
    setup: &[&str],
) -> (Topology, Proxy, tokio_postgres::Client) {
    let (topo, proxy) = pgdog(general, pool_size);
    let client = connect(&proxy).await;
    exec_each(&client, setup).await;
    (topo, proxy, client)
}

/// [`pgdog`] and two clients through it, A and B (with a pool of 1 they always share its one
/// server connection).
pub async fn pgdog_pair(
    general: &str,
    pool_size: usize,
) -> (
    Topology,
    Proxy,
    tokio_postgres::Client,
    tokio_postgres::Client,
) {
    let (topo, proxy) = pgdog(general, pool_size);
    let a = connect(&proxy).await;
    let b = connect(&proxy).await;
    (topo, proxy, a, b)
}

/// [`pgdog`] after `setup` ran through a client that has left again: no client is connected.
pub async fn pgdog_after(general: &str, pool_size: usize, setup: &str) -> (Topology, Proxy) {
    let (topo, proxy, client) = pgdog_client(general, pool_size, &[setup]).await;
    drop(client);
    (topo, proxy)
}

/// pgdog in front of the primary of `topo` (see [`config`] and [`users`]).
pub fn start(topo: &Topology, general: &str, pool_size: usize) -> Proxy {
    start_with(&config(topo, general, pool_size), &users(""))
}

/// The password of pgdog's admin database in the tests that turn it on (`admin_password`).
pub const ADMIN_PASSWORD: &str = "admin-pw";

/// A client of pgdog's admin database: user and database `admin`, password [`ADMIN_PASSWORD`].
pub async fn admin(proxy: &Proxy) -> tokio_postgres::Client {
    connect_as(proxy, "admin", ADMIN_PASSWORD, "admin")
        .await
        .unwrap_or_else(|e| panic!("admin login: {}", err_text(&e)))
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
        "{general}\n{}",
        database(topo.primary().port, &format!("pool_size = {pool_size}\n"))
    )
}

/// pgdog.toml lines of one `[[databases]]` entry of database `app` on 127.0.0.1:`port` (the
/// server's `postgres` database, server user `postgres`), then `extra` lines.
pub fn database(port: u16, extra: &str) -> String {
    format!(
        "\n[[databases]]\nname = \"{DB}\"\nhost = \"127.0.0.1\"\nport = {port}\ndatabase_name = \"postgres\"\nuser = \"postgres\"\n{extra}"
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

/// Asserts that `err` carries SQLSTATE `code`; the message shows the whole error.
#[track_caller]
pub fn assert_sqlstate(err: &tokio_postgres::Error, code: &str) {
    assert_eq!(sqlstate(err).as_deref(), Some(code), "{}", err_text(err));
}

#[allow(unused_imports)]
pub use crate::query_rows::simple_rows;

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

/// Runs `sql` (one or more statements, simple protocol), which must succeed.
pub async fn exec(client: &tokio_postgres::Client, sql: &str) {
    client
        .batch_execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {}", err_text(&e)));
}

/// Runs each of `statements` as its own query (one [`exec`] each, in order); all must succeed.
pub async fn exec_each(client: &tokio_postgres::Client, statements: &[&str]) {
    for sql in statements {
        exec(client, sql).await;
    }
}

/// Polls (like [`eventually`]) the single value of `sql` on `client` until `done` accepts it.
pub async fn eventually_value(
    what: &str,
    timeout: std::time::Duration,
    client: &tokio_postgres::Client,
    sql: &str,
    done: impl Fn(&str) -> bool,
) {
    eventually(what, timeout, || async { done(&one(client, sql).await) }).await
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
pub(crate) use crate::wire as raw;

/// An error with its server message and SQLSTATE (tokio-postgres' Display says only "db error").
pub fn err_text(err: &tokio_postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => format!("{} {}: {}", db.severity(), db.code().code(), db.message()),
        None => format!("{err} ({err:?})"),
    }
}

/// Runs `openssl` with `args` in `dir`; panics with its error output when it fails.
pub fn openssl(dir: &std::path::Path, args: &[&str]) {
    let mut cmd = std::process::Command::new("openssl");
    cmd.current_dir(dir).args(args);
    run_ok(&mut cmd, &format!("openssl {args:?}"));
}

/// Runs `cmd` to its end; it must succeed (the panic shows `what` and its standard error).
pub fn run_ok(cmd: &mut std::process::Command, what: &str) -> std::process::Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A self-signed certificate `{name}.crt` with its key `{name}.key` in `dir`, for `subject`
/// (like `/CN=localhost`), valid `days` days.
pub fn self_signed(dir: &std::path::Path, name: &str, subject: &str, days: u32) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            &days.to_string(),
            "-subj",
            subject,
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.crt"),
        ],
    );
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

/// What background query tasks share with the test: every outcome with its time, and the flag
/// that tells them to stop (clones share both).
pub struct LoadLog<T> {
    entries: std::sync::Arc<std::sync::Mutex<Vec<(std::time::Instant, T)>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl<T> Clone for LoadLog<T> {
    fn clone(&self) -> Self {
        LoadLog {
            entries: self.entries.clone(),
            stop: self.stop.clone(),
        }
    }
}

impl<T> Default for LoadLog<T> {
    fn default() -> Self {
        LoadLog {
            entries: Default::default(),
            stop: Default::default(),
        }
    }
}

impl<T: Clone> LoadLog<T> {
    /// An empty log; the tasks run until [`LoadLog::finish`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the tasks should go on.
    pub fn running(&self) -> bool {
        !self.stop.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Logs one outcome, timed now.
    pub fn push(&self, outcome: T) {
        let now = std::time::Instant::now();
        self.entries.lock().unwrap().push((now, outcome));
    }

    /// The outcomes logged so far, with their times.
    pub fn snapshot(&self) -> Vec<(std::time::Instant, T)> {
        self.entries.lock().unwrap().clone()
    }

    /// Polls (like [`eventually`]) until at least `n` outcomes logged after `since` are `ok`.
    pub async fn until(
        &self,
        what: &str,
        timeout: std::time::Duration,
        since: std::time::Instant,
        n: usize,
        ok: impl Fn(&T) -> bool,
    ) {
        eventually(what, timeout, || async {
            let entries = self.entries.lock().unwrap();
            entries.iter().filter(|e| e.0 > since && ok(&e.1)).count() >= n
        })
        .await
    }

    /// Stops the tasks, waits for each of `tasks` to end (none may have panicked) and returns
    /// the outcomes logged after `since`, in order.
    pub async fn finish(
        &self,
        tasks: Vec<tokio::task::JoinHandle<()>>,
        since: std::time::Instant,
    ) -> Vec<T> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in tasks {
            t.await.unwrap();
        }
        let entries = self.entries.lock().unwrap();
        entries
            .iter()
            .filter(|e| e.0 > since)
            .map(|e| e.1.clone())
            .collect()
    }
}

/// `integration/clients/NAME` run with the venv's Python: its output, and whether it passed.
pub fn python_client(name: &str, args: &[&str]) -> (bool, String) {
    let python = concat!(env!("CARGO_MANIFEST_DIR"), "/../.venv/bin/python3");
    let script = format!("{}/clients/{name}", env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new(python)
        .arg(&script)
        .args(args)
        .output()
        .expect("python3 of .venv (run scripts/provision.sh)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// The SQLSTATE and message of a login through pgdog that must be refused.
pub async fn login_refusal(
    proxy: &Proxy,
    user: &str,
    password: &str,
    db: &str,
) -> (String, String) {
    match connect_as(proxy, user, password, db).await {
        Ok(_) => panic!("{user}/{password} logged in\n{}", proxy.log()),
        Err(e) => {
            let db = e.as_db_error().unwrap_or_else(|| panic!("{e:?}"));
            (db.code().code().to_string(), db.message().to_string())
        }
    }
}

/// Puts `lines` at the top of the primary's pg_hba.conf and reloads it.
pub fn server_hba_first(topo: &Topology, lines: &str) {
    let path = topo.primary().data_dir().join("pg_hba.conf");
    let old = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{lines}\n{old}")).unwrap();
    assert_eq!(topo.primary().psql("SELECT pg_reload_conf()").unwrap(), "t");
}

/// Waits until the primary refuses `user` with a wrong password (it has read rules that
/// check the password).
pub async fn until_server_checks_password(topo: &Topology, user: &str) {
    let direct = topo
        .primary()
        .url("postgres")
        .replace("postgres@", &format!("{user}:wrong@"));
    eventually(
        &format!("the server to require {user}'s password"),
        std::time::Duration::from_secs(10),
        || async {
            tokio_postgres::connect(&direct, tokio_postgres::NoTls)
                .await
                .is_err()
        },
    )
    .await;
}

/// A client whose notices and notifications arrive on a channel.
pub async fn connect_with_messages(
    proxy: &topology::Proxy,
) -> (
    tokio_postgres::Client,
    tokio::sync::mpsc::UnboundedReceiver<tokio_postgres::AsyncMessage>,
) {
    let (client, mut connection) =
        tokio_postgres::connect(&proxy.conninfo(USER, PASSWORD, DB), tokio_postgres::NoTls)
            .await
            .unwrap();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(m)) = futures_util::StreamExt::next(&mut messages).await {
            if tx.send(m).is_err() {
                break;
            }
        }
    });
    (client, rx)
}
