//! Placement: hash, list and range placement, definition checks, range queries.
use super::*;
use crate::config::MappingValue;
use crate::config::MappingValue::{Integer, Text};

fn table(data_type: DataType, mapping: Vec<Mapping>, default_shard: Option<usize>) -> ShardedTable {
    ShardedTable {
        database: "app".into(),
        name: Some("users".into()),
        column: "id".into(),
        data_type,
        mapping,
        default_shard,
        primary_key: None,
    }
}

fn list(values: Vec<MappingValue>, shard: usize) -> Mapping {
    Mapping {
        values,
        start: None,
        end: None,
        shard,
    }
}

fn range(start: Option<MappingValue>, end: Option<MappingValue>, shard: usize) -> Mapping {
    Mapping {
        values: vec![],
        start,
        end,
        shard,
    }
}

fn config_error(t: &ShardedTable, shards: usize) -> String {
    let e = Placement::new(t, shards, None).unwrap_err();
    assert_eq!(e.code(), "42P17", "{e}");
    e.to_string()
}

#[test]
fn hash_is_postgres_partitioning() {
    let p = Placement::new(&table(DataType::Bigint, vec![], None), 3, None).unwrap();
    assert!(p.is_hash());
    // Remainders PostgreSQL 18 chose for a bigint table with MODULUS 3.
    for (v, shard) in [
        (i64::MIN, 1),
        (-1, 2),
        (0, 2),
        (1, 2),
        (42, 0),
        (1000000, 0),
        (i64::MAX, 0),
    ] {
        assert_eq!(p.shard(&Key::Integer(v)), Ok(shard), "{v}");
        assert_eq!(p.shard_of_text(&v.to_string()), Ok(shard), "{v}");
        assert_eq!(p.shard_of_binary(&v.to_be_bytes()), Ok(shard), "{v}");
    }
    assert_eq!(p.shard_of_binary(&42i32.to_be_bytes()), Ok(0));
    assert_eq!(p.shard_of_null(), Ok(0));
    let e = p.shard(&Key::Text("42".into())).unwrap_err();
    assert_eq!(e.code(), "42804");
    assert_eq!(p.shard_of_text("4x2").unwrap_err().code(), "22P02");
    assert_eq!(
        p.shards_for_range(None, Some((&Key::Integer(5), true))),
        None
    );
    let one = Placement::new(&table(DataType::Varchar, vec![], None), 1, None).unwrap();
    assert_eq!(one.shard_of_text("anything"), Ok(0));
}

#[test]
fn smallint_keys_outside_the_type_do_not_place() {
    let p = Placement::new(&table(DataType::Smallint, vec![], None), 2, None).unwrap();
    assert_eq!(p.shard(&Key::Integer(70000)).unwrap_err().code(), "42804");
    assert_eq!(p.shard_of_text("70000").unwrap_err().code(), "22003");
    assert!(p.shard(&Key::Integer(-32768)).is_ok());
}

