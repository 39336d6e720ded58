//! The replica-identity check: published tables the replay could not apply.
use super::tables::PublishedTable;
use super::Check;
use crate::config::Settings;
use crate::reshard::orchestrate::ReshardOptions;

/// Published tables the replay could not apply, refused (the message says what to change):
/// - no primary key and the default replica identity, or `REPLICA IDENTITY NOTHING`: no row
///   could be found;
/// - where one row's move could arrive on two streams (a sharded source, or `--reverse` into a
///   sharded destination), a primary key or replica identity without the sharding key, unless
///   every destination shard takes keys of one upstream shard only (`reshard/ownership.rs`: the
///   same hash sharding on the same column, a multiple of the shard count). Otherwise a row
///   moving between upstream shards has two versions (the DELETE on one stream, the INSERT on
///   the other, in no fixed order) that can meet on one destination shard, where the primary
///   key keeps one only; either choice loses the row in one of the arrival orders. REPLICA
///   IDENTITY FULL does not help while the primary key lacks the key (its upsert is `ON
///   CONFLICT DO NOTHING`: the other version is dropped, then deleted by its own stream).
pub(super) fn check(
    settings: &Settings,
    options: &ReshardOptions,
    tables: &[PublishedTable],
) -> Check {
    let mut c = Check::new("replica identity");
    let schema = |db: &str| {
        crate::router::schema::Schema::new(settings, db)
            .map_err(|e| format!("database `{db}`: {e}"))
    };
    let (from, to) = (&options.databases.from, &options.databases.to);
    let (source, dest) = match (schema(from), schema(to)) {
        (Ok(s), Ok(d)) => (s, d),
        (Err(e), _) | (_, Err(e)) => {
            c.refuse(e);
            return c;
        }
    };
    // Where one row's move could arrive on two streams: a sharded source, or with `--reverse`
    // a sharded destination (the reverse replication's source).
    let mut streams = Vec::new();
    if settings.shards(from) > 1 {
        streams.push((
            format!("the source has {} shards", settings.shards(from)),
            &source,
            &dest,
        ));
    }
    if options.reverse && settings.shards(to) > 1 {
        streams.push((
            format!(
                "reverse replication (--reverse) reads the destination's {} shards",
                settings.shards(to)
            ),
            &dest,
            &source,
        ));
    }
    for t in tables {
        let entry = |s: &crate::router::schema::Schema| {
            s.table(&format!("{}.{}", t.schema, t.table))
                .or_else(|| s.table(&t.table))
                .cloned()
        };
        let key = entry(&dest).map(|d| d.column().to_string());
        let layouts: Vec<Layout> = streams
            .iter()
            .map(|(why, upstream, downstream)| Layout {
                why: why.clone(),
                owned: owned(entry(upstream), entry(downstream), key.as_deref()),
            })
            .collect();
        if let Some(r) = refusal(t, key.as_deref(), &layouts) {
            c.refuse(r);
        }
    }
    if c.verdict() == super::Verdict::Ok {
        c.ok(format!(
            "every one of the {} published tables can be replayed",
            tables.len()
        ));
    }
    c
}

/// Where one row's move could arrive on two streams: why (`the source has 2 shards`), and
/// whether each downstream shard takes keys of one upstream shard only (else why not).
struct Layout {
    why: String,
    owned: Result<(), String>,
}

/// Whether every downstream shard takes keys of one upstream shard only, for a table sharded
/// `upstream` there and `downstream` here ([`crate::reshard::ownership`]).
fn owned(
    upstream: Option<crate::router::schema::TableSharding>,
    downstream: Option<crate::router::schema::TableSharding>,
    key: Option<&str>,
) -> Result<(), String> {
    match (upstream, downstream) {
        (Some(up), Some(down)) => {
            crate::reshard::ownership::owned_shards(&up, &down, 0).map(|_| ())
        }
        _ => Err(format!(
            "its sharding by \"{}\" is not configured on both sides",
            key.unwrap_or("?")
        )),
    }
}

