//! What the source's catalogs say about the published tables (from the first source shard's
//! primary, and their sizes from every source shard's), and the checks made of it: the
//! publication, primary keys, the sharding column and its type, sequences, and triggers and
//! foreign keys. The replica-identity check is in `identity.rs`.
use super::{Check, SERVER_TIMEOUT};
use crate::backend::server::{Server, ServerTarget};
use crate::config::DataType;
use crate::config::Settings;
use crate::reshard::copy::{destination, literal, source_primaries, Destination};
use crate::reshard::orchestrate::ReshardOptions;
use crate::router::schema::Schema;
use std::collections::BTreeMap;

/// A published table as the checks see it.
#[derive(Debug, Clone, Default)]
pub(crate) struct PublishedTable {
    /// `schema.table`, quoted where needed.
    pub name: String,
    pub schema: String,
    pub table: String,
    /// `pg_class.relreplident`: d(efault), n(othing), f(ull), i(ndex).
    pub replident: String,
    pub primary_key: bool,
    /// The columns of the replica identity (primary key or REPLICA IDENTITY index).
    pub identity: Vec<String>,
    /// A unique index that could find a row (not partial, not deferrable).
    pub unique_index: bool,
    /// User triggers and foreign keys on it; of the triggers, those that fire in replica
    /// sessions too (ENABLE ALWAYS / ENABLE REPLICA).
    pub triggers: u32,
    pub foreign_keys: u32,
    pub always_triggers: u32,
    /// The publication sends only some of its rows (a WHERE) or columns (a column list).
    pub filtered: bool,
    pub columns: Vec<Column>,
}

/// A copied column (generated ones are not copied).
#[derive(Debug, Clone, Default)]
pub(crate) struct Column {
    pub name: String,
    /// Its type, a domain's base type (`format_type`: `bigint`, `character varying`...).
    pub type_name: String,
    /// Its values come from a sequence (a `nextval` default or an identity).
    pub sequence: bool,
}

/// What the source says about the publication.
#[derive(Debug, Default)]
pub(super) struct Tables {
    pub published: Vec<PublishedTable>,
    /// Bytes of each published table (with its indexes, TOAST) by `schema.table`, summed over
    /// the source shards, and on the first source shard alone (a table copied whole is read
    /// from there only).
    pub sizes: BTreeMap<String, u64>,
    pub first_sizes: BTreeMap<String, u64>,
    /// What could not be read, or differs between source shards.
    pub problems: Vec<String>,
}

const TABLES_SQL: &str = "SELECT format('%I.%I', n.nspname, c.relname), n.nspname::text, \
       c.relname::text, c.relreplident::text, \
       EXISTS (SELECT 1 FROM pg_catalog.pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)::text, \
       (SELECT string_agg(a.attname, ',') FROM pg_catalog.pg_index i JOIN pg_catalog.pg_attribute a \
          ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) \
        WHERE i.indrelid = c.oid AND CASE c.relreplident WHEN 'i' THEN i.indisreplident \
          ELSE i.indisprimary END), \
       EXISTS (SELECT 1 FROM pg_catalog.pg_index i WHERE i.indrelid = c.oid AND i.indisunique \
          AND i.indpred IS NULL AND i.indimmediate)::text, \
       (SELECT count(*) FROM pg_catalog.pg_trigger t WHERE t.tgrelid = c.oid \
          AND NOT t.tgisinternal)::text, \
       (SELECT count(*) FROM pg_catalog.pg_constraint k WHERE k.conrelid = c.oid \
          AND k.contype = 'f')::text, \
       (SELECT count(*) FROM pg_catalog.pg_trigger t WHERE t.tgrelid = c.oid \
          AND NOT t.tgisinternal AND t.tgenabled IN ('A', 'R'))::text, \
       (p.rowfilter IS NOT NULL OR cardinality(p.attnames) < (SELECT count(*) \
          FROM pg_catalog.pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 \
          AND NOT a.attisdropped AND a.attgenerated = ''))::text \
     FROM pg_catalog.pg_publication_tables p \
     JOIN pg_catalog.pg_namespace n ON n.nspname = p.schemaname \
     JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = p.tablename \
     WHERE p.pubname = $PUB ORDER BY 1";

