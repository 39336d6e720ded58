//! Profiling helper: runs one parser operation in a loop, for perf:
//! `parser-profile full|router|raw [N] [FILE.sql]`.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .get(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    // Optional third argument: a file holding the SQL to parse.
    let from_file = args
        .get(3)
        .map(|path| std::fs::read_to_string(path).expect("reading the SQL file"));
    let sql = from_file
        .as_deref()
        .unwrap_or("SELECT * FROM users WHERE id = $1");
    for _ in 0..n {
        match args.get(1).map(String::as_str) {
            Some("router") => {
                std::hint::black_box(pg_query_raw::router::parse(sql).unwrap());
            }
            Some("raw") => {
                std::hint::black_box(pg_query_raw::raw_parse_only(sql).unwrap());
            }
            _ => {
                std::hint::black_box(pg_query_raw::parse_protobuf(sql).unwrap());
            }
        }
    }
}
