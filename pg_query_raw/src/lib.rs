//! pg_query_raw: libpg_query's C parse tree converted straight into Rust, without Protobuf.
use pg_query as _;
