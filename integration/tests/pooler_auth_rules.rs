//! Access rules and secrets of users.toml: `passwords` (rotation: any of them logs in, under
//! each auth_type), `auth_hba_file` (each method, a `reject` line and no matching line, with
//! Postgres' own messages, and a reload), and client certificates (`tls_client_ca` and the
//! `cert` method: the certificate's CN must be the user; verify-full clients keep working).
use crate::common;
use common::*;
use std::path::Path;
use topology::{Proxy, Topology};

async fn logs_in(proxy: &Proxy, user: &str, password: &str) -> bool {
    match connect_as(proxy, user, password, DB).await {
        Ok(c) => one(&c, "SELECT 'in'").await == "in",
        Err(_) => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotation_any_of_the_passwords_logs_in() {
    let topo = Topology::single().unwrap();
    let verifier = pgdog::auth::hash_password("new-pw");
    let md5 = pgdog::auth::md5::md5_stored(USER, "md5-pw");
    let users = users(&format!(
        "passwords = [\"old-pw\", \"{verifier}\", \"{md5}\"]"
    ));
    // (auth_type, passwords that log in, passwords refused)
    for (auth_type, good, bad) in [
        (
            "scram",
            vec![PASSWORD, "old-pw", "new-pw"],
            vec!["md5-pw", "nope"],
        ),
        (
            "md5",
            vec![PASSWORD, "old-pw", "md5-pw"],
            vec!["new-pw", "nope"],
        ),
        (
            "plain",
            vec![PASSWORD, "old-pw", "new-pw", "md5-pw"],
            vec!["nope"],
        ),
    ] {
        let proxy = start_with(
            &config(&topo, &format!("auth_type = \"{auth_type}\""), 2),
            &users,
        );
        for pw in good {
            assert!(
                logs_in(&proxy, USER, pw).await,
                "{auth_type}: {pw} refused\n{}",
                proxy.log()
            );
        }
        for pw in bad {
            assert_eq!(
                login_refusal(&proxy, USER, pw, DB).await.0,
                "28P01",
                "{auth_type}: {pw}"
            );
        }
    }
}

/// users.toml with `names`, password `secret` each, on database `app`.
fn users_named(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| {
            format!("[[users]]\nname = \"{n}\"\ndatabase = \"{DB}\"\npassword = \"{PASSWORD}\"\n\n")
        })
        .collect()
}

/// psql through pgdog accepting only `method` (libpq's require_auth): whether it logged in.
fn psql_with_method(proxy: &Proxy, user: &str, method: &str) -> bool {
    let mut cmd = proxy.psql_command(user, PASSWORD, DB);
    cmd.env("PGREQUIREAUTH", method).args(["-c", "SELECT 1"]);
    cmd.output().unwrap().status.success()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hba_rules_choose_the_method_and_refuse_as_postgres() {
    let topo = Topology::single().unwrap();
    let dir = std::env::temp_dir().join(format!("pgdog-hba-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rules = "# pgdog's rules\n\
        local all all trust\n\
        host app rejected 127.0.0.1/32 reject\n\
        host app trusted 127.0.0.1/32 trust\n\
        host app md5user 127.0.0.1/32 md5\n\
        host app pwuser 127.0.0.1/32 password\n\
        host app app 127.0.0.1/32 scram-sha-256\n";
    let hba = dir.join("hba.conf");
    std::fs::write(&hba, rules).unwrap();
    let general = format!("auth_hba_file = \"{}\"", hba.display());
    let users = users_named(&[
        "rejected", "trusted", "md5user", "pwuser", "app", "stranger",
    ]);
    let proxy = start_with(&config(&topo, &general, 2), &users);

    // Each line's method is the one used (the client accepts only that one).
    for (user, method) in [
        ("md5user", "md5"),
        ("pwuser", "password"),
        ("app", "scram-sha-256"),
        ("trusted", "none"),
    ] {
        assert!(
            psql_with_method(&proxy, user, method),
            "{user} with {method}\n{}",
            proxy.log()
        );
    }
    assert!(
        !psql_with_method(&proxy, "app", "md5"),
        "app must not get md5"
    );
    assert!(logs_in(&proxy, "trusted", "anything").await);
    assert_eq!(
        login_refusal(&proxy, "md5user", "wrong", DB).await.0,
        "28P01"
    );

    // A reject line and no line: 28000 and the very words of Postgres, checked against it.
    topo.primary().psql("CREATE DATABASE app").unwrap();
    let pg_hba = topo.primary().data_dir().join("pg_hba.conf");
    let old = std::fs::read_to_string(&pg_hba).unwrap();
    std::fs::write(
        &pg_hba,
        format!("host app rejected 127.0.0.1/32 reject\n{old}"),
    )
    .unwrap();
    topo.primary().psql("SELECT pg_reload_conf()").unwrap();
    let direct = topo.primary().url(DB).replace("postgres@", "rejected:x@");
    let postgres_says = std::sync::Mutex::new(String::new());
    eventually(
        "Postgres to reject the user",
        std::time::Duration::from_secs(10),
        || async {
            let refused = tokio_postgres::connect(&direct, tokio_postgres::NoTls)
                .await
                .err();
            match refused.as_ref().and_then(|e| e.as_db_error()) {
                Some(db) if db.code().code() == "28000" => {
                    *postgres_says.lock().unwrap() = db.message().to_string();
                    true
                }
                _ => false,
            }
        },
    )
    .await;
    let postgres_says = postgres_says.into_inner().unwrap();
    let (code, message) = login_refusal(&proxy, "rejected", PASSWORD, DB).await;
    assert_eq!(
        (code.as_str(), message.as_str()),
        ("28000", postgres_says.as_str())
    );
    assert_eq!(
        login_refusal(&proxy, "stranger", PASSWORD, DB).await,
        (
            "28000".to_string(),
            "no pg_hba.conf entry for host \"127.0.0.1\", user \"stranger\", database \"app\", no encryption".to_string()
        )
    );

    // Reloaded with the configuration: `trusted` is rejected now.
    std::fs::write(
        &hba,
        rules.replace("trusted 127.0.0.1/32 trust", "trusted 127.0.0.1/32 reject"),
    )
    .unwrap();
    proxy.reload();
    eventually("the new rules", std::time::Duration::from_secs(10), || async {
        matches!(connect_as(&proxy, "trusted", PASSWORD, DB).await, Err(e) if sqlstate(&e).as_deref() == Some("28000"))
    })
    .await;
    // A rule pgdog cannot check fails the reload (the old rules stay) and names its line.
    std::fs::write(&hba, format!("{rules}host all +admins all trust\n")).unwrap();
    proxy.reload();
    eventually(
        "the reload error",
        std::time::Duration::from_secs(10),
        || async { proxy.log().contains("line 8") && proxy.log().contains("+admins") },
    )
    .await;
    assert!(logs_in(&proxy, "app", PASSWORD).await);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Debian's psql 15 (the PG18 wheel's libpq has no TLS), with a libpq connection string.
fn psql15(conninfo: &str) -> Result<String, String> {
    let out = std::process::Command::new("/usr/lib/postgresql/15/bin/psql")
        .args(["-X", "-A", "-t", "-c", "SELECT 'in'", conninfo])
        .output()
        .unwrap();
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// A key and a certificate for `subject` signed by `ca`, as `{name}.key` / `{name}.crt`,
/// with the extension lines `ext` if any.
fn signed(dir: &Path, name: &str, subject: &str, ext: Option<&str>) {
    let (key, csr, crt, extfile) = (
        format!("{name}.key"),
        format!("{name}.csr"),
        format!("{name}.crt"),
        format!("{name}.ext"),
    );
    openssl(
        dir,
        &[
            "req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", &key, "-out", &csr,
        ],
    );
    let mut args = vec![
        "x509",
        "-req",
        "-in",
        &csr,
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-out",
        &crt,
    ];
    if let Some(ext) = ext {
        std::fs::write(dir.join(&extfile), ext).unwrap();
        args.extend(["-extfile", &extfile]);
    }
    openssl(dir, &args);
    private(&dir.join(key));
}

/// libpq refuses a client key others may read.
fn private(key: &Path) {
    std::fs::set_permissions(key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificates_log_in_by_common_name() {
    let topo = Topology::single().unwrap();
    let dir = std::env::temp_dir().join(format!("pgdog-cert-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    self_signed(&dir, "ca", "/CN=pgdog-test-ca", 2);
    signed(
        &dir,
        "server",
        "/CN=pgdog",
        Some("subjectAltName = IP:127.0.0.1\n"),
    );
    // Extensions make version 3 certificates (webpki takes no others).
    let client = Some("extendedKeyUsage = clientAuth\n");
    signed(&dir, "certuser", "/CN=certuser", client);
    signed(&dir, "other", "/CN=other", client);
    std::fs::write(
        dir.join("hba.conf"),
        "hostssl app certuser 127.0.0.1/32 cert\nhost all all 127.0.0.1/32 scram-sha-256\n",
    )
    .unwrap();
    let general = format!(
        "tls_certificate = \"{0}/server.crt\"\ntls_private_key = \"{0}/server.key\"\ntls_client_ca = \"{0}/ca.crt\"\nauth_hba_file = \"{0}/hba.conf\"",
        dir.display()
    );
    let proxy = start_with(
        &config(&topo, &general, 2),
        &users_named(&["certuser", "app"]),
    );
    let conninfo = |user: &str, cert: Option<&str>| {
        let mut s = format!(
            "host=127.0.0.1 port={} dbname={DB} user={user} password={PASSWORD} sslmode=verify-full sslrootcert={}/ca.crt",
            proxy.port,
            dir.display()
        );
        if let Some(c) = cert {
            s.push_str(&format!(
                " sslcert={0}/{c}.crt sslkey={0}/{c}.key",
                dir.display()
            ));
        }
        s
    };
    assert_eq!(
        psql15(&conninfo("certuser", Some("certuser"))),
        Ok("in".into()),
        "{}",
        proxy.log()
    );
    let err = psql15(&conninfo("certuser", Some("other"))).unwrap_err();
    assert!(
        err.contains("certificate authentication failed for user \"certuser\""),
        "{err}"
    );
    let err = psql15(&conninfo("certuser", None)).unwrap_err();
    assert!(
        err.contains("connection requires a valid client certificate"),
        "{err}"
    );
    // A verify-full client with a password and no certificate keeps working.
    assert_eq!(psql15(&conninfo("app", None)), Ok("in".into()));
    // A certificate from another CA fails the TLS handshake.
    self_signed(&dir, "rogue", "/CN=certuser", 2);
    private(&dir.join("rogue.key"));
    assert!(psql15(&conninfo("certuser", Some("rogue"))).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}
