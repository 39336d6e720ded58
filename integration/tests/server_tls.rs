//! TLS from pgdog to Postgres (`server_tls`, `server_tls_ca`) against a real server with
//! `ssl = on` and `hostssl ... trust` / `hostnossl ... reject` rules: Debian's PostgreSQL 15
//! (the PG18 wheel is built without SSL; provision.sh installs postgresql-15), with a CA and a
//! server certificate made here by openssl (subjectAltName IP:127.0.0.1 only).
use crate::common;
use common::{openssl, self_signed};
use std::path::{Path, PathBuf};
use topology::install::{run, Install};
use topology::Proxy;

const PG15: &str = "/usr/lib/postgresql/15/bin";

/// `ca.crt`/`ca.key` (and `other-ca.crt`), `server.crt`/`server.key` signed by `ca`.
fn certificates(dir: &Path) {
    for ca in ["ca", "other-ca"] {
        self_signed(dir, ca, &format!("/CN={ca}"), 2);
    }
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=pg-test",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ],
    );
    std::fs::write(dir.join("san.ext"), "subjectAltName = IP:127.0.0.1\n").unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "san.ext",
            "-out",
            "server.crt",
        ],
    );
}

/// A PostgreSQL 15 server with SSL on, refusing plaintext connections.
struct SslServer {
    install: Install,
    dir: PathBuf,
    port: u16,
    _lease: topology::lock::PortLease,
}

impl SslServer {
    fn start(certs: &Path) -> SslServer {
        let install = Install::at(PathBuf::from(PG15)).expect("postgresql-15 (provision.sh)");
        let lease = Proxy::lease_port().unwrap();
        let dir =
            std::env::temp_dir().join(format!("pgdog-ssl-{}-{}", std::process::id(), lease.port));
        let data = dir.join("data");
        std::fs::create_dir_all(&dir).unwrap();
        install.chown(&dir).unwrap();
        run(install
            .server_command("initdb", &dir)
            .args(["-A", "trust", "-U", "postgres", "-D"])
            .arg(&data))
        .expect("initdb");
        for f in ["server.crt", "server.key"] {
            std::fs::copy(certs.join(f), data.join(f)).unwrap();
            install.chown(&data.join(f)).unwrap();
            std::fs::set_permissions(
                data.join(f),
                std::os::unix::fs::PermissionsExt::from_mode(0o600),
            )
            .unwrap();
        }
        let conf = format!(
            "port = {}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{}'\nssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n",
            lease.port,
            dir.display()
        );
        let mut pg_conf = std::fs::read_to_string(data.join("postgresql.conf")).unwrap();
        pg_conf.push_str(&conf);
        std::fs::write(data.join("postgresql.conf"), pg_conf).unwrap();
        std::fs::write(
            data.join("pg_hba.conf"),
            "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostnossl all all 127.0.0.1/32 reject\n",
        )
        .unwrap();
        run(install
            .server_command("pg_ctl", &dir)
            .arg("-D")
            .arg(&data)
            .arg("-l")
            .arg(dir.join("log"))
            .args(["-w", "-t", "60", "start"]))
        .expect("pg_ctl start");
        SslServer {
            install,
            dir,
            port: lease.port,
            _lease: lease,
        }
    }
}

