//! Dates and timestamps merge in every DateStyle the servers may use.
use super::*;

#[test]
fn dates_merge_in_every_datestyle() {
    let p = plan("SELECT min(d), max(d), min(ts), max(ts), min(tz), max(tz) FROM t").unwrap();
    let desc = rd(&[
        ("min", 1082),
        ("max", 1082),
        ("min", 1114),
        ("max", 1114),
        ("min", 1184),
        ("max", 1184),
    ]);
    // (DateStyle, shard rows): dates 1997-12-17 / 0044-03-15 BC / 2024-07-04,
    // timestamps likewise, timestamptz in America/Los_Angeles.
    let cases: [(&str, [[&str; 3]; 3]); 5] = [
        (
            "SQL, DMY",
            [
                [
                    "17/12/1997",
                    "17/12/1997 07:37:16",
                    "17/12/1997 07:37:16 PST",
                ],
                [
                    "15/03/0044 BC",
                    "15/03/0044 01:02:03.5 BC",
                    "15/03/0044 01:02:03.25 LMT BC",
                ],
                [
                    "04/07/2024",
                    "04/07/2024 12:00:00.123456",
                    "04/07/2024 12:00:00 PDT",
                ],
            ],
        ),
        (
            "SQL, MDY",
            [
                [
                    "12/17/1997",
                    "12/17/1997 07:37:16",
                    "12/17/1997 07:37:16 PST",
                ],
                [
                    "03/15/0044 BC",
                    "03/15/0044 01:02:03.5 BC",
                    "03/15/0044 01:02:03.25 LMT BC",
                ],
                [
                    "07/04/2024",
                    "07/04/2024 12:00:00.123456",
                    "07/04/2024 12:00:00 PDT",
                ],
            ],
        ),
        (
            "German, DMY",
            [
                [
                    "17.12.1997",
                    "17.12.1997 07:37:16",
                    "17.12.1997 07:37:16 PST",
                ],
                [
                    "15.03.0044 BC",
                    "15.03.0044 01:02:03.5 BC",
                    "15.03.0044 01:02:03.25 LMT BC",
                ],
                [
                    "04.07.2024",
                    "04.07.2024 12:00:00.123456",
                    "04.07.2024 12:00:00 PDT",
                ],
            ],
        ),
        (
            "Postgres, MDY",
            [
                [
                    "12-17-1997",
                    "Wed Dec 17 07:37:16 1997",
                    "Wed Dec 17 07:37:16 1997 PST",
                ],
                [
                    "03-15-0044 BC",
                    "Fri Mar 15 01:02:03.5 0044 BC",
                    "Fri Mar 15 01:02:03.25 0044 LMT BC",
                ],
                [
                    "07-04-2024",
                    "Thu Jul 04 12:00:00.123456 2024",
                    "Thu Jul 04 12:00:00 2024 PDT",
                ],
            ],
        ),
        (
            "ISO, MDY",
            [
                [
                    "1997-12-17",
                    "1997-12-17 07:37:16",
                    "1997-12-17 07:37:16-08",
                ],
                [
                    "0044-03-15 BC",
                    "0044-03-15 01:02:03.5 BC",
                    "0044-03-15 01:02:03.25-07:52:58 BC",
                ],
                [
                    "2024-07-04",
                    "2024-07-04 12:00:00.123456",
                    "2024-07-04 12:00:00-07",
                ],
            ],
        ),
    ];
    for (style, [a, b, c]) in cases {
        // Each value twice: the input of both min() and max().
        let twice = |v: [&'static str; 3]| {
            vec![v
                .iter()
                .flat_map(|x| [Some(*x), Some(*x)])
                .collect::<Vec<_>>()]
        };
        let out = run_in(&p.merge, &desc, &[twice(a), twice(b), twice(c)], style).unwrap();
        assert_eq!(
            out,
            vec![one(&[b[0], c[0], b[1], c[1], b[2], c[2]])],
            "{style}"
        );
    }
}

