//! PgBouncer 1.25's operational SHOWs, with its columns: `STATE`, `MEM`, `FDS`, `SOCKETS`,
//! `ACTIVE_SOCKETS`, `PEERS`, `PEER_POOLS`, `DNS_HOSTS`, `DNS_ZONES`, `TOTALS` and `HELP`.
//! Where pgdog has no such thing (slab caches, a DNS cache, fds passed at a takeover, peer
//! pools), the columns come with the rows that do apply, or none: never an error.
use super::show::{reply, s};
use super::Reply;
use crate::registry::Registry;
use crate::stats::{clients, counters};

type Row = Vec<Option<String>>;

fn yes(b: bool) -> Option<String> {
    s(if b { "yes" } else { "no" })
}

/// `active`, `paused` (every database paused), `suspended`.
pub fn state() -> Reply {
    let registry = Registry::current();
    let names = registry.settings.database_names();
    let paused = crate::backend::pause::paused();
    let all_paused = !names.is_empty() && names.iter().all(|n| paused.contains(n));
    let suspended = crate::ops::suspend::is_suspended();
    let rows = vec![
        vec![s("active"), yes(!all_paused && !suspended)],
        vec![s("paused"), yes(all_paused)],
        vec![s("suspended"), yes(suspended)],
    ];
    reply(&["key", "value"], rows)
}

/// The process' resident memory, then pgdog's object counts (no slab caches: size and free
/// are NULL).
pub fn mem() -> Reply {
    let rss = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|t| t.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map(|pages| pages * 4096);
    let registry = Registry::current();
    let servers: usize = registry
        .pools()
        .map(|p| {
            let (idle, out) = p.counts();
            idle + out
        })
        .sum();
    let count = |name: &str, n: usize| vec![s(name), None, s(n), None, None];
    let rows = vec![
        vec![
            s("process_rss"),
            None,
            None,
            None,
            rss.map(|b| b.to_string()),
        ],
        count("clients", clients::count()),
        count("server_connections", servers),
        count("prepared_statements", crate::backend::prepared::len()),
    ];
    reply(&["name", "size", "used", "free", "memtotal"], rows)
}

/// PgBouncer lists the fds it would pass at an online restart; pgdog hands over through its
/// own socket (`so_reuseport`), so none are listed.
pub fn fds() -> Reply {
    reply(
        &[
            "fd",
            "task",
            "user",
            "database",
            "addr",
            "port",
            "cancel",
            "link",
            "client_encoding",
            "std_strings",
            "datestyle",
            "timezone",
            "password",
            "scram_client_key",
            "scram_server_key",
        ],
        Vec::new(),
    )
}

/// The buffer columns PgBouncer adds to SHOW CLIENTS' and SHOW SERVERS' for SOCKETS.
const BUFFERS: [&str; 7] = [
    "recv_pos",
    "pkt_pos",
    "pkt_remain",
    "send_pos",
    "send_remain",
    "pkt_avail",
    "send_avail",
];

/// Every client and server socket: SHOW CLIENTS' and SHOW SERVERS' columns, then the buffer
/// positions (0: pgdog reads and writes whole messages); `active`: only sockets in use
/// (clients not idle, servers checked out).
pub fn sockets(active: bool) -> Reply {
    let rows_of = |r: Reply| match r {
        Reply::Rows { rows, .. } => rows,
        Reply::Tag(_) => Vec::new(),
    };
    let mut rows = Vec::new();
    for c in rows_of(super::show::clients()) {
        if active && c.get(4).is_some_and(|st| st.as_deref() == Some("idle")) {
            continue;
        }
        // 19 standard columns, then id: prepared_statements is not counted per client.
        let mut row: Row = c[..19].to_vec();
        row.push(None);
        row.push(c.get(19).cloned().flatten());
        rows.push(row);
    }
    for srv in rows_of(super::show::servers()) {
        if active && srv.get(4).is_some_and(|st| st.as_deref() != Some("active")) {
            continue;
        }
        rows.push(srv[..21].to_vec());
    }
    for row in &mut rows {
        row.extend(std::iter::repeat_n(s(0), BUFFERS.len()));
    }
    let mut columns: Vec<&str> = super::show::CONNECTION_COLUMNS.to_vec();
    columns.extend(["prepared_statements", "id"]);
    columns.extend(BUFFERS);
    reply(&columns, rows)
}

/// `[[peers]]`: id, host, port (no pool of their own: pool_size 0).
pub fn peers() -> Reply {
    let registry = Registry::current();
    let rows = registry
        .settings
        .config
        .peers
        .iter()
        .map(|p| vec![s(p.peer_id), s(&p.host), s(p.port), s(0)])
        .collect();
    reply(&["peer_id", "host", "port", "pool_size"], rows)
}

/// One row per peer: pgdog forwards a cancel at once, on a connection of its own, so no
/// request is ever active or waiting here.
pub fn peer_pools() -> Reply {
    let registry = Registry::current();
    let rows = registry
        .settings
        .config
        .peers
        .iter()
        .map(|p| vec![s(p.peer_id), s(0), s(0), s(0), s(0)])
        .collect();
    reply(
        &[
            "peer_id",
            "cl_active_cancel_req",
            "cl_waiting_cancel_req",
            "sv_active_cancel",
            "sv_login",
        ],
        rows,
    )
}

/// pgdog keeps no DNS cache (each connection resolves its host): no rows.
pub fn dns_hosts() -> Reply {
    reply(&["hostname", "ttl", "addrs"], Vec::new())
}

pub fn dns_zones() -> Reply {
    reply(&["zonename", "serial", "count"], Vec::new())
}

/// One counter of `counters::Totals`.
type Field = fn(&counters::Totals) -> u64;

/// PgBouncer's SHOW TOTALS: `total_*` over every database, then the averages of the last
/// `stats_period`. Counters pgdog does not keep (parses, binds, logins, assignments) are 0.
pub fn totals() -> Reply {
    let by_db = counters::by_database();
    let sum = |f: Field| by_db.iter().map(|(_, t)| f(t)).sum::<u64>();
    let avg = |f: Field| {
        by_db
            .iter()
            .map(|(db, _)| f(&counters::averages(db)))
            .sum::<u64>()
    };
    let fields: [(&str, Field); 12] = [
        ("server_assignment_count", |t| t.xact_count),
        ("xact_count", |t| t.xact_count),
        ("query_count", |t| t.query_count),
        ("client_bytes", |t| t.received),
        ("server_bytes", |t| t.sent),
        ("xact_time", |t| t.xact_time_us),
        ("query_time", |t| t.query_time_us),
        ("wait_time", |t| t.wait_time_us),
        ("ps_client_parse_count", |_| 0),
        ("ps_server_parse_count", |_| 0),
        ("ps_bind_count", |_| 0),
        ("client_login_count", |_| 0),
    ];
    let mut rows: Vec<Row> = fields
        .iter()
        .map(|(name, f)| vec![s(format!("total_{name}")), s(sum(*f))])
        .collect();
    rows.extend(
        fields
            .iter()
            .map(|(name, f)| vec![s(format!("avg_{name}")), s(avg(*f))]),
    );
    reply(&["name", "value"], rows)
}

/// The console's commands, one per row (PgBouncer prints them as notices).
pub fn help() -> Reply {
    let rows = super::commands::COMMANDS
        .split(", ")
        .map(|c| vec![s(c.trim_start_matches("and "))])
        .collect();
    reply(&["command"], rows)
}
