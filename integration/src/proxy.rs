//! A `pgdog` process for tests and scripts: writes its two configuration files, starts the
//! binary on a reserved port, waits until it accepts connections, and stops it when dropped
//! (printing its log if the thread panics).
use crate::error::{Error, IoContext, Result};
use crate::install::{workspace_root, Install};
use crate::lock::{base_dir, lease_port, PortLease};
use crate::wait::wait_until;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The pgdog binary: `$PGDOG_BIN`, else `target/debug/pgdog` (built by `cargo build`).
pub fn binary() -> PathBuf {
    std::env::var_os("PGDOG_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/debug/pgdog"))
}

pub struct Proxy {
    pub port: u16,
    pub dir: PathBuf,
    child: Child,
    install: Install,
    /// The port's lease (None: a second pgdog on another one's port, see `start_alongside`).
    _lease: Option<PortLease>,
}

impl Proxy {
    /// Starts pgdog with `config` (pgdog.toml without host/port, which are added) and `users`.
    pub fn start(config: &str, users: &str) -> Result<Proxy> {
        Proxy::start_with_env(config, users, &[])
    }

    /// [`Proxy::start`] with extra environment variables for pgdog (e.g. `FAILPOINTS` for a
    /// binary built with the `failpoints` feature).
    pub fn start_with_env(config: &str, users: &str, env: &[(&str, &str)]) -> Result<Proxy> {
        let lease = lease_port(&base_dir()?)?;
        let port = lease.port;
        let config_text = general_head(port, config);
        Proxy::start_leased(&config_text, users, env, lease)
    }

    /// Starts pgdog with a complete `config` that listens on 127.0.0.1 and the port of `lease`
    /// (see [`Proxy::lease_port`]).
    pub fn start_complete(config: &str, users: &str, lease: PortLease) -> Result<Proxy> {
        Proxy::start_leased(config, users, &[], lease)
    }

    fn start_leased(
        config_text: &str,
        users: &str,
        env: &[(&str, &str)],
        lease: PortLease,
    ) -> Result<Proxy> {
        let port = lease.port;
        let dir = proxy_dir(port);
        std::fs::create_dir_all(&dir).context(|| format!("creating {}", dir.display()))?;
        std::fs::write(dir.join("pgdog.toml"), config_text)
            .context(|| "writing pgdog.toml".into())?;
        std::fs::write(dir.join("users.toml"), users).context(|| "writing users.toml".into())?;
        let child = spawn(&dir, env)?;
        let proxy = Proxy {
            port,
            dir,
            child,
            install: Install::locate()?,
            _lease: Some(lease),
        };
        proxy.wait_up("pgdog to answer an SSLRequest", |_| {
            answers_ssl_request(port)
        })
    }

    /// Waits up to 30 s for `ready`, failing with pgdog's log as soon as it exits.
    fn wait_up(mut self, what: &str, ready: impl Fn(&Proxy) -> bool) -> Result<Proxy> {
        wait_until(
            what,
            Duration::from_secs(30),
            Duration::from_millis(10),
            || {
                if let Ok(Some(status)) = self.child.try_wait() {
                    return Err(Error::Command {
                        command: "pgdog".into(),
                        status: status.to_string(),
                        stderr: self.log(),
                    });
                }
                Ok(ready(&self))
            },
        )
        .map(|_| self)
    }

    /// A second pgdog with this one's configuration files on the same port (`so_reuseport`),
    /// in a folder and with a log of its own; returns once its handover socket is served.
    pub fn start_alongside(&self, name: &str) -> Result<Proxy> {
        let dir = self.dir.with_file_name(format!(
            "{}-{name}",
            self.dir.file_name().unwrap_or_default().to_string_lossy()
        ));
        std::fs::create_dir_all(&dir).context(|| format!("creating {}", dir.display()))?;
        for file in ["pgdog.toml", "users.toml"] {
            std::fs::copy(self.dir.join(file), dir.join(file))
                .context(|| format!("copying {file}"))?;
        }
        let child = spawn(&dir, &[])?;
        let socket = std::env::temp_dir().join(format!(
            "pgdog-127.0.0.1-{}.{}.handover",
            self.port,
            child.id()
        ));
        let proxy = Proxy {
            port: self.port,
            dir,
            child,
            install: Install::locate()?,
            _lease: None,
        };
        proxy.wait_up("the second pgdog's handover socket", |_| socket.exists())
    }

    /// A libpq URL for `user`:`password` on database `db`.
    pub fn url(&self, user: &str, password: &str, db: &str) -> String {
        format!(
            "postgres://{user}:{password}@127.0.0.1:{}/{db}?sslmode=disable",
            self.port
        )
    }

    /// A tokio-postgres / libpq keyword connection string.
    pub fn conninfo(&self, user: &str, password: &str, db: &str) -> String {
        format!(
            "host=127.0.0.1 port={} user={user} password={password} dbname={db} sslmode=disable",
            self.port
        )
    }

