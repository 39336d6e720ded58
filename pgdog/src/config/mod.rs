//! Configuration: `pgdog.toml` (general settings and databases) and `users.toml` (who may log in
//! to which database), their defaults and validation. Names follow PgDog's so users can bring
//! their files. Owns parsing and checking only; applying a reload is the pools' business.
//! `[general] admin_*` and `pause_timeout` configure the admin database (see `crate::admin`).
use serde::{Deserialize, Serialize};

mod dry_run;
mod flags;
pub mod hba;
mod mirroring;
mod overrides;
pub mod pgbouncer;
mod resharding;
mod restart;
mod sharding;
mod size;
mod validate;
pub use flags::{cache_unnamed_statements, client_clocks, pin_unknown_functions};
pub use mirroring::{MirrorLevel, Mirroring};
pub use overrides::{ClientClocks, PoolConfig};
pub use resharding::{CopyFormat as ReshardCopyFormat, Peer, Resharding};
pub use restart::restart_only_changes;
pub use sharding::{
    BucketMap, DataType, Mapping, MappingValue, OmnishardedTables, PrimaryKey, ShardedSchema,
    ShardedTable,
};
pub use size::Size;
use std::path::{Path, PathBuf};
pub use validate::MAX_PEER_ID;

/// What went wrong reading the configuration; the message names the file, key and line.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// Transaction, session or statement pooling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum PoolerMode {
    #[default]
    Transaction,
    Session,
    /// PgBouncer's statement pooling: transaction pooling where a statement that leaves a
    /// transaction open ends the client (08P01).
    Statement,
}

/// How clients authenticate to pgdog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum AuthType {
    #[default]
    Scram,
    Md5,
    Plain,
    Trust,
}

/// A server's role: fixed, or `auto` (read from `pg_is_in_recovery()` at every health check,
/// so a promoted standby takes writes without a reload).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default, Hash)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    #[default]
    Primary,
    Replica,
    Auto,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Primary => "primary",
            Role::Replica => "replica",
            Role::Auto => "auto",
        }
    }
}

/// How reads are spread over a shard's healthy replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LoadBalancingStrategy {
    #[default]
    RoundRobin,
    Random,
    LeastActiveConnections,
}

/// Whether the primary also serves reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ReadWriteSplit {
    IncludePrimary,
    #[default]
    ExcludePrimary,
}

/// What counts as a read: `conservative` also requires every function called to be known
/// read-only; `aggressive` trusts any plain SELECT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ReadWriteStrategy {
    #[default]
    Conservative,
    Aggressive,
}

/// TLS towards servers, as libpq's sslmode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum ServerTls {
    Disable,
    #[default]
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// Whether clients may connect without TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TlsMode {
    #[default]
    Optional,
    Required,
}

/// Calls of functions pgdog does not know, in transaction mode: pin the client to its server
/// (they may leave session state) or trust them to leave none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum UnknownFunctions {
    #[default]
    Pin,
    Trust,
}

