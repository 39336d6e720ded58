//! `pgdog import-pgbouncer`: a PgBouncer setup (pgbouncer.ini with its `%include`s, and the
//! userlist.txt of `auth_file`) turned into pgdog.toml and users.toml that run the same setup.
//! Every setting that cannot be carried is reported with its file and line, never dropped
//! silently. Pure text in, text out: the command writes the files.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::{Table, Value};

/// One `key = value` of the ini, with where it was read.
#[derive(Debug, Clone)]
struct Setting {
    key: String,
    value: String,
    file: PathBuf,
    line: usize,
}

impl Setting {
    fn at(&self) -> String {
        format!("{}:{}", self.file.display(), self.line)
    }
}

/// The result: both files' text and what was not carried.
#[derive(Debug, Default)]
pub struct Imported {
    pub config: String,
    pub users: String,
    /// `file:line: key = value: why`, in reading order.
    pub notes: Vec<String>,
}

/// Reads `ini` (and its includes) and the userlist (`userlist`, else the ini's `auth_file`).
pub fn import(ini: &Path, userlist: Option<&Path>) -> Result<Imported, String> {
    let mut sections: BTreeMap<String, Vec<Setting>> = BTreeMap::new();
    read_ini(ini, &mut sections, 0)?;
    let pgbouncer = sections.remove("pgbouncer").unwrap_or_default();
    let mut out = Importer {
        general: Table::new(),
        notes: Vec::new(),
        ini_dir: ini.parent().map(Path::to_path_buf).unwrap_or_default(),
        // PgBouncer reads auth_hba_file only with auth_type = hba.
        hba: pgbouncer
            .iter()
            .any(|s| s.key == "auth_type" && s.value == "hba"),
    };
    let auth_file = pgbouncer
        .iter()
        .find(|s| s.key == "auth_file")
        .map(|s| out.path(&s.value));
    let admin_users: Vec<String> = pgbouncer
        .iter()
        .find(|s| s.key == "admin_users")
        .map(|s| split_list(&s.value))
        .unwrap_or_default();
    // PgBouncer's defaults where pgdog's differ: an ini that omits a key keeps its meaning.
    for (key, value) in pgbouncer_defaults() {
        out.set(key, value);
    }
    for s in &pgbouncer {
        out.general_setting(s);
    }
    let databases = out.databases(sections.remove("databases").unwrap_or_default());
    let user_settings = sections.remove("users").unwrap_or_default();
    let peers = out.peers(sections.remove("peers").unwrap_or_default());
    for (name, settings) in &sections {
        for s in settings {
            out.note(s, &format!("section [{name}] has no pgdog equivalent"));
        }
    }
    let list_path = userlist.map(Path::to_path_buf).or(auth_file);
    let list = match &list_path {
        Some(p) => read_userlist(p)?,
        None => Vec::new(),
    };
    if let Some(admin) = admin_users.first() {
        out.admin(admin, &list, &pgbouncer);
    }
    if databases.is_empty() {
        if let Some(path) = &list_path {
            for (i, (user, _)) in list.iter().enumerate() {
                out.notes.push(format!(
                    "{}: user \"{user}\" (entry {}): no [databases] entry to log in to; not carried",
                    path.display(),
                    i + 1
                ));
            }
        }
    }
    if let Some(s) = pgbouncer.iter().find(|s| s.key == "auth_user") {
        let secret = list
            .iter()
            .find(|(u, _)| *u == s.value)
            .map(|(_, p)| p.as_str());
        if secret.is_none_or(|p| p.starts_with("SCRAM-SHA-256$") || p.starts_with("md5")) {
            out.note(s, "pgdog logs in as auth_user with its plain password: put it in users.toml (password = ...)");
        }
    }
    let users = out.users(&list, &databases, &user_settings);
    let mut config = Table::new();
    config.insert("general".into(), Value::Table(out.general));
    config.insert(
        "databases".into(),
        Value::Array(databases.into_iter().map(Value::Table).collect()),
    );
    if !peers.is_empty() {
        config.insert(
            "peers".into(),
            Value::Array(peers.into_iter().map(Value::Table).collect()),
        );
    }
    let mut users_file = Table::new();
    users_file.insert(
        "users".into(),
        Value::Array(users.into_iter().map(Value::Table).collect()),
    );
    Ok(Imported {
        config: toml::to_string(&config).map_err(|e| e.to_string())?,
        users: toml::to_string(&users_file).map_err(|e| e.to_string())?,
        notes: out.notes,
    })
}

