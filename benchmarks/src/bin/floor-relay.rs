//! The floor of a transaction-mode proxy's cost: a relay that copies bytes both ways between
//! each client and a server connection of its own, parsing nothing, pooling nothing. What pgdog
//! spends above it per transaction is pgdog's own work (benchmarks/floor.sh compares them).
//!
//! `floor-relay MODE LISTEN SERVER`, MODE one of:
//! - `select`: one current-thread tokio runtime (IO only), a task per client, a `select!` loop;
//! - `poll`: the same runtime and tasks, one hand-written poll over both sockets (how a relay
//!   core inside a tokio task can work: read into a buffer, write it out, both directions in one
//!   `Future::poll`);
//! - `mio`: one thread, one `mio::Poll` (edge-triggered epoll), no runtime at all.
use std::future::Future;
use std::io::{self, ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// Bytes read per call: a `pgbench -S` exchange fits many times over.
const BUF: usize = 16 * 1024;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [mode, listen, server] = &args[..] else {
        eprintln!("usage: floor-relay select|poll|mio LISTEN_ADDR SERVER_ADDR");
        std::process::exit(2);
    };
    let (listen, server): (SocketAddr, SocketAddr) = match (listen.parse(), server.parse()) {
        (Ok(l), Ok(s)) => (l, s),
        _ => {
            eprintln!("floor-relay: addresses are IP:PORT");
            std::process::exit(2);
        }
    };
    let result = match mode.as_str() {
        "select" | "poll" => tokio_relay(mode == "poll", listen, server),
        "mio" => mio_relay::run(listen, server),
        _ => Err(io::Error::new(
            ErrorKind::InvalidInput,
            "mode: select, poll or mio",
        )),
    };
    if let Err(e) = result {
        eprintln!("floor-relay: {e}");
        std::process::exit(1);
    }
}

fn tokio_relay(poll: bool, listen: SocketAddr, server: SocketAddr) -> io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    runtime.block_on(async move {
        let listener = TcpListener::bind(listen).await?;
        loop {
            let (client, _) = listener.accept().await?;
            tokio::spawn(async move {
                let Ok(upstream) = TcpStream::connect(server).await else {
                    return;
                };
                let _ = client.set_nodelay(true);
                let _ = upstream.set_nodelay(true);
                let _ = if poll {
                    Relay::new(client, upstream).await
                } else {
                    select_loop(client, upstream).await
                };
            });
        }
    })
}

/// A `select!` over both reads, each read written out whole before the next.
async fn select_loop(mut client: TcpStream, mut server: TcpStream) -> io::Result<()> {
    let mut up = vec![0u8; BUF];
    let mut down = vec![0u8; BUF];
    loop {
        tokio::select! {
            n = client.read(&mut up) => match n? {
                0 => return Ok(()),
                n => server.write_all(&up[..n]).await?,
            },
            n = server.read(&mut down) => match n? {
                0 => return Ok(()),
                n => client.write_all(&down[..n]).await?,
            },
        }
    }
}

/// One direction's buffer: bytes read and not yet written (`buf[at..end]`).
struct Half {
    buf: Box<[u8]>,
    at: usize,
    end: usize,
    done: bool,
}

impl Half {
    fn new() -> Half {
        Half {
            buf: vec![0u8; BUF].into_boxed_slice(),
            at: 0,
            end: 0,
            done: false,
        }
    }

    /// Moves what `from` has to `to` until one of them would block; Ready(Err) ends the relay,
    /// Ready(Ok) is end of file from `from`.
    fn pump(
        &mut self,
        cx: &mut Context<'_>,
        from: &mut TcpStream,
        to: &mut TcpStream,
    ) -> Poll<io::Result<()>> {
        loop {
            if self.at == self.end {
                let mut rb = ReadBuf::new(&mut self.buf);
                ready!(Pin::new(&mut *from).poll_read(cx, &mut rb))?;
                let n = rb.filled().len();
                if n == 0 {
                    return Poll::Ready(Ok(()));
                }
                (self.at, self.end) = (0, n);
            }
            while self.at < self.end {
                let n = ready!(Pin::new(&mut *to).poll_write(cx, &self.buf[self.at..self.end]))?;
                if n == 0 {
                    return Poll::Ready(Err(ErrorKind::WriteZero.into()));
                }
                self.at += n;
            }
        }
    }
}

/// Both directions in one hand-written `poll`: no per-loop futures, no select.
struct Relay {
    client: TcpStream,
    server: TcpStream,
    up: Half,
    down: Half,
}

impl Relay {
    fn new(client: TcpStream, server: TcpStream) -> Relay {
        Relay {
            client,
            server,
            up: Half::new(),
            down: Half::new(),
        }
    }
}