/// `[general]`
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct General {
    pub host: String,
    pub port: u16,
    pub default_pool_size: usize,
    pub min_pool_size: usize,
    /// Transaction or session pooling (`pool_mode`, PgBouncer's name, is accepted too).
    #[serde(alias = "pool_mode")]
    pub pooler_mode: PoolerMode,
    pub auth_type: AuthType,
    /// Milliseconds a client waits for a server connection before getting an error.
    pub checkout_timeout: u64,
    /// Milliseconds an unused server connection is kept (beyond `min_pool_size`).
    pub idle_timeout: u64,
    /// Milliseconds after which a server connection is closed once it is idle.
    pub server_lifetime: u64,
    /// Milliseconds a server connection may sit idle before `server_check_query` runs on it
    /// at its next checkout (PgBouncer's key, in seconds there); 0: before every checkout.
    pub server_check_delay: u64,
    /// PgBouncer's `server_check_query`: `<empty>` sends an empty query, "" turns the check
    /// off, any other text is run.
    pub server_check_query: String,
    /// Milliseconds pools made at login (auth_query and pass-through users, databases served
    /// by the fallback `*`) may go unused before they are dropped (PgBouncer's key, in seconds
    /// there); 0: never.
    pub autodb_idle_timeout: u64,
    /// Milliseconds allowed to open a server connection (TCP and authentication).
    pub connect_timeout: u64,
    /// A server asking for a cleartext password gets it (else the connection fails).
    pub server_allow_cleartext: bool,
    /// TLS to servers: disable, prefer, require, verify-ca, verify-full.
    pub server_tls: ServerTls,
    /// PEM file of the CA that signed the servers' certificates (verify-ca, verify-full).
    pub server_tls_ca: Option<PathBuf>,
    /// Clients must use TLS: `"required"`; `"optional"` accepts plaintext too.
    pub tls_mode: TlsMode,
    pub tls_certificate: Option<PathBuf>,
    pub tls_private_key: Option<PathBuf>,
    /// Largest protocol message accepted from a client, in bytes.
    pub max_message_size: usize,
    /// Parse every query (pooler-level statement checks: temp tables, LISTEN, advisory locks).
    pub query_parser: bool,
    /// Statement run on a server before it goes back to the pool when `query_parser` is off in
    /// transaction mode (pgdog then cannot see session state); empty: none (state may leak).
    pub server_reset_query: String,
    /// Transaction mode: what a call of a function pgdog does not know does.
    pub unknown_functions: UnknownFunctions,
    /// Threads serving clients: 1 is one event loop (current-thread runtime), 0 one per core.
    pub workers: usize,
    /// Cross-shard writes in a transaction commit with two-phase commit.
    pub two_phase_commit: bool,
    /// This pgdog's name in two-phase transaction ids (letters and digits); unset: one is
    /// generated at first start and kept in `pgdog.instance_id` next to pgdog.toml.
    pub instance_id: Option<String>,
    /// Milliseconds between two-phase recovery passes (in-doubt transactions of this instance).
    pub two_phase_recovery_interval: u64,
    /// Name clients connect to for the admin database (PAUSE, RESUME, RELOAD, SHOW ...).
    pub admin_database: String,
    /// User name of the admin database.
    pub admin_user: String,
    /// Password of the admin database; without it the admin database is disabled.
    pub admin_password: Option<String>,
    /// Milliseconds PAUSE waits for transactions in flight before it fails and is undone.
    pub pause_timeout: u64,
    /// How reads are spread over a shard's replicas.
    pub load_balancing_strategy: LoadBalancingStrategy,
    /// Whether the primary serves reads too.
    pub read_write_split: ReadWriteSplit,
    /// Which SELECTs count as reads.
    pub read_write_strategy: ReadWriteStrategy,
    /// A client's reads go to the primary until the replica has replayed its last commit.
    pub read_your_writes: bool,
    /// Milliseconds between health checks of every server.
    pub healthcheck_interval: u64,
    /// Milliseconds a health check (connect and query) may take.
    pub healthcheck_timeout: u64,
    /// Milliseconds a failing server is kept out of rotation.
    pub ban_timeout: u64,
    /// Bytes of WAL a replica may lag behind its primary before it is banned.
    pub max_replica_lag: u64,
    /// Port of the HTTP server for `/metrics` (OpenMetrics) and `/health` (unset: off).
    pub openmetrics_port: Option<u16>,
    /// Address that HTTP server listens on.
    pub openmetrics_host: String,
    /// Milliseconds over which SHOW STATS' `avg_*` columns are computed.
    pub stats_period: u64,
    /// Milliseconds a query may run on a server before pgdog cancels it (57014); 0: no limit.
    pub query_timeout: u64,
    /// Milliseconds a client may stay idle outside a transaction before it is disconnected
    /// (57P05); 0: no limit.
    pub client_idle_timeout: u64,
    /// Milliseconds a client may stay idle inside a transaction before it is disconnected
    /// (25P03) and its transaction rolled back; 0: no limit.
    pub idle_in_transaction_timeout: u64,
    /// Milliseconds a client has for startup, TLS and authentication.
    pub client_login_timeout: u64,
    /// Milliseconds pgdog's own statements on a server (ROLLBACK, DISCARD ALL, settings sync,
    /// two-phase commit) may take before the connection is closed; 0: no limit.
    pub server_query_timeout: u64,
    /// TCP keepalive on client and server sockets.
    pub tcp_keepalive: bool,
    /// Milliseconds of silence before the first keepalive probe.
    pub tcp_keepalive_idle: u64,
    /// Milliseconds between keepalive probes.
    pub tcp_keepalive_interval: u64,
    /// Unanswered probes before the connection is dropped.
    pub tcp_keepalive_count: u32,
    /// Clients connected at once; more get FATAL 53300 at login.
    pub max_client_connections: usize,
    /// Prepared statements kept in the global cache and on each server connection (LRU; the
    /// evicted ones are closed on the server).
    pub prepared_statements_limit: usize,
    /// Transaction mode: a client's unnamed statement is kept prepared on the servers as one
    /// of the global statements above, so a repeated one skips the server's parse.
    pub cache_unnamed_statements: bool,
    /// Parsed query texts kept for routing (LRU).
    pub query_cache_limit: usize,
    /// Simple-protocol query shapes kept (LRU; 0: simple queries go through the text cache).
    pub query_shape_cache_limit: usize,
    /// Memory one cross-shard statement's merge may hold (groups, distinct keys, set-operation
    /// counts, sort buffers, rows waiting to be inserted) before it spills to temporary files.
    pub merge_work_mem: Size,
    /// Memory all merges in flight may hold together; past it they spill sooner, and what
    /// cannot spill gets 53200.
    pub merge_memory_limit: Size,
    /// Where merges spill (unset: the system's temporary directory).
    pub temp_directory: Option<PathBuf>,
    /// Count every statement's route by shape (SHOW ROUTES), as if each database had
    /// `dry_run_shards` shards; statements are served as usual. Per database too.
    pub dry_run: bool,
    /// The planned shard count of the dry run (unset: the database's own).
    pub dry_run_shards: Option<usize>,
    /// Milliseconds SIGTERM / SHUTDOWN waits for transactions in flight before closing clients.
    pub shutdown_timeout: u64,
    /// A user of users.toml as whom pgdog runs `auth_query` to find the secret of a client
    /// that is not in users.toml (unset: only users.toml users log in). Per database too.
    pub auth_user: Option<String>,
    /// The look-up of a user's secret; `$1` is the user name. Returns the name and the secret
    /// (SCRAM verifier or MD5 hash; NULL: no login). Per database too.
    pub auth_query: String,
    /// Milliseconds a secret found by `auth_query` is reused before it is looked up again.
    pub auth_query_cache_ttl: u64,
    /// Milliseconds the look-up (connect and query) may take; a server that is down or slow
    /// fails the login with 08006.
    pub auth_query_timeout: u64,
    /// Access rules in pg_hba.conf format (host, hostssl, hostnossl): the first line matching
    /// the connection decides the method; no match is refused (unset: `auth_type` for all).
    pub auth_hba_file: Option<PathBuf>,
    /// PEM bundle of the CAs whose client certificates pgdog accepts (the `cert` method).
    pub tls_client_ca: Option<PathBuf>,
    /// Server connections to each server of a database, every user's pools together (0: no
    /// cap). A new connection waits for a free slot within `checkout_timeout`.
    pub max_db_connections: usize,
    /// Server connections of each user, every database together (0: no cap).
    pub max_user_connections: usize,
    /// Extra server connections a pool may open for clients that waited `reserve_pool_timeout`
    /// (0: none).
    pub reserve_pool_size: usize,
    /// Milliseconds a client waits before its pool may use its reserve (below
    /// `checkout_timeout`; PgBouncer's 5 s default is under its 120 s query_wait_timeout).
    pub reserve_pool_timeout: u64,
    /// Milliseconds, sent to the servers as the `statement_timeout` startup parameter (0: not
    /// sent, the server's own setting applies).
    pub statement_timeout: u64,
    /// Milliseconds, sent to the servers as Postgres' `transaction_timeout` startup parameter
    /// (0: not sent): a transaction open longer ends its session there, FATAL 25P04.
    pub transaction_timeout: u64,
    /// Server sessions start with `default_transaction_read_only = on`, and pgdog refuses
    /// statements that would turn it off (25006).
    pub read_only: bool,
    /// Listen with SO_REUSEPORT: a second pgdog started with the same configuration shares the
    /// port, and a SIGTERM to the first hands its listening socket and its idle clients over
    /// to it (see `crate::ops::handover`).
    pub so_reuseport: bool,
    /// Folder of the handover sockets of the pgdogs sharing a port (unset: the system's
    /// temporary folder).
    pub handover_dir: Option<PathBuf>,
    /// Folder of the Unix-domain socket `.s.PGSQL.<port>` clients may connect to, next to TCP
    /// (PgBouncer's key and default, `/tmp`); empty: none.
    pub unix_socket_dir: String,
    /// The socket file's permissions, in octal (`0777`).
    pub unix_socket_mode: String,
    /// The socket file's group, by name (empty: the process' group).
    pub unix_socket_group: String,
    /// PgBouncer's `track_extra_parameters`: accepted for its configurations. pgdog follows
    /// every parameter a client SETs and every one the server reports (GUC_REPORT) anyway.
    pub track_extra_parameters: Vec<String>,
    /// `text` or `json` (one object per line).
    pub log_format: String,
    /// A file the log lines are appended to (unset: stderr), reopened at SIGHUP and RELOAD.
    pub logfile: Option<PathBuf>,
    /// Log to syslog too, as `syslog_ident`, facility `syslog_facility`.
    pub syslog: bool,
    pub syslog_ident: String,
    pub syslog_facility: String,
    /// Log each login (PgBouncer's `login attempt` line).
    pub log_connections: bool,
    /// Log each client's end, with the reason (`closing because: ...`).
    pub log_disconnections: bool,
    /// Log the errors pgdog itself sends clients (`pooler error: ...`).
    pub log_pooler_errors: bool,
    /// Log one line of each database's figures every `stats_period`.
    pub log_stats: bool,
    /// This pgdog's number among `[[peers]]` (1 to 32767; 0: none). Its clients' cancel keys
    /// carry it, so a peer that gets one of their CancelRequests forwards it here.
    pub peer_id: u16,
}

