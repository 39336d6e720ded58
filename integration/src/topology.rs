//! Topologies: `single`, `shards(N)` and `replicated` (primary + streaming standby), as guards.
use crate::error::{Error, IoContext, Result};
use crate::install::{run, Install};
use crate::janitor;
use crate::lock::{base_dir, lease_port, lock, try_lock};
use crate::node::Node;
use crate::wait::wait_until;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// What a topology is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One server, `pg`.
    Single,
    /// N independent servers, `shard0` .. `shard{N-1}`.
    Shards(usize),
    /// `primary` with `wal_level=logical` and `standby` streaming from it through the physical
    /// slot `standby1`, `hot_standby_feedback=on`: ready for logical slots on the standby.
    Replicated,
    /// `primary` and N streaming standbys `replica1` .. `replicaN` (physical slots of the same
    /// names): a primary with read replicas, and failover by promoting one.
    Replicas(usize),
    /// N shards `shard0` .. of which the first K have one streaming standby each
    /// (`shard0_replica` ...): `ShardReplicas(n, k)`.
    ShardReplicas(usize, usize),
}

impl Kind {
    /// Every node name, and for standbys the node they stream from.
    fn layout(self) -> Vec<(String, Option<String>)> {
        match self {
            Kind::Single => vec![("pg".into(), None)],
            Kind::Shards(n) => (0..n).map(|i| (format!("shard{i}"), None)).collect(),
            Kind::Replicated => vec![
                ("primary".into(), None),
                ("standby".into(), Some("primary".into())),
            ],
            Kind::Replicas(n) => std::iter::once(("primary".to_string(), None))
                .chain((1..=n).map(|i| (format!("replica{i}"), Some("primary".to_string()))))
                .collect(),
            Kind::ShardReplicas(n, k) => (0..n)
                .flat_map(|i| {
                    let standby =
                        (i < k).then(|| (format!("shard{i}_replica"), Some(format!("shard{i}"))));
                    std::iter::once((format!("shard{i}"), None)).chain(standby)
                })
                .collect(),
        }
    }
}

/// Running servers; stopped and removed on drop (their logs printed first if the thread panics).
#[derive(Debug)]
pub struct Topology {
    pub kind: Kind,
    nodes: Vec<Node>,
    run_dir: PathBuf,
    install: Install,
    lock_path: PathBuf,
    _lock: File,
}

static RUN_COUNTER: AtomicUsize = AtomicUsize::new(0);

impl Topology {
    pub fn single() -> Result<Topology> {
        Topology::start(Kind::Single)
    }

    pub fn shards(n: usize) -> Result<Topology> {
        Topology::start(Kind::Shards(n))
    }

    pub fn replicated() -> Result<Topology> {
        Topology::start(Kind::Replicated)
    }

