//! The bytes the copy writes to each destination shard against its free space, where that can
//! be known: a destination on this machine whose user may read `data_directory`, whose
//! `postmaster.pid` there names its port (so the directory is really that server's, not one
//! seen through a container or a tunnel). Shards on one file system are counted together.
//! Elsewhere the estimate is given alone.
use super::servers::{Place, Probe};
use super::tables::{Placed, Tables};
use super::Check;
use crate::reshard::copy::Destination;
use crate::reshard::display::bytes;
use std::collections::BTreeMap;
use std::time::Duration;

/// Over this share of the free space, a warning.
const TIGHT: f64 = 0.8;
/// How long reading a file system's free space may take (a hung network mount).
const STATVFS_TIMEOUT: Duration = Duration::from_secs(2);

/// Bytes each destination shard receives: a split table's bytes (summed over the source
/// shards, with indexes) spread evenly, a table copied whole (from the first source shard) in
/// full, a sharded schema's table on its shard.
pub(super) fn estimate(placed: &Placed<'_>, tables: &Tables, shards: usize) -> Vec<u64> {
    let shards = shards.max(1);
    let mut out = vec![0u64; shards];
    for (t, d) in placed {
        let all = tables.sizes.get(&t.name).copied().unwrap_or(0);
        let first = tables.first_sizes.get(&t.name).copied().unwrap_or(all);
        match d {
            Ok(Destination::ByKey(..)) => out.iter_mut().for_each(|b| *b += all / shards as u64),
            Ok(Destination::Everywhere) => out.iter_mut().for_each(|b| *b += first),
            Ok(Destination::OneShard(s)) => {
                if let Some(b) = out.get_mut(*s) {
                    *b += all;
                }
            }
            Err(_) => {}
        }
    }
    out
}

/// The file system holding `dir` (its id) and its free bytes, if `dir` is the data directory
/// of the server on `port` (its `postmaster.pid` says so) and can be read from here.
fn disk_of(dir: &str, port: u16) -> Option<(u64, u64)> {
    let pid = std::fs::read_to_string(std::path::Path::new(dir).join("postmaster.pid")).ok()?;
    if pid.lines().nth(3)?.trim() != port.to_string() {
        return None;
    }
    let path = std::ffi::CString::new(dir).ok()?;
    // SAFETY: a zeroed statvfs is a valid out-parameter; `path` is a NUL-terminated string
    // that outlives the call.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(path.as_ptr(), &mut st) };
    (rc == 0).then(|| (st.f_fsid as u64, st.f_bavail as u64 * st.f_frsize as u64))
}

fn local(host: &str) -> bool {
    matches!(host, "127.0.0.1" | "localhost" | "::1") || host.starts_with('/')
}

/// One file system's verdict: `need` bytes for `shards` against `free`. A resumed reshard's
/// copied tables are already there (and no longer free): never refused then.
fn judge(c: &mut Check, shards: &str, need: u64, free: u64, resumed: bool) {
    let (n, f) = (bytes(need), bytes(free));
    if need > free && !resumed {
        c.refuse(format!(
            "{shards}: the copy writes about {n} and {f} are free: free space or add shards"
        ));
    } else if need > free {
        c.warn(format!(
            "{shards}: the copy writes at most {n} and {f} are free (resumed: what it copied \
             already is counted in both)"
        ));
    } else if need as f64 > TIGHT * free as f64 {
        c.warn(format!(
            "{shards}: the copy writes about {n} of the {f} free, and WAL comes on top"
        ));
    } else {
        c.ok(format!("{shards}: about {n} to write, {f} free"));
    }
}

/// `resumed`: the reshard's slot exists (an earlier run copied some tables).
pub(super) async fn check(probes: &[Probe], needs: &[u64], resumed: bool) -> Check {
    let mut c = Check::new("free space");
    // By file system: the free bytes, the bytes to write, the shards.
    let mut disks: BTreeMap<u64, (u64, u64, Vec<String>)> = BTreeMap::new();
    for p in probes {
        let Place::Destination(shard) = p.place else {
            continue;
        };
        let need = needs.get(shard).copied().unwrap_or(0);
        let at = format!("{} (destination shard {shard})", p.target.addr());
        let dir = p.found.as_ref().ok().and_then(|f| f.data_directory.clone());
        let disk = match dir.filter(|_| local(&p.target.host)) {
            Some(dir) => {
                let port = p.target.port;
                let read = tokio::task::spawn_blocking(move || disk_of(&dir, port));
                tokio::time::timeout(STATVFS_TIMEOUT, read)
                    .await
                    .ok()
                    .and_then(|r| r.ok())
                    .flatten()
            }
            None => None,
        };
        match disk {
            Some((fsid, free)) => {
                let entry = disks.entry(fsid).or_insert((free, 0, Vec::new()));
                entry.1 += need;
                entry.2.push(at);
            }
            None => c.ok(format!(
                "{at}: about {} to write (its free space cannot be read from here)",
                bytes(need)
            )),
        }
    }
    for (free, need, shards) in disks.into_values() {
        judge(&mut c, &shards.join(" and "), need, free, resumed);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reshard::preflight::Verdict;

    #[test]
    fn a_data_directory_is_read_only_when_it_is_the_servers() {
        let dir = std::env::temp_dir().join(format!("pgdog-space-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let d = dir.to_str().unwrap();
        assert!(disk_of(d, 5432).is_none(), "no postmaster.pid");
        std::fs::write(dir.join("postmaster.pid"), "1\n/data\n1700000000\n5432\n").unwrap();
        assert!(disk_of(d, 5433).is_none(), "another server's directory");
        let (_, free) = disk_of(d, 5432).unwrap();
        assert!(free > 0);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(local("127.0.0.1") && local("/tmp") && !local("db.example.com"));
    }

    #[test]
    fn more_than_the_free_space_is_refused_unless_resumed() {
        let verdict = |need: u64, free: u64, resumed: bool| {
            let mut c = Check::new("free space");
            judge(&mut c, "a", need, free, resumed);
            (c.verdict(), c.detail())
        };
        assert_eq!(verdict(10, 100, false).0, Verdict::Ok);
        assert_eq!(verdict(90, 100, false).0, Verdict::Warning);
        let (v, d) = verdict(200, 100, false);
        assert_eq!(v, Verdict::Refused);
        assert!(d.contains("are free"), "{d}");
        assert_eq!(verdict(200, 100, true).0, Verdict::Warning);
    }
}
