//! One PostgreSQL server of a topology: its folder, port, settings, start, stop and logs.
use crate::error::{IoContext, Result};
use crate::install::{run, Install};
use crate::lock::PortLease;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Settings every test server gets: fast (no durability) and ready for logical replication.
const TEST_SETTINGS: &str = "\
listen_addresses = '127.0.0.1'
fsync = off
synchronous_commit = off
wal_writer_delay = '10ms'
full_page_writes = off
wal_level = logical
max_wal_senders = 16
max_replication_slots = 16
hot_standby_feedback = on
wal_keep_size = '256MB'
max_connections = 300
max_prepared_transactions = 32
log_line_prefix = '%m [%p] %q%a '
";

/// A server of a topology. Dropping it does not stop it: the [`crate::Topology`] does.
#[derive(Debug)]
pub struct Node {
    pub name: String,
    pub port: u16,
    /// Holds `data/`, `server.log` and the Unix socket.
    pub dir: PathBuf,
    pub(crate) install: Install,
    pub(crate) _lease: PortLease,
}

impl Node {
    pub(crate) fn new(
        name: &str,
        run_dir: &Path,
        install: &Install,
        lease: PortLease,
    ) -> Result<Node> {
        let dir = run_dir.join(name);
        std::fs::create_dir_all(&dir).context(|| format!("creating {}", dir.display()))?;
        install.chown(&dir)?;
        Ok(Node {
            name: name.to_string(),
            port: lease.port,
            dir,
            install: install.clone(),
            _lease: lease,
        })
    }

    pub fn host(&self) -> &'static str {
        "127.0.0.1"
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    /// A libpq URL for database `db` as the superuser `postgres`.
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/{db}?sslmode=disable",
            self.port
        )
    }

    /// Appends the test settings, this node's port and socket folder, and `extra` to its
    /// postgresql.conf (later lines win).
    pub(crate) fn configure(&self, extra: &str) -> Result<()> {
        let conf = self.data_dir().join("postgresql.conf");
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&conf)
            .context(|| format!("opening {}", conf.display()))?;
        write!(
            file,
            "\n# pgdog test topology\n{TEST_SETTINGS}port = {}\nunix_socket_directories = '{}'\n{extra}",
            self.port,
            self.dir.display()
        )
        .context(|| format!("writing {}", conf.display()))
    }

    /// Starts the server and waits until it accepts connections.
    pub fn start(&self) -> Result<()> {
        let mut cmd = self.install.server_command("pg_ctl", &self.dir);
        cmd.arg("-D").arg(self.data_dir());
        cmd.arg("-l").arg(self.log_path());
        cmd.args(["-w", "-t", "60", "start"]);
        run(&mut cmd).map(|_| ())
    }

    /// Immediate shutdown; waits until the server has exited.
    pub fn stop(&self) -> Result<()> {
        if !self.data_dir().join("postmaster.pid").exists() {
            return Ok(());
        }
        let mut cmd = self.install.server_command("pg_ctl", &self.dir);
        cmd.arg("-D").arg(self.data_dir());
        cmd.args(["-m", "immediate", "-w", "-t", "30", "stop"]);
        run(&mut cmd).map(|_| ())
    }

    /// A `psql` command connected to database `db` of this node: no psqlrc, unaligned tuples only,
    /// stops at the first error.
    pub fn psql_command(&self, db: &str) -> Command {
        let mut cmd = self.install.psql(self.port);
        cmd.args(["-U", "postgres", "-d", db])
            .env_remove("PGPASSWORD");
        cmd
    }

    /// Runs `sql` (one or more statements) in database `db`; returns the output, trimmed.
    pub fn psql_db(&self, db: &str, sql: &str) -> Result<String> {
        let out = run(self.psql_command(db).arg("-c").arg(sql))?;
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Runs `sql` in database `postgres`.
    pub fn psql(&self, sql: &str) -> Result<String> {
        self.psql_db("postgres", sql)
    }

    /// The server log so far (empty if there is none yet).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }
}
