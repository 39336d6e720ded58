//! Unit tests of COPY statement parsing and data splitting.

use bytes::BytesMut;

use super::*;

// ------------------------------------------------------------------ helpers

/// Test placement: the key as a bigint, modulo the shard count; NULL on shard 0.
fn modulo(shards: usize) -> impl FnMut(KeyField<'_>) -> Result<usize, KeyError> {
    move |key| match key {
        KeyField::Null => Ok(0),
        KeyField::Text(text) => text
            .parse::<i64>()
            .map(|v| v.rem_euclid(shards as i64) as usize)
            .map_err(|_| {
                KeyError::new(
                    "22P02",
                    format!("invalid input syntax for type bigint: \"{text}\""),
                )
            }),
        KeyField::Binary(bytes) => {
            let v = i64::from_be_bytes(bytes.try_into().map_err(|_| {
                KeyError::new("22P03", "incorrect binary data format for type bigint")
            })?);
            Ok(v.rem_euclid(shards as i64) as usize)
        }
    }
}

fn run(
    options: &CopyOptions,
    key: usize,
    shards: usize,
    chunks: &[&[u8]],
) -> Result<Vec<Vec<u8>>, CopyError> {
    let mut splitter = CopySplitter::new(options, key, shards).with_context("users", "id");
    let mut out = vec![BytesMut::new(); shards];
    let mut place = modulo(shards);
    for chunk in chunks {
        splitter.feed(chunk, &mut place, &mut out)?;
    }
    splitter.finish(&mut place, &mut out)?;
    Ok(out.into_iter().map(|b| b.to_vec()).collect())
}

/// Splits `input` fed whole, then cut at every byte position, then byte by byte: all the same.
fn run_all_cuts(
    options: &CopyOptions,
    key: usize,
    shards: usize,
    input: &[u8],
) -> Result<Vec<Vec<u8>>, CopyError> {
    let whole = run(options, key, shards, &[input]);
    for cut in 0..=input.len() {
        let (a, b) = input.split_at(cut);
        assert_eq!(run(options, key, shards, &[a, b]), whole, "cut at {cut}");
    }
    for (c1, c2) in [(1, 2), (2, 5), (3, 4)] {
        if c2 <= input.len() {
            let parts = [&input[..c1], &input[c1..c2], &input[c2..]];
            assert_eq!(run(options, key, shards, &parts), whole, "cuts {c1},{c2}");
        }
    }
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    assert_eq!(run(options, key, shards, &bytes), whole, "byte by byte");
    whole
}

/// The error of splitting `input`, the same whole and at every cut (see [`run_all_cuts`]).
#[track_caller]
fn split_error(options: &CopyOptions, key: usize, shards: usize, input: &[u8]) -> CopyError {
    run_all_cuts(options, key, shards, input).unwrap_err()
}

/// Checks the message of an error in COPY of `users`: `COPY users, line {line}: {what}`.
#[track_caller]
fn assert_message(e: &CopyError, line: u64, what: &str) {
    assert_eq!(e.to_string(), format!("COPY users, line {line}: {what}"));
}

/// Splits `input` over `expected.len()` shards (see [`run_all_cuts`]) and checks each shard's
/// bytes against `expected`.
#[track_caller]
fn assert_split(options: &CopyOptions, key: usize, input: &[u8], expected: &[&[u8]]) {
    let out = run_all_cuts(options, key, expected.len(), input).unwrap();
    for (i, want) in expected.iter().enumerate() {
        assert_eq!(out[i], *want, "shard {i}");
    }
}

/// Every key the splitter hands to `place`, in order (None for NULL).
fn keys(options: &CopyOptions, key: usize, input: &[u8]) -> Result<Vec<Option<String>>, CopyError> {
    let mut splitter = CopySplitter::new(options, key, 1);
    let mut out = vec![BytesMut::new()];
    let mut seen = Vec::new();
    let mut place = |k: KeyField<'_>| {
        seen.push(match k {
            KeyField::Null => None,
            KeyField::Text(t) => Some(t.into_owned()),
            KeyField::Binary(b) => Some(format!("{b:?}")),
        });
        Ok(0)
    };
    splitter.feed(input, &mut place, &mut out)?;
    splitter.finish(&mut place, &mut out)?;
    Ok(seen)
}