/// `[[peers]]`: another pgdog behind the same address (a load balancer, or `so_reuseport`),
/// as PgBouncer's `[peers]`: a CancelRequest for one of its clients is forwarded to it.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CancelPeer {
    pub peer_id: u16,
    #[serde(default = "default_host")]
    pub host: String,
    pub port: u16,
}

/// `[general]` keys that are unset by default (absent from a serialized `General`).
pub const GENERAL_OPTIONAL_KEYS: &[&str] = &[
    "logfile",
    "temp_directory",
    "server_tls_ca",
    "tls_certificate",
    "tls_private_key",
    "instance_id",
    "admin_password",
    "openmetrics_port",
    "auth_user",
    "auth_hba_file",
    "tls_client_ca",
    "handover_dir",
];

/// The name of the fallback database: any database name clients ask for that is not
/// configured is served by the `*` entries' servers (PgBouncer's `* = host=...`).
pub const FALLBACK_DATABASE: &str = "*";

/// PgBouncer's default `auth_query` (1.21 and later).
pub const DEFAULT_AUTH_QUERY: &str = "SELECT rolname, CASE WHEN rolvaliduntil < now() THEN NULL ELSE rolpassword END FROM pg_authid WHERE rolname = $1 AND rolcanlogin";

impl General {
    /// `unix_socket_mode` as permission bits (None: not octal, or beyond 0777).
    pub fn unix_socket_mode_bits(&self) -> Option<u32> {
        u32::from_str_radix(&self.unix_socket_mode, 8)
            .ok()
            .filter(|m| *m <= 0o777)
    }

