//! What each server of a reshard says about itself (one query, plus a replication connection
//! opened and closed on the servers the copy and the replay read from), and the checks made
//! of it: reachable, `wal_level`, free slots and WAL senders, `hot_standby_feedback`, versions,
//! the REPLICATION privilege, and timeouts that would end a long copy.
use super::{Check, Verdict, SERVER_TIMEOUT};
use crate::backend::server::{Server, ServerTarget};
use crate::config::Settings;
use crate::replication::client::ReplicationClient;
use crate::reshard::copy::{literal, source_shards};
use crate::reshard::orchestrate::ReshardOptions;
use crate::reshard::schema_sync::target;

/// Where a server stands in the reshard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    /// A source shard's primary: the replay's slot, and the copy when the shard has no replica.
    SourcePrimary(usize),
    /// A replica of a source shard: the copy reads from it.
    CopyReplica(usize),
    /// A destination shard's primary.
    Destination(usize),
}

impl Place {
    /// Replication reads from it: a source server, or with `--reverse` a destination too (the
    /// reverse replication's source after the cutover).
    fn replicated(self, reverse: bool) -> bool {
        reverse || !matches!(self, Place::Destination(_))
    }
}

/// What one server answered.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Found {
    pub version: u32,
    pub wal_level: String,
    pub max_slots: u32,
    pub slots: u32,
    pub max_senders: u32,
    pub senders: u32,
    pub hot_standby_feedback: bool,
    pub in_recovery: bool,
    pub superuser: bool,
    /// REPLICATION (or superuser).
    pub replication: bool,
    /// Settings that end a long statement or transaction, where not 0: (name, value).
    pub timeouts: Vec<(String, String)>,
    /// The reshard's permanent slot, when it exists already (a resumed reshard): its plugin,
    /// `wal_status` and whether a connection uses it.
    pub slot: Option<(String, String, bool)>,
    /// May run `pg_log_standby_snapshot()` (what creating a slot on a standby needs of the
    /// primary).
    pub can_nudge: bool,
    /// May `SET session_replication_role` (superuser, or PG15+'s SET privilege).
    pub can_set_role: bool,
    /// `data_directory`, where the user may read it.
    pub data_directory: Option<String>,
    /// `max_standby_streaming_delay`: on a standby, how long a query may hold up the replay
    /// of a conflicting change before it is cancelled (-1: never).
    pub standby_delay: String,
    /// A replication connection (opened on source servers only): the error, if it failed.
    pub replication_connection: Option<String>,
    pub user: String,
}

/// One server's answers, or why there are none.
#[derive(Debug, Clone)]
pub(super) struct Probe {
    pub place: Place,
    pub target: ServerTarget,
    pub found: Result<Found, String>,
}

impl Probe {
    fn name(&self) -> String {
        let what = match self.place {
            Place::SourcePrimary(s) => format!("source shard {s} primary"),
            Place::CopyReplica(s) => format!("source shard {s} replica"),
            Place::Destination(s) => format!("destination shard {s}"),
        };
        format!("{} ({what})", self.target.addr())
    }
}

/// Every server of the move, asked at once.
pub(super) async fn probe_all(settings: &Settings, options: &ReshardOptions) -> Vec<Probe> {
    let mut places = Vec::new();
    if let Ok(sources) = source_shards(settings, &options.databases.from) {
        for (shard, s) in sources.into_iter().enumerate() {
            places.push((Place::SourcePrimary(shard), s.primary));
            for r in s.replicas {
                places.push((Place::CopyReplica(shard), r));
            }
        }
    }
    for shard in 0..settings.shards(&options.databases.to).max(1) {
        if let Some(db) = settings.shard_server(&options.databases.to, shard) {
            places.push((Place::Destination(shard), target(settings, db)));
        }
    }
    let asks = places.into_iter().map(|(place, target)| async move {
        let found = match tokio::time::timeout(SERVER_TIMEOUT, ask(&target, place, options)).await {
            Ok(r) => r,
            Err(_) => Err(format!("no answer within {} s", SERVER_TIMEOUT.as_secs())),
        };
        Probe {
            place,
            target,
            found,
        }
    });
    futures_util::future::join_all(asks).await
}