/// The ini's sections, `%include` files read in place (relative to the including file).
fn read_ini(
    path: &Path,
    sections: &mut BTreeMap<String, Vec<Setting>>,
    depth: usize,
) -> Result<(), String> {
    if depth > 10 {
        return Err(format!("{}: %include nested too deep", path.display()));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut section = String::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        if let Some(file) = line.strip_prefix("%include") {
            read_ini(&dir.join(file.trim()), sections, depth + 1)?;
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim().to_ascii_lowercase();
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!(
                "{}:{}: not `key = value`: {line}",
                path.display(),
                i + 1
            ));
        };
        sections.entry(section.clone()).or_default().push(Setting {
            key: key.trim().to_string(),
            value: value.trim().to_string(),
            file: path.to_path_buf(),
            line: i + 1,
        });
    }
    Ok(())
}

/// userlist.txt: `"user" "secret"` per line (`""` inside a quoted string is one quote).
fn read_userlist(path: &Path) -> Result<Vec<(String, String)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut users = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with(';') || line.starts_with('#') {
            continue;
        }
        let fields = quoted_fields(line);
        match fields.as_slice() {
            [user, secret, ..] => users.push((user.clone(), secret.clone())),
            _ => {
                return Err(format!(
                    "{}:{}: not `\"user\" \"password\"`",
                    path.display(),
                    i + 1
                ))
            }
        }
    }
    Ok(users)
}

fn quoted_fields(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut field = String::new();
        while let Some(c) = chars.next() {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => break,
                c => field.push(c),
            }
        }
        fields.push(field);
    }
    fields
}

/// `key=value key='quoted value'` of a [databases] or [users] entry.
fn conninfo(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            chars.next();
            if c == '=' {
                break;
            }
            key.push(c);
        }
        if key.is_empty() {
            return out;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'\'') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '\'' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                value.push(c);
                chars.next();
            }
        }
        out.push((key.trim().to_string(), value));
    }
}

fn split_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

struct Importer {
    general: Table,
    notes: Vec<String>,
    ini_dir: PathBuf,
    hba: bool,
}

/// Settings where PgBouncer reads 0 as "off" or "the OS default": pgdog keeps the default.
const ZERO_IS_OFF: &[&str] = &[
    "client_login_timeout",
    "query_wait_timeout",
    "server_idle_timeout",
    "server_lifetime",
    "server_connect_timeout",
    "tcp_keepidle",
    "tcp_keepintvl",
    "tcp_keepcnt",
    "stats_period",
];

