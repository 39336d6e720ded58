//! The admin database's SHOW commands, with PgBouncer's column names and order where PgBouncer
//! has the command (pgdog's own columns follow): CLIENTS, SERVERS, POOLS, STATS, STATS_TOTALS,
//! STATS_AVERAGES, CONFIG, LISTS, DATABASES, USERS, PREPARED_STATEMENTS, QUERY_CACHE.
use super::Reply;
use crate::config::PoolerMode;
use crate::registry::Registry;
use crate::stats::{clients, counters, ClientState};
use std::time::Instant;

type Row = Vec<Option<String>>;

pub(super) fn reply(columns: &[&str], rows: Vec<Row>) -> Reply {
    Reply::Rows {
        columns: columns.iter().map(|c| c.to_string()).collect(),
        rows,
        tag: "SHOW".into(),
    }
}

pub(super) fn s(v: impl ToString) -> Option<String> {
    Some(v.to_string())
}

/// `YYYY-MM-DD HH:MM:SS UTC` of a Unix time in microseconds.
pub fn timestamp(unix_us: u64) -> String {
    let secs = unix_us / 1_000_000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = crate::replication::pgoutput::civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

/// Unix microseconds of an instant in the past.
fn unix_of(t: Instant) -> u64 {
    clients::now_us().saturating_sub(t.elapsed().as_micros() as u64)
}

fn mode_name(m: PoolerMode) -> &'static str {
    match m {
        PoolerMode::Transaction => "transaction",
        PoolerMode::Session => "session",
        PoolerMode::Statement => "statement",
    }
}

/// PgBouncer's leading columns of SHOW CLIENTS and SHOW SERVERS.
pub(super) const CONNECTION_COLUMNS: [&str; 19] = [
    "type",
    "user",
    "database",
    "replication",
    "state",
    "addr",
    "port",
    "local_addr",
    "local_port",
    "connect_time",
    "request_time",
    "wait",
    "wait_us",
    "close_needed",
    "ptr",
    "link",
    "remote_pid",
    "tls",
    "application_name",
];

