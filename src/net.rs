//! Sockets as the server holds them: a client over TCP, TLS or a Unix
//! domain socket behind one type, the listeners of each kind, and the socket
//! options redis.conf sets (`tcp-backlog`, `tcp-keepalive`,
//! `unixsocketperm`). Used by `server`, and by `busy`, which serves the
//! clients (and accepts new ones) while a script runs; no other room sees
//! a socket.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};

use mio::event::Source;
use mio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use mio::{Interest, Registry, Token};

/// A client's connection.
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    Tls(Box<TlsStream>),
}

/// A client over TLS: the socket and the connection's TLS state, which
/// reads and writes through a shared reference borrow (the loop is one
/// thread). Non-blocking: the handshake advances as bytes come, never
/// waiting; what TLS has to send and the socket will not take yet stays
/// in rustls until the socket is writable again.
pub struct TlsStream {
    socket: TcpStream,
    tls: std::cell::RefCell<rustls::Connection>,
    /// Bytes rustls held undelivered after the last records it read
    /// (records to send, plaintext not yet read).
    buffered: std::cell::Cell<usize>,
}

/// What a TLS connection's state costs beyond its buffered bytes: the
/// connection itself and the buffer a whole record is read into (16 KiB
/// of plaintext, its header and tag).
const TLS_STATE_BYTES: usize = std::mem::size_of::<rustls::Connection>() + 16 * 1024 + 5 + 256;

impl TlsStream {
    /// A TLS connection over `socket`: a server's accepted, or a client's
    /// (connecting, or connected: its ClientHello leaves with the first
    /// write).
    pub fn stream(socket: TcpStream, tls: impl Into<rustls::Connection>) -> Stream {
        Stream::Tls(Box::new(TlsStream {
            socket,
            tls: std::cell::RefCell::new(tls.into()),
            buffered: std::cell::Cell::new(0),
        }))
    }

    /// Reads plaintext into `buf`, reading and decrypting records until it
    /// is full or the socket has nothing more: a short read means the
    /// socket is drained, as for plain TCP. Handshake replies are sent on
    /// the way. `Ok(0)`: the peer closed (with close_notify or not).
    fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        let mut tls = self.tls.borrow_mut();
        let mut filled = 0;
        loop {
            while filled < buf.len() {
                match tls.reader().read(&mut buf[filled..]) {
                    Ok(0) => return Ok(filled),
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(filled),
                    Err(e) if filled > 0 => {
                        tracing::debug!("TLS read: {e}");
                        return Ok(filled);
                    }
                    Err(e) => return Err(e),
                }
            }
            if filled == buf.len() {
                return Ok(filled);
            }
            let mut socket = ShortReads {
                socket: &self.socket,
                short: false,
            };
            match tls.read_tls(&mut socket) {
                Ok(0) => return Ok(filled),
                Ok(_) => {}
                Err(e) if filled > 0 && e.kind() == io::ErrorKind::WouldBlock => return Ok(filled),
                Err(e) => return Err(e),
            }
            match tls.process_new_packets() {
                Ok(state) => self
                    .buffered
                    .set(state.tls_bytes_to_write() + state.plaintext_bytes_to_read()),
                Err(e) => {
                    // The alert rustls queued tells the peer why.
                    let _ = tls.write_tls(&mut &self.socket);
                    return Err(io::Error::new(io::ErrorKind::InvalidData, e));
                }
            }
            match send_records(&mut tls, &self.socket) {
                Err(e) if e.kind() != io::ErrorKind::WouldBlock => return Err(e),
                _ => {}
            }
            // A short read drained the socket: what it decrypted is all
            // there is until the next edge (no read that would only say
            // WouldBlock, as for plain TCP). With nothing decrypted (a
            // handshake message, part of a record) the socket is read
            // again, for the end of stream that may have come with it.
            if socket.short {
                while filled < buf.len() {
                    match tls.reader().read(&mut buf[filled..]) {
                        Ok(n) if n > 0 => filled += n,
                        _ => break,
                    }
                }
                if filled > 0 {
                    return Ok(filled);
                }
            }
        }
    }

    /// Takes plaintext to send: `WouldBlock` while earlier records wait
    /// for the socket, else what rustls took (encrypted and sent as far as
    /// the socket allows; the rest waits, see `pending_output`).
    fn write(&self, buf: &[u8]) -> io::Result<usize> {
        let mut tls = self.tls.borrow_mut();
        send_records(&mut tls, &self.socket)?;
        let n = tls.writer().write(buf)?;
        if n == 0 && !buf.is_empty() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        match send_records(&mut tls, &self.socket) {
            Err(e) if e.kind() != io::ErrorKind::WouldBlock => Err(e),
            _ => Ok(n),
        }
    }
}