    /// A `psql` command connected through pgdog.
    pub fn psql_command(&self, user: &str, password: &str, db: &str) -> Command {
        let mut cmd = self.install.psql(self.port);
        cmd.args(["-U", user, "-d", db]).env("PGPASSWORD", password);
        cmd
    }

    /// Runs `sql` through pgdog with psql; the output, trimmed.
    pub fn psql(&self, user: &str, password: &str, db: &str, sql: &str) -> Result<String> {
        let out = crate::install::run(self.psql_command(user, password, db).arg("-c").arg(sql))?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Sends SIGHUP (configuration reload).
    pub fn reload(&self) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGHUP) };
    }

    /// Rewrites the configuration files (then call `reload`).
    pub fn rewrite(&self, config: &str, users: &str) -> Result<()> {
        let config_text = general_head(self.port, config);
        std::fs::write(self.dir.join("pgdog.toml"), config_text)
            .context(|| "writing pgdog.toml".into())?;
        std::fs::write(self.dir.join("users.toml"), users).context(|| "writing users.toml".into())
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("pgdog.log")).unwrap_or_default()
    }

    /// The process id (for RSS measurements).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (libc::SIGTERM, SIGINT, ...) to pgdog.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on our own child's pid; no memory is touched.
        unsafe { libc::kill(self.child.id() as i32, signal) };
    }

    /// Waits up to `timeout` for pgdog to exit; its exit status.
    pub fn wait_exit(&mut self, timeout: Duration) -> Result<std::process::ExitStatus> {
        let mut status = None;
        wait_until("pgdog to exit", timeout, Duration::from_millis(10), || {
            status = self
                .child
                .try_wait()
                .context(|| "waiting for pgdog".into())?;
            Ok(status.is_some())
        })?;
        status.ok_or_else(|| Error::Timeout {
            what: "pgdog to exit".into(),
            seconds: timeout.as_secs_f64(),
        })
    }

    /// A free port, reserved until the lease is dropped (for a second listener).
    pub fn lease_port() -> Result<PortLease> {
        lease_port(&base_dir()?)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "----- pgdog log ({}) -----\n{}",
                self.dir.display(),
                self.log()
            );
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Whether pgdog on `port` accepts a connection and answers an SSLRequest (`N` or `S`): its
/// accept loop runs, not only its listening socket (which exists before the first health
/// checks, connections queueing in it).
fn answers_ssl_request(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let mut answer = [0u8; 1];
    s.write_all(&[0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]).is_ok()
        && s.read_exact(&mut answer).is_ok()
        && matches!(answer[0], b'N' | b'S')
}

/// Starts the pgdog binary on `dir`'s pgdog.toml and users.toml, logging to `dir`/pgdog.log.
/// `config` (whose first lines are `[general]` keys) under a `[general]` that listens on
/// 127.0.0.1:`port`. With `PGDOG_TEST_WORKERS` set (the test command's second run of the
/// session, pool and two-phase suites), pgdog runs that many worker threads unless the test
/// chose its own `workers`.
fn general_head(port: u16, config: &str) -> String {
    let workers = std::env::var("PGDOG_TEST_WORKERS")
        .ok()
        .filter(|_| {
            !config
                .lines()
                .any(|l| l.trim_start().starts_with("workers"))
        })
        .map(|n| format!("workers = {n}\n"))
        .unwrap_or_default();
    // The Unix-domain socket in the proxy's own folder (removed with it), not in /tmp: a pgdog
    // killed by a test leaves its socket file behind.
    let unix = if config.contains("unix_socket_dir") {
        String::new()
    } else {
        format!("unix_socket_dir = \"{}\"\n", proxy_dir(port).display())
    };
    format!("[general]\nhost = \"127.0.0.1\"\nport = {port}\n{workers}{unix}{config}")
}

/// The folder of the pgdog of `port` started by this process.
fn proxy_dir(port: u16) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("pgdog-proxy-{}-{port}", std::process::id()))
}

fn spawn(dir: &std::path::Path, env: &[(&str, &str)]) -> Result<Child> {
    let log =
        std::fs::File::create(dir.join("pgdog.log")).context(|| "creating pgdog.log".into())?;
    let log2 = log.try_clone().context(|| "cloning log".into())?;
    let bin = binary();
    if !bin.is_file() {
        return Err(Error::InstallNotFound(format!(
            "{} (run `cargo build -p pgdog`)",
            bin.display()
        )));
    }
    Command::new(&bin)
        .arg("--config")
        .arg(dir.join("pgdog.toml"))
        .arg("--users")
        .arg(dir.join("users.toml"))
        .env(
            "RUST_LOG",
            std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
        )
        .envs(env.iter().copied())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log2))
        .spawn()
        .context(|| format!("starting {}", bin.display()))
}