/// Checks every key the splitter hands to `place` (see [`keys`]) against `expected`.
#[track_caller]
fn assert_keys(options: &CopyOptions, key: usize, input: &[u8], expected: &[Option<&str>]) {
    let expected: Vec<Option<String>> = expected.iter().map(|k| k.map(String::from)).collect();
    assert_eq!(keys(options, key, input).unwrap(), expected);
}

fn text() -> CopyOptions {
    CopyOptions::for_format(CopyFormat::Text)
}

fn csv() -> CopyOptions {
    CopyOptions::for_format(CopyFormat::Csv)
}

fn binary() -> CopyOptions {
    CopyOptions::for_format(CopyFormat::Binary)
}

fn opts(sql: &str) -> CopyOptions {
    parse_copy(sql).unwrap().options
}

// ------------------------------------------------------------------ text

#[test]
fn text_rows_go_to_their_shards_unchanged() {
    let input = b"1\talice\n2\tbob\n3\tcarol\n4\t\\N\n";
    let expected: [&[u8]; 2] = [b"2\tbob\n4\t\\N\n", b"1\talice\n3\tcarol\n"];
    assert_split(&text(), 0, input, &expected);
}

#[test]
fn text_key_in_a_later_column() {
    let input = b"alice\t1\nbob\t2\n\\N\t3\n";
    let out = run_all_cuts(&text(), 1, 3, input).unwrap();
    assert_eq!(
        out,
        vec![
            b"\\N\t3\n".to_vec(),
            b"alice\t1\n".to_vec(),
            b"bob\t2\n".to_vec()
        ]
    );
}

#[test]
fn text_escapes_in_the_key_are_decoded() {
    let input = b"a\\\tb\t\\x34\\062\nx\t\\N\ny\t\\\\N\nz\tq\\tr\\nx\\\\\\x\\1017\\xg\n";
    let expected = [Some("42"), None, Some("\\N"), Some("q\tr\nx\\xA7xg")];
    assert_keys(&text(), 1, input, &expected);
}

#[test]
fn text_escaped_delimiter_and_newline_are_data() {
    // Field 0 holds an escaped tab and an escaped newline: still one row, key 7.
    let input = b"a\\\tb\\\nc\t7\n8\t9\n";
    let out = run_all_cuts(&text(), 1, 2, input).unwrap();
    assert_eq!(out[1], b"a\\\tb\\\nc\t7\n8\t9\n");
    assert_keys(&text(), 1, input, &[Some("7"), Some("9")]);
}

#[test]
fn text_null_is_matched_before_de_escaping() {
    let o = opts("COPY t FROM STDIN WITH (NULL 'x')");
    assert_keys(&o, 0, b"x\n\\x\n\\N\n", &[None, Some("x"), Some("N")]);
}

#[test]
fn text_crlf_and_cr_line_endings() {
    let crlf: [&[u8]; 2] = [b"2\tb\r\n", b"1\ta\r\n3\tc"];
    assert_split(&text(), 0, b"1\ta\r\n2\tb\r\n3\tc", &crlf);
    let cr: [&[u8]; 2] = [b"2\tb\r", b"1\ta\r3\tc\r"];
    assert_split(&text(), 0, b"1\ta\r2\tb\r3\tc\r", &cr);
}

#[test]
fn text_mixed_line_endings_fail_like_postgres() {
    let e = split_error(&text(), 0, 2, b"1\ta\n2\tb\r\n");
    assert_message(&e, 2, "literal carriage return found in data");
    assert_eq!(e.code(), "22P04");
    let e = split_error(&text(), 0, 2, b"1\ta\r\n2\tb\n");
    assert_message(&e, 2, "literal newline found in data");
    let e = split_error(&text(), 0, 2, b"1\ta\r\n2\tb\r");
    assert_eq!(e.line(), Some(2));
}

#[test]
fn text_last_row_without_newline_counts() {
    let out = run_all_cuts(&text(), 0, 2, b"1\ta\n2\tb").unwrap();
    assert_eq!(out, vec![b"2\tb".to_vec(), b"1\ta\n".to_vec()]);
    // A trailing lone backslash is data of the last row.
    let out = run_all_cuts(&text(), 0, 2, b"1\ta\\").unwrap();
    assert_eq!(out[1], b"1\ta\\");
}

