//! Copy helpers: identifier splitting, format choice, reports.
use super::*;

#[test]
fn splits_quoted_identifiers() {
    assert_eq!(split_idents("id,name"), ["id", "name"]);
    assert_eq!(
        split_idents("id,\"Weird, \"\"name\"\"\",x"),
        ["id", "Weird, \"name\"", "x"]
    );
}

#[test]
fn copy_statements() {
    let target = ServerTarget {
        host: "127.0.0.1".into(),
        port: 5432,
        database: "db".into(),
        user: "u".into(),
        password: None,
        pass_through: None,
    };
    let job = Job {
        schema: "public".into(),
        name: "users".into(),
        columns: vec!["id".into(), "Name".into()],
        dest: Destination::Everywhere,
        source_shard: 0,
        source: target.clone(),
        primary: target,
        from_replica: false,
        targets: vec![0, 1],
        size: 0,
        range: None,
        stays: std::sync::Arc::from([]),
    };
    assert_eq!(
        copy_out_sql(
            &job.sql_name(),
            &job.column_list(),
            None,
            CopyFormat::Binary
        ),
        "COPY \"public\".\"users\" (\"id\", \"Name\") TO STDOUT (FORMAT binary)"
    );
    assert_eq!(
        job.copy_in(CopyFormat::Binary),
        "COPY \"public\".\"users\" (\"id\", \"Name\") FROM STDIN (FORMAT binary)"
    );
    assert_eq!(
        job.copy_in(CopyFormat::Text),
        "COPY \"public\".\"users\" (\"id\", \"Name\") FROM STDIN (FORMAT text)"
    );
    let line = TableCopy {
        table: "public.users".into(),
        source_shard: 0,
        rows: 12,
        watermark: 0x1_0000_00FF,
        source: String::new(),
        skipped: false,
        shards: vec![0, 1],
        readers: 1,
        format: CopyFormat::Binary,
    };
    assert_eq!(
        line.to_string(),
        "table public.users: 12 rows, watermark 1/FF"
    );
    let split = TableCopy {
        source: "127.0.0.1:5433".into(),
        readers: 3,
        ..line
    };
    assert_eq!(
        split.to_string(),
        "table public.users: 12 rows, watermark 1/FF (read from 127.0.0.1:5433) in 3 ranges"
    );
    let text = TableCopy {
        format: CopyFormat::Text,
        ..split
    };
    assert_eq!(
        text.to_string(),
        "table public.users: 12 rows, watermark 1/FF (read from 127.0.0.1:5433) in 3 ranges, \
         text format"
    );
}

#[test]
fn format_follows_major_versions() {
    use CopyFormat::{Binary, Text};
    let auto = |source, dests: &[Option<u32>]| choose_format(FormatMode::Auto, source, dests);
    // Same major version everywhere (minor releases may differ): binary.
    assert_eq!(auto(Some(180001), &[Some(180000), Some(180003)]), Binary);
    assert_eq!(auto(Some(90605), &[Some(90612)]), Binary);
    // Any destination on another major version: text.
    assert_eq!(auto(Some(180001), &[Some(180001), Some(170005)]), Text);
    assert_eq!(auto(Some(160000), &[Some(180000)]), Text);
    // 9.5 and 9.6 are different majors.
    assert_eq!(auto(Some(90605), &[Some(90500)]), Text);
    // Unknown versions: text.
    assert_eq!(auto(None, &[Some(180000)]), Text);
    assert_eq!(auto(Some(180000), &[Some(180000), None]), Text);
    // Forced text, even with equal versions.
    assert_eq!(
        choose_format(FormatMode::Text, Some(180001), &[Some(180001)]),
        Text
    );
    assert_eq!(major_version(180001), 18);
    assert_eq!(major_version(100000), 10);
    assert_eq!(major_version(90605), 906);
}

#[test]
fn format_plan_follows_the_versions() {
    // The plan applies the versions of the targeted shards only.
    let plan = FormatPlan {
        mode: FormatMode::Auto,
        dest_versions: vec![Some(180000), Some(170000)],
    };
    assert_eq!(plan.format(Some(180002), &[0]), CopyFormat::Binary);
    assert_eq!(plan.format(Some(180002), &[0, 1]), CopyFormat::Text);
    assert_eq!(plan.format(Some(170002), &[1]), CopyFormat::Binary);
    let forced = FormatPlan {
        mode: FormatMode::Text,
        dest_versions: Vec::new(),
    };
    assert_eq!(forced.format(Some(180002), &[0]), CopyFormat::Text);
}

#[test]
fn progress_keys() {
    assert_eq!(progress_key("s1", 0), "s1");
    assert_eq!(progress_key("s1", 3), "s1/3");
    let skipped = TableCopy::skipped("public.users".into(), 2);
    assert_eq!(
        skipped.to_string(),
        "table public.users (source shard 2): already copied"
    );
}
