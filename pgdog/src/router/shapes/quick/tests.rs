use super::super::scanned;
use super::*;

/// Every `.sql` file of the parser corpus, whole and line by line.
fn corpus() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../pg_query_raw/corpus");
    let mut texts = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("corpus") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "sql") {
            let text = std::fs::read_to_string(&path).expect("read");
            texts.extend(text.lines().map(str::to_string));
            texts.push(text);
        }
    }
    assert!(texts.len() > 500, "corpus: {} texts", texts.len());
    texts
}

/// When the quick scan answers, it is the scanner's answer.
fn agree(sql: &str) -> bool {
    let quick = literals(sql);
    if let Some(q) = &quick {
        assert_eq!(Some(q), scanned(sql).as_ref(), "{sql:?}");
    }
    quick.is_some()
}

#[test]
fn the_corpus_reads_as_the_scanner_reads_it() {
    let texts = corpus();
    let answered = texts.iter().filter(|t| agree(t)).count();
    // Most texts are in the subset it reads; the rest go to the scanner.
    assert!(answered * 2 > texts.len(), "{answered} of {}", texts.len());
}

#[test]
fn mutated_texts_read_as_the_scanner_reads_them() {
    // Each corpus line with tricky bytes put in at pseudo-random places, many times.
    const BITS: [&str; 28] = [
        "'",
        "''",
        "\"",
        "-",
        "--",
        "/*",
        "*/",
        ".",
        "e",
        "E",
        "$",
        "\n",
        "\n'",
        "0",
        "1.",
        "&",
        "_",
        "x",
        "\\",
        " ",
        "9999999999",
        "'a'",
        "1e",
        "/",
        "'x'\n'y'",
        "U&",
        "\n--c\n",
        "b",
    ];
    let mut seed: u64 = 0x9E3779B97F4A7C15;
    let mut next = |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let (mut answered, mut tried) = (0, 0);
    for line in corpus().iter().filter(|t| !t.contains('\n')).take(400) {
        for _ in 0..20 {
            let mut text = line.clone();
            for _ in 0..1 + next(3) {
                // Half the time next to a quote or a digit, where the literal forms differ.
                let near: Vec<usize> = text
                    .bytes()
                    .enumerate()
                    .filter(|(_, c)| matches!(c, b'\'' | b'0'..=b'9'))
                    .map(|(i, _)| i + next(2))
                    .collect();
                let mut at = match near.len() {
                    n if n > 0 && next(2) == 0 => near[next(n)],
                    _ => next(text.len() + 1),
                };
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                text.insert_str(at, BITS[next(BITS.len())]);
            }
            tried += 1;
            answered += usize::from(agree(&text));
        }
    }
    assert!(answered * 5 > tried, "{answered} of {tried}");
}

#[test]
fn reads_the_plain_forms() {
    let sql = "SELECT \"a\"\"1\", t1.x2, 'it''s', 42, 2147483648, 1.50 FROM t -- 7\n WHERE y /* '8' /* 9 */ */ = 3";
    let got: Vec<(&str, Const)> = literals(sql)
        .expect("read")
        .into_iter()
        .map(|l| (&sql[l.start..l.end], l.value))
        .collect();
    assert_eq!(
        got,
        vec![
            ("'it''s'", Const::String("it's".into())),
            ("42", Const::Integer(42)),
            ("2147483648", Const::Numeric("2147483648".into())),
            ("1.50", Const::Numeric("1.50".into())),
            ("3", Const::Integer(3)),
        ]
    );
    assert!(agree(sql));
}

#[test]
fn leaves_the_other_forms_to_the_scanner() {
    for sql in [
        "SELECT E'a'",
        "SELECT 'a\\b'",
        "SELECT $1",
        "SELECT $$a$$",
        "SELECT 0x10",
        "SELECT 1_000",
        "SELECT 1e5",
        "SELECT .5",
        "SELECT 1.",
        "SELECT 1..2",
        "SELECT 1a",
        "SELECT B'01'",
        "SELECT U&'a'",
        "SELECT 'a'\n'b'",
        "SELECT 'a' -- c\n'b'",
        "SELECT 'unterminated",
        "SELECT \"unterminated",
        "SELECT \"\"",
        "SELECT 1 /* unterminated",
    ] {
        assert_eq!(literals(sql), None, "{sql}");
    }
}
