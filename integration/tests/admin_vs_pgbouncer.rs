//! The admin console next to the real PgBouncer 1.25 (issue 49): the same commands sent to
//! PgBouncer's console and to pgdog's admin database give the same columns (SHOW) and the same
//! error text and SQLSTATE (errors). PgBouncer comes from `../shared/tools/build-pgbouncer.sh`
//! (built once, then cached), run as the Postgres server user; where that folder is absent (a
//! fresh clone elsewhere) pgdog is checked against PgBouncer's answers recorded from it.
use crate::common;
use common::*;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::time::Duration;
use tokio_postgres::SimpleQueryMessage;

/// PgBouncer 1.25's binary from `../shared/tools/build-pgbouncer.sh` (next to the repository;
/// absent from a fresh clone elsewhere): None when there is none.
fn pgbouncer_binary() -> Option<PathBuf> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/tools/build-pgbouncer.sh"
    );
    if !std::path::Path::new(script).is_file() {
        return None;
    }
    let out = std::process::Command::new("bash")
        .arg(script)
        .output()
        .ok()?;
    let path = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()?
        .to_string();
    (out.status.success() && std::path::Path::new(&path).is_file()).then(|| PathBuf::from(path))
}

/// PgBouncer 1.25.2's answers to the commands, recorded from a live run of this test (which
/// checks them again whenever PgBouncer is at hand): the columns of each SHOW, the SQLSTATE and
/// text of each error.
const PGBOUNCER_1_25: [(&str, &str); 16] = [
    ("SHOW STATE", "key,value"),
    ("SHOW TOTALS", "name,value"),
    ("SHOW MEM", "name,size,used,free,memtotal"),
    ("SHOW FDS", "fd,task,user,database,addr,port,cancel,link,client_encoding,std_strings,datestyle,timezone,password,scram_client_key,scram_server_key"),
    ("SHOW SOCKETS", "type,user,database,replication,state,addr,port,local_addr,local_port,connect_time,request_time,wait,wait_us,close_needed,ptr,link,remote_pid,tls,application_name,prepared_statements,id,recv_pos,pkt_pos,pkt_remain,send_pos,send_remain,pkt_avail,send_avail"),
    ("SHOW ACTIVE_SOCKETS", "type,user,database,replication,state,addr,port,local_addr,local_port,connect_time,request_time,wait,wait_us,close_needed,ptr,link,remote_pid,tls,application_name,prepared_statements,id,recv_pos,pkt_pos,pkt_remain,send_pos,send_remain,pkt_avail,send_avail"),
    ("SHOW PEERS", "peer_id,host,port,pool_size"),
    ("SHOW PEER_POOLS", "peer_id,cl_active_cancel_req,cl_waiting_cancel_req,sv_active_cancel,sv_login"),
    ("SHOW DNS_HOSTS", "hostname,ttl,addrs"),
    ("SHOW DNS_ZONES", "zonename,serial,count"),
    ("SHOW FOO", "08P01 invalid command 'SHOW FOO', use SHOW HELP;"),
    ("FOO", "08P01 invalid command 'FOO', use SHOW HELP;"),
    ("KILL_CLIENT 987654", "08P01 client not found"),
    ("KILL_CLIENT x", "08P01 invalid client pointer supplied"),
    ("KILL nosuchdb", "08P01 no such database: nosuchdb"),
    ("DISABLE nosuchdb", "08P01 no such database: nosuchdb"),
];

/// A running PgBouncer (killed when dropped).
struct PgBouncer {
    child: std::process::Child,
    port: u16,
    dir: PathBuf,
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start_pgbouncer(topo: &topology::Topology, binary: PathBuf) -> PgBouncer {
    let lease = topology::Proxy::lease_port().expect("port");
    let port = lease.port;
    drop(lease);
    let dir = std::env::temp_dir().join(format!("pgdog-vs-pgbouncer-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ini = format!(
        "[databases]\n{DB} = host=127.0.0.1 port={} dbname=postgres user=postgres\n\
         [pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n\
         auth_type = trust\nauth_file = {dir}/userlist.txt\nadmin_users = admin\n\
         pool_mode = transaction\npeer_id = 1\n[peers]\n2 = host=127.0.0.1 port=1\n",
        topo.primary().port,
        dir = dir.display()
    );
    std::fs::write(dir.join("pgbouncer.ini"), ini).unwrap();
    std::fs::write(dir.join("userlist.txt"), "\"admin\" \"\"\n\"app\" \"\"\n").unwrap();
    let mut cmd = std::process::Command::new(binary);
    cmd.arg(dir.join("pgbouncer.ini"))
        .current_dir(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if let Some(user) = topo.install().server_user() {
        // PgBouncer refuses to run as root.
        for f in ["", "pgbouncer.ini", "userlist.txt"] {
            let _ = std::os::unix::fs::chown(dir.join(f), Some(user.uid), Some(user.gid));
        }
        cmd.uid(user.uid).gid(user.gid);
    }
    let child = cmd.spawn().expect("PgBouncer starts");
    let bouncer = PgBouncer { child, port, dir };
    topology::wait_until(
        "PgBouncer to listen",
        Duration::from_secs(20),
        Duration::from_millis(50),
        || Ok(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()),
    )
    .expect("PgBouncer listens");
    bouncer
}

/// What a console answers `sql`: the column names, or the error's SQLSTATE and text.
async fn answer(client: &tokio_postgres::Client, sql: &str) -> String {
    match client.simple_query(sql).await {
        Ok(msgs) => msgs
            .iter()
            .find_map(|m| match m {
                SimpleQueryMessage::RowDescription(cols) => Some(
                    cols.iter()
                        .map(|c| c.name().to_string())
                        .collect::<Vec<_>>()
                        .join(","),
                ),
                _ => None,
            })
            .unwrap_or_else(|| "no rows".into()),
        Err(e) => match e.as_db_error() {
            Some(db) => format!("{} {}", db.code().code(), db.message()),
            None => format!("{e}"),
        },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_answers_as_pgbouncer_does() {
    let topo = topology::Topology::single().unwrap();
    // The live PgBouncer first, when there is one: its answers must still be the recorded ones.
    if let Some(binary) = pgbouncer_binary() {
        let bouncer = tokio::task::block_in_place(|| start_pgbouncer(&topo, binary));
        let theirs = connect_str(&format!(
            "host=127.0.0.1 port={} user=admin dbname=pgbouncer",
            bouncer.port
        ))
        .await
        .expect("PgBouncer's console")
        .0;
        for (sql, recorded) in PGBOUNCER_1_25 {
            assert_eq!(
                answer(&theirs, sql).await,
                recorded,
                "{sql}: PgBouncer now, then as recorded"
            );
        }
    }
    let proxy = start(
        &topo,
        &format!("admin_password = \"{ADMIN_PASSWORD}\"\npeer_id = 1\n[[peers]]\npeer_id = 2\nhost = \"127.0.0.1\"\nport = 1"),
        2,
    );
    let ours = admin(&proxy).await;
    for (sql, pgbouncer) in PGBOUNCER_1_25 {
        assert_eq!(
            answer(&ours, sql).await,
            pgbouncer,
            "{sql}: pgdog, then PgBouncer 1.25"
        );
    }
}
