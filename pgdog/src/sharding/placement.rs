//! [`Placement`]: which shard of a sharded table holds a key value, by Postgres' hash
//! partitioning, a list mapping or a range mapping, and which shards a range of keys can touch.
//! Built once per `[[sharded_tables]]` entry and validated then; placing allocates nothing.
//! Reading statements and rows is the callers' business (router, COPY, replication).
use super::key::{type_name, Value};
use super::{Buckets, Key, ShardingError};
use crate::config::{DataType, Mapping, ShardedTable};

/// One range mapping: `start <= key < end`, `None` being open.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Range {
    start: Option<Key>,
    end: Option<Key>,
    shard: usize,
}

/// How keys map to shards.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Rule {
    /// `PARTITION BY HASH` with modulus = the shard count, remainder = the shard; or with modulus
    /// = the bucket count, remainder = the bucket, and the bucket map names the shard.
    Hash,
    /// Values sorted, each with its shard.
    List(Vec<(Key, usize)>),
    /// Ranges sorted by start, disjoint.
    Range(Vec<Range>),
}

/// The placement of one sharded table's key values on shards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    data_type: DataType,
    shards: usize,
    column: String,
    /// `table "users"` (or `column "user_id"` for an entry without a table name), for messages.
    label: String,
    default_shard: Option<usize>,
    rule: Rule,
    /// Hash placement by bucket (`[[bucket_maps]]`): the shard of each bucket.
    buckets: Option<Buckets>,
}

/// A bound of a key interval: the value and whether it is inside.
type Bound<'a> = Option<(Value<'a>, bool)>;

impl Placement {
    /// Checks `table` against a database of `shards` shards: every shard number in range,
    /// mapping values of the column's type, each mapping either a list or a range (not both,
    /// not a mix across mappings), ranges with `start < end` and no two mappings claiming a key.
    /// `buckets`: the database's bucket map, which places hash-sharded tables (not mapped ones).
    pub fn new(
        table: &ShardedTable,
        shards: usize,
        buckets: Option<&Buckets>,
    ) -> Result<Placement, ShardingError> {
        let label = match &table.name {
            Some(name) => format!("table \"{name}\""),
            None => format!("column \"{}\"", table.column),
        };
        let bad = |message: String| ShardingError::Config {
            table: label.clone(),
            message,
        };
        if shards == 0 {
            return Err(bad("the database has no shards".into()));
        }
        let check_shard = |what: &str, shard: usize| {
            if shard < shards {
                Ok(shard)
            } else {
                Err(bad(format!(
                    "{what}: shard {shard} does not exist (shards are 0 to {})",
                    shards - 1
                )))
            }
        };
        let default_shard = table
            .default_shard
            .map(|shard| check_shard("default_shard", shard))
            .transpose()?;
        let data_type = table.data_type;
        let read = |i: usize, value| {
            Key::from_mapping(data_type, value).map_err(|e| bad(format!("mapping[{i}]: {e}")))
        };
        let mut list = Vec::new();
        let mut ranges = Vec::new();
        for (i, mapping) in table.mapping.iter().enumerate() {
            let shard = check_shard(&format!("mapping[{i}]"), mapping.shard)?;
            match classify(mapping) {
                Some(Kind::List) => {
                    for value in &mapping.values {
                        list.push((read(i, value)?, shard, i));
                    }
                }
                Some(Kind::Range) => {
                    let start = mapping.start.as_ref().map(|v| read(i, v)).transpose()?;
                    let end = mapping.end.as_ref().map(|v| read(i, v)).transpose()?;
                    if let (Some(s), Some(e)) = (&start, &end) {
                        if s >= e {
                            return Err(bad(format!(
                                "mapping[{i}]: start {s} is not below end {e}"
                            )));
                        }
                    }
                    ranges.push((Range { start, end, shard }, i));
                }
                None => {
                    return Err(bad(format!(
                        "mapping[{i}] needs either `values` (list) or `start` / `end` (range)"
                    )))
                }
            }
        }
        if !list.is_empty() && !ranges.is_empty() {
            return Err(bad("mixes list and range mappings".into()));
        }
        let rule = if !list.is_empty() {
            list.sort_by(|a, b| a.0.cmp(&b.0));
            for pair in list.windows(2) {
                let ((a, _, i), (b, _, j)) = (&pair[0], &pair[1]);
                if a == b && i != j {
                    return Err(bad(format!(
                        "value {a} is in both mapping[{}] and mapping[{}]",
                        i.min(j),
                        i.max(j)
                    )));
                }
            }
            list.dedup_by(|a, b| a.0 == b.0);
            Rule::List(
                list.into_iter()
                    .map(|(key, shard, _)| (key, shard))
                    .collect(),
            )
        } else if !ranges.is_empty() {
            // Open starts first, then by start.
            ranges.sort_by(|a, b| a.0.start.cmp(&b.0.start));
            for pair in ranges.windows(2) {
                let ((a, i), (b, j)) = (&pair[0], &pair[1]);
                let disjoint = match (&a.end, &b.start) {
                    (Some(end), Some(start)) => end <= start,
                    _ => false,
                };
                if !disjoint {
                    return Err(bad(format!(
                        "the ranges of mapping[{}] and mapping[{}] overlap",
                        i.min(j),
                        i.max(j)
                    )));
                }
            }
            Rule::Range(ranges.into_iter().map(|(range, _)| range).collect())
        } else {
            Rule::Hash
        };
        let buckets = match rule {
            Rule::Hash => buckets.cloned(),
            _ => None,
        };
        Ok(Placement {
            data_type,
            shards,
            column: table.column.clone(),
            label,
            default_shard,
            rule,
            buckets,
        })
    }

