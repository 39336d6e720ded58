//! Shared setup for the replication_* tests: a primary + standby topology, replication
//! connections through pgdog's client, and a collector that streams decoded pgoutput messages
//! until a condition holds (confirming at transaction ends like `pgdog logical-dump`).
#![allow(dead_code)]
use pgdog::backend::ServerTarget;
use pgdog::replication::client::{
    CreatedSlot, ReplicationClient, ReplicationEvent, SlotOptions, SnapshotAction, StartOptions,
};
use pgdog::replication::dump::Boundary;
use pgdog::replication::pgoutput::{ColumnValue, Decoder, LogicalMessage, OldTuple, TupleData};
use std::time::Duration;
use topology::{Node, Topology};

pub const DEADLINE: Duration = Duration::from_secs(60);

/// Superuser `postgres` on database `postgres` of `node`.
pub fn target(node: &Node) -> ServerTarget {
    ServerTarget {
        host: node.host().to_string(),
        port: node.port,
        database: "postgres".into(),
        user: "postgres".into(),
        password: None,
        pass_through: None,
    }
}

/// A replicated topology where `setup` ran on the primary and the standby has replayed it.
pub fn replicated(setup: &str) -> Topology {
    let topo = Topology::replicated().expect("replicated topology");
    // Without a write, the primary's insert LSN can stay ahead of anything the standby can
    // replay until the next running-xacts record (up to 15 s): only wait after a setup.
    if !setup.is_empty() {
        topo.primary().psql(setup).expect("setup SQL");
        topo.wait_for_standby(DEADLINE).expect("standby replay");
    }
    topo
}

/// A plain SQL connection (tokio-postgres) to `node`'s `postgres` database.
pub async fn sql_client(node: &Node) -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(&node.url("postgres"), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    client
}

/// A replication connection to `node`.
pub async fn connect(node: &Node) -> ReplicationClient {
    ReplicationClient::connect(&target(node), DEADLINE)
        .await
        .expect("replication connection")
}

/// Slot `name` (pgoutput) created on the standby while the primary is nudged.
pub async fn standby_slot(
    topo: &Topology,
    name: &str,
    temporary: bool,
    snapshot: SnapshotAction,
    two_phase: bool,
) -> (ReplicationClient, CreatedSlot) {
    let mut client = connect(topo.standby()).await;
    let mut slot = SlotOptions::new(name);
    slot.temporary = temporary;
    slot.snapshot = snapshot;
    slot.two_phase = two_phase;
    let created = client
        .create_slot_on_standby(&slot, &target(topo.primary()), DEADLINE)
        .await
        .expect("slot on the standby");
    (client, created)
}

/// A started stream and what it has delivered so far.
pub struct Collector {
    pub client: ReplicationClient,
    pub decoder: Decoder,
    pub boundary: Boundary,
    /// Every decoded message with its XLogData start LSN.
    pub messages: Vec<(u64, LogicalMessage)>,
}

impl Collector {
    /// START_REPLICATION on `client` and a decoder for `options.proto_version`.
    pub async fn start(
        mut client: ReplicationClient,
        slot: &str,
        lsn: u64,
        options: &StartOptions,
    ) -> Collector {
        client
            .start(slot, lsn, options)
            .await
            .expect("START_REPLICATION");
        Collector {
            client,
            decoder: Decoder::new(options.proto_version),
            boundary: Boundary::default(),
            messages: Vec::new(),
        }
    }

    /// Streams until `done(messages)` holds (checked after each message); confirms each
    /// transaction end. Panics after [`DEADLINE`].
    pub async fn until(&mut self, what: &str, done: impl Fn(&[(u64, LogicalMessage)]) -> bool) {
        let wait = async {
            while !done(&self.messages) {
                let event = self
                    .client
                    .next_event()
                    .await
                    .expect("replication event")
                    .expect("the server ended the stream");
                if let ReplicationEvent::XLogData {
                    wal_start, data, ..
                } = event
                {
                    let msg = self.decoder.decode(wal_start, data).expect("decode");
                    if let Some(lsn) = self.boundary.after(&msg, wal_start) {
                        self.client.confirm(lsn);
                    }
                    self.messages.push((wal_start, msg));
                }
            }
        };
        if tokio::time::timeout(DEADLINE, wait).await.is_err() {
            panic!(
                "timed out waiting for {what}; got:\n{}",
                self.render().join("\n")
            );
        }
    }

