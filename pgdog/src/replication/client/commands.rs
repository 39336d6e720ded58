//! Replication commands as SQL text (IDENTIFY_SYSTEM, CREATE_REPLICATION_SLOT,
//! START_REPLICATION, DROP_REPLICATION_SLOT) and their results. Validates names and options so
//! nothing a caller passes can change the command's meaning; sends nothing itself.
use super::error::{ReplicationError, Result};

/// What IDENTIFY_SYSTEM returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemInfo {
    /// The cluster's system identifier (a primary and its standbys share it).
    pub system_id: String,
    pub timeline: u32,
    /// The current WAL flush position (on a standby: the replay position).
    pub xlogpos: u64,
    /// The database of this `replication=database` connection.
    pub dbname: Option<String>,
}

/// What CREATE_REPLICATION_SLOT does with the slot's snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SnapshotAction {
    /// Export it (`SET TRANSACTION SNAPSHOT` from another session while this connection idles).
    Export,
    /// Use it in the replication connection's own open REPEATABLE READ transaction.
    Use,
    /// No snapshot.
    #[default]
    Nothing,
}

impl SnapshotAction {
    fn sql(self) -> &'static str {
        match self {
            SnapshotAction::Export => "export",
            SnapshotAction::Use => "use",
            SnapshotAction::Nothing => "nothing",
        }
    }
}

/// A logical slot to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotOptions {
    pub name: String,
    /// Dropped by the server when the connection ends (or on error).
    pub temporary: bool,
    /// The output plugin (`pgoutput`).
    pub plugin: String,
    pub snapshot: SnapshotAction,
    /// Decode prepared transactions at PREPARE time.
    pub two_phase: bool,
}

impl SlotOptions {
    /// A `pgoutput` slot without a snapshot.
    pub fn new(name: &str) -> SlotOptions {
        SlotOptions {
            name: name.to_string(),
            temporary: false,
            plugin: "pgoutput".into(),
            snapshot: SnapshotAction::Nothing,
            two_phase: false,
        }
    }

    /// `CREATE_REPLICATION_SLOT ...`.
    pub fn command(&self) -> Result<String> {
        check_name("slot", &self.name)?;
        check_name("output plugin", &self.plugin)?;
        let mut options = vec![format!("SNAPSHOT '{}'", self.snapshot.sql())];
        if self.two_phase {
            options.push("TWO_PHASE true".into());
        }
        Ok(format!(
            "CREATE_REPLICATION_SLOT {}{} LOGICAL {} ({})",
            self.name,
            if self.temporary { " TEMPORARY" } else { "" },
            self.plugin,
            options.join(", ")
        ))
    }
}

/// What CREATE_REPLICATION_SLOT returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedSlot {
    pub name: String,
    /// Changes committed after this LSN are streamed; the snapshot shows everything before it.
    pub consistent_point: u64,
    /// The exported snapshot (with [`SnapshotAction::Export`]).
    pub snapshot: Option<String>,
    pub plugin: Option<String>,
}

/// `streaming` option of pgoutput.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Streaming {
    /// Large transactions are decoded only at commit.
    #[default]
    Off,
    /// In-progress transactions larger than `logical_decoding_work_mem` are streamed (proto 2+).
    On,
    /// Like `On`, for parallel apply (proto 4+).
    Parallel,
}

/// pgoutput options of START_REPLICATION.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartOptions {
    /// 1 to 4.
    pub proto_version: u32,
    /// Publications to stream (at least one).
    pub publications: Vec<String>,
    /// Column values in binary (send/recv) format.
    pub binary: bool,
    /// Logical decoding messages (`pg_logical_emit_message`).
    pub messages: bool,
    pub streaming: Streaming,
    /// PREPARE TRANSACTION decoded as Begin Prepare / Prepare (proto 3+).
    pub two_phase: bool,
}

impl StartOptions {
    /// Protocol `proto_version`, publications `publications`, everything else off.
    pub fn new(proto_version: u32, publications: &[&str]) -> StartOptions {
        StartOptions {
            proto_version,
            publications: publications.iter().map(|p| p.to_string()).collect(),
            binary: false,
            messages: false,
            streaming: Streaming::Off,
            two_phase: false,
        }
    }

