//! Health checks: every `healthcheck_interval` (and right after a reload) each server of every
//! database is asked, within `healthcheck_timeout`, whether it is in recovery and where its WAL
//! is. A server that does not answer is banned; a standby further behind its primary than
//! `max_replica_lag` bytes is banned; a banned server whose ban has expired is let back in by
//! the first check it passes. `auto` servers take the role the check sees, which is how a
//! promoted standby starts taking writes without a reload. One connection per server is kept
//! for the checks (as the first user configured for its database), with application_name
//! `pgdog_healthcheck`.
use super::Registry;
use crate::backend::builtins::{self, Builtins, Catalog};
use crate::backend::host::HostState;
use crate::backend::server::{Server, ServerTarget};
use crate::backend::shard::Shard;
use crate::replication::pgoutput::parse_lsn;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;

/// Where the server is: in recovery or not, and its replayed (standby) or current (primary)
/// WAL position.
const HEALTH_QUERY: &str = "SELECT pg_catalog.pg_is_in_recovery(), CASE WHEN pg_catalog.pg_is_in_recovery() THEN COALESCE(pg_catalog.pg_last_wal_replay_lsn(), pg_catalog.pg_last_wal_receive_lsn()) ELSE pg_catalog.pg_current_wal_lsn() END";

static WAKE: Notify = Notify::const_new();

/// Runs a round of checks now (after a reload).
pub fn wake() {
    WAKE.notify_one();
}

/// Starts the checks; the receiver fires once the first round is done.
pub fn spawn() -> tokio::sync::oneshot::Receiver<()> {
    let (done, first) = tokio::sync::oneshot::channel();
    tokio::spawn(run(done));
    first
}

async fn run(first_round: tokio::sync::oneshot::Sender<()>) {
    let mut first_round = Some(first_round);
    let mut connections: HashMap<usize, Server> = HashMap::new();
    loop {
        let registry = Registry::current();
        let g = &registry.settings.config.general;
        let interval = Duration::from_millis(g.healthcheck_interval);
        check_round(&registry, &mut connections).await;
        if let Some(done) = first_round.take() {
            let _ = done.send(());
        }
        drop(registry);
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = WAKE.notified() => {}
        }
    }
}

/// The servers of every shard once (the credentials of the first user of each database).
fn shard_servers(registry: &Registry) -> Vec<Vec<(Arc<HostState>, ServerTarget)>> {
    let mut seen = std::collections::HashSet::new();
    let mut entries: Vec<_> = registry.shard_entries().collect();
    // users.toml's users first: a discovered user's credential may be stale.
    let key = |e: &((String, String), Shard)| {
        let discovered = registry.is_discovered(&e.0 .0, &e.0 .1);
        (e.0 .1.clone(), discovered, e.0 .0.clone(), e.1.index())
    };
    entries.sort_by_cached_key(key);
    let mut out = Vec::new();
    for ((_, database), shard) in entries {
        if !seen.insert((database.clone(), shard.index())) {
            continue;
        }
        out.push(
            shard
                .hosts()
                .iter()
                .map(|h| (h.state.clone(), h.pool.target().clone()))
                .collect(),
        );
    }
    out
}

type Outcome = Result<(bool, Option<u64>), String>;

/// Checks every server concurrently, records the results, then each standby's lag.
async fn check_round(registry: &Registry, connections: &mut HashMap<usize, Server>) {
    let g = &registry.settings.config.general;
    let timeout = Duration::from_millis(g.healthcheck_timeout);
    let shards = shard_servers(registry);
    let mut checks = Vec::new();
    let mut started = std::collections::HashSet::new();
    for (state, target) in shards.iter().flatten() {
        let key = Arc::as_ptr(state) as usize;
        if started.insert(key) {
            let conn = connections.remove(&key);
            checks.push(async move {
                let (conn, outcome) = check_one(target, conn, timeout, &state.builtins).await;
                (key, conn, outcome)
            });
        }
    }
    let mut outcomes: HashMap<usize, Outcome> = HashMap::new();
    for (key, conn, outcome) in futures_util::future::join_all(checks).await {
        if let Some(conn) = conn {
            connections.insert(key, conn);
        }
        outcomes.insert(key, outcome);
    }
    for hosts in &shards {
        for (state, _) in hosts {
            match outcomes.get(&(Arc::as_ptr(state) as usize)) {
                Some(Ok((in_recovery, lsn))) => state.check_passed(*in_recovery, *lsn),
                Some(Err(e)) => state.check_failed(e),
                None => {}
            }
        }
        record_lag(hosts, &outcomes, g.max_replica_lag);
    }
}

