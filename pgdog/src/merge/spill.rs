//! Temporary files of merges past `merge_work_mem`: shard rows written as they came (shard
//! number and the DataRow message), read back in the same order. Partitions split the rows of
//! a grouping, DISTINCT or set operation by a hash of their key, so each part can be merged on
//! its own within the memory limit. A file is removed when it is dropped (the statement ended,
//! failed, or its client left); [`sweep`] removes what a killed pgdog left behind.
//!
//! Files are named `pgdog-merge-<pid>-<n>` under `temp_directory`. A write that fails gives
//! 53100 when the disk is full, 58030 otherwise; the statement fails and its files are removed.
use super::error::MergeError;
use super::memory::{SPILLED_BYTES, SPILL_FILES};
use crate::net::Message;
use bytes::{Bytes, BytesMut};
use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Partitions per spill (a part too large for memory is split again, with another hash).
pub const FANOUT: usize = 16;
/// Deepest re-split: past it a part is merged in memory whatever its size (only rows of very
/// few distinct keys get there, and they fold into few groups).
pub const MAX_DEPTH: u32 = 6;
const PREFIX: &str = "pgdog-merge-";

static NEXT: AtomicU64 = AtomicU64::new(0);
/// A random part of this process's file names: a pgdog restarted with the same pid (PID 1 in a
/// container) never meets a name of its previous life.
static NONCE: std::sync::LazyLock<u32> = std::sync::LazyLock::new(rand::random);

/// Removes the file when dropped.
#[derive(Debug)]
struct Named(PathBuf);

