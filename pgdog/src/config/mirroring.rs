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