    /// The column's type.
    pub fn data_type(&self) -> DataType {
        self.data_type
    }

    /// How many shards the database has.
    pub fn shard_count(&self) -> usize {
        self.shards
    }

    /// Whether keys are placed by hash (no mappings), with or without buckets.
    pub fn is_hash(&self) -> bool {
        self.rule == Rule::Hash
    }

    /// The bucket map of a hash placement by bucket.
    pub fn buckets(&self) -> Option<&Buckets> {
        self.buckets.as_ref()
    }

    /// The shard holding `key`: hash (Postgres' partition for modulus = shard count, or for
    /// modulus = the bucket count, then the bucket's shard), the list
    /// mapping holding it, or the range mapping with `start <= key < end`; a key no mapping
    /// holds goes to `default_shard`, or is an error naming it.
    pub fn shard(&self, key: &Key) -> Result<usize, ShardingError> {
        self.place(key.as_value())
    }

    /// The shard of a key given as SQL text or a text-format parameter.
    pub fn shard_of_text(&self, text: &str) -> Result<usize, ShardingError> {
        self.place(Value::from_text(self.data_type, text)?)
    }

    /// The shard of a key given as a binary-format parameter.
    pub fn shard_of_binary(&self, bytes: &[u8]) -> Result<usize, ShardingError> {
        self.place(Value::from_binary(self.data_type, bytes)?)
    }

    /// The shard of a NULL key, as Postgres places it: hash partitioning hashes a NULL column
    /// as nothing (row hash 0, so shard 0, or bucket 0's shard); list and range mappings never
    /// hold NULL, so it goes
    /// to `default_shard`, or is an error.
    pub fn shard_of_null(&self) -> Result<usize, ShardingError> {
        match self.rule {
            Rule::Hash => Ok(self.buckets.as_ref().map_or(0, |b| b.shard(0))),
            Rule::List(_) | Rule::Range(_) => {
                self.default_shard.ok_or_else(|| ShardingError::NoShard {
                    value: "NULL".into(),
                    table: self.label.clone(),
                })
            }
        }
    }

    fn place(&self, value: Value<'_>) -> Result<usize, ShardingError> {
        if !value.fits(self.data_type) {
            return Err(ShardingError::TypeMismatch {
                value: value.to_string(),
                type_name: type_name(self.data_type),
                column: self.column.clone(),
            });
        }
        let found = match &self.rule {
            Rule::Hash => {
                let hash = value.partition_hash();
                return Ok(match &self.buckets {
                    Some(b) => b.shard_of_hash(hash),
                    None => (hash % self.shards as u64) as usize,
                });
            }
            Rule::List(list) => list
                .binary_search_by(|(key, _)| key.as_value().cmp(&value))
                .ok()
                .map(|i| list[i].1),
            Rule::Range(ranges) => {
                // The last range starting at or below the value, if the value is below its end.
                let after = ranges.partition_point(|r| match &r.start {
                    Some(start) => start.as_value() <= value,
                    None => true,
                });
                after
                    .checked_sub(1)
                    .map(|i| &ranges[i])
                    .filter(|r| match &r.end {
                        Some(end) => value < end.as_value(),
                        None => true,
                    })
                    .map(|r| r.shard)
            }
        };
        found
            .or(self.default_shard)
            .ok_or_else(|| ShardingError::NoShard {
                value: value.to_string(),
                table: self.label.clone(),
            })
    }