    /// `server_check_query` as the pools run it: None when the check is off.
    pub fn check_query(&self) -> Option<String> {
        match self.server_check_query.as_str() {
            "" => None,
            "<empty>" => Some(String::new()),
            q => Some(q.to_string()),
        }
    }
}

impl Default for General {
    fn default() -> Self {
        General {
            host: "127.0.0.1".into(),
            port: 6432,
            default_pool_size: 10,
            min_pool_size: 1,
            pooler_mode: PoolerMode::Transaction,
            auth_type: AuthType::Scram,
            checkout_timeout: 5_000,
            idle_timeout: 60_000,
            server_lifetime: 86_400_000,
            server_check_delay: 30_000,
            server_check_query: "<empty>".into(),
            autodb_idle_timeout: 3_600_000,
            connect_timeout: 5_000,
            server_allow_cleartext: false,
            server_tls: ServerTls::Prefer,
            server_tls_ca: None,
            tls_mode: TlsMode::Optional,
            tls_certificate: None,
            tls_private_key: None,
            max_message_size: 256 << 20,
            query_parser: true,
            server_reset_query: "DISCARD ALL".into(),
            unknown_functions: UnknownFunctions::Pin,
            workers: 1,
            two_phase_commit: false,
            instance_id: None,
            two_phase_recovery_interval: 10_000,
            admin_database: "admin".into(),
            admin_user: "admin".into(),
            admin_password: None,
            pause_timeout: 30_000,
            load_balancing_strategy: LoadBalancingStrategy::RoundRobin,
            read_write_split: ReadWriteSplit::ExcludePrimary,
            read_write_strategy: ReadWriteStrategy::Conservative,
            read_your_writes: false,
            healthcheck_interval: 5_000,
            healthcheck_timeout: 1_000,
            ban_timeout: 60_000,
            max_replica_lag: 16 << 20,
            openmetrics_port: None,
            openmetrics_host: "127.0.0.1".into(),
            stats_period: 15_000,
            query_timeout: 0,
            client_idle_timeout: 0,
            idle_in_transaction_timeout: 0,
            client_login_timeout: 15_000,
            server_query_timeout: 60_000,
            tcp_keepalive: true,
            tcp_keepalive_idle: 60_000,
            tcp_keepalive_interval: 10_000,
            tcp_keepalive_count: 6,
            max_client_connections: 10_000,
            prepared_statements_limit: 10_000,
            cache_unnamed_statements: true,
            query_cache_limit: 4_096,
            query_shape_cache_limit: 4_096,
            merge_work_mem: Size::mb(64),
            merge_memory_limit: Size::mb(1024),
            temp_directory: None,
            dry_run: false,
            dry_run_shards: None,
            shutdown_timeout: 60_000,
            auth_user: None,
            auth_query: DEFAULT_AUTH_QUERY.into(),
            auth_query_cache_ttl: 60_000,
            auth_query_timeout: 5_000,
            auth_hba_file: None,
            tls_client_ca: None,
            max_db_connections: 0,
            max_user_connections: 0,
            reserve_pool_size: 0,
            reserve_pool_timeout: 1_000,
            statement_timeout: 0,
            transaction_timeout: 0,
            read_only: false,
            so_reuseport: false,
            handover_dir: None,
            unix_socket_dir: "/tmp".into(),
            unix_socket_mode: "0777".into(),
            unix_socket_group: String::new(),
            track_extra_parameters: Vec::new(),
            log_format: "text".into(),
            logfile: None,
            syslog: false,
            syslog_ident: "pgdog".into(),
            syslog_facility: "daemon".into(),
            log_connections: true,
            log_disconnections: true,
            log_pooler_errors: true,
            log_stats: true,
            peer_id: 0,
        }
    }
}

