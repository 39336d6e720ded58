//! Runs every pg_query_raw entry point over the whole corpus plus error and edge cases, for a
//! leak checker: `bash scripts/leak-check.sh` runs it under valgrind and fails on any leak.
//! `leak_check PART PARTS` runs only statements PART, PART + PARTS, ... (and the one-off checks
//! only in part 0), so that the parts together cover everything, one valgrind per core.
use std::path::PathBuf;

/// `PART PARTS` from the command line (`0 1`, the whole run, without them).
fn part() -> (usize, usize) {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("PART and PARTS are whole numbers"))
        .collect();
    match args[..] {
        [] => (0, 1),
        [part, parts] if part < parts => (part, parts),
        _ => panic!("usage: leak_check [PART PARTS] (PART below PARTS)"),
    }
}

fn main() {
    let (part, parts) = part();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut statements = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .expect("corpus folder")
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "sql"))
    {
        let text = std::fs::read_to_string(path).expect("corpus file");
        statements.extend(
            pg_query_raw::split(&text)
                .expect("split")
                .into_iter()
                .map(str::to_string),
        );
    }
    // Errors and edge cases must not leak either.
    statements.extend(
        [
            "SELEC 1",
            "SELECT 'open",
            "SELECT 1 +",
            "",
            ";",
            "SELECT 1; SELEC 2",
            "SELECT (((((1)))))",
        ]
        .map(String::from),
    );
    statements.push(format!("SELECT {}1", "1+".repeat(5000)));
    let mut ok = 0;
    let mine: Vec<&String> = statements.iter().skip(part).step_by(parts).collect();
    for sql in &mine {
        if let Ok(tree) = pg_query_raw::parse(sql) {
            ok += 1;
            let _ = pg_query_raw::deparse(&tree.protobuf);
        }
        let _ = pg_query_raw::parse_protobuf(sql);
        let _ = pg_query_raw::router::parse(sql);
        let _ = pg_query_raw::fingerprint(sql, 0);
        let _ = pg_query_raw::normalize(sql);
        let _ = pg_query_raw::scan(sql);
        let _ = pg_query_raw::split(sql);
    }
    println!(
        "part {part} of {parts}: {} statements, {ok} parsed",
        mine.len()
    );
    if part != 0 {
        return;
    }
    let _ = pg_query_raw::parse("SELECT \0");
    // A worker thread too: libpg_query frees a thread's top memory context when it exits.
    std::thread::spawn(|| pg_query_raw::parse("SELECT 1").map(|_| ()))
        .join()
        .expect("thread")
        .expect("parse");
    if std::env::var_os("LEAK_ON_PURPOSE").is_some() {
        // Proves the check can fail: this allocation is never freed.
        std::mem::forget(vec![0u8; 1024]);
    }
}
