//! Client encodings other than UTF-8 work as with Postgres: the login reports the encoding
//! under Postgres' name, query text in the client's encoding is forwarded as the client sent
//! it (SET values in it stay on the client's server), and an unknown encoding is refused.
//! Each exchange runs directly against Postgres and through pgdog: the answers must be equal.
use crate::common;
use common::raw::{self, Conn, Msg};
use common::*;

/// The login's answer: the client_encoding reported (or the error) and the end.
async fn login(port: u16, user: &str, db: &str, encoding: &str) -> (Conn, String) {
    let mut c = Conn::connect(port).await;
    let params = [
        ("user", user),
        ("database", db),
        ("client_encoding", encoding),
    ];
    c.send(&raw::startup(&params)).await;
    let mut seen = Vec::new();
    while let Some(m) = c.recv().await {
        match m.tag {
            b'S' if m.body.starts_with(b"client_encoding\0") => {
                seen.push(String::from_utf8_lossy(&m.body[16..m.body.len() - 1]).into_owned())
            }
            b'E' => seen.push(format!("E({})", m.sqlstate().unwrap_or_default())),
            b'Z' => break,
            _ => {}
        }
    }
    (c, seen.join(" "))
}

/// A simple query whose text is `sql` as bytes (any encoding): the values of its rows' first
/// columns as bytes, and the errors' SQLSTATEs.
async fn query_bytes(c: &mut Conn, sql: &[u8]) -> Vec<Vec<u8>> {
    c.send(&raw::msg(b'Q', &[sql, b"\0"].concat())).await;
    let msgs: Vec<Msg> = c.until_ready().await;
    msgs.iter()
        .filter_map(|m| match m.tag {
            b'D' => {
                let len = i32::from_be_bytes([m.body[2], m.body[3], m.body[4], m.body[5]]);
                Some(m.body[6..6 + len.max(0) as usize].to_vec())
            }
            b'E' => Some(m.sqlstate().unwrap_or_default().into_bytes()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latin9_clients_as_with_postgres() {
    let (topo, proxy) = pgdog("auth_type = \"trust\"", 2);
    let direct_port = topo.primary().port;
    for spelling in ["latin9", "ISO-8859-15", "utf-8", "euc-jp", "klingon"] {
        let (_, want) = login(direct_port, "postgres", "postgres", spelling).await;
        let (_, got) = login(proxy.port, USER, DB, spelling).await;
        assert_eq!(got, want, "client_encoding = {spelling}");
    }
    let (mut directly, _) = login(direct_port, "postgres", "postgres", "LATIN9").await;
    let (mut through, _) = login(proxy.port, USER, DB, "LATIN9").await;
    // "café" and "naïve" in LATIN9 bytes (not UTF-8).
    let statements: [&[u8]; 4] = [
        b"SELECT 'caf\xe9' AS word, length('caf\xe9')::text",
        b"SET application_name = 'na\xefve'",
        b"SELECT current_setting('application_name')",
        b"SELECT 'caf\xe9' = convert_from('\\x636166c3a9', 'UTF8')",
    ];
    for sql in statements {
        let want = query_bytes(&mut directly, sql).await;
        let got = query_bytes(&mut through, sql).await;
        assert_eq!(got, want, "{}", String::from_utf8_lossy(sql));
    }
    // The SET stays with this client (its server is pinned to it): another client sees its own.
    let other = connect(&proxy).await;
    assert_ne!(one(&other, "SHOW application_name").await, "na\u{ef}ve");
}

/// The transcript of `msgs`: tags, with the SQLSTATE of errors and the ReadyForQuery status.
fn tags_and_codes(msgs: &[Msg]) -> String {
    let one = |m: &Msg| match m.tag {
        b'E' => format!("E({})", m.sqlstate().unwrap_or_default()),
        b'Z' => format!("Z({})", m.body[0] as char),
        other => (other as char).to_string(),
    };
    msgs.iter().map(one).collect::<Vec<_>>().join(" ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_yet_supported_encodings_get_an_error_not_a_disconnect() {
    // Transaction mode, prepared statements: pgdog's shared statements are UTF-8 text.
    let (_topo, proxy) = pgdog("auth_type = \"trust\"", 1);
    let (mut c, _) = login(proxy.port, USER, DB, "LATIN9").await;
    let parse = raw::msg(b'P', b"s\0SELECT 'caf\xe9'\0\0\0");
    c.send(&[parse, raw::sync()].concat()).await;
    assert_eq!(tags_and_codes(&c.until_ready().await), "E(0A000) Z(I)");
    assert_eq!(
        query_bytes(&mut c, b"SELECT 'caf\xe9'").await,
        vec![b"caf\xe9".to_vec()]
    );
    // A sharded database routes by the text: UTF-8 only, for now.
    let topo = topology::Topology::shards(2).expect("topology");
    let mut config = String::from("auth_type = \"trust\"\n");
    for (i, node) in topo.nodes().iter().enumerate() {
        config.push_str(&database(node.port, &format!("shard = {i}\n")));
    }
    config.push_str("\n[[sharded_tables]]\ndatabase = \"app\"\nname = \"t\"\ncolumn = \"id\"\n");
    let sharded = start_with(&config, &users(""));
    let (mut c, _) = login(sharded.port, USER, DB, "LATIN9").await;
    c.send(&raw::msg(b'Q', b"SELECT 'caf\xe9'\0")).await;
    assert_eq!(tags_and_codes(&c.until_ready().await), "E(0A000) Z(I)");
    let parse = raw::msg(b'P', b"s\0SELECT 'caf\xe9'\0\0\0");
    c.send(&[parse, raw::sync()].concat()).await;
    assert_eq!(tags_and_codes(&c.until_ready().await), "E(0A000) Z(I)");
    assert_eq!(
        query_bytes(&mut c, b"SELECT 'cafe'").await,
        vec![b"cafe".to_vec()]
    );
}