/// `[[databases]]`: one server of a (possibly sharded, replicated) database.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Database {
    pub name: String,
    #[serde(default = "default_host")]
    pub host: String,
    #[serde(default = "default_pg_port")]
    pub port: u16,
    /// The database name on the server (defaults to `name`).
    pub database_name: Option<String>,
    /// Server-side user (defaults to the client's user name); `server_user` is accepted too.
    #[serde(alias = "server_user")]
    pub user: Option<String>,
    /// Server-side password (defaults to the client's plain password from users.toml);
    /// `server_password` is accepted too.
    #[serde(alias = "server_password")]
    pub password: Option<String>,
    #[serde(default)]
    pub role: Role,
    #[serde(default)]
    pub shard: usize,
    /// Pool settings of this database's pools (each overrides `[general]`; a users.toml
    /// entry overrides these, see `Settings::pool_config`).
    pub pool_size: Option<usize>,
    #[serde(alias = "pool_mode")]
    pub pooler_mode: Option<PoolerMode>,
    pub min_pool_size: Option<usize>,
    pub reserve_pool_size: Option<usize>,
    pub server_lifetime: Option<u64>,
    #[serde(alias = "pool_idle_timeout")]
    pub idle_timeout: Option<u64>,
    pub statement_timeout: Option<u64>,
    pub read_only: Option<bool>,
    /// Client timeouts of these pools, ms (PgBouncer's names accepted: `query_wait_timeout`,
    /// `idle_transaction_timeout`).
    #[serde(alias = "query_wait_timeout")]
    pub checkout_timeout: Option<u64>,
    pub query_timeout: Option<u64>,
    #[serde(alias = "idle_transaction_timeout")]
    pub idle_in_transaction_timeout: Option<u64>,
    pub client_idle_timeout: Option<u64>,
    pub transaction_timeout: Option<u64>,
    /// This database's `auth_user` (overrides `[general]`).
    pub auth_user: Option<String>,
    /// This database's `auth_query` (overrides `[general]`).
    pub auth_query: Option<String>,
    /// This database's `max_db_connections` (overrides `[general]`).
    pub max_db_connections: Option<usize>,
    /// This database's `dry_run` and `dry_run_shards` (override `[general]`).
    pub dry_run: Option<bool>,
    pub dry_run_shards: Option<usize>,
}

fn default_host() -> String {
    "127.0.0.1".into()
}

fn default_pg_port() -> u16 {
    5432
}

impl Database {
    pub fn database_name(&self) -> &str {
        self.database_name.as_deref().unwrap_or(&self.name)
    }
}

/// `pgdog.toml`
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub general: General,
    #[serde(default)]
    pub databases: Vec<Database>,
    /// `[[mirroring]]`: databases whose transactions are replayed on another.
    #[serde(default)]
    pub mirroring: Vec<Mirroring>,
    #[serde(default)]
    pub sharded_tables: Vec<ShardedTable>,
    #[serde(default)]
    pub omnisharded_tables: Vec<OmnishardedTables>,
    #[serde(default)]
    pub sharded_schemas: Vec<ShardedSchema>,
    /// `[[bucket_maps]]`: bucket placement of a database's hash-sharded tables.
    #[serde(default)]
    pub bucket_maps: Vec<BucketMap>,
    #[serde(default)]
    pub resharding: Resharding,
    #[serde(default)]
    pub peers: Vec<CancelPeer>,
}

/// `[[users]]` in `users.toml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct User {
    pub name: String,
    pub database: String,
    /// Plain password (needed for MD5 and plain auth, and to log in to servers).
    pub password: Option<String>,
    /// SCRAM-SHA-256 verifier (`pgdog hash <password>` prints one).
    pub password_hash: Option<String>,
    /// More secrets any of which logs in (rotation): plain passwords, SCRAM verifiers or
    /// MD5 hashes (`md5` + md5(password || user)).
    #[serde(default)]
    pub passwords: Vec<String>,
    /// Pool settings of this user's pools (override the database's and `[general]`'s; an
    /// entry with `database = "*"` gives them for every database of the user).
    pub pool_size: Option<usize>,
    #[serde(alias = "pool_mode")]
    pub pooler_mode: Option<PoolerMode>,
    pub min_pool_size: Option<usize>,
    pub reserve_pool_size: Option<usize>,
    pub server_lifetime: Option<u64>,
    #[serde(alias = "pool_idle_timeout")]
    pub idle_timeout: Option<u64>,
    pub statement_timeout: Option<u64>,
    pub read_only: Option<bool>,
    /// Client timeouts of these pools, ms (PgBouncer's names accepted: `query_wait_timeout`,
    /// `idle_transaction_timeout`).
    #[serde(alias = "query_wait_timeout")]
    pub checkout_timeout: Option<u64>,
    pub query_timeout: Option<u64>,
    #[serde(alias = "idle_transaction_timeout")]
    pub idle_in_transaction_timeout: Option<u64>,
    pub client_idle_timeout: Option<u64>,
    pub transaction_timeout: Option<u64>,
    /// Log in to the servers as this role (with `server_password`, else that role's plain
    /// password from users.toml).
    pub server_user: Option<String>,
    pub server_password: Option<String>,
    /// This user's `max_user_connections` (overrides `[general]`).
    pub max_user_connections: Option<usize>,
}

/// `users.toml`
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Users {
    #[serde(default)]
    pub users: Vec<User>,
}

/// Both files, loaded and checked.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub config: Config,
    pub users: Users,
    pub config_path: PathBuf,
    pub users_path: PathBuf,
    /// The rules of `auth_hba_file`, read with the files above.
    pub hba: Option<hba::Hba>,
}

