//! Schema changes of a published table during the replay. pgoutput sends a table's Relation
//! message again before the first change of a new shape, inside the transaction of that
//! change; its difference from the shape seen before becomes `ALTER TABLE` statements that run
//! on every destination shard holding the table, in the same destination transaction as the
//! changes around them, so rows and columns move together:
//! - a new column: `ADD COLUMN` of the source's type, with the value the source's existing rows
//!   got (`attmissingval`, a non-volatile default) and its current default and NOT NULL;
//! - a column gone: `DROP COLUMN`;
//! - a column of another type or type modifier: `ALTER COLUMN ... TYPE ... USING col::type`;
//! - a renamed column: `RENAME COLUMN`. A rename keeps the column's number on the source
//!   (`pg_attribute.attnum`), a drop and an add do not: the numbers are read from the source's
//!   catalog when the table's first Relation arrives.
//!
//! Statements are idempotent where Postgres allows (`IF NOT EXISTS`, `IF EXISTS`), so a change
//! below a shard's copy watermark (the copy already has the new shape) does no harm.
//! What cannot be replayed exactly, and is noted in the README: a volatile default or a
//! `USING` expression other than a cast rewrote the source's rows, which pgoutput does not
//! send.
use super::*;
use crate::net::quote::{ident, literal};

/// A column as a Relation message describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Shaped {
    pub(super) name: String,
    pub(super) type_oid: u32,
    pub(super) type_modifier: i32,
}

/// The columns of a Relation message.
pub(super) fn shape(rel: &Relation) -> Vec<Shaped> {
    rel.columns
        .iter()
        .map(|c| Shaped {
            name: c.name.clone(),
            type_oid: c.type_oid,
            type_modifier: c.type_modifier,
        })
        .collect()
}

/// What changed between two shapes of a table, by source column number.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Changes {
    pub(super) added: Vec<Shaped>,
    pub(super) dropped: Vec<String>,
    /// (old name, new name).
    pub(super) renamed: Vec<(String, String)>,
    pub(super) retyped: Vec<Shaped>,
}

#[cfg(test)]
impl Changes {
    fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.dropped.is_empty()
            && self.renamed.is_empty()
            && self.retyped.is_empty()
    }
}
/// The changes from `old` to `new`, columns matched by their source numbers (`attnum`: name →
/// number when the old shape was seen, and now). A column whose number is unknown on one side
/// is matched by name.
pub(super) fn diff(
    old: &[Shaped],
    new: &[Shaped],
    numbers_then: &HashMap<String, i16>,
    numbers_now: &HashMap<String, i16>,
) -> Changes {
    let mut c = Changes::default();
    let by_number: HashMap<i16, &Shaped> = old
        .iter()
        .filter_map(|o| numbers_then.get(&o.name).map(|n| (*n, o)))
        .collect();
    let mut matched: Vec<&str> = Vec::new();
    for col in new {
        // With numbers, a column is the old one of its number only (a column dropped and added
        // again under its name has a new number); without, the one of its name.
        let before = match numbers_now.get(&col.name) {
            Some(n) if !by_number.is_empty() => by_number.get(n).copied(),
            _ => old.iter().find(|o| o.name == col.name),
        };
        match before {
            None => c.added.push(col.clone()),
            Some(o) => {
                matched.push(&o.name);
                if o.name != col.name {
                    c.renamed.push((o.name.clone(), col.name.clone()));
                }
                if (o.type_oid, o.type_modifier) != (col.type_oid, col.type_modifier) {
                    c.retyped.push(col.clone());
                }
            }
        }
    }
    c.dropped = old
        .iter()
        .filter(|o| !matched.contains(&o.name.as_str()))
        .map(|o| o.name.clone())
        .collect();
    if numbers_then.is_empty() {
        by_position(old, new, &mut c);
    }
    c
}

