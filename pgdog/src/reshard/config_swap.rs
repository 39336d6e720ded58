//! The configuration change of a cutover: the source database's name now serves from the
//! destination's servers and the destination's name from the source's (so the old servers stay
//! reachable, e.g. for verification or reverse replication). Works on the TOML text: every
//! `[[databases]]` entry, `[[sharded_tables]]` and `[[omnisharded_tables]]` of one name gets the
//! other. Entries that relied on `database_name` defaulting to their `name` get it written out,
//! so they keep connecting to the same server-side database. users.toml is left alone: users of
//! the source name keep their passwords and now reach the new shards.
use std::path::{Path, PathBuf};
use toml::{Table, Value};

#[derive(Debug, thiserror::Error)]
pub enum SwapError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not valid TOML: {reason}")]
    Parse { path: PathBuf, reason: String },
    #[error("writing {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Shape(String),
}

/// Swaps the names `a` and `b` in a pgdog.toml text.
pub fn swap_databases(text: &str, a: &str, b: &str) -> Result<String, String> {
    let mut doc: Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
    let other = |name: &str| -> Option<&str> {
        if name == a {
            Some(b)
        } else if name == b {
            Some(a)
        } else {
            None
        }
    };
    let mut found = (false, false);
    if let Some(Value::Array(dbs)) = doc.get_mut("databases") {
        for entry in dbs.iter_mut() {
            let Value::Table(t) = entry else {
                return Err("[[databases]] entries must be tables".into());
            };
            let Some(name) = t.get("name").and_then(Value::as_str).map(str::to_string) else {
                continue;
            };
            let Some(new) = other(&name) else { continue };
            if name == a {
                found.0 = true;
            } else {
                found.1 = true;
            }
            if !t.contains_key("database_name") {
                t.insert("database_name".into(), Value::String(name.clone()));
            }
            t.insert("name".into(), Value::String(new.to_string()));
        }
    }
    if !found.0 || !found.1 {
        return Err(format!(
            "the configuration must have [[databases]] entries for both `{a}` and `{b}`"
        ));
    }
    // Every per-database entry: the layout goes with the servers it describes.
    for key in [
        "sharded_tables",
        "omnisharded_tables",
        "sharded_schemas",
        "bucket_maps",
    ] {
        if let Some(Value::Array(items)) = doc.get_mut(key) {
            for entry in items.iter_mut() {
                let Value::Table(t) = entry else { continue };
                let Some(db) = t.get("database").and_then(Value::as_str) else {
                    continue;
                };
                if let Some(new) = other(db) {
                    t.insert("database".into(), Value::String(new.to_string()));
                }
            }
        }
    }
    toml::to_string(&doc).map_err(|e| e.to_string())
}

/// The servers (host, port, database) of database `name`'s `[[databases]]` entries in a
/// pgdog.toml text, sorted.
fn servers_in(text: &str, name: &str) -> Result<Vec<(String, i64, String)>, String> {
    let doc: Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
    let mut out = Vec::new();
    if let Some(Value::Array(dbs)) = doc.get("databases") {
        for t in dbs.iter().filter_map(Value::as_table) {
            if t.get("name").and_then(Value::as_str) != Some(name) {
                continue;
            }
            out.push((
                t.get("host")
                    .and_then(Value::as_str)
                    .unwrap_or("127.0.0.1")
                    .to_string(),
                t.get("port").and_then(Value::as_integer).unwrap_or(5432),
                t.get("database_name")
                    .and_then(Value::as_str)
                    .unwrap_or(name)
                    .to_string(),
            ));
        }
    }
    out.sort();
    Ok(out)
}

/// A fleet cutover's step on one proxy: makes `from` serve the servers `to` has in the running
/// configuration `running`. Proxies may share one file, so a file already switched (its `from`
/// entries are `to`'s servers) is left as it is; `None` then, else the backup's path.
pub fn switch_file(
    config: &Path,
    from: &str,
    to: &str,
    running: &crate::config::Settings,
) -> Result<Option<PathBuf>, SwapError> {
    let text = std::fs::read_to_string(config).map_err(|source| SwapError::Read {
        path: config.to_path_buf(),
        source,
    })?;
    let mut target: Vec<(String, i64, String)> = running
        .config
        .databases
        .iter()
        .filter(|d| d.name == to)
        .map(|d| (d.host.clone(), d.port as i64, d.database_name().to_string()))
        .collect();
    target.sort();
    let parse = |reason| SwapError::Parse {
        path: config.to_path_buf(),
        reason,
    };
    if !target.is_empty() && servers_in(&text, from).map_err(parse)? == target {
        return Ok(None);
    }
    swap_file(config, from, to).map(Some)
}

