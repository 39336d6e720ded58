//! The rows of a simple query, for the test helper modules (`common`, `sharding_common`): a
//! failure panics with the SQL and the server's error (`sharding_common::err_text`).
use tokio_postgres::{Client, SimpleQueryMessage, SimpleQueryRow};

/// The data rows of `sql` sent with the simple protocol; panics when it fails.
pub async fn simple_rows(client: &Client, sql: &str) -> Vec<SimpleQueryRow> {
    let msgs = client
        .simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {}", crate::sharding_common::err_text(&e)));
    msgs.into_iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(r),
            _ => None,
        })
        .collect()
}