#[test]
fn list_mappings() {
    let t = table(
        DataType::Bigint,
        vec![
            list(vec![Integer(1), Integer(2), Integer(2)], 0),
            list(vec![Integer(3)], 1),
        ],
        None,
    );
    let p = Placement::new(&t, 2, None).unwrap();
    assert_eq!(p.shard(&Key::Integer(1)), Ok(0));
    assert_eq!(p.shard(&Key::Integer(2)), Ok(0));
    assert_eq!(p.shard_of_text(" 3 "), Ok(1));
    let e = p.shard(&Key::Integer(42)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "no shard for sharding key value 42 in table \"users\" and no default_shard"
    );
    assert_eq!(e.code(), "22023");
    assert_eq!(p.shard_of_null().unwrap_err().code(), "22023");
    assert_eq!(p.shards_for_range(None, None), None);

    let with_default = Placement::new(
        &table(DataType::Bigint, t.mapping.clone(), Some(1)),
        2,
        None,
    )
    .unwrap();
    assert_eq!(with_default.shard(&Key::Integer(42)), Ok(1));
    assert_eq!(with_default.shard_of_null(), Ok(1));

    let text = table(
        DataType::Varchar,
        vec![
            list(vec![Text("eu".into()), Text("é".into())], 1),
            list(vec![Text("us".into())], 0),
        ],
        None,
    );
    let p = Placement::new(&text, 2, None).unwrap();
    assert_eq!(p.shard_of_text("é"), Ok(1));
    assert_eq!(p.shard_of_binary(b"us"), Ok(0));
    let e = p.shard_of_text("it's").unwrap_err();
    assert!(e.to_string().contains("value 'it''s' in table"), "{e}");

    let uuids = table(
        DataType::Uuid,
        vec![list(
            vec![Text("{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}".into())],
            1,
        )],
        Some(0),
    );
    let p = Placement::new(&uuids, 2, None).unwrap();
    assert_eq!(p.shard_of_text("a0eebc999c0b4ef8bb6d6bb9bd380a11"), Ok(1));
    assert_eq!(p.shard_of_binary(&[0; 16]), Ok(0));
}

#[test]
fn range_mappings() {
    let t = table(
        DataType::Integer,
        vec![
            range(Some(Integer(300)), None, 2),
            range(None, Some(Integer(100)), 0),
            range(Some(Integer(100)), Some(Integer(200)), 1),
        ],
        None,
    );
    let p = Placement::new(&t, 3, None).unwrap();
    for (v, shard) in [
        (i32::MIN as i64, 0),
        (99, 0),
        (100, 1),
        (199, 1),
        (300, 2),
        (i32::MAX as i64, 2),
    ] {
        assert_eq!(p.shard(&Key::Integer(v)), Ok(shard), "{v}");
    }
    for v in [200, 250, 299] {
        let e = p.shard(&Key::Integer(v)).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("no shard for sharding key value {v} in table \"users\" and no default_shard")
        );
    }
    let with_default = Placement::new(
        &table(DataType::Integer, t.mapping.clone(), Some(0)),
        3,
        None,
    )
    .unwrap();
    assert_eq!(with_default.shard(&Key::Integer(250)), Ok(0));

    let text = table(
        DataType::Varchar,
        vec![
            range(Some(Text("a".into())), Some(Text("m".into())), 0),
            range(Some(Text("m".into())), None, 1),
        ],
        Some(2),
    );
    let p = Placement::new(&text, 3, None).unwrap();
    assert_eq!(p.shard_of_text("a"), Ok(0));
    assert_eq!(p.shard_of_text("lzzz"), Ok(0));
    assert_eq!(p.shard_of_text("m"), Ok(1));
    assert_eq!(p.shard_of_text("日本語"), Ok(1));
    assert_eq!(p.shard_of_text(""), Ok(2));
    // C collation: upper case sorts before lower case.
    assert_eq!(p.shard_of_text("Zebra"), Ok(2));
}