impl Drop for Named {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn io_error(e: std::io::Error, path: &Path) -> MergeError {
    MergeError::Spill {
        disk_full: e.raw_os_error() == Some(libc::ENOSPC) || e.raw_os_error() == Some(libc::EDQUOT),
        detail: format!("{}: {e}", path.display()),
    }
}

/// A temporary file being written.
#[derive(Debug)]
pub struct SpillFile {
    out: BufWriter<File>,
    name: Named,
    rows: u64,
}

impl SpillFile {
    pub fn create(dir: &Path) -> Result<SpillFile, MergeError> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{PREFIX}{}-{:08x}-{n}", std::process::id(), *NONCE));
        // Readable by pgdog's user only: the files hold query results.
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| io_error(e, &path))?;
        SPILL_FILES.fetch_add(1, Ordering::Relaxed);
        Ok(SpillFile {
            out: BufWriter::with_capacity(64 << 10, file),
            name: Named(path),
            rows: 0,
        })
    }

    /// Appends a message of `shard`.
    pub fn write(&mut self, shard: usize, m: &Message) -> Result<(), MergeError> {
        let bytes = m.bytes();
        let mut head = [0u8; 8];
        head[..4].copy_from_slice(&(shard as u32).to_le_bytes());
        head[4..].copy_from_slice(&(bytes.len() as u32).to_le_bytes());
        self.put(&head)
            .and_then(|()| self.put(bytes))
            .map_err(|e| io_error(e, &self.name.0))?;
        self.rows += 1;
        SPILLED_BYTES.fetch_add(8 + bytes.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn put(&mut self, data: &[u8]) -> std::io::Result<()> {
        fail::fail_point!("merge-spill-write", |_| Err(
            std::io::Error::from_raw_os_error(libc::ENOSPC)
        ));
        self.out.write_all(data)
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The rows written, from the first.
    pub fn reader(self) -> Result<SpillReader, MergeError> {
        let SpillFile { out, name, .. } = self;
        let mut file = out
            .into_inner()
            .map_err(|e| io_error(e.into_error(), &name.0))?;
        file.seek(SeekFrom::Start(0))
            .map_err(|e| io_error(e, &name.0))?;
        Ok(SpillReader {
            input: BufReader::with_capacity(64 << 10, file),
            name,
        })
    }
}

/// A temporary file being read back.
#[derive(Debug)]
pub struct SpillReader {
    input: BufReader<File>,
    name: Named,
}

impl SpillReader {
    /// The next (shard, message), `None` at the end.
    pub fn read(&mut self) -> Result<Option<(usize, Message)>, MergeError> {
        let mut head = [0u8; 8];
        match self.input.read_exact(&mut head) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(io_error(e, &self.name.0)),
        }
        let shard = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
        if len < 5 {
            return Err(MergeError::State("corrupt temporary file"));
        }
        let mut buf = BytesMut::zeroed(len);
        self.input
            .read_exact(&mut buf)
            .map_err(|e| io_error(e, &self.name.0))?;
        Ok(Some((shard, Message::from_bytes(Bytes::from(buf)))))
    }
}

/// Rows split by the hash of their key into [`FANOUT`] files (made when first needed).
#[derive(Debug)]
pub struct Partitions {
    pub depth: u32,
    files: Vec<Option<SpillFile>>,
    dir: PathBuf,
}

impl Partitions {
    pub fn new(dir: &Path, depth: u32) -> Partitions {
        Partitions {
            depth,
            files: (0..FANOUT).map(|_| None).collect(),
            dir: dir.to_path_buf(),
        }
    }

    /// Writes `m` of `shard` to the part of `hash`.
    pub fn write(&mut self, hash: u64, shard: usize, m: &Message) -> Result<(), MergeError> {
        let slot = &mut self.files[(hash % FANOUT as u64) as usize];
        if slot.is_none() {
            *slot = Some(SpillFile::create(&self.dir)?);
        }
        match slot {
            Some(f) => f.write(shard, m),
            None => Err(MergeError::State("spill partition")),
        }
    }

    /// The parts holding rows, to be read one at a time.
    pub fn into_parts(self) -> Vec<SpillFile> {
        self.files.into_iter().flatten().collect()
    }
}

/// Removes the temporary files of pgdog processes that are gone (killed while spilling). Run at
/// start, before this process spills: a file with its own pid is from an earlier pgdog too.
pub fn sweep(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        // SAFETY: kill with signal 0 only checks whether the process exists.
        let alive = pid as u32 != std::process::id()
            && (unsafe { libc::kill(pid, 0) } == 0
                || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM));
        if !alive {
            match std::fs::remove_file(entry.path()) {
                Ok(()) => tracing::info!(
                    "removed {}, a temporary file of a pgdog that is gone",
                    entry.path().display()
                ),
                Err(e) => tracing::warn!("could not remove {}: {e}", entry.path().display()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::rows::data_row;

    #[test]
    fn rows_come_back_in_order_and_the_file_goes() {
        let dir = std::env::temp_dir();
        let mut f = SpillFile::create(&dir).unwrap();
        let path = f.name.0.clone();
        for i in 0..1000u32 {
            let v = i.to_string();
            f.write(i as usize % 3, &data_row(&[Some(v.as_bytes()), None]))
                .unwrap();
        }
        assert_eq!(f.rows(), 1000);
        let mut r = f.reader().unwrap();
        for i in 0..1000u32 {
            let (shard, m) = r.read().unwrap().unwrap();
            assert_eq!(shard, i as usize % 3);
            let v = i.to_string();
            assert_eq!(m, data_row(&[Some(v.as_bytes()), None]));
        }
        assert!(r.read().unwrap().is_none());
        assert!(path.exists());
        drop(r);
        assert!(!path.exists());
    }

    #[test]
    fn sweep_removes_files_of_dead_processes_only() {
        let dir = std::env::temp_dir().join(format!("pgdog-sweep-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A pid that cannot exist (above pid_max's maximum).
        let dead = dir.join(format!("{PREFIX}{}-0-0", 1 << 23));
        // Its own pid: a leftover of an earlier process with the same pid.
        let mine = dir.join(format!("{PREFIX}{}-1-77", std::process::id()));
        // A live process (pid 1 always exists).
        let live = dir.join(format!("{PREFIX}1-2-3"));
        let other = dir.join("unrelated");
        for p in [&dead, &mine, &live, &other] {
            std::fs::write(p, b"x").unwrap();
        }
        sweep(&dir);
        assert!(!dead.exists());
        assert!(!mine.exists());
        assert!(live.exists());
        assert!(other.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