/// Why the replay could not apply a table's changes (`key`: its sharding key on the
/// destination; `layouts`: where one row's move could arrive on two streams), if it could not.
fn refusal(t: &PublishedTable, key: Option<&str>, layouts: &[Layout]) -> Option<String> {
    let name = &t.name;
    if t.replident == "n" || (t.replident == "d" && !t.primary_key) {
        return Some(format!(
            "table {name} has no primary key or replica identity: add one \
             (ALTER TABLE {name} ADD PRIMARY KEY (...)) or set \
             ALTER TABLE {name} REPLICA IDENTITY FULL"
        ));
    }
    let key = key?;
    // The unique columns two versions of a moving row could collide on.
    let unique = t.replident != "f" || t.primary_key;
    if !unique || t.identity.iter().any(|c| c == key) {
        return None;
    }
    let (why, reason) = layouts
        .iter()
        .find_map(|l| l.owned.as_ref().err().map(|e| (&l.why, e)))?;
    let what = if t.replident == "f" {
        "primary key"
    } else {
        "replica identity"
    };
    Some(format!(
        "table {name}: its {what} ({}) does not contain the sharding key \"{key}\" and {why}, \
         but {reason}: a row moving between those shards arrives as a DELETE and an INSERT on \
         two independent streams, and its two versions could meet on one destination shard, \
         where the {what} keeps one only; add the column to the primary key (or REPLICA \
         IDENTITY index), or give the destination a multiple of the source's shard count with \
         the same hash sharding",
        t.identity.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(replident: &str, primary_key: bool, identity: &[&str]) -> PublishedTable {
        PublishedTable {
            name: "public.orders".into(),
            schema: "public".into(),
            table: "orders".into(),
            replident: replident.into(),
            primary_key,
            identity: identity.iter().map(|c| c.to_string()).collect(),
            ..PublishedTable::default()
        }
    }

    #[test]
    fn refusals() {
        let by_id = table("d", true, &["id"]);
        // A single source applies an identity without the key by identity on every shard.
        assert_eq!(refusal(&by_id, Some("customer_id"), &[]), None);
        let layout = |owned: Result<(), String>| Layout {
            why: "the source has 2 shards".into(),
            owned,
        };
        let apart = [layout(Ok(()))];
        let mixed = [layout(Err(
            "the destination's 3 shards are not a multiple of the source's 2".into(),
        ))];
        // Each destination shard of one source shard (2 -> 4): applied by identity there.
        assert_eq!(refusal(&by_id, Some("customer_id"), &apart), None);
        let refused = refusal(&by_id, Some("customer_id"), &mixed).unwrap();
        assert!(refused.contains("(id) does not contain the sharding key \"customer_id\""));
        assert!(refused.contains("the source has 2 shards, but the destination's 3 shards"));
        // REPLICA IDENTITY FULL with a primary key without the key: refused the same way.
        let full_by_id = table("f", true, &["id"]);
        let refused = refusal(&full_by_id, Some("customer_id"), &mixed).unwrap();
        assert!(refused.contains("its primary key (id)"), "{refused}");
        assert_eq!(refusal(&full_by_id, Some("customer_id"), &apart), None);
        // The key in the identity, FULL without a primary key, or an unsharded table: fine.
        let keyed = table("d", true, &["id", "customer_id"]);
        assert_eq!(refusal(&keyed, Some("customer_id"), &mixed), None);
        assert_eq!(
            refusal(&table("f", false, &[]), Some("customer_id"), &mixed),
            None
        );
        assert_eq!(refusal(&by_id, None, &mixed), None);
        // No identity at all: refused everywhere.
        for t in [table("d", false, &[]), table("n", true, &["id"])] {
            let refused = refusal(&t, None, &[]).unwrap();
            assert!(refused.contains("has no primary key or replica identity"));
        }
    }
}
