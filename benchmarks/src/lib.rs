//! Shared helpers for the benchmark harnesses: timing with interleaved repetitions and
//! Markdown tables.
use std::time::{Duration, Instant};

/// Median time per call of `f`, measured in `rounds` batches of about `batch` each, after a
/// warm-up. Batches of different candidates are meant to be interleaved by the caller.
pub fn time_per_call(batch: Duration, mut f: impl FnMut()) -> Duration {
    // Calibrate the number of calls per batch.
    let mut n = 1u64;
    loop {
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        if t.elapsed() >= batch / 4 || n > 1 << 30 {
            let per = t.elapsed() / n as u32;
            let calls = (batch.as_nanos() / per.as_nanos().max(1)).max(1) as u64;
            let t = Instant::now();
            for _ in 0..calls {
                f();
            }
            return t.elapsed() / calls as u32;
        }
        n *= 2;
    }
}

/// Median of samples.
pub fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A Markdown table.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = format!(
        "| {} |\n|{}\n",
        header.join(" | "),
        "---|".repeat(header.len())
    );
    for r in rows {
        s.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    s
}