#[test]
fn order_by_timestamptz_in_sql_style() {
    let shards = [
        shard(&[
            &["1", "04/07/2024 12:00:00 PDT"],
            &["2", "17/12/1997 07:37:16 PST"],
        ]),
        shard(&[
            &["3", "infinity"],
            &["4", "01/01/2024 00:00:00 PST"],
            &["5", "15/03/0044 01:02:03.25 LMT BC"],
        ]),
    ];
    let sql = "SELECT id, created_at FROM users ORDER BY created_at DESC, id";
    let columns = [("id", 23), ("created_at", 1184)];
    let out = merged_in(sql, &columns, &shards, "SQL, DMY").unwrap();
    assert_eq!(col(&out, 0), vec!["3", "1", "4", "2", "5"]);
    // Dates: DMY decides which field is the day.
    let sql = "SELECT d FROM t ORDER BY d";
    let shards = [shard(&[&["05/04/2024"]]), shard(&[&["04/05/2024"]])];
    let dmy = merged_in(sql, &[("d", 1082)], &shards, "SQL, DMY").unwrap();
    assert_eq!(col(&dmy, 0), vec!["05/04/2024", "04/05/2024"]);
    let mdy = merged_in(sql, &[("d", 1082)], &shards, "SQL, MDY").unwrap();
    assert_eq!(col(&mdy, 0), vec!["04/05/2024", "05/04/2024"]);
}

#[test]
fn ambiguous_timestamptz_is_an_error_not_a_wrong_order() {
    // The repeated hour of a DST change: 01:30 PDT is before 01:10 PST.
    let shards = [
        shard(&[&["11/03/2024 01:30:00 PDT"]]),
        shard(&[&["11/03/2024 01:10:00 PST"]]),
    ];
    let sql = "SELECT created_at FROM users ORDER BY created_at";
    let e = merged_in(sql, &[("created_at", 1184)], &shards, "SQL, MDY").unwrap_err();
    assert_eq!(e.code(), "0A000");
    assert!(e.to_string().contains("DateStyle 'SQL, MDY'"), "{e}");
    let sql = "SELECT max(created_at) FROM users";
    let e = merged_in(sql, &[("max", 1184)], &shards, "SQL, MDY").unwrap_err();
    assert_eq!(e.code(), "0A000");
    // Grouped results sorted after the merge.
    let sql = "SELECT created_at, count(*) FROM users GROUP BY 1 ORDER BY 1";
    let columns = [("created_at", 1184), ("count", 20)];
    let shards = [
        shard(&[&["Sun Nov 03 01:30:00 2024 PDT", "1"]]),
        shard(&[&["Sun Nov 03 01:10:00 2024 PST", "1"]]),
    ];
    let e = merged_in(sql, &columns, &shards, "Postgres, MDY").unwrap_err();
    assert_eq!(e.code(), "0A000");
    // Numeric zone abbreviations are exact.
    let shards = [
        shard(&[&["Sun Nov 03 01:30:00 2024 -03", "1"]]),
        shard(&[&["Sun Nov 03 01:10:00 2024 -04", "1"]]),
    ];
    let out = merged_in(sql, &columns, &shards, "Postgres, MDY").unwrap();
    assert_eq!(
        col(&out, 0),
        vec![
            "Sun Nov 03 01:30:00 2024 -03",
            "Sun Nov 03 01:10:00 2024 -04"
        ]
    );
}

#[test]
fn datestyle_set_after_the_row_description() {
    let p = plan("SELECT d FROM t ORDER BY d").unwrap();
    let mut m = Merger::new(&p.merge, 2);
    let desc = rd(&[("d", 1082)]);
    m.row_description(0, &desc).unwrap();
    m.row_description(1, &desc).unwrap();
    m.set_datestyle("German, DMY");
    m.row(0, row(&[Some("02.01.2024")])).unwrap();
    m.row(1, row(&[Some("01.02.2024")])).unwrap();
    let mut out = Vec::new();
    m.shard_done(0);
    m.shard_done(1);
    m.finish(&mut out).unwrap();
    assert_eq!(col(&texts(&out), 0), vec!["02.01.2024", "01.02.2024"]);
}