const COLUMNS_SQL: &str = "SELECT format('%I.%I', n.nspname, c.relname), \
       a.attname::text, \
       pg_catalog.format_type(CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END, NULL), \
       (a.attidentity <> '' OR \
        coalesce(pg_catalog.pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%', false))::text \
     FROM pg_catalog.pg_publication_tables p \
     JOIN pg_catalog.pg_namespace n ON n.nspname = p.schemaname \
     JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = p.tablename \
     JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid \
     JOIN pg_catalog.pg_type t ON t.oid = a.atttypid \
     LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
     WHERE p.pubname = $PUB AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '' \
     ORDER BY 1, a.attnum";

const SIZES_SQL: &str = "SELECT format('%I.%I', n.nspname, c.relname), \
       pg_catalog.pg_total_relation_size(c.oid)::text \
     FROM pg_catalog.pg_publication_tables p \
     JOIN pg_catalog.pg_namespace n ON n.nspname = p.schemaname \
     JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = p.tablename \
     WHERE p.pubname = $PUB \
     UNION ALL SELECT NULL, NULL WHERE NOT EXISTS \
       (SELECT 1 FROM pg_catalog.pg_publication WHERE pubname = $PUB)";

/// Reads the publication's tables from every source shard's primary.
pub(super) async fn read(settings: &Settings, options: &ReshardOptions) -> Tables {
    let mut out = Tables::default();
    let primaries = match source_primaries(settings, &options.databases.from) {
        Ok(p) => p,
        Err(e) => {
            out.problems.push(e.to_string());
            return out;
        }
    };
    let pub_lit = literal(&options.publication);
    let sql = |s: &str| s.replace("$PUB", &pub_lit);
    let asks = primaries.iter().enumerate().map(|(shard, t)| {
        let first = shard == 0;
        let (tables_sql, columns_sql, sizes_sql) =
            (sql(TABLES_SQL), sql(COLUMNS_SQL), sql(SIZES_SQL));
        async move {
            let work = async {
                let mut server = Server::connect(t, SERVER_TIMEOUT)
                    .await
                    .map_err(|e| e.to_string())?;
                // Sizes wait on no lock, and nothing runs on after the checks gave up.
                server
                    .execute("SET statement_timeout = '4s'; SET lock_timeout = '3s'")
                    .await
                    .map_err(|e| e.to_string())?;
                let sizes = server
                    .query_rows(&sizes_sql)
                    .await
                    .map_err(|e| e.to_string())?;
                let (tables, columns) = if first {
                    let tables = server
                        .query_rows(&tables_sql)
                        .await
                        .map_err(|e| e.to_string())?;
                    let columns = server
                        .query_rows(&columns_sql)
                        .await
                        .map_err(|e| e.to_string())?;
                    (tables, columns)
                } else {
                    (vec![], vec![])
                };
                server.terminate().await;
                Ok::<_, String>((sizes, tables, columns))
            };
            let answer = tokio::time::timeout(SERVER_TIMEOUT, work)
                .await
                .unwrap_or_else(|_| {
                    Err(format!("no answer within {} s", SERVER_TIMEOUT.as_secs()))
                });
            (shard, t, answer)
        }
    });
    let mut lists: Vec<(usize, Vec<String>)> = Vec::new();
    for (shard, t, answer) in futures_util::future::join_all(asks).await {
        match answer {
            Err(e) => out.problems.push(where_(shard, t, &e)),
            Ok((sizes, tables, columns)) => {
                if sizes.iter().any(|r| r.first().cloned().flatten().is_none()) {
                    out.problems.push(format!(
                        "publication {} does not exist on {}: CREATE PUBLICATION {} FOR TABLE ... \
                         on every source shard",
                        options.publication,
                        where_(shard, t, ""),
                        crate::net::quote::ident(&options.publication)
                    ));
                    continue;
                }
                let mut names = Vec::new();
                for r in sizes {
                    if let [Some(name), Some(bytes)] = r.as_slice() {
                        let bytes = bytes.parse::<u64>().unwrap_or(0);
                        *out.sizes.entry(name.clone()).or_default() += bytes;
                        if shard == 0 {
                            out.first_sizes.insert(name.clone(), bytes);
                        }
                        names.push(name.clone());
                    }
                }
                names.sort();
                lists.push((shard, names));
                if shard == 0 {
                    out.published = published(tables, columns);
                }
            }
        }
    }
    if let Some((_, first)) = lists.first() {
        for (shard, names) in &lists[1..] {
            if names != first {
                out.problems.push(format!(
                    "publication {} lists other tables on source shard {shard} than on shard 0: \
                     publish the same tables on every source shard",
                    options.publication
                ));
            }
        }
    }
    out
}