fn read_toml<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.into(),
        source,
    })?;
    toml::from_str(&text).map_err(|e| ConfigError::Parse {
        path: path.into(),
        message: describe_toml_error(&text, &e),
    })
}

/// `file` as given when absolute, else next to the configuration file.
pub fn relative_to(config_path: &Path, file: &Path) -> PathBuf {
    match config_path.parent() {
        Some(dir) if file.is_relative() => dir.join(file),
        _ => file.to_path_buf(),
    }
}

fn read_hba(path: &Path) -> Result<hba::Hba, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.into(),
        source,
    })?;
    hba::Hba::parse(&text).map_err(|message| ConfigError::Invalid {
        path: path.into(),
        message,
    })
}

/// toml's message with the line number spelled out.
fn describe_toml_error(text: &str, e: &toml::de::Error) -> String {
    let msg = e.message().trim().to_string();
    match e.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            let content = text.lines().nth(line - 1).unwrap_or("").trim();
            format!("line {line}: {msg} (`{content}`)")
        }
        None => msg,
    }
}

static ACTIVE: parking_lot::RwLock<Option<std::sync::Arc<General>>> =
    parking_lot::RwLock::new(None);

/// The `[general]` settings in force (the last loaded or installed; defaults before that):
/// what server connections read (TLS, keepalive, timeouts), also in the command-line tools.
pub fn active() -> std::sync::Arc<General> {
    ACTIVE
        .read()
        .clone()
        .unwrap_or_else(|| std::sync::Arc::new(General::default()))
}

/// Makes `general` the settings in force (configuration load, reload, SET).
pub fn set_active(general: &General) {
    flags::store(general);
    *ACTIVE.write() = Some(std::sync::Arc::new(general.clone()));
}

impl Settings {
    /// Reads and validates both files and makes their `[general]` the active one. The checks
    /// that need the sharding code (placements) run above this layer:
    /// `crate::registry::load_settings` is what the entry points call.
    pub fn load(config_path: &Path, users_path: &Path) -> Result<Settings, ConfigError> {
        let settings = Settings::read(config_path, users_path)?;
        settings.activate();
        Ok(settings)
    }

    /// Makes `[general]` the settings every part reads ([`active`]).
    pub fn activate(&self) {
        set_active(&self.config.general);
        // Clocks a database or a user turns on (sessions skip them when none is).
        let db_clocks = self.config.databases.iter().any(|d| {
            [
                d.query_timeout,
                d.idle_in_transaction_timeout,
                d.client_idle_timeout,
            ]
            .iter()
            .any(|t| t.is_some_and(|ms| ms > 0))
        });
        let user_clocks = self.users.users.iter().any(|u| {
            [
                u.query_timeout,
                u.idle_in_transaction_timeout,
                u.client_idle_timeout,
            ]
            .iter()
            .any(|t| t.is_some_and(|ms| ms > 0))
        });
        flags::store_override_clocks(db_clocks || user_clocks);
    }

    /// Reads and validates both files, without activating them.
    pub fn read(config_path: &Path, users_path: &Path) -> Result<Settings, ConfigError> {
        let config: Config = read_toml(config_path)?;
        let users: Users = if users_path.exists() {
            read_toml(users_path)?
        } else {
            Users::default()
        };
        let hba = match &config.general.auth_hba_file {
            Some(file) => Some(read_hba(&relative_to(config_path, file))?),
            None => None,
        };
        let settings = Settings {
            config,
            users,
            config_path: config_path.to_path_buf(),
            users_path: users_path.to_path_buf(),
            hba,
        };
        settings.validate()?;
        Ok(settings)
    }

    /// The checks `load` makes (for settings changed at run time).
    pub fn check(&self) -> Result<(), ConfigError> {
        self.validate()
    }

    /// The user entry for (user, database).
    pub fn user(&self, name: &str, database: &str) -> Option<&User> {
        self.users
            .users
            .iter()
            .find(|u| u.name == name && u.database == database)
    }

    /// The `auth_user` and `auth_query` of a database (its own, else `[general]`'s): `None`
    /// when users of this database come from users.toml only.
    pub fn auth_query(&self, database: &str) -> Option<(&str, &str)> {
        let g = &self.config.general;
        let name = if self.served_by_fallback(database) {
            FALLBACK_DATABASE
        } else {
            database
        };
        let db = self.config.databases.iter().find(|d| d.name == name)?;
        let user = db.auth_user.as_deref().or(g.auth_user.as_deref())?;
        let query = db.auth_query.as_deref().unwrap_or(&g.auth_query);
        Some((user, query))
    }

    /// The users.toml entry whose password runs a database's `auth_query` as `auth_user`:
    /// the entry for that database, else any entry of that name.
    pub fn auth_user_entry(&self, name: &str, database: &str) -> Option<&User> {
        self.user(name, database)
            .or_else(|| self.users.users.iter().find(|u| u.name == name))
    }

