//! pgdog as a drop-in endpoint: psql and tokio-postgres through it, on real PostgreSQL 18.
use crate::common;
use common::*;

#[test]
fn psql_simple_and_multi_statement_queries() {
    let (_topo, proxy) = pgdog("", 2);
    assert_eq!(proxy.psql(USER, PASSWORD, DB, "SELECT 1").unwrap(), "1");
    assert_eq!(
        proxy
            .psql(USER, PASSWORD, DB, "SELECT 1; SELECT 'two'")
            .unwrap(),
        "1\ntwo"
    );
    let err = proxy
        .psql(USER, PASSWORD, DB, "SELECT * FROM missing_table")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("relation \"missing_table\" does not exist"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_postgres_queries_and_prepared_statements() {
    let (_topo, proxy) = pgdog("", 2);
    let client = connect(&proxy).await;
    let row = client
        .query_one("SELECT $1::int + 1", &[&41i32])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i32>(0), 42);
    let stmt = client.prepare("SELECT $1::text || '!'").await.unwrap();
    for i in 0..20 {
        let row = client
            .query_one(&stmt, &[&format!("hi {i}")])
            .await
            .unwrap();
        assert_eq!(row.get::<_, String>(0), format!("hi {i}!"));
    }
}
