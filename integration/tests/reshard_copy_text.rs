//! `pgdog copy-data` in text COPY format (`[resharding] copy_format = "text"`, as it runs when the source
//! and destination major versions differ): a table of awkward values (NULLs, empty strings,
//! tabs, newlines, backslashes, quotes, unicode, bytea, int[], timestamptz, numeric, float8,
//! json) sharded by a bigint id into two shards, plus an omnisharded table, read in CTID ranges
//! (`copy_split_bytes = 65536`, no slot). The source database's session defaults are changed for the
//! copy (DMY dates, another time zone, escaped bytea, fewer float digits) so that values only
//! survive if both ends of the text COPY fix their session settings; `pgdog verify` must then
//! find the destination equal to the source.
use crate::reshard_common;

use reshard_common::{
    assert_spread_over_two_shards, line_starting, omnisharded, pgdog_with, schema_sync_pre,
    set_resharding, sharded_table, single_to_two_shards, text, verify_ok, SRC_DST,
};

const SCHEMA: &str = "
CREATE TABLE awkward (
    id bigint PRIMARY KEY,
    t text,
    b bytea,
    a int[],
    ts timestamptz,
    n numeric,
    f float8,
    j json,
    d date
);
CREATE TABLE labels (id int PRIMARY KEY, label text);
CREATE PUBLICATION pub FOR TABLE awkward, labels;
";

/// Rows of `awkward`: enough pages (well over 64 KiB) for several CTID ranges.
const ROWS: i64 = 4000;

/// Every kind of value that text COPY escapes or formats, chosen by `i % 12`.
const ROWS_SQL: &str = r#"
INSERT INTO awkward
SELECT i,
       CASE i % 12
         WHEN 0 THEN NULL
         WHEN 1 THEN ''
         WHEN 2 THEN E'tab\there'
         WHEN 3 THEN E'new\nline and\r\ncarriage'
         WHEN 4 THEN E'back\\slash \\N \\. end\\'
         WHEN 5 THEN 'quotes '' and " and `'
         WHEN 6 THEN 'unicode é ü 中文 🦀 ' || i
         WHEN 7 THEN E'\\N'
         WHEN 8 THEN ' leading and trailing spaces '
         WHEN 9 THEN E'\x01\x7f control'
         WHEN 10 THEN repeat('long ', 50)
         ELSE 'row ' || i
       END,
       CASE WHEN i % 5 = 0 THEN NULL WHEN i % 5 = 1 THEN ''::bytea
            ELSE decode(md5(i::text), 'hex') || '\x000a0d095c'::bytea END,
       CASE WHEN i % 7 = 0 THEN NULL WHEN i % 7 = 1 THEN '{}'::int[]
            ELSE ARRAY[i, -i, NULL, 0] END,
       CASE WHEN i % 9 = 0 THEN NULL
            ELSE '2024-01-02 03:04:05.123456+00'::timestamptz + i * interval '7 hours 1 second' END,
       CASE WHEN i % 6 = 0 THEN NULL WHEN i % 6 = 1 THEN 'NaN'::numeric
            ELSE (i * 12345.6789)::numeric / 7 END,
       CASE WHEN i % 8 = 0 THEN NULL WHEN i % 8 = 1 THEN 'Infinity'::float8
            ELSE i * 0.1 + 0.2 END,
       CASE WHEN i % 4 = 0 THEN NULL
            ELSE ('{"k": "tab\there\nline \\ \"q\" é", "n": [' || i || ', null],  "s" : 1}')::json END,
       DATE '2024-01-02' + (i % 300)
FROM generate_series(-1000, 2999) i;
INSERT INTO labels VALUES (1, E'a\tb'), (2, NULL), (3, ''), (4, E'\\');
"#;

#[test]
fn copy_data_in_text_format_matches_the_source() {
    let (source, dest, dir) = single_to_two_shards(
        "copy-data-text",
        &(sharded_table("dst", "awkward", "id", "bigint") + &omnisharded("dst", &["labels"])),
    );
    set_resharding(&dir, "copy_format = \"text\"\ncopy_split_bytes = 65536");

    let primary = source.primary();
    primary.psql(SCHEMA).expect("source schema");
    primary.psql(ROWS_SQL).expect("source rows");
    assert_eq!(
        primary.psql("SELECT count(*) FROM awkward").unwrap(),
        ROWS.to_string()
    );
    let pages: i64 = primary
        .psql("SELECT pg_relation_size('awkward') / current_setting('block_size')::int")
        .unwrap()
        .parse()
        .unwrap();
    assert!(pages >= 16, "awkward has {pages} pages: too few for ranges");

    schema_sync_pre(&dir, &source);

    // Session defaults of the copy's source connections that print values in a form the
    // destination's defaults would misread (DMY dates) or that lose data (float digits).
    primary
        .psql(
            "ALTER DATABASE postgres SET DateStyle = 'SQL, DMY';
             ALTER DATABASE postgres SET TimeZone = 'Asia/Kathmandu';
             ALTER DATABASE postgres SET bytea_output = 'escape';
             ALTER DATABASE postgres SET extra_float_digits = -3;
             ALTER DATABASE postgres SET IntervalStyle = 'sql_standard';",
        )
        .expect("source session defaults");

    // No slot (a copy with no replay after it): a large table is read in CTID ranges under one
    // snapshot, not in key ranges.
    let more = ["--publication", "pub", "--parallel", "3"];
    let out = pgdog_with(&dir, &source, "copy-data", &SRC_DST, &more);
    let output = text(&out);
    primary
        .psql("ALTER DATABASE postgres RESET ALL")
        .expect("resetting the source session defaults");
    assert!(out.status.success(), "copy-data: {output}");
    let awkward_line = line_starting(&output, "table public.awkward: ");
    assert!(
        awkward_line.starts_with(&format!("table public.awkward: {ROWS} rows, watermark ")),
        "{output}"
    );
    // Read in CTID ranges, in text format.
    assert!(awkward_line.contains(" ranges, text format"), "{output}");
    let labels_line = line_starting(&output, "table public.labels: 4 rows, watermark ");
    assert!(labels_line.ends_with(", text format"), "{output}");

    assert_spread_over_two_shards(&dest, "awkward", ROWS);
    verify_ok(&dir, &source, &["awkward", "labels"], "");
    let _ = std::fs::remove_dir_all(&dir);
}
