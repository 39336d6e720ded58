//! `/metrics`: every gauge, counter and histogram in OpenMetrics 1.0 text, names prefixed
//! `pgdog_`, labels `database`, `user`, `shard`, `role`, `host` where they apply, ending with
//! `# EOF`.
use crate::registry::Registry;
use crate::stats::{self, clients, counters, ClientState, Histogram};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The exposition being written: one metric family at a time.
struct Out {
    text: String,
}

type Labels<'a> = &'a [(&'a str, &'a str)];
/// A counter family: name, help, how to read it from the totals.
type CounterFamily = (&'static str, &'static str, fn(&counters::Totals) -> u64);
/// A histogram family: name, help, which histogram of the pool's counters.
type HistogramFamily = (
    &'static str,
    &'static str,
    fn(&stats::PoolStats) -> &Histogram,
);

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn labels(l: Labels<'_>) -> String {
    if l.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = l
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

impl Out {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# TYPE pgdog_{name} {kind}");
        let _ = writeln!(self.text, "# HELP pgdog_{name} {help}");
    }

    fn sample(&mut self, name: &str, l: Labels<'_>, value: impl std::fmt::Display) {
        let _ = writeln!(self.text, "pgdog_{name}{} {value}", labels(l));
    }

    fn histogram(&mut self, name: &str, l: Labels<'_>, h: &Histogram) {
        let (buckets, sum_us, count) = h.snapshot();
        for (bound, n) in buckets {
            let le = format!("{}", bound as f64 / 1e6);
            let mut with = l.to_vec();
            with.push(("le", &le));
            self.sample(&format!("{name}_bucket"), &with, n);
        }
        let mut with = l.to_vec();
        with.push(("le", "+Inf"));
        self.sample(&format!("{name}_bucket"), &with, count);
        self.sample(&format!("{name}_count"), l, count);
        self.sample(&format!("{name}_sum"), l, sum_us as f64 / 1e6);
    }
}

/// The whole exposition.
pub fn render() -> String {
    let mut out = Out {
        text: String::with_capacity(16 * 1024),
    };
    client_metrics(&mut out);
    server_metrics(&mut out);
    listener_metrics(&mut out);
    traffic_metrics(&mut out);
    cache_metrics(&mut out);
    merge_metrics(&mut out);
    route_metrics(&mut out);
    mirror_metrics(&mut out);
    cap_metrics(&mut out);
    reshard_metrics(&mut out);
    out.text.push_str("# EOF\n");
    out.text
}