/// The socket as rustls reads it, noting a read that came back short of
/// what was asked (the socket is drained).
struct ShortReads<'a> {
    socket: &'a TcpStream,
    short: bool,
}

impl Read for ShortReads<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = (&*self.socket).read(buf)?;
        self.short = n < buf.len();
        Ok(n)
    }
}

/// Writes the records rustls has queued until none is left (Ok) or the
/// socket is full (`WouldBlock`).
fn send_records(tls: &mut rustls::Connection, socket: &TcpStream) -> io::Result<()> {
    while tls.wants_write() {
        match tls.write_tls(&mut &*socket) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Who connected, as CLIENT LIST and protected mode see it.
pub struct Peer {
    /// `ip:port`, or the socket's path and `:0` (Redis's form).
    pub addr: String,
    pub laddr: String,
    /// Loopback or a Unix socket: protected mode lets it in.
    pub local: bool,
    pub unix: bool,
}

impl Read for &Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => (&*s).read(buf),
            Stream::Unix(s) => (&*s).read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for &Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => (&*s).write(buf),
            Stream::Unix(s) => (&*s).write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A client's socket as the server lends it: reads and writes through a
/// shared reference (as `&TcpStream` does).
pub trait PeerSocket {
    fn read_into(&self, buf: &mut [u8]) -> std::io::Result<usize>;
    fn write_from(&self, buf: &[u8]) -> std::io::Result<usize>;
}

impl PeerSocket for Stream {
    fn read_into(&self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut s = self;
        s.read(buf)
    }

    fn write_from(&self, buf: &[u8]) -> std::io::Result<usize> {
        let mut s = self;
        s.write(buf)
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tls(s) => s.socket.as_raw_fd(),
        }
    }
}

impl Source for Stream {
    fn register(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.register(r, t, i),
            Stream::Unix(s) => s.register(r, t, i),
            Stream::Tls(s) => s.socket.register(r, t, i),
        }
    }

    fn reregister(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.reregister(r, t, i),
            Stream::Unix(s) => s.reregister(r, t, i),
            Stream::Tls(s) => s.socket.reregister(r, t, i),
        }
    }

    fn deregister(&mut self, r: &Registry) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.deregister(r),
            Stream::Unix(s) => s.deregister(r),
            Stream::Tls(s) => s.socket.deregister(r),
        }
    }
}

/// A listening socket.
pub enum Listener {
    Tcp(TcpListener),
    /// With its path, removed when the server stops.
    Unix(UnixListener, PathBuf),
    /// `tls-port`: TCP, each connection with the TLS configuration the
    /// context holds when it is accepted.
    Tls(TcpListener, crate::tls::TlsContext),
}

impl Listener {
    /// Listens on the Unix socket `path` (a stale socket file there is
    /// replaced, as Redis does) with permissions `perm` (0: the umask's).
    pub fn unix(path: &Path, perm: u32, backlog: u32) -> io::Result<Listener> {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path)?;
        set_backlog(listener.as_raw_fd(), backlog)?;
        if perm != 0 {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(perm))?;
        }
        Ok(Listener::Unix(listener, path.to_path_buf()))
    }

    /// The next waiting connection.
    pub fn accept(&self) -> io::Result<(Stream, Peer)> {
        match self {
            Listener::Tcp(l) => {
                let (socket, peer) = accept_tcp(l)?;
                Ok((Stream::Tcp(socket), peer))
            }
            Listener::Tls(l, context) => {
                let (socket, peer) = accept_tcp(l)?;
                Ok((TlsStream::stream(socket, context.accept()?), peer))
            }
            Listener::Unix(l, path) => {
                let (socket, _) = l.accept()?;
                let addr = format!("{}:0", path.display());
                let peer = Peer {
                    laddr: addr.clone(),
                    addr,
                    local: true,
                    unix: true,
                };
                Ok((Stream::Unix(socket), peer))
            }
        }
    }

    /// Where it listens, for the log.
    pub fn describe(&self) -> String {
        match self {
            Listener::Tcp(l) => l
                .local_addr()
                .map_or_else(|e| e.to_string(), |a| a.to_string()),
            Listener::Tls(l, _) => l
                .local_addr()
                .map_or_else(|e| e.to_string(), |a| format!("TLS {a}")),
            Listener::Unix(_, path) => format!("unix socket {}", path.display()),
        }
    }
}