#[test]
fn bad_definitions_are_refused() {
    let t = |mapping, default| table(DataType::Bigint, mapping, default);
    assert!(config_error(&t(vec![], None), 0).contains("no shards"));
    assert!(config_error(&t(vec![], Some(2)), 2).contains("default_shard: shard 2 does not exist"));
    let e = config_error(&t(vec![list(vec![Integer(1)], 5)], None), 2);
    assert_eq!(
        e,
        "sharded_tables entry for table \"users\": mapping[0]: shard 5 does not exist (shards are 0 to 1)"
    );
    let both = Mapping {
        values: vec![Integer(1)],
        start: Some(Integer(0)),
        end: None,
        shard: 0,
    };
    assert!(config_error(&t(vec![both], None), 2).contains("mapping[0] needs either"));
    assert!(
        config_error(&t(vec![range(None, None, 0)], None), 2).contains("mapping[0] needs either")
    );
    let mixed = vec![list(vec![Integer(1)], 0), range(Some(Integer(5)), None, 1)];
    assert!(config_error(&t(mixed, None), 2).contains("mixes list and range"));
    let dup = vec![
        list(vec![Integer(1)], 0),
        list(vec![Integer(2), Integer(1)], 1),
    ];
    assert!(config_error(&t(dup, None), 2).contains("value 1 is in both mapping[0] and mapping[1]"));
    let empty = vec![range(Some(Integer(5)), Some(Integer(5)), 0)];
    assert!(config_error(&t(empty, None), 2).contains("start 5 is not below end 5"));
    let overlap = vec![
        range(Some(Integer(0)), Some(Integer(10)), 0),
        range(Some(Integer(9)), None, 1),
    ];
    assert!(config_error(&t(overlap, None), 2).contains("mapping[0] and mapping[1] overlap"));
    let open = vec![
        range(None, Some(Integer(10)), 0),
        range(None, Some(Integer(5)), 1),
    ];
    assert!(config_error(&t(open, None), 2).contains("overlap"));
    let wrong_type = vec![list(vec![Text("1".into())], 0)];
    assert!(config_error(&t(wrong_type, None), 2)
        .contains("mapping[0]: mapping value \"1\" is not a bigint"));
    let small = table(
        DataType::Smallint,
        vec![list(vec![Integer(40000)], 0)],
        None,
    );
    assert!(config_error(&small, 2).contains("smallint out of range"));
    let uuid = table(DataType::Uuid, vec![list(vec![Text("x".into())], 0)], None);
    assert!(config_error(&uuid, 2).contains("invalid input syntax for type uuid: \"x\""));
    let mut nameless = t(vec![list(vec![Integer(1)], 9)], None);
    nameless.name = None;
    assert!(config_error(&nameless, 2).starts_with("sharded_tables entry for column \"id\""));
}

#[test]
fn integer_range_queries() {
    // [..100) -> 0, [100, 200) -> 1, gap [200, 300), [300, 400) -> 2, [400..) uncovered.
    let mapping = vec![
        range(None, Some(Integer(100)), 0),
        range(Some(Integer(100)), Some(Integer(200)), 1),
        range(Some(Integer(300)), Some(Integer(400)), 2),
    ];
    let p = Placement::new(&table(DataType::Bigint, mapping.clone(), Some(3)), 4, None).unwrap();
    let k = Key::Integer;
    let q = |low: Option<(i64, bool)>, high: Option<(i64, bool)>| {
        let (l, h) = (low.map(|(v, i)| (k(v), i)), high.map(|(v, i)| (k(v), i)));
        p.shards_for_range(
            l.as_ref().map(|(v, i)| (v, *i)),
            h.as_ref().map(|(v, i)| (v, *i)),
        )
    };
    assert_eq!(q(None, None), Some(vec![0, 1, 2, 3]));
    assert_eq!(q(Some((0, true)), Some((99, true))), Some(vec![0]));
    assert_eq!(q(Some((0, true)), Some((100, false))), Some(vec![0]));
    assert_eq!(q(Some((0, true)), Some((100, true))), Some(vec![0, 1]));
    assert_eq!(q(Some((99, false)), Some((199, true))), Some(vec![1]));
    assert_eq!(q(Some((150, true)), Some((250, true))), Some(vec![1, 3]));
    assert_eq!(q(Some((150, true)), Some((200, false))), Some(vec![1]));
    assert_eq!(q(Some((199, false)), Some((300, false))), Some(vec![3]));
    assert_eq!(q(Some((250, true)), Some((350, true))), Some(vec![2, 3]));
    assert_eq!(q(Some((300, true)), Some((399, true))), Some(vec![2]));
    assert_eq!(q(Some((300, true)), None), Some(vec![2, 3]));
    assert_eq!(q(None, Some((-5, true))), Some(vec![0]));
    assert_eq!(
        q(Some((i64::MIN, true)), Some((i64::MIN, true))),
        Some(vec![0])
    );
    assert_eq!(q(Some((i64::MAX, false)), None), Some(vec![]));
    assert_eq!(q(None, Some((i64::MIN, false))), Some(vec![]));
    assert_eq!(q(Some((10, true)), Some((5, true))), Some(vec![]));
    assert_eq!(q(Some((5, true)), Some((5, false))), Some(vec![]));
    assert_eq!(q(Some((5, false)), Some((6, false))), Some(vec![]));
    assert_eq!(q(Some((5, true)), Some((5, true))), Some(vec![0]));
    // Without a default shard the uncovered parts add nothing.
    let p = Placement::new(&table(DataType::Bigint, mapping, None), 4, None).unwrap();
    let key = Key::Integer(150);
    assert_eq!(
        p.shards_for_range(Some((&key, true)), None),
        Some(vec![1, 2])
    );
    // Bounds of another type: cannot narrow.
    let text = Key::Text("150".into());
    assert_eq!(p.shards_for_range(Some((&text, true)), None), None);
}