    /// The shards that can hold keys between `low` and `high` (`None`: unbounded; the flag says
    /// whether the bound itself is included), sorted and deduplicated: the range mappings the
    /// interval meets, plus `default_shard` when part of the interval is outside every mapping.
    /// Empty when the interval holds no value. `None` when this cannot narrow the shards (hash
    /// and list placement, or bounds of another type than the column's): ask every shard.
    pub fn shards_for_range(
        &self,
        low: Option<(&Key, bool)>,
        high: Option<(&Key, bool)>,
    ) -> Option<Vec<usize>> {
        let Rule::Range(ranges) = &self.rule else {
            return None;
        };
        let low: Bound<'_> = low.map(|(key, inclusive)| (key.as_value(), inclusive));
        let high: Bound<'_> = high.map(|(key, inclusive)| (key.as_value(), inclusive));
        let fits = |b: &Bound<'_>| match b {
            Some((v, _)) => v.fits(self.data_type),
            None => true,
        };
        if !fits(&low) || !fits(&high) {
            return None;
        }
        // Discrete types: exclusive bounds become inclusive ones, which makes the checks below
        // exact. Text keeps exclusive bounds and may name a shard that has no value in them.
        let (Some(low), Some(high)) = (tighten(low, Step::Up), tighten(high, Step::Down)) else {
            return Some(vec![]);
        };
        if let (Some((l, l_in)), Some((h, h_in))) = (low, high) {
            if l > h || (l == h && !(l_in && h_in)) {
                return Some(vec![]);
            }
        }
        let mut shards = Vec::new();
        let mut gap = false;
        // Walk the ranges the interval meets in order, looking for parts no range covers.
        let mut cursor: Cursor<'_> = match low {
            Some((v, _)) => Cursor::At(v),
            None => Cursor::Unbounded,
        };
        for range in ranges {
            let start = range.start.as_ref().map(Key::as_value);
            let end = range.end.as_ref().map(Key::as_value);
            let below = match (high, start) {
                (Some((h, inclusive)), Some(s)) => h < s || (h == s && !inclusive),
                _ => false,
            };
            let above = match (low, end) {
                (Some((l, _)), Some(e)) => l >= e,
                _ => false,
            };
            if below || above {
                continue;
            }
            shards.push(range.shard);
            if let Some(s) = start {
                gap |= match cursor {
                    Cursor::Unbounded => !is_minimum(s, self.data_type),
                    Cursor::At(c) => c < s,
                    Cursor::Done => false,
                };
            }
            cursor = match end {
                Some(e) => Cursor::At(e),
                None => Cursor::Done,
            };
        }
        gap |= match (cursor, high) {
            (Cursor::Done, _) => false,
            (_, None) => true,
            (Cursor::Unbounded, Some(_)) => true,
            (Cursor::At(c), Some((h, inclusive))) => c < h || (c == h && inclusive),
        };
        if gap {
            shards.extend(self.default_shard);
        }
        shards.sort_unstable();
        shards.dedup();
        Some(shards)
    }
}

/// A mapping's kind, or `None` when it has neither values nor bounds, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    List,
    Range,
}

fn classify(mapping: &Mapping) -> Option<Kind> {
    let list = !mapping.values.is_empty();
    let range = mapping.start.is_some() || mapping.end.is_some();
    match (list, range) {
        (true, false) => Some(Kind::List),
        (false, true) => Some(Kind::Range),
        _ => None,
    }
}

/// Where the coverage walk of `shards_for_range` stands.
#[derive(Debug, Clone, Copy)]
enum Cursor<'a> {
    /// Nothing accounted for yet and the interval has no lower bound.
    Unbounded,
    /// Everything below this value is accounted for.
    At(Value<'a>),
    /// Covered to the top.
    Done,
}

/// Which way an exclusive bound moves to become inclusive.
#[derive(Debug, Clone, Copy)]
enum Step {
    Up,
    Down,
}

/// An exclusive integer or uuid bound made inclusive (`None` when no value lies beyond it);
/// other bounds as they are.
fn tighten(bound: Bound<'_>, step: Step) -> Option<Bound<'_>> {
    let Some((value, false)) = bound else {
        return Some(bound);
    };
    let next = match (value, step) {
        (Value::Integer(v), Step::Up) => Value::Integer(v.checked_add(1)?),
        (Value::Integer(v), Step::Down) => Value::Integer(v.checked_sub(1)?),
        (Value::Uuid(u), Step::Up) => {
            Value::Uuid(u128::from_be_bytes(u).checked_add(1)?.to_be_bytes())
        }
        (Value::Uuid(u), Step::Down) => {
            Value::Uuid(u128::from_be_bytes(u).checked_sub(1)?.to_be_bytes())
        }
        (Value::Text(_), _) => return Some(bound),
    };
    Some(Some((next, true)))
}

/// Whether no value of the column's type lies below `value`.
fn is_minimum(value: Value<'_>, data_type: DataType) -> bool {
    match value {
        Value::Integer(v) => match data_type {
            DataType::Smallint => v <= i64::from(i16::MIN),
            DataType::Integer => v <= i64::from(i32::MIN),
            _ => v == i64::MIN,
        },
        Value::Text(s) => s.is_empty(),
        Value::Uuid(u) => u == [0; 16],
    }
}

#[cfg(test)]
mod tests;
