//! `pgdog-topology`: the test topologies from the shell (benchmarks, demo).
//!
//! ```text
//! pgdog-topology single|replicated|replicas N|shards N|shards+replicas N K|replicated+shards N [--env-file F] [-- CMD ARGS...]
//! ```
//! `replicas N`: `primary` and N standbys `replica1` ..; `shards+replicas N K`: N shards, the
//! first K with a standby `shard<i>_replica`.
//! Starts the topology and prints `KEY=value` lines describing it (also written to `--env-file`).
//! `replicated+shards N` is two topologies side by side (a resharding source and destination):
//! `primary` + `standby`, and `shard0` .. `shard{N-1}`; every node gets its `PG_<NAME>_PORT` and
//! `PG_<NAME>_URL`, `PG_NODES` lists all of them, `PGDOG_TOPOLOGY_DIR` is the replicated one's
//! folder and `PGDOG_TOPOLOGY_DIRS` lists both.
//! With `-- CMD`, runs CMD with those variables in its environment, then tears down and exits
//! with CMD's status; without, waits for SIGINT/SIGTERM/SIGHUP, then tears down.
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::process::{Command, ExitCode};
use topology::{Kind, Topology};

fn usage() -> ExitCode {
    eprintln!(
        "usage: pgdog-topology single|replicated|replicas N|shards N|shards+replicas N K|replicated+shards N [--env-file F] [-- CMD ARGS...]"
    );
    ExitCode::from(2)
}

/// Starts every topology of `kinds` at once; all or none (those started are dropped on error).
fn start_all(kinds: &[Kind]) -> topology::Result<Vec<Topology>> {
    std::thread::scope(|s| {
        let handles: Vec<_> = kinds
            .iter()
            .map(|&k| s.spawn(move || Topology::start(k)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(topology::Error::Panicked("starting a topology".into()))
                })
            })
            .collect()
    })
}

/// The variables of one topology, or of several merged: node variables from each, `PG_NODES`
/// joined, the first one's `PGDOG_TOPOLOGY_DIR` and `PG_BIN`, and `PGDOG_TOPOLOGY_DIRS`.
fn merged_env(topos: &[Topology]) -> Vec<(String, String)> {
    if topos.len() == 1 {
        return topos[0].env();
    }
    let mut env: Vec<(String, String)> = Vec::new();
    let mut nodes = Vec::new();
    let mut dirs = Vec::new();
    for topo in topos {
        for (k, v) in topo.env() {
            match k.as_str() {
                "PG_NODES" => nodes.push(v),
                "PGDOG_TOPOLOGY_DIR" => {
                    if dirs.is_empty() {
                        env.push((k, v.clone()));
                    }
                    dirs.push(v);
                }
                "PG_BIN" if env.iter().any(|(e, _)| e == "PG_BIN") => {}
                _ => env.push((k, v)),
            }
        }
    }
    env.push(("PG_NODES".into(), nodes.join(" ")));
    env.push(("PGDOG_TOPOLOGY_DIRS".into(), dirs.join(" ")));
    env
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (ours, cmd) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (&args[..], &[][..]),
    };
    let mut env_file = None;
    let mut kinds: Option<Vec<Kind>> = None;
    let mut it = ours.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "single" => kinds = Some(vec![Kind::Single]),
            "replicated" => kinds = Some(vec![Kind::Replicated]),
            "shards" => match it.next().and_then(|n| n.parse().ok()) {
                Some(n) if n > 0 => kinds = Some(vec![Kind::Shards(n)]),
                _ => return usage(),
            },
            "replicas" => match it.next().and_then(|n| n.parse().ok()) {
                Some(n) if n > 0 => kinds = Some(vec![Kind::Replicas(n)]),
                _ => return usage(),
            },
            // `shards+replicas N K`: N shards, the first K with a streaming standby each.
            "shards+replicas" => {
                let n = it.next().and_then(|n| n.parse().ok());
                let k = it.next().and_then(|k| k.parse().ok());
                match (n, k) {
                    (Some(n), Some(k)) if n > 0 && k <= n => {
                        kinds = Some(vec![Kind::ShardReplicas(n, k)])
                    }
                    _ => return usage(),
                }
            }
            "replicated+shards" => match it.next().and_then(|n| n.parse().ok()) {
                Some(n) if n > 0 => kinds = Some(vec![Kind::Replicated, Kind::Shards(n)]),
                _ => return usage(),
            },
            "--env-file" => match it.next() {
                Some(f) => env_file = Some(f.clone()),
                None => return usage(),
            },
            _ => return usage(),
        }
    }
    let Some(kinds) = kinds else { return usage() };

    // Handlers (not a blocked mask, which children would inherit): they reset to default in
    // every program we start.
    let mut signals = match Signals::new([SIGINT, SIGTERM, SIGHUP]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pgdog-topology: installing signal handlers: {e}");
            return ExitCode::FAILURE;
        }
    };
    let topos = match start_all(&kinds) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("pgdog-topology: {e}");
            return ExitCode::FAILURE;
        }
    };
    let env = merged_env(&topos);
    let lines: String = env.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    if let Some(path) = &env_file {
        // Write then rename, so a reader polling for the file never sees half of it.
        let tmp = format!("{path}.tmp");
        if let Err(e) = std::fs::write(&tmp, &lines).and_then(|_| std::fs::rename(&tmp, path)) {
            eprintln!("pgdog-topology: writing {path}: {e}");
            return ExitCode::FAILURE;
        }
    }

    if cmd.is_empty() {
        print!("{lines}");
        eprintln!("pgdog-topology: up; Ctrl-C stops it");
        let sig = signals.forever().next().unwrap_or(SIGTERM);
        eprintln!("pgdog-topology: signal {sig}, stopping");
        return ExitCode::SUCCESS;
    }

    let mut child = match Command::new(&cmd[0]).args(&cmd[1..]).envs(env).spawn() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pgdog-topology: starting {}: {e}", cmd[0]);
            return ExitCode::FAILURE;
        }
    };
    let pid = child.id() as i32;
    // Forward a termination request to the command; teardown follows when it exits.
    std::thread::spawn(move || {
        for sig in signals.forever() {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(pid, sig) };
        }
    });
    let status = child.wait();
    drop(topos);
    match status {
        Ok(s) if s.success() => ExitCode::SUCCESS,
        Ok(s) => ExitCode::from(s.code().unwrap_or(1).clamp(1, 255) as u8),
        Err(e) => {
            eprintln!("pgdog-topology: waiting for {}: {e}", cmd[0]);
            ExitCode::FAILURE
        }
    }
}