/// Without column numbers: a column gone and one added at the same position with the same
/// type, as many of each, are taken for renames.
fn by_position(old: &[Shaped], new: &[Shaped], c: &mut Changes) {
    let position = |cols: &[Shaped], name: &str| cols.iter().position(|x| x.name == name);
    let pairs: Vec<(usize, usize)> = c
        .dropped
        .iter()
        .zip(&c.added)
        .filter_map(|(d, a)| Some((position(old, d)?, position(new, &a.name)?)))
        .collect();
    let renames = c.dropped.len() == c.added.len()
        && pairs.len() == c.added.len()
        && pairs
            .iter()
            .all(|&(o, n)| o == n && old[o].type_oid == new[n].type_oid);
    if renames {
        c.renamed = pairs
            .iter()
            .map(|&(o, n)| (old[o].name.clone(), new[n].name.clone()))
            .collect();
        c.dropped.clear();
        c.added.clear();
    }
}

/// `RENAME COLUMN` statements, each once (every stream of a sharded source sees the rename).
/// When a target is another rename's source (a swap, a chain), every column goes through a
/// temporary name first.
fn renames(sql_name: &str, renamed: &[(String, String)]) -> Vec<String> {
    let rename = |from: &str, to: &str| {
        format!(
            "DO $pgdog$ BEGIN IF EXISTS (SELECT 1 FROM pg_catalog.pg_attribute \
             WHERE attrelid = {}::regclass AND attname = {} AND NOT attisdropped) THEN \
             ALTER TABLE {sql_name} RENAME COLUMN {} TO {}; END IF; END $pgdog$",
            literal(sql_name),
            literal(from),
            ident(from),
            ident(to)
        )
    };
    let tangled = renamed
        .iter()
        .any(|(_, to)| renamed.iter().any(|(from, _)| from == to));
    if !tangled {
        return renamed.iter().map(|(f, t)| rename(f, t)).collect();
    }
    let temp = |i: usize| format!("pgdog_rename_{i}");
    let mut out: Vec<String> = renamed
        .iter()
        .enumerate()
        .map(|(i, (from, _))| rename(from, &temp(i)))
        .collect();
    out.extend(
        renamed
            .iter()
            .enumerate()
            .map(|(i, (_, to))| rename(&temp(i), to)),
    );
    out
}

/// Whether the catalog's columns (`numbers`) are those of `shape`.
fn matches(numbers: &HashMap<String, i16>, shape: &[Shaped]) -> bool {
    numbers.len() == shape.len() && shape.iter().all(|c| numbers.contains_key(&c.name))
}

/// The source's catalog (and the destination's, for a table's first shape), read for
/// schema changes; connections opened on first use.
pub(super) struct Catalog {
    source: ServerTarget,
    dests: Vec<ServerTarget>,
    /// By server: 0 the source, 1 + i destination shard i.
    servers: HashMap<usize, Server>,
    /// Column numbers by table OID, when its first Relation arrived.
    numbers: HashMap<u32, HashMap<String, i16>>,
}

impl Catalog {
    pub(super) fn new(source: ServerTarget, dests: Vec<ServerTarget>) -> Catalog {
        Catalog {
            source,
            dests,
            servers: HashMap::new(),
            numbers: HashMap::new(),
        }
    }