/// The settings query of [`ask`].
fn settings_sql(slot: &str) -> String {
    format!(
        "SELECT current_setting('server_version_num'), current_setting('wal_level'), \
           current_setting('max_replication_slots'), \
           (SELECT count(*) FROM pg_catalog.pg_replication_slots)::text, \
           current_setting('max_wal_senders'), \
           (SELECT count(*) FROM pg_catalog.pg_stat_replication)::text, \
           current_setting('hot_standby_feedback'), pg_catalog.pg_is_in_recovery()::text, \
           r.rolsuper::text, (r.rolsuper OR r.rolreplication)::text, \
           current_setting('statement_timeout'), \
           current_setting('idle_in_transaction_session_timeout'), \
           coalesce(current_setting('transaction_timeout', true), '0'), \
           (SELECT concat_ws(':', plugin, coalesce(wal_status, ''), active) \
              FROM pg_catalog.pg_replication_slots WHERE slot_name = {}), \
           CASE WHEN pg_catalog.pg_has_role('pg_read_all_settings', 'MEMBER') \
             THEN current_setting('data_directory') END, \
           current_user::text, current_setting('max_standby_streaming_delay'), \
           CASE WHEN current_setting('server_version_num')::int >= 160000 \
             THEN pg_catalog.has_function_privilege('pg_catalog.pg_log_standby_snapshot()', \
               'EXECUTE')::text END \
         FROM pg_catalog.pg_roles r WHERE r.rolname = current_user",
        literal(slot)
    )
}

async fn ask(target: &ServerTarget, place: Place, o: &ReshardOptions) -> Result<Found, String> {
    let mut server = Server::connect(target, SERVER_TIMEOUT)
        .await
        .map_err(|e| e.to_string())?;
    let answered = answers(&mut server, &o.slot).await;
    server.terminate().await;
    let mut found = answered?;
    if place.replicated(o.reverse) {
        found.replication_connection =
            match ReplicationClient::connect(target, SERVER_TIMEOUT).await {
                Ok(c) => {
                    c.close().await;
                    None
                }
                Err(e) => Some(e.to_string()),
            };
    }
    Ok(found)
}

async fn answers(server: &mut Server, slot: &str) -> Result<Found, String> {
    let sql = settings_sql(slot);
    let row = server
        .query_rows(&sql)
        .await
        .map_err(|e| e.to_string())?
        .into_iter()
        .next()
        .ok_or("the user is not in pg_roles")?;
    let col = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
    let num = |i: usize| col(i).parse::<u32>().unwrap_or(0);
    let timeouts = [
        (10, "statement_timeout"),
        (11, "idle_in_transaction_session_timeout"),
        (12, "transaction_timeout"),
    ]
    .into_iter()
    .filter(|(i, _)| col(*i) != "0")
    .map(|(i, name)| (name.to_string(), col(i)))
    .collect();
    let version = num(0);
    let superuser = col(8) == "true";
    // PG15+: SET on a superuser-only parameter can be granted.
    let can_set_role = superuser
        || (version >= 150000
            && server
                .query_rows(
                    "SELECT pg_catalog.has_parameter_privilege('session_replication_role', 'SET')::text",
                )
                .await
                .ok()
                .and_then(|r| r.into_iter().next()?.into_iter().next()?)
                .is_some_and(|v| v == "true"));
    Ok(Found {
        version,
        wal_level: col(1),
        max_slots: num(2),
        slots: num(3),
        max_senders: num(4),
        senders: num(5),
        hot_standby_feedback: col(6) == "on",
        in_recovery: col(7) == "true",
        superuser,
        replication: col(9) == "true",
        timeouts,
        slot: row.get(13).cloned().flatten().map(|v| {
            let mut parts = v.splitn(3, ':');
            let mut next = || parts.next().unwrap_or_default().to_string();
            let (plugin, wal_status, active) = (next(), next(), next());
            (plugin, wal_status, active == "true")
        }),
        can_nudge: superuser || col(17) == "true",
        can_set_role,
        data_directory: row.get(14).cloned().flatten(),
        replication_connection: None,
        user: col(15),
        standby_delay: col(16),
    })
}

/// The answers of the servers that answered, with their probes.
fn answered(probes: &[Probe]) -> impl Iterator<Item = (&Probe, &Found)> {
    probes
        .iter()
        .filter_map(|p| p.found.as_ref().ok().map(|f| (p, f)))
}

