//! One client's lane to a mirror's destination: a connection pgdog makes to itself (loopback
//! TCP), logged in as the client's user to the destination database, on which the client's
//! transactions are written in order as the client sent them; the answers are read and only
//! counted. The session on the other end is started by the function the tap was given (the
//! frontend's), so the destination's router, pools and prepared statements serve the replay.
use super::Mirror;
use crate::net::codec::MessageReader;
use crate::net::message;
use crate::net::tag::backend;
use bytes::Bytes;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// Starts the session serving one end of a lane: (socket, user, database).
pub type ServeFn = fn(TcpStream, String, String) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// One transaction to replay.
#[derive(Debug, Clone)]
pub struct Job {
    pub bytes: Bytes,
    /// ReadyForQuery answers it gets (its Query and Sync messages).
    pub requests: usize,
    pub source_failed: bool,
    pub source_us: u64,
}

pub struct Lane {
    tx: mpsc::UnboundedSender<Job>,
}

impl Lane {
    /// Starts the lane of `user` to `mirror`'s destination (its task ends when the lane is
    /// dropped and its queue is done).
    pub fn start(mirror: Arc<Mirror>, user: String, serve: ServeFn) -> Lane {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(mirror, user, serve, rx));
        Lane { tx }
    }

    /// Queues a transaction (false: the lane's task is gone).
    pub fn send(&self, job: Job) -> bool {
        self.tx.send(job).is_ok()
    }
}

/// How long the lane waits for its session's greeting or one transaction's answers: a
/// destination slower than this stops the client's lane (its connection closed, so nothing
/// stays open there).
const REPLAY_TIMEOUT: Duration = Duration::from_secs(60);

struct Conn {
    stream: TcpStream,
    reader: MessageReader,
}

impl Conn {
    async fn open(mirror: &Mirror, user: String, serve: ServeFn) -> Result<Conn, String> {
        let io = |e: std::io::Error| format!("loopback connection: {e}");
        let listener = TcpListener::bind("127.0.0.1:0").await.map_err(io)?;
        let addr = listener.local_addr().map_err(io)?;
        let ours = TcpStream::connect(addr).await.map_err(io)?;
        let me = ours.local_addr().map_err(io)?;
        // Only our own connection gets the session (no login is asked on that end): another
        // local process connecting to the port first is turned away.
        let theirs = loop {
            let (theirs, peer) = listener.accept().await.map_err(io)?;
            if peer == me {
                break theirs;
            }
            drop(theirs);
        };
        let _ = ours.set_nodelay(true);
        tokio::spawn(serve(theirs, user, mirror.config.destination_db.clone()));
        let mut conn = Conn {
            stream: ours,
            reader: MessageReader::new(crate::config::active().max_message_size),
        };
        match tokio::time::timeout(REPLAY_TIMEOUT, conn.answers(1)).await {
            Ok(Ok(None)) => Ok(conn),
            Ok(Ok(Some(e))) => Err(format!("the destination refused the login: {e}")),
            Ok(Err(e)) => Err(e),
            Err(_) => Err("the destination did not answer the login".into()),
        }
    }

    /// Reads answers until `n` ReadyForQuery; the first error, if any.
    async fn answers(&mut self, n: usize) -> Result<Option<String>, String> {
        let mut failed = None;
        let mut ready = 0;
        while ready < n {
            let m = self
                .reader
                .next(&mut self.stream)
                .await
                .map_err(|e| format!("reading the destination's answer: {e}"))?;
            match m.tag() {
                backend::READY_FOR_QUERY => ready += 1,
                backend::ERROR_RESPONSE if failed.is_none() => {
                    failed =
                        Some(message::read_error(&m).map_or_else(
                            |e| e.to_string(),
                            |f| format!("{} ({})", f.message, f.code),
                        ));
                }
                _ => {}
            }
        }
        Ok(failed)
    }

    /// Replays one transaction; the destination's first error, if any.
    async fn replay(&mut self, job: &Job) -> Result<Option<String>, String> {
        let work = async {
            self.stream
                .write_all(&job.bytes)
                .await
                .map_err(|e| format!("writing to the destination: {e}"))?;
            self.answers(job.requests).await
        };
        tokio::time::timeout(REPLAY_TIMEOUT, work)
            .await
            .map_err(|_| format!("no answer within {} s", REPLAY_TIMEOUT.as_secs()))?
    }
}

async fn run(
    mirror: Arc<Mirror>,
    user: String,
    serve: ServeFn,
    mut rx: mpsc::UnboundedReceiver<Job>,
) {
    let mut conn = match Conn::open(&mirror, user.clone(), serve).await {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::warn!(
                "mirror {} -> {} ({user}): {e}",
                mirror.config.source_db,
                mirror.config.destination_db
            );
            mirror.errors.fetch_add(1, Relaxed);
            None
        }
    };
    while let Some(job) = rx.recv().await {
        replay(&mirror, &user, &mut conn, &job).await;
        // Counted in the queue until done: an empty queue means the destination has it all.
        mirror.dequeued();
    }
    if let Some(mut c) = conn {
        let _ = c.stream.write_all(message::terminate().bytes()).await;
    }
}

/// One transaction on the lane's connection (dropped once the lane has stopped).
async fn replay(mirror: &Mirror, user: &str, conn: &mut Option<Conn>, job: &Job) {
    let Some(c) = conn.as_mut() else {
        mirror.dropped.fetch_add(1, Relaxed);
        return;
    };
    let start = Instant::now();
    let failure = match c.replay(job).await {
        Ok(Some(e)) if !job.source_failed => {
            // Failed here but not on the source: what follows could depend on it.
            format!("the destination failed a transaction the source did not: {e}")
        }
        Ok(_) => {
            mirror.mirrored.fetch_add(1, Relaxed);
            mirror.source_us.fetch_add(job.source_us, Relaxed);
            let took = start.elapsed().as_micros() as u64;
            mirror.destination_us.fetch_add(took, Relaxed);
            return;
        }
        Err(e) => e,
    };
    tracing::info!(
        "mirror {} -> {} ({user}): {failure}; this client's lane stops",
        mirror.config.source_db,
        mirror.config.destination_db
    );
    mirror.errors.fetch_add(1, Relaxed);
    *conn = None;
}
