//! Tables sharded by other key types (varchar, uuid, integer, bigint ranges): their data and
//! the check of its placement.
use super::*;

pub(crate) struct More {
    /// sku, qty, tags
    pub(crate) items: Vec<(String, Option<i32>, Option<String>)>,
    /// sid, user_id, n
    pub(crate) sessions: Vec<(String, i64, Option<i32>)>,
    /// id, n
    pub(crate) counters: Vec<(i32, Option<i64>)>,
    /// bucket, id, val
    pub(crate) metrics: Vec<(i64, i64, Option<i32>)>,
}

pub(crate) fn uuid_text(r: &mut Rng) -> String {
    let a = r.next();
    let b = r.next();
    let h = format!("{a:016x}{b:016x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

pub(crate) fn generate_more() -> More {
    let mut r = Rng(0x00c0_ffee);
    let tags = ["red", "green", "blue", "Red"];
    let mut items = Vec::new();
    for i in 0..600 {
        let sku = match i {
            0 => String::new(),
            1 => "ä-ß".into(),
            2 => "SKU-1".into(),
            3 => "sku-1".into(),
            4 => " padded ".into(),
            5 => "日本".into(),
            _ => format!("SKU-{}", r.below(1_000_000) * 1000 + i),
        };
        let qty = (!r.chance(10)).then(|| r.below(1000) as i32 - 100);
        let tag = (!r.chance(15)).then(|| r.pick(&tags).to_string());
        items.push((sku, qty, tag));
    }
    let mut sessions = Vec::new();
    for _ in 0..600 {
        let sid = uuid_text(&mut r);
        sessions.push((
            sid,
            r.below(5000) as i64,
            (!r.chance(10)).then(|| r.below(100) as i32),
        ));
    }
    let mut counters = Vec::new();
    let mut seen = std::collections::HashSet::new();
    while counters.len() < 300 {
        let id = match counters.len() {
            0 => i32::MIN,
            1 => i32::MAX,
            2 => 0,
            _ => r.below(100_000) as i32 - 50_000,
        };
        if seen.insert(id) {
            counters.push((id, (!r.chance(10)).then(|| r.next() as i64 >> 20)));
        }
    }
    let metrics = (0..600)
        .map(|i| {
            let bucket = match i {
                0 => -1,
                1 => 0,
                2 => 999,
                3 => 1000,
                4 => i64::MIN,
                5 => i64::MAX,
                _ => r.below(3000) as i64 - 500,
            };
            (
                bucket,
                i as i64,
                (!r.chance(10)).then(|| r.below(1000) as i32),
            )
        })
        .collect();
    More {
        items,
        sessions,
        counters,
        metrics,
    }
}

/// Placement of the other-key tables: hash of text, uuid and int4 as Postgres partitions them,
/// bigint ranges by the configured mapping.
pub(crate) async fn check_more_placement(shards: &[Client], phase: &str, report: &mut Report) {
    for (k, shard) in shards.iter().enumerate() {
        for (what, sql) in [
            ("items by hash of sku", format!("SELECT count(*) FROM items WHERE NOT satisfies_hash_partition('text_hash_check'::regclass, {SHARDS}, {k}, sku)")),
            ("sessions by hash of sid", format!("SELECT count(*) FROM sessions WHERE NOT satisfies_hash_partition('uuid_hash_check'::regclass, {SHARDS}, {k}, sid)")),
            ("counters by hash of id", format!("SELECT count(*) FROM counters WHERE NOT satisfies_hash_partition('int_hash_check'::regclass, {SHARDS}, {k}, id)")),
            ("metrics by range of bucket", format!("SELECT count(*) FROM metrics WHERE NOT ({})", ["bucket < 0", "bucket >= 0 AND bucket < 1000", "bucket >= 1000"][k])),
        ] {
            let wrong = count(shard, &sql).await;
            if wrong != 0 {
                report.fail(format!(
                    "placement ({phase}): {wrong} rows of {what} misplaced on shard {k} ({sql})"
                ));
            }
        }
    }
}