#[test]
fn text_end_marker_is_dropped_with_what_follows() {
    let out = run_all_cuts(&text(), 0, 2, b"1\ta\n2\tb\n\\.\nnot\tdata\n").unwrap();
    assert_eq!(out, vec![b"2\tb\n".to_vec(), b"1\ta\n".to_vec()]);
    let out = run_all_cuts(&text(), 0, 2, b"1\ta\r\n\\.\r\n").unwrap();
    assert_eq!(out, vec![b"".to_vec(), b"1\ta\r\n".to_vec()]);
    // `\\.` is an escaped backslash and a dot: data.
    assert_keys(&text(), 0, b"\\\\.\n", &[Some("\\.")]);
}

#[test]
fn text_end_marker_not_alone_fails() {
    for input in [&b"1\ta\n2\\.\n"[..], b"1\ta\n\\.x\n", b"1\ta\n\\."] {
        let e = split_error(&text(), 0, 2, input);
        assert_eq!(
            e.to_string(),
            "COPY users, line 2: end-of-copy marker is not alone on its line",
            "{input:?}"
        );
    }
}

#[test]
fn text_header_goes_to_every_shard() {
    let o = opts("COPY users (id, name) FROM STDIN WITH (HEADER)");
    let expected: [&[u8]; 3] = [
        b"id\tname\n3\tc\n",
        b"id\tname\n1\ta\n",
        b"id\tname\n2\tb\n",
    ];
    assert_split(&o, 0, b"id\tname\n1\ta\n2\tb\n3\tc\n", &expected);
    // Line numbers count the header.
    let e = run(&o, 0, 3, &[b"id\tname\n1\ta\nx\tb\n"]).unwrap_err();
    assert_message(&e, 3, "invalid input syntax for type bigint: \"x\"");
}

#[test]
fn text_custom_delimiter() {
    let o = opts("COPY t FROM STDIN DELIMITER AS '|'");
    assert_eq!(o.delimiter, b'|');
    let out = run_all_cuts(&o, 1, 2, b"a\\|b|1|x\nc|2|y\n").unwrap();
    assert_eq!(out, vec![b"c|2|y\n".to_vec(), b"a\\|b|1|x\n".to_vec()]);
}

// ------------------------------------------------------------------ CSV

#[test]
fn csv_quotes_delimiters_and_embedded_newlines() {
    let input = b"\"a,b\",1\n\"multi\nline\r\nvalue\",2\n\"say \"\"hi\"\"\",3\nplain,\"4\"\n";
    let expected: [&[u8]; 2] = [
        b"\"multi\nline\r\nvalue\",2\nplain,\"4\"\n",
        b"\"a,b\",1\n\"say \"\"hi\"\"\",3\n",
    ];
    assert_split(&csv(), 1, input, &expected);
}

#[test]
fn csv_key_is_unquoted() {
    let input = b"\"1\",x\n\"say \"\"2\"\"\",y\n\"a,b\"c,z\n\"\",w\n,v\n\"line\nbreak\",u\n";
    let expected = [
        Some("1"),
        Some("say \"2\""),
        Some("a,bc"),
        Some(""),
        None,
        Some("line\nbreak"),
    ];
    assert_keys(&csv(), 0, input, &expected);
}

#[test]
fn csv_null_vs_quoted_empty() {
    let o = opts("COPY t FROM STDIN WITH (FORMAT csv, NULL 'NULL')");
    let expected = [None, Some("NULL"), Some("")];
    assert_keys(&o, 0, b"NULL\n\"NULL\"\n\n", &expected);
    let o = opts("COPY t (id) FROM STDIN WITH (FORMAT csv, FORCE_NULL (id))");
    let mut s = CopySplitter::new(&o, 0, 1).with_context("t", "id");
    let mut seen = Vec::new();
    let mut out = vec![BytesMut::new()];
    let mut place = |k: KeyField<'_>| {
        seen.push(k == KeyField::Null);
        Ok(0)
    };
    s.feed(b"\"\"\n\n\"x\"\n", &mut place, &mut out).unwrap();
    s.finish(&mut place, &mut out).unwrap();
    assert_eq!(seen, vec![true, true, false]);
    // Without the key column in the list, FORCE_NULL does not apply to it.
    let o = opts("COPY t (id, v) FROM STDIN WITH (FORMAT csv, FORCE_NULL (v))");
    assert_keys(&o, 0, b"\"\"\n", &[Some("")]);
    let o = opts("COPY t FROM STDIN WITH (FORMAT csv, FORCE_NOT_NULL *)");
    assert_keys(&o, 0, b",x\n", &[Some("")]);
}

