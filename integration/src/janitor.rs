//! Cleans what runs that were killed (`kill -9`, a CI timeout) left behind: servers still running
//! and their folders. A run is `runs/<pid>-<n>/` guarded by `runs/<pid>-<n>.lock`; when that lock
//! can be taken and process `<pid>` is gone, the run is dead.
use crate::error::{IoContext, Result};
use crate::lock::{process_alive, try_lock};
use std::path::Path;
use std::time::{Duration, Instant};

/// Stops the servers of dead runs under `base` and removes their folders. Returns how many runs
/// it cleaned.
pub fn sweep(base: &Path) -> Result<usize> {
    let runs = base.join("runs");
    let mut cleaned = 0;
    let entries = std::fs::read_dir(&runs).context(|| format!("listing {}", runs.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("lock") {
            continue;
        }
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let pid: i32 = stem
            .split('-')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        if process_alive(pid) {
            continue;
        }
        let Some(_lock) = try_lock(&path)? else {
            continue;
        };
        let dir = runs.join(stem);
        kill_servers(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_file(&path);
        cleaned += 1;
    }
    Ok(cleaned)
}

/// Immediate shutdown (SIGQUIT) of every postmaster whose data folder sits under `dir`, then
/// SIGKILL for any that has not exited within a few seconds.
pub fn kill_servers(dir: &Path) {
    let mut pids = Vec::new();
    if let Ok(nodes) = std::fs::read_dir(dir) {
        for node in nodes.flatten() {
            let pidfile = node.path().join("data").join("postmaster.pid");
            let Ok(text) = std::fs::read_to_string(&pidfile) else {
                continue;
            };
            let Some(pid) = text
                .lines()
                .next()
                .and_then(|l| l.trim().parse::<i32>().ok())
            else {
                continue;
            };
            // Only signal a process that is really a postgres (the pid may have been reused).
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmdline).contains("postgres") {
                // SAFETY: sending a signal to a pid we just checked.
                unsafe { libc::kill(pid, libc::SIGQUIT) };
                pids.push(pid);
            }
        }
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|p| process_alive(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    for pid in pids.into_iter().filter(|p| process_alive(*p)) {
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}
