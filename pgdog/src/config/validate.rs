//! The checks `Settings::load` makes: general settings, databases and their shards, sharded
//! tables and schemas, `[resharding]`, users. Each names the key (and index) at fault.
use super::*;

/// Cancel keys carry the peer id in bits 16 to 30 of their (positive) process id.
pub const MAX_PEER_ID: u16 = 32_767;

impl Settings {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |path: &Path| {
            let path = path.to_path_buf();
            move |message| ConfigError::Invalid { path, message }
        };
        self.check_general().map_err(invalid(&self.config_path))?;
        self.check_databases().map_err(invalid(&self.config_path))?;
        self.check_tables().map_err(invalid(&self.config_path))?;
        self.check_dry_run().map_err(invalid(&self.config_path))?;
        self.check_mirroring().map_err(invalid(&self.config_path))?;
        self.check_users().map_err(invalid(&self.users_path))
    }

    /// `[general]`.
    fn check_general(&self) -> Result<(), String> {
        let g = &self.config.general;
        if g.default_pool_size == 0 {
            return Err("general.default_pool_size must be at least 1".into());
        }
        if !matches!(g.log_format.as_str(), "text" | "json") {
            return Err(format!(
                "general.log_format = \"{}\": \"text\" or \"json\"",
                g.log_format
            ));
        }
        if g.unix_socket_mode_bits().is_none() {
            return Err(format!(
                "general.unix_socket_mode = \"{}\" is not permissions in octal (e.g. \"0777\")",
                g.unix_socket_mode
            ));
        }
        if matches!(g.server_tls, ServerTls::VerifyCa | ServerTls::VerifyFull)
            && g.server_tls_ca.is_none()
        {
            return Err(
                "general.server_tls = verify-ca / verify-full needs general.server_tls_ca".into(),
            );
        }
        if g.tls_mode == TlsMode::Required && g.tls_certificate.is_none() {
            return Err(
                "general.tls_mode = \"required\" needs tls_certificate and tls_private_key".into(),
            );
        }
        if g.tls_certificate.is_some() != g.tls_private_key.is_some() {
            return Err("general.tls_certificate and general.tls_private_key go together".into());
        }
        let reserve = g.reserve_pool_size > 0
            || self
                .config
                .databases
                .iter()
                .any(|d| d.reserve_pool_size > Some(0))
            || self
                .users
                .users
                .iter()
                .any(|u| u.reserve_pool_size > Some(0));
        if reserve && g.reserve_pool_timeout >= g.checkout_timeout {
            return Err(format!(
                "general.reserve_pool_timeout ({} ms) must be below checkout_timeout ({} ms): clients give up before the reserve_pool_size reserve could serve them",
                g.reserve_pool_timeout, g.checkout_timeout
            ));
        }
        if let Some(line) = self.hba.as_ref().and_then(|h| h.first_cert_rule()) {
            if g.tls_client_ca.is_none() {
                return Err(format!(
                    "general.auth_hba_file line {line}: a cert rule needs general.tls_client_ca (the CA that signs client certificates)"
                ));
            }
        }
        self.check_peers()?;
        if g.admin_password.as_deref() == Some("") {
            return Err("general.admin_password is empty: the admin database always requires a password (set one, or remove the key to disable the admin database)".into());
        }
        if let Some(id) = &g.instance_id {
            if id.is_empty() || id.len() > 32 || !id.chars().all(|c| c.is_ascii_alphanumeric()) {
                return Err(format!(
                    "general.instance_id `{id}` must be 1 to 32 letters and digits"
                ));
            }
        }
        if g.stats_period == 0
            || g.two_phase_recovery_interval == 0
            || g.prepared_statements_limit == 0
            || g.query_cache_limit == 0
        {
            return Err("general.stats_period, general.two_phase_recovery_interval, general.prepared_statements_limit and general.query_cache_limit must be at least 1".into());
        }
        if g.merge_work_mem.bytes() < 8 << 10 {
            return Err(format!(
                "general.merge_work_mem = \"{}\" is below the minimum of 8kB",
                g.merge_work_mem
            ));
        }
        if g.merge_memory_limit < g.merge_work_mem {
            return Err(format!(
                "general.merge_memory_limit = \"{}\" is below general.merge_work_mem = \"{}\"",
                g.merge_memory_limit, g.merge_work_mem
            ));
        }
        if g.admin_password.is_some() {
            if g.admin_database.is_empty() || g.admin_user.is_empty() {
                return Err(
                    "general.admin_database and general.admin_user must not be empty".into(),
                );
            }
            if self.has_database(&g.admin_database) {
                return Err(format!(
                    "general.admin_database `{}` is also a configured database; pick another name",
                    g.admin_database
                ));
            }
        }
        if g.healthcheck_interval == 0 || g.healthcheck_timeout == 0 {
            return Err("general.healthcheck_interval and general.healthcheck_timeout must be at least 1 ms"
                    .into());
        }
        Ok(())
    }

    /// `[[databases]]`: names, one primary per shard, no shard missing, no server twice.
    fn check_databases(&self) -> Result<(), String> {
        for (i, db) in self.config.databases.iter().enumerate() {
            if db.name.is_empty() {
                return Err(format!("databases[{i}]: name is empty"));
            }
            let dup = self.config.databases[..i].iter().any(|d| {
                d.name == db.name
                    && d.shard == db.shard
                    && d.role == Role::Primary
                    && db.role == Role::Primary
            });
            if dup {
                return Err(format!(
                    "databases[{i}]: a second primary for database `{}` shard {}",
                    db.name, db.shard
                ));
            }
        }
        for db in &self.config.databases {
            let hosts = self.shard_hosts(&db.name, db.shard);
            let writable = hosts
                .iter()
                .any(|d| matches!(d.role, Role::Primary | Role::Auto));
            if !writable {
                return Err(format!(
                        "database `{}` shard {} has replicas but no primary: add role = \"primary\" (or \"auto\" on every host to follow failovers)",
                        db.name, db.shard
                    ));
            }
            let mut addrs: Vec<(&str, u16, &str)> = hosts
                .iter()
                .map(|d| (d.host.as_str(), d.port, d.database_name()))
                .collect();
            addrs.sort();
            addrs.dedup();
            if addrs.len() != hosts.len() {
                return Err(format!(
                    "database `{}` shard {} lists the same server twice",
                    db.name, db.shard
                ));
            }
        }
        let mut names: Vec<&str> = self
            .config
            .databases
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        names.sort();
        names.dedup();
        for name in names {
            let shards = self.shards(name);
            for shard in 0..shards {
                let has = self
                    .config
                    .databases
                    .iter()
                    .any(|d| d.name == name && d.shard == shard);
                if !has {
                    return Err(format!(
                        "database `{name}` has {shards} shards but no entry for shard {shard}"
                    ));
                }
            }
        }
        Ok(())
    }

    /// `[[sharded_tables]]`, `[[sharded_schemas]]`, `[resharding]`, `[[omnisharded_tables]]`.
    fn check_tables(&self) -> Result<(), String> {
        for (i, t) in self.config.sharded_tables.iter().enumerate() {
            if !self.has_database(&t.database) {
                return Err(format!(
                    "sharded_tables[{i}]: database `{}` is not configured",
                    t.database
                ));
            }
            if t.column.is_empty() {
                return Err(format!("sharded_tables[{i}]: column is empty"));
            }
        }
        let shards_of = |db: &str| {
            if self.has_database(db) {
                self.shards(db).max(1)
            } else {
                0
            }
        };
        super::sharding::check_schemas(&self.config.sharded_schemas, shards_of)?;
        self.config.resharding.check()?;
        for (i, o) in self.config.omnisharded_tables.iter().enumerate() {
            if !self.has_database(&o.database) {
                return Err(format!(
                    "omnisharded_tables[{i}]: database `{}` is not configured",
                    o.database
                ));
            }
        }
        Ok(())
    }

    /// users.toml: known databases, passwords the auth type can use.
    /// `peer_id` and `[[peers]]`: ids from 1 to 32767 (they are carried in cancel keys), each
    /// once; this pgdog's own entry may be listed (every peer can share one list).
    fn check_peers(&self) -> Result<(), String> {
        let own = self.config.general.peer_id;
        if own > MAX_PEER_ID {
            return Err(format!(
                "general.peer_id = {own}: at most {MAX_PEER_ID} (0: no peers)"
            ));
        }
        if own == 0 && !self.config.peers.is_empty() {
            return Err("[[peers]] needs general.peer_id (this pgdog's own number)".into());
        }
        let mut seen = std::collections::HashSet::new();
        for (i, p) in self.config.peers.iter().enumerate() {
            if p.peer_id == 0 || p.peer_id > MAX_PEER_ID {
                return Err(format!(
                    "peers[{i}].peer_id = {}: from 1 to {MAX_PEER_ID}",
                    p.peer_id
                ));
            }
            if !seen.insert(p.peer_id) {
                return Err(format!(
                    "peers[{i}].peer_id = {} is listed twice",
                    p.peer_id
                ));
            }
        }
        Ok(())
    }

    fn check_users(&self) -> Result<(), String> {
        let g = &self.config.general;
        for (i, u) in self.users.users.iter().enumerate() {
            let user_wide = u.database == super::FALLBACK_DATABASE
                && !self.has_database(super::FALLBACK_DATABASE)
                && self
                    .users
                    .users
                    .iter()
                    .any(|o| o.name == u.name && o.database != u.database);
            if user_wide {
                // Only the user's settings for each of its databases: it logs nobody in.
                continue;
            }
            if !self.config.databases.iter().any(|d| d.name == u.database) {
                return Err(format!(
                    "users[{i}] ({}): database `{}` is not in {}",
                    u.name,
                    u.database,
                    self.config_path.display()
                ));
            }
            if u.password.is_none()
                && u.password_hash.is_none()
                && u.passwords.is_empty()
                && g.auth_type != AuthType::Trust
            {
                return Err(format!(
                    "users[{i}] ({}): needs password, password_hash or passwords",
                    u.name
                ));
            }
            for (what, hash) in u
                .password_hash
                .iter()
                .map(|h| ("password_hash", h))
                .chain(u.passwords.iter().map(|p| ("passwords", p)))
            {
                if hash.starts_with("SCRAM-SHA-256$") || what == "password_hash" {
                    if let Err(e) = crate::auth::scram::ScramVerifier::parse(hash) {
                        return Err(format!("users[{i}] ({}): {what}: {e}", u.name));
                    }
                }
            }
        }
        for db in &self.config.databases {
            let Some((auth_user, _)) = self.auth_query(&db.name) else {
                continue;
            };
            let entry = self.auth_user_entry(auth_user, &db.name);
            if entry.and_then(|u| u.password.as_ref()).is_none() {
                return Err(format!(
                    "databases `{}`: auth_user `{auth_user}` needs an entry with a plain password in {} (pgdog logs in as that user to run auth_query)",
                    db.name,
                    self.users_path.display()
                ));
            }
        }
        Ok(())
    }
}