impl Future for Relay {
    type Output = io::Result<()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        if !me.up.done {
            if let Poll::Ready(r) = me.up.pump(cx, &mut me.client, &mut me.server) {
                r?;
                me.up.done = true;
            }
        }
        if !me.down.done {
            if let Poll::Ready(r) = me.down.pump(cx, &mut me.server, &mut me.client) {
                r?;
                me.down.done = true;
            }
        }
        if me.up.done || me.down.done {
            return Poll::Ready(Ok(()));
        }
        Poll::Pending
    }
}

/// The same relay on raw mio: one thread, edge-triggered readiness, each socket read until it
/// would block and written to its peer (what cannot be written waits for WRITABLE).
mod mio_relay {
    use super::*;
    use mio::net::{TcpListener, TcpStream};
    use mio::{Events, Interest, Poll, Token};

    const LISTENER: Token = Token(usize::MAX);

    /// One socket of a pair: its peer is `token ^ 1`.
    struct Side {
        stream: TcpStream,
        /// Read from this socket, not yet written to the peer.
        pending: Vec<u8>,
    }

    pub fn run(listen: SocketAddr, server: SocketAddr) -> io::Result<()> {
        let mut poll = Poll::new()?;
        let mut events = Events::with_capacity(1024);
        let mut listener = TcpListener::bind(listen)?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)?;
        let mut sides: Vec<Option<Side>> = Vec::new();
        let mut buf = vec![0u8; BUF];
        loop {
            poll.poll(&mut events, None)?;
            for event in events.iter() {
                if event.token() == LISTENER {
                    accept_all(&poll, &listener, server, &mut sides)?;
                    continue;
                }
                let at = event.token().0;
                if !relay(&mut sides, at, &mut buf) {
                    close(&poll, &mut sides, at);
                }
            }
        }
    }

    fn accept_all(
        poll: &Poll,
        listener: &TcpListener,
        server: SocketAddr,
        sides: &mut Vec<Option<Side>>,
    ) -> io::Result<()> {
        loop {
            let (mut client, _) = match listener.accept() {
                Ok(c) => c,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            };
            // A blocking connect keeps this relay short; connections are made once per client.
            // A client whose server connection fails is dropped, as in the tokio modes.
            let Ok(mut upstream) = connect(server) else {
                continue;
            };
            if client.set_nodelay(true).is_err() {
                continue;
            }
            let pair = match sides
                .chunks(2)
                .position(|c| c[0].is_none() && c[1].is_none())
            {
                Some(p) => p * 2,
                None => {
                    sides.extend([None, None]);
                    sides.len() - 2
                }
            };
            let interest = Interest::READABLE | Interest::WRITABLE;
            poll.registry()
                .register(&mut client, Token(pair), interest)?;
            poll.registry()
                .register(&mut upstream, Token(pair + 1), interest)?;
            sides[pair] = Some(Side {
                stream: client,
                pending: Vec::new(),
            });
            sides[pair + 1] = Some(Side {
                stream: upstream,
                pending: Vec::new(),
            });
        }
    }

    fn connect(server: SocketAddr) -> io::Result<TcpStream> {
        let upstream = std::net::TcpStream::connect(server)?;
        upstream.set_nonblocking(true)?;
        upstream.set_nodelay(true)?;
        Ok(TcpStream::from_std(upstream))
    }

    /// Socket `at` is ready: writes what waits for it, then reads it dry into its peer. False
    /// when the pair is done (end of file or an error).
    fn relay(sides: &mut [Option<Side>], at: usize, buf: &mut [u8]) -> bool {
        let pair = at & !1;
        let (a, b) = sides[pair..pair + 2].split_at_mut(1);
        let (Some(first), Some(second)) = (a[0].as_mut(), b[0].as_mut()) else {
            return false;
        };
        let (me, peer) = if at == pair {
            (first, second)
        } else {
            (second, first)
        };
        // What the peer read earlier and could not write to this socket.
        if !write_pending(&mut me.stream, &mut peer.pending) {
            return false;
        }
        loop {
            match me.stream.read(buf) {
                Ok(0) => return false,
                Ok(n) => {
                    me.pending.extend_from_slice(&buf[..n]);
                    if !write_pending(&mut peer.stream, &mut me.pending) {
                        return false;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }

    /// Writes `pending` to `to` until it is empty or `to` would block; false on an error.
    fn write_pending(to: &mut TcpStream, pending: &mut Vec<u8>) -> bool {
        let mut written = 0;
        while written < pending.len() {
            match to.write(&pending[written..]) {
                Ok(0) => return false,
                Ok(n) => written += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
        pending.drain(..written);
        true
    }

    fn close(poll: &Poll, sides: &mut [Option<Side>], at: usize) {
        let pair = at & !1;
        for side in &mut sides[pair..pair + 2] {
            if let Some(mut s) = side.take() {
                let _ = poll.registry().deregister(&mut s.stream);
            }
        }
    }
}