#[test]
fn csv_custom_quote_and_escape() {
    let o = opts("COPY t FROM STDIN WITH (FORMAT csv, QUOTE '''', ESCAPE '\\', DELIMITER ';')");
    assert_eq!((o.quote, o.escape, o.delimiter), (b'\'', b'\\', b';'));
    let input = b"'a\\'b;\nc';1\n'x\\\\';2\n";
    assert_split(&o, 1, input, &[b"'x\\\\';2\n", b"'a\\'b;\nc';1\n"]);
    assert_keys(&o, 0, input, &[Some("a'b;\nc"), Some("x\\")]);
}

#[test]
fn csv_backslash_dot_is_data() {
    let out = run_all_cuts(&csv(), 1, 2, b"\\.,1\n").unwrap();
    assert_eq!(out[1], b"\\.,1\n");
}

#[test]
fn csv_header_goes_to_every_shard() {
    let o = opts("COPY t FROM STDIN WITH CSV HEADER");
    assert!(o.header);
    let input = b"\"i\nd\",name\r\n1,a\r\n2,b\r\n";
    let expected: [&[u8]; 2] = [b"\"i\nd\",name\r\n2,b\r\n", b"\"i\nd\",name\r\n1,a\r\n"];
    assert_split(&o, 0, input, &expected);
}

#[test]
fn csv_line_numbers_count_embedded_newlines() {
    let e = split_error(&csv(), 1, 2, b"a,1\n\"b\nc\nd\",2\ne,x\n");
    assert_message(&e, 5, "invalid input syntax for type bigint: \"x\"");
    assert_eq!(e.code(), "22P02");
}

#[test]
fn csv_unterminated_quote_fails() {
    let e = split_error(&csv(), 0, 2, b"1,a\n\"2,b\n");
    assert_message(&e, 3, "unterminated CSV quoted field");
    let e = split_error(&csv(), 0, 2, b"1,a\n\"2\n");
    assert_eq!(e.code(), "22P04");
}

#[test]
fn csv_unquoted_carriage_return_fails() {
    let e = split_error(&csv(), 0, 2, b"1,a\n2,b\rc\n");
    assert_message(&e, 2, "unquoted carriage return found in data");
}

// ------------------------------------------------------------------ binary

fn bin_header(extension: &[u8]) -> Vec<u8> {
    let mut v = b"PGCOPY\n\xff\r\n\0".to_vec();
    v.extend_from_slice(&0i32.to_be_bytes());
    v.extend_from_slice(&(extension.len() as i32).to_be_bytes());
    v.extend_from_slice(extension);
    v
}

fn bin_tuple(id: Option<i64>, name: &[u8]) -> Vec<u8> {
    let mut v = 2i16.to_be_bytes().to_vec();
    match id {
        Some(id) => {
            v.extend_from_slice(&8i32.to_be_bytes());
            v.extend_from_slice(&id.to_be_bytes());
        }
        None => v.extend_from_slice(&(-1i32).to_be_bytes()),
    }
    v.extend_from_slice(&(name.len() as i32).to_be_bytes());
    v.extend_from_slice(name);
    v
}

#[test]
fn binary_header_and_trailer_go_to_every_shard() {
    let header = bin_header(b"ext");
    let t1 = bin_tuple(Some(1), b"alice");
    let t2 = bin_tuple(Some(2), b"bob");
    let t3 = bin_tuple(None, b"");
    let t4 = bin_tuple(Some(5), b"carol");
    let mut input = header.clone();
    for t in [&t1, &t2, &t3, &t4] {
        input.extend_from_slice(t);
    }
    let without_trailer = input.clone();
    input.extend_from_slice(&[0xff, 0xff]);
    let out = run_all_cuts(&binary(), 0, 2, &input).unwrap();
    let expect0 = [&header[..], &t2, &t3, &[0xff, 0xff]].concat();
    let expect1 = [&header[..], &t1, &t4, &[0xff, 0xff]].concat();
    assert_eq!(out, vec![expect0, expect1]);
    // Postgres accepts data that ends without a trailer; every shard still gets one.
    assert_eq!(
        run_all_cuts(&binary(), 0, 2, &without_trailer).unwrap(),
        out
    );
}

