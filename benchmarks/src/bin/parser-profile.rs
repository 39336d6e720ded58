//! Profiling helper: runs one parser operation in a loop (`parser-profile OP N`), for perf.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .get(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let analytic = std::fs::read_to_string("/tmp/analytic.sql").unwrap_or_default();
    let sql = if args.get(3).is_some_and(|a| a == "analytic") { analytic.as_str() } else { "SELECT * FROM users WHERE id = $1" };
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
