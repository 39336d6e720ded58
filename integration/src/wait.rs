//! Awaiting a condition under a deadline, instead of sleeping and hoping.
use crate::{Error, Result};
use std::time::{Duration, Instant};

/// Polls `check` every `interval` until it returns `Ok(true)`, an error, or `timeout` passes.
pub fn wait_until(
    what: &str,
    timeout: Duration,
    interval: Duration,
    mut check: impl FnMut() -> Result<bool>,
) -> Result<()> {
    let start = Instant::now();
    loop {
        if check()? {
            return Ok(());
        }
        if start.elapsed() >= timeout {
            return Err(Error::Timeout {
                what: what.to_string(),
                seconds: start.elapsed().as_secs_f64(),
            });
        }
        std::thread::sleep(interval);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_when_true_and_times_out_when_never() {
        let mut n = 0;
        wait_until(
            "n to reach 3",
            Duration::from_secs(5),
            Duration::ZERO,
            || {
                n += 1;
                Ok(n == 3)
            },
        )
        .unwrap();
        assert_eq!(n, 3);
        let err = wait_until(
            "never",
            Duration::from_millis(20),
            Duration::from_millis(5),
            || Ok(false),
        )
        .unwrap_err();
        assert!(matches!(err, Error::Timeout { .. }), "{err}");
    }
}
