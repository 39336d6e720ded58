//! Statement shapes and two-phase transaction ids.
use super::*;
use crate::replication::pgoutput::RelationColumn;

fn table(full: bool) -> Table {
    let rel = Relation {
        xid: None,
        oid: 1,
        namespace: "public".into(),
        name: "t".into(),
        replica_identity: if full { b'f' } else { b'd' },
        columns: vec![
            RelationColumn {
                flags: 1,
                name: "id".into(),
                type_oid: 20,
                type_modifier: -1,
            },
            RelationColumn {
                flags: u8::from(full),
                name: "v".into(),
                type_oid: 25,
                type_modifier: -1,
            },
        ],
    };
    let mut wm = HashMap::new();
    wm.insert("public.t".to_string(), vec![Some(0)]);
    let mut schema = Schema::default();
    schema.omnisharded.insert("t".into());
    Table::new(&rel, &schema, "db", "s", 0, &wm, None).unwrap()
}

#[test]
fn statements() {
    let t = table(false);
    let v = |s: &str| Some(Bytes::from(s.to_string()));
    let row = vec![(0, v("1")), (1, v("x"))];
    assert_eq!(
        &*t.upsert(&row).sql,
        "INSERT INTO \"public\".\"t\" (\"id\", \"v\") VALUES ($1, $2) \
         ON CONFLICT (\"id\") DO UPDATE SET \"v\" = EXCLUDED.\"v\""
    );
    assert_eq!(
        &*t.update(&row[1..], &row[..1]).sql,
        "UPDATE \"public\".\"t\" SET \"v\" = $1 WHERE \"id\" = $2"
    );
    assert_eq!(
        &*t.delete(&row[..1]).sql,
        "DELETE FROM \"public\".\"t\" WHERE \"id\" = $1"
    );
    let f = table(true);
    assert_eq!(
        &*f.delete(&row).sql,
        "DELETE FROM \"public\".\"t\" WHERE ctid = (SELECT ctid FROM \"public\".\"t\" \
         WHERE \"id\" IS NOT DISTINCT FROM $1 AND \"v\" IS NOT DISTINCT FROM $2 LIMIT 1)"
    );
    assert!(f.upsert(&row).sql.ends_with("ON CONFLICT DO NOTHING"));
    assert_eq!(
        &*t.delete_returning(&row[..1]).sql,
        "DELETE FROM \"public\".\"t\" WHERE \"id\" = $1 RETURNING \"id\", \"v\""
    );
    assert_eq!(
        t.describe(&[(0, v("7")), (1, None)]),
        "\"id\" = '7' AND \"v\" = NULL"
    );
    // An omnisharded table goes to every shard: its identity needs no sharding key.
    assert!(!t.identity_lacks_key());
}

#[test]
fn statement_shapes_are_built_once() {
    let t = table(false);
    let v = |s: &str| Some(Bytes::from(s.to_string()));
    let a = t.upsert(&[(0, v("1")), (1, v("x"))]);
    let b = t.upsert(&[(0, v("2")), (1, None)]);
    assert!(Arc::ptr_eq(&a.sql, &b.sql));
    assert!(Arc::ptr_eq(&a.types, &b.types));
    assert_eq!(&*a.types, &[20, 25]);
    assert_eq!(b.params, vec![v("2"), None]);
    // Another column set is another shape.
    let c = t.upsert(&[(0, v("3"))]);
    assert!(!Arc::ptr_eq(&a.sql, &c.sql));
    assert_eq!(
        &*c.sql,
        "INSERT INTO \"public\".\"t\" (\"id\") VALUES ($1) ON CONFLICT (\"id\") DO NOTHING"
    );
    let u = t.update(&[(1, v("y"))], &[(0, v("4"))]);
    let w = t.update(&[(1, v("z"))], &[(0, v("5"))]);
    assert!(Arc::ptr_eq(&u.sql, &w.sql));
    assert_eq!(&*u.types, &[25, 20]);
    assert_eq!(w.params, vec![v("z"), v("5")]);
    let d = t.delete(&[(0, v("6"))]);
    assert!(!Arc::ptr_eq(&d.sql, &u.sql));
    assert_eq!(t.shapes.lock().len(), 4);
}

#[test]
fn gids() {
    let g = gid("s1/2", 0x1_0000_00AB, 3);
    assert_eq!(g, "pgdog_replay_s1/2_1000000AB_3");
    assert_eq!(gid_lsn("s1/2", &g), Some(0x1_0000_00AB));
    assert_eq!(gid_lsn("s1", &g), None);
    assert_eq!(gid_lsn("s1", "pgdog_replay_s1_x_1"), None);
}