/// Each standby's lag behind the one server of its shard that is not in recovery.
fn record_lag(
    hosts: &[(Arc<HostState>, ServerTarget)],
    outcomes: &HashMap<usize, Outcome>,
    max: u64,
) {
    let outcome = |s: &Arc<HostState>| outcomes.get(&(Arc::as_ptr(s) as usize));
    let primaries: Vec<u64> = hosts
        .iter()
        .filter_map(|(s, _)| match outcome(s) {
            Some(Ok((false, Some(lsn)))) => Some(*lsn),
            _ => None,
        })
        .collect();
    let [primary] = primaries.as_slice() else {
        return;
    };
    for (state, _) in hosts {
        if let Some(Ok((true, Some(replayed)))) = outcome(state) {
            state.set_lag(primary.saturating_sub(*replayed), max);
        }
    }
}

/// Reads the server's built-in functions (see `backend::builtins`); a failure is logged and
/// the catalog stays unread (calls of functions outside the fixed lists pin meanwhile).
async fn read_builtins(server: &mut Server, epoch: u64, catalog: &Catalog, target: &ServerTarget) {
    match server.query_rows(builtins::QUERY).await {
        Ok(rows) => {
            let names = rows
                .into_iter()
                .filter_map(|r| r.into_iter().next().flatten());
            let read = Builtins::new(names);
            tracing::debug!("{}: {} built-in functions", target.addr(), read.len());
            catalog.store(epoch, read);
        }
        Err(e) => tracing::warn!("{}: reading the built-in functions: {e}", target.addr()),
    }
}

/// The admin's HEALTHCHECK: the servers `wanted` accepts, checked now on new connections and
/// recorded as a round records them (lag waits for the next round); for each, whether it is in
/// recovery, or why the check failed.
pub async fn check_now(
    wanted: impl Fn(&HostState) -> bool,
) -> Vec<(Arc<HostState>, Result<bool, String>)> {
    let registry = Registry::current();
    let timeout = Duration::from_millis(registry.settings.config.general.healthcheck_timeout);
    let mut seen = std::collections::HashSet::new();
    let servers: Vec<_> = shard_servers(&registry)
        .into_iter()
        .flatten()
        .filter(|(state, _)| wanted(state) && seen.insert(Arc::as_ptr(state) as usize))
        .collect();
    let checks = servers.iter().map(|(state, target)| async move {
        let (conn, outcome) = check_one(target, None, timeout, &state.builtins).await;
        if let Some(conn) = conn {
            conn.terminate().await;
        }
        match &outcome {
            Ok((in_recovery, lsn)) => state.check_passed(*in_recovery, *lsn),
            Err(e) => state.check_failed(e),
        }
        (state.clone(), outcome.map(|(in_recovery, _)| in_recovery))
    });
    futures_util::future::join_all(checks).await
}

/// One check on the kept connection (or a new one); the connection to keep, and the outcome.
async fn check_one(
    target: &ServerTarget,
    conn: Option<Server>,
    timeout: Duration,
    builtins: &Catalog,
) -> (Option<Server>, Outcome) {
    let work = async {
        let kept = conn.and_then(|mut s| (!s.is_broken()).then_some(s));
        let mut server = match kept {
            Some(s) => s,
            None => Server::connect_with_params(
                target,
                &[("application_name", "pgdog_healthcheck")],
                timeout,
            )
            .await
            .map_err(|e| e.to_string())?,
        };
        let row = server
            .query_row(HEALTH_QUERY)
            .await
            .map_err(|e| e.to_string())?;
        let in_recovery = row.first().cloned().flatten().as_deref() == Some("t");
        let lsn = row.get(1).cloned().flatten().as_deref().and_then(parse_lsn);
        if let Some(epoch) = builtins.due() {
            read_builtins(&mut server, epoch, builtins, target).await;
        }
        Ok::<_, String>((server, (in_recovery, lsn)))
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(Ok((server, outcome))) => (Some(server), Ok(outcome)),
        Ok(Err(e)) => (None, Err(e)),
        Err(_) => (
            None,
            Err(format!(
                "no answer within healthcheck_timeout ({} ms)",
                timeout.as_millis()
            )),
        ),
    }
}
