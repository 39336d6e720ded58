//! [`Buckets`]: the bucket layout of a database's hash-sharded tables (`[[bucket_maps]]`). A key's
//! bucket is its Postgres hash-partition remainder for modulus B (the same hash as plain hash
//! sharding, a larger modulus); the map says which shard holds each bucket. The default map,
//! bucket `b` on shard `b mod N`, places every key where plain hash sharding over N shards does
//! when N divides B, because `(h mod B) mod N = h mod N` then. Moving a bucket moves only its
//! keys: adding shard N+1 moves about B/(N+1) buckets, 1/(N+1) of the rows.
use super::ShardingError;
use crate::config::BucketMap;
use std::sync::Arc;

/// The most buckets a map may have (a bucket's shard is stored in 16 bits).
pub const MAX_BUCKETS: u32 = 65_536;

/// A validated bucket map: the shard of every bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buckets {
    shard_of: Arc<[u16]>,
}

impl Buckets {
    /// The layout of `map` for a database of `shards` shards, checked: a bucket count from 1 to
    /// [`MAX_BUCKETS`], every bucket on exactly one shard, no shard that does not exist; without
    /// an explicit map, a bucket count that is a multiple of the shard count (the default map
    /// then keeps every key where plain hash sharding puts it).
    pub fn new(map: &BucketMap, shards: usize) -> Result<Buckets, ShardingError> {
        let bad = |message: String| ShardingError::Config {
            table: format!("bucket_maps of database \"{}\"", map.database),
            message,
        };
        let count = map.buckets;
        if count == 0 || count > MAX_BUCKETS {
            return Err(bad(format!(
                "buckets = {count}: give 1 to {MAX_BUCKETS} buckets"
            )));
        }
        if shards == 0 || shards > usize::from(u16::MAX) {
            return Err(bad(format!("{shards} shards cannot hold buckets")));
        }
        let Some(lists) = &map.shards else {
            if !(count as usize).is_multiple_of(shards) {
                return Err(bad(format!(
                    "buckets = {count} is not a multiple of the {shards} shards: the default map \
                     (bucket b on shard b mod {shards}) would move keys; list each shard's buckets \
                     in `shards`"
                )));
            }
            return Ok(Buckets::default_map(count, shards));
        };
        if lists.len() > shards {
            return Err(bad(format!(
                "shards[{}] does not exist (the database has {shards} shards, 0 to {})",
                lists.len() - 1,
                shards - 1
            )));
        }
        let mut shard_of: Vec<Option<u16>> = vec![None; count as usize];
        for (shard, list) in lists.iter().enumerate() {
            for bucket in parse_list(list).map_err(|e| bad(format!("shards[{shard}]: {e}")))? {
                let slot = shard_of.get_mut(bucket as usize).ok_or_else(|| {
                    bad(format!(
                        "shards[{shard}]: bucket {bucket} does not exist (buckets are 0 to {})",
                        count - 1
                    ))
                })?;
                if let Some(other) = slot.replace(shard as u16) {
                    return Err(bad(format!(
                        "bucket {bucket} is on both shard {other} and shard {shard}"
                    )));
                }
            }
        }
        if let Some(missing) = shard_of.iter().position(Option::is_none) {
            let total = shard_of.iter().filter(|s| s.is_none()).count();
            return Err(bad(format!(
                "bucket {missing} is on no shard ({total} bucket(s) missing)"
            )));
        }
        Ok(Buckets {
            shard_of: shard_of.into_iter().flatten().collect(),
        })
    }

    /// Bucket `b` on shard `b mod shards`.
    pub fn default_map(count: u32, shards: usize) -> Buckets {
        Buckets {
            shard_of: (0..count as usize)
                .map(|b| (b % shards.max(1)) as u16)
                .collect(),
        }
    }

    /// The bucket count B.
    pub fn count(&self) -> u32 {
        self.shard_of.len() as u32
    }

    /// The bucket of a key's partition hash.
    pub fn bucket(&self, partition_hash: u64) -> u32 {
        (partition_hash % self.shard_of.len() as u64) as u32
    }

    /// The shard holding `bucket`.
    pub fn shard(&self, bucket: u32) -> usize {
        usize::from(self.shard_of[bucket as usize])
    }

    /// The shard of a key's partition hash.
    pub fn shard_of_hash(&self, partition_hash: u64) -> usize {
        self.shard(self.bucket(partition_hash))
    }

