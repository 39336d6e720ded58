//! The memory of cross-shard merges, counted in bytes: each statement's [`Budget`] against
//! `merge_work_mem` (past it the merge spills to temporary files), and the sum over all
//! statements in flight against `merge_memory_limit` (past it every merge spills as soon as it
//! can, and growth that cannot spill is refused with 53200). The counts are estimates of what
//! the merge keeps (values, keys and per-entry overhead), not allocator figures.
use super::error::MergeError;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes held by every merge in flight.
static IN_FLIGHT: AtomicU64 = AtomicU64::new(0);
/// The most `IN_FLIGHT` has been.
static PEAK: AtomicU64 = AtomicU64::new(0);
pub(super) static SPILLED_BYTES: AtomicU64 = AtomicU64::new(0);
pub(super) static SPILL_FILES: AtomicU64 = AtomicU64::new(0);
static REFUSED: AtomicU64 = AtomicU64::new(0);

/// Process-wide merge memory figures (metrics and the admin database).
#[derive(Debug, Clone, Copy, Default)]
pub struct MergeStats {
    /// Bytes the merges in flight hold now.
    pub in_flight: u64,
    /// The most they held at once since the start.
    pub peak: u64,
    /// Bytes written to temporary files.
    pub spilled_bytes: u64,
    /// Temporary files created.
    pub spill_files: u64,
    /// Statements refused with 53200 (merge_memory_limit).
    pub refused: u64,
}

pub fn stats() -> MergeStats {
    MergeStats {
        in_flight: IN_FLIGHT.load(Ordering::Relaxed),
        peak: PEAK.load(Ordering::Relaxed),
        spilled_bytes: SPILLED_BYTES.load(Ordering::Relaxed),
        spill_files: SPILL_FILES.load(Ordering::Relaxed),
        refused: REFUSED.load(Ordering::Relaxed),
    }
}

/// The limits a merge runs under (`merge_work_mem`, `merge_memory_limit`, `temp_directory`).
#[derive(Debug, Clone)]
pub struct MemoryLimits {
    pub work_mem: u64,
    pub process_limit: u64,
    pub temp_dir: PathBuf,
}

impl Default for MemoryLimits {
    fn default() -> MemoryLimits {
        MemoryLimits {
            work_mem: 64 << 20,
            process_limit: 1 << 30,
            temp_dir: std::env::temp_dir(),
        }
    }
}

impl MemoryLimits {
    /// The limits of the settings in force.
    pub fn active() -> MemoryLimits {
        let g = crate::config::active();
        MemoryLimits {
            work_mem: g.merge_work_mem.bytes(),
            process_limit: g.merge_memory_limit.bytes(),
            temp_dir: g.temp_directory.clone().unwrap_or_else(std::env::temp_dir),
        }
    }
}

/// One statement's merge memory. Dropping it gives its bytes back.
#[derive(Debug)]
pub struct Budget {
    used: u64,
    pub(super) limits: MemoryLimits,
}

impl Budget {
    pub fn new(limits: MemoryLimits) -> Budget {
        Budget { used: 0, limits }
    }

    /// Counts `n` more bytes the merge may give up by spilling.
    pub fn charge(&mut self, n: u64) {
        self.used += n;
        let now = IN_FLIGHT.fetch_add(n, Ordering::Relaxed) + n;
        PEAK.fetch_max(now, Ordering::Relaxed);
    }

    /// Counts `n` more bytes that cannot be spilled: refused (53200) when all merges together
    /// would pass `merge_memory_limit`.
    pub fn charge_fixed(&mut self, n: u64) -> Result<(), MergeError> {
        let now = IN_FLIGHT.load(Ordering::Relaxed);
        if now + n > self.limits.process_limit {
            REFUSED.fetch_add(1, Ordering::Relaxed);
            return Err(MergeError::OutOfMemory {
                limit: crate::config::Size(self.limits.process_limit).to_string(),
            });
        }
        self.charge(n);
        Ok(())
    }

    /// Gives `n` bytes back (a part was spilled or sent).
    pub fn release(&mut self, n: u64) {
        let n = n.min(self.used);
        self.used -= n;
        IN_FLIGHT.fetch_sub(n, Ordering::Relaxed);
    }

    /// Bytes this statement holds.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// Whether the merge should spill instead of growing: past its own `merge_work_mem`, or
    /// all merges together past `merge_memory_limit` while this one holds at least an eighth
    /// of its own limit (so a merge holding little is not made to spill row by row).
    pub fn full(&self) -> bool {
        self.used > self.limits.work_mem
            || (self.used > self.limits.work_mem / 8
                && IN_FLIGHT.load(Ordering::Relaxed) > self.limits.process_limit)
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(self.used, Ordering::Relaxed);
    }
}

/// Bytes a row of these values is counted for: the values plus per-value and per-entry
/// overhead (vector, hash-table slot, allocation headers).
pub fn row_bytes<'a>(values: impl Iterator<Item = Option<&'a [u8]>>) -> u64 {
    64 + values
        .map(|v| 24 + v.map_or(0, |v| v.len() as u64))
        .sum::<u64>()
}
