//! A client's session parameters in transaction mode: what the client has asked for (startup
//! packet, `options=-c`, SET/RESET), and the SQL that makes a server connection match it.
use super::statements::SetChange;
use std::collections::HashMap;

/// Startup packet keys that are not session parameters.
const NOT_PARAMETERS: &[&str] = &["user", "database", "replication", "options"];

use crate::net::quote::literal as quote;

/// Each parameter is kept as the statement that sets it, which is also what a server's
/// `settings` record: startup values through `set_config` (raw text, exactly as in a startup
/// packet: `search_path=a,b` is two schemas), SET values as the client wrote them.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Params {
    /// name -> statement, from the startup packet and `options`.
    startup: HashMap<String, String>,
    /// startup values as given, for ParameterStatus at login.
    startup_raw: HashMap<String, String>,
    /// name -> statement the client wants now (`None`: the server's default).
    wanted: HashMap<String, Option<String>>,
    /// Fingerprint of what a matching server's settings would be.
    fingerprint: u64,
}

fn set_config(name: &str, raw: &str) -> String {
    format!(
        "SELECT pg_catalog.set_config({}, {}, false);",
        quote(name),
        quote(raw)
    )
}

impl Params {
    /// From the startup packet's parameters.
    pub fn from_startup(params: &[(String, String)]) -> Params {
        let mut startup_raw = HashMap::new();
        for (k, v) in params {
            if k == "options" {
                for (name, value) in parse_options(v) {
                    startup_raw.insert(name.to_ascii_lowercase(), value);
                }
            } else if !NOT_PARAMETERS.contains(&k.as_str()) && !k.starts_with("_pq_.") {
                startup_raw.insert(k.to_ascii_lowercase(), v.clone());
            }
        }
        // Reported back under Postgres' name for it (an unknown one is refused at login).
        if let Some(v) = startup_raw.get_mut("client_encoding") {
            if let Some(name) = crate::net::encoding::canonical(v) {
                *v = name.to_string();
            }
        }
        let startup: HashMap<String, String> = startup_raw
            .iter()
            .map(|(k, v)| (k.clone(), set_config(k, v)))
            .collect();
        let wanted = startup
            .iter()
            .map(|(k, v)| (k.clone(), Some(v.clone())))
            .collect();
        let mut p = Params {
            startup,
            startup_raw,
            wanted,
            fingerprint: 0,
        };
        p.refresh();
        p
    }

    /// Fingerprint of the settings a server needs to match this client (as the server's
    /// `settings_fingerprint`): equal means no SET is needed.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    fn refresh(&mut self) {
        let target: HashMap<String, String> = self
            .wanted
            .iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| (k.clone(), v.clone())))
            .collect();
        self.fingerprint = crate::backend::server::fingerprint(&target);
    }

    /// Records a change the server has applied for this client.
    pub fn apply(&mut self, change: &SetChange) {
        match change {
            SetChange::Config(name, raw) => {
                self.wanted
                    .insert(name.clone(), Some(set_config(name, raw)));
            }
            SetChange::Set(name, value) => {
                self.wanted.insert(
                    name.clone(),
                    Some(format!("SET {} TO {value};", ident(name))),
                );
            }
            SetChange::Reset(name) => {
                let v = self.startup.get(name).cloned();
                self.wanted.insert(name.clone(), v);
            }
            SetChange::ResetAll => {
                self.wanted = self
                    .startup
                    .iter()
                    .map(|(k, v)| (k.clone(), Some(v.clone())))
                    .collect();
            }
        }
        self.refresh();
    }

    /// Records the value the server actually has for `name` (read back with
    /// `current_setting`): `None` when the parameter does not exist there.
    pub fn set_actual(&mut self, name: &str, value: Option<&str>) {
        let statement = value.map(|v| set_config(name, v));
        self.wanted.insert(name.to_string(), statement);
        self.refresh();
    }

    /// Names of every parameter the client has a wish for.
    pub fn names(&self) -> impl Iterator<Item = String> + '_ {
        self.wanted.keys().cloned()
    }

    /// The SQL that makes a server with `settings` match this client, and the settings the
    /// server will have after it; `None` when it already matches.
    pub fn sync(
        &self,
        settings: &HashMap<String, String>,
    ) -> Option<(String, HashMap<String, String>)> {
        let mut sql = String::new();
        let mut after = settings.clone();
        let mut names: Vec<&String> = self.wanted.keys().chain(settings.keys()).collect();
        names.sort();
        names.dedup();
        for name in names {
            let want = self.wanted.get(name).cloned().flatten();
            let have = settings.get(name);
            if want.as_ref() == have {
                continue;
            }
            match want {
                Some(statement) => {
                    sql.push_str(&statement);
                    after.insert(name.clone(), statement);
                }
                None => {
                    sql.push_str(&format!("RESET {};", ident(name)));
                    after.remove(name);
                }
            }
        }
        (!sql.is_empty()).then_some((sql, after))
    }

    /// Values for ParameterStatus at login (the client's own, by name).
    pub fn startup_value(&self, name: &str) -> Option<String> {
        self.startup_raw.get(&name.to_ascii_lowercase()).cloned()
    }
}

