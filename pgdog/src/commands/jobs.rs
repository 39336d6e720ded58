//! The one-shot commands: each loads the configuration, runs the library's async job on the
//! runtime built here, and prints its report (stdout) or error (stderr). Exit status 0 on
//! success, 1 on failure (`verify`: 1 when anything differs).
use super::Cli;
use pgdog::config::Settings;
use pgdog::replication::client::format_lsn;
use std::io::Write;
use std::process::ExitCode;

/// The tokio runtime of a command (`workers` threads; 1: current thread).
pub fn runtime(workers: usize) -> Result<tokio::runtime::Runtime, String> {
    let mut b = if workers > 1 {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(workers);
        b
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    b.enable_all()
        .build()
        .map_err(|e| format!("starting the runtime: {e}"))
}

fn failed(command: &str, e: impl std::fmt::Display) -> ExitCode {
    eprintln!("pgdog: {command}: {e}");
    ExitCode::FAILURE
}

/// Loads the configuration files and builds the runtime a command needs.
fn prepare(cli: &Cli, workers: usize) -> Result<(Settings, tokio::runtime::Runtime), String> {
    let settings =
        pgdog::registry::load_settings(&cli.config, &cli.users).map_err(|e| e.to_string())?;
    Ok((settings, runtime(workers)?))
}

/// `pgdog logical-dump`: stdout gets the JSON lines, stderr the summary.
pub fn logical_dump(options: pgdog::replication::dump::DumpOptions) -> ExitCode {
    let rt = match runtime(1) {
        Ok(r) => r,
        Err(e) => return failed("logical-dump", e),
    };
    rt.block_on(async move {
        let shutdown = pgdog::signals::interrupted();
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        match pgdog::replication::dump::dump(&options, &mut out, shutdown).await {
            Ok(summary) => {
                eprintln!(
                    "pgdog: logical-dump stopped: {} messages, confirmed up to {}",
                    summary.messages,
                    format_lsn(summary.confirmed)
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                let _ = out.flush();
                failed("logical-dump", e)
            }
        }
    })
}

/// `pgdog schema-sync`.
pub fn schema_sync(cli: &Cli, options: pgdog::reshard::schema_sync::SchemaSyncOptions) -> ExitCode {
    let (settings, rt) = match prepare(cli, 1) {
        Ok(p) => p,
        Err(e) => return failed("schema-sync", e),
    };
    match rt.block_on(pgdog::reshard::schema_sync::sync(&settings, &options)) {
        Ok(reports) => {
            for (shard, r) in reports.iter().enumerate() {
                println!(
                    "{} shard {shard}: {} objects applied, {} already present",
                    options.databases.to, r.applied, r.skipped
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => failed("schema-sync", e),
    }
}

/// `pgdog copy-data`: each table as it is copied, then the totals.
pub fn copy_data(cli: &Cli, options: pgdog::reshard::copy::CopyDataOptions) -> ExitCode {
    let (settings, rt) = match prepare(cli, 2) {
        Ok(p) => p,
        Err(e) => return failed("copy-data", e),
    };
    let result = rt.block_on(pgdog::reshard::copy::copy_data(&settings, &options, |t| {
        println!("{t}")
    }));
    match result {
        Ok((_, tables)) => {
            let rows: u64 = tables.iter().map(|t| t.rows).sum();
            let skipped = tables.iter().filter(|t| t.skipped).count();
            println!(
                "copied {} tables, {rows} rows, {skipped} already copied",
                tables.len() - skipped
            );
            ExitCode::SUCCESS
        }
        Err(e) => failed("copy-data", e),
    }
}

/// `pgdog replay`: until `--until-lsn` or Ctrl-C/SIGTERM.
pub fn replay(cli: &Cli, options: pgdog::reshard::replay::ReplayOptions) -> ExitCode {
    let (settings, rt) = match prepare(cli, 1) {
        Ok(p) => p,
        Err(e) => return failed("replay", e),
    };
    let result = rt.block_on(async {
        let shutdown = pgdog::signals::interrupted();
        pgdog::reshard::replay::replay(&settings, &options, shutdown).await
    });
    match result {
        Ok(s) => {
            println!(
                "replayed {} transactions, {} rows applied, {} changes skipped, last LSN {}",
                s.transactions,
                s.rows,
                s.skipped,
                format_lsn(s.last_lsn)
            );
            ExitCode::SUCCESS
        }
        Err(e) => failed("replay", e),
    }
}

/// `pgdog verify`: one line per table; exit 1 when anything differs.
pub fn verify(cli: &Cli, options: pgdog::reshard::verify::VerifyOptions) -> ExitCode {
    let (settings, rt) = match prepare(cli, 1) {
        Ok(p) => p,
        Err(e) => return failed("verify", e),
    };
    match rt.block_on(pgdog::reshard::verify::verify(&settings, &options)) {
        Ok((at, reports)) => {
            println!("{at}");
            let mut ok = true;
            for r in &reports {
                println!("{r}");
                ok &= r.ok();
            }
            if reports.is_empty() {
                println!("no tables to verify");
            }
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => failed("verify", e),
    }
}
