//! The configuration switch of a cutover across a fleet of proxies (`--admin-url` given once per
//! proxy): every proxy runs `SWITCH <from> <to>` (its own pgdog.toml rewritten so `from` serves
//! the destination, unless a shared file already says so, then reloaded), and each one's
//! `SHOW DATABASES` must then list the destination's servers under `from`. A proxy that fails
//! is tried again; if none switched, every proxy resumes on the old configuration; if some did,
//! the switch is rolled forward and the proxies that still did not switch stay paused, named
//! in the error (resuming them would send writes to the old servers).
use super::cutover::{CutoverError, CutoverOptions};
use crate::backend::server::{Server, ServerTarget};
use crate::config::Settings;
use std::collections::BTreeSet;
use std::time::Duration;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const ATTEMPTS: usize = 3;

type Servers = BTreeSet<(String, String, String)>;

async fn rows(t: &ServerTarget, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
    let mut server = Server::connect(t, CONNECT_TIMEOUT)
        .await
        .map_err(|e| format!("connecting to the admin database: {e}"))?;
    let result = server
        .query_rows(sql)
        .await
        .map_err(|e| format!("{sql}: {e}"));
    server.terminate().await;
    result
}

/// SWITCH on one proxy, then its `SHOW DATABASES` checked against `expected`.
async fn switch_one(
    t: &ServerTarget,
    options: &CutoverOptions,
    expected: &Servers,
) -> Result<(), String> {
    rows(
        t,
        &format!("SWITCH {} {}", options.databases.from, options.databases.to),
    )
    .await?;
    let shown: Servers = rows(t, "SHOW DATABASES")
        .await?
        .into_iter()
        .filter(|r| r.first().cloned().flatten().as_deref() == Some(&options.databases.from))
        .map(|r| {
            let col = |i: usize| r.get(i).cloned().flatten().unwrap_or_default();
            (col(1), col(2), col(3))
        })
        .collect();
    if shown == *expected {
        Ok(())
    } else {
        Err(format!(
            "after SWITCH it serves {} from {shown:?}, not the destination {expected:?}",
            options.databases.from
        ))
    }
}

/// Switches every proxy (traffic paused on all of them); resumes what may resume.
pub async fn switch(
    settings: &Settings,
    options: &CutoverOptions,
    peers: &[ServerTarget],
) -> Result<(), CutoverError> {
    let expected: Servers = settings
        .config
        .databases
        .iter()
        .filter(|d| d.name == options.databases.to)
        .map(|d| {
            (
                d.host.clone(),
                d.port.to_string(),
                d.database_name().to_string(),
            )
        })
        .collect();
    let from = &options.databases.from;
    let mut done = vec![false; peers.len()];
    let mut errors: Vec<Option<String>> = vec![None; peers.len()];
    for attempt in 0..ATTEMPTS {
        for (i, p) in peers.iter().enumerate() {
            if done[i] {
                continue;
            }
            match switch_one(p, options, &expected).await {
                Ok(()) => {
                    done[i] = true;
                    errors[i] = None;
                }
                Err(e) => errors[i] = Some(e),
            }
        }
        if done.iter().all(|d| *d) || (attempt == 0 && !done.iter().any(|d| *d)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let failed: Vec<String> = peers
        .iter()
        .zip(&errors)
        .filter_map(|(p, e)| e.as_ref().map(|e| format!("{}: {e}", p.addr())))
        .collect();
    if !done.iter().any(|d| *d) {
        // Nothing switched: everyone goes on with the old configuration.
        for p in peers {
            let _ = rows(p, &format!("RESUME {from}")).await;
        }
        return Err(CutoverError::Traffic(format!(
            "no proxy switched, traffic resumed on the source: {}",
            failed.join("; ")
        )));
    }
    for (p, ok) in peers.iter().zip(&done) {
        if *ok {
            rows(p, &format!("RESUME {from}"))
                .await
                .map_err(|e| CutoverError::Traffic(format!("{}: {e}", p.addr())))?;
        }
    }
    if failed.is_empty() {
        return Ok(());
    }
    Err(CutoverError::Traffic(format!(
        "the destination serves {from} on the proxies that switched, but these did not and stay paused (run SWITCH {from} {} then RESUME {from} on them): {}",
        options.databases.to,
        failed.join("; ")
    )))
}
