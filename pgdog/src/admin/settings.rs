//! `[general]` and `[resharding]` settings as the admin database shows them (SHOW CONFIG) and
//! changes them at run time (`SET key = value`, `SET resharding.key = value`): the change builds
//! a new registry from the current settings with that one key replaced, checked like a reload
//! (pools whose settings did not change keep their connections). RELOAD goes back to the files.
//! A `[resharding]` change applies to the RESHARD and CUTOVER commands started afterwards; a
//! reshard already running keeps the values it started with.
use super::AdminError;
use crate::config::Settings;
use crate::registry::Registry;
use serde::Serialize;

/// Keys `SET` may change while pgdog runs.
pub const CHANGEABLE: &[&str] = &[
    "default_pool_size",
    "min_pool_size",
    "checkout_timeout",
    "idle_timeout",
    "server_lifetime",
    "server_check_delay",
    "server_check_query",
    "autodb_idle_timeout",
    "connect_timeout",
    "max_message_size",
    "pause_timeout",
    "load_balancing_strategy",
    "read_write_split",
    "read_write_strategy",
    "read_your_writes",
    "healthcheck_interval",
    "healthcheck_timeout",
    "ban_timeout",
    "max_replica_lag",
    "query_timeout",
    "client_idle_timeout",
    "idle_in_transaction_timeout",
    "client_login_timeout",
    "server_query_timeout",
    "max_client_connections",
    "prepared_statements_limit",
    "query_cache_limit",
    "query_shape_cache_limit",
    "merge_work_mem",
    "merge_memory_limit",
    "temp_directory",
    "shutdown_timeout",
    "unknown_functions",
    "server_reset_query",
    "two_phase_recovery_interval",
];

/// `[resharding]` keys `SET resharding.<key>` may change (every one but the peer list).
pub const RESHARDING_CHANGEABLE: &[&str] = &[
    "copy_split_bytes",
    "copy_format",
    "copy_parallel",
    "replay_batch",
    "replay_batch_rows",
    "replay_batch_ms",
    "replay_atomic",
    "max_lag_bytes",
    "lag_timeout",
    "cutover_timeout",
    "hold_timeout",
    "retry_timeout",
    "pg_bin",
];

/// Whether `SET` may change `key` (`name` or `resharding.name`).
pub fn changeable(key: &str) -> bool {
    match key.strip_prefix("resharding.") {
        Some(k) => RESHARDING_CHANGEABLE.contains(&k),
        None => CHANGEABLE.contains(&key),
    }
}

/// A settings section as a TOML table (keys sorted; unset options absent).
pub fn section_table<T: Serialize>(section: &T) -> toml::Table {
    match toml::Value::try_from(section) {
        Ok(toml::Value::Table(t)) => t,
        _ => toml::Table::new(),
    }
}

/// `section` with `key` replaced by `value`.
fn replaced<T: Serialize + serde::de::DeserializeOwned>(
    section: &T,
    key: &str,
    value: toml::Value,
) -> Result<T, AdminError> {
    let mut table = section_table(section);
    table.insert(key.to_string(), value);
    toml::Value::Table(table)
        .try_into()
        .map_err(|e: toml::de::Error| {
            AdminError::Invalid(format!("SET {key}: {}", e.message().trim()))
        })
}

/// `SET key = value`: `value` as TOML (a number, `true`, a quoted string) or a bare word.
pub fn set(key: &str, value: &str) -> Result<(), AdminError> {
    let key = key.to_ascii_lowercase();
    if !changeable(&key) {
        return Err(AdminError::Invalid(format!(
            "setting \"{key}\" cannot be changed at run time (changeable: {}, resharding.{})",
            CHANGEABLE.join(", "),
            RESHARDING_CHANGEABLE.join(", resharding.")
        )));
    }
    let parsed = format!("v = {value}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.trim_matches('\'').to_string()));
    let current = Registry::current();
    let mut settings: Settings = current.settings.clone();
    match key.strip_prefix("resharding.") {
        Some(k) => {
            let r = replaced(&settings.config.resharding, k, parsed)?;
            r.check()
                .map_err(|e| AdminError::Invalid(format!("SET {key}: {e}")))?;
            settings.config.resharding = r;
        }
        None => settings.config.general = replaced(&settings.config.general, &key, parsed)?,
    }
    settings
        .check()
        .map_err(|e| AdminError::Invalid(format!("SET {key}: {e}")))?;
    Registry::install(Registry::build(settings, Some(&current)));
    tracing::info!("SET {key} = {value}");
    Ok(())
}

/// Whether `key` names a `[general]` setting (or `resharding.<key>`), set or not.
pub fn is_setting(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    match key.strip_prefix("resharding.") {
        Some(k) => section_table(&crate::config::Resharding::default()).contains_key(k),
        None => {
            section_table(&crate::config::General::default()).contains_key(&key)
                || crate::config::GENERAL_OPTIONAL_KEYS.contains(&key.as_str())
        }
    }
}

/// `SHOW <key>` of a `[general]` key (or `resharding.<key>`): one column named after it, as
/// Postgres' SHOW; NULL for an option that is not set, `****` for the admin password.
pub fn show_one(key: &str) -> Option<super::Reply> {
    let key = key.to_ascii_lowercase();
    let registry = Registry::current();
    let config = &registry.settings.config;
    let (table, name) = match key.strip_prefix("resharding.") {
        Some(k) => (section_table(&config.resharding), k),
        None => (section_table(&config.general), key.as_str()),
    };
    if !is_setting(&key) {
        return None;
    }
    let value = table.get(name).map(|v| match v {
        _ if name == "admin_password" => "****".to_string(),
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    Some(super::Reply::Rows {
        columns: vec![key.clone()],
        rows: vec![vec![value]],
        tag: "SHOW".into(),
    })
}