    /// Rows of `sql` on the source (`None`) or destination shard `dest`.
    async fn rows_on(
        &mut self,
        dest: Option<usize>,
        sql: &str,
    ) -> Result<Vec<Vec<Option<String>>>, ReplayError> {
        let at = dest.map_or(0, |d| d + 1);
        let target = match dest {
            None => &self.source,
            Some(d) => self
                .dests
                .get(d)
                .ok_or_else(|| other(format!("no destination shard {d}")))?,
        };
        let addr = target.addr();
        let server = match self.servers.entry(at) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let mut server = connect(target).await?;
                // Type names read the same on both ends: qualified unless in pg_catalog.
                server
                    .execute("SET search_path = pg_catalog")
                    .await
                    .map_err(lost(format!("{addr}: reading the catalog")))?;
                e.insert(server)
            }
        };
        let rows = server.query_rows(sql).await;
        if rows.is_err() {
            self.servers.remove(&at);
        }
        rows.map_err(lost(format!("{addr}: reading the catalog")))
    }

    async fn rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, ReplayError> {
        self.rows_on(None, sql).await
    }

    /// The table's column numbers now (name → attnum).
    async fn numbers_now(&mut self, oid: u32) -> Result<HashMap<String, i16>, ReplayError> {
        let sql = format!(
            "SELECT attname::text, attnum::text FROM pg_catalog.pg_attribute \
             WHERE attrelid = {oid} AND attnum > 0 AND NOT attisdropped"
        );
        Ok(self
            .rows(&sql)
            .await?
            .into_iter()
            .filter_map(|r| match r.as_slice() {
                [Some(name), Some(n)] => Some((name.clone(), n.parse().ok()?)),
                _ => None,
            })
            .collect())
    }

    /// A table seen for the first time: remembers its column numbers, and brings destination
    /// shard `dest`'s table to this shape where it lacks a column or has another type (a run
    /// that stopped between a schema change and its commit left the destination behind; the
    /// stream then starts at the new shape).
    pub(super) async fn first_seen(
        &mut self,
        oid: u32,
        sql_name: &str,
        shape: &[Shaped],
        dest: usize,
    ) -> Result<Vec<String>, ReplayError> {
        let numbers = self.numbers_now(oid).await?;
        if matches(&numbers, shape) {
            self.numbers.insert(oid, numbers);
        }
        let sql = format!(
            "SELECT attname::text, pg_catalog.format_type(atttypid, atttypmod) \
             FROM pg_catalog.pg_attribute WHERE attrelid = to_regclass({}) AND attnum > 0 \
             AND NOT attisdropped",
            literal(sql_name)
        );
        let there: HashMap<String, String> = self
            .rows_on(Some(dest), &sql)
            .await?
            .into_iter()
            .filter_map(|r| match r.as_slice() {
                [Some(name), Some(ty)] => Some((name.clone(), ty.clone())),
                _ => None,
            })
            .collect();
        if there.is_empty() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for col in shape {
            match there.get(&col.name) {
                None => out.extend(self.added(oid, sql_name, col).await?),
                Some(ty) => {
                    let want = self.type_name(col).await?;
                    if *ty != want {
                        let c = ident(&col.name);
                        out.push(format!(
                            "ALTER TABLE {sql_name} ALTER COLUMN {c} TYPE {want} USING {c}::{want}"
                        ));
                    }
                }
            }
        }
        Ok(out)
    }

    /// The statements that bring `table` (quoted `sql_name`) from `old` to `new`.
    pub(super) async fn statements(
        &mut self,
        oid: u32,
        sql_name: &str,
        old: &[Shaped],
        new: &[Shaped],
    ) -> Result<Vec<String>, ReplayError> {
        let now = self.numbers_now(oid).await?;
        // The catalog tells the numbers of this shape only when it has not moved on since.
        let then = self.numbers.remove(&oid).unwrap_or_default();
        let current = matches(&now, new);
        let changes = if current {
            diff(old, new, &then, &now)
        } else {
            diff(old, new, &HashMap::new(), &HashMap::new())
        };
        if current {
            self.numbers.insert(oid, now);
        }
        // Drops first (a dropped name may be a rename's target), then renames, then the rest.
        let mut out: Vec<String> = changes
            .dropped
            .iter()
            .map(|name| {
                format!(
                    "ALTER TABLE {sql_name} DROP COLUMN IF EXISTS {}",
                    ident(name)
                )
            })
            .collect();
        out.extend(renames(sql_name, &changes.renamed));
        for col in &changes.retyped {
            let ty = self.type_name(col).await?;
            let c = ident(&col.name);
            out.push(format!(
                "ALTER TABLE {sql_name} ALTER COLUMN {c} TYPE {ty} USING {c}::{ty}"
            ));
        }
        for col in &changes.added {
            out.extend(self.added(oid, sql_name, col).await?);
        }
        Ok(out)
    }

    async fn type_name(&mut self, col: &Shaped) -> Result<String, ReplayError> {
        let sql = format!(
            "SELECT pg_catalog.format_type({}, {})",
            col.type_oid, col.type_modifier
        );
        self.rows(&sql)
            .await?
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next().flatten())
            .ok_or_else(|| other(format!("the source has no type {}", col.type_oid)))
    }

    /// `ADD COLUMN` with the value the source's existing rows have, then the source's default
    /// and NOT NULL for the rows to come.
    async fn added(
        &mut self,
        oid: u32,
        sql_name: &str,
        col: &Shaped,
    ) -> Result<Vec<String>, ReplayError> {
        let ty = self.type_name(col).await?;
        let sql = format!(
            "SELECT a.atthasmissing::text, \
               CASE WHEN a.atthasmissing THEN pg_catalog.array_to_string(a.attmissingval, '') END, \
               pg_catalog.pg_get_expr(d.adbin, d.adrelid), a.attnotnull::text \
             FROM pg_catalog.pg_attribute a \
             LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
             WHERE a.attrelid = {oid} AND a.attname = {} AND NOT a.attisdropped",
            literal(&col.name)
        );
        let row = self
            .rows(&sql)
            .await?
            .into_iter()
            .next()
            .unwrap_or_default();
        let get = |i: usize| row.get(i).cloned().flatten();
        let c = ident(&col.name);
        let mut add = format!("ALTER TABLE {sql_name} ADD COLUMN IF NOT EXISTS {c} {ty}");
        // What the source's existing rows got: the value kept for them (a fast default), else,
        // when a later rewrite of the table has already cleared it (the replay behind the
        // source's catalog), the column's default.
        match (get(0).as_deref() == Some("true"), get(1), get(2)) {
            (true, Some(v), _) => add.push_str(&format!(" DEFAULT {}::{ty}", literal(&v))),
            (false, _, Some(expr)) => add.push_str(&format!(" DEFAULT {expr}")),
            _ => {}
        }
        let mut out = vec![add];
        match get(2) {
            Some(expr) => out.push(format!(
                "ALTER TABLE {sql_name} ALTER COLUMN {c} SET DEFAULT {expr}"
            )),
            None => out.push(format!(
                "ALTER TABLE {sql_name} ALTER COLUMN {c} DROP DEFAULT"
            )),
        }
        if get(3).as_deref() == Some("true") {
            out.push(format!(
                "ALTER TABLE {sql_name} ALTER COLUMN {c} SET NOT NULL"
            ));
        }
        Ok(out)
    }
}

