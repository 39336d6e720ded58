//! Unix-domain sockets on both sides (issue 49): clients on pgdog's `.s.PGSQL.<port>` in
//! `unix_socket_dir` (with its mode), a server reached through its socket folder (`host`
//! starting with `/`), a cancel over both sockets, an SSLRequest answered `N` there, and hba
//! `local` lines, with Postgres' words for a refused local client.
use crate::common;
use common::*;
use std::os::unix::fs::PermissionsExt;
use topology::{Proxy, Topology};

/// A fresh folder for pgdog's socket (short: socket paths are limited to 107 bytes).
fn socket_dir(tag: &str) -> String {
    let dir = std::env::temp_dir().join(format!("pgdog-unix-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("socket folder");
    dir.display().to_string()
}

/// pgdog with its socket in `dir` (mode 0770) and `app` on the server's socket folder.
fn unix_proxy(topo: &Topology, dir: &str, extra: &str) -> Proxy {
    let server_dir = topo.primary().dir.display().to_string();
    let config = format!(
        "auth_type = \"trust\"\nunix_socket_dir = \"{dir}\"\nunix_socket_mode = \"0770\"\n{extra}\n\
         [[databases]]\nname = \"{DB}\"\nhost = \"{server_dir}\"\nport = {}\n\
         database_name = \"postgres\"\nuser = \"postgres\"\npool_size = 2\n",
        topo.primary().port
    );
    start_with(&config, &users(""))
}

async fn over_socket(
    dir: &str,
    port: u16,
) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let conninfo = format!("host={dir} port={port} user={USER} dbname={DB} password={PASSWORD}");
    connect_str(&conninfo).await.map(|(c, _)| c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_and_servers_on_unix_sockets() {
    let topo = Topology::single().unwrap();
    let dir = socket_dir("both");
    let proxy = unix_proxy(&topo, &dir, "");
    let path = format!("{dir}/.s.PGSQL.{}", proxy.port);
    let mode = std::fs::metadata(&path)
        .expect("socket file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o770, "{path}");
    let client = over_socket(&dir, proxy.port)
        .await
        .expect("login on the socket");
    // The server saw a Unix-domain client: no client address.
    assert_eq!(
        one(&client, "SELECT (inet_client_addr() IS NULL)::text").await,
        "true"
    );
    // TCP still works next to it.
    let tcp = connect(&proxy).await;
    assert_eq!(one(&tcp, "SELECT 1::text").await, "1");
    // A cancel sent on the socket reaches the server through its socket.
    let token = client.cancel_token();
    let started = std::time::Instant::now();
    let sleeping = tokio::spawn(async move { client.simple_query("SELECT pg_sleep(30)").await });
    eventually("the query to run", std::time::Duration::from_secs(10), || async {
        one(&tcp, "SELECT count(*)::text FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'").await == "1"
    })
    .await;
    token
        .cancel_query(tokio_postgres::NoTls)
        .await
        .expect("cancel");
    let err = sleeping.await.unwrap().expect_err("canceled");
    assert_sqlstate(&err, "57014");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    // No TLS on the socket: an SSLRequest gets N, as Postgres answers it there.
    let mut raw = tokio::net::UnixStream::connect(&path).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    raw.write_all(&[0, 0, 0, 8, 4, 210, 22, 47]).await.unwrap();
    let mut answer = [0u8; 1];
    raw.read_exact(&mut answer).await.unwrap();
    assert_eq!(&answer, b"N");
    drop(raw);
    drop(tcp);
    let mut proxy = proxy;
    proxy.signal(libc::SIGTERM);
    proxy
        .wait_exit(std::time::Duration::from_secs(20))
        .expect("exit");
    assert!(
        !std::path::Path::new(&path).exists(),
        "the socket file is removed at exit"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hba_local_lines_are_for_socket_clients() {
    let topo = Topology::single().unwrap();
    let dir = socket_dir("hba");
    let hba = format!("{dir}/hba.conf");
    std::fs::write(&hba, "local all all trust\nhost all all all reject\n").unwrap();
    let proxy = unix_proxy(&topo, &dir, &format!("auth_hba_file = \"{hba}\""));
    let client = over_socket(&dir, proxy.port)
        .await
        .expect("local is trusted");
    assert_eq!(one(&client, "SELECT 'in'").await, "in");
    let err = connect_as(&proxy, USER, PASSWORD, DB)
        .await
        .expect_err("TCP is rejected");
    assert_sqlstate(&err, "28000");
    drop(proxy);
    // No local line: Postgres' refusal for host "[local]".
    std::fs::write(&hba, "host all all all trust\n").unwrap();
    let proxy = unix_proxy(&topo, &dir, &format!("auth_hba_file = \"{hba}\""));
    let err = over_socket(&dir, proxy.port)
        .await
        .expect_err("no local line");
    assert_sqlstate(&err, "28000");
    assert_eq!(
        err.as_db_error().map(|e| e.message().to_string()).unwrap_or_default(),
        format!("no pg_hba.conf entry for host \"[local]\", user \"{USER}\", database \"{DB}\", no encryption")
    );
    assert!(connect_as(&proxy, USER, PASSWORD, DB).await.is_ok());
    drop(proxy);
    let _ = std::fs::remove_dir_all(&dir);
}
