//! Coming from PgBouncer: the fallback database `*` (any database name, same server), users of
//! users.toml with only a SCRAM secret logging in to the server by pass-through (as PgBouncer
//! does with auth_file's secrets), and `pgdog import-pgbouncer` on PgBouncer's own example
//! configuration and on one that uses every mapped key: the files pass `configcheck` and serve.
use crate::common;
use common::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use topology::{Proxy, Topology};

async fn value(
    proxy: &Proxy,
    user: &str,
    password: &str,
    db: &str,
    sql: &str,
) -> Result<String, String> {
    let client = connect_as(proxy, user, password, db)
        .await
        .map_err(|e| format!("{}: {}", sqlstate(&e).unwrap_or_default(), err_text(&e)))?;
    Ok(one(&client, sql).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fallback_database_serves_any_database_name() {
    let topo = Topology::single().unwrap();
    topo.primary().psql("CREATE DATABASE other").unwrap();
    let config = format!(
        "\n[[databases]]\nname = \"*\"\nport = {}\nuser = \"postgres\"\n",
        topo.primary().port
    );
    let users = "[[users]]\nname = \"app\"\ndatabase = \"*\"\npassword = \"secret\"\n";
    let proxy = start_with(&config, users);
    for db in ["other", "postgres"] {
        assert_eq!(
            value(&proxy, "app", "secret", db, "SELECT current_database()")
                .await
                .unwrap(),
            db
        );
    }
    // The server's answer for a database it does not have; a wrong password as usual.
    let err = value(&proxy, "app", "secret", "missing", "SELECT 1")
        .await
        .unwrap_err();
    assert!(err.starts_with("3D000"), "{err}");
    let err = value(&proxy, "app", "wrong", "other", "SELECT 1")
        .await
        .unwrap_err();
    assert!(err.starts_with("28P01"), "{err}");
}

/// Pools made at login (here for a database of the fallback `*`) are dropped once unused for
/// `autodb_idle_timeout`: their warm connection closes; the next login makes them again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pools_made_at_login_are_dropped_after_autodb_idle_timeout() {
    let topo = Topology::single().unwrap();
    let pg = topo.primary();
    pg.psql("CREATE DATABASE other").unwrap();
    let config = format!(
        "autodb_idle_timeout = 1000\nmin_pool_size = 1\n\n[[databases]]\nname = \"*\"\nport = {}\nuser = \"postgres\"\n",
        pg.port
    );
    let users = "[[users]]\nname = \"app\"\ndatabase = \"*\"\npassword = \"secret\"\n";
    let proxy = start_with(&config, users);
    let on_other = || {
        pg.psql("SELECT count(*) FROM pg_stat_activity WHERE datname = 'other' AND application_name = 'pgdog'")
            .unwrap()
    };
    let db = value(
        &proxy,
        "app",
        "secret",
        "other",
        "SELECT current_database()",
    )
    .await;
    assert_eq!(db.as_deref(), Ok("other"));
    assert_ne!(on_other(), "0", "the pool's connection while in use");
    eventually(
        "the unused pool's connections to close",
        Duration::from_secs(10),
        || async { on_other() == "0" },
    )
    .await;
    let log = proxy.log();
    assert!(log.contains("unused for autodb_idle_timeout"), "{log}");
    let db = value(
        &proxy,
        "app",
        "secret",
        "other",
        "SELECT current_database()",
    )
    .await;
    assert_eq!(
        db.as_deref(),
        Ok("other"),
        "a login after the pool was dropped"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_toml_scram_secret_logs_in_to_the_server_by_pass_through() {
    let topo = Topology::single().unwrap();
    topo.primary()
        .psql("SET password_encryption = 'scram-sha-256'; CREATE ROLE alice LOGIN PASSWORD 'alice-pw'")
        .unwrap();
    let verifier = topo
        .primary()
        .psql("SELECT rolpassword FROM pg_authid WHERE rolname = 'alice'")
        .unwrap();
    server_hba_first(&topo, "host all alice 127.0.0.1/32 scram-sha-256");
    until_server_checks_password(&topo, "alice").await;
    // No server user or password on the database, only the verifier in users.toml.
    let config = format!(
        "\n[[databases]]\nname = \"{DB}\"\nport = {}\ndatabase_name = \"postgres\"\n",
        topo.primary().port
    );
    let users = format!(
        "[[users]]\nname = \"alice\"\ndatabase = \"{DB}\"\npassword_hash = \"{verifier}\"\n"
    );
    let proxy = start_with(&config, &users);
    assert_eq!(
        value(&proxy, "alice", "alice-pw", DB, "SELECT current_user")
            .await
            .unwrap(),
        "alice"
    );
    let err = value(&proxy, "alice", "nope", DB, "SELECT 1")
        .await
        .unwrap_err();
    assert!(err.starts_with("28P01"), "{err}");
}

/// `pgdog <args>`: its output, and whether it succeeded.
fn pgdog(args: &[&str]) -> (bool, String) {
    let out = Command::new(topology::proxy::binary())
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Runs the import into `out`, then configcheck on what it wrote: the import's output.
fn import_and_check(ini: &Path, userlist: &Path, out: &Path) -> String {
    let (ok, text) = pgdog(&[
        "import-pgbouncer",
        "--ini",
        &ini.display().to_string(),
        "--userlist",
        &userlist.display().to_string(),
        "--out",
        &out.display().to_string(),
    ]);
    assert!(ok, "{text}");
    let (config, users) = (out.join("pgdog.toml"), out.join("users.toml"));
    let (ok, check) = pgdog(&[
        "configcheck",
        "--config",
        &config.display().to_string(),
        "--users",
        &users.display().to_string(),
    ]);
    assert!(
        ok,
        "configcheck: {check}\n{}\n{}",
        std::fs::read_to_string(&config).unwrap(),
        std::fs::read_to_string(&users).unwrap()
    );
    text
}

/// The 1-based line of `ini` starting with `key`.
fn line_of(ini: &Path, key: &str) -> usize {
    let text = std::fs::read_to_string(ini).unwrap();
    text.lines().position(|l| l.starts_with(key)).unwrap() + 1
}

#[test]
fn import_pgbouncers_own_example() {
    let dir = std::env::temp_dir().join(format!("pgdog-import-example-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // PgBouncer's source next to the workspace when it is there (../shared/vendor), else the
    // same example as Debian's pgbouncer package ships it (provision.sh installs it).
    let vendor = topology::install::workspace_root().join("../shared/vendor");
    let tarball = std::fs::read_dir(&vendor).ok().and_then(|entries| {
        entries.filter_map(|e| e.ok().map(|e| e.path())).find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("pgbouncer-"))
        })
    });
    let (ini, userlist) = match tarball {
        Some(tarball) => {
            run_ok(
                Command::new("tar")
                    .arg("xzf")
                    .arg(&tarball)
                    .arg("-C")
                    .arg(&dir)
                    .args([
                        "--strip-components=1",
                        "--wildcards",
                        "*/etc/pgbouncer.ini",
                        "*/etc/userlist.txt",
                    ]),
                "extracting PgBouncer's example configuration",
            );
            (dir.join("etc/pgbouncer.ini"), dir.join("etc/userlist.txt"))
        }
        // Images without /usr/share/doc still have the package's configuration files.
        None => ["/usr/share/doc/pgbouncer/examples", "/etc/pgbouncer"]
            .map(Path::new)
            .into_iter()
            .map(|d| (d.join("pgbouncer.ini"), d.join("userlist.txt")))
            .find(|(ini, _)| ini.is_file())
            .unwrap_or_default(),
    };
    assert!(ini.is_file() && userlist.is_file(), "PgBouncer's example configuration: neither ../shared/vendor nor Debian's pgbouncer package");
    let out = import_and_check(&ini, &userlist, &dir.join("out"));
    // What pgdog has no use for is listed with its line, never dropped silently (the logfile is
    // carried).
    let at = format!("pgbouncer.ini:{}: pidfile =", line_of(&ini, "pidfile"));
    assert!(out.contains(&at), "{at} missing from:\n{out}");
    // Its users have no database to log in to (the example lists none): said, not dropped.
    let users = std::fs::read_to_string(&userlist).unwrap();
    for user in users.lines().filter_map(|l| l.split('"').nth(1)) {
        assert!(
            out.contains(&format!("user \"{user}\"")),
            "{user} missing from:\n{out}"
        );
    }
    let config = std::fs::read_to_string(dir.join("out/pgdog.toml")).unwrap();
    assert!(
        config.contains("port = 6432") && config.contains("auth_type = \"md5\""),
        "{config}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_a_config_using_every_mapped_key_and_serve_it() {
    let topo = Topology::single().unwrap();
    let port = topo.primary().port;
    topo.primary()
        .psql("SET password_encryption = 'md5'; CREATE ROLE app LOGIN PASSWORD 'secret'")
        .unwrap();
    topo.primary().psql("CREATE DATABASE other").unwrap();
    let dir = std::env::temp_dir().join(format!("pgdog-import-own-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let lease = Proxy::lease_port().unwrap();
    let ini = dir.join("pgbouncer.ini");
    std::fs::write(
        &ini,
        format!(
            "[databases]\n\
             app = host=127.0.0.1 port={port} dbname=postgres user=postgres pool_size=3 pool_mode=transaction max_db_connections=10 min_pool_size=1 reserve_pool=2 server_lifetime=1800\n\
             lookup = host=127.0.0.1 port={port} dbname=postgres auth_user=postgres\n\
             * = host=127.0.0.1 port={port}\n\
             [users]\n\
             app = pool_mode=session max_user_connections=5 pool_size=2\n\
             [peers]\n\
             1 = host=127.0.0.1 port={}\n\
             2 = host=127.0.0.1 port=7432\n\
             3 = host=/var/run/pgbouncer-3\n\
             [pgbouncer]\n\
             so_reuseport = 1\n\
             peer_id = 1\n\
             listen_addr = 127.0.0.1\n\
             listen_port = {}\n\
             auth_type = md5\n\
             auth_file = userlist.txt\n\
             admin_users = admin\n\
             pool_mode = transaction\n\
             default_pool_size = 4\n\
             min_pool_size = 0\n\
             max_client_conn = 100\n\
             server_reset_query = DISCARD ALL\n\
             server_lifetime = 3600\n\
             server_idle_timeout = 600\n\
             server_check_delay = 10\n\
             server_check_query = select 1\n\
             server_connect_timeout = 5\n\
             query_timeout = 0\n\
             query_wait_timeout = 120\n\
             client_idle_timeout = 0\n\
             idle_transaction_timeout = 0\n\
             client_login_timeout = 60\n\
             ignore_startup_parameters = extra_float_digits\n\
             tcp_keepalive = 1\n\
             tcp_keepidle = 30\n\
             reserve_pool_size = 5\n\
             logfile = pgbouncer.log\n\
             log_connections = 0\n\
             %include extra.ini\n",
            lease.port,
            lease.port
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("extra.ini"),
        "[pgbouncer]\nmax_prepared_statements = 100\nstats_users = stats\n",
    )
    .unwrap();
    let userlist = dir.join("userlist.txt");
    std::fs::write(
        &userlist,
        "\"app\" \"secret\"\n\"admin\" \"admin-pw\"\n\"postgres\" \"pg-pw\"\n",
    )
    .unwrap();
    let out = import_and_check(&ini, &userlist, &dir.join("out"));
    let key = "ignore_startup_parameters";
    let at = format!("pgbouncer.ini:{}:", line_of(&ini, key));
    assert!(out.contains(&at), "{key}: {at} missing from:\n{out}");
    assert!(out.contains("extra.ini:3: stats_users"), "{out}");
    let users_toml = std::fs::read_to_string(dir.join("out/users.toml")).unwrap();
    assert!(
        users_toml.contains("max_user_connections = 5") && users_toml.contains("pool_size = 2"),
        "{users_toml}"
    );

    let config = std::fs::read_to_string(dir.join("out/pgdog.toml")).unwrap();
    // The logfile (next to the ini) and the log switches are carried.
    assert!(
        config.contains(&format!(
            "logfile = \"{}\"",
            dir.join("pgbouncer.log").display()
        )) && config.contains("log_connections = false"),
        "{config}"
    );
    // A peer on a socket folder is carried (cancels reach it there).
    assert!(
        config.contains("host = \"/var/run/pgbouncer-3\""),
        "{config}"
    );
    for expected in [
        "checkout_timeout = 120000",
        "prepared_statements_limit = 100",
        "tcp_keepalive_idle = 30000",
        "admin_password = \"admin-pw\"",
        "max_db_connections = 10",
        "reserve_pool_size = 5",
        "reserve_pool_size = 2",
        "min_pool_size = 1",
        "server_lifetime = 1800000",
        "server_check_delay = 10000",
        "server_check_query = \"select 1\"",
        "so_reuseport = true",
        "peer_id = 1",
        "[[peers]]\nhost = \"127.0.0.1\"\npeer_id = 2\nport = 7432",
    ] {
        assert!(config.contains(expected), "{expected}:\n{config}");
    }

    // The imported files serve: md5 logins, the fallback database, the session mode of [users].
    let proxy = Proxy::start_complete(
        &config,
        &std::fs::read_to_string(dir.join("out/users.toml")).unwrap(),
        lease,
    )
    .unwrap();
    let mut psql = proxy.psql_command("app", "secret", "app");
    psql.env("PGREQUIREAUTH", "md5")
        .args(["-c", "SELECT current_database()"]);
    let listed = run_ok(&mut psql, "psql through the imported setup");
    assert_eq!(String::from_utf8_lossy(&listed.stdout).trim(), "postgres");
    assert_eq!(
        value(&proxy, "app", "secret", "other", "SELECT current_user")
            .await
            .unwrap(),
        "app"
    );
    let admin = connect_as(&proxy, "admin", "admin-pw", "admin")
        .await
        .unwrap();
    let pools = admin.simple_query("SHOW POOLS").await.unwrap();
    let modes: Vec<(String, String)> = pools
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some((
                r.get("database")?.to_string(),
                r.get("pool_mode")?.to_string(),
            )),
            _ => None,
        })
        .collect();
    assert!(
        modes.contains(&("app".into(), "session".into())),
        "{modes:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// An ini that omits a key keeps PgBouncer's meaning for it: its defaults are written where
/// pgdog's differ, and the result passes configcheck (reserve_pool_timeout = 5 with no
/// query_wait_timeout once failed it: pgdog's 5 s checkout_timeout was under it).
#[test]
fn omitted_keys_import_as_pgbouncers_defaults() {
    let dir = std::env::temp_dir().join(format!("pgdog-import-defaults-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ini = dir.join("pgbouncer.ini");
    std::fs::write(
        &ini,
        "[databases]\napp = host=127.0.0.1 port=5432 dbname=postgres\n\n[pgbouncer]\nlisten_port = 6432\nauth_type = md5\nreserve_pool_size = 2\nreserve_pool_timeout = 5\n",
    )
    .unwrap();
    let userlist = dir.join("userlist.txt");
    std::fs::write(&userlist, "\"app\" \"secret\"\n").unwrap();
    import_and_check(&ini, &userlist, &dir.join("out"));
    let config = std::fs::read_to_string(dir.join("out/pgdog.toml")).unwrap();
    for expected in [
        "pooler_mode = \"session\"",
        "checkout_timeout = 120000",
        "default_pool_size = 20",
        "min_pool_size = 0",
        "idle_timeout = 600000",
        "server_lifetime = 3600000",
        "connect_timeout = 15000",
        "reserve_pool_timeout = 5000",
        "max_client_connections = 100",
    ] {
        assert!(config.contains(expected), "{expected}:\n{config}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