/// PgBouncer 1.25's defaults (doc/config.md) of the settings whose pgdog default differs, as
/// pgdog keys and values: written into every imported `[general]`, the ini's own values over
/// them (pool_mode session, query_wait_timeout 120 s, default_pool_size 20, min_pool_size 0,
/// server_idle_timeout 600 s, server_lifetime 3600 s, server_connect_timeout 15 s,
/// client_login_timeout 60 s, reserve_pool_timeout 5 s, stats_period 60 s, max_client_conn 100).
fn pgbouncer_defaults() -> [(&'static str, Value); 12] {
    [
        ("pooler_mode", Value::String("session".into())),
        ("checkout_timeout", Value::Integer(120_000)),
        ("default_pool_size", Value::Integer(20)),
        ("min_pool_size", Value::Integer(0)),
        ("idle_timeout", Value::Integer(600_000)),
        ("server_lifetime", Value::Integer(3_600_000)),
        ("connect_timeout", Value::Integer(15_000)),
        ("client_login_timeout", Value::Integer(60_000)),
        ("reserve_pool_timeout", Value::Integer(5_000)),
        ("stats_period", Value::Integer(60_000)),
        ("max_client_connections", Value::Integer(100)),
        ("unix_socket_dir", Value::String("/tmp".into())),
    ]
}

/// A [pgbouncer] setting's pgdog key and how its value converts.
enum Map {
    Same(&'static str),
    Int(&'static str),
    Seconds(&'static str),
    Path(&'static str),
}

const GENERAL: &[(&str, Map)] = &[
    ("listen_port", Map::Int("port")),
    ("peer_id", Map::Int("peer_id")),
    ("default_pool_size", Map::Int("default_pool_size")),
    ("min_pool_size", Map::Int("min_pool_size")),
    ("max_client_conn", Map::Int("max_client_connections")),
    ("max_db_connections", Map::Int("max_db_connections")),
    ("max_user_connections", Map::Int("max_user_connections")),
    ("reserve_pool_size", Map::Int("reserve_pool_size")),
    ("reserve_pool_timeout", Map::Seconds("reserve_pool_timeout")),
    ("server_reset_query", Map::Same("server_reset_query")),
    ("server_lifetime", Map::Seconds("server_lifetime")),
    ("server_check_delay", Map::Seconds("server_check_delay")),
    ("server_check_query", Map::Same("server_check_query")),
    ("unix_socket_dir", Map::Same("unix_socket_dir")),
    ("logfile", Map::Path("logfile")),
    ("syslog_ident", Map::Same("syslog_ident")),
    ("syslog_facility", Map::Same("syslog_facility")),
    ("unix_socket_mode", Map::Same("unix_socket_mode")),
    ("unix_socket_group", Map::Same("unix_socket_group")),
    ("autodb_idle_timeout", Map::Seconds("autodb_idle_timeout")),
    ("server_idle_timeout", Map::Seconds("idle_timeout")),
    ("server_connect_timeout", Map::Seconds("connect_timeout")),
    ("query_timeout", Map::Seconds("query_timeout")),
    ("query_wait_timeout", Map::Seconds("checkout_timeout")),
    ("client_idle_timeout", Map::Seconds("client_idle_timeout")),
    (
        "idle_transaction_timeout",
        Map::Seconds("idle_in_transaction_timeout"),
    ),
    ("client_login_timeout", Map::Seconds("client_login_timeout")),
    ("stats_period", Map::Seconds("stats_period")),
    ("tcp_keepidle", Map::Seconds("tcp_keepalive_idle")),
    ("tcp_keepintvl", Map::Seconds("tcp_keepalive_interval")),
    ("tcp_keepcnt", Map::Int("tcp_keepalive_count")),
    ("auth_user", Map::Same("auth_user")),
    ("auth_query", Map::Same("auth_query")),
    ("auth_hba_file", Map::Path("auth_hba_file")),
    ("client_tls_cert_file", Map::Path("tls_certificate")),
    ("client_tls_key_file", Map::Path("tls_private_key")),
    ("client_tls_ca_file", Map::Path("tls_client_ca")),
    ("server_tls_ca_file", Map::Path("server_tls_ca")),
];

impl Importer {
    fn note(&mut self, s: &Setting, why: &str) {
        self.notes
            .push(format!("{}: {} = {}: {why}", s.at(), s.key, s.value));
    }

    /// A path from the ini, absolute (relative ones are relative to the ini's folder).
    fn path(&self, p: &str) -> PathBuf {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.ini_dir.join(p)
        }
    }

    fn set(&mut self, key: &str, value: Value) {
        self.general.insert(key.into(), value);
    }

    /// `[peers]` `N = host=... port=...` → `[[peers]]` `peer_id`, `host`, `port` (a Unix
    /// socket folder as host is not carried: pgdog reaches its peers over TCP).
    fn peers(&mut self, entries: Vec<Setting>) -> Vec<Table> {
        let mut out = Vec::new();
        for s in entries {
            let Ok(id) = s.key.parse::<i64>() else {
                self.note(&s, "a peer's name must be its peer_id (a number)");
                continue;
            };
            let fields = conninfo(&s.value);
            let get = |k: &str| {
                fields
                    .iter()
                    .find(|(key, _)| key == k)
                    .map(|(_, v)| v.clone())
            };
            let host = get("host").unwrap_or_else(|| "127.0.0.1".into());
            let port = get("port")
                .and_then(|p| p.parse::<i64>().ok())
                .unwrap_or(6432);
            let mut t = Table::new();
            t.insert("peer_id".into(), Value::Integer(id));
            t.insert("host".into(), Value::String(host));
            t.insert("port".into(), Value::Integer(port));
            out.push(t);
        }
        out
    }

    fn general_setting(&mut self, s: &Setting) {
        if ZERO_IS_OFF.contains(&s.key.as_str()) && s.value.parse::<f64>() == Ok(0.0) {
            self.note(
                s,
                "0 turns it off (or leaves it to the OS) in PgBouncer; pgdog keeps the default",
            );
            return;
        }
        if s.key == "auth_hba_file" && !self.hba {
            self.note(
                s,
                "PgBouncer reads it only with auth_type = hba; not carried",
            );
            return;
        }
        if let Some((_, map)) = GENERAL.iter().find(|(k, _)| *k == s.key) {
            let value = match map {
                Map::Same(k) => Some((k, Value::String(s.value.clone()))),
                Map::Int(k) => s.value.parse::<i64>().ok().map(|v| (k, Value::Integer(v))),
                Map::Seconds(k) => s
                    .value
                    .parse::<f64>()
                    .ok()
                    .map(|v| (k, Value::Integer((v * 1000.0).round() as i64))),
                Map::Path(k) => Some((k, Value::String(self.path(&s.value).display().to_string()))),
            };
            match value {
                Some((k, v)) => self.set(k, v),
                None => self.note(s, "not a number"),
            }
            return;
        }
        match s.key.as_str() {
            "listen_addr" => {
                let addrs = split_list(&s.value);
                let host = match addrs.first().map(String::as_str) {
                    Some("*") => "0.0.0.0",
                    Some("localhost") | None => "127.0.0.1",
                    Some(a) => a,
                };
                self.set("host", Value::String(host.to_string()));
                if addrs.len() > 1 {
                    self.note(s, &format!("pgdog listens on one address: {host} only"));
                }
            }
            "pool_mode" => match s.value.as_str() {
                "session" | "transaction" | "statement" => self.set("pooler_mode", Value::String(s.value.clone())),
                _ => self.note(s, "not a pool mode (session, transaction, statement)"),
            },
            "auth_type" => self.auth_type(s),
            "client_tls_sslmode" => {
                let mode = match s.value.as_str() {
                    "require" | "verify-ca" | "verify-full" => "required",
                    _ => "optional",
                };
                self.set("tls_mode", Value::String(mode.into()));
                if s.value.starts_with("verify") {
                    self.note(s, "carried as tls_mode = \"required\"; client certificates are checked by the cert method of auth_hba_file (with tls_client_ca)");
                }
            }
            "server_tls_sslmode" => {
                let mode = match s.value.as_str() {
                    "allow" => "prefer",
                    m => m,
                };
                self.set("server_tls", Value::String(mode.into()));
            }
            "syslog" | "log_connections" | "log_disconnections" | "log_pooler_errors" | "log_stats" => self.set(&s.key, Value::Boolean(matches!(s.value.as_str(), "1" | "on" | "true" | "yes"))),
            "tcp_keepalive" | "so_reuseport" => self.set(&s.key, Value::Boolean(matches!(s.value.as_str(), "1" | "on" | "true" | "yes"))),
            "max_prepared_statements" => match s.value.parse::<i64>() {
                Ok(n) if n > 0 => self.set("prepared_statements_limit", Value::Integer(n)),
                _ => self.note(s, "pgdog always supports prepared statements in transaction mode (prepared_statements_limit keeps its default)"),
            },
            "track_extra_parameters" => self.set(
                "track_extra_parameters",
                Value::Array(split_list(&s.value).into_iter().map(Value::String).collect()),
            ),
            "ignore_startup_parameters" => self.note(s, "not needed: pgdog accepts every startup parameter the server accepts (it applies them on the server)"),
            "auth_file" | "admin_users" => {} // read with the users
            _ => self.note(s, "no pgdog equivalent; not carried"),
        }
    }

    fn auth_type(&mut self, s: &Setting) {
        let mapped = match s.value.as_str() {
            "md5" => Some("md5"),
            "scram-sha-256" => Some("scram"),
            "plain" => Some("plain"),
            "trust" => Some("trust"),
            "any" => {
                self.note(s, "carried as trust (pgdog checks the user name)");
                Some("trust")
            }
            "hba" => {
                self.note(s, "carried as auth_hba_file (its rules choose the method)");
                None
            }
            "cert" => {
                self.note(
                    s,
                    "write an auth_hba_file with hostssl ... cert lines and set tls_client_ca",
                );
                None
            }
            _ => {
                self.note(s, "no pgdog equivalent; not carried");
                None
            }
        };
        if let Some(m) = mapped {
            self.set("auth_type", Value::String(m.into()));
        }
    }

    /// The admin database's user: the first of admin_users, with its plain userlist password.
    fn admin(&mut self, admin: &str, list: &[(String, String)], pgbouncer: &[Setting]) {
        let setting = pgbouncer.iter().find(|s| s.key == "admin_users");
        let password = list
            .iter()
            .find(|(u, _)| u == admin)
            .map(|(_, p)| p.clone());
        match password.filter(|p| !p.starts_with("md5") && !p.starts_with("SCRAM-SHA-256$")) {
            Some(p) => {
                self.set("admin_user", Value::String(admin.into()));
                self.set("admin_password", Value::String(p));
            }
            None => {
                if let Some(s) = setting {
                    self.note(
                        s,
                        "pgdog's admin database needs admin_password in plain text; set it by hand",
                    );
                }
            }
        }
        if let Some(s) = setting.filter(|s| split_list(&s.value).len() > 1) {
            self.note(s, &format!("pgdog has one admin user: {admin}"));
        }
    }

    /// [databases] entries: one pgdog database each (`*` is the fallback database).
    fn databases(&mut self, entries: Vec<Setting>) -> Vec<Table> {
        let mut out = Vec::new();
        for s in entries {
            let mut db = Table::new();
            db.insert("name".into(), Value::String(s.key.clone()));
            for (key, value) in conninfo(&s.value) {
                let entry = Setting {
                    key: format!("{}.{key}", s.key),
                    value: value.clone(),
                    ..s.clone()
                };
                let int = || value.parse::<i64>().ok().map(Value::Integer);
                match key.as_str() {
                    "host" if value.contains(',') => {
                        match split_list(&value).into_iter().next() {
                            Some(first) => {
                                self.note(&entry, &format!("several hosts: {first} only (declare the others as replicas)"));
                                db.insert("host".into(), Value::String(first));
                            }
                            None => self.note(&entry, "no host; not carried"),
                        }
                    }
                    "host" => drop(db.insert("host".into(), Value::String(value))),
                    "dbname" => drop(db.insert("database_name".into(), Value::String(value))),
                    "user" | "password" | "auth_user" | "auth_query" => {
                        db.insert(key.clone(), Value::String(value));
                    }
                    "port" | "pool_size" | "max_db_connections" | "min_pool_size"
                    | "reserve_pool_size" | "reserve_pool" => match int() {
                        Some(v) => {
                            // (`reserve_pool` is PgBouncer's older name.)
                            let name = if key == "reserve_pool" {
                                "reserve_pool_size"
                            } else {
                                key.as_str()
                            };
                            db.insert(name.into(), v);
                        }
                        None => self.note(&entry, "not a number"),
                    },
                    "server_lifetime" => match value.parse::<i64>() {
                        Ok(secs) if secs > 0 => {
                            db.insert(key.clone(), Value::Integer(secs * 1000));
                        }
                        _ => self.note(&entry, "not a number of seconds; not carried"),
                    },
                    "pool_mode"
                        if matches!(value.as_str(), "session" | "transaction" | "statement") =>
                    {
                        db.insert("pooler_mode".into(), Value::String(value));
                    }
                    _ => self.note(&entry, "no pgdog equivalent; not carried"),
                }
            }
            if !db.contains_key("host") {
                // PgBouncer's rule: no host is the Unix socket in unix_socket_dir.
                match self.general.get("unix_socket_dir") {
                    Some(Value::String(dir)) if !dir.is_empty() => {
                        db.insert("host".into(), Value::String(dir.clone()));
                    }
                    _ => self.note(
                        &s,
                        "no host, and no unix_socket_dir: pgdog's default host is used",
                    ),
                }
            }
            out.push(db);
        }
        out
    }

    /// users.toml: each userlist user on each database, with its secret, and the [users]
    /// pool mode.
    fn users(
        &mut self,
        list: &[(String, String)],
        databases: &[Table],
        user_settings: &[Setting],
    ) -> Vec<Table> {
        // user -> its settings, put in each of its entries.
        let mut carried: BTreeMap<String, Vec<(String, Value)>> = BTreeMap::new();
        for s in user_settings {
            for (key, value) in conninfo(&s.value) {
                let setting = match key.as_str() {
                    "pool_mode"
                        if matches!(value.as_str(), "session" | "transaction" | "statement") =>
                    {
                        Some(("pooler_mode".to_string(), Value::String(value.clone())))
                    }
                    "max_user_connections" | "pool_size" | "reserve_pool_size" => value
                        .parse::<i64>()
                        .ok()
                        .map(|v| (key.clone(), Value::Integer(v))),
                    _ => None,
                };
                match setting {
                    Some(kv) => carried.entry(s.key.clone()).or_default().push(kv),
                    _ => {
                        let entry = Setting {
                            key: format!("{}.{key}", s.key),
                            value,
                            ..s.clone()
                        };
                        self.note(&entry, "no pgdog equivalent; not carried");
                    }
                }
            }
        }
        let mut out = Vec::new();
        for (user, secret) in list {
            for db in databases {
                let Some(Value::String(name)) = db.get("name") else {
                    continue;
                };
                let mut entry = Table::new();
                entry.insert("name".into(), Value::String(user.clone()));
                entry.insert("database".into(), Value::String(name.clone()));
                if secret.starts_with("SCRAM-SHA-256$") {
                    entry.insert("password_hash".into(), Value::String(secret.clone()));
                } else if crate::auth::md5::is_md5_stored(secret) {
                    entry.insert(
                        "passwords".into(),
                        Value::Array(vec![Value::String(secret.clone())]),
                    );
                } else {
                    entry.insert("password".into(), Value::String(secret.clone()));
                }
                for (key, value) in carried.get(user).into_iter().flatten() {
                    entry.insert(key.clone(), value.clone());
                }
                out.push(entry);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conninfo_and_userlist_quoting() {
        assert_eq!(
            conninfo("host=db1 port=5433 password='a b\\'c' dbname=app"),
            vec![
                ("host".into(), "db1".into()),
                ("port".into(), "5433".into()),
                ("password".into(), "a b'c".into()),
                ("dbname".into(), "app".into()),
            ]
        );
        assert_eq!(quoted_fields(r#""mar""ko" "pw" "#), vec!["mar\"ko", "pw"]);
    }

    #[test]
    fn zeros_hba_without_auth_type_hba_and_empty_hosts_are_notes() {
        let dir = crate::scratch::Scratch::new("pgdog-import-unit");
        let ini = dir.write(
            "pgbouncer.ini",
            "[databases]\nbad = host=, port=5432\n[pgbouncer]\nauth_type = md5\n\
             auth_hba_file = hba.conf\nquery_wait_timeout = 0\nclient_login_timeout = 0\n\
             query_timeout = 0\nauth_user = looker\n",
        );
        let list = dir.write(
            "userlist.txt",
            "\"looker\" \"md5abcdefabcdefabcdefabcdefabcdefab\"\n",
        );
        let imported = import(&ini, Some(&list)).unwrap();
        let notes = imported.notes.join("\n");
        for (line, what) in [
            (2, "no host"),
            (5, "only with auth_type = hba"),
            (6, "0 turns it off"),
            (7, "0 turns it off"),
            (9, "plain password"),
        ] {
            assert!(
                notes.contains(&format!("pgbouncer.ini:{line}:")) && notes.contains(what),
                "{line} {what}:\n{notes}"
            );
        }
        // 0 is "no limit" in both for query_timeout: carried.
        assert!(
            imported.config.contains("query_timeout = 0"),
            "{}",
            imported.config
        );
        // query_wait_timeout = 0: the default is kept (PgBouncer's, 120 s).
        assert!(
            imported.config.contains("checkout_timeout = 120000")
                && !imported.config.contains("auth_hba_file"),
            "{}",
            imported.config
        );
    }

    #[test]
    fn socket_folders_are_carried_and_no_host_is_the_unix_socket() {
        let dir = crate::scratch::Scratch::new("pgdog-import-unix");
        let ini = dir.write(
            "pgbouncer.ini",
            "[databases]\nlocal = dbname=postgres\nrun = host=/var/run/postgresql dbname=x\n\
             [pgbouncer]\nunix_socket_dir = /run/pgb\nunix_socket_mode = 0770\n",
        );
        let imported = import(&ini, None).unwrap();
        let config: toml::Table = toml::from_str(&imported.config).unwrap();
        let hosts: Vec<&str> = config["databases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["host"].as_str().unwrap())
            .collect();
        assert_eq!(hosts, ["/run/pgb", "/var/run/postgresql"]);
        assert_eq!(config["general"]["unix_socket_mode"].as_str(), Some("0770"));
    }
}