/// The checks made of the servers' answers. `tables`: how many tables the copy reads (each
/// server copies at most `--parallel` of them at once, each with a temporary slot).
pub(super) fn checks(probes: &[Probe], o: &ReshardOptions, tables: usize) -> Vec<Check> {
    vec![
        reachable(probes),
        wal_level(probes, o.reverse),
        slots_and_senders(probes, o, tables),
        hot_standby_feedback(probes),
        versions(probes, o.reverse),
        replication_privilege(probes, o.reverse),
        timeouts(probes),
    ]
}

fn reachable(probes: &[Probe]) -> Check {
    let mut c = Check::new("servers");
    let has = |f: fn(&Place) -> bool| probes.iter().any(|p| f(&p.place));
    if !has(|p| matches!(p, Place::SourcePrimary(_))) {
        c.refuse("the source database has no primary in pgdog.toml");
    }
    if !has(|p| matches!(p, Place::Destination(_))) {
        c.refuse("the destination database has no primary in pgdog.toml");
    }
    for p in probes {
        if let Err(e) = &p.found {
            c.refuse(format!(
                "{} could not be asked: {e}; start it, fix its entry in pgdog.toml, or find \
                 why it answers slowly",
                p.name()
            ));
        }
    }
    if c.verdict() == Verdict::Ok {
        c.ok(format!("{} servers answered", probes.len()));
    }
    c
}

fn wal_level(probes: &[Probe], reverse: bool) -> Check {
    let mut c = Check::new("wal_level");
    for (p, f) in answered(probes).filter(|(p, _)| p.place.replicated(reverse)) {
        if f.wal_level == "logical" {
            continue;
        }
        let also = if matches!(p.place, Place::CopyReplica(_)) {
            " (logical decoding on a standby needs it on the standby and on its primary)"
        } else {
            ""
        };
        c.refuse(format!(
            "{} on {}: ALTER SYSTEM SET wal_level = logical, then restart it{also}",
            f.wal_level,
            p.name()
        ));
    }
    if c.verdict() == Verdict::Ok {
        c.ok("logical on every server replication reads from");
    }
    c
}

/// Slots and WAL senders each source server needs: the permanent slot and the replay's stream
/// on every primary; a temporary slot and a sender per table copied at once where the copy
/// reads (a replica, else the primary).
fn slots_and_senders(probes: &[Probe], o: &ReshardOptions, tables: usize) -> Check {
    let mut c = Check::new("replication slots and WAL senders");
    let copying = o.parallel.max(1).min(tables.max(1)) as u32;
    for (p, f) in answered(probes) {
        // The permanent slot is made before the copy and streamed from after it.
        let (slots, senders) = match p.place {
            Place::Destination(_) if o.reverse => (1, 1),
            Place::Destination(_) => continue,
            Place::CopyReplica(_) => (copying, copying),
            Place::SourcePrimary(shard) => {
                let has_replica = probes.iter().any(|q| q.place == Place::CopyReplica(shard));
                let copy = if has_replica { 0 } else { copying };
                (u32::from(f.slot.is_none()) + copy, copy.max(1))
            }
        };
        if let Some((plugin, wal_status, active)) = &f.slot {
            if plugin != "pgoutput" || wal_status == "lost" {
                c.refuse(format!(
                    "{}: slot {} exists but cannot be resumed from (plugin {plugin}, wal_status \
                     {wal_status}): drop it or choose another --slot",
                    p.name(),
                    o.slot
                ));
            } else if *active {
                c.warn(format!(
                    "{}: slot {} is in use by another connection (a reshard running, or one \
                     just killed): the replay waits for it",
                    p.name(),
                    o.slot
                ));
            }
        }
        let free_slots = f.max_slots.saturating_sub(f.slots);
        let free_senders = f.max_senders.saturating_sub(f.senders);
        if free_slots < slots {
            c.refuse(format!(
                "{}: {free_slots} free replication slots (max_replication_slots = {}, {} used), \
                 the reshard needs {slots}: raise max_replication_slots (restart) or drop unused slots",
                p.name(),
                f.max_slots,
                f.slots
            ));
        }
        if free_senders < senders {
            c.refuse(format!(
                "{}: {free_senders} free WAL senders (max_wal_senders = {}, {} in use), the \
                 reshard needs {senders}: raise max_wal_senders (restart){}",
                p.name(),
                f.max_senders,
                f.senders,
                if senders > 1 {
                    " or lower --parallel"
                } else {
                    ""
                }
            ));
        }
        if free_slots >= slots && free_senders >= senders && slots + senders > 0 {
            c.ok(format!(
                "{}: needs {slots} slots and {senders} senders, has {free_slots} and {free_senders} free",
                p.name()
            ));
        }
    }
    c
}

