//! The sharding layout of one database, as the router needs it: shard count, which tables are
//! sharded by which column (with their placement), and which are copied on every shard.
use crate::config::{Settings, ShardedTable};
use crate::sharding::{Buckets, Key, Placement, ShardingError};
use parking_lot::RwLock;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// One `[[sharded_tables]]` entry with its placement.
#[derive(Debug, Clone)]
pub struct TableSharding {
    pub config: ShardedTable,
    pub placement: Placement,
}

impl TableSharding {
    pub fn column(&self) -> &str {
        &self.config.column
    }

    /// The shard of a key value given as text (`None`: SQL NULL).
    pub fn shard_of_text(&self, value: Option<&str>) -> Result<usize, ShardingError> {
        match value {
            Some(v) => self
                .placement
                .shard(&Key::from_text(self.config.data_type, v)?),
            None => self.placement.shard_of_null(),
        }
    }

    /// A hash-sharded entry for tests: table `name` of database "app" by `column`.
    #[cfg(test)]
    pub fn hashed(
        name: &str,
        column: &str,
        data_type: crate::config::DataType,
        shards: usize,
    ) -> TableSharding {
        let config = ShardedTable {
            database: "app".into(),
            name: Some(name.into()),
            column: column.into(),
            data_type,
            mapping: Vec::new(),
            default_shard: None,
            primary_key: None,
        };
        TableSharding {
            placement: Placement::new(&config, shards, None).expect("a hash placement"),
            config,
        }
    }

    /// The shard of a key value in a parameter's binary format.
    pub fn shard_of_binary(&self, value: &[u8]) -> Result<usize, ShardingError> {
        self.placement
            .shard(&Key::from_binary(self.config.data_type, value)?)
    }
}

/// The sharding layout of one database.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    pub shards: usize,
    /// Entries with a table name.
    pub tables: Vec<TableSharding>,
    /// Entries without a table name: any table with that column.
    pub any_table: Vec<TableSharding>,
    pub omnisharded: HashSet<String>,
    /// `[[sharded_schemas]]`: the shard of each schema.
    pub schemas: super::schemas::SchemaShards,
    /// Column order of tables, read from a shard for INSERTs without a column list (cleared
    /// by any DDL that passes through pgdog).
    pub columns: Arc<RwLock<HashMap<String, Arc<Vec<String>>>>>,
}

impl Schema {
    /// The layout of `database` from the configuration.
    pub fn new(settings: &Settings, database: &str) -> Result<Schema, ShardingError> {
        Schema::with_shards(settings, database, settings.shards(database))
    }

    /// The layout of `database` as if it had `shards` shards (a dry run's planned layout).
    pub fn with_shards(
        settings: &Settings,
        database: &str,
        shards: usize,
    ) -> Result<Schema, ShardingError> {
        let shards = shards.max(1);
        let mut schema = Schema {
            shards,
            ..Default::default()
        };
        // The bucket map describes the configured shards; a planned layout of another shard
        // count (a dry run) places by plain hash, which the default map equals.
        let buckets = settings
            .config
            .bucket_maps
            .iter()
            .find(|m| m.database == database && settings.shards(database) == shards)
            .map(|m| Buckets::new(m, shards))
            .transpose()?;
        for t in settings
            .config
            .sharded_tables
            .iter()
            .filter(|t| t.database == database)
        {
            let entry = TableSharding {
                config: t.clone(),
                placement: Placement::new(t, shards, buckets.as_ref())?,
            };
            if t.name.is_some() {
                schema.tables.push(entry);
            } else {
                schema.any_table.push(entry);
            }
        }
        for s in settings
            .config
            .sharded_schemas
            .iter()
            .filter(|s| s.database == database)
        {
            match &s.name {
                Some(n) => {
                    schema.schemas.named.insert(n.clone(), s.shard);
                }
                None => schema.schemas.default = Some(s.shard),
            }
        }
        for o in settings
            .config
            .omnisharded_tables
            .iter()
            .filter(|o| o.database == database)
        {
            schema.omnisharded.extend(o.tables.iter().cloned());
        }
        Ok(schema)
    }

    /// How a table is sharded: its own entry, else `None` (see [`Schema::by_column`]).
    pub fn table(&self, name: &str) -> Option<&TableSharding> {
        self.tables
            .iter()
            .find(|t| t.config.name.as_deref() == Some(name))
    }

    /// A name-less entry for this column, if any.
    pub fn by_column(&self, column: &str) -> Option<&TableSharding> {
        self.any_table.iter().find(|t| t.config.column == column)
    }

    pub fn is_omnisharded(&self, name: &str) -> bool {
        self.omnisharded.contains(name)
    }

    pub fn is_sharded(&self) -> bool {
        self.shards > 1
    }
}
