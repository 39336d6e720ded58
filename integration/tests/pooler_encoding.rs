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

/// The transcript of `msgs`: each message's tag and body, but an error's SQLSTATE only (its
/// text may name things differently) and no ParameterStatus or notice.
fn transcript(msgs: &[Msg]) -> String {
    let one = |m: &Msg| match m.tag {
        b'E' => Some(format!("E({})", m.sqlstate().unwrap_or_default())),
        b'S' | b'N' => None,
        tag => Some(format!("{}{:x?}", tag as char, m.body)),
    };
    msgs.iter().filter_map(one).collect::<Vec<_>>().join(" ")
}

/// A message of the extended protocol whose fields are `parts`, each NUL-terminated, then
/// `tail` (for Parse: no parameter types).
fn extended(tag: u8, parts: &[&[u8]], tail: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    for p in parts {
        body.extend_from_slice(p);
        body.push(0);
    }
    body.extend_from_slice(tail);
    raw::msg(tag, &body)
}

/// Describe or Close (`tag`) of the statement or portal (`kind`) `name`.
fn target(tag: u8, kind: u8, name: &[u8]) -> Vec<u8> {
    raw::msg(tag, &[&[kind][..], name, b"\0"].concat())
}

/// Bind of `portal` to `statement` with one text parameter, results as text.
fn bind_one(portal: &[u8], statement: &[u8], value: &[u8]) -> Vec<u8> {
    let mut tail = vec![0, 0, 0, 1];
    tail.extend_from_slice(&(value.len() as i32).to_be_bytes());
    tail.extend_from_slice(value);
    tail.extend_from_slice(&[0, 0]);
    extended(b'B', &[portal, statement], &tail)
}

