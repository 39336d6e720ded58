//! `[general]` settings as the admin database shows them (SHOW CONFIG) and changes them at run
//! time (`SET key = value`): the change builds a new registry from the current settings with
//! that one key replaced, checked like a reload (pools whose settings did not change keep their
//! connections). RELOAD goes back to the files.
use super::AdminError;
use crate::backend::Registry;
use crate::config::General;

/// Keys `SET` may change while pgdog runs.
pub const CHANGEABLE: &[&str] = &[
    "default_pool_size",
    "min_pool_size",
    "checkout_timeout",
    "idle_timeout",
    "server_lifetime",
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
    "shutdown_timeout",
    "unknown_functions",
    "server_reset_query",
    "two_phase_recovery_interval",
];

/// The settings as a TOML table (keys sorted; unset options absent).
pub fn general_table(g: &General) -> toml::Table {
    match toml::Value::try_from(g) {
        Ok(toml::Value::Table(t)) => t,
        _ => toml::Table::new(),
    }
}

/// `SET key = value`: `value` as TOML (a number, `true`, a quoted string) or a bare word.
pub fn set(key: &str, value: &str) -> Result<(), AdminError> {
    let key = key.to_ascii_lowercase();
    if !CHANGEABLE.contains(&key.as_str()) {
        return Err(AdminError::Invalid(format!(
            "setting \"{key}\" cannot be changed at run time (changeable: {})",
            CHANGEABLE.join(", ")
        )));
    }
    let parsed = format!("v = {value}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.trim_matches('\'').to_string()));
    let current = Registry::current();
    let mut settings = current.settings.clone();
    let mut table = general_table(&settings.config.general);
    table.insert(key.clone(), parsed);
    settings.config.general =
        toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| {
                AdminError::Invalid(format!("SET {key}: {}", e.message().trim()))
            })?;
    settings
        .check()
        .map_err(|e| AdminError::Invalid(format!("SET {key}: {e}")))?;
    Registry::install(Registry::build(settings, Some(&current)));
    tracing::info!("SET {key} = {value}");
    Ok(())
}
