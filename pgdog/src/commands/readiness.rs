//! `pgdog readiness`: the routes report as a summary a person can act on, from a running
//! pgdog's admin database (`--admin-url`, after traffic with `dry_run = true`) or from a log of
//! statements routed here by the configuration's planned layout (`--file`).
use super::{Cli, ReadinessArgs};
use pgdog::router::route::Router;
use pgdog::router::schema::Schema;
use pgdog::stats::readiness::{self, log};
use pgdog::stats::routes::{self, RouteRow};
use std::process::ExitCode;
use std::time::Duration;

pub fn run(cli: &Cli, a: &ReadinessArgs) -> ExitCode {
    let result = match (&a.admin_url, &a.file) {
        (Some(url), None) => from_admin(url),
        (None, Some(file)) => from_file(cli, a, file),
        _ => Err("give either --admin-url URL or --file PATH".into()),
    };
    let rows = match result {
        Ok(rows) => rows,
        Err(e) => {
            eprintln!("pgdog: readiness: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut databases: Vec<&str> = rows.iter().map(|r| r.database.as_str()).collect();
    databases.sort();
    databases.dedup();
    if let Some(db) = &a.database {
        databases.retain(|d| d == db);
    }
    if databases.is_empty() {
        println!("No routes counted yet: set dry_run = true (and dry_run_shards) and run traffic.");
    }
    for db in databases {
        println!("{}", readiness::summary(db, &rows, a.limit));
    }
    ExitCode::SUCCESS
}

/// SHOW ROUTES of a running pgdog.
fn from_admin(url: &str) -> Result<Vec<RouteRow>, String> {
    let target = pgdog::replication::client::url::parse_url(url).map_err(|e| e.to_string())?;
    let rt = super::jobs::runtime(1)?;
    let rows = rt.block_on(async {
        let timeout = Duration::from_secs(10);
        let mut server = pgdog::backend::server::Server::connect(&target, timeout)
            .await
            .map_err(|e| format!("connecting to the admin database: {e}"))?;
        let rows = server
            .query_rows("SHOW ROUTES")
            .await
            .map_err(|e| format!("SHOW ROUTES: {e}"));
        server.terminate().await;
        rows
    })?;
    readiness::from_show(rows)
}

/// A statement log routed by the planned layout of the database.
fn from_file(
    cli: &Cli,
    a: &ReadinessArgs,
    file: &std::path::Path,
) -> Result<Vec<RouteRow>, String> {
    let settings =
        pgdog::registry::load_settings(&cli.config, &cli.users).map_err(|e| e.to_string())?;
    let database = match &a.database {
        Some(d) => d.clone(),
        None => {
            let mut names: Vec<&str> = settings
                .config
                .sharded_tables
                .iter()
                .map(|t| t.database.as_str())
                .collect();
            names.sort();
            names.dedup();
            match names.as_slice() {
                [one] => one.to_string(),
                _ => return Err("name the database with --database (the one whose [[sharded_tables]] plan the layout)".into()),
            }
        }
    };
    let shards = a
        .shards
        .or_else(|| settings.dry_run(&database))
        .unwrap_or_else(|| settings.shards(&database));
    if shards < 2 {
        return Err(format!(
            "database `{database}` has one shard: give the planned count with --shards N (or dry_run_shards)"
        ));
    }
    let schema = Schema::with_shards(&settings, &database, shards).map_err(|e| e.to_string())?;
    let text =
        std::fs::read_to_string(file).map_err(|e| format!("reading {}: {e}", file.display()))?;
    let logged = log::read(&text);
    let dry = pgdog::router::verdict::DryRun {
        router: Router::new(schema),
        database: std::sync::Arc::from(database.as_str()),
    };
    let routed = log::route_log(&dry, &logged);
    eprintln!(
        "{}: {} statements read, {} routed as if `{database}` had {shards} shards",
        file.display(),
        logged.len(),
        routed.statements
    );
    if !routed.unparsed.is_empty() {
        eprintln!(
            "{} statements do not parse (Postgres refuses them too); the first: {}",
            routed.unparsed.len(),
            routed.unparsed[0]
        );
    }
    Ok(routes::rows())
}