    /// Whether `name` is not configured and the fallback database `*` (PgBouncer's `* = ...`)
    /// serves it: the same servers, with `name` as the database on them.
    pub fn served_by_fallback(&self, name: &str) -> bool {
        !self.has_database(name) && self.has_database(FALLBACK_DATABASE)
    }

    /// The servers of one shard of a database: its entries, or for a database the fallback
    /// serves, the `*` entries with `name` as their name and database on the server (unless
    /// `database_name` fixes it).
    pub fn database_hosts(&self, name: &str, shard: usize) -> Vec<Database> {
        if !self.served_by_fallback(name) {
            return self.shard_hosts(name, shard).into_iter().cloned().collect();
        }
        self.shard_hosts(FALLBACK_DATABASE, shard)
            .into_iter()
            .map(|d| Database {
                name: name.to_string(),
                database_name: Some(d.database_name.clone().unwrap_or_else(|| name.to_string())),
                ..d.clone()
            })
            .collect()
    }

    /// A users.toml user whom pgdog can log in to the servers as only with what the client
    /// proves at login (pass-through, as PgBouncer does with auth_file's SCRAM secrets): it
    /// has a SCRAM or MD5 secret but no plain password, and its database no server user or
    /// password of its own. Its pools are made at login.
    pub fn logs_in_as_client(&self, u: &User) -> bool {
        let hashed = u.password_hash.is_some()
            || u.passwords
                .iter()
                .any(|p| p.starts_with("SCRAM-SHA-256$") || crate::auth::md5::is_md5_stored(p));
        let server_user = [Some(u), self.user_wide(u)]
            .into_iter()
            .flatten()
            .any(|u| u.server_user.is_some());
        let own_login = server_user
            || (0..self.shards_served(&u.database)).any(|i| {
                self.database_hosts(&u.database, i)
                    .iter()
                    .any(|d| d.user.is_some() || d.password.is_some())
            });
        u.password.is_none() && hashed && !own_login
    }

    /// The `max_db_connections` of a database (its entries', else `[general]`'s; 0: none).
    pub fn max_db_connections(&self, database: &str) -> usize {
        let name = if self.served_by_fallback(database) {
            FALLBACK_DATABASE
        } else {
            database
        };
        let own = self.config.databases.iter().filter(|d| d.name == name);
        own.filter_map(|d| d.max_db_connections)
            .next()
            .unwrap_or(self.config.general.max_db_connections)
    }

    /// The `max_user_connections` of a user (its users.toml entries', else `[general]`'s).
    pub fn max_user_connections(&self, user: &str) -> usize {
        let own = self.users.users.iter().filter(|u| u.name == user);
        own.filter_map(|u| u.max_user_connections)
            .next()
            .unwrap_or(self.config.general.max_user_connections)
    }

    /// Number of shards of a database, the fallback's for a database it serves.
    pub fn shards_served(&self, name: &str) -> usize {
        if self.served_by_fallback(name) {
            self.shards(FALLBACK_DATABASE)
        } else {
            self.shards(name)
        }
    }

    /// Whether any server is configured under this database name.
    pub fn has_database(&self, name: &str) -> bool {
        self.config.databases.iter().any(|d| d.name == name)
    }

