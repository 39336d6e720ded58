//! `pgdog logical-dump` end to end: JSON lines from a slot on the standby, a stop at
//! `--until-lsn` by itself, and a clean stop on SIGTERM that also drops its temporary slot.
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use topology::{wait_until, Topology};

const DEADLINE: Duration = Duration::from_secs(60);

fn setup() -> Topology {
    let topo = Topology::replicated().expect("topology");
    topo.primary()
        .psql("CREATE TABLE items (id int PRIMARY KEY, name text); CREATE PUBLICATION pub FOR TABLE items")
        .unwrap();
    topo.wait_for_standby(DEADLINE).unwrap();
    topo
}

fn url(node: &topology::Node) -> String {
    format!("postgres://postgres@127.0.0.1:{}/postgres", node.port)
}

/// Waits for the child to exit by itself (killing it after the deadline).
fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("pgdog logical-dump did not stop");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for the child to exit (as `wait_exit`) and asserts it succeeded; its standard error.
fn exits_successfully(child: &mut Child) -> String {
    let status = wait_exit(child);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "{status}: {err}");
    err
}

#[test]
fn logical_dump_prints_json_and_stops_at_until_lsn() {
    let topo = setup();
    topo.create_standby_slot("d1", "pgoutput", DEADLINE)
        .unwrap();
    topo.primary()
        .psql("INSERT INTO items VALUES (1, 'one'), (2, 'two \"quoted\"')")
        .unwrap();
    topo.primary()
        .psql("UPDATE items SET name = 'uno' WHERE id = 1")
        .unwrap();
    // The insert position: with synchronous_commit = off the write position may lag the commit.
    let until = topo
        .primary()
        .psql("SELECT pg_current_wal_insert_lsn()")
        .unwrap();
    topo.primary()
        .psql("INSERT INTO items VALUES (3, 'after')")
        .unwrap();
    topo.wait_for_standby(DEADLINE).unwrap();

    let mut child = Command::new(topology::proxy::binary())
        .args(["logical-dump", "--url", &url(topo.standby())])
        .args(["--slot", "d1", "--publication", "pub", "--proto", "4"])
        .args(["--until-lsn", &until])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pgdog binary (cargo build -p pgdog)");
    let err = exits_successfully(&mut child);
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let kinds: Vec<&str> = out
        .lines()
        .map(|l| {
            assert!(l.starts_with("{\"lsn\":\"") && l.ends_with('}'), "{l}");
            l.split("\"kind\":\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(
        kinds,
        ["begin", "relation", "insert", "insert", "commit", "begin", "update", "commit"],
        "{out}"
    );
    assert!(out.contains("\"public.items\""), "{out}");
    assert!(
        out.contains("\"one\"") && out.contains(r#""two \"quoted\"""#),
        "{out}"
    );
    assert!(out.contains("\"uno\"") && !out.contains("after"), "{out}");
    assert!(err.contains("stopped"), "{err}");
    // Progress was confirmed: the slot moved to (at least) the last commit.
    let confirmed = topo
        .standby()
        .psql(&format!(
            "SELECT confirmed_flush_lsn >= '{until}'::pg_lsn FROM pg_replication_slots WHERE slot_name = 'd1'"
        ))
        .unwrap();
    assert_eq!(confirmed, "t");
}

#[test]
fn logical_dump_stops_cleanly_on_sigterm() {
    let topo = setup();
    let mut child = Command::new(topology::proxy::binary())
        .args(["logical-dump", "--url", &url(topo.standby())])
        .args(["--primary-url", &url(topo.primary())])
        .args([
            "--slot",
            "tmp1",
            "--publication",
            "pub",
            "--create-temporary",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pgdog binary (cargo build -p pgdog)");
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap_or_default()).is_err() {
                break;
            }
        }
    });
    wait_until("the temporary slot to be streaming", DEADLINE, Duration::from_millis(20), || {
        Ok(topo
            .standby()
            .psql("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'tmp1' AND active AND temporary")?
            == "1")
    })
    .unwrap();
    topo.primary()
        .psql("INSERT INTO items VALUES (42, 'answer')")
        .unwrap();
    let start = Instant::now();
    let mut lines = Vec::new();
    while !lines
        .iter()
        .any(|l: &String| l.contains("\"kind\":\"commit\""))
    {
        let left = DEADLINE.saturating_sub(start.elapsed());
        match rx.recv_timeout(left) {
            Ok(line) => lines.push(line),
            Err(e) => panic!("no commit line ({e}): {lines:?}"),
        }
    }
    assert!(
        lines
            .iter()
            .any(|l| l.contains("\"kind\":\"insert\"") && l.contains("\"answer\"")),
        "{lines:?}"
    );
    // SAFETY: plain kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let err = exits_successfully(&mut child);
    assert!(err.contains("stopped"), "{err}");
    wait_until(
        "the temporary slot to go away",
        DEADLINE,
        Duration::from_millis(20),
        || {
            Ok(topo
                .standby()
                .psql("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'tmp1'")?
                == "0")
        },
    )
    .unwrap();
}