    /// The buckets of `shard`.
    pub fn buckets_of(&self, shard: usize) -> Vec<u32> {
        (0..self.count())
            .filter(|&b| self.shard(b) == shard)
            .collect()
    }
}

impl Buckets {
    /// The map for `shards` shards that moves the fewest buckets: each shard keeps its buckets
    /// up to its share (B / shards, the first B mod shards shards one more), and the buckets
    /// over their shard's share (each shard's highest-numbered ones) go to the shards under
    /// theirs, in order. From N shards to N+1, about B/(N+1) buckets move, taken evenly.
    pub fn rebalanced(&self, shards: usize) -> Buckets {
        let shards = shards.max(1);
        let count = self.count() as usize;
        let share = |s: usize| count / shards + usize::from(s < count % shards);
        let mut shard_of: Vec<Option<u16>> = self.shard_of.iter().map(|&s| Some(s)).collect();
        let mut held = vec![0usize; shards];
        let mut spare = Vec::new();
        for (bucket, slot) in shard_of.iter_mut().enumerate() {
            match slot.map(usize::from) {
                Some(s) if s < shards && held[s] < share(s) => held[s] += 1,
                _ => {
                    *slot = None;
                    spare.push(bucket);
                }
            }
        }
        // Spares in the order their old shards gave them up, so each new shard takes evenly
        // from all of them.
        spare.sort_by_key(|&b| (usize::from(self.shard_of[b]), std::cmp::Reverse(b)));
        let mut by_shard: Vec<std::collections::VecDeque<usize>> = vec![
            Default::default();
            self.shard_of
                .iter()
                .map(|&s| usize::from(s) + 1)
                .max()
                .unwrap_or(1)
        ];
        for b in spare {
            by_shard[usize::from(self.shard_of[b])].push_back(b);
        }
        // Round robin over the giving shards (as many spares as missing buckets: it ends).
        let (givers, mut next) = (by_shard.len(), 0);
        for (target, held) in held.iter_mut().enumerate() {
            while *held < share(target) {
                let Some((i, b)) = (0..givers)
                    .map(|k| (next + k) % givers)
                    .find_map(|i| by_shard[i].pop_front().map(|b| (i, b)))
                else {
                    break;
                };
                next = i + 1;
                shard_of[b] = Some(target as u16);
                *held += 1;
            }
        }
        Buckets {
            shard_of: shard_of.into_iter().map(|s| s.unwrap_or(0)).collect(),
        }
    }

    /// The buckets whose shard differs in `other` (same bucket count).
    pub fn moved_to(&self, other: &Buckets) -> Vec<(u32, usize, usize)> {
        (0..self.count().min(other.count()))
            .filter(|&b| self.shard(b) != other.shard(b))
            .map(|b| (b, self.shard(b), other.shard(b)))
            .collect()
    }

    /// The `[[bucket_maps]]` entry of this map for `database`.
    pub fn to_toml(&self, database: &str) -> String {
        let shards = self
            .shard_of
            .iter()
            .map(|&s| usize::from(s) + 1)
            .max()
            .unwrap_or(0);
        let lists: Vec<String> = (0..shards)
            .map(|s| format!("\"{}\"", format_list(&self.buckets_of(s))))
            .collect();
        format!(
            "[[bucket_maps]]\ndatabase = \"{database}\"\nbuckets = {}\nshards = [{}]\n",
            self.count(),
            lists.join(", ")
        )
    }
}

/// The buckets of a list: `n`, `a-b` (inclusive) and `a-b/s` (every s-th from a), separated
/// by commas; spaces are ignored.
pub fn parse_list(list: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let number = |s: &str| -> Result<u32, String> {
            s.trim()
                .parse::<u32>()
                .map_err(|_| format!("\"{item}\" is not a bucket, a range a-b or a-b/step"))
        };
        let (range, step) = match item.split_once('/') {
            Some((r, s)) => (r, number(s)?),
            None => (item, 1),
        };
        if step == 0 {
            return Err(format!("\"{item}\": a step of 0"));
        }
        let (lo, hi) = match range.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => {
                let n = number(range)?;
                (n, n)
            }
        };
        if lo > hi {
            return Err(format!("\"{item}\": {lo} is above {hi}"));
        }
        if hi >= MAX_BUCKETS {
            return Err(format!(
                "\"{item}\": bucket {hi} is above {}",
                MAX_BUCKETS - 1
            ));
        }
        out.extend((lo..=hi).step_by(step as usize));
    }
    Ok(out)
}