fn hot_standby_feedback(probes: &[Probe]) -> Check {
    let mut c = Check::new("hot_standby_feedback");
    let replicas: Vec<_> = answered(probes)
        .filter(|(p, _)| matches!(p.place, Place::CopyReplica(_)))
        .collect();
    if replicas.is_empty() {
        c.ok("no replica in the copy (each source shard is read from its primary)");
    }
    for (p, f) in replicas {
        if !f.in_recovery {
            c.refuse(format!(
                "{} is not a standby (pg_is_in_recovery() is false), but the copy would read it \
                 as a replica of its shard's primary: fix its role in pgdog.toml",
                p.name()
            ));
        } else if f.hot_standby_feedback {
            c.ok(format!("on for {}", p.name()));
        } else {
            c.refuse(format!(
                "off on {}: without it the primary's vacuum can cancel the copy's snapshot and \
                 invalidate its slot; ALTER SYSTEM SET hot_standby_feedback = on; SELECT \
                 pg_reload_conf(); on it",
                p.name()
            ));
        }
    }
    c
}

fn versions(probes: &[Probe], reverse: bool) -> Check {
    let mut c = Check::new("server versions");
    let major = |v: u32| v / 10000;
    let source_major = answered(probes)
        .filter(|(p, _)| matches!(p.place, Place::SourcePrimary(_)))
        .map(|(_, f)| major(f.version))
        .max()
        .unwrap_or(0);
    for (p, f) in answered(probes) {
        match p.place {
            Place::SourcePrimary(_) if f.version < 160000 => c.refuse(format!(
                "{} runs {}: the replay reads pgoutput protocol 4, PostgreSQL 16 or later",
                p.name(),
                major(f.version)
            )),
            Place::Destination(_) if reverse && f.version < 160000 => c.refuse(format!(
                "{} runs {}: --reverse replicates from it with pgoutput protocol 4, PostgreSQL \
                 16 or later",
                p.name(),
                major(f.version)
            )),
            Place::CopyReplica(_) if f.version < 160000 => c.refuse(format!(
                "{} runs {}: logical decoding on a standby needs PostgreSQL 16 or later; \
                 upgrade it or remove it from the source's entries (the copy then reads the primary)",
                p.name(),
                major(f.version)
            )),
            Place::Destination(_) if major(f.version) < source_major => c.warn(format!(
                "{} runs {} and the source {source_major}: the schema and COPY from a newer \
                 server may not load",
                p.name(),
                major(f.version)
            )),
            _ => {}
        }
    }
    if c.verdict() == Verdict::Ok {
        let mut all: Vec<u32> = answered(probes).map(|(_, f)| major(f.version)).collect();
        all.sort_unstable();
        all.dedup();
        let all: Vec<String> = all.iter().map(u32::to_string).collect();
        c.ok(format!("PostgreSQL {}", all.join(", ")));
    }
    c
}

fn replication_privilege(probes: &[Probe], reverse: bool) -> Check {
    let mut c = Check::new("REPLICATION privilege");
    for (p, f) in answered(probes).filter(|(p, _)| p.place.replicated(reverse)) {
        // A slot on a standby needs its primary to log a snapshot (pg_log_standby_snapshot()).
        let nudged = match p.place {
            Place::SourcePrimary(shard) => {
                probes.iter().any(|q| q.place == Place::CopyReplica(shard))
            }
            _ => false,
        };
        if nudged && !f.can_nudge {
            c.refuse(format!(
                "user {} on {} may not run pg_log_standby_snapshot(), which the copy from its \
                 replica needs: GRANT EXECUTE ON FUNCTION pg_catalog.pg_log_standby_snapshot() \
                 TO {}",
                f.user,
                p.name(),
                crate::net::quote::ident(&f.user)
            ));
        }
        if !f.replication {
            c.refuse(format!(
                "user {} on {} has neither REPLICATION nor SUPERUSER: ALTER ROLE {} REPLICATION",
                f.user,
                p.name(),
                crate::net::quote::ident(&f.user)
            ));
        } else if let Some(e) = &f.replication_connection {
            c.refuse(format!(
                "{} refused a replication connection for user {}: {e}",
                p.name(),
                f.user
            ));
        }
    }
    if c.verdict() == Verdict::Ok {
        c.ok("replication connections open on every server replication reads from");
    }
    c
}