#[test]
fn binary_key_in_second_field() {
    let mut input = bin_header(b"");
    let mut t = 2i16.to_be_bytes().to_vec();
    t.extend_from_slice(&(-1i32).to_be_bytes());
    t.extend_from_slice(&8i32.to_be_bytes());
    t.extend_from_slice(&3i64.to_be_bytes());
    input.extend_from_slice(&t);
    let out = run_all_cuts(&binary(), 1, 2, &input).unwrap();
    assert_eq!(out[1], [&bin_header(b"")[..], &t, &[0xff, 0xff]].concat());
}

#[test]
fn binary_errors() {
    let header = bin_header(b"");
    let t = bin_tuple(Some(1), b"x");
    // Data after the trailer.
    let input = [&header[..], &t, &[0xff, 0xff], &t].concat();
    let e = split_error(&binary(), 0, 2, &input);
    assert_message(&e, 2, "received copy data after EOF marker");
    // Truncated tuple.
    let input = [&header[..], &t, &t[..5]].concat();
    let e = split_error(&binary(), 0, 2, &input);
    assert_message(&e, 2, "unexpected EOF in COPY data");
    // Bad signature, empty input.
    let e = split_error(&binary(), 0, 2, b"PGCOPX\n");
    assert_message(&e, 0, "COPY file signature not recognized");
    let e = run(&binary(), 0, 2, &[]).unwrap_err();
    assert_eq!(e.code(), "22P04");
    // Too few fields, bad field size.
    let mut short = 1i16.to_be_bytes().to_vec();
    short.extend_from_slice(&(-1i32).to_be_bytes());
    let e = run(&binary(), 1, 2, &[&header, &short]).unwrap_err();
    assert_message(&e, 1, "row field count is 1, expected at least 2");
    let mut bad = 2i16.to_be_bytes().to_vec();
    bad.extend_from_slice(&(-2i32).to_be_bytes());
    let e = run(&binary(), 0, 2, &[&header, &bad]).unwrap_err();
    assert_message(&e, 1, "invalid field size");
    // Key the placement refuses.
    let mut four = 1i16.to_be_bytes().to_vec();
    four.extend_from_slice(&4i32.to_be_bytes());
    four.extend_from_slice(&7i32.to_be_bytes());
    let e = run(&binary(), 0, 2, &[&header, &four]).unwrap_err();
    assert_eq!(e.code(), "22P03");
    // WITH OIDS flag.
    let mut oids = header.clone();
    oids[11..15].copy_from_slice(&(1i32 << 16).to_be_bytes());
    let e = run(&binary(), 0, 2, &[&oids]).unwrap_err();
    assert_message(&e, 0, "invalid COPY file header (WITH OIDS)");
}

// ------------------------------------------------------------------ errors and contract

#[test]
fn too_few_fields_names_the_line() {
    let e = split_error(&text(), 2, 2, b"1\ta\t3\n2\tc\n");
    assert_message(&e, 2, "missing data for column \"id\"");
    assert_eq!(e.code(), "22P04");
    let e = split_error(&csv(), 1, 2, b"a,1\nb,2\n3\n");
    assert_eq!(e.line(), Some(3));
}

#[test]
fn key_errors_carry_the_placement_code() {
    let e = split_error(&text(), 0, 2, b"1\ta\n2\tb\nx\tc\n");
    assert_message(&e, 3, "invalid input syntax for type bigint: \"x\"");
    assert_eq!(e.code(), "22P02");
    // Without context the table is left out.
    let mut s = CopySplitter::new(&text(), 0, 2);
    let mut out = vec![BytesMut::new(), BytesMut::new()];
    let e = s.feed(b"y\n", &mut modulo(2), &mut out).unwrap_err();
    assert_eq!(
        e.to_string(),
        "COPY, line 1: invalid input syntax for type bigint: \"y\""
    );
}