impl Drop for SslServer {
    fn drop(&mut self) {
        let _ = run(self
            .install
            .server_command("pg_ctl", &self.dir)
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "-w", "stop"]));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// pgdog with `server_tls` lines in front of the SSL server reached as `host`: Ok(whether the
/// session runs over TLS) or the error text.
async fn through_pgdog(server: &SslServer, host: &str, tls: &str) -> Result<bool, String> {
    let config = format!(
        "auth_type = \"trust\"\n{tls}\n\n[[databases]]\nname = \"app\"\nhost = \"{host}\"\nport = {}\ndatabase_name = \"postgres\"\nuser = \"postgres\"\n",
        server.port
    );
    let proxy = Proxy::start(&config, "[[users]]\nname = \"app\"\ndatabase = \"app\"\n").unwrap();
    let text = |e: tokio_postgres::Error| {
        e.as_db_error()
            .map(|d| d.message().to_string())
            .unwrap_or_else(|| e.to_string())
    };
    let client = match common::connect_as(&proxy, "app", "", "app").await {
        Ok(client) => client,
        Err(e) => {
            if e.as_db_error().is_none() {
                // Not an answer from pgdog (a reset, a closed socket: seen once under load):
                // its log, shown with the test's output when it fails.
                eprintln!("{host}: {tls}: {e}; pgdog's log:\n{}", proxy.log());
            }
            return Err(text(e));
        }
    };
    let row = client
        .simple_query("SELECT ssl::text FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        .await
        .map_err(text)?;
    let ssl = row.iter().any(
        |m| matches!(m, tokio_postgres::SimpleQueryMessage::Row(r) if r.get(0) == Some("true")),
    );
    Ok(ssl)
}

/// What a connection through pgdog gives: Ok(whether the session runs over TLS), or an error
/// containing one of the words.
type Expected = Result<bool, &'static [&'static str]>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_tls_modes_against_an_ssl_server() {
    let certs = std::env::temp_dir().join(format!("pgdog-ssl-certs-{}", std::process::id()));
    std::fs::create_dir_all(&certs).unwrap();
    certificates(&certs);
    let server = SslServer::start(&certs);
    let ca = certs.join("ca.crt");
    let other = certs.join("other-ca.crt");
    let with_ca = |mode: &str, ca: &Path| {
        format!(
            "server_tls = \"{mode}\"\nserver_tls_ca = \"{}\"",
            ca.display()
        )
    };

    let cases: [(&str, String, Expected); 7] = [
        // Plaintext is refused by the server's hostnossl rule.
        (
            "127.0.0.1",
            "server_tls = \"disable\"".into(),
            Err(&["no encryption", "pg_hba"]),
        ),
        // prefer (the default) and require: TLS.
        ("127.0.0.1", String::new(), Ok(true)),
        ("127.0.0.1", "server_tls = \"require\"".into(), Ok(true)),
        // verify-ca: the right CA passes whatever the name; another CA fails.
        ("localhost", with_ca("verify-ca", &ca), Ok(true)),
        ("127.0.0.1", with_ca("verify-ca", &other), Err(&["TLS"])),
        // verify-full: the name must match too (the certificate names IP 127.0.0.1 only).
        ("127.0.0.1", with_ca("verify-full", &ca), Ok(true)),
        ("localhost", with_ca("verify-full", &ca), Err(&["TLS"])),
    ];
    for (host, tls, want) in cases {
        let got = through_pgdog(&server, host, &tls).await;
        match want {
            Ok(over_tls) => assert_eq!(got, Ok(over_tls), "{host}: {tls}"),
            Err(words) => {
                let err = got.unwrap_err();
                assert!(words.iter().any(|w| err.contains(w)), "{err}");
            }
        }
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&certs);
}

/// Over TLS as over plain TCP (`pooler_dead_idle`): pooled connections that died while idle, by
/// a restart or by `idle_session_timeout`, never reach a client. A raw read cannot tell under
/// TLS: the check reads through the TLS stream once the socket is readable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_tls_connections_are_never_handed_out() {
    use crate::pooler_dead_idle::{restart_fast, twenty_succeed, warm};
    let certs = std::env::temp_dir().join(format!("pgdog-ssl-dead-{}", std::process::id()));
    std::fs::create_dir_all(&certs).unwrap();
    certificates(&certs);
    let server = SslServer::start(&certs);
    let config = format!(
        "auth_type = \"trust\"\nserver_tls = \"require\"\nserver_check_query = \"\"\nmin_pool_size = 0\n\n[[databases]]\nname = \"app\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"postgres\"\nuser = \"postgres\"\npool_size = 5\n",
        server.port
    );
    let proxy = Proxy::start(&config, "[[users]]\nname = \"app\"\ndatabase = \"app\"\n").unwrap();
    let mut clients = Vec::new();
    for _ in 0..5 {
        clients.push(common::connect_as(&proxy, "app", "", "app").await.unwrap());
    }
    warm(&clients).await;
    let data = server.dir.join("data");
    let log = server.dir.join("log");
    tokio::task::block_in_place(|| restart_fast(&server.install, &server.dir, &data, &log));
    twenty_succeed(&clients[0], "TLS, after pg_ctl restart -m fast", &proxy).await;

    // idle_session_timeout for pgdog's server user, then five fresh connections it closes.
    let psql = |sql: &str| {
        let out = run(server
            .install
            .server_command("psql", &server.dir)
            .args(["-X", "-A", "-t", "-h"])
            .arg(&server.dir)
            .args(["-p", &server.port.to_string(), "-U", "postgres", "-c", sql]))
        .expect("psql");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    psql("ALTER ROLE postgres SET idle_session_timeout = '300ms'");
    tokio::task::block_in_place(|| restart_fast(&server.install, &server.dir, &data, &log));
    twenty_succeed(&clients[0], "TLS, after a second restart", &proxy).await;
    warm(&clients).await;
    common::eventually(
        "the server to close pgdog's idle connections",
        std::time::Duration::from_secs(10),
        || async {
            psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgdog'") == "0"
        },
    )
    .await;
    twenty_succeed(&clients[0], "TLS, after idle_session_timeout", &proxy).await;
    drop(server);
    let _ = std::fs::remove_dir_all(&certs);
}
