//! The tokio runtime the synchronous tests drive their clients and loads on.

/// A multi-thread runtime with 2 workers (the machines these tests run on have 2 cores).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}
