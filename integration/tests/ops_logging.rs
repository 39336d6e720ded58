//! pgdog's log as an operator ships it (issue 49): `log_format = "json"` lines that parse, with
//! the database, user, client and SQLSTATE as fields; PgBouncer's `login attempt`, `closing
//! because`, `pooler error` and `stats:` lines; `logfile` reopened at SIGHUP after logrotate
//! moved it; and `log_connections = false` silencing the logins.
use crate::common;
use common::*;
use std::time::Duration;

/// The JSON objects of the log file's lines (each line must parse).
fn json_lines(path: &std::path::Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn with_message<'a>(lines: &'a [serde_json::Value], start: &str) -> Vec<&'a serde_json::Value> {
    lines
        .iter()
        .filter(|l| l["message"].as_str().is_some_and(|m| m.starts_with(start)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_lines_in_a_logfile_reopened_at_sighup() {
    let dir = std::env::temp_dir().join(format!("pgdog-logging-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("pgdog.log");
    let general = format!(
        "log_format = \"json\"\nlogfile = \"{}\"\nstats_period = 300",
        log.display()
    );
    let (_topo, proxy) = pgdog(&general, 2);
    let app = connect(&proxy).await;
    assert_eq!(one(&app, "SELECT 1").await, "1");
    drop(app);
    let err = connect_as(&proxy, USER, PASSWORD, "nosuchdb")
        .await
        .unwrap_err();
    assert!(sqlstate(&err).is_some());
    eventually("the lines", Duration::from_secs(10), || async {
        let lines = json_lines(&log);
        !with_message(&lines, "closing because: client close request").is_empty()
            && !with_message(&lines, "stats: ").is_empty()
            && !with_message(&lines, "pooler error: ").is_empty()
    })
    .await;
    let lines = json_lines(&log);
    let login = with_message(&lines, "login attempt: db=app user=app tls=no")[0];
    assert_eq!(login["level"], "INFO");
    assert_eq!(login["database"], DB);
    assert_eq!(login["user"], USER);
    assert!(
        login["client"].as_str().unwrap().starts_with("127.0.0.1:"),
        "{login}"
    );
    assert!(
        login["timestamp"].as_str().unwrap().ends_with('Z'),
        "{login}"
    );
    let closed = with_message(&lines, "closing because: client close request")[0];
    assert!(
        closed["message"].as_str().unwrap().contains("(age="),
        "{closed}"
    );
    let error = with_message(&lines, "pooler error: ")[0];
    assert_eq!(error["level"], "WARN");
    assert!(error["sqlstate"].as_str().is_some(), "{error}");
    let stats = with_message(&lines, "stats: ")[0];
    assert_eq!(stats["database"], DB);
    assert!(
        stats["message"].as_str().unwrap().contains("xacts/s"),
        "{stats}"
    );
    // logrotate: move the file away, SIGHUP; the next lines go to a new file at the path.
    let rotated = dir.join("pgdog.log.1");
    std::fs::rename(&log, &rotated).unwrap();
    proxy.signal(libc::SIGHUP);
    eventually("a new logfile", Duration::from_secs(10), || async {
        let again = connect(&proxy).await;
        one(&again, "SELECT 2").await;
        !with_message(&json_lines(&log), "login attempt").is_empty()
    })
    .await;
    let before = json_lines(&rotated).len();
    let again = connect(&proxy).await;
    one(&again, "SELECT 3").await;
    assert_eq!(
        json_lines(&rotated).len(),
        before,
        "nothing more in the rotated file"
    );
    drop((again, proxy));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_connections_off_silences_logins() {
    let dir = std::env::temp_dir().join(format!("pgdog-logging-off-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("pgdog.log");
    let general = format!(
        "logfile = \"{}\"\nlog_connections = false\nlog_stats = false",
        log.display()
    );
    let (_topo, proxy) = pgdog(&general, 2);
    let app = connect(&proxy).await;
    assert_eq!(one(&app, "SELECT 1").await, "1");
    drop(app);
    eventually(
        "the disconnection line",
        Duration::from_secs(10),
        || async {
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .contains("closing because")
        },
    )
    .await;
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("login attempt"), "{text}");
    assert!(text.contains(" INFO "), "text format: {text}");
    drop(proxy);
    let _ = std::fs::remove_dir_all(&dir);
}
