//! Which destination shards belong to one source shard, for the tables whose replica identity
//! lacks the sharding key, replayed from a sharded source.
//!
//! A row moving between source shards (pgdog's key UPDATE: a DELETE on source shard A, an
//! INSERT on source shard B) reaches the replay as a DELETE on A's stream and an INSERT on B's,
//! in no fixed order, and the DELETE's old tuple holds only the identity (`id`), not the key.
//! Both versions of the row (A's, until A's DELETE is applied, and B's) can then be on the
//! destination at once, and a change by identity alone cannot tell them apart.
//!
//! When the source and the destination place the table's rows by the same hash of the same
//! column, and the destination has a multiple of the source's shard count, destination shard
//! `d` holds only keys of source shard `d % N` (a key's hash modulo M, taken modulo N, is the
//! hash modulo N). Each stream then owns its destination shards outright: it applies its
//! changes by identity on those only, where no other stream's version of a row can be, and
//! the two versions of a moving row never meet (neither in a lookup, nor on a primary key).
//!
//! Any other layout (2 → 3 shards, ranges, lists, another column) can put both versions on
//! one destination shard, where the primary key on the identity keeps one of them only:
//! whichever version is kept, one arrival order loses the row (a version kept over a newer
//! one is later deleted by its own stream). Those layouts are refused
//! ([`crate::reshard::preflight`] and the replay).
use crate::router::schema::TableSharding;

/// The destination shards holding only keys of `source_shard`, the only ones its stream may
/// change by identity; else why none can be told apart.
pub(crate) fn owned_shards(
    source: &TableSharding,
    dest: &TableSharding,
    source_shard: usize,
) -> Result<Vec<usize>, String> {
    let (n, m) = (source.placement.shard_count(), dest.placement.shard_count());
    if !source.placement.is_hash() || !dest.placement.is_hash() {
        return Err("the source or the destination places it by list or range mappings".into());
    }
    if source.column() != dest.column() {
        return Err(format!(
            "the source shards it by \"{}\", the destination by \"{}\"",
            source.column(),
            dest.column()
        ));
    }
    if source.placement.data_type() != dest.placement.data_type() {
        return Err(format!(
            "the source and the destination hash \"{}\" as different types",
            dest.column()
        ));
    }
    if source.placement.buckets().is_some() || dest.placement.buckets().is_some() {
        return owned_by_bucket(source, dest, source_shard);
    }
    if n == 0 || m % n != 0 {
        return Err(format!(
            "the destination's {m} shards are not a multiple of the source's {n}"
        ));
    }
    Ok((0..m).filter(|d| d % n == source_shard).collect())
}

/// The shard of each of `count` buckets under `p`: its bucket map, or plain hash over shard
/// counts dividing `count` (bucket b on shard b mod n).
fn by_bucket(p: &crate::sharding::Placement, count: u32) -> Option<Vec<usize>> {
    match p.buckets() {
        Some(b) if b.count() == count => Some((0..count).map(|x| b.shard(x)).collect()),
        Some(_) => None,
        None => {
            let n = p.shard_count().max(1);
            (count as usize)
                .is_multiple_of(n)
                .then(|| (0..count as usize).map(|x| x % n).collect())
        }
    }
}

/// [`owned_shards`] when a side places by bucket: a destination shard belongs to a source shard
/// when every one of its buckets is on that source shard.
fn owned_by_bucket(
    source: &TableSharding,
    dest: &TableSharding,
    source_shard: usize,
) -> Result<Vec<usize>, String> {
    let count = dest
        .placement
        .buckets()
        .or(source.placement.buckets())
        .map_or(0, |b| b.count());
    let (Some(from), Some(to)) = (
        by_bucket(&source.placement, count),
        by_bucket(&dest.placement, count),
    ) else {
        return Err("the source and the destination do not place it by the same buckets".into());
    };
    let mut owners: Vec<std::collections::BTreeSet<usize>> =
        vec![Default::default(); dest.placement.shard_count()];
    for (bucket, &d) in to.iter().enumerate() {
        owners[d].insert(from[bucket]);
    }
    if let Some((d, o)) = owners.iter().enumerate().find(|(_, o)| o.len() > 1) {
        return Err(format!(
            "destination shard {d} would hold buckets of source shards {o:?}"
        ));
    }
    Ok((0..owners.len())
        .filter(|&d| owners[d].first() == Some(&source_shard))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DataType;
    use crate::sharding::Key;

    fn sharding(column: &str, data_type: DataType, shards: usize) -> TableSharding {
        TableSharding::hashed("orders", column, data_type, shards)
    }

    #[test]
    fn a_multiple_of_the_source_with_the_same_hash() {
        let src = sharding("customer_id", DataType::Bigint, 2);
        let dst = sharding("customer_id", DataType::Bigint, 4);
        assert_eq!(owned_shards(&src, &dst, 0).unwrap(), [0, 2]);
        assert_eq!(owned_shards(&src, &dst, 1).unwrap(), [1, 3]);
        // Every key's destination shard is one its source shard owns.
        for k in -500i64..500 {
            let key = Key::from_text(DataType::Bigint, &k.to_string()).unwrap();
            let s = src.placement.shard(&key).unwrap();
            let d = dst.placement.shard(&key).unwrap();
            assert!(owned_shards(&src, &dst, s).unwrap().contains(&d), "key {k}");
        }
    }

    #[test]
    fn other_layouts_are_refused() {
        let src = sharding("customer_id", DataType::Bigint, 2);
        let three = sharding("customer_id", DataType::Bigint, 3);
        let err = owned_shards(&src, &three, 0).unwrap_err();
        assert!(
            err.contains("3 shards are not a multiple of the source's 2"),
            "{err}"
        );
        let other_column = sharding("id", DataType::Bigint, 4);
        assert!(owned_shards(&src, &other_column, 0)
            .unwrap_err()
            .contains("by \"customer_id\", the destination by \"id\""));
        // The reverse of 2 -> 4: each old shard takes keys of two new ones.
        let four = sharding("customer_id", DataType::Bigint, 4);
        assert!(owned_shards(&four, &src, 0).is_err());
    }
}