fn connection_columns(more: &[&'static str]) -> Vec<&'static str> {
    CONNECTION_COLUMNS.iter().chain(more).copied().collect()
}

pub fn clients() -> Reply {
    let now = clients::now_us();
    let rows = clients::list()
        .iter()
        .map(|c| {
            let login = c.login();
            let waiting = c.state() == ClientState::Waiting;
            let wait = if waiting {
                now.saturating_sub(c.wait_since())
            } else {
                0
            };
            vec![
                s("C"),
                s(&login.user),
                s(&login.database),
                s("none"),
                s(c.state().name()),
                s(&c.addr),
                s(c.port),
                s(&c.local_addr),
                s(c.local_port),
                s(timestamp(c.connect_time)),
                s(timestamp(c.request_time())),
                s(wait / 1_000_000),
                s(wait % 1_000_000),
                s(u8::from(c.is_killed())),
                s(format!("0x{:x}", c.id)),
                None,
                s(login.pid),
                s(if login.tls { "TLS" } else { "" }),
                s(&login.application_name),
                s(c.id),
                c.pinned().map(|why| why.to_string()),
            ]
        })
        .collect();
    reply(&connection_columns(&["id", "pinned"]), rows)
}

pub fn servers() -> Reply {
    let registry = Registry::current();
    let mut rows = Vec::new();
    for ((user, database), shard) in &sorted_shards(&registry) {
        for host in shard.hosts() {
            let t = host.pool.target();
            for srv in host.pool.servers() {
                rows.push(vec![
                    s("S"),
                    s(user),
                    s(database),
                    s("none"),
                    s(if srv.active { "active" } else { "idle" }),
                    s(&t.host),
                    s(t.port),
                    None,
                    None,
                    s(timestamp(unix_of(srv.created))),
                    s(timestamp(unix_of(srv.last_used))),
                    s(0),
                    s(0),
                    s(0),
                    s(format!("0x{:x}", srv.id)),
                    None,
                    s(srv.pid),
                    s(""),
                    s(&t.database),
                    s(srv.prepared),
                    s(srv.id),
                    s(shard.index()),
                    s(host.state.role().name()),
                ]);
            }
        }
    }
    reply(
        &connection_columns(&["prepared_statements", "id", "shard", "role"]),
        rows,
    )
}

fn sorted_shards(registry: &Registry) -> Vec<((String, String), crate::backend::Shard)> {
    let mut entries: Vec<_> = registry.shard_entries().collect();
    entries.sort_by(|a, b| (&a.0 .1, &a.0 .0, a.1.index()).cmp(&(&b.0 .1, &b.0 .0, b.1.index())));
    entries
}

/// Longest current checkout wait of (user, database)'s clients, in microseconds.
fn max_wait_us(user: &str, database: &str) -> u64 {
    let now = clients::now_us();
    clients::list()
        .iter()
        .filter(|c| c.state() == ClientState::Waiting)
        .filter(|c| {
            let l = c.login();
            l.user == user && l.database == database
        })
        .map(|c| now.saturating_sub(c.wait_since()))
        .max()
        .unwrap_or(0)
}

/// One row per server of each pool: (user, database, shard, host).
pub fn pools() -> Reply {
    let registry = Registry::current();
    let mut rows = Vec::new();
    for ((user, database), shard) in &sorted_shards(&registry) {
        let maxwait = max_wait_us(user, database);
        for host in shard.hosts() {
            let pool = &host.pool;
            let (idle, active) = pool.counts();
            let t = pool.target();
            let c = pool.settings();
            let startup = |name: &str| c.startup.iter().find(|(k, _)| k == name).map(|(_, v)| v);
            rows.push(vec![
                s(database),
                s(user),
                s(active),
                s(pool.waiting()),
                s(0),
                s(0),
                s(active),
                s(0),
                s(0),
                s(idle),
                s(0),
                s(0),
                s(0),
                s(maxwait / 1_000_000),
                s(maxwait % 1_000_000),
                s(mode_name(pool.settings().mode)),
                s(shard.index()),
                s(host.state.role().name()),
                s(&t.host),
                s(t.port),
                s(c.size),
                s(crate::backend::pause::is_paused(database)),
                s(host.state.is_banned()),
                host.state.status().lag_bytes.map(|l| l.to_string()),
                // The values in force (most specific setting first, see `pool_config`).
                s(c.min),
                s(c.reserve),
                s(pool.reserve_in_use()),
                s(c.server_lifetime.as_millis()),
                s(c.idle_timeout.as_millis()),
                s(startup("statement_timeout").map_or("0", |v| v.as_str())),
                s(&t.user),
                s(c.read_only),
            ]);
        }
    }
    reply(
        &[
            "database",
            "user",
            "cl_active",
            "cl_waiting",
            "cl_active_cancel_req",
            "cl_waiting_cancel_req",
            "sv_active",
            "sv_active_cancel",
            "sv_being_canceled",
            "sv_idle",
            "sv_used",
            "sv_tested",
            "sv_login",
            "maxwait",
            "maxwait_us",
            "pool_mode",
            "shard",
            "role",
            "host",
            "port",
            "pool_size",
            "paused",
            "banned",
            "replica_lag_bytes",
            "min_pool_size",
            "reserve_pool_size",
            "reserve_in_use",
            "server_lifetime",
            "idle_timeout",
            "statement_timeout",
            "server_user",
            "read_only",
        ],
        rows,
    )
}

fn totals_row(t: &counters::Totals) -> [Option<String>; 7] {
    [
        s(t.xact_count),
        s(t.query_count),
        s(t.received),
        s(t.sent),
        s(t.xact_time_us),
        s(t.query_time_us),
        s(t.wait_time_us),
    ]
}

pub fn stats() -> Reply {
    let rows = counters::by_database()
        .iter()
        .map(|(db, t)| {
            let mut row = vec![s(db)];
            row.extend(totals_row(t));
            row.extend(totals_row(&counters::averages(db)));
            row
        })
        .collect();
    reply(
        &[
            "database",
            "total_xact_count",
            "total_query_count",
            "total_received",
            "total_sent",
            "total_xact_time",
            "total_query_time",
            "total_wait_time",
            "avg_xact_count",
            "avg_query_count",
            "avg_recv",
            "avg_sent",
            "avg_xact_time",
            "avg_query_time",
            "avg_wait_time",
        ],
        rows,
    )
}

const PER_DATABASE: [&str; 8] = [
    "database",
    "xact_count",
    "query_count",
    "bytes_received",
    "bytes_sent",
    "xact_time",
    "query_time",
    "wait_time",
];

pub fn stats_totals() -> Reply {
    let rows = counters::by_database()
        .iter()
        .map(|(db, t)| std::iter::once(s(db)).chain(totals_row(t)).collect())
        .collect();
    reply(&PER_DATABASE, rows)
}

pub fn stats_averages() -> Reply {
    let rows = counters::by_database()
        .iter()
        .map(|(db, _)| {
            std::iter::once(s(db))
                .chain(totals_row(&counters::averages(db)))
                .collect()
        })
        .collect();
    reply(&PER_DATABASE, rows)
}

pub fn config() -> Reply {
    use super::settings::{changeable, section_table};
    let registry = Registry::current();
    let config = &registry.settings.config;
    let sections = [
        (
            "",
            section_table(&config.general),
            section_table(&crate::config::General::default()),
        ),
        (
            "resharding.",
            section_table(&config.resharding),
            section_table(&crate::config::Resharding::default()),
        ),
    ];
    let show = |v: &toml::Value| match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut rows = Vec::new();
    for (prefix, current, defaults) in &sections {
        for (key, value) in current {
            let name = format!("{prefix}{key}");
            let secret = name == "admin_password";
            let changeable = if changeable(&name) { "yes" } else { "no" };
            rows.push(vec![
                s(name),
                s(if secret { "****".into() } else { show(value) }),
                defaults.get(key).map(show),
                s(changeable),
            ]);
        }
    }
    reply(&["key", "value", "default", "changeable"], rows)
}

pub fn lists() -> Reply {
    let registry = Registry::current();
    let all = clients::list();
    let login = all
        .iter()
        .filter(|c| c.state() == ClientState::Login)
        .count();
    let (mut idle, mut used) = (0, 0);
    for p in registry.pools() {
        let (i, u) = p.counts();
        idle += i;
        used += u;
    }
    let databases = super::configured_databases().len();
    let rows = [
        ("databases", databases),
        ("users", registry.settings.users.users.len()),
        ("pools", registry.pools().count()),
        ("free_clients", 0),
        ("used_clients", all.len() - login),
        ("login_clients", login),
        ("free_servers", idle),
        ("used_servers", used),
    ]
    .into_iter()
    .map(|(k, v)| vec![s(k), s(v)])
    .collect();
    reply(&["list", "items"], rows)
}

/// One row per configured server.
pub fn databases() -> Reply {
    let registry = Registry::current();
    let g = &registry.settings.config.general;
    let rows = registry
        .settings
        .config
        .databases
        .iter()
        .map(|d| {
            let current: usize = registry
                .pools()
                .filter(|p| {
                    let t = p.target();
                    t.host == d.host && t.port == d.port && t.database == d.database_name()
                })
                .map(|p| {
                    let (i, u) = p.counts();
                    i + u
                })
                .sum();
            vec![
                s(&d.name),
                s(&d.host),
                s(d.port),
                s(d.database_name()),
                d.user.clone(),
                s(d.pool_size.unwrap_or(g.default_pool_size)),
                s(d.min_pool_size.unwrap_or(g.min_pool_size)),
                s(d.reserve_pool_size.unwrap_or(g.reserve_pool_size)),
                s(d.server_lifetime.unwrap_or(g.server_lifetime) / 1000),
                s(mode_name(d.pooler_mode.unwrap_or(g.pooler_mode))),
                s(registry.settings.max_db_connections(&d.name)),
                s(current),
                s(u8::from(crate::backend::pause::is_paused(&d.name))),
                s(u8::from(crate::backend::pause::is_disabled(&d.name))),
                s(d.shard),
                s(d.role.name()),
            ]
        })
        .collect();
    reply(
        &[
            "name",
            "host",
            "port",
            "database",
            "force_user",
            "pool_size",
            "min_pool_size",
            "reserve_pool",
            "server_lifetime",
            "pool_mode",
            "max_connections",
            "current_connections",
            "paused",
            "disabled",
            "shard",
            "role",
        ],
        rows,
    )
}

pub fn users() -> Reply {
    let registry = Registry::current();
    let default_mode = registry.settings.config.general.pooler_mode;
    // Server connections per user, every database together (what max_user_connections caps).
    let mut open: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for ((user, _), shard) in registry.shard_entries() {
        let n: usize = shard
            .hosts()
            .iter()
            .map(|h| h.pool.counts())
            .map(|(i, o)| i + o)
            .sum();
        *open.entry(user).or_default() += n;
    }
    let row = |u: &crate::config::User| {
        let mode = mode_name(u.pooler_mode.unwrap_or(default_mode));
        vec![
            s(&u.name),
            s(mode),
            s(&u.database),
            s(registry.settings.max_user_connections(&u.name)),
            s(open.get(&u.name).copied().unwrap_or(0)),
        ]
    };
    let rows = registry.settings.users.users.iter().map(row).collect();
    reply(
        &[
            "name",
            "pool_mode",
            "database",
            "max_user_connections",
            "current_connections",
        ],
        rows,
    )
}

pub fn prepared_statements() -> Reply {
    let rows = crate::backend::prepared::list()
        .into_iter()
        .map(|p| {
            vec![
                s(p.server_name()),
                s(&p.statement.query),
                s(format!("{:?}", p.statement.param_types)),
                s(p.is_valid()),
            ]
        })
        .collect();
    reply(&["name", "statement", "parameter_types", "prepared"], rows)
}

pub fn query_cache() -> Reply {
    let cache = crate::router::QueryCache::global();
    let (hits, misses) = cache.stats();
    let shapes = crate::router::ShapeCache::global().stats();
    reply(
        &[
            "entries",
            "capacity",
            "hits",
            "misses",
            "shape_entries",
            "shape_hits",
            "shape_misses",
            "shape_not_cacheable",
            "shape_mismatches",
            "shape_points",
        ],
        vec![vec![
            s(cache.len()),
            s(cache.capacity()),
            s(hits),
            s(misses),
            s(shapes.entries),
            s(shapes.hits),
            s(shapes.misses),
            s(shapes.not_cacheable),
            s(shapes.mismatches),
            s(shapes.points),
        ]],
    )
}

/// SHOW MERGE: the memory of cross-shard merges (process-wide).
pub fn merge() -> Reply {
    let m = crate::merge::memory_stats();
    let g = crate::config::active();
    reply(
        &[
            "memory_bytes",
            "peak_memory_bytes",
            "spilled_bytes",
            "spill_files",
            "refused",
            "merge_work_mem",
            "merge_memory_limit",
        ],
        vec![vec![
            s(m.in_flight),
            s(m.peak),
            s(m.spilled_bytes),
            s(m.spill_files),
            s(m.refused),
            s(g.merge_work_mem),
            s(g.merge_memory_limit),
        ]],
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn timestamps() {
        assert_eq!(super::timestamp(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(
            super::timestamp(1_795_000_000_000_000),
            "2026-11-18 11:06:40 UTC"
        );
        assert_eq!(
            super::timestamp(951_782_400_000_000),
            "2000-02-29 00:00:00 UTC"
        );
    }
}
