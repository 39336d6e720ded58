//! `[[sharded_tables]]` and `[[omnisharded_tables]]`: which tables are split by which key
//! column (hash, list or range placement), who supplies missing keys, and which tables are
//! copied on every shard.
use serde::Deserialize;

/// `[[sharded_schemas]]`: schema-based sharding. Every table of schema `name` lives on `shard`;
/// an entry without `name` is the shard of schemas not listed (without one, a query naming an
/// unlisted schema is refused).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardedSchema {
    pub database: String,
    pub name: Option<String>,
    pub shard: usize,
}

/// Checks the `[[sharded_schemas]]` entries: known database, shard in range, each name (and
/// the default) once per database.
pub fn check_schemas(
    schemas: &[ShardedSchema],
    shards: impl Fn(&str) -> usize,
) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    for (i, s) in schemas.iter().enumerate() {
        let n = shards(&s.database);
        if n == 0 {
            return Err(format!(
                "sharded_schemas[{i}]: database `{}` is not configured",
                s.database
            ));
        }
        if s.shard >= n {
            return Err(format!(
                "sharded_schemas[{i}]: shard {} does not exist (database `{}` has {n})",
                s.shard, s.database
            ));
        }
        if !seen.insert((s.database.clone(), s.name.clone())) {
            return Err(format!(
                "sharded_schemas[{i}]: {} of database `{}` is listed twice",
                s.name
                    .as_deref()
                    .map_or("the default entry".to_string(), |n| format!("schema `{n}`")),
                s.database
            ));
        }
    }
    Ok(())
}

/// `[[bucket_maps]]`: the hash-sharded tables of `database` (those without mappings) are placed
/// by bucket: a key's bucket is the remainder of Postgres' hash partitioning with modulus
/// `buckets`, and `shards[i]` lists the buckets shard `i` holds (`"0-99,200,300-399/3"`: single
/// buckets, ranges, and ranges with a step). Without `shards`, bucket `b` is on shard `b` mod
/// the shard count: with `buckets` a multiple of the shard count, exactly where hash sharding
/// puts every key without buckets.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BucketMap {
    pub database: String,
    pub buckets: u32,
    #[serde(default)]
    pub shards: Option<Vec<String>>,
}

/// The type of a sharding key column: decides how its values are parsed and hashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default, Hash)]
#[serde(rename_all = "lowercase")]
pub enum DataType {
    #[default]
    Bigint,
    Integer,
    Smallint,
    Uuid,
    #[serde(alias = "text")]
    Varchar,
}

/// A value in a list mapping or a range bound: an integer or a string (text, uuid).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Hash)]
#[serde(untagged)]
pub enum MappingValue {
    Integer(i64),
    Text(String),
}

/// `[[sharded_tables.mapping]]`: list (`values`) or range (`start` inclusive, `end` exclusive;
/// either may be left out for an open end) placement of key values on a shard.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mapping {
    #[serde(default)]
    pub values: Vec<MappingValue>,
    pub start: Option<MappingValue>,
    pub end: Option<MappingValue>,
    pub shard: usize,
}

/// `[[sharded_tables]]`: which column shards a table (or, without `name`, any table that has
/// that column).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardedTable {
    pub database: String,
    pub name: Option<String>,
    pub column: String,
    #[serde(default)]
    pub data_type: DataType,
    /// List or range mappings; empty means hash sharding (Postgres `PARTITION BY HASH`).
    #[serde(default)]
    pub mapping: Vec<Mapping>,
    /// Where a key that no mapping matches goes (without it such a key is an error).
    pub default_shard: Option<usize>,
    /// Who supplies the key when an INSERT leaves it out (or gives `DEFAULT`): `unique_id`
    /// (pgdog, with `pgdog.unique_id()`; the default for bigint keys) or `database` (the
    /// shards' own default, which pgdog cannot route: such INSERTs are refused).
    pub primary_key: Option<PrimaryKey>,
}

/// `primary_key` of a sharded table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Hash)]
#[serde(rename_all = "snake_case")]
pub enum PrimaryKey {
    UniqueId,
    Database,
}

impl ShardedTable {
    /// Whether pgdog fills in a missing key with `pgdog.unique_id()`.
    pub fn generates_key(&self) -> bool {
        match self.primary_key {
            Some(p) => p == PrimaryKey::UniqueId,
            None => self.data_type == DataType::Bigint,
        }
    }
}

/// `[[omnisharded_tables]]`: tables copied on every shard of `database`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OmnishardedTables {
    pub database: String,
    pub tables: Vec<String>,
}