/// A TCP connection accepted, and who it is from.
fn accept_tcp(l: &TcpListener) -> io::Result<(TcpStream, Peer)> {
    let (socket, addr) = l.accept()?;
    let laddr = socket
        .local_addr()
        .map_or_else(|_| String::new(), |a| a.to_string());
    let peer = Peer {
        addr: addr.to_string(),
        laddr,
        local: addr.ip().is_loopback(),
        unix: false,
    };
    Ok((socket, peer))
}

impl Source for Listener {
    fn register(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Listener::Tcp(l) | Listener::Tls(l, _) => l.register(r, t, i),
            Listener::Unix(l, _) => l.register(r, t, i),
        }
    }

    fn reregister(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
        match self {
            Listener::Tcp(l) | Listener::Tls(l, _) => l.reregister(r, t, i),
            Listener::Unix(l, _) => l.reregister(r, t, i),
        }
    }

    fn deregister(&mut self, r: &Registry) -> io::Result<()> {
        match self {
            Listener::Tcp(l) | Listener::Tls(l, _) => l.deregister(r),
            Listener::Unix(l, _) => l.deregister(r),
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Sets a listening socket's queue length: Linux takes a second listen()
/// on a listening socket as a new backlog.
fn set_backlog(fd: RawFd, backlog: u32) -> io::Result<()> {
    let backlog = i32::try_from(backlog).unwrap_or(i32::MAX);
    // SAFETY: listen() on a descriptor this process owns.
    if unsafe { libc::listen(fd, backlog) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let somaxconn = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok());
    if let Some(max) = somaxconn.filter(|&max| max < backlog) {
        tracing::warn!(
            "WARNING: The TCP backlog setting of {backlog} cannot be enforced because \
             /proc/sys/net/core/somaxconn is set to the lower value of {max}."
        );
    }
    Ok(())
}

/// Turns on TCP keepalive probes after `interval_s` idle seconds, as
/// Redis's anetKeepAlive: then every third of that, 3 unanswered close.
pub fn set_keepalive(stream: &Stream, interval_s: u64) -> io::Result<()> {
    let socket = match stream {
        Stream::Tcp(socket) => socket,
        Stream::Tls(tls) => &tls.socket,
        Stream::Unix(_) => return Ok(()),
    };
    let fd = socket.as_raw_fd();
    let idle = i32::try_from(interval_s).unwrap_or(i32::MAX);
    let options = [
        (libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1),
        (libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, idle),
        (libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, (idle / 3).max(1)),
        (libc::IPPROTO_TCP, libc::TCP_KEEPCNT, 3),
    ];
    for (level, name, value) in options {
        // SAFETY: setsockopt with an int option on a descriptor we own.
        let rc = unsafe {
            libc::setsockopt(
                fd,
                level,
                name,
                std::ptr::from_ref(&value).cast(),
                std::mem::size_of::<i32>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

impl Stream {
    pub fn set_nodelay(&self) {
        match self {
            Stream::Tcp(s) => {
                let _ = s.set_nodelay(true);
            }
            Stream::Tls(s) => {
                let _ = s.socket.set_nodelay(true);
            }
            Stream::Unix(_) => {}
        }
    }

    /// Whether encrypted bytes wait for the socket (a TLS connection's
    /// records the socket would not take): the connection stays
    /// registered for writable readiness until they leave.
    pub fn pending_output(&self) -> bool {
        match self {
            Stream::Tls(s) => s.tls.borrow().wants_write(),
            _ => false,
        }
    }

    /// Sends what waits (see `pending_output`): Ok once nothing does.
    pub fn send_pending(&self) -> io::Result<()> {
        match self {
            Stream::Tls(s) => send_records(&mut s.tls.borrow_mut(), &s.socket),
            _ => Ok(()),
        }
    }

    /// What a TLS connection's state and buffers hold (0 for others),
    /// counted in its client's memory.
    pub fn transport_memory(&self) -> usize {
        match self {
            Stream::Tls(s) => TLS_STATE_BYTES + s.buffered.get(),
            _ => 0,
        }
    }

    pub fn is_tls(&self) -> bool {
        matches!(self, Stream::Tls(_))
    }

    /// A TLS connection whose handshake is not over.
    pub fn is_handshaking(&self) -> bool {
        match self {
            Stream::Tls(s) => s.tls.borrow().is_handshaking(),
            _ => false,
        }
    }

    /// The TCP socket under it (none for a Unix socket).
    pub fn tcp(&self) -> Option<&TcpStream> {
        match self {
            Stream::Tcp(s) => Some(s),
            Stream::Tls(s) => Some(&s.socket),
            Stream::Unix(_) => None,
        }
    }
}

/// Listens on `addr` with a queue of `backlog` connections, warning as
/// Redis does when the kernel's `somaxconn` caps it lower.
fn bind_tcp(addr: SocketAddr, backlog: u32) -> io::Result<TcpListener> {
    let listener = TcpListener::bind(addr)?;
    set_backlog(listener.as_raw_fd(), backlog)?;
    Ok(listener)
}

/// The TCP listeners for the addresses of `bind` on `port` (0: a free
/// port), and the port they got: at startup, and for CONFIG SET port/bind.
pub fn tcp_listeners(bind: &[String], port: u16, backlog: u32) -> io::Result<(Vec<Listener>, u16)> {
    let (bound, port) = bind_all(bind, port, backlog)?;
    Ok((bound.into_iter().map(Listener::Tcp).collect(), port))
}

/// `tcp_listeners` for `tls-port`: each connection they accept speaks
/// TLS with the configuration `context` holds then.
pub fn tls_listeners(
    bind: &[String],
    port: u16,
    backlog: u32,
    context: &crate::tls::TlsContext,
) -> io::Result<Vec<Listener>> {
    let (bound, _) = bind_all(bind, port, backlog)?;
    Ok(bound
        .into_iter()
        .map(|l| Listener::Tls(l, context.clone()))
        .collect())
}

fn bind_all(bind: &[String], port: u16, backlog: u32) -> io::Result<(Vec<TcpListener>, u16)> {
    let mut listeners = Vec::new();
    let mut port = port;
    for host in bind {
        // As in redis.conf, a leading '-' marks an address that may be
        // unavailable (no IPv6, say): skipped instead of fatal.
        let optional = host.starts_with('-');
        let host = host.trim_start_matches('-');
        let ip: std::net::IpAddr = host.parse().map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bad bind address '{host}'"),
            )
        })?;
        let listener = match bind_tcp(SocketAddr::new(ip, port), backlog) {
            Ok(l) => l,
            Err(e) if optional => {
                tracing::info!("not listening on optional address {host}: {e}");
                continue;
            }
            // Named as Redis names it: which address could not be had.
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!(
                        "Could not create server TCP listening socket {host}:{port}: bind: {e}"
                    ),
                ))
            }
        };
        port = listener.local_addr()?.port();
        listeners.push(listener);
    }
    Ok((listeners, port))
}