#[test]
fn invalid_utf8_key_fails() {
    let e = run(&text(), 0, 2, &[b"\xff\n"]).unwrap_err();
    assert_eq!(e.code(), "22021");
    assert_message(&e, 1, "invalid byte sequence for encoding \"UTF8\": 0xff");
    let e = run(&text(), 0, 2, &[b"\\000\n"]).unwrap_err();
    assert_eq!(e.code(), "22021");
}

#[test]
fn default_marker_in_key_is_refused() {
    let o = opts("COPY t FROM STDIN WITH (DEFAULT 'd')");
    let e = run(&o, 0, 2, &[b"d\tx\n"]).unwrap_err();
    assert_eq!(e.code(), "0A000");
    // In another column it is fine.
    assert!(run(&o, 0, 2, &[b"1\td\n"]).is_ok());
}

#[test]
fn on_error_ignore_skips_bad_keys() {
    let o = opts("COPY t FROM STDIN WITH (ON_ERROR ignore, REJECT_LIMIT 2)");
    let mut s = CopySplitter::new(&o, 0, 2);
    let mut out = vec![BytesMut::new(), BytesMut::new()];
    let mut place = modulo(2);
    s.feed(b"1\nx\n2\ny\n", &mut place, &mut out).unwrap();
    assert_eq!((s.rows(), s.skipped()), (2, 2));
    assert_eq!(out[0], b"2\n"[..]);
    let e = s.feed(b"z\n", &mut place, &mut out).unwrap_err();
    assert_eq!(e.code(), "22000");
    // Format errors are never skipped.
    let mut s = CopySplitter::new(&o, 1, 2);
    let e = s.feed(b"1\n", &mut place, &mut out).unwrap_err();
    assert_eq!(e.code(), "22P04");
}

#[test]
fn contract_errors() {
    let mut s = CopySplitter::new(&text(), 0, 2);
    let mut one = vec![BytesMut::new()];
    let e = s.feed(b"1\n", &mut modulo(2), &mut one).unwrap_err();
    assert_eq!(e.code(), "XX000");
    let mut out = vec![BytesMut::new(), BytesMut::new()];
    let e = s.feed(b"1\n", &mut |_| Ok(7), &mut out).unwrap_err();
    assert_eq!(e.code(), "XX000");
    let mut s = CopySplitter::new(&text(), 0, 2);
    s.finish(&mut modulo(2), &mut out).unwrap();
    assert!(s.feed(b"1\n", &mut modulo(2), &mut out).is_err());
}

#[test]
fn many_rows_across_arbitrary_messages() {
    let mut input = Vec::new();
    for i in 0..2000 {
        input.extend_from_slice(format!("{i}\t\"name {i}\"\t\\N\n").as_bytes());
    }
    let whole = run(&text(), 0, 4, &[&input]).unwrap();
    let chunks: Vec<&[u8]> = input.chunks(37).collect();
    assert_eq!(run(&text(), 0, 4, &chunks).unwrap(), whole);
    let total: usize = whole.iter().map(Vec::len).sum();
    assert_eq!(total, input.len());
    assert!(whole.iter().all(|s| s.len() > input.len() / 5));
}

// ------------------------------------------------------------------ parse_copy

#[test]
fn parse_tables_columns_and_direction() {
    let s = parse_copy("COPY users FROM STDIN").unwrap();
    assert_eq!(s.schema, None);
    assert_eq!(s.table, "users");
    assert!(s.columns.is_empty());
    assert!(s.from && s.stdio && !s.query && !s.where_clause);
    assert_eq!(s.options, CopyOptions::default());

    let s = parse_copy("copy app.\"Users\" (id, \"Name\") from stdin where id > 0").unwrap();
    assert_eq!(s.schema.as_deref(), Some("app"));
    assert_eq!(s.table, "Users");
    assert_eq!(s.columns, vec!["id", "Name"]);
    assert!(s.where_clause);

    let s = parse_copy("COPY users TO STDOUT").unwrap();
    assert!(!s.from && s.stdio);
    let s = parse_copy("COPY users FROM '/tmp/x.csv'").unwrap();
    assert!(s.from && !s.stdio);
    let s = parse_copy("COPY users FROM PROGRAM 'cat x'").unwrap();
    assert!(!s.stdio);

    let s =
        parse_copy("COPY (SELECT * FROM users WHERE id = 1) TO STDOUT WITH (FORMAT csv)").unwrap();
    assert!(s.query && !s.from && s.stdio);
    assert!(s.table.is_empty() && s.schema.is_none() && s.columns.is_empty());
    assert_eq!(s.options.format, CopyFormat::Csv);
}