    /// Streams until `n` transaction ends (commit, prepare, ...) were received.
    pub async fn until_ends(&mut self, n: usize) {
        self.until(&format!("{n} transaction ends"), |m| {
            m.iter().filter(|(_, m)| is_end(m)).count() >= n
        })
        .await
    }

    /// Every row change rendered as text (see [`render`]).
    pub fn render(&self) -> Vec<String> {
        self.messages
            .iter()
            .filter_map(|(_, m)| render(&self.decoder, m))
            .collect()
    }

    /// The `id` (first column, as text) of every Insert received.
    pub fn inserted_ids(&self) -> Vec<i64> {
        inserted_ids(&self.messages)
    }
}

/// The `id` (first column, as text) of every Insert in `messages`.
pub fn inserted_ids(messages: &[(u64, LogicalMessage)]) -> Vec<i64> {
    messages
        .iter()
        .filter_map(|(_, m)| match m {
            LogicalMessage::Insert { new, .. } => match new.columns.first() {
                Some(ColumnValue::Text(t)) => std::str::from_utf8(t).ok()?.parse().ok(),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

/// Whether `m` ends a transaction (what the stream confirms at).
pub fn is_end(m: &LogicalMessage) -> bool {
    matches!(
        m,
        LogicalMessage::Commit { .. }
            | LogicalMessage::Prepare(_)
            | LogicalMessage::CommitPrepared { .. }
            | LogicalMessage::RollbackPrepared { .. }
            | LogicalMessage::StreamCommit { .. }
            | LogicalMessage::StreamPrepare(_)
    )
}

/// A tuple as `(v1,v2,...)`: text values, `null`, `~` for an unchanged TOAST value, `0x..`
/// for binary values.
pub fn tuple(t: &TupleData) -> String {
    let cols: Vec<String> = t
        .columns
        .iter()
        .map(|c| match c {
            ColumnValue::Null => "null".to_string(),
            ColumnValue::Unchanged => "~".to_string(),
            ColumnValue::Text(b) => String::from_utf8_lossy(b).into_owned(),
            ColumnValue::Binary(b) => {
                let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
                format!("0x{hex}")
            }
        })
        .collect();
    format!("({})", cols.join(","))
}

fn old(o: &OldTuple) -> String {
    match o {
        OldTuple::Key(t) => format!(" key={}", tuple(t)),
        OldTuple::Full(t) => format!(" old={}", tuple(t)),
    }
}

/// A row change as one line: `insert t (1,a)`, `update t key=(2,null) new=(3,b)`,
/// `delete t old=(1,a)`, `truncate t1,t2`; other messages give `None`.
pub fn render(decoder: &Decoder, m: &LogicalMessage) -> Option<String> {
    let name = |oid: &u32| {
        decoder
            .relation(*oid)
            .map(|r| r.name.clone())
            .unwrap_or_else(|| format!("oid{oid}"))
    };
    Some(match m {
        LogicalMessage::Insert { relation, new, .. } => {
            format!("insert {} {}", name(relation), tuple(new))
        }
        LogicalMessage::Update {
            relation,
            old: o,
            new,
            ..
        } => format!(
            "update {}{} new={}",
            name(relation),
            o.as_ref().map(old).unwrap_or_default(),
            tuple(new)
        ),
        LogicalMessage::Delete {
            relation, old: o, ..
        } => {
            format!("delete {}{}", name(relation), old(o))
        }
        LogicalMessage::Truncate { relations, .. } => format!(
            "truncate {}",
            relations.iter().map(name).collect::<Vec<_>>().join(",")
        ),
        _ => return None,
    })
}

/// Default START_REPLICATION options: protocol 4, publication `pub`.
pub fn options() -> StartOptions {
    StartOptions::new(4, &["pub"])
}
