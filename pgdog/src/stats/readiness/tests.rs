use super::log::{parameters, read, route_log, Logged};
use super::*;
use crate::config::{DataType, ShardedTable};
use crate::router::route::Router;
use crate::router::schema::{Schema, TableSharding};
use crate::sharding::Placement;

const LOG: &str = "\
2026-11-27 10:00:00.001 UTC [77] LOG:  statement: SELECT * FROM users WHERE id = 1
2026-11-27 10:00:00.002 UTC [77] LOG:  statement: SELECT count(*)
\tFROM users
2026-11-27 10:00:00.003 UTC [78] LOG:  execute <unnamed>: SELECT name FROM users WHERE id = $1
2026-11-27 10:00:00.003 UTC [78] DETAIL:  Parameters: $1 = '42'
2026-11-27 10:00:00.004 UTC [79] LOG:  duration: 1.500 ms  statement: SELECT * FROM users u JOIN orders o ON o.id = u.id
2026-11-27 10:00:00.005 UTC [79] ERROR:  relation \"nope\" does not exist
2026-11-27 10:00:00.005 UTC [79] STATEMENT:  SELECT * FROM nope
2026-11-27 10:00:00.006 UTC [80] LOG:  connection received: host=127.0.0.1
2026-11-27 10:00:00.007 UTC [81] LOG:  statement: SELECT 1
2026-11-27 10:00:00.008 UTC [81] LOG:  duration: 0.250 ms
";

#[test]
fn reads_postgres_logs() {
    let got = read(LOG);
    let sql: Vec<&str> = got.iter().map(|l| l.sql.as_str()).collect();
    assert_eq!(
        sql,
        [
            "SELECT * FROM users WHERE id = 1",
            "SELECT count(*)\n\tFROM users",
            "SELECT name FROM users WHERE id = $1",
            "SELECT * FROM users u JOIN orders o ON o.id = u.id",
            "SELECT 1",
        ]
    );
    assert_eq!(got[2].params, vec![Some("42".to_string())]);
    assert_eq!(got[3].duration_us, 1500);
    assert_eq!(got[4].duration_us, 250);
}

#[test]
fn reads_plain_sql_lines() {
    let got = read("SELECT 1\n\n-- a comment\nSELECT * FROM users WHERE id = 2\n");
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].sql, "SELECT * FROM users WHERE id = 2");
}

#[test]
fn parameter_lists() {
    assert_eq!(
        parameters("$1 = '5', $2 = NULL, $3 = 'it''s, ok'"),
        vec![Some("5".into()), None, Some("it's, ok".into())]
    );
    assert_eq!(parameters(""), Vec::<Option<String>>::new());
}

fn router() -> Router {
    let table = |name: &str, column: &str| {
        let t = ShardedTable {
            database: "readiness_db".into(),
            name: Some(name.into()),
            column: column.into(),
            data_type: DataType::Bigint,
            mapping: Vec::new(),
            default_shard: None,
            primary_key: None,
        };
        TableSharding {
            placement: Placement::new(&t, 4, None).unwrap(),
            config: t,
        }
    };
    Router::new(Schema {
        shards: 4,
        tables: vec![table("users", "id"), table("orders", "user_id")],
        ..Default::default()
    })
}

#[test]
fn a_log_routed_and_summed_up() {
    let mut logged = read(LOG);
    logged.push(Logged {
        sql: "SELEC broken".into(),
        params: Vec::new(),
        duration_us: 0,
    });
    let dry = crate::router::verdict::DryRun {
        router: router(),
        database: std::sync::Arc::from("readiness_db"),
    };
    let routed = route_log(&dry, &logged);
    assert_eq!(routed.statements, 5);
    assert_eq!(routed.unparsed, vec!["SELEC broken".to_string()]);
    let rows: Vec<_> = crate::stats::routes::rows()
        .into_iter()
        .filter(|r| r.database == "readiness_db")
        .collect();
    let text = summary("readiness_db", &rows, 10);
    assert!(text.contains("5 statements of 5 shapes"), "{text}");
    assert!(text.contains("60.0% of calls go to one shard"), "{text}");
    assert!(text.contains("20.0% would be refused"), "{text}");
    assert!(text.contains("0A000: cross-shard join"), "{text}");
    assert!(
        text.contains("no filter on the sharding key (users.id)"),
        "{text}"
    );
    assert!(text.contains("85.7% of time"), "{text}");
}
