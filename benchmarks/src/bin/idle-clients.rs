//! Opens N client connections (tokio-postgres) and holds them until stdin closes or a signal
//! ends the process; prints "ready N" once all are connected. For pooler memory measurements:
//! `idle-clients "host=127.0.0.1 port=6432 user=u password=p dbname=d" 1000`.
use std::io::Read;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(conninfo), Some(n)) = (
        args.get(1),
        args.get(2).and_then(|n| n.parse::<usize>().ok()),
    ) else {
        eprintln!("usage: idle-clients CONNINFO N");
        std::process::exit(2);
    };
    let mut clients = Vec::with_capacity(n);
    for chunk in (0..n).collect::<Vec<_>>().chunks(50) {
        let mut handles = Vec::new();
        for _ in chunk {
            let conninfo = conninfo.clone();
            handles.push(tokio::spawn(async move {
                let (client, connection) =
                    tokio_postgres::connect(&conninfo, tokio_postgres::NoTls).await?;
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                client.simple_query("SELECT 1").await?;
                Ok::<_, tokio_postgres::Error>(client)
            }));
        }
        for h in handles {
            match h.await {
                Ok(Ok(c)) => clients.push(c),
                Ok(Err(e)) => {
                    eprintln!("idle-clients: {e}");
                    std::process::exit(1);
                }
                Err(e) => {
                    eprintln!("idle-clients: {e}");
                    std::process::exit(1);
                }
            }
        }
    }
    println!("ready {}", clients.len());
    // Hold the connections until stdin closes.
    tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
    })
    .await
    .ok();
    drop(clients);
}