#[test]
fn parse_new_option_syntax() {
    let o = opts(
        "COPY t FROM STDIN WITH (FORMAT csv, HEADER true, DELIMITER ';', NULL 'x', QUOTE '''', \
         ESCAPE '\\', FORCE_NULL (a, b), FORCE_NOT_NULL *, ENCODING 'UTF8')",
    );
    assert_eq!(o.format, CopyFormat::Csv);
    assert!(o.header);
    assert_eq!((o.delimiter, o.quote, o.escape), (b';', b'\'', b'\\'));
    assert_eq!(o.null, "x");
    assert_eq!(
        o.force_null,
        ForceColumns::List(vec!["a".into(), "b".into()])
    );
    assert_eq!(o.force_not_null, ForceColumns::All);
    assert_eq!(o.encoding.as_deref(), Some("UTF8"));

    let o = opts("COPY t FROM STDIN (FORMAT 'csv')");
    assert_eq!(
        (o.delimiter, o.quote, o.escape, o.null.as_str()),
        (b',', b'"', b'"', "")
    );
    assert!(!o.header);
    let o = opts("COPY t FROM STDIN (FORMAT text)");
    assert_eq!((o.delimiter, o.null.as_str()), (b'\t', "\\N"));
    assert_eq!(
        opts("COPY t FROM STDIN (FORMAT binary)").format,
        CopyFormat::Binary
    );
    for header in [
        "HEADER",
        "HEADER on",
        "HEADER 1",
        "HEADER match",
        "HEADER 't'",
        "HEADER yes",
    ] {
        assert!(
            opts(&format!("COPY t FROM STDIN (FORMAT csv, {header})")).header,
            "{header}"
        );
    }
    for header in ["HEADER off", "HEADER 0", "HEADER false", "HEADER 'no'"] {
        assert!(
            !opts(&format!("COPY t FROM STDIN (FORMAT csv, {header})")).header,
            "{header}"
        );
    }
    assert!(opts("COPY t FROM STDIN (HEADER)").header);
    let o = opts("COPY t FROM STDIN (FORMAT csv, ESCAPE '\\')");
    assert_eq!((o.quote, o.escape), (b'"', b'\\'));
    let o = opts("COPY t FROM STDIN (ON_ERROR ignore, REJECT_LIMIT 10, LOG_VERBOSITY verbose)");
    assert_eq!((o.on_error, o.reject_limit), (OnError::Ignore, Some(10)));
    assert_eq!(
        opts("COPY t FROM STDIN (DEFAULT '\\D')").default.as_deref(),
        Some("\\D")
    );
    assert_eq!(opts("COPY t FROM STDIN (FREEZE)").format, CopyFormat::Text);
}

#[test]
fn parse_legacy_option_syntax() {
    let o = opts("COPY t FROM STDIN WITH CSV HEADER");
    assert_eq!(o.format, CopyFormat::Csv);
    assert!(o.header);
    let o = opts("COPY t FROM STDIN WITH CSV HEADER DELIMITER AS ';' NULL AS 'n' QUOTE AS '$' ESCAPE AS '!' FORCE NOT NULL a, b");
    assert_eq!((o.delimiter, o.quote, o.escape), (b';', b'$', b'!'));
    assert_eq!(o.null, "n");
    assert_eq!(
        o.force_not_null,
        ForceColumns::List(vec!["a".into(), "b".into()])
    );
    assert_eq!(opts("COPY t FROM STDIN BINARY").format, CopyFormat::Binary);
    assert_eq!(opts("COPY BINARY t FROM STDIN").format, CopyFormat::Binary);
    assert_eq!(
        opts("COPY t FROM STDIN WITH BINARY").format,
        CopyFormat::Binary
    );
    let o = opts("COPY t FROM STDIN DELIMITER '|' NULL ''");
    assert_eq!(
        (o.format, o.delimiter, o.null.as_str()),
        (CopyFormat::Text, b'|', "")
    );
    let o = opts("COPY t FROM STDIN USING DELIMITERS ','");
    assert_eq!(o.delimiter, b',');
    let o = opts("COPY t TO STDOUT CSV FORCE QUOTE *");
    assert_eq!(o.format, CopyFormat::Csv);
    assert!(opts("COPY t FROM STDIN CSV FORCE NULL a")
        .force_null
        .contains("a"));
}

