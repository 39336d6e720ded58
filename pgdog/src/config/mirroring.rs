//! `[[mirroring]]`: a database's transactions replayed on another one, asynchronously
//! (`backend::mirror`).
use serde::Deserialize;

/// Which transactions a mirror replays.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum MirrorLevel {
    #[default]
    All,
    /// Transactions without DDL.
    Dml,
    /// Transactions with DDL (CREATE, ALTER, DROP, TRUNCATE, ...).
    Ddl,
}

impl MirrorLevel {
    pub fn name(self) -> &'static str {
        match self {
            MirrorLevel::All => "all",
            MirrorLevel::Dml => "dml",
            MirrorLevel::Ddl => "ddl",
        }
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Mirroring {
    /// The database whose clients' transactions are replayed.
    pub source_db: String,
    /// Where they are replayed (a database of this pgdog, sharded or not).
    pub destination_db: String,
    /// Share of transactions replayed, 0.0 to 1.0.
    #[serde(default = "default_exposure")]
    pub exposure: f64,
    /// Transactions waiting for the destination, all clients together; past it they are
    /// dropped (counted).
    #[serde(default = "default_queue_length")]
    pub queue_length: usize,
    #[serde(default)]
    pub level: MirrorLevel,
}

fn default_exposure() -> f64 {
    1.0
}

fn default_queue_length() -> usize {
    128
}

impl super::Settings {
    /// `[[mirroring]]` entries name configured databases, each pair once.
    pub(super) fn check_mirroring(&self) -> Result<(), String> {
        let entries = &self.config.mirroring;
        for (i, m) in entries.iter().enumerate() {
            let at = format!("mirroring[{i}]");
            for db in [&m.source_db, &m.destination_db] {
                if !self.has_database(db) {
                    return Err(format!("{at}: database `{db}` is not configured"));
                }
            }
            if m.source_db == m.destination_db {
                return Err(format!("{at}: source_db and destination_db are the same"));
            }
            if !(0.0..=1.0).contains(&m.exposure) {
                return Err(format!("{at}: exposure must be between 0.0 and 1.0"));
            }
            if m.queue_length == 0 {
                return Err(format!("{at}: queue_length must be at least 1"));
            }
            let same =
                |o: &Mirroring| o.source_db == m.source_db && o.destination_db == m.destination_db;
            if entries[..i].iter().any(same) {
                return Err(format!(
                    "{at}: {} -> {} is mirrored twice",
                    m.source_db, m.destination_db
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Settings;
    use crate::scratch::Scratch;

    const USERS: &str = "[[users]]\nname = \"app\"\ndatabase = \"a\"\npassword = \"pw\"\n";

    fn load(extra: &str) -> Result<Settings, String> {
        let dir = Scratch::new("pgdog-mirroring-config");
        let c = dir.write(
            "p.toml",
            &format!("[[databases]]\nname = \"a\"\n\n[[databases]]\nname = \"b\"\nport = 5433\n\n{extra}"),
        );
        let u = dir.write("u.toml", USERS);
        Settings::load(&c, &u).map_err(|e| e.to_string())
    }

    #[test]
    fn entries_are_checked() {
        let s = load("[[mirroring]]\nsource_db = \"a\"\ndestination_db = \"b\"\n").unwrap();
        let m = &s.config.mirroring[0];
        assert_eq!((m.exposure, m.queue_length), (1.0, 128));
        assert_eq!(m.level, super::MirrorLevel::All);
        let s = load("[[mirroring]]\nsource_db = \"a\"\ndestination_db = \"b\"\nlevel = \"ddl\"\n");
        assert_eq!(
            s.unwrap().config.mirroring[0].level,
            super::MirrorLevel::Ddl
        );
        for (bad, says) in [
            ("destination_db = \"c\"", "database `c` is not configured"),
            ("destination_db = \"a\"", "the same"),
            ("destination_db = \"b\"\nexposure = 1.5", "exposure"),
            ("destination_db = \"b\"\nqueue_length = 0", "queue_length"),
            ("destination_db = \"b\"\nlevel = \"some\"", "level"),
        ] {
            let err = load(&format!("[[mirroring]]\nsource_db = \"a\"\n{bad}\n")).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
        let twice = "[[mirroring]]\nsource_db = \"a\"\ndestination_db = \"b\"\n\n".repeat(2);
        assert!(load(&twice).unwrap_err().contains("twice"));
    }

    #[test]
    fn cert_rules_need_tls_client_ca() {
        let dir = Scratch::new("pgdog-hba-cert-config");
        let hba = dir.write(
            "hba.conf",
            "host all all 127.0.0.1/32 trust\nhostssl all all 0.0.0.0/0 cert\n",
        );
        let general = format!("[general]\nauth_hba_file = \"{}\"\n", hba.display());
        let err = load(&general).unwrap_err();
        assert!(
            err.contains("line 2") && err.contains("tls_client_ca"),
            "{err}"
        );
        let ca = dir.write("ca.crt", "");
        let with_ca = format!("{general}tls_client_ca = \"{}\"\n", ca.display());
        assert!(load(&with_ca).is_ok());
    }

    #[test]
    fn dry_run_needs_a_planned_count_on_one_server() {
        let err = load("[general]\ndry_run = true\n").unwrap_err();
        assert!(err.contains("dry_run needs dry_run_shards"), "{err}");
        let s = load("[general]\ndry_run = true\ndry_run_shards = 4\n").unwrap();
        assert_eq!(s.dry_run("a"), Some(4));
        let err = load("[general]\ndry_run_shards = 1\n").unwrap_err();
        assert!(err.contains("at least 2"), "{err}");
    }
}