/// A blocking connection to a peer (a MIGRATE target): TCP, or TLS with
/// `tls-cluster` (the handshake runs with the first write, bounded by the
/// socket's timeouts).
pub enum KeptStream {
    Tcp(std::net::TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>>),
}

impl Read for KeptStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            KeptStream::Tcp(s) => s.read(buf),
            KeptStream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for KeptStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            KeptStream::Tcp(s) => s.write(buf),
            KeptStream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            KeptStream::Tcp(s) => s.flush(),
            KeptStream::Tls(s) => s.flush(),
        }
    }
}

/// A connection to a MIGRATE target, kept between calls with the
/// database it has selected (Redis keeps them 10 s).
pub struct KeptConn {
    pub stream: KeptStream,
    pub db: Option<i64>,
    last_use: std::time::Instant,
}

impl KeptConn {
    pub fn new(stream: KeptStream) -> KeptConn {
        KeptConn {
            stream,
            db: None,
            last_use: std::time::Instant::now(),
        }
    }
}

/// The kept connections, by `host:port`.
#[derive(Default)]
pub struct KeptConns(std::collections::HashMap<String, KeptConn>);

impl KeptConns {
    /// Redis's `MIGRATE_SOCKET_CACHE_ITEMS` and `_TTL`.
    const MAX: usize = 64;
    const IDLE: std::time::Duration = std::time::Duration::from_secs(10);

    pub fn take(&mut self, target: &str) -> Option<KeptConn> {
        self.0.remove(target)
    }

    /// Keeps a connection (the least recently used goes past 64).
    pub fn put(&mut self, target: String, mut conn: KeptConn) {
        if self.0.len() >= Self::MAX {
            let oldest = self
                .0
                .iter()
                .min_by_key(|(_, c)| c.last_use)
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                self.0.remove(&oldest);
            }
        }
        conn.last_use = std::time::Instant::now();
        self.0.insert(target, conn);
    }

    /// Closes the connections idle for 10 s (from the cron).
    pub fn close_idle(&mut self) {
        self.0.retain(|_, c| c.last_use.elapsed() < Self::IDLE);
    }
}