fn where_(shard: usize, t: &ServerTarget, e: &str) -> String {
    let at = format!("{} (source shard {shard} primary)", t.addr());
    if e.is_empty() {
        at
    } else {
        format!("{at}: {e}")
    }
}

/// The rows of [`TABLES_SQL`] and [`COLUMNS_SQL`] as tables.
fn published(
    tables: Vec<Vec<Option<String>>>,
    columns: Vec<Vec<Option<String>>>,
) -> Vec<PublishedTable> {
    let mut by_name: BTreeMap<String, Vec<Column>> = BTreeMap::new();
    for r in columns {
        if let [Some(table), Some(name), Some(type_name), Some(sequence)] = r.as_slice() {
            by_name.entry(table.clone()).or_default().push(Column {
                name: name.clone(),
                type_name: type_name.clone(),
                sequence: sequence == "true",
            });
        }
    }
    tables
        .into_iter()
        .filter_map(|r| match <[Option<String>; 11]>::try_from(r).ok()? {
            [Some(name), Some(schema), Some(table), Some(replident), Some(pk), identity, Some(unique), Some(triggers), Some(fks), Some(always), filtered] => {
                Some(PublishedTable {
                    columns: by_name.remove(&name).unwrap_or_default(),
                    name,
                    schema,
                    table,
                    replident,
                    primary_key: pk == "true",
                    identity: identity
                        .map(|i| i.split(',').map(String::from).collect())
                        .unwrap_or_default(),
                    unique_index: unique == "true",
                    triggers: triggers.parse().unwrap_or(0),
                    foreign_keys: fks.parse().unwrap_or(0),
                    always_triggers: always.parse().unwrap_or(0),
                    filtered: filtered.as_deref() == Some("true"),
                })
            }
            _ => None,
        })
        .collect()
}

/// Where the copy sends each published table on the destination (or why it cannot).
pub(super) type Placed<'a> = Vec<(&'a PublishedTable, Result<Destination, String>)>;

pub(super) fn placements<'a>(
    settings: &Settings,
    options: &ReshardOptions,
    tables: &'a Tables,
) -> Placed<'a> {
    let dest = Schema::new(settings, &options.databases.to);
    tables
        .published
        .iter()
        .map(|t| {
            let d = match &dest {
                Ok(schema) => {
                    let columns: Vec<String> = t.columns.iter().map(|c| c.name.clone()).collect();
                    destination(schema, &options.databases.to, &t.schema, &t.table, &columns)
                        .map_err(|e| e.to_string())
                }
                Err(e) => Err(format!("database `{}`: {e}", options.databases.to)),
            };
            (t, d)
        })
        .collect()
}

/// The checks made of the tables. `can_set_role`: every destination shard's user may switch
/// triggers and foreign keys off (`session_replication_role`).
pub(super) fn checks(
    settings: &Settings,
    options: &ReshardOptions,
    tables: &Tables,
    placed: &Placed<'_>,
    can_set_role: bool,
) -> Vec<Check> {
    vec![
        publication(options, tables),
        super::identity::check(settings, options, &tables.published),
        primary_keys(&tables.published),
        sharding_columns(placed),
        sequences(placed),
        triggers(&tables.published, can_set_role),
    ]
}

fn publication(options: &ReshardOptions, tables: &Tables) -> Check {
    let mut c = Check::new("publication");
    tables.problems.iter().for_each(|p| c.refuse(p.clone()));
    for t in tables.published.iter().filter(|t| t.filtered) {
        c.refuse(format!(
            "{} publishes {} with a row filter or a column list: the copy takes every row and \
             column, the replay only the published ones; publish the whole table",
            options.publication, t.name
        ));
    }
    if c.findings.is_empty() {
        if tables.published.is_empty() {
            c.refuse(format!(
                "publication {} has no tables: ALTER PUBLICATION {} ADD TABLE ...",
                options.publication,
                crate::net::quote::ident(&options.publication)
            ));
        } else {
            c.ok(format!(
                "{} publishes {} tables on every source shard",
                options.publication,
                tables.published.len()
            ));
        }
    }
    c
}

