fn main() {
    for sql in std::env::args().skip(1) {
        let ours = pg_query_raw::parse(&sql);
        let theirs = pg_query::parse(&sql, 0);
        match (&ours, &theirs) {
            (Ok(a), Ok(b)) => {
                println!("tree equal: {}", a.protobuf == b.protobuf);
                if a.protobuf != b.protobuf {
                    println!("ours {:?}\ntheirs {:?}", a.protobuf, b.protobuf);
                }
                let d1 = pg_query_raw::deparse(&a.protobuf);
                let d2 = pg_query::deparse(&b.protobuf, Default::default());
                println!("deparse: {:?} vs {:?}", d1, d2);
            }
            _ => println!(
                "ours {:?}\ntheirs {:?}",
                ours.map(|_| ()),
                theirs.map(|_| ())
            ),
        }
    }
}
