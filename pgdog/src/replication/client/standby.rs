//! Logical slots on a streaming standby (PostgreSQL 16+).
//!
//! Creating a logical slot on a standby waits for a running-xacts record from the primary,
//! which an idle primary writes rarely (tens of seconds). While the create waits, the primary
//! is nudged with `SELECT pg_log_standby_snapshot()` every [`NUDGE_INTERVAL`]. At the deadline
//! the create is really cancelled (a CancelRequest with the replication connection's key): a
//! client-side timeout alone would leave the backend waiting and creating the slot later.
use super::{
    read_rows, send_cancel, CreatedSlot, ReplicationClient, ReplicationError, Result, SlotOptions,
};
use crate::backend::{Server, ServerTarget};
use std::time::Duration;

/// How often the primary is nudged while a create waits.
pub const NUDGE_INTERVAL: Duration = Duration::from_millis(50);

/// How long to wait for the cancelled create to report back after the CancelRequest.
const CANCEL_GRACE: Duration = Duration::from_secs(10);

impl ReplicationClient {
    /// CREATE_REPLICATION_SLOT on this (standby) connection while `primary` is nudged with
    /// `pg_log_standby_snapshot()`. Gives up after `deadline`: the create is cancelled on the
    /// server and [`ReplicationError::SlotTimeout`] returned. Works on a primary too (the nudge
    /// is then merely redundant).
    pub async fn create_slot_on_standby(
        &mut self,
        slot: &SlotOptions,
        primary: &ServerTarget,
        deadline: Duration,
    ) -> Result<CreatedSlot> {
        let command = slot.command()?;
        let mut nudger =
            Server::connect(primary, deadline)
                .await
                .map_err(|source| ReplicationError::Nudge {
                    addr: primary.addr(),
                    source: Box::new(source),
                })?;
        let key = self.cancel_key();
        let addr = self.addr().to_string();
        self.send(&command).await?;

        let mut failure: Option<ReplicationError> = None;
        let result = {
            let reply = read_rows(&mut self.server);
            tokio::pin!(reply);
            let mut tick = tokio::time::interval(NUDGE_INTERVAL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let timer = tokio::time::sleep(deadline);
            tokio::pin!(timer);
            loop {
                tokio::select! {
                    rows = &mut reply => break rows,
                    _ = tick.tick(), if failure.is_none() => {
                        let nudge = nudger.execute("SELECT pg_log_standby_snapshot()").await;
                        if let Err(source) = nudge {
                            // Without nudges the create may wait for minutes: cancel it too.
                            failure = Some(ReplicationError::Nudge {
                                addr: primary.addr(),
                                source: Box::new(source),
                            });
                            send_cancel(&key).await?;
                            timer.as_mut().reset(tokio::time::Instant::now() + CANCEL_GRACE);
                        }
                    }
                    _ = &mut timer => {
                        if let Some(failure) = failure.take() {
                            // The cancelled create did not answer within the grace period.
                            return Err(failure);
                        }
                        tracing::warn!("{addr}: creating slot {} timed out, cancelling", slot.name);
                        failure = Some(ReplicationError::SlotTimeout {
                            slot: slot.name.clone(),
                            addr: addr.clone(),
                            seconds: deadline.as_secs_f64(),
                        });
                        send_cancel(&key).await?;
                        timer.as_mut().reset(tokio::time::Instant::now() + CANCEL_GRACE);
                    }
                }
            }
        };
        nudger.terminate().await;
        match (result, failure) {
            // A create that finished as the cancel arrived: the slot exists, use it.
            (Ok(rows), _) => self.created_slot(&command, rows),
            (Err(_), Some(failure)) => Err(failure),
            (Err(source), None) => Err(ReplicationError::Command {
                command,
                addr,
                source: Box::new(source),
            }),
        }
    }
}