impl Applier {
    /// A Relation message: the table's shape from here on. A shape that differs from the one
    /// seen before becomes `ALTER TABLE` statements on the destination shards holding the
    /// table, in this transaction (committed with its rows and position). With a sharded
    /// source every stream sees the change: the statements are idempotent, and wait at most
    /// 10 s for the table's lock (two streams altering it on two shards at once would wait
    /// for each other); a timeout ends the replay, which the same command resumes.
    pub(super) async fn relation(
        &mut self,
        txn: &mut Txn,
        rel: Relation,
    ) -> Result<(), ReplayError> {
        let source = self.source_schema.as_ref().map(|schema| SourceSharding {
            schema,
            database: &self.source_database,
        });
        let t = Table::new(
            &rel,
            &self.schema,
            &self.database,
            &self.key,
            self.source_shard,
            &self.watermarks,
            source.as_ref(),
        )?;
        let shards = t.holding(self.shards.len());
        let mut statements = match self.tables.get(&rel.oid) {
            _ if t.ignored => Vec::new(),
            Some(old) if old.shape == t.shape => Vec::new(),
            Some(old) => {
                let old_shape = old.shape.clone();
                self.catalog
                    .statements(rel.oid, &t.sql_name, &old_shape, &t.shape)
                    .await?
            }
            None => {
                let first = shards.first().copied().unwrap_or(0);
                self.catalog
                    .first_seen(rel.oid, &t.sql_name, &t.shape, first)
                    .await?
            }
        };
        if !statements.is_empty() {
            tracing::info!("replay: {}: {}", t.name, statements.join("; "));
            self.summary.schema_changes += statements.len() as u64;
            if self.sharded_source {
                statements.insert(0, "SET LOCAL lock_timeout = '10s'".into());
            }
            for sql in &statements {
                let stmt = plain(sql);
                for &s in &shards {
                    // Not where this transaction is committed already (a resumed stream).
                    if txn.final_lsn >= self.shards[s].position {
                        self.send(txn, s, &stmt).await?;
                    }
                }
            }
        }
        self.tables.insert(rel.oid, t);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, type_oid: u32) -> Shaped {
        Shaped {
            name: name.into(),
            type_oid,
            type_modifier: -1,
        }
    }

