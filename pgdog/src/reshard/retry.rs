//! A reshard outlives server failures: when a server of the move is unreachable, restarting
//! or shutting down, or closes a connection mid-copy or mid-replay, the copy and the replay are
//! run again after a pause (0.5 s doubling to 10 s) for up to `[resharding] retry_timeout`.
//! The engine resumes from what the servers hold: finished table copies are not copied again
//! (their watermark rows), an unfinished one rolled back with its connections, the permanent
//! slot is kept, and the replay starts from its stored position. Any other failure (a refusal,
//! a diverged destination, a bug) ends the reshard at once.
use crate::backend::server::ServerError;
use crate::reshard::orchestrate::{Control, ReshardError, Step};
use std::error::Error;
use std::time::{Duration, Instant};

const FIRST_PAUSE: Duration = Duration::from_millis(500);
const LONGEST_PAUSE: Duration = Duration::from_secs(10);
/// An attempt that ran this long made progress: the next failure starts a new run of retries.
const PROGRESS_AFTER: Duration = Duration::from_secs(30);

/// Whether `e` says a server of the move failed (rather than refusing what was asked): one of
/// its causes is a server error that [`ServerError::is_unavailable`] counts, or a connection's
/// I/O error (not, say, a missing pg_dump).
pub fn server_failure(e: &(dyn Error + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(err) = next {
        let server = err
            .downcast_ref::<ServerError>()
            .or_else(|| err.downcast_ref::<Box<ServerError>>().map(|b| &**b));
        let connection = err.downcast_ref::<std::io::Error>().is_some_and(|io| {
            use std::io::ErrorKind::*;
            matches!(
                io.kind(),
                ConnectionRefused
                    | ConnectionReset
                    | ConnectionAborted
                    | NotConnected
                    | BrokenPipe
                    | UnexpectedEof
                    | TimedOut
            )
        });
        if server.is_some_and(ServerError::is_unavailable) || connection {
            return true;
        }
        next = err.source();
    }
    false
}

/// The retries of one reshard.
pub struct Retry {
    limit: Duration,
    pause: Duration,
    /// When the current run of failures began, and when the current attempt started.
    since: Option<Instant>,
    attempt_started: Instant,
    pub attempts: u32,
}

impl Retry {
    /// `limit`: how long a run of failures may last (0: no retry).
    pub fn new(limit: Duration) -> Retry {
        Retry {
            limit,
            pause: FIRST_PAUSE,
            since: None,
            attempt_started: Instant::now(),
            attempts: 0,
        }
    }

    /// After attempt failed with `e`: waits before the next one, or gives `e` back when it is
    /// not a server failure, the run of failures outlasted the limit, or a stop came meanwhile.
    pub async fn after(&mut self, control: &Control, e: ReshardError) -> Result<(), ReshardError> {
        if matches!(e, ReshardError::Stopped(_)) || !server_failure(&e) {
            return Err(e);
        }
        let now = Instant::now();
        if now.duration_since(self.attempt_started) >= PROGRESS_AFTER {
            self.since = None;
            self.pause = FIRST_PAUSE;
        }
        let since = *self.since.get_or_insert(now);
        if now.duration_since(since) >= self.limit {
            return Err(e);
        }
        self.attempts += 1;
        let why = format!(
            "retry {} in {:.1} s (for up to {} s more) after: {e}",
            self.attempts,
            self.pause.as_secs_f64(),
            self.limit
                .saturating_sub(now.duration_since(since))
                .as_secs()
        );
        tracing::warn!("reshard: {why}");
        control.retries.lock().push(why.clone());
        let back_to = control.step();
        control.set_step(Step::Retrying(why));
        tokio::select! {
            _ = tokio::time::sleep(self.pause) => {}
            _ = control.stopped() => return Err(ReshardError::Stopped("a retry".into())),
        }
        control.set_step(back_to);
        self.pause = (self.pause * 2).min(LONGEST_PAUSE);
        self.attempt_started = Instant::now();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reshard::copy::{CopyDataError, ServerFailure};

    #[test]
    fn only_server_failures_are_retried() {
        let down = ServerError::ConnectTimeout("127.0.0.1:1".into());
        let copy = ReshardError::Copy(CopyDataError::Server(ServerFailure::wrap(
            "127.0.0.1:1",
            "COPY",
        )(down)));
        assert!(server_failure(&copy));
        let refused = ReshardError::Refused("table t has no primary key".into());
        assert!(!server_failure(&refused));
        let table = ReshardError::Copy(CopyDataError::Table {
            table: "t".into(),
            reason: "the source sent 2 rows but 1 were placed".into(),
        });
        assert!(!server_failure(&table));
        let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert!(!server_failure(&missing));
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        assert!(server_failure(&reset));
    }
}