/// The file the configuration had before a cutover rewrote it.
pub fn backup_path(config: &Path) -> PathBuf {
    let mut name = config
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_else(|| "pgdog.toml".into());
    name.push(".before-cutover");
    config.with_file_name(name)
}

/// Rewrites `config` with `a` and `b` swapped, keeping the old file next to it
/// (`<file>.before-cutover`); the new file replaces the old one atomically.
pub fn swap_file(config: &Path, a: &str, b: &str) -> Result<PathBuf, SwapError> {
    let text = std::fs::read_to_string(config).map_err(|source| SwapError::Read {
        path: config.to_path_buf(),
        source,
    })?;
    let swapped = swap_databases(&text, a, b).map_err(|reason| SwapError::Parse {
        path: config.to_path_buf(),
        reason,
    })?;
    let backup = backup_path(config);
    let write = |path: &Path, body: &str| {
        std::fs::write(path, body).map_err(|source| SwapError::Write {
            path: path.to_path_buf(),
            source,
        })
    };
    write(&backup, &text)?;
    let mut tmp = config.as_os_str().to_os_string();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    write(
        &tmp,
        &format!(
            "# Rewritten by pgdog cutover: `{a}` now serves from the servers that were `{b}`\n\
             # (the previous file: {}).\n{swapped}",
            backup.display()
        ),
    )?;
    std::fs::rename(&tmp, config).map_err(|source| SwapError::Write {
        path: config.to_path_buf(),
        source,
    })?;
    Ok(backup)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    const TEXT: &str = r#"
[general]
port = 6432

[[databases]]
name = "app"
shard = 0
port = 5000

[[databases]]
name = "app_new"
shard = 0
port = 6000
database_name = "postgres"

[[databases]]
name = "app_new"
shard = 1
port = 6001
database_name = "postgres"

[[databases]]
name = "other"
port = 7000

[[sharded_tables]]
database = "app_new"
name = "users"
column = "id"

[[bucket_maps]]
database = "app_new"
buckets = 4
shards = ["0-1", "2-3"]

[[omnisharded_tables]]
database = "app_new"
tables = ["countries"]
"#;

    #[test]
    fn swaps_names_and_keeps_server_databases() {
        let out = swap_databases(TEXT, "app", "app_new").unwrap();
        let config: Config = toml::from_str(&out).unwrap();
        let named = |name: &str| -> Vec<_> {
            let entries = config.databases.iter();
            entries.filter(|d| d.name == name).collect()
        };
        let app = named("app");
        assert_eq!(app.len(), 2);
        assert!(app
            .iter()
            .all(|d| d.port >= 6000 && d.database_name() == "postgres"));
        let old = named("app_new");
        assert_eq!(old.len(), 1);
        assert_eq!(old[0].port, 5000);
        assert_eq!(old[0].database_name(), "app");
        assert!(config
            .databases
            .iter()
            .any(|d| d.name == "other" && d.database_name() == "other"));
        assert_eq!(config.sharded_tables[0].database, "app");
        assert_eq!(config.omnisharded_tables[0].database, "app");
        assert_eq!(config.bucket_maps[0].database, "app");
        // Swapping back gives the original placement.
        let back: Config =
            toml::from_str(&swap_databases(&out, "app", "app_new").unwrap()).unwrap();
        assert!(back
            .databases
            .iter()
            .any(|d| d.name == "app" && d.port == 5000));
    }

    #[test]
    fn refuses_missing_names() {
        assert!(swap_databases(TEXT, "app", "nope").is_err());
        assert!(swap_databases("not = [toml", "a", "b").is_err());
    }

    #[test]
    fn file_swap_keeps_a_backup() {
        let dir = crate::scratch::Scratch::new("pgdog-swap");
        let path = dir.write("pgdog.toml", TEXT);
        let backup = swap_file(&path, "app", "app_new").unwrap();
        assert_eq!(std::fs::read_to_string(&backup).unwrap(), TEXT);
        let config: Config = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(config.sharded_tables[0].database, "app");
    }

    #[test]
    fn a_shared_file_is_switched_once() {
        let dir = crate::scratch::Scratch::new("pgdog-switch");
        let path = dir.write("pgdog.toml", TEXT);
        let users_toml = "[[users]]\nname = \"u\"\ndatabase = \"app\"\npassword = \"p\"\n";
        let users = dir.write("users.toml", users_toml);
        // Two proxies loaded the same file before the switch.
        let running = crate::config::Settings::load(&path, &users).unwrap();
        assert!(switch_file(&path, "app", "app_new", &running)
            .unwrap()
            .is_some());
        let once = std::fs::read_to_string(&path).unwrap();
        // The second proxy finds it switched already: no second swap (which would undo it).
        assert!(switch_file(&path, "app", "app_new", &running)
            .unwrap()
            .is_none());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), once);
    }
}