#[test]
fn a_range_from_the_type_minimum_leaves_no_gap_below() {
    let mapping = vec![range(Some(Integer(-32768)), Some(Integer(0)), 0)];
    let p = Placement::new(&table(DataType::Smallint, mapping, Some(1)), 2, None).unwrap();
    let zero = Key::Integer(0);
    assert_eq!(
        p.shards_for_range(None, Some((&zero, false))),
        Some(vec![0])
    );
    assert_eq!(
        p.shards_for_range(None, Some((&zero, true))),
        Some(vec![0, 1])
    );
}

#[test]
fn text_and_uuid_range_queries() {
    let mapping = vec![
        range(Some(Text("b".into())), Some(Text("m".into())), 0),
        range(Some(Text("m".into())), None, 1),
    ];
    let p = Placement::new(&table(DataType::Varchar, mapping, Some(2)), 3, None).unwrap();
    let t = |s: &str| Key::Text(s.into());
    let (b, c, m, z) = (t("b"), t("c"), t("m"), t("z"));
    assert_eq!(
        p.shards_for_range(Some((&b, true)), Some((&c, true))),
        Some(vec![0])
    );
    assert_eq!(
        p.shards_for_range(Some((&b, true)), Some((&m, false))),
        Some(vec![0])
    );
    assert_eq!(
        p.shards_for_range(Some((&c, true)), Some((&z, true))),
        Some(vec![0, 1])
    );
    assert_eq!(p.shards_for_range(Some((&m, true)), None), Some(vec![1]));
    assert_eq!(p.shards_for_range(None, Some((&c, true))), Some(vec![0, 2]));
    assert_eq!(
        p.shards_for_range(Some((&t("a"), true)), Some((&b, false))),
        Some(vec![2])
    );
    assert_eq!(
        p.shards_for_range(Some((&z, true)), Some((&b, true))),
        Some(vec![])
    );

    let mapping = vec![
        range(
            None,
            Some(Text("80000000-0000-0000-0000-000000000000".into())),
            0,
        ),
        range(
            Some(Text("80000000000000000000000000000000".into())),
            None,
            1,
        ),
    ];
    let p = Placement::new(&table(DataType::Uuid, mapping, None), 2, None).unwrap();
    assert_eq!(
        p.shard_of_text("7fffffff-ffff-ffff-ffff-ffffffffffff"),
        Ok(0)
    );
    assert_eq!(
        p.shard_of_text("80000000-0000-0000-0000-000000000000"),
        Ok(1)
    );
    let mid = Key::Uuid(0x8000_0000_0000_0000_0000_0000_0000_0000u128.to_be_bytes());
    assert_eq!(p.shards_for_range(None, Some((&mid, false))), Some(vec![0]));
    assert_eq!(p.shards_for_range(Some((&mid, true)), None), Some(vec![1]));
    assert_eq!(p.shards_for_range(None, None), Some(vec![0, 1]));
}
