//! Operating a running proxy: the HTTP endpoint (`/metrics` in OpenMetrics text, `/health` for
//! load balancers) and graceful shutdown (SIGTERM, SIGINT, the admin database's SHUTDOWN).
pub mod http;
pub mod openmetrics;
pub mod sequences;
pub mod shutdown;
