//! Real PostgreSQL 18 test topologies for pgdog's tests, benchmarks and demo.
//!
//! A [`Topology`] is a guard: it starts servers on 127.0.0.1 with unique ports and a data folder of
//! its own (on tmpfs when it has room), and stops them and removes the folder when dropped, also
//! when a test panics (then it prints the server logs first). Leftovers of a run that was killed
//! are cleaned by the next one ([`janitor`]). Shell scripts use the same code through the
//! `pgdog-topology` binary.
//!
//! This crate owns test infrastructure only: it never talks the wire protocol itself (SQL goes
//! through the install's `psql`), so it cannot hide a bug in pgdog's protocol code.

pub mod error;
pub mod install;
pub mod janitor;
pub mod lock;
pub mod node;
pub mod proxy;
pub mod runtime;
pub mod topology;
pub mod wait;

pub use error::{Error, Result};
pub use install::Install;
pub use node::Node;
pub use proxy::Proxy;
pub use runtime::runtime;
pub use topology::{Kind, Topology};
pub use wait::wait_until;