    /// `START_REPLICATION SLOT s LOGICAL lsn (...)`; refuses combinations the protocol
    /// version does not support, so the server never has to.
    pub fn command(&self, slot: &str, lsn: u64) -> Result<String> {
        check_name("slot", slot)?;
        let v = self.proto_version;
        if !(1..=4).contains(&v) {
            return Err(ReplicationError::Option(format!(
                "proto_version {v}: pgoutput supports 1 to 4"
            )));
        }
        if self.publications.is_empty() {
            return Err(ReplicationError::Option(
                "at least one publication is needed".into(),
            ));
        }
        let need = |what: &str, min: u32| {
            if v < min {
                Err(ReplicationError::Option(format!(
                    "{what} needs proto_version {min} or later (got {v})"
                )))
            } else {
                Ok(())
            }
        };
        let publications = self
            .publications
            .iter()
            .map(|p| format!("\"{}\"", p.replace('"', "\"\"")))
            .collect::<Vec<_>>()
            .join(",");
        let mut options = vec![
            format!("proto_version '{v}'"),
            format!("publication_names {}", literal(&publications)),
        ];
        if self.binary {
            options.push("binary 'true'".into());
        }
        if self.messages {
            options.push("messages 'true'".into());
        }
        match self.streaming {
            Streaming::Off => {}
            Streaming::On => {
                need("streaming", 2)?;
                options.push("streaming 'on'".into());
            }
            Streaming::Parallel => {
                need("streaming 'parallel'", 4)?;
                options.push("streaming 'parallel'".into());
            }
        }
        if self.two_phase {
            need("two_phase", 3)?;
            options.push("two_phase 'true'".into());
        }
        Ok(format!(
            "START_REPLICATION SLOT {slot} LOGICAL {} ({})",
            format_lsn(lsn),
            options.join(", ")
        ))
    }
}

/// `DROP_REPLICATION_SLOT name [WAIT]`.
pub fn drop_slot(name: &str, wait: bool) -> Result<String> {
    check_name("slot", name)?;
    Ok(format!(
        "DROP_REPLICATION_SLOT {name}{}",
        if wait { " WAIT" } else { "" }
    ))
}

pub use crate::net::quote::literal;

/// Slot and plugin names: what Postgres allows for slots (lower case, digits, underscore).
fn check_name(what: &str, name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() < 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(ReplicationError::Option(format!(
            "{what} name {name:?}: use lower-case letters, digits and underscores (at most 63)"
        )))
    }
}

pub use crate::replication::pgoutput::format_lsn;

/// An LSN as Postgres prints it (`16/B374D848`), back to a number.
pub fn parse_lsn(s: &str) -> Result<u64> {
    crate::replication::pgoutput::parse_lsn(s).ok_or_else(|| ReplicationError::Lsn(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands() {
        let mut slot = SlotOptions::new("s1");
        slot.temporary = true;
        slot.snapshot = SnapshotAction::Export;
        assert_eq!(
            slot.command().unwrap(),
            "CREATE_REPLICATION_SLOT s1 TEMPORARY LOGICAL pgoutput (SNAPSHOT 'export')"
        );
        slot.name = "x; DROP".into();
        assert!(slot.command().is_err());
        let mut start = StartOptions::new(4, &["pub", "o'k"]);
        start.streaming = Streaming::Parallel;
        start.two_phase = true;
        start.binary = true;
        assert_eq!(
            start.command("s1", 0x1_0000_00ff).unwrap(),
            "START_REPLICATION SLOT s1 LOGICAL 1/FF (proto_version '4', publication_names \
             '\"pub\",\"o''k\"', binary 'true', streaming 'parallel', two_phase 'true')"
        );
        start.proto_version = 2;
        assert!(start.command("s1", 0).is_err(), "parallel needs 4");
        start.streaming = Streaming::On;
        assert!(start.command("s1", 0).is_err(), "two_phase needs 3");
        start.proto_version = 5;
        assert!(start.command("s1", 0).is_err());
        assert_eq!(
            drop_slot("s1", true).unwrap(),
            "DROP_REPLICATION_SLOT s1 WAIT"
        );
    }

    #[test]
    fn lsns() {
        assert_eq!(parse_lsn("16/B374D848").unwrap(), 0x16_B374_D848);
        assert_eq!(format_lsn(0x16_B374_D848), "16/B374D848");
        assert!(parse_lsn("16").is_err() && parse_lsn("x/1").is_err());
    }
}