    /// The configured database names, sorted, once each.
    pub fn database_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .config
            .databases
            .iter()
            .map(|d| d.name.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Number of shards of a database (highest `shard` + 1; 0 when it is not configured).
    pub fn shards(&self, name: &str) -> usize {
        self.config
            .databases
            .iter()
            .filter(|d| d.name == name)
            .map(|d| d.shard + 1)
            .max()
            .unwrap_or(0)
    }

    /// Every server of one shard of a database (primary, replicas, auto), in file order.
    pub fn shard_hosts(&self, name: &str, shard: usize) -> Vec<&Database> {
        self.config
            .databases
            .iter()
            .filter(|d| d.name == name && d.shard == shard)
            .collect()
    }

    /// The server of one shard of a database: its primary, else its first entry.
    pub fn shard_server(&self, name: &str, shard: usize) -> Option<&Database> {
        let all: Vec<&Database> = self
            .config
            .databases
            .iter()
            .filter(|d| d.name == name && d.shard == shard)
            .collect();
        all.iter()
            .find(|d| d.role == Role::Primary)
            .or(all.first())
            .copied()
    }

    /// The primary of shard 0 of a database.
    pub fn primary(&self, name: &str) -> Option<&Database> {
        let mut candidates = self.config.databases.iter().filter(|d| d.name == name);
        let all: Vec<&Database> = candidates.by_ref().collect();
        all.iter()
            .find(|d| d.shard == 0 && d.role == Role::Primary)
            .or(all.first())
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scratch::Scratch;

    /// users.toml with user `app` of database `db`.
    const APP_USERS: &str = "[[users]]\nname = \"app\"\ndatabase = \"db\"\npassword = \"pw\"\n";

    #[test]
    fn example_file_is_valid_and_documents_every_general_option() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let example = root.join("pgdog.toml.example");
        let dir = Scratch::new("pgdog-example-test");
        let users = dir.write(
            "users.toml",
            "[[users]]\nname = \"pgdog\"\ndatabase = \"pgdog\"\npassword = \"pgdog\"\n",
        );
        Settings::load(&example, &users).unwrap();
        let text = std::fs::read_to_string(&example).unwrap();
        // Every [general] key (options unset by default included).
        let general = toml::Value::try_from(General::default()).unwrap();
        let mut keys: Vec<String> = general.as_table().unwrap().keys().cloned().collect();
        keys.extend(GENERAL_OPTIONAL_KEYS.iter().map(|k| k.to_string()));
        for key in &keys {
            assert!(
                text.contains(&format!("{key} =")),
                "pgdog.toml.example does not document general.{key}"
            );
        }
        // Keys of [[databases]], [[users]] and the sharding tables (general's are checked above).
        for key in [
            "host",
            "port",
            "pooler_mode",
            "column",
            "data_type",
            "values",
            "start",
            "end",
            "default_shard",
            "tables",
            "database_name",
            "user",
            "password",
            "role",
            "shard",
            "pool_size",
            "password_hash",
            "passwords",
            "auth_query",
        ] {
            assert!(
                text.contains(&format!("{key} =")),
                "pgdog.toml.example does not document {key}"
            );
        }
    }

    #[test]
    fn defaults_and_unknown_key_with_line() {
        let dir = Scratch::new("pgdog-config-test");
        let c = dir.write(
            "a.toml",
            "[general]\nport = 7000\n\n[[databases]]\nname = \"db\"\n",
        );
        let u = dir.write("u.toml", APP_USERS);
        let s = Settings::load(&c, &u).unwrap();
        assert_eq!(s.config.general.port, 7000);
        assert_eq!(s.config.general.host, "127.0.0.1");
        assert_eq!(s.config.general.pooler_mode, PoolerMode::Transaction);
        assert_eq!(s.config.databases[0].database_name(), "db");
        assert_eq!(s.config.databases[0].port, 5432);
        let c = dir.write("b.toml", "[general]\nport = 7000\npool_sise = 3\n");
        let err = Settings::load(&c, &u).unwrap_err().to_string();
        assert!(err.contains("line 3") && err.contains("pool_sise"), "{err}");
        let u = dir.write(
            "u2.toml",
            "[[users]]\nname = \"app\"\ndatabase = \"nope\"\npassword = \"pw\"\n",
        );
        let c = dir.write("c.toml", "[[databases]]\nname = \"db\"\n");
        let err = Settings::load(&c, &u).unwrap_err().to_string();
        assert!(err.contains("nope"), "{err}");
        // The admin database may not shadow a configured database.
        let u = dir.write("u3.toml", APP_USERS);
        let c = dir.write("d.toml",
            "[general]\nadmin_database = \"db\"\nadmin_password = \"x\"\n\n[[databases]]\nname = \"db\"\n",
        );
        let err = Settings::load(&c, &u).unwrap_err().to_string();
        assert!(err.contains("admin_database"), "{err}");
        let c = dir.write(
            "e.toml",
            "[general]\nadmin_password = \"x\"\n\n[[databases]]\nname = \"db\"\n",
        );
        let s = Settings::load(&c, &u).unwrap();
        assert_eq!(s.config.general.admin_database, "admin");
        assert_eq!(s.config.general.admin_user, "admin");
        assert_eq!(s.config.general.pause_timeout, 30_000);
        // An admin database always has a password: an empty one is refused.
        let c = dir.write(
            "f.toml",
            "[general]\nadmin_password = \"\"\n\n[[databases]]\nname = \"db\"\n",
        );
        let err = Settings::load(&c, &u).unwrap_err().to_string();
        assert!(err.contains("admin_password is empty"), "{err}");
    }

    #[test]
    fn replicas_need_a_primary_or_auto_and_distinct_servers() {
        let dir = Scratch::new("pgdog-config-ha");
        let u = dir.write("u.toml", APP_USERS);
        let entry = |port: u16, role: &str| {
            format!("[[databases]]\nname = \"db\"\nport = {port}\nrole = \"{role}\"\n\n")
        };
        let only_replicas = format!("{}{}", entry(5433, "replica"), entry(5434, "replica"));
        let err = Settings::load(&dir.write("a.toml", &only_replicas), &u)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no primary"), "{err}");
        let twice = format!("{}{}", entry(5433, "primary"), entry(5433, "replica"));
        let err = Settings::load(&dir.write("b.toml", &twice), &u)
            .unwrap_err()
            .to_string();
        assert!(err.contains("same server twice"), "{err}");
        let auto = format!(
            "[general]\nload_balancing_strategy = \"least_active_connections\"\nread_write_split = \"include_primary\"\n\n{}{}",
            entry(5433, "auto"),
            entry(5434, "auto")
        );
        let s = Settings::load(&dir.write("c.toml", &auto), &u).unwrap();
        assert_eq!(s.shard_hosts("db", 0).len(), 2);
        assert_eq!(s.config.general.healthcheck_interval, 5_000);
        assert_eq!(s.config.general.max_replica_lag, 16 << 20);
    }
}