    fn numbers(cols: &[(&str, i16)]) -> HashMap<String, i16> {
        cols.iter().map(|(n, i)| (n.to_string(), *i)).collect()
    }

    #[test]
    fn columns_are_matched_by_their_source_numbers() {
        let old = [col("id", 20), col("v", 25)];
        let then = numbers(&[("id", 1), ("v", 2)]);
        // A rename keeps the number; a drop and an add of the same type do not.
        let renamed = diff(
            &old,
            &[col("id", 20), col("w", 25)],
            &then,
            &numbers(&[("id", 1), ("w", 2)]),
        );
        assert_eq!(renamed.renamed, vec![("v".to_string(), "w".to_string())]);
        assert!(renamed.added.is_empty() && renamed.dropped.is_empty());
        let replaced = diff(
            &old,
            &[col("id", 20), col("w", 25)],
            &then,
            &numbers(&[("id", 1), ("w", 3)]),
        );
        assert_eq!(replaced.dropped, vec!["v".to_string()]);
        assert_eq!(replaced.added, vec![col("w", 25)]);
        assert!(replaced.renamed.is_empty());
        // Dropped and added again under its name: a new number.
        let readded = diff(&old, &old, &then, &numbers(&[("id", 1), ("v", 3)]));
        assert_eq!(readded.dropped, vec!["v".to_string()]);
        assert_eq!(readded.added, vec![col("v", 25)]);
        // A swap goes through temporary names.
        let swap = renames("t", &[("a".into(), "b".into()), ("b".into(), "a".into())]);
        assert_eq!(swap.len(), 4);
        assert!(
            swap[0].contains(r#"RENAME COLUMN "a" TO "pgdog_rename_0""#),
            "{}",
            swap[0]
        );
        assert!(
            swap[3].contains(r#"RENAME COLUMN "pgdog_rename_1" TO "a""#),
            "{}",
            swap[3]
        );
        let retyped = diff(&old, &[col("id", 20), col("v", 1043)], &then, &then);
        assert_eq!(retyped.retyped, vec![col("v", 1043)]);
        let same = diff(&old, &old, &then, &then);
        assert!(same.is_empty());
        // Unknown numbers: matched by name, and a column replaced at its position by one of
        // the same type is a rename.
        let none = HashMap::new();
        let added = diff(
            &old,
            &[col("id", 20), col("v", 25), col("n", 23)],
            &none,
            &none,
        );
        assert_eq!(added.added, vec![col("n", 23)]);
        assert!(added.dropped.is_empty());
        let renamed = diff(&old, &[col("id", 20), col("w", 25)], &none, &none);
        assert_eq!(renamed.renamed, vec![("v".to_string(), "w".to_string())]);
        let moved = diff(&old, &[col("w", 25), col("id", 20)], &none, &none);
        assert!(moved.renamed.is_empty() && moved.added.len() == 1 && moved.dropped.len() == 1);
    }
}
