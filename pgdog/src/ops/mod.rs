//! Operating a running proxy: the HTTP endpoint (`/metrics` in OpenMetrics text, `/health` for
//! load balancers), graceful shutdown (SIGTERM, SIGINT, the admin database's SHUTDOWN) and the
//! handover to another pgdog on the same port (zero-downtime restart: the transport; what is
//! handed over is taken by the function the binary passes in, `frontend::handover::take`). Never
//! imports `frontend/` or `admin/`: data flows from the sessions down, not back up.
pub mod handover;
pub mod http;
pub mod logging;
pub mod openmetrics;
pub mod sequences;
pub mod shutdown;
pub mod suspend;