#[test]
fn parse_refuses_what_postgres_refuses() {
    let cases: &[(&str, &str)] = &[
        ("COPY t FROM STDIN (FORMAT xml)", "22023"),
        ("COPY t FROM STDIN (FORMAT csv, FORMAT text)", "42601"),
        ("COPY t FROM STDIN (DELIMITER ';;')", "0A000"),
        ("COPY t FROM STDIN (DELIMITER 'a')", "22023"),
        ("COPY t FROM STDIN (DELIMITER E'\\n')", "22023"),
        ("COPY t FROM STDIN (FORMAT binary, HEADER)", "42601"),
        ("COPY t FROM STDIN (FORMAT binary, DELIMITER ',')", "42601"),
        ("COPY t FROM STDIN (QUOTE '\"')", "0A000"),
        ("COPY t FROM STDIN (FORMAT csv, DELIMITER '\"')", "22023"),
        ("COPY t FROM STDIN (FORMAT csv, NULL '\"')", "22023"),
        ("COPY t FROM STDIN (NULL E'\\t')", "22023"),
        ("COPY t TO STDOUT (FORMAT csv, HEADER match)", "0A000"),
        ("COPY t FROM STDIN (FORMAT csv, FORCE_QUOTE *)", "42601"),
        ("COPY t FROM STDIN (HEADER maybe)", "22023"),
        ("COPY t FROM STDIN (BOGUS 1)", "42601"),
        ("COPY t FROM STDIN (ENCODING 'SJIS')", "0A000"),
        ("COPY t FROM STDIN (REJECT_LIMIT 3)", "22023"),
        (
            "COPY t FROM STDIN (FORMAT binary, ON_ERROR ignore)",
            "0A000",
        ),
        ("COPY t FROM STDIN (DEFAULT '\\N')", "22023"),
        ("COPY t FROM STDIN (FREEZE maybe)", "22023"),
    ];
    for (sql, code) in cases {
        let e = parse_copy(sql).unwrap_err();
        assert_eq!(e.code(), *code, "{sql}: {e}");
    }
    assert_eq!(
        parse_copy("COPY t FROM STDIN (FORMAT xml)")
            .unwrap_err()
            .to_string(),
        "COPY format \"xml\" not recognized"
    );
    assert!(matches!(
        parse_copy("COPY t FROM"),
        Err(CopyError::Syntax(_))
    ));
    assert!(matches!(parse_copy("SELECT 1"), Err(CopyError::NotCopy(_))));
    assert!(matches!(
        parse_copy("COPY t FROM STDIN; COPY t FROM STDIN"),
        Err(CopyError::NotCopy(_))
    ));
    assert_eq!(parse_copy("SELECT 1").unwrap_err().code(), "42601");
}

#[test]
fn random_inputs_split_the_same_at_every_cut() {
    // Small xorshift generator: deterministic, no dependency.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let alphabet = b"12\t,\n\r\\\".'Nx";
    let formats = [
        text(),
        csv(),
        opts("COPY t FROM STDIN (FORMAT csv, ESCAPE '\\', HEADER)"),
        opts("COPY t FROM STDIN (FORMAT text, HEADER, NULL '')"),
    ];
    for round in 0..400 {
        let len = (next() % 24) as usize;
        let input: Vec<u8> = (0..len)
            .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
            .collect();
        let options = &formats[round % formats.len()];
        let key = (next() % 2) as usize;
        // Whatever the outcome, it does not depend on where the messages were cut.
        let _ = run_all_cuts(options, key, 3, &input);
    }
    for _ in 0..200 {
        let mut input = bin_header(b"");
        for _ in 0..(next() % 3) {
            input.extend_from_slice(&bin_tuple(Some(next() as i64 % 10), b"ab"));
        }
        let cut = (next() as usize) % (input.len() + 1);
        let _ = run_all_cuts(&binary(), 0, 3, &input[..cut]);
    }
}
