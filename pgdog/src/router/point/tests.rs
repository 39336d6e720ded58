use super::*;
use crate::config::DataType;
use crate::router::schema::{Schema, TableSharding};
use crate::router::shapes::{Served, ShapeCache};
use crate::router::{Parsed, Route};

fn router(shards: usize) -> Router {
    let table = |name: &str, column: &str, data_type: DataType| {
        TableSharding::hashed(name, column, data_type, shards)
    };
    let mut schema = Schema {
        shards,
        tables: vec![
            table("users", "id", DataType::Bigint),
            table("sessions", "sid", DataType::Varchar),
            table("small", "k", DataType::Smallint),
            table("ints", "k", DataType::Integer),
        ],
        ..Default::default()
    };
    schema.omnisharded.insert("countries".into());
    Router::new(schema)
}

/// The plan of a shape written with `$n` for its literals.
fn plan(r: &Router, shape: &str) -> Option<Point> {
    let parsed = Parsed::new(shape).unwrap();
    let calls = parsed.calls(0, shape).to_vec();
    r.point(&parsed.statements, shape, &calls)
}

#[test]
fn point_shapes() {
    let r = router(4);
    let yes = [
        ("SELECT * FROM users WHERE id = $1", 0),
        ("SELECT name FROM users WHERE $1 = id", 0),
        ("SELECT name FROM users u WHERE u.id = $2 AND name = $1", 1),
        (
            "SELECT name FROM users WHERE name = $1 AND id::int8 = $2 AND age > $3",
            1,
        ),
        (
            "SELECT * FROM sessions WHERE sid = $1 ORDER BY $2 LIMIT $3",
            0,
        ),
        ("SELECT * FROM users WHERE id = $1 FOR UPDATE", 0),
    ];
    for (sql, literal) in yes {
        assert_eq!(plan(&r, sql).map(|p| p.literal), Some(literal), "{sql}");
    }
    let no = [
        "SELECT * FROM users",
        "SELECT * FROM users WHERE name = $1",
        "SELECT * FROM users WHERE id = $1 AND id = $2",
        "SELECT * FROM users WHERE id = $1 AND id > $2",
        "SELECT * FROM users WHERE id = $1 OR name = $2",
        "SELECT * FROM users WHERE id IN ($1, $2)",
        "SELECT * FROM users WHERE id = $1 AND (id = $2 OR name = $3)",
        "SELECT * FROM users WHERE id = $1 AND name IN (SELECT name FROM users WHERE id = $2)",
        "SELECT * FROM users u JOIN sessions s ON s.sid = u.name WHERE u.id = $1",
        "SELECT * FROM users, countries WHERE users.id = $1",
        "SELECT * FROM countries WHERE id = $1",
        "SELECT lower(name) FROM users WHERE id = $1",
        "SELECT * FROM users WHERE id = $1 UNION SELECT * FROM users WHERE id = $2",
        "WITH u AS (SELECT * FROM users WHERE id = $1) SELECT * FROM u",
        "SELECT * FROM (SELECT * FROM users WHERE id = $1) s",
        "UPDATE users SET name = $2 WHERE id = $1",
        "DELETE FROM users WHERE id = $1",
        "SELECT * FROM users WHERE id = $1; SELECT 1",
        "SELECT * FROM users WHERE other.id = $1",
        "SELECT * FROM users WHERE id <> $1",
        "SELECT * FROM users WHERE id = name",
        "SELECT * FROM users WHERE id = $1::bigint",
        "SELECT * FROM sessions WHERE sid::int = $1",
    ];
    for sql in no {
        assert_eq!(plan(&r, sql), None, "{sql}");
    }
    // One shard: nothing to route.
    assert_eq!(plan(&router(1), "SELECT * FROM users WHERE id = $1"), None);
}

/// Every text served as a point goes where the full route of its own parse sends it.
#[test]
fn points_agree_with_the_route() {
    let cache = ShapeCache::new(64);
    let r = router(4);
    let templates = [
        "SELECT name FROM users WHERE id = {}",
        "SELECT name FROM users WHERE {} = id AND name = 'x'",
        "SELECT * FROM sessions WHERE sid = '{}' LIMIT 5",
        "SELECT * FROM sessions WHERE sid = {}",
        "SELECT name FROM users WHERE name = 'x' AND id = {} AND age > 3",
        "SELECT * FROM small WHERE k = {}",
        "SELECT * FROM ints WHERE {} = k",
    ];
    let values = [
        "1",
        "2",
        "7",
        "42",
        "-3",
        "1000000",
        "9223372036854775807",
        "1.5",
        "3.0",
        "0",
        "12345678901234567890",
        "32767",
        "32768",
        "40000",
        "2147483647",
    ];
    let mut points = 0;
    for t in templates {
        for v in values {
            let sql = t.replace("{}", v);
            let full = Parsed::new(&sql).unwrap();
            let route = r.route(&full, 0, &sql, None, &Default::default());
            match cache.serve(&sql, Some(&r)).unwrap() {
                Served::Point(hit) => {
                    points += 1;
                    let shard = hit.shard(&r, &sql);
                    match (&route, shard) {
                        (Ok(Route::Shard(a)), Ok(b)) => {
                            let any = r.point_matches_none(hit_point(&hit), hit_value(&hit));
                            assert!(any || *a == b, "{sql}: route {a}, point {b}");
                        }
                        (Err(a), Err(b)) => assert_eq!(a.code(), b.code(), "{sql}"),
                        (a, b) => panic!("{sql}: route {a:?}, point {b:?}"),
                    }
                }
                Served::Parsed(_) => {}
            }
        }
    }
    assert!(points >= 30, "{points} texts served as points");
    assert_eq!(cache.stats().mismatches, 0);
}

fn hit_point(hit: &crate::router::PointHit) -> Point {
    hit.point
}

fn hit_value(hit: &crate::router::PointHit) -> &Const {
    &hit.value
}