/// A parameter name as an identifier (names with dots, like `pgdog.shard`, are fine unquoted).
fn ident(name: &str) -> String {
    if name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '.')
    {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// `-c name=value`, `-cname=value` and `--name=value` items of the `options` startup parameter
/// (backslash escapes a space).
/// The first word of an `options` startup value that is not a `-c name=value` or
/// `--name=value` setting (Postgres refuses those at login).
pub fn invalid_option(options: &str) -> Option<String> {
    let mut it = options.split_whitespace();
    while let Some(w) = it.next() {
        let item = if w == "-c" {
            it.next().map(str::to_string)
        } else if let Some(rest) = w.strip_prefix("-c") {
            Some(rest.to_string())
        } else {
            w.strip_prefix("--").map(str::to_string)
        };
        match item {
            Some(i) if i.contains('=') && !i.starts_with('=') => {}
            _ => return Some(w.to_string()),
        }
    }
    None
}

fn parse_options(options: &str) -> Vec<(String, String)> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            c if c.is_whitespace() => {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    let mut out = Vec::new();
    let mut it = words.into_iter();
    while let Some(w) = it.next() {
        let item = if w == "-c" {
            it.next()
        } else if let Some(rest) = w.strip_prefix("-c") {
            Some(rest.to_string())
        } else {
            w.strip_prefix("--").map(str::to_string)
        };
        if let Some((k, v)) = item.as_deref().and_then(|i| i.split_once('=')) {
            out.push((k.replace('-', "_"), v.to_string()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn startup_options_and_sync() {
        let p = Params::from_startup(&[
            ("user".into(), "app".into()),
            ("application_name".into(), "psql".into()),
            (
                "options".into(),
                "-c statement_timeout=5s --lock-timeout=1s -csearch_path=a\\,\\ b".into(),
            ),
        ]);
        let mut server = HashMap::new();
        server.insert("timezone".to_string(), "SET timezone TO 'UTC';".to_string());
        let (sql, after) = p.sync(&server).unwrap();
        assert_eq!(
            sql,
            "SELECT pg_catalog.set_config('application_name', 'psql', false);\
             SELECT pg_catalog.set_config('lock_timeout', '1s', false);\
             SELECT pg_catalog.set_config('search_path', 'a, b', false);\
             SELECT pg_catalog.set_config('statement_timeout', '5s', false);RESET timezone;"
        );
        assert!(p.sync(&after).is_none());
        let mut p2 = p.clone();
        p2.apply(&SetChange::Set("timezone".into(), "'UTC'".into()));
        p2.apply(&SetChange::Reset("statement_timeout".into()));
        assert_eq!(p2.sync(&after).unwrap().0, "SET timezone TO 'UTC';");
        p2.apply(&SetChange::ResetAll);
        assert!(p2.sync(&after).is_none());
        assert_eq!(p.startup_value("application_name").as_deref(), Some("psql"));
        // The fingerprint follows every change and matches a server synced to it.
        assert_eq!(p.fingerprint(), crate::backend::server::fingerprint(&after));
        let mut p3 = p.clone();
        p3.apply(&SetChange::Set("work_mem".into(), "'8MB'".into()));
        assert_ne!(p3.fingerprint(), p.fingerprint());
        let (_, after3) = p3.sync(&after).unwrap();
        assert_eq!(
            p3.fingerprint(),
            crate::backend::server::fingerprint(&after3)
        );
    }
}