    /// Creates and starts a topology of `kind`.
    pub fn start(kind: Kind) -> Result<Topology> {
        let install = Install::locate()?;
        let base = base_dir()?;
        janitor::sweep(&base)?;
        let template = template(&install, &base)?;

        let id = format!(
            "{}-{}",
            std::process::id(),
            RUN_COUNTER.fetch_add(1, Ordering::SeqCst)
        );
        let lock_path = base.join("runs").join(format!("{id}.lock"));
        let run_lock = try_lock(&lock_path)?.ok_or_else(|| Error::Io {
            what: format!("locking new run {}", lock_path.display()),
            source: std::io::Error::from(std::io::ErrorKind::WouldBlock),
        })?;
        let run_dir = base.join("runs").join(&id);
        std::fs::create_dir_all(&run_dir).context(|| format!("creating {}", run_dir.display()))?;

        let layout = kind.layout();
        let names: Vec<String> = layout.iter().map(|(n, _)| n.clone()).collect();
        let mut topo = Topology {
            kind,
            nodes: Vec::new(),
            run_dir,
            install: install.clone(),
            lock_path,
            _lock: run_lock,
        };
        for name in &names {
            let lease = lease_port(&base)?;
            topo.nodes
                .push(Node::new(name, &topo.run_dir, &install, lease)?);
        }

        // Clone the template for every node that is not a standby, then start them together.
        let is_standby = |name: &str| layout.iter().any(|(n, from)| n == name && from.is_some());
        let primaries: Vec<&Node> = topo.nodes.iter().filter(|n| !is_standby(&n.name)).collect();
        for node in &primaries {
            let mut cp = std::process::Command::new("cp");
            cp.arg("-a").arg(&template).arg(node.data_dir());
            run(&mut cp)?;
            node.configure("")?;
        }
        std::thread::scope(|s| {
            let handles: Vec<_> = primaries.iter().map(|n| s.spawn(|| n.start())).collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::Panicked("starting a server".into())))
                })
                .collect::<Result<Vec<()>>>()
        })?;

        for (name, from) in &layout {
            if let Some(from) = from {
                let slot = if kind == Kind::Replicated {
                    "standby1"
                } else {
                    name.as_str()
                };
                topo.start_standby(topo.node(from)?, topo.node(name)?, slot)?;
            }
        }
        Ok(topo)
    }

    fn start_standby(&self, primary: &Node, standby: &Node, slot: &str) -> Result<()> {
        let mut cmd = self.install.server_command("pg_basebackup", &standby.dir);
        cmd.args([
            "-h",
            "127.0.0.1",
            "-U",
            "postgres",
            "-R",
            "-X",
            "stream",
            "-C",
            "-S",
            slot,
        ])
        .args(["-c", "fast", "--no-sync", "-p"])
        .arg(primary.port.to_string())
        .arg("-D")
        .arg(standby.data_dir());
        run(&mut cmd)?;
        standby.configure("")?;
        standby.start()?;
        wait_until(
            "the standby to stream",
            Duration::from_secs(30),
            Duration::from_millis(20),
            || Ok(standby.psql("SELECT status FROM pg_stat_wal_receiver")? == "streaming"),
        )
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    pub fn install(&self) -> &Install {
        &self.install
    }

    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    /// The node called `name`.
    pub fn node(&self, name: &str) -> Result<&Node> {
        self.nodes
            .iter()
            .find(|n| n.name == name)
            .ok_or_else(|| Error::NoSuchNode(self.run_dir.clone(), name.into()))
    }

    /// The first node: `pg`, `shard0` or `primary`.
    pub fn primary(&self) -> &Node {
        &self.nodes[0]
    }

    /// The standby of a `replicated` topology (panics on other kinds: a test bug).
    pub fn standby(&self) -> &Node {
        assert_eq!(
            self.kind,
            Kind::Replicated,
            "only a replicated topology has a standby"
        );
        &self.nodes[1]
    }

    /// Shard `i` of a `shards(N)` or `ShardReplicas(N)` topology (panics if out of range: a
    /// test bug).
    pub fn shard(&self, i: usize) -> &Node {
        match self.kind {
            Kind::Shards(n) if i < n => &self.nodes[i],
            Kind::ShardReplicas(n, _) if i < n => self
                .nodes
                .iter()
                .find(|node| node.name == format!("shard{i}"))
                .expect("every shard has a node"),
            _ => panic!("no shard {i} in {:?}", self.kind),
        }
    }

    /// Promotes a standby to primary (`pg_ctl promote`, waiting until it accepts writes).
    pub fn promote(&self, node: &Node) -> Result<()> {
        let mut cmd = self.install.server_command("pg_ctl", &node.dir);
        cmd.arg("-D")
            .arg(node.data_dir())
            .args(["-w", "-t", "60", "promote"]);
        run(&mut cmd).map(|_| ())
    }

    /// Waits until the standby has replayed everything the primary has written so far.
    pub fn wait_for_standby(&self, timeout: Duration) -> Result<()> {
        self.wait_for_replay(self.standby(), timeout)
    }

    /// Waits until `standby` has replayed everything the primary has written so far.
    pub fn wait_for_replay(&self, standby: &Node, timeout: Duration) -> Result<()> {
        let lsn = self.primary().psql("SELECT pg_current_wal_insert_lsn()")?;
        wait_until(
            "the standby to replay the primary's WAL",
            timeout,
            Duration::from_millis(10),
            || {
                Ok(standby.psql(&format!(
                    "SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn"
                ))? == "t")
            },
        )
    }

    /// Creates logical slot `slot` with `plugin` on the standby; returns its consistent LSN.
    ///
    /// Creation on a standby waits for a running-xacts record from the primary, which an idle
    /// primary writes rarely, so the primary is nudged with `pg_log_standby_snapshot()` every
    /// 50 ms while the create waits. The create runs under `statement_timeout = deadline`, so the
    /// server really gives up at the deadline instead of creating the slot later.
    pub fn create_standby_slot(
        &self,
        slot: &str,
        plugin: &str,
        deadline: Duration,
    ) -> Result<String> {
        let sql = format!(
            "SET statement_timeout = {}; SELECT lsn FROM pg_create_logical_replication_slot('{slot}', '{plugin}')",
            deadline.as_millis()
        );
        let mut cmd = self.standby().psql_command("postgres");
        cmd.arg("-c")
            .arg(&sql)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = cmd
            .spawn()
            .context(|| "starting psql for the slot".into())?;
        let mut guard = KillOnDrop(Some(child));
        let start = Instant::now();
        while let Some(running) = guard.0.as_mut() {
            if running
                .try_wait()
                .context(|| "waiting for psql".into())?
                .is_some()
            {
                break;
            }
            self.primary().psql("SELECT pg_log_standby_snapshot()")?;
            if start.elapsed() > deadline + Duration::from_secs(10) {
                return Err(Error::Timeout {
                    what: format!("logical slot {slot} on the standby"),
                    seconds: start.elapsed().as_secs_f64(),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let Some(child) = guard.0.take() else {
            unreachable!("the child is only taken here");
        };
        let out = child.wait_with_output().context(|| "reading psql".into())?;
        if !out.status.success() {
            return Err(Error::Command {
                command: format!("psql -c \"{sql}\""),
                status: out.status.to_string(),
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Every node's server log, each under a header.
    pub fn logs(&self) -> String {
        let mut all = String::new();
        for node in &self.nodes {
            all.push_str(&format!(
                "----- {} (port {}) {} -----\n{}",
                node.name,
                node.port,
                node.log_path().display(),
                node.log()
            ));
        }
        all
    }

    /// Environment variables describing the topology, for shell scripts.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env = vec![
            (
                "PGDOG_TOPOLOGY_DIR".to_string(),
                self.run_dir.display().to_string(),
            ),
            (
                "PG_BIN".to_string(),
                self.install.bin_dir().display().to_string(),
            ),
            (
                "PG_NODES".to_string(),
                self.nodes
                    .iter()
                    .map(|n| n.name.as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
        ];
        for node in &self.nodes {
            let key = node.name.to_uppercase();
            env.push((format!("PG_{key}_PORT"), node.port.to_string()));
            env.push((format!("PG_{key}_URL"), node.url("postgres")));
        }
        env
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        if std::thread::panicking() || std::env::var_os("PGDOG_TOPOLOGY_LOGS").is_some() {
            eprintln!("{}", self.logs());
        }
        // Standby first so it does not log the primary going away; the rest in parallel.
        std::thread::scope(|s| {
            for node in self.nodes.iter().rev() {
                s.spawn(move || {
                    if let Err(e) = node.stop() {
                        eprintln!("stopping {}: {e}", node.name);
                    }
                });
            }
        });
        if std::env::var_os("PGDOG_KEEP_TOPOLOGY").is_some() {
            eprintln!("kept {}", self.run_dir.display());
            return;
        }
        janitor::kill_servers(&self.run_dir);
        let _ = std::fs::remove_dir_all(&self.run_dir);
        let _ = std::fs::remove_file(&self.lock_path);
    }
}

/// The cluster every node is copied from: `initdb` once per install, reused by every run.
fn template(install: &Install, base: &Path) -> Result<PathBuf> {
    let key = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        install.bin_dir().hash(&mut h);
        format!("{:016x}", h.finish())
    };
    let dir = base.join(format!("template-{key}"));
    if dir.join("PG_VERSION").exists() {
        return Ok(dir);
    }
    let _guard = lock(&base.join("template.lock"))?;
    if dir.join("PG_VERSION").exists() {
        return Ok(dir);
    }
    let tmp = base.join(format!("template-{key}.tmp"));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).context(|| format!("creating {}", tmp.display()))?;
    install.chown(&tmp)?;
    let mut cmd = install.server_command("initdb", base);
    cmd.arg("-D").arg(&tmp);
    cmd.args([
        "-U",
        "postgres",
        "--auth=trust",
        "--locale=C.UTF-8",
        "--encoding=UTF8",
        "-N",
    ]);
    run(&mut cmd)?;
    std::fs::rename(&tmp, &dir)
        .context(|| format!("renaming {} to {}", tmp.display(), dir.display()))?;
    Ok(dir)
}

/// Kills a child process if it is still running when dropped (an early return or panic).
struct KillOnDrop(Option<Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