fn primary_keys(tables: &[PublishedTable]) -> Check {
    let mut c = Check::new("primary keys");
    for t in tables.iter().filter(|t| !t.primary_key) {
        let name = &t.name;
        match t.replident.as_str() {
            "f" if t.unique_index => c.warn(format!(
                "{name} has no primary key (REPLICA IDENTITY FULL): each replayed UPDATE or \
                 DELETE scans it for its row; add a primary key, or ALTER TABLE {name} REPLICA \
                 IDENTITY USING INDEX <its unique index>"
            )),
            "f" => c.warn(format!(
                "{name} has no primary key and no unique index (REPLICA IDENTITY FULL): each \
                 replayed UPDATE or DELETE scans it for its row, and of identical rows it takes \
                 any one; add a primary key"
            )),
            "i" => c.ok(format!(
                "{name} has no primary key: its rows are found by its REPLICA IDENTITY index"
            )),
            // Default identity without a key, or NOTHING: the replica-identity check refuses it.
            _ => {}
        }
    }
    if c.findings.is_empty() {
        c.ok("every published table has one");
    }
    c
}

/// Whether a column of `type_name` holds keys pgdog hashes as `data_type` exactly as they
/// compare: else why not.
fn hashable(type_name: &str, data_type: DataType) -> Result<(), String> {
    // An integer column's values must fit the configured type (wider is fine: every integer
    // is hashed as a bigint, as Postgres' hashint2/4/8 agree).
    let width = |t: &str| match t {
        "smallint" => Some(2),
        "integer" => Some(4),
        "bigint" => Some(8),
        _ => None,
    };
    let configured_width = match data_type {
        DataType::Smallint => 2,
        DataType::Integer => 4,
        _ => 8,
    };
    let fits = match data_type {
        DataType::Bigint | DataType::Integer | DataType::Smallint => {
            width(type_name).is_some_and(|w| w <= configured_width)
        }
        DataType::Uuid => type_name == "uuid",
        DataType::Varchar => matches!(type_name, "text" | "character varying"),
    };
    if fits {
        return Ok(());
    }
    let configured = format!("{data_type:?}").to_lowercase();
    if width(type_name).is_some() {
        return Err(format!(
            "is {type_name}, wider than the {configured} its [[sharded_tables]] entry reads: \
             its larger values cannot be placed; set data_type = \"{type_name}\" (or bigint)"
        ));
    }
    if type_name == "character" {
        return Err(format!(
            "is character(n), whose values compare without their trailing spaces, which the \
             {configured} hash keeps; make it text or varchar"
        ));
    }
    Err(format!(
        "is {type_name}, and its [[sharded_tables]] entry hashes {configured} keys: set data_type \
         to the column's type (bigint, integer, smallint, uuid, varchar) or shard by another column"
    ))
}

fn sharding_columns(placed: &Placed<'_>) -> Check {
    let mut c = Check::new("sharding column");
    let (mut sharded, mut everywhere) = (0, 0);
    for (t, d) in placed {
        match d {
            Err(e) => c.refuse(e.clone()),
            Ok(Destination::ByKey(sharding, index)) => {
                sharded += 1;
                let Some(column) = t.columns.get(*index) else {
                    continue;
                };
                if let Err(why) = hashable(&column.type_name, sharding.config.data_type) {
                    c.refuse(format!("{}.{} {why}", t.name, column.name));
                } else if sharding.config.generates_key() && column.type_name != "bigint" {
                    c.warn(format!(
                        "{}.{} is {}, but pgdog fills a missing key with pgdog.unique_id(), a \
                         bigint that does not fit: make the column bigint, or set primary_key = \
                         \"database\" on its [[sharded_tables]] entry",
                        t.name, column.name, column.type_name
                    ));
                }
            }
            Ok(_) => everywhere += 1,
        }
    }
    if c.findings.is_empty() {
        c.ok(format!(
            "{sharded} tables split by a key of a hashable type, {everywhere} copied whole"
        ));
    }
    c
}

