//! Schema-based sharding on 2 real shards: `[[sharded_schemas]]` maps tenant_a to shard 0 and
//! tenant_b to shard 1. DDL on a schema (CREATE SCHEMA, CREATE TABLE, DROP) reaches only its
//! shard; reads and writes go by qualified names or the client's `search_path`; a statement
//! naming schemas on both shards, or an unlisted schema without a default entry, is refused with
//! 0A000; with a default entry an unlisted schema lands on the default shard.
use crate::sharding_common;
use sharding_common::*;
use topology::Topology;

const SCHEMAS: &str = "[[sharded_schemas]]\ndatabase = \"app\"\nname = \"tenant_a\"\nshard = 0\n\n\
[[sharded_schemas]]\ndatabase = \"app\"\nname = \"tenant_b\"\nshard = 1\n";

async fn count(c: &tokio_postgres::Client, sql: &str) -> i64 {
    c.query_one(sql, &[]).await.expect(sql).get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemas_route_to_their_shards() {
    let topo = Topology::shards(2).expect("topology");
    let proxy = start_proxy(&topo, "", SCHEMAS);
    let c = connect_proxy(&proxy).await;
    let mut direct = Vec::new();
    for node in topo.nodes() {
        direct.push(connect_port(node.port).await);
    }
    for t in ["tenant_a", "tenant_b"] {
        c.batch_execute(&format!(
            "CREATE SCHEMA {t}; CREATE TABLE {t}.items (id int PRIMARY KEY, v text)"
        ))
        .await
        .expect("ddl");
    }
    // Each schema exists on its shard only.
    for (k, d) in direct.iter().enumerate() {
        let mine = ["tenant_a", "tenant_b"][k];
        let other = ["tenant_a", "tenant_b"][1 - k];
        let has = |s: &str| format!("SELECT count(*) FROM pg_namespace WHERE nspname = '{s}'");
        assert_eq!(count(d, &has(mine)).await, 1, "shard {k} lacks {mine}");
        assert_eq!(count(d, &has(other)).await, 0, "shard {k} has {other}");
    }
    c.batch_execute("INSERT INTO tenant_a.items VALUES (1, 'a1'), (2, 'a2'); INSERT INTO tenant_b.items VALUES (1, 'b1')")
        .await
        .expect("qualified inserts");
    // search_path routes unqualified names.
    c.batch_execute("SET search_path TO tenant_b, public; INSERT INTO items VALUES (2, 'b2')")
        .await
        .expect("search_path insert");
    assert_eq!(count(&c, "SELECT count(*) FROM items").await, 2);
    assert_eq!(
        count(&direct[1], "SELECT count(*) FROM tenant_b.items").await,
        2
    );
    assert_eq!(
        count(&direct[0], "SELECT count(*) FROM tenant_a.items").await,
        2
    );
    // Extended protocol, qualified name while search_path points elsewhere.
    let row = c
        .query_one("SELECT v FROM tenant_a.items WHERE id = $1", &[&2i32])
        .await
        .expect("prepared read");
    assert_eq!(row.get::<_, String>(0), "a2");
    // Both shards in one statement, an unlisted schema: refused.
    for sql in [
        "SELECT * FROM tenant_a.items a JOIN tenant_b.items b USING (id)",
        "SELECT * FROM nowhere.items",
    ] {
        let e = c.simple_query(sql).await.expect_err(sql);
        assert_eq!(
            sqlstate(&e).as_deref(),
            Some("0A000"),
            "{sql}: {}",
            err_text(&e)
        );
    }
    c.batch_execute("DROP TABLE tenant_b.items")
        .await
        .expect("drop");
    assert_eq!(
        count(
            &direct[1],
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'tenant_b'"
        )
        .await,
        0
    );

    // With a default entry, unlisted schemas go to its shard.
    let with_default = format!("{SCHEMAS}\n[[sharded_schemas]]\ndatabase = \"app\"\nshard = 1\n");
    let proxy2 = start_proxy(&topo, "", &with_default);
    let c2 = connect_proxy(&proxy2).await;
    c2.batch_execute("CREATE SCHEMA other; CREATE TABLE other.t (id int)")
        .await
        .expect("default shard ddl");
    let has_other = "SELECT count(*) FROM pg_namespace WHERE nspname = 'other'";
    assert_eq!(count(&direct[1], has_other).await, 1);
    assert_eq!(count(&direct[0], has_other).await, 0);
}
