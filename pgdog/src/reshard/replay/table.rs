//! A published table as the replay applies it: where its rows go and the statements (shapes
//! prepared once) that upsert, update and delete them by replica identity.
use super::*;

/// One statement to run with its parameters; the SQL text and parameter types are shared by
/// every statement of the same shape ([`Table::shape`]).
#[derive(Clone)]
pub(super) struct Stmt {
    pub(super) sql: Arc<str>,
    pub(super) types: Arc<[i32]>,
    pub(super) params: Vec<Option<Bytes>>,
}

/// The SQL text and parameter types of a statement shape.
pub(super) type Shape = (Arc<str>, Arc<[i32]>);

/// A statement shape of a table: its kind and the columns of its parameters, in order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum ShapeKey {
    Upsert(Vec<usize>),
    /// (SET columns, WHERE columns).
    Update(Vec<usize>, Vec<usize>),
    Delete(Vec<usize>),
    /// A DELETE returning every column (the row moving to another shard).
    DeleteReturning(Vec<usize>),
}

/// A published table as the replay applies it.
pub(super) struct Table {
    pub(super) name: String,
    pub(super) sql_name: String,
    pub(super) columns: Vec<String>,
    pub(super) types: Vec<i32>,
    pub(super) key: Vec<usize>,
    pub(super) full: bool,
    pub(super) dest: Destination,
    /// The copy watermark on each destination shard (they differ when a resumed copy wrote
    /// some shards later than others); empty when `ignored` or copied in key ranges.
    pub(super) watermarks: Arc<[u64]>,
    /// Copied in key ranges: each range's watermarks ([`Table::marks`]).
    pub(super) ranges: Option<Arc<super::ranges::RangeMarks>>,
    /// The SQL text and parameter types of each statement shape seen so far.
    pub(super) shapes: parking_lot::Mutex<HashMap<ShapeKey, Shape>>,
    /// An omnisharded table seen on a source shard other than 0: shard 0's stream applies its
    /// changes (every source shard carries the same writes).
    pub(super) ignored: bool,
    /// Its columns as the Relation message gave them ([`super::ddl`]).
    pub(super) shape: Vec<super::ddl::Shaped>,
    /// From a sharded source, a table whose replica identity lacks the key: the destination
    /// shards this stream owns (they hold keys of its source shard only, `reshard/ownership.rs`);
    /// its changes by identity touch those only. `None`: every shard (a single source).
    pub(super) owned: Option<Arc<[usize]>>,
}

/// The source's sharding, for a stream of a sharded source.
pub(super) struct SourceSharding<'a> {
    pub(super) schema: &'a Schema,
    pub(super) database: &'a str,
}

impl Table {
    /// `watermarks`: table name → its watermark on each destination shard (None: missing).
    pub(super) fn new(
        rel: &Relation,
        schema: &Schema,
        database: &str,
        key: &str,
        source_shard: usize,
        watermarks: &HashMap<String, Vec<Option<u64>>>,
        source: Option<&SourceSharding<'_>>,
    ) -> Result<Table, ReplayError> {
        let name = rel.qualified_name();
        let columns: Vec<String> = rel.columns.iter().map(|c| c.name.clone()).collect();
        let dest = destination(schema, database, &rel.namespace, &rel.name, &columns)?;
        let ignored = source_shard > 0 && matches!(dest, Destination::Everywhere);
        let ranges = match ignored {
            true => None,
            false => super::ranges::RangeMarks::load(&name, &columns, watermarks, key)?,
        };
        let watermarks = if ignored || ranges.is_some() {
            Vec::new()
        } else {
            let found = watermarks.get(&name).cloned().unwrap_or_default();
            let mut all = Vec::with_capacity(found.len());
            for (shard, wm) in found.iter().enumerate() {
                all.push(wm.ok_or_else(|| {
                    other(format!(
                        "table {name} has no copy watermark for {key} on destination shard \
                         {shard}: finish the copy with `pgdog copy-data --slot` first"
                    ))
                })?);
            }
            if all.is_empty() {
                return Err(other(format!(
                    "table {name} has no copy watermark for {key} on the destination: \
                     copy it with `pgdog copy-data --slot` first"
                )));
            }
            all
        };
        let mut t = Table {
            sql_name: format!("{}.{}", ident(&rel.namespace), ident(&rel.name)),
            types: rel
                .columns
                .iter()
                // User-defined types have other OIDs on the destination: let it infer them.
                .map(|c| {
                    if c.type_oid < 16384 {
                        c.type_oid as i32
                    } else {
                        0
                    }
                })
                .collect(),
            key: (0..rel.columns.len())
                .filter(|&i| rel.columns[i].is_key())
                .collect(),
            full: rel.replica_identity == b'f',
            name,
            columns,
            dest,
            watermarks: watermarks.into(),
            ranges: ranges.map(Arc::new),
            ignored,
            shape: super::ddl::shape(rel),
            shapes: parking_lot::Mutex::new(HashMap::new()),
            owned: None,
        };
        if t.ranges.is_some() && t.identity_lacks_key() {
            return Err(other(format!(
                "table {}: copied in key ranges, but its replica identity no longer holds the \
                 sharding key: copy it again",
                t.name
            )));
        }
        if let Some(source) = source.filter(|_| t.identity_lacks_key()) {
            t.owned = Some(t.owned_shards(rel, source, source_shard)?.into());
        }
        Ok(t)
    }

