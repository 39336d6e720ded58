//! The bytes the copy writes to each destination shard against its free space, where that can
//! be known: a destination on this machine whose user may read `data_directory` (the free space
//! of its file system, `statvfs`). Elsewhere the estimate is given alone.
use super::servers::{Place, Probe};
use super::tables::{Placed, Tables};
use super::Check;
use crate::reshard::copy::Destination;

/// Over this share of the free space, a warning.
const TIGHT: f64 = 0.8;

/// Bytes each destination shard receives: a split table's bytes (summed over the source
/// shards, with indexes) spread evenly, a table copied whole in full, a sharded schema's table
/// on its shard.
pub(super) fn estimate(placed: &Placed<'_>, tables: &Tables, shards: usize) -> Vec<u64> {
    let shards = shards.max(1);
    let mut out = vec![0u64; shards];
    for (t, d) in placed {
        let bytes = tables.sizes.get(&t.name).copied().unwrap_or(0);
        match d {
            Ok(Destination::ByKey(..)) => out.iter_mut().for_each(|b| *b += bytes / shards as u64),
            Ok(Destination::Everywhere) => out.iter_mut().for_each(|b| *b += bytes),
            Ok(Destination::OneShard(s)) => {
                if let Some(b) = out.get_mut(*s) {
                    *b += bytes;
                }
            }
            Err(_) => {}
        }
    }
    out
}

/// The free bytes of the file system holding `dir`, if it can be read from here.
fn free_bytes(dir: &str) -> Option<u64> {
    let path = std::ffi::CString::new(dir).ok()?;
    // SAFETY: a zeroed statvfs is a valid out-parameter; `path` is a NUL-terminated string
    // that outlives the call.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(path.as_ptr(), &mut st) };
    (rc == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

fn local(host: &str) -> bool {
    matches!(host, "127.0.0.1" | "localhost" | "::1") || host.starts_with('/')
}

pub(super) fn check(probes: &[Probe], needs: &[u64]) -> Check {
    let mut c = Check::new("free space");
    for p in probes {
        let Place::Destination(shard) = p.place else {
            continue;
        };
        let need = needs.get(shard).copied().unwrap_or(0);
        let dir = p.found.as_ref().ok().and_then(|f| f.data_directory.clone());
        let free = dir
            .as_deref()
            .filter(|_| local(&p.target.host))
            .and_then(free_bytes);
        let at = format!("{} (destination shard {shard})", p.target.addr());
        match free {
            Some(free) if need > free => c.refuse(format!(
                "{at}: the copy writes about {} and {} are free: free space or add shards",
                crate::reshard::display::bytes(need),
                crate::reshard::display::bytes(free)
            )),
            Some(free) if need as f64 > TIGHT * free as f64 => c.warn(format!(
                "{at}: the copy writes about {} of the {} free, and WAL comes on top",
                crate::reshard::display::bytes(need),
                crate::reshard::display::bytes(free)
            )),
            Some(free) => c.ok(format!(
                "{at}: about {} to write, {} free",
                crate::reshard::display::bytes(need),
                crate::reshard::display::bytes(free)
            )),
            None => c.ok(format!(
                "{at}: about {} to write (its free space cannot be read from here)",
                crate::reshard::display::bytes(need)
            )),
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_system_of_a_directory_has_free_space() {
        assert!(free_bytes("/").is_some_and(|b| b > 0));
        assert!(free_bytes("/no/such/dir").is_none());
        assert!(local("127.0.0.1") && local("/tmp") && !local("db.example.com"));
    }

    fn destination(host: &str, dir: Option<&str>) -> Probe {
        Probe {
            place: Place::Destination(0),
            target: crate::backend::server::ServerTarget {
                host: host.into(),
                port: 5432,
                database: "db".into(),
                user: "postgres".into(),
                password: None,
                pass_through: None,
            },
            found: Ok(super::super::servers::Found {
                data_directory: dir.map(String::from),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn more_than_the_free_space_is_refused() {
        use super::super::Verdict;
        let here = [destination("127.0.0.1", Some("/"))];
        assert_eq!(check(&here, &[1]).verdict(), Verdict::Ok);
        let free = free_bytes("/").unwrap();
        assert_eq!(check(&here, &[free / 10 * 9]).verdict(), Verdict::Warning);
        let c = check(&here, &[free * 2]);
        assert_eq!(c.verdict(), Verdict::Refused);
        assert!(c.detail().contains("are free"), "{}", c.detail());
        // Elsewhere, or a directory the user may not read: the estimate alone.
        let remote = [destination("db.example.com", Some("/"))];
        let c = check(&remote, &[free * 2]);
        assert_eq!(c.verdict(), Verdict::Ok);
        assert!(c.detail().contains("cannot be read"), "{}", c.detail());
        assert_eq!(
            check(&[destination("127.0.0.1", None)], &[free * 2]).verdict(),
            Verdict::Ok
        );
    }
}
