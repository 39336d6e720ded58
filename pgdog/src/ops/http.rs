//! The HTTP/1.1 endpoint (`[general] openmetrics_port`, `openmetrics_host`), served by hyper
//! in the proxy's runtime: `GET /metrics` (OpenMetrics text), `GET /health` (200 when every
//! shard of every database has a reachable primary, else 503 naming the failing shards), 404
//! for anything else.
use crate::registry::Registry;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use std::collections::BTreeSet;
use tokio::net::TcpListener;

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Binds the endpoint if it is configured; serves it in the background.
pub async fn spawn() -> Result<(), std::io::Error> {
    let registry = Registry::current();
    let g = &registry.settings.config.general;
    let Some(port) = g.openmetrics_port else {
        return Ok(());
    };
    let listener = TcpListener::bind((g.openmetrics_host.as_str(), port)).await?;
    tracing::info!("metrics and health on http://{}:{port}", g.openmetrics_host);
    tokio::spawn(serve(listener));
    Ok(())
}

async fn serve(listener: TcpListener) {
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("metrics endpoint accept: {e}");
                continue;
            }
        };
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let service = hyper::service::service_fn(|req| async move {
                Ok::<_, std::convert::Infallible>(handle(&req))
            });
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await
            {
                tracing::debug!("metrics endpoint connection: {e}");
            }
        });
    }
}

fn response(status: StatusCode, content_type: &str, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

fn handle(req: &Request<Incoming>) -> Response<Full<Bytes>> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return response(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            "GET only\n".into(),
        );
    }
    match req.uri().path() {
        "/metrics" => response(StatusCode::OK, OPENMETRICS, super::openmetrics::render()),
        "/health" => {
            let failing = failing_shards();
            let (status, body) = if failing.is_empty() {
                (StatusCode::OK, serde_json::json!({ "status": "ok" }))
            } else {
                let list: Vec<serde_json::Value> = failing
                    .iter()
                    .map(|(db, shard, why)| {
                        serde_json::json!({ "database": db, "shard": shard, "error": why })
                    })
                    .collect();
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    serde_json::json!({ "status": "unavailable", "failing": list }),
                )
            };
            response(status, "application/json", format!("{body}\n"))
        }
        _ => response(StatusCode::NOT_FOUND, "text/plain", "not found\n".into()),
    }
}

/// (database, shard, why) of every shard without a reachable primary.
fn failing_shards() -> Vec<(String, usize, String)> {
    let registry = Registry::current();
    let mut seen = BTreeSet::new();
    let mut failing = Vec::new();
    for ((_, db), shard) in registry.shard_entries() {
        if !seen.insert((db.clone(), shard.index())) {
            continue;
        }
        let why = match shard.primary() {
            Ok(pool) if pool.host().is_banned() => Some(format!(
                "primary {}:{} is down",
                pool.target().host,
                pool.target().port
            )),
            Ok(_) => None,
            Err(e) => Some(e.to_string()),
        };
        if let Some(why) = why {
            failing.push((db.clone(), shard.index(), why));
        }
    }
    failing.sort();
    failing
}
