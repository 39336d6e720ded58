//! A connection: plain TCP, a Unix-domain socket (never TLS), TLS as the server (clients of
//! pgdog) or TLS as the client (pgdog to Postgres), behind one type.
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::{TcpStream, UnixStream};

pub enum Stream {
    Plain(TcpStream),
    Unix(UnixStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
    TlsClient(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

/// Runs the same expression on whichever stream `$s` holds (bound as `$x`, pinned).
macro_rules! each {
    ($s:expr, $x:ident => $e:expr) => {
        match $s {
            Stream::Plain($x) => $e,
            Stream::Unix($x) => $e,
            Stream::Tls($x) => {
                let $x = $x.as_mut();
                $e
            }
            Stream::TlsClient($x) => {
                let $x = $x.as_mut();
                $e
            }
        }
    };
}

impl Stream {
    /// The TCP socket underneath (None for a Unix-domain socket).
    pub fn tcp(&self) -> Option<&TcpStream> {
        match self {
            Stream::Plain(s) => Some(s),
            Stream::Unix(_) => None,
            Stream::Tls(s) => Some(s.get_ref().0),
            Stream::TlsClient(s) => Some(s.get_ref().0),
        }
    }

    /// The client's IP address; None for a Unix-domain socket (Postgres' `[local]`).
    pub fn peer_ip(&self) -> Option<std::net::IpAddr> {
        self.tcp()?.peer_addr().ok().map(|a| a.ip())
    }

    /// `f` if the runtime has seen the socket readable (tokio's `try_io`: no system call when
    /// it has not, and readiness cleared when `f` would block).
    pub fn try_io_readable<R>(&self, f: impl FnOnce() -> std::io::Result<R>) -> std::io::Result<R> {
        match self.tcp() {
            Some(tcp) => tcp.try_io(Interest::READABLE, f),
            None => match self {
                Stream::Unix(u) => u.try_io(Interest::READABLE, f),
                _ => Err(std::io::ErrorKind::WouldBlock.into()),
            },
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        each!(self.get_mut(), s => Pin::new(s).poll_read(cx, buf))
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        each!(self.get_mut(), s => Pin::new(s).poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        each!(self.get_mut(), s => Pin::new(s).poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        each!(self.get_mut(), s => Pin::new(s).poll_shutdown(cx))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        each!(self.get_mut(), s => Pin::new(s).poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Unix(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
            Stream::TlsClient(s) => s.is_write_vectored(),
        }
    }
}

/// The common name (CN) of a DER certificate's subject, if it has one (the first, as Postgres
/// reads it).
pub fn common_name(der: &[u8]) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let name = cert.subject().iter_common_name().next()?;
    name.as_str().ok().map(str::to_string)
}

/// Loads the TLS acceptor from PEM files. With `client_ca`, clients may present a certificate
/// signed by one of its CAs (checked, and used by the `cert` method); clients without one
/// still connect.
pub fn tls_acceptor(
    cert: &std::path::Path,
    key: &std::path::Path,
    client_ca: Option<&std::path::Path>,
) -> Result<tokio_rustls::TlsAcceptor, String> {
    let certs = {
        let f = std::fs::File::open(cert).map_err(|e| format!("{}: {e}", cert.display()))?;
        rustls_pemfile::certs(&mut std::io::BufReader::new(f))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{}: {e}", cert.display()))?
    };
    let key = {
        let f = std::fs::File::open(key).map_err(|e| format!("{}: {e}", key.display()))?;
        rustls_pemfile::private_key(&mut std::io::BufReader::new(f))
            .map_err(|e| format!("{}: {e}", key.display()))?
            .ok_or_else(|| format!("{}: no private key", key.display()))?
    };
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match client_ca {
        Some(path) => {
            let roots = std::sync::Arc::new(super::tls_client::roots(path)?);
            let verifier =
                rustls::server::WebPkiClientVerifier::builder_with_provider(roots, provider)
                    .allow_unauthenticated()
                    .build()
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let config = builder
        .with_single_cert(certs, key)
        .map_err(|e| e.to_string())?;
    Ok(tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config)))
}