/// Named statements and portals in EUC_JP and SJIS (SJIS puts `{` and `\` inside its
/// characters): the transcript of a batch through pgdog in transaction mode, two clients
/// sharing the statement, is Postgres' own, byte for byte.
async fn prepared_statements_as_with_postgres(
    direct_port: u16,
    pgdog_port: u16,
    encoding: &str,
    s: impl Fn(&str) -> Vec<u8>,
) {
    let (name, portal) = (s("文"), s("門"));
    let text = [
        b"SELECT '".as_slice(),
        &s("日本"),
        b"'::text, $1::text || '",
        &s("語"),
        b"'",
    ]
    .concat();
    let batch = [
        extended(b'P', &[&name, &text], &[0, 0]),
        bind_one(&portal, &name, &s("東京")),
        target(b'D', b'P', &portal),
        extended(b'E', &[&portal], &[0, 0, 0, 0]),
        raw::sync(),
    ]
    .concat();
    let again = [
        bind_one(&portal, &name, &s("名")),
        extended(b'E', &[&portal], &[0, 0, 0, 0]),
        target(b'D', b'S', &name),
        extended(b'P', &[&name, &text], &[0, 0]),
        raw::sync(),
        target(b'C', b'S', &name),
        bind_one(b"", &name, &s("名")),
        raw::sync(),
    ]
    .concat();
    let mut runs = Vec::new();
    for (port, user, db) in [
        (direct_port, "postgres", "postgres"),
        (pgdog_port, USER, DB),
    ] {
        let mut clients = [
            login(port, user, db, encoding).await.0,
            login(port, user, db, encoding).await.0,
        ];
        let mut seen = Vec::new();
        for (i, bytes) in [(0, &batch), (1, &batch), (0, &again), (1, &again)] {
            let c = &mut clients[i];
            c.send(bytes).await;
            seen.push(transcript(&c.until_ready().await));
            if bytes == &again {
                seen.push(transcript(&c.until_ready().await));
            }
        }
        runs.push(seen);
    }
    assert_eq!(runs[1], runs[0], "{encoding}: through pgdog, then directly");
    assert!(!runs[0][0].contains("E("), "{encoding}: {}", runs[0][0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_in_any_encoding_as_with_postgres() {
    let (topo, proxy) = pgdog("auth_type = \"trust\"", 2);
    let port = topo.primary().port;
    prepared_statements_as_with_postgres(port, proxy.port, "EUC_JP", euc_jp).await;
    prepared_statements_as_with_postgres(port, proxy.port, "SJIS", sjis).await;
}

/// EUC_JP and SJIS bytes of the few characters the tests use (no encoder in the tests).
fn euc_jp(text: &str) -> Vec<u8> {
    japanese(text, 0)
}

fn sjis(text: &str) -> Vec<u8> {
    japanese(text, 1)
}

fn japanese(text: &str, which: usize) -> Vec<u8> {
    const TABLE: &[(char, [&[u8]; 2])] = &[
        ('文', [b"\xca\xb8", b"\x95\xb6"]),
        ('門', [b"\xcc\xe7", b"\x96\xe5"]),
        ('日', [b"\xc6\xfc", b"\x93\xfa"]),
        ('本', [b"\xcb\xdc", b"\x96\x7b"]),
        ('東', [b"\xc5\xec", b"\x93\x8c"]),
        ('京', [b"\xb5\xfe", b"\x8b\x9e"]),
        ('語', [b"\xb8\xec", b"\x8c\xea"]),
        ('名', [b"\xcc\xbe", b"\x96\xbc"]),
    ];
    let mut out = Vec::new();
    for c in text.chars() {
        match TABLE.iter().find(|(k, _)| *k == c) {
            Some((_, bytes)) => out.extend_from_slice(bytes[which]),
            None => out.extend_from_slice(c.to_string().as_bytes()),
        }
    }
    out
}

/// A sharded database with a text key `t.id`.
async fn sharded_text_key() -> (topology::Topology, topology::Proxy) {
    let topo = topology::Topology::shards(2).expect("topology");
    let mut config = String::from("auth_type = \"trust\"\n");
    for (i, node) in topo.nodes().iter().enumerate() {
        config.push_str(&database(node.port, &format!("shard = {i}\n")));
    }
    config.push_str(
        "\n[[sharded_tables]]\ndatabase = \"app\"\nname = \"t\"\ncolumn = \"id\"\ndata_type = \"varchar\"\n",
    );
    let sharded = start_with(&config, &users(""));
    let c = connect(&sharded).await;
    exec(&c, "CREATE TABLE t (id text PRIMARY KEY, v int)").await;
    (topo, sharded)
}

/// LATIN1 keys route as the same text in UTF-8 does (simple and extended protocol), so a UTF-8
/// client finds each row by its key on one shard; text from several shards is ordered for
/// LATIN1, refused (0A000) where the client's bytes do not sort as the text; COPY FROM routes
/// by text and is refused; an encoding pgdog cannot read is refused only for text it must read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_databases_route_text_in_the_clients_encoding() {
    let (_topo, sharded) = sharded_text_key().await;
    let (mut latin1, _) = login(sharded.port, USER, DB, "LATIN1").await;
    let keys: Vec<String> = (0..16)
        .map(|i| format!("caf\u{e9}-{i}-na\u{ef}ve"))
        .collect();
    let bytes = |t: &str| t.chars().map(|c| c as u8).collect::<Vec<u8>>();
    for (i, key) in keys.iter().enumerate() {
        if i % 2 == 0 {
            let sql = [
                b"INSERT INTO t VALUES ('",
                &bytes(key)[..],
                format!("', {i})").as_bytes(),
            ]
            .concat();
            assert_eq!(
                query_bytes(&mut latin1, &sql).await,
                Vec::<Vec<u8>>::new(),
                "{key}"
            );
        } else {
            let text = b"INSERT INTO t VALUES ($1, $2::int)";
            let mut tail = vec![0, 0, 0, 2];
            for v in [bytes(key), i.to_string().into_bytes()] {
                tail.extend_from_slice(&(v.len() as i32).to_be_bytes());
                tail.extend_from_slice(&v);
            }
            tail.extend_from_slice(&[0, 0]);
            let batch = [
                extended(b'P', &[b"", text], &[0, 0]),
                extended(b'B', &[b"", b""], &tail),
                extended(b'E', &[b""], &[0, 0, 0, 0]),
                raw::sync(),
            ]
            .concat();
            latin1.send(&batch).await;
            let msgs = latin1.until_ready().await;
            assert!(
                !msgs.iter().any(|m| m.tag == b'E'),
                "{key}: {}",
                transcript(&msgs)
            );
        }
    }
    let utf8 = connect(&sharded).await;
    for (i, key) in keys.iter().enumerate() {
        let found = utf8
            .query("SELECT v FROM t WHERE id = $1", &[key])
            .await
            .expect("select by key");
        let v: Vec<i32> = found.iter().map(|r| r.get(0)).collect();
        assert_eq!(
            v,
            vec![i as i32],
            "{key} is on the shard its UTF-8 text routes to"
        );
        let sql = [b"SELECT v::text FROM t WHERE id = '", &bytes(key)[..], b"'"].concat();
        assert_eq!(
            query_bytes(&mut latin1, &sql).await,
            vec![i.to_string().into_bytes()]
        );
    }
    // Ordered across shards: LATIN1 bytes sort as the text.
    let mut sorted: Vec<Vec<u8>> = keys.iter().map(|k| bytes(k)).collect();
    sorted.sort();
    assert_eq!(
        query_bytes(&mut latin1, b"SELECT id FROM t ORDER BY id").await,
        sorted
    );
    let (mut copy, _) = login(sharded.port, USER, DB, "LATIN1").await;
    copy.send(&raw::query("COPY t FROM STDIN")).await;
    assert_eq!(raw::tags_and_codes(&copy.until_ready().await), "E0A000 Z");
    // EUC_JP bytes do not sort as the text: ordering text across shards is refused.
    let (mut japanese, _) = login(sharded.port, USER, DB, "EUC_JP").await;
    assert_eq!(
        query_bytes(&mut japanese, b"SELECT id FROM t ORDER BY id").await,
        vec![b"0A000".to_vec()]
    );
    assert_eq!(
        query_bytes(&mut japanese, b"SELECT count(*) FROM t").await,
        vec![b"16".to_vec()]
    );
    // Equal text still merges (DISTINCT, GROUP BY compare bytes).
    assert_eq!(
        query_bytes(&mut japanese, b"SELECT DISTINCT left(id, 3) FROM t").await,
        vec![b"caf".to_vec()]
    );
    let key = [b"SELECT v FROM t WHERE id = '", &euc_jp("日本")[..], b"'"].concat();
    assert_eq!(
        query_bytes(&mut japanese, &key).await,
        Vec::<Vec<u8>>::new()
    );
    // EUC_TW: pgdog cannot read it; its ASCII text still works.
    let (mut taiwan, _) = login(sharded.port, USER, DB, "EUC_TW").await;
    assert_eq!(
        query_bytes(&mut taiwan, b"SELECT v FROM t WHERE id = '\xa4\xa4'").await,
        vec![b"0A000".to_vec()]
    );
    assert_eq!(
        query_bytes(&mut taiwan, b"SELECT count(*) FROM t").await,
        vec![b"16".to_vec()]
    );
}