    /// The destination shards source shard `source_shard`'s stream owns for this table, or
    /// the refusal: the layout could put two source shards' versions of a row on one shard.
    fn owned_shards(
        &self,
        rel: &Relation,
        source: &SourceSharding<'_>,
        source_shard: usize,
    ) -> Result<Vec<usize>, ReplayError> {
        let refused = |why: String| {
            other(format!(
                "table {}: its replica identity does not contain the sharding key and the \
                 source is sharded, but {why}: a row moving between source shards could meet \
                 its other version on one destination shard; add the sharding key to the \
                 primary key, or give the destination a multiple of the source's shard count \
                 with the same hash sharding",
                self.name
            ))
        };
        let Destination::ByKey(dest, _) = &self.dest else {
            return Ok(Vec::new());
        };
        let from = destination(
            source.schema,
            source.database,
            &rel.namespace,
            &rel.name,
            &self.columns,
        );
        match from {
            Ok(Destination::ByKey(from, _)) => {
                crate::reshard::ownership::owned_shards(&from, dest, source_shard).map_err(refused)
            }
            Ok(_) => Err(refused(format!(
                "database `{}` does not shard it by a column",
                source.database
            ))),
            Err(e) => Err(refused(format!("on the source: {e}"))),
        }
    }

    /// Every shard of `shards` is one this stream owns (when it owns some): a row of its
    /// source shard whose key maps elsewhere was not placed by the source's sharding.
    pub(super) fn check_owned(
        &self,
        shards: &[usize],
        source_shard: usize,
    ) -> Result<(), ReplayError> {
        let Some(owned) = &self.owned else {
            return Ok(());
        };
        match shards.iter().find(|s| !owned.contains(s)) {
            None => Ok(()),
            Some(s) => Err(other(format!(
                "table {}: a row of source shard {source_shard} goes to destination shard {s}, \
                 which takes keys of another source shard: the source shard holds a row its \
                 sharding puts elsewhere (written around pgdog?)",
                self.name
            ))),
        }
    }

    /// The destination shards holding the table (of `n`).
    pub(super) fn holding(&self, n: usize) -> Vec<usize> {
        match &self.dest {
            Destination::OneShard(s) => vec![*s],
            _ => (0..n).collect(),
        }
    }

    /// Whether this stream owns destination shard `shard` (every shard from a single source).
    pub(super) fn owns(&self, shard: usize) -> bool {
        self.owned.as_ref().is_none_or(|o| o.contains(&shard))
    }

    /// The destination shards a change by identity may touch: this stream's own from a
    /// sharded source, else all `n`.
    pub(super) fn identity_scope(&self, n: usize) -> Vec<usize> {
        match &self.owned {
            Some(owned) => owned.to_vec(),
            None => (0..n).collect(),
        }
    }

    /// The sent values of a tuple: (column, value), unchanged TOAST values left out.
    pub(super) fn values(
        &self,
        tuple: &TupleData,
    ) -> Result<Vec<(usize, Option<Bytes>)>, ReplayError> {
        let mut out = Vec::with_capacity(tuple.columns.len());
        for (i, v) in tuple.columns.iter().enumerate() {
            match v {
                ColumnValue::Null => out.push((i, None)),
                ColumnValue::Text(b) => out.push((i, Some(b.clone()))),
                ColumnValue::Unchanged => {}
                ColumnValue::Binary(_) => {
                    return Err(other(format!(
                        "table {}: binary column values are not supported",
                        self.name
                    )))
                }
            }
        }
        Ok(out)
    }