fn timeouts(probes: &[Probe]) -> Check {
    let mut c = Check::new("statement and transaction timeouts");
    for (p, f) in answered(probes) {
        let replica = matches!(p.place, Place::CopyReplica(_)) && f.in_recovery;
        if replica && f.standby_delay != "-1" {
            c.warn(format!(
                "max_standby_streaming_delay = {} on {}: a change from the primary that conflicts \
                 with the copy's long read (a vacuum truncating a table, an ACCESS EXCLUSIVE \
                 lock) cancels it after that; ALTER SYSTEM SET max_standby_streaming_delay = -1; \
                 SELECT pg_reload_conf(); on it for the copy",
                f.standby_delay,
                p.name()
            ));
        }
        if f.timeouts.is_empty() {
            continue;
        }
        let set: Vec<String> = f
            .timeouts
            .iter()
            .map(|(name, value)| format!("{name} = {value}"))
            .collect();
        c.ok(format!(
            "{} on {} (pgdog's copy and replay sessions set them to 0)",
            set.join(", "),
            p.name()
        ));
    }
    if c.findings.is_empty() {
        c.ok("none set");
    }
    c
}

/// Whether the reshard's slot exists on a source primary already (an earlier run).
pub(super) fn resumed(probes: &[Probe]) -> bool {
    answered(probes).any(|(p, f)| matches!(p.place, Place::SourcePrimary(_)) && f.slot.is_some())
}

