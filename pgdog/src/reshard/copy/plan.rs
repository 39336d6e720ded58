//! Which server each copy reads from, and in what order: every replica of a source shard
//! works. Copies go largest first (the longest one starts first), each to the replica of its
//! source shard with the fewest bytes assigned so far (the primary when the shard has no
//! replica), and each server gets its own `--parallel` reader connections. The CTID ranges of
//! one large table stay on one server: they share one exported snapshot, which only the
//! server that exported it can import.
use super::format::CopyTuning;
use super::{Job, ReaderBudget, SourceShard};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// Orders `jobs` largest first and sets each one's server.
pub(super) fn assign_servers(jobs: &mut [Job], sources: &[SourceShard]) {
    jobs.sort_by_key(|j| std::cmp::Reverse(j.size));
    let mut load: Vec<Vec<u64>> = sources.iter().map(|s| vec![0; s.replicas.len()]).collect();
    for job in jobs.iter_mut() {
        let Some(source) = sources.get(job.source_shard) else {
            continue;
        };
        let loads = &mut load[job.source_shard];
        let least = (0..loads.len()).min_by_key(|&i| (loads[i], i));
        match least {
            Some(i) => {
                loads[i] += job.size.max(1);
                job.source = source.replicas[i].clone();
                job.from_replica = true;
            }
            None => {
                job.source = source.primary.clone();
                job.from_replica = false;
            }
        }
    }
}

/// One reader budget of `parallel` connections per server read from, by address.
pub(super) fn budgets(
    jobs: &[Job],
    parallel: usize,
    tuning: CopyTuning,
) -> HashMap<String, ReaderBudget> {
    let mut out = HashMap::new();
    for job in jobs {
        out.entry(job.source.addr())
            .or_insert_with(|| ReaderBudget {
                permits: Arc::new(Semaphore::new(parallel)),
                total: parallel,
                tuning,
            });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::server::ServerTarget;
    use crate::reshard::copy::Destination;

    fn server(port: u16) -> ServerTarget {
        ServerTarget {
            host: "127.0.0.1".into(),
            port,
            database: "postgres".into(),
            user: "postgres".into(),
            password: None,
            pass_through: None,
        }
    }

    fn job(name: &str, source_shard: usize, size: u64) -> Job {
        Job {
            schema: "public".into(),
            name: name.into(),
            columns: vec![],
            dest: Destination::Everywhere,
            source_shard,
            source: server(1),
            primary: server(1),
            from_replica: false,
            targets: vec![0],
            size,
            range: None,
            stays: Arc::from([]),
        }
    }

    #[test]
    fn largest_first_to_the_least_loaded_replica() {
        let sources = vec![
            SourceShard {
                primary: server(10),
                replicas: vec![server(11), server(12)],
            },
            SourceShard {
                primary: server(20),
                replicas: vec![],
            },
        ];
        let mut jobs = vec![
            job("small", 0, 10),
            job("big", 0, 100),
            job("mid", 0, 60),
            job("mid2", 0, 50),
            job("other", 1, 70),
        ];
        assign_servers(&mut jobs, &sources);
        let got: Vec<(&str, u16, bool)> = jobs
            .iter()
            .map(|j| (j.name.as_str(), j.source.port, j.from_replica))
            .collect();
        assert_eq!(
            got,
            vec![
                ("big", 11, true),
                ("other", 20, false),
                ("mid", 12, true),
                ("mid2", 12, true),
                ("small", 11, true),
            ]
        );
        let b = budgets(&jobs, 3, CopyTuning::default());
        assert_eq!(b.len(), 3);
        assert!(b.values().all(|b| b.total == 3));
    }
}