/// Writes a shard's buckets back as a list: ranges of consecutive buckets (`a-b`), else ones.
pub fn format_list(buckets: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < buckets.len() {
        let mut j = i;
        while j + 1 < buckets.len() && buckets[j + 1] == buckets[j] + 1 {
            j += 1;
        }
        if j > i {
            out.push(format!("{}-{}", buckets[i], buckets[j]));
        } else {
            out.push(buckets[i].to_string());
        }
        i = j + 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(buckets: u32, shards: Option<Vec<&str>>) -> BucketMap {
        BucketMap {
            database: "app".into(),
            buckets,
            shards: shards.map(|s| s.into_iter().map(String::from).collect()),
        }
    }

    #[test]
    fn lists_parse_and_print_back() {
        assert_eq!(
            parse_list("0-3, 7,10-16/3").unwrap(),
            [0, 1, 2, 3, 7, 10, 13, 16]
        );
        assert_eq!(format_list(&[0, 1, 2, 3, 7, 10, 13]), "0-3,7,10,13");
        for bad in ["x", "3-1", "1/0", "1-2-3", "70000"] {
            assert!(parse_list(bad).is_err(), "{bad}");
        }
        let b = parse_list("0-1023/3").unwrap();
        assert_eq!(parse_list(&format_list(&b)).unwrap(), b);
    }

    #[test]
    fn the_default_map_is_plain_hash_when_the_shard_count_divides_it() {
        let b = Buckets::new(&map(1024, None), 4).unwrap();
        for h in [0u64, 1, 5, 1023, 1024, 99_999, u64::MAX, u64::MAX - 7] {
            assert_eq!(b.shard_of_hash(h), (h % 4) as usize, "{h}");
        }
        assert!(Buckets::new(&map(1024, None), 3).is_err());
    }

    #[test]
    fn adding_a_shard_moves_its_share_taken_evenly() {
        let two = Buckets::new(&map(1024, None), 2).unwrap();
        let three = two.rebalanced(3);
        let moved = two.moved_to(&three);
        // 1024 / 3 rounded: shard 2 gets 341, 170 or 171 from each old shard.
        assert_eq!(moved.len(), 341);
        assert!(moved.iter().all(|&(_, _, to)| to == 2));
        let from0 = moved.iter().filter(|m| m.1 == 0).count();
        assert!((170..=171).contains(&from0), "{from0}");
        for s in 0..3 {
            assert!((341..=342).contains(&three.buckets_of(s).len()));
        }
        // The map it prints is a valid one for 3 shards, the same map.
        let text = three.to_toml("app");
        let parsed: BucketMap =
            toml::from_str(text.trim_start_matches("[[bucket_maps]]\n")).unwrap();
        assert_eq!(Buckets::new(&parsed, 3).unwrap(), three);
        // Nothing moves when the count stays; 3 -> 4 moves a quarter.
        assert!(three.moved_to(&three.rebalanced(3)).is_empty());
        assert_eq!(three.moved_to(&three.rebalanced(4)).len(), 256);
        // Fewer shards: the removed shard's buckets go to the others.
        let back = three.rebalanced(2);
        assert!(back.buckets_of(2).is_empty());
        assert_eq!(back.buckets_of(0).len() + back.buckets_of(1).len(), 1024);
    }

    #[test]
    fn maps_are_checked() {
        let ok = Buckets::new(&map(6, Some(vec!["0-2", "3,4", "5"])), 3).unwrap();
        assert_eq!(ok.buckets_of(1), [3, 4]);
        assert_eq!(ok.shard_of_hash(10), 1); // 10 mod 6 = 4
        let missing = Buckets::new(&map(6, Some(vec!["0-2", "3", "5"])), 3);
        assert!(format!("{:?}", missing).contains("bucket 4 is on no shard"));
        let twice = Buckets::new(&map(6, Some(vec!["0-3", "3,4", "5"])), 3);
        assert!(format!("{:?}", twice).contains("bucket 3 is on both shard 0 and shard 1"));
        let no_shard = Buckets::new(&map(6, Some(vec!["0-1", "2", "3", "4-5"])), 3);
        assert!(format!("{:?}", no_shard).contains("shards[3] does not exist"));
        let outside = Buckets::new(&map(6, Some(vec!["0-6"])), 1);
        assert!(format!("{:?}", outside).contains("bucket 6 does not exist"));
        assert!(Buckets::new(&map(0, None), 1).is_err());
    }
}