    /// The shards a tuple lives on (every shard for an omnisharded table).
    pub(super) fn shards_of(&self, tuple: &TupleData, n: usize) -> Result<Vec<usize>, ReplayError> {
        match &self.dest {
            Destination::Everywhere => Ok((0..n).collect()),
            Destination::OneShard(s) => Ok(vec![*s]),
            Destination::ByKey(t, index) => {
                let shard = match tuple.columns.get(*index) {
                    Some(ColumnValue::Text(b)) => {
                        t.shard_of_text(Some(&String::from_utf8_lossy(b)))
                    }
                    Some(ColumnValue::Null) => t.shard_of_text(None),
                    _ => {
                        return Err(other(format!(
                            "table {}: the sharding key \"{}\" was not sent",
                            self.name,
                            t.column()
                        )))
                    }
                };
                shard
                    .map(|s| vec![s])
                    .map_err(|e| other(format!("table {}: {e}", self.name)))
            }
        }
    }

    /// The copy watermarks (per destination shard) that decide whether a change to the row
    /// `tuple` is needed: its key range's, or the table's.
    pub(super) fn marks(&self, tuple: &TupleData) -> Result<Arc<[u64]>, ReplayError> {
        match &self.ranges {
            Some(r) => r.of(&self.name, tuple),
            None => Ok(self.watermarks.clone()),
        }
    }

    /// Whether the replica identity of a table sharded by key lacks the key column (a surrogate
    /// `id` primary key on a table sharded by `customer_id`): then the old row of an UPDATE or
    /// DELETE never says which shard holds it, and they are applied by identity on every shard
    /// (`identity.rs`). REPLICA IDENTITY FULL sends the whole old row, key included.
    pub(super) fn identity_lacks_key(&self) -> bool {
        match &self.dest {
            Destination::ByKey(_, index) => !self.full && !self.key.contains(index),
            _ => false,
        }
    }

    /// The row-matching values: the key columns (all sent columns with REPLICA IDENTITY FULL).
    pub(super) fn match_values(
        &self,
        tuple: &TupleData,
    ) -> Result<Vec<(usize, Option<Bytes>)>, ReplayError> {
        let values = self.values(tuple)?;
        let values: Vec<_> = if self.full {
            values
        } else {
            values
                .into_iter()
                .filter(|(i, _)| self.key.contains(i))
                .collect()
        };
        if values.is_empty() {
            return Err(other(format!(
                "table {}: no replica identity to find the row by: add a primary key or \
                 REPLICA IDENTITY FULL",
                self.name
            )));
        }
        Ok(values)
    }

    /// Row-matching values for a message: `"id" = '7'`, joined with AND.
    pub(super) fn describe(&self, wh: &[(usize, Option<Bytes>)]) -> String {
        let conds: Vec<String> = wh
            .iter()
            .map(|(i, v)| {
                let value = match v {
                    Some(b) => format!("'{}'", String::from_utf8_lossy(b)),
                    None => "NULL".into(),
                };
                format!("{} = {value}", ident(&self.columns[*i]))
            })
            .collect();
        conds.join(" AND ")
    }

    /// The statement of a shape with these parameter values: its SQL text built once per
    /// shape, by `build`.
    pub(super) fn shape(
        &self,
        key: ShapeKey,
        params: Vec<Option<Bytes>>,
        build: impl FnOnce() -> String,
    ) -> Stmt {
        let mut shapes = self.shapes.lock();
        let (sql, types) = shapes.entry(key).or_insert_with_key(|key| {
            let columns: Vec<usize> = match key {
                ShapeKey::Upsert(c) | ShapeKey::Delete(c) | ShapeKey::DeleteReturning(c) => {
                    c.clone()
                }
                ShapeKey::Update(set, wh) => set.iter().chain(wh).copied().collect(),
            };
            let types: Vec<i32> = columns.iter().map(|&i| self.types[i]).collect();
            (build().into(), types.into())
        });
        Stmt {
            sql: sql.clone(),
            types: types.clone(),
            params,
        }
    }

