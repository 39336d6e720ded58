//! Shared setup for the pooler tests: a real PostgreSQL 18 server and pgdog in front of it.
#![allow(dead_code)]
use topology::{Proxy, Topology};

pub const USER: &str = "app";
pub const PASSWORD: &str = "secret";
pub const DB: &str = "app";

/// A single server with pgdog in front: database `app` (the server's `postgres` database,
/// server user `postgres`), user `app` / `secret`. `general` is extra `[general]` lines.
pub fn pgdog(general: &str, pool_size: usize) -> (Topology, Proxy) {
    let topo = Topology::single().expect("topology");
    let proxy = start(&topo, general, pool_size);
    (topo, proxy)
}

pub fn start(topo: &Topology, general: &str, pool_size: usize) -> Proxy {
    let config = format!(
        "{general}\n\n[[databases]]\nname = \"{DB}\"\nhost = \"127.0.0.1\"\nport = {}\ndatabase_name = \"postgres\"\nuser = \"postgres\"\npool_size = {pool_size}\n",
        topo.primary().port
    );
    let users =
        format!("[[users]]\nname = \"{USER}\"\ndatabase = \"{DB}\"\npassword = \"{PASSWORD}\"\n");
    Proxy::start(&config, &users).expect("pgdog")
}

/// A tokio-postgres client through pgdog.
pub async fn connect(proxy: &Proxy) -> tokio_postgres::Client {
    connect_as(proxy, USER, PASSWORD, DB)
        .await
        .expect("connect through pgdog")
}

pub async fn connect_as(
    proxy: &Proxy,
    user: &str,
    password: &str,
    db: &str,
) -> Result<tokio_postgres::Client, tokio_postgres::Error> {
    let (client, connection) =
        tokio_postgres::connect(&proxy.conninfo(user, password, db), tokio_postgres::NoTls).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}