fn sequences(placed: &Placed<'_>) -> Check {
    let mut c = Check::new("sequences");
    for (t, d) in placed {
        let Ok(Destination::ByKey(sharding, index)) = d else {
            continue;
        };
        for (i, column) in t.columns.iter().enumerate().filter(|(_, c)| c.sequence) {
            let name = format!("{}.{}", t.name, column.name);
            if i != *index {
                c.warn(format!(
                    "{name} takes values from each shard's own sequence: they repeat across \
                     shards (fill it with pgdog.unique_id(), or give each shard its own range \
                     with ALTER SEQUENCE ... START/INCREMENT)"
                ));
            } else if sharding.config.generates_key() {
                c.ok(format!(
                    "{name}, the sharding key: pgdog fills it with pgdog.unique_id()"
                ));
            } else {
                c.warn(format!(
                    "{name}, the sharding key, comes from each shard's own sequence, which pgdog \
                     cannot route: an INSERT without it is refused; set primary_key = \
                     \"unique_id\" on its [[sharded_tables]] entry (bigint keys)"
                ));
            }
        }
    }
    if c.findings.is_empty() {
        c.ok("no sharded table takes values from a sequence");
    }
    c
}

fn triggers(tables: &[PublishedTable], can_set_role: bool) -> Check {
    let mut c = Check::new("triggers and foreign keys");
    let with: Vec<&PublishedTable> = tables
        .iter()
        .filter(|t| t.triggers + t.foreign_keys > 0)
        .collect();
    if with.is_empty() {
        c.ok("none on the published tables");
        return c;
    }
    let (triggers, fks): (u32, u32) = with
        .iter()
        .fold((0, 0), |(a, b), t| (a + t.triggers, b + t.foreign_keys));
    let names: Vec<&str> = with.iter().take(5).map(|t| t.name.as_str()).collect();
    let what = format!(
        "{triggers} triggers and {fks} foreign keys on the source (made on the destination by the \
         schema sync; on {}{})",
        names.join(", "),
        if with.len() > 5 { ", ..." } else { "" }
    );
    let always: u32 = with.iter().map(|t| t.always_triggers).sum();
    if always > 0 {
        c.warn(format!(
            "{always} of them ENABLE ALWAYS or ENABLE REPLICA: those fire on the destination \
             during the copy and the replay even with session_replication_role = replica"
        ));
    }
    if can_set_role {
        c.ok(format!(
            "{what}: off on the destination during the copy and the replay \
             (session_replication_role = replica, as logical replication does)"
        ));
    } else {
        c.warn(format!(
            "{what} would fire on the destination during the copy and the replay: its user may \
             not set session_replication_role; GRANT SET ON PARAMETER session_replication_role \
             TO that user (PostgreSQL 15+) or use a superuser"
        ));
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reshard::preflight::Verdict;

    #[test]
    fn key_types_hash_as_configured() {
        assert!(hashable("bigint", DataType::Bigint).is_ok());
        assert!(hashable("integer", DataType::Bigint).is_ok());
        assert!(hashable("uuid", DataType::Uuid).is_ok());
        assert!(hashable("character varying", DataType::Varchar).is_ok());
        assert!(hashable("text", DataType::Varchar).is_ok());
        let e = hashable("numeric", DataType::Bigint).unwrap_err();
        assert!(e.contains("is numeric") && e.contains("bigint"), "{e}");
        assert!(hashable("character", DataType::Varchar)
            .unwrap_err()
            .contains("trailing spaces"));
        assert!(hashable("text", DataType::Uuid).is_err());
        let e = hashable("bigint", DataType::Integer).unwrap_err();
        assert!(e.contains("wider"), "{e}");
        assert!(hashable("smallint", DataType::Integer).is_ok());
    }

    fn table(name: &str, replident: &str, pk: bool, unique: bool) -> PublishedTable {
        PublishedTable {
            name: name.into(),
            replident: replident.into(),
            primary_key: pk,
            unique_index: unique,
            ..PublishedTable::default()
        }
    }

    #[test]
    fn tables_without_a_primary_key_warn() {
        let ok = primary_keys(&[table("a", "d", true, true)]);
        assert_eq!(ok.verdict(), Verdict::Ok);
        let full = primary_keys(&[table("b", "f", false, false)]);
        assert_eq!(full.verdict(), Verdict::Warning);
        assert!(
            full.detail().contains("no unique index"),
            "{}",
            full.detail()
        );
        let index = primary_keys(&[table("c", "i", false, true)]);
        assert_eq!(index.verdict(), Verdict::Ok);
        let mut t = table("d", "d", true, true);
        t.triggers = 2;
        t.foreign_keys = 1;
        assert_eq!(triggers(&[t.clone()], true).verdict(), Verdict::Ok);
        let off = triggers(&[t], false);
        assert_eq!(off.verdict(), Verdict::Warning);
        assert!(
            off.detail().starts_with("2 triggers and 1 foreign keys"),
            "{}",
            off.detail()
        );
    }
}