/// Whether every destination shard lets its user switch triggers and foreign keys off.
pub(super) fn destinations_can_set_role(probes: &[Probe]) -> bool {
    probes
        .iter()
        .filter(|p| matches!(p.place, Place::Destination(_)))
        .all(|p| p.found.as_ref().is_ok_and(|f| f.can_set_role))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(place: Place, port: u16, f: impl FnOnce(&mut Found)) -> Probe {
        let mut found = Found {
            version: 180001,
            wal_level: "logical".into(),
            max_slots: 10,
            max_senders: 10,
            hot_standby_feedback: true,
            in_recovery: matches!(place, Place::CopyReplica(_)),
            standby_delay: "-1".into(),
            replication: true,
            can_nudge: true,
            user: "postgres".into(),
            ..Found::default()
        };
        f(&mut found);
        Probe {
            place,
            target: ServerTarget {
                host: "127.0.0.1".into(),
                port,
                database: "db".into(),
                user: "postgres".into(),
                password: None,
                pass_through: None,
            },
            found: Ok(found),
        }
    }

    fn options(parallel: usize) -> ReshardOptions {
        let mut o = ReshardOptions::new("a", "b", "pub", &crate::config::Resharding::default());
        o.parallel = parallel;
        o
    }

    fn verdicts(probes: &[Probe], parallel: usize) -> Vec<(&'static str, Verdict, String)> {
        checks(probes, &options(parallel), 10)
            .into_iter()
            .map(|c| (c.name, c.verdict(), c.detail()))
            .collect()
    }

    fn verdict(probes: &[Probe], name: &str) -> (Verdict, String) {
        let (_, v, d) = verdicts(probes, 4)
            .into_iter()
            .find(|(n, _, _)| *n == name)
            .unwrap();
        (v, d)
    }

    #[test]
    fn a_healthy_topology_passes() {
        let probes = [
            probe(Place::SourcePrimary(0), 1, |_| {}),
            probe(Place::CopyReplica(0), 2, |_| {}),
            probe(Place::Destination(0), 3, |_| {}),
        ];
        for (name, v, d) in verdicts(&probes, 4) {
            assert_eq!(v, Verdict::Ok, "{name}: {d}");
        }
    }

    #[test]
    fn each_server_check_refuses_its_own_fault() {
        let primary = |f: fn(&mut Found)| [probe(Place::SourcePrimary(0), 1, f)];
        let (v, d) = verdict(&primary(|f| f.wal_level = "replica".into()), "wal_level");
        assert_eq!(v, Verdict::Refused);
        assert!(d.contains("ALTER SYSTEM SET wal_level = logical"), "{d}");
        // No replica: the primary needs the permanent slot and 4 copy slots.
        let (v, d) = verdict(
            &primary(|f| f.slots = 6),
            "replication slots and WAL senders",
        );
        assert_eq!(v, Verdict::Refused, "{d}");
        assert!(
            d.contains("4 free replication slots") && d.contains("needs 5"),
            "{d}"
        );
        let (v, _) = verdict(
            &primary(|f| {
                f.slots = 6;
                f.slot = Some(("pgoutput".into(), "reserved".into(), false));
            }),
            "replication slots and WAL senders",
        );
        assert_eq!(v, Verdict::Ok, "a resumed reshard's slot exists already");
        let (v, d) = verdict(
            &primary(|f| f.senders = 8),
            "replication slots and WAL senders",
        );
        assert_eq!(v, Verdict::Refused);
        assert!(d.contains("WAL senders"), "{d}");
        let (v, d) = verdict(
            &primary(|f| f.slot = Some(("test_decoding".into(), "reserved".into(), false))),
            "replication slots and WAL senders",
        );
        assert_eq!(v, Verdict::Refused);
        assert!(d.contains("cannot be resumed from"), "{d}");
        let nudge = [
            probe(Place::SourcePrimary(0), 1, |f| f.can_nudge = false),
            probe(Place::CopyReplica(0), 2, |_| {}),
        ];
        let (v, d) = verdict(&nudge, "REPLICATION privilege");
        assert_eq!(v, Verdict::Refused);
        assert!(d.contains("pg_log_standby_snapshot"), "{d}");
        let (v, d) = verdict(&primary(|f| f.version = 150004), "server versions");
        assert_eq!(v, Verdict::Refused);
        assert!(d.contains("protocol 4"), "{d}");
        let (v, d) = verdict(&primary(|f| f.replication = false), "REPLICATION privilege");
        assert_eq!(v, Verdict::Refused);
        assert!(d.contains("ALTER ROLE \"postgres\" REPLICATION"), "{d}");
        let (v, _) = verdict(
            &primary(|f| f.replication_connection = Some("no pg_hba.conf entry".into())),
            "REPLICATION privilege",
        );
        assert_eq!(v, Verdict::Refused);
        let (v, d) = verdict(
            &primary(|f| f.timeouts = vec![("statement_timeout".into(), "1min".into())]),
            "statement and transaction timeouts",
        );
        assert_eq!(v, Verdict::Ok);
        assert!(
            d.contains("statement_timeout = 1min") && d.contains("set them to 0"),
            "{d}"
        );
        let old = [
            probe(Place::SourcePrimary(0), 1, |_| {}),
            probe(Place::CopyReplica(0), 2, |f| f.version = 150004),
        ];
        let (v, d) = verdict(&old, "server versions");
        assert_eq!(v, Verdict::Refused);
        assert!(d.contains("needs PostgreSQL 16"), "{d}");
        let (v, d) = verdict(
            &[probe(Place::CopyReplica(0), 2, |f| {
                f.standby_delay = "30s".into()
            })],
            "statement and transaction timeouts",
        );
        assert_eq!(v, Verdict::Warning);
        assert!(d.contains("max_standby_streaming_delay = 30s"), "{d}");
        let cold = [
            probe(Place::SourcePrimary(0), 1, |_| {}),
            probe(Place::CopyReplica(0), 2, |f| f.hot_standby_feedback = false),
        ];
        let (v, d) = verdict(&cold, "hot_standby_feedback");
        assert_eq!(v, Verdict::Refused);
        assert!(d.contains("hot_standby_feedback = on"), "{d}");
        let mut down = probe(Place::Destination(1), 4, |_| {});
        down.found = Err("connection refused".into());
        let (v, d) = verdict(&[down], "servers");
        assert_eq!(v, Verdict::Refused);
        assert!(
            d.contains("destination shard 1") && d.contains("connection refused"),
            "{d}"
        );
    }
}