fn client_metrics(out: &mut Out) {
    let mut by: BTreeMap<(String, String, &'static str), u64> = BTreeMap::new();
    for c in clients::list() {
        let login = c.login();
        *by.entry((login.database, login.user, c.state().name()))
            .or_default() += 1;
    }
    out.family("clients", "gauge", "Client connections by state.");
    for state in [
        ClientState::Login,
        ClientState::Idle,
        ClientState::Active,
        ClientState::Waiting,
    ] {
        let total: u64 = by
            .iter()
            .filter(|((_, _, s), _)| *s == state.name())
            .map(|(_, n)| n)
            .sum();
        out.sample("clients", &[("state", state.name())], total);
    }
    out.family(
        "database_clients",
        "gauge",
        "Client connections per database and user, by state.",
    );
    for ((db, user, state), n) in &by {
        out.sample(
            "database_clients",
            &[("database", db), ("user", user), ("state", state)],
            n,
        );
    }
}

/// One server of one pool, with its labels.
struct HostRow {
    database: String,
    user: String,
    shard: String,
    role: &'static str,
    host: String,
    idle: usize,
    active: usize,
    waiting: usize,
    size: usize,
    reserve_in_use: usize,
    banned: bool,
    lag: Option<u64>,
}

impl HostRow {
    fn labels(&self) -> [(&str, &str); 5] {
        [
            ("database", self.database.as_str()),
            ("user", self.user.as_str()),
            ("shard", self.shard.as_str()),
            ("role", self.role),
            ("host", self.host.as_str()),
        ]
    }
}

/// Transaction-mode LISTEN: per listener connection.
fn listener_metrics(out: &mut Out) {
    use std::sync::atomic::Ordering::Relaxed;
    let all = crate::backend::listener::all();
    type Get = fn(&crate::backend::listener::Listener) -> u64;
    let families: [(&str, &str, &str, Get); 4] = [
        (
            "listener_channels",
            "gauge",
            "Channels a listener connection listens on.",
            |l| l.counts().0 as u64,
        ),
        (
            "listener_clients",
            "gauge",
            "Client subscriptions of a listener connection.",
            |l| l.counts().1 as u64,
        ),
        (
            "notifications_delivered",
            "counter",
            "Notifications handed to listening clients.",
            |l| l.delivered.load(Relaxed),
        ),
        (
            "notification_overflows",
            "counter",
            "Clients disconnected because their notification queue was full.",
            |l| l.overflowed.load(Relaxed),
        ),
    ];
    for (name, kind, help, get) in families {
        out.family(name, kind, help);
        let sample = if kind == "counter" {
            format!("{name}_total")
        } else {
            name.to_string()
        };
        for l in &all {
            out.sample(&sample, &[("listener", l.name.as_str())], get(l));
        }
    }
}

fn server_metrics(out: &mut Out) {
    let registry = Registry::current();
    let mut entries: Vec<_> = registry.shard_entries().collect();
    entries.sort_by(|a, b| (&a.0, a.1.index()).cmp(&(&b.0, b.1.index())));
    let mut rows = Vec::new();
    for ((user, database), shard) in entries {
        for host in shard.hosts() {
            let (idle, active) = host.pool.counts();
            let t = host.pool.target();
            rows.push(HostRow {
                database: database.clone(),
                user: user.clone(),
                shard: shard.index().to_string(),
                role: host.state.role().name(),
                host: crate::net::unix::address(&t.host, t.port),
                idle,
                active,
                waiting: host.pool.waiting(),
                size: host.pool.settings().size,
                reserve_in_use: host.pool.reserve_in_use(),
                banned: host.state.is_banned(),
                lag: host.state.status().lag_bytes,
            });
        }
    }
    out.family(
        "server_connections",
        "gauge",
        "Server connections by state.",
    );
    for r in &rows {
        for (state, n) in [("idle", r.idle), ("active", r.active)] {
            let mut l = r.labels().to_vec();
            l.push(("state", state));
            out.sample("server_connections", &l, n);
        }
    }
    type Gauge = (&'static str, &'static str, fn(&HostRow) -> usize);
    let gauges: [Gauge; 3] = [
        (
            "pool_waiting_clients",
            "Clients waiting for a connection of the pool.",
            |r| r.waiting,
        ),
        ("pool_size", "The pool's size (pool_size in force).", |r| {
            r.size
        }),
        (
            "pool_reserve_in_use",
            "Reserve connections (reserve_pool_size) in use.",
            |r| r.reserve_in_use,
        ),
    ];
    for (name, help, get) in gauges {
        out.family(name, "gauge", help);
        for r in &rows {
            out.sample(name, &r.labels(), get(r));
        }
    }
    out.family("host_banned", "gauge", "1 when the server is banned.");
    for r in &rows {
        out.sample("host_banned", &r.labels(), u8::from(r.banned));
    }
    out.family(
        "host_primary",
        "gauge",
        "1 when the server is its shard's primary now (an `auto` one as its health checks saw it): a failover flips it.",
    );
    for r in &rows {
        let [database, user, shard, _, host] = r.labels();
        let labels = [database, user, shard, host];
        out.sample("host_primary", &labels, u8::from(r.role == "primary"));
    }
    out.family(
        "replica_lag_bytes",
        "gauge",
        "Bytes of WAL the replica has not replayed yet.",
    );
    for r in &rows {
        if let Some(lag) = r.lag {
            out.sample("replica_lag_bytes", &r.labels(), lag);
        }
    }
}

fn traffic_metrics(out: &mut Out) {
    let pools = counters::pools();
    let counters: [CounterFamily; 4] = [
        ("transactions", "Transactions completed.", |t| t.xact_count),
        ("queries", "Queries completed.", |t| t.query_count),
        ("received_bytes", "Bytes received from clients.", |t| {
            t.received
        }),
        ("sent_bytes", "Bytes sent to clients.", |t| t.sent),
    ];
    for (name, help, get) in counters {
        out.family(name, "counter", help);
        for ((user, db), s) in &pools {
            let l = [("database", db.as_str()), ("user", user.as_str())];
            out.sample(&format!("{name}_total"), &l, get(&s.totals()));
        }
    }
    let histograms: [HistogramFamily; 3] = [
        ("transaction_time_seconds", "Transaction duration.", |s| {
            &s.xact_time
        }),
        (
            "query_time_seconds",
            "Query duration (to ReadyForQuery).",
            |s| &s.query_time,
        ),
        (
            "checkout_wait_seconds",
            "Time waiting for a server connection.",
            |s| &s.wait_time,
        ),
    ];
    for (name, help, get) in histograms {
        out.family(name, "histogram", help);
        for ((user, db), s) in &pools {
            let l = [("database", db.as_str()), ("user", user.as_str())];
            out.histogram(name, &l, get(s));
        }
    }
    out.family(
        "errors",
        "counter",
        "Errors sent to clients, by SQLSTATE class.",
    );
    for (class, n) in stats::errors() {
        out.sample("errors_total", &[("class", &class)], n);
    }
}

/// `max_db_connections` / `max_user_connections`: each cap's limit and the server connections
/// holding its slots.
fn cap_metrics(out: &mut Out) {
    let caps = Registry::current().caps.list();
    out.family("cap_limit", "gauge", "Server connections a cap allows.");
    for c in &caps {
        out.sample("cap_limit", &[("cap", &c.name)], c.limit);
    }
    out.family(
        "cap_in_use",
        "gauge",
        "Server connections holding a slot of the cap.",
    );
    for c in &caps {
        out.sample("cap_in_use", &[("cap", &c.name)], c.in_use());
    }
}

fn cache_metrics(out: &mut Out) {
    out.family(
        "prepared_statements",
        "gauge",
        "Distinct prepared statements in the global cache.",
    );
    out.sample("prepared_statements", &[], crate::backend::prepared::len());
    let cache = crate::router::QueryCache::global();
    let (hits, misses) = cache.stats();
    out.family("query_cache_entries", "gauge", "Parsed queries cached.");
    out.sample("query_cache_entries", &[], cache.len());
    out.family("query_cache_hits", "counter", "Parse cache hits.");
    out.sample("query_cache_hits_total", &[], hits);
    out.family("query_cache_misses", "counter", "Parse cache misses.");
    out.sample("query_cache_misses_total", &[], misses);
    let shapes = crate::router::ShapeCache::global().stats();
    out.family(
        "query_shape_cache_entries",
        "gauge",
        "Simple-protocol query shapes cached.",
    );
    out.sample("query_shape_cache_entries", &[], shapes.entries);
    for (name, help, value) in [
        ("hits", "Shape cache hits (parse skipped).", shapes.hits),
        ("misses", "Shape cache misses (parsed).", shapes.misses),
        (
            "not_cacheable",
            "Simple-protocol texts parsed every time: a literal form or a shape the cache cannot serve exactly.",
            shapes.not_cacheable,
        ),
        (
            "points",
            "Shape cache hits routed by their key literal alone (point queries: no parse, no router walk).",
            shapes.points,
        ),
    ] {
        let family = format!("query_shape_cache_{name}");
        out.family(&family, "counter", help);
        out.sample(&format!("{family}_total"), &[], value);
    }
}

fn merge_metrics(out: &mut Out) {
    let m = crate::merge::memory_stats();
    for (name, kind, help, value) in [
        (
            "merge_memory_bytes",
            "gauge",
            "Bytes the cross-shard merges in flight hold.",
            m.in_flight,
        ),
        (
            "merge_memory_peak_bytes",
            "gauge",
            "The most bytes the cross-shard merges held at once.",
            m.peak,
        ),
        (
            "merge_spilled_bytes",
            "counter",
            "Bytes cross-shard merges wrote to temporary files.",
            m.spilled_bytes,
        ),
        (
            "merge_spill_files",
            "counter",
            "Temporary files cross-shard merges created.",
            m.spill_files,
        ),
        (
            "merge_refused",
            "counter",
            "Statements refused with 53200 (merge_memory_limit).",
            m.refused,
        ),
    ] {
        out.family(name, kind, help);
        let sample = if kind == "counter" {
            format!("{name}_total")
        } else {
            name.to_string()
        };
        out.sample(&sample, &[], value);
    }
}

/// The routes report (dry_run) summed per database: calls by verdict, shapes, time.
fn route_metrics(out: &mut Out) {
    use crate::router::verdict::VerdictKind;
    let mut by: BTreeMap<String, ([u64; 5], u64, u64)> = BTreeMap::new();
    for r in crate::stats::routes::rows() {
        let e = by.entry(r.database).or_default();
        (0..5).for_each(|i| e.0[i] += r.by_kind[i]);
        e.1 += 1;
        e.2 += r.time_us;
    }
    out.family(
        "route_calls",
        "counter",
        "Statements counted by the dry run, by the verdict of the planned layout.",
    );
    for (db, (kinds, _, _)) in &by {
        for k in VerdictKind::ALL {
            let l = [("database", db.as_str()), ("verdict", k.name())];
            out.sample("route_calls_total", &l, kinds[k.index()]);
        }
    }
    out.family(
        "route_shapes",
        "gauge",
        "Statement shapes in the routes report.",
    );
    for (db, (_, shapes, _)) in &by {
        out.sample("route_shapes", &[("database", db.as_str())], shapes);
    }
    out.family(
        "route_time_seconds",
        "counter",
        "Time of the requests the dry run counted statements of.",
    );
    for (db, (_, _, us)) in &by {
        let l = [("database", db.as_str())];
        out.sample("route_time_seconds_total", &l, *us as f64 / 1e6);
    }
}

/// `[[mirroring]]`: transactions by outcome, queue depth, time on each side.
fn mirror_metrics(out: &mut Out) {
    use std::sync::atomic::Ordering::Relaxed;
    let mirrors = crate::backend::mirror::all();
    if mirrors.is_empty() {
        return;
    }
    out.family(
        "mirror_transactions",
        "counter",
        "Transactions of a mirror's source, by outcome on the destination.",
    );
    for m in &mirrors {
        let (s, d) = (&m.config.source_db, &m.config.destination_db);
        for (outcome, v) in [
            ("mirrored", &m.mirrored),
            ("dropped", &m.dropped),
            ("error", &m.errors),
        ] {
            let l = [
                ("source", s.as_str()),
                ("destination", d.as_str()),
                ("outcome", outcome),
            ];
            out.sample("mirror_transactions_total", &l, v.load(Relaxed));
        }
    }
    out.family(
        "mirror_queue_depth",
        "gauge",
        "Transactions waiting for the destination.",
    );
    for m in &mirrors {
        let l = [
            ("source", m.config.source_db.as_str()),
            ("destination", m.config.destination_db.as_str()),
        ];
        out.sample("mirror_queue_depth", &l, m.depth());
    }
    out.family(
        "mirror_time_seconds",
        "counter",
        "Time of the mirrored transactions on the source and on the destination.",
    );
    for m in &mirrors {
        let (s, d) = (&m.config.source_db, &m.config.destination_db);
        for (side, v) in [("source", &m.source_us), ("destination", &m.destination_us)] {
            let l = [
                ("source", s.as_str()),
                ("destination", d.as_str()),
                ("side", side),
            ];
            out.sample(
                "mirror_time_seconds_total",
                &l,
                v.load(Relaxed) as f64 / 1e6,
            );
        }
    }
}

/// `(name, value)` label pairs borrowed from owned values.
fn borrowed<'a>(l: &'a [(&'static str, String); 3]) -> [(&'a str, &'a str); 3] {
    l.each_ref().map(|(k, v)| (*k, v.as_str()))
}

fn reshard_metrics(out: &mut Out) {
    let Some(control) = crate::reshard::admin_commands::running() else {
        // Declared without samples: dashboards find the series before the first reshard.
        for (family, kind, help) in RESHARD_FAMILIES {
            out.family(family, kind, help);
        }
        return;
    };
    let now = std::time::Instant::now();
    let tables: Vec<(crate::reshard::display::Row, [(&str, String); 3])> = control
        .progress
        .tables()
        .iter()
        .map(|t| {
            let row = crate::reshard::display::table_row(t, now);
            let labels = [
                ("table", t.table.clone()),
                ("shard", t.source_shard.to_string()),
                ("server", row.server.clone().unwrap_or_default()),
            ];
            (row, labels)
        })
        .collect();
    type Value = fn(&crate::reshard::display::Row) -> Option<String>;
    // (RESHARD_FAMILIES lists the same families and help texts.)
    let per_table: [(&str, &str, &str, &str, Value); 3] = [
        (
            "reshard_copied_rows",
            "counter",
            "_total",
            "Rows copied per table.",
            |r| Some(r.rows.to_string()),
        ),
        (
            "reshard_copied_bytes",
            "counter",
            "_total",
            "COPY bytes copied per table.",
            |r| Some(r.bytes.to_string()),
        ),
        (
            "reshard_copy_eta_seconds",
            "gauge",
            "",
            "Estimated seconds left to copy a table (planner row estimate / rows per second).",
            |r| r.eta_seconds.map(|eta| format!("{eta:.1}")),
        ),
    ];
    for (family, kind, suffix, help, value) in per_table {
        out.family(family, kind, help);
        let sample = format!("{family}{suffix}");
        for (row, labels) in &tables {
            if let Some(v) = value(row) {
                out.sample(&sample, &borrowed(labels), v);
            }
        }
    }
    out.family(
        "reshard_replay_lag_bytes",
        "gauge",
        "WAL of the source not applied on the destination yet.",
    );
    for (i, lag) in control.lag().iter().enumerate() {
        let shard = i.to_string();
        out.sample("reshard_replay_lag_bytes", &[("shard", &shard)], lag.bytes);
    }
}

/// The resharding families: name, kind, help.
const RESHARD_FAMILIES: [(&str, &str, &str); 4] = [
    ("reshard_copied_rows", "counter", "Rows copied per table."),
    (
        "reshard_copied_bytes",
        "counter",
        "COPY bytes copied per table.",
    ),
    (
        "reshard_copy_eta_seconds",
        "gauge",
        "Estimated seconds left to copy a table (planner row estimate / rows per second).",
    ),
    (
        "reshard_replay_lag_bytes",
        "gauge",
        "WAL of the source not applied on the destination yet.",
    ),
];