    /// The WHERE condition on columns `wh`, their parameters numbered from `first`.
    pub(super) fn where_clause(&self, wh: &[usize], first: usize) -> String {
        let mut conds = Vec::with_capacity(wh.len());
        for (n, i) in wh.iter().enumerate() {
            let op = if self.full {
                "IS NOT DISTINCT FROM"
            } else {
                "="
            };
            conds.push(format!("{} {op} ${}", ident(&self.columns[*i]), first + n));
        }
        if self.full {
            format!(
                "ctid = (SELECT ctid FROM {} WHERE {} LIMIT 1)",
                self.sql_name,
                conds.join(" AND ")
            )
        } else {
            conds.join(" AND ")
        }
    }

    /// `INSERT ... ON CONFLICT (key) DO UPDATE`: a re-delivered row is harmless.
    pub(super) fn upsert(&self, values: &[(usize, Option<Bytes>)]) -> Stmt {
        let params = values.iter().map(|(_, v)| v.clone()).collect();
        self.shape(ShapeKey::Upsert(columns(values)), params, || {
            self.upsert_sql(&columns(values))
        })
    }

    pub(super) fn upsert_sql(&self, columns: &[usize]) -> String {
        let cols: Vec<String> = columns.iter().map(|i| ident(&self.columns[*i])).collect();
        let placeholders: Vec<String> = (1..=columns.len()).map(|n| format!("${n}")).collect();
        let conflict = if self.full || self.key.is_empty() {
            "ON CONFLICT DO NOTHING".to_string()
        } else {
            let keys: Vec<String> = self.key.iter().map(|i| ident(&self.columns[*i])).collect();
            let set: Vec<String> = columns
                .iter()
                .filter(|i| !self.key.contains(i))
                .map(|i| {
                    let c = ident(&self.columns[*i]);
                    format!("{c} = EXCLUDED.{c}")
                })
                .collect();
            if set.is_empty() {
                format!("ON CONFLICT ({}) DO NOTHING", keys.join(", "))
            } else {
                format!(
                    "ON CONFLICT ({}) DO UPDATE SET {}",
                    keys.join(", "),
                    set.join(", ")
                )
            }
        };
        format!(
            "INSERT INTO {} ({}) VALUES ({}) {conflict}",
            self.sql_name,
            cols.join(", "),
            placeholders.join(", ")
        )
    }

    pub(super) fn update(
        &self,
        set: &[(usize, Option<Bytes>)],
        wh: &[(usize, Option<Bytes>)],
    ) -> Stmt {
        let key = ShapeKey::Update(columns(set), columns(wh));
        let params = set.iter().chain(wh).map(|(_, v)| v.clone()).collect();
        self.shape(key, params, || {
            let sets: Vec<String> = set
                .iter()
                .enumerate()
                .map(|(n, (i, _))| format!("{} = ${}", ident(&self.columns[*i]), n + 1))
                .collect();
            format!(
                "UPDATE {} SET {} WHERE {}",
                self.sql_name,
                sets.join(", "),
                self.where_clause(&columns(wh), set.len() + 1)
            )
        })
    }

    pub(super) fn delete(&self, wh: &[(usize, Option<Bytes>)]) -> Stmt {
        let params = wh.iter().map(|(_, v)| v.clone()).collect();
        self.shape(ShapeKey::Delete(columns(wh)), params, || {
            format!(
                "DELETE FROM {} WHERE {}",
                self.sql_name,
                self.where_clause(&columns(wh), 1)
            )
        })
    }

    /// `DELETE ... WHERE <identity> RETURNING <every column>`: the row, as it was, of a row
    /// moving to another shard (its unchanged TOAST values are not in the new tuple).
    pub(super) fn delete_returning(&self, wh: &[(usize, Option<Bytes>)]) -> Stmt {
        let params = wh.iter().map(|(_, v)| v.clone()).collect();
        self.shape(ShapeKey::DeleteReturning(columns(wh)), params, || {
            let all: Vec<String> = self.columns.iter().map(|c| ident(c)).collect();
            format!(
                "DELETE FROM {} WHERE {} RETURNING {}",
                self.sql_name,
                self.where_clause(&columns(wh), 1),
                all.join(", ")
            )
        })
    }
}

/// The columns of (column, value) pairs.
pub(super) fn columns(values: &[(usize, Option<Bytes>)]) -> Vec<usize> {
    values.iter().map(|(i, _)| *i).collect()
}

pub(super) fn plain(sql: &str) -> Stmt {
    Stmt {
        sql: sql.into(),
        types: Arc::from([]),
        params: Vec::new(),
    }
}
