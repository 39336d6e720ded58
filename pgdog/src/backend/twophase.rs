//! Two-phase commit across shards: transaction ids (gids) that say who prepared them and which
//! shards take part, and the recovery of in-doubt transactions left by a pgdog that died between
//! PREPARE TRANSACTION and COMMIT PREPARED.
//!
//! The coordinator prepares on the participants in shard order, and only once every PREPARE
//! succeeded commits them in shard order; after a failed PREPARE it rolls back the prepared ones
//! in reverse order. So the shards still holding a prepared transaction are either a prefix of the
//! participants (prepares incomplete, or a rollback under way: roll back) or a proper suffix with
//! the first participant gone (commits under way: commit), or all of them (every PREPARE
//! succeeded: commit).
use super::Pool;

/// The gid of a transaction's branch on `shard`: `pgdog_<pid>_<n>_<shard>_<participants>`.
pub fn gid(pid: u32, n: u64, shard: usize, participants: &[usize]) -> String {
    let list: Vec<String> = participants.iter().map(|s| s.to_string()).collect();
    format!("pgdog_{pid}_{n}_{shard}_{}", list.join("."))
}

/// A parsed gid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gid {
    pub pid: u32,
    pub n: u64,
    pub shard: usize,
    pub participants: Vec<usize>,
}

pub fn parse_gid(gid: &str) -> Option<Gid> {
    let rest = gid.strip_prefix("pgdog_")?;
    let mut parts = rest.splitn(4, '_');
    let pid = parts.next()?.parse().ok()?;
    let n = parts.next()?.parse().ok()?;
    let shard = parts.next()?.parse().ok()?;
    let participants = parts
        .next()?
        .split('.')
        .map(|s| s.parse().ok())
        .collect::<Option<Vec<usize>>>()?;
    Some(Gid {
        pid,
        n,
        shard,
        participants,
    })
}

/// Commit (true) or roll back an in-doubt transaction, given the shards where it is prepared.
pub fn decide(participants: &[usize], prepared_on: &[usize]) -> bool {
    match participants.first() {
        None => false,
        Some(first) => prepared_on.len() == participants.len() || !prepared_on.contains(first),
    }
}

fn process_alive(pid: u32) -> bool {
    // SAFETY: kill with signal 0 sends nothing; it only checks that the process exists.
    pid == std::process::id() || unsafe { libc::kill(pid as i32, 0) == 0 }
}

/// Resolves the in-doubt transactions of dead pgdog processes on the shards of one database
/// (`pools`, in shard order). Returns how many branches were committed and rolled back.
pub async fn recover(database: &str, pools: &[Pool]) -> (usize, usize) {
    let mut found: Vec<(usize, Gid, String)> = Vec::new();
    for (shard, pool) in pools.iter().enumerate() {
        let mut server = match pool.get().await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("two-phase recovery: {database} shard {shard}: {e}");
                continue;
            }
        };
        let rows = server
            .query_row(
                "SELECT string_agg(gid, ' ') FROM pg_catalog.pg_prepared_xacts WHERE gid LIKE 'pgdog\\_%' AND database = current_database()",
            )
            .await;
        if let Ok(row) = rows {
            for g in row
                .into_iter()
                .flatten()
                .flat_map(|s| s.split(' ').map(|x| x.to_string()).collect::<Vec<_>>())
            {
                if let Some(parsed) = parse_gid(&g) {
                    if !process_alive(parsed.pid) && parsed.shard == shard {
                        found.push((shard, parsed, g));
                    }
                }
            }
        }
    }
    let (mut committed, mut rolled_back) = (0, 0);
    for (shard, g, text) in &found {
        let prepared_on: Vec<usize> = found
            .iter()
            .filter(|(_, o, _)| o.pid == g.pid && o.n == g.n)
            .map(|(s, _, _)| *s)
            .collect();
        let commit = decide(&g.participants, &prepared_on);
        let verb = if commit { "COMMIT" } else { "ROLLBACK" };
        let Some(pool) = pools.get(*shard) else {
            continue;
        };
        match pool.get().await {
            Ok(mut server) => {
                match server.execute(&format!("{verb} PREPARED '{text}'")).await {
                    Ok(()) => {
                        tracing::info!("two-phase recovery: {verb} PREPARED '{text}' on {database} shard {shard}");
                        if commit {
                            committed += 1;
                        } else {
                            rolled_back += 1;
                        }
                    }
                    Err(e) => tracing::error!("two-phase recovery: {verb} PREPARED '{text}': {e}"),
                }
            }
            Err(e) => tracing::error!("two-phase recovery: {database} shard {shard}: {e}"),
        }
    }
    (committed, rolled_back)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gids_and_decisions() {
        let g = gid(42, 7, 1, &[0, 1, 2]);
        assert_eq!(g, "pgdog_42_7_1_0.1.2");
        assert_eq!(
            parse_gid(&g),
            Some(Gid {
                pid: 42,
                n: 7,
                shard: 1,
                participants: vec![0, 1, 2]
            })
        );
        assert_eq!(parse_gid("pgdog_x"), None);
        // All prepared: commit. Prefix: prepares incomplete, roll back. First gone: commit.
        assert!(decide(&[0, 1, 2], &[0, 1, 2]));
        assert!(!decide(&[0, 1, 2], &[0, 1]));
        assert!(!decide(&[0, 1, 2], &[0]));
        assert!(decide(&[0, 1, 2], &[1, 2]));
        assert!(decide(&[0, 1, 2], &[2]));
    }
}
