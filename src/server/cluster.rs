//! The cluster bus's sockets: the listener on the bus port, a socket for
//! each of the cluster's links, and the cluster's cron and before-sleep
//! work. The cluster state (`crate::cluster`) holds the links as
//! buffers; this file connects, reads, writes and closes them.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::SocketAddr;

use mio::net::TcpStream;
use mio::{Interest, Token};

use crate::net::{Stream, TlsStream};
use tracing::{debug, warn};

use super::Server;
use crate::blocking::Unblock;
use crate::clock::unix_time_ms;
use crate::cluster::{Cluster, Effect, LinkId, ListenPorts};
use crate::net::Listener;
use crate::pause::{PauseKind, PausePurpose};

/// Bus listener `i` uses token `BUS_LISTENER_BASE - i`.
pub(super) const BUS_LISTENER_BASE: usize = usize::MAX - 1024;
/// Bus link `id` uses token `BUS_LINK_BASE + id`.
pub(super) const BUS_LINK_BASE: usize = 1 << 48;
/// The cluster's cron runs this often (Redis's 100 ms).
pub(super) const CRON_PERIOD_MS: i64 = 100;

/// The bus's sockets.
#[derive(Default)]
pub(super) struct Bus {
    pub(super) listeners: Vec<Listener>,
    sockets: HashMap<LinkId, BusSocket>,
    pub(super) last_cron_ms: i64,
}

struct BusSocket {
    /// TCP, or TLS with `tls-cluster`.
    stream: Stream,
    /// An outbound connection not yet known to have succeeded.
    connecting: bool,
    /// When it was opened.
    opened_ms: i64,
}

/// Binds the bus port (`cluster-port`, else the client port + 10000; a
/// free one when both are 0) on the `bind` addresses, and starts the
/// cluster from `nodes.conf`.
pub(super) fn start(
    state: &mut crate::state::ServerState,
    poll: &mio::Poll,
) -> io::Result<Option<Bus>> {
    let cfg = &state.config.cluster;
    if !cfg.enabled {
        return Ok(None);
    }
    // With tls-cluster the TLS port is the one nodes announce, and the
    // bus's is 10000 above it (Redis's deriveAnnouncedPorts).
    let tls = state.config.tls.cluster;
    let port = match tls {
        true => state.config.tls.port,
        false => state.bound_port,
    };
    let wanted = if cfg.port != 0 {
        cfg.port
    } else if port == 0 {
        0
    } else {
        port.checked_add(crate::cluster::PORT_INCR).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "Redis port number too high. Cluster communication port is 10,000 port numbers \
                 higher than your Redis port. Your Redis port number must be 55535 or less.",
            )
        })?
    };
    let (mut listeners, cport) =
        crate::net::tcp_listeners(&state.config.bind, wanted, state.config.tcp_backlog).map_err(
            |e| {
                io::Error::new(
                    e.kind(),
                    format!("Failed listening on port {wanted} (cluster), aborting: {e}"),
                )
            },
        )?;
    for (n, listener) in listeners.iter_mut().enumerate() {
        poll.registry()
            .register(listener, Token(BUS_LISTENER_BASE - n), Interest::READABLE)?;
    }
    let listening = ListenPorts {
        plain: state.bound_port,
        tls: state.config.tls.port,
        bus: cport,
    };
    let cluster = Cluster::start(cfg, &state.config.dir, listening, tls, unix_time_ms())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    state.cluster = Some(cluster);
    for db in &mut state.dbs {
        db.index_slots();
    }
    Ok(Some(Bus {
        listeners,
        sockets: HashMap::new(),
        last_cron_ms: 0,
    }))
}

fn ip_of(addr: io::Result<SocketAddr>) -> String {
    addr.map(|a| a.ip().to_string()).unwrap_or_default()
}

/// Which end of a bus connection this node is: TLS needs to know.
enum Side<'a> {
    Accepted,
    /// Connecting to a peer at this address.
    Opened(&'a str),
}

/// A bus connection's stream: TLS when the bus speaks it (`tls-cluster`),
/// with the configurations `tls` holds now.
fn bus_stream(
    tls: Option<&crate::tls::TlsContext>,
    on: bool,
    socket: TcpStream,
    side: Side,
) -> io::Result<Stream> {
    let context = match (on, tls) {
        (false, _) => return Ok(Stream::Tcp(socket)),
        (true, Some(context)) => context,
        (true, None) => return Err(io::Error::other("tls-cluster without TLS configured")),
    };
    Ok(match side {
        Side::Accepted => TlsStream::stream(socket, context.accept_peer()?),
        Side::Opened(host) => TlsStream::stream(socket, context.connect_peer(host)?),
    })
}

impl Server {
    /// Whether an event's token is the bus's (a listener's or a link's).
    pub(super) fn is_bus_token(&self, t: usize) -> bool {
        self.bus.is_some() && (BUS_LINK_BASE..=BUS_LISTENER_BASE).contains(&t)
    }

    /// A readiness event on the bus.
    pub(super) fn bus_event(&mut self, t: usize, writable: bool) {
        let now = unix_time_ms();
        // The offset a reply (a paused master's, say) carries is today's.
        self.refresh_repl_offset();
        if t <= BUS_LISTENER_BASE && t > BUS_LISTENER_BASE - 64 {
            self.bus_accept(BUS_LISTENER_BASE - t, now);
        } else {
            let link = (t - BUS_LINK_BASE) as LinkId;
            self.bus_link_event(link, writable, now);
        }
        self.sync_bus(now);
    }

    /// Registers a link's socket with the loop and keeps it; false (the
    /// link dropped) if it cannot be registered.
    fn add_socket(
        poll: &mio::Poll,
        sockets: &mut HashMap<LinkId, BusSocket>,
        cluster: &mut Cluster,
        link: LinkId,
        mut stream: Stream,
        connecting: bool,
        now: i64,
    ) -> bool {
        stream.set_nodelay();
        let token = Token(BUS_LINK_BASE + link as usize);
        let interest = Interest::READABLE | Interest::WRITABLE;
        if poll
            .registry()
            .register(&mut stream, token, interest)
            .is_err()
        {
            cluster.free_link(link);
            return false;
        }
        let socket = BusSocket {
            stream,
            connecting,
            opened_ms: now,
        };
        sockets.insert(link, socket);
        true
    }

    fn bus_accept(&mut self, listener: usize, now: i64) {
        let (Some(bus), Some(cluster)) = (self.bus.as_mut(), self.state.cluster.as_mut()) else {
            return;
        };
        let Some(Listener::Tcp(l)) = bus.listeners.get(listener) else {
            return;
        };
        loop {
            match l.accept() {
                Ok((socket, peer)) => {
                    let local = ip_of(socket.local_addr());
                    let tls = cluster.tls();
                    let stream =
                        match bus_stream(self.state.tls.as_ref(), tls, socket, Side::Accepted) {
                            Ok(stream) => stream,
                            Err(e) => {
                                warn!("Error accepting cluster node over TLS: {e}");
                                continue;
                            }
                        };
                    let link = cluster.accepted(now);
                    if Self::add_socket(
                        &self.poll,
                        &mut bus.sockets,
                        cluster,
                        link,
                        stream,
                        false,
                        now,
                    ) {
                        cluster.set_link_addresses(link, peer.ip().to_string(), local);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    fn bus_link_event(&mut self, link: LinkId, writable: bool, now: i64) {
        let (Some(bus), Some(cluster)) = (self.bus.as_mut(), self.state.cluster.as_mut()) else {
            return;
        };
        let Some(socket) = bus.sockets.get_mut(&link) else {
            return;
        };
        if socket.connecting {
            if !writable {
                return;
            }
            let Some(tcp) = socket.stream.tcp() else {
                return;
            };
            // A failed connection reports its error first; one still under
            // way has no peer yet.
            let failed = !matches!(tcp.take_error(), Ok(None));
            match tcp.peer_addr() {
                Ok(peer) if !failed => {
                    socket.connecting = false;
                    let local = ip_of(tcp.local_addr());
                    cluster.set_link_addresses(link, peer.ip().to_string(), local);
                    cluster.connected(link, now);
                }
                Err(e) if !failed && e.kind() == io::ErrorKind::NotConnected => return,
                _ => {
                    debug!("Connection with a cluster node failed");
                    cluster.free_link(link);
                    return;
                }
            }
        } else if writable && socket.stream.send_pending().is_err() {
            // TLS records the socket would not take earlier.
            cluster.free_link(link);
            return;
        }
        let mut buf = [0u8; 16 * 1024];
        loop {
            match (&socket.stream).read(&mut buf) {
                Ok(0) => {
                    cluster.free_link(link);
                    return;
                }
                Ok(n) => {
                    cluster.receive(link, &buf[..n], &self.state.config.cluster, now);
                    if cluster.link(link).is_none() {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => {
                    cluster.free_link(link);
                    return;
                }
            }
        }
    }

    /// Sockets made to match the cluster's links: new links connected,
    /// dropped ones closed, queued output written; then what messages
    /// asked of the server.
    pub(super) fn sync_bus(&mut self, now: i64) {
        let (Some(bus), Some(cluster)) = (self.bus.as_mut(), self.state.cluster.as_mut()) else {
            return;
        };
        for link in std::mem::take(&mut cluster.to_close) {
            if let Some(mut socket) = bus.sockets.remove(&link) {
                let _ = self.poll.registry().deregister(&mut socket.stream);
            }
        }
        for link in std::mem::take(&mut cluster.to_connect) {
            let Some((ip, cport)) = cluster.connect_target(link) else {
                continue;
            };
            let addr = ip.parse().map(|ip| SocketAddr::new(ip, cport));
            let Ok(addr) = addr else {
                cluster.free_link(link);
                continue;
            };
            let stream = TcpStream::connect(addr).and_then(|socket| {
                let side = Side::Opened(&ip);
                bus_stream(self.state.tls.as_ref(), cluster.tls(), socket, side)
            });
            let stream = match stream {
                Ok(stream) => stream,
                Err(e) => {
                    debug!("Unable to connect to Cluster Node [{ip}]:{cport} -> {e}");
                    cluster.connect_failed(link, now);
                    continue;
                }
            };
            Self::add_socket(
                &self.poll,
                &mut bus.sockets,
                cluster,
                link,
                stream,
                true,
                now,
            );
        }
        // Closing above may have dropped more links.
        for link in std::mem::take(&mut cluster.to_close) {
            if let Some(mut socket) = bus.sockets.remove(&link) {
                let _ = self.poll.registry().deregister(&mut socket.stream);
            }
        }
        let mut failed = Vec::new();
        for (link, socket) in bus.sockets.iter() {
            if socket.connecting {
                continue;
            }
            let out = cluster.take_output(*link);
            if out.is_empty() {
                continue;
            }
            let mut written = 0;
            while written < out.len() {
                match (&socket.stream).write(&out[written..]) {
                    Ok(0) => break,
                    Ok(n) => written += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        failed.push(*link);
                        break;
                    }
                }
            }
            cluster.unsent(*link, out[written..].to_vec());
        }
        for link in failed {
            cluster.free_link(link);
            if let Some(mut socket) = bus.sockets.remove(&link) {
                let _ = self.poll.registry().deregister(&mut socket.stream);
            }
        }
        let _ = std::mem::take(&mut cluster.to_close);
        let effects = std::mem::take(&mut cluster.effects);
        if !effects.is_empty() {
            self.apply_cluster_effects(effects, now);
        }
    }

    fn apply_cluster_effects(&mut self, effects: Vec<Effect>, now: i64) {
        for effect in effects {
            match effect {
                Effect::Publish {
                    channel,
                    message,
                    shard,
                } => {
                    self.state.pubsub.publish(&channel, &message, shard);
                }
                Effect::SetPrimary(target) => self.state.set_primary(target),
                Effect::PauseWrites(until) => {
                    self.state
                        .pause_clients(PausePurpose::Failover, PauseKind::Write, until);
                }
                Effect::Unpause => self.state.unpause_clients(PausePurpose::Failover),
                Effect::FlushData => crate::persistence::load::empty_data(&mut self.state),
                Effect::DropSlotKeys(slot) => {
                    let deleted = self.state.delete_keys_in_slot(slot, now);
                    if deleted > 0 {
                        warn!("Deleted {deleted} keys of slot {slot}, now served by another node");
                    }
                }
            }
        }
        self.deliver_messages(None, now);
    }

    /// The cluster's cron (every 100 ms) and its before-sleep work.
    pub(super) fn cluster_cron(&mut self, now: i64) {
        let Some(bus) = self.bus.as_mut() else {
            return;
        };
        if now - bus.last_cron_ms < CRON_PERIOD_MS {
            return;
        }
        bus.last_cron_ms = now;
        // A connection attempt left unanswered for a node timeout is given
        // up; the cluster's cron makes a new one.
        let timeout = self.state.config.cluster.node_timeout.max(1000);
        let stuck: Vec<LinkId> = bus
            .sockets
            .iter()
            .filter(|(_, s)| s.connecting && now - s.opened_ms > timeout)
            .map(|(id, _)| *id)
            .collect();
        if let Some(cluster) = self.state.cluster.as_mut() {
            for link in stuck {
                cluster.free_link(link);
            }
        }
        self.refresh_repl_offset();
        if let Some(cluster) = self.state.cluster.as_mut() {
            cluster.cron(&self.state.config.cluster, now);
        }
        self.sync_bus(now);
        self.redirect_blocked_clients();
    }

    /// Ends, with the redirection Redis sends, the waits of clients
    /// blocked on keys this node no longer serves (their slot moved
    /// away, or the cluster is down): the write that would wake them
    /// will not come here.
    fn redirect_blocked_clients(&mut self) {
        if !self.state.blocking.any() {
            return;
        }
        for (_, conn) in self.conns.iter() {
            let session = &conn.session;
            let Some(blocked) = &session.blocked else {
                continue;
            };
            let Some(key) = blocked.keys.first() else {
                continue;
            };
            let refusal = crate::commands::refusals::blocked_refusal(
                &self.state,
                blocked.cmd,
                key,
                session.readonly,
            );
            if let Some(refusal) = refusal {
                let error = refusal
                    .error(&self.state, session.tls)
                    .message()
                    .into_owned();
                self.state
                    .blocking
                    .request_unblock(session.id, Unblock::Refused(error));
            }
        }
        self.apply_unblock_requests();
    }

    /// What the cluster does before the loop sleeps (Redis's
    /// `clusterBeforeSleep`): state, failover steps, `nodes.conf` saved
    /// before any reply acknowledges what it holds. The messages this
    /// queued leave after the replies (`sync_bus` at the end of the
    /// loop's `before_sleep`), as Redis writes them on the next
    /// iteration: a SETSLOT's client hears OK before the bus hears of it,
    /// so a resharding tool's next SETSLOT usually reaches the old owner
    /// before the new owner's PONG, and the old owner learns the change
    /// once, not from gossip with a synced save.
    pub(super) fn cluster_before_sleep(&mut self) {
        if self.bus.is_none() {
            return;
        }
        let now = unix_time_ms();
        self.refresh_repl_offset();
        if let Some(cluster) = self.state.cluster.as_mut() {
            if let Err(e) = cluster.before_sleep(&self.state.config.cluster, now) {
                warn!("{e}");
            }
        }
    }

    /// What the cluster sees of replication: the offset its messages
    /// carry, whether this node replicates, how old its master's data is.
    fn refresh_repl_offset(&mut self) {
        let repl = &self.state.repl;
        let since = if repl.link == crate::replication::Link::Connected {
            repl.last_io
        } else {
            repl.down_since
        };
        let view = crate::cluster::ReplicaView {
            replicating: repl.master.is_some(),
            data_age_ms: since.elapsed().as_millis() as i64,
            ping_period_ms: self.state.config.repl_ping_replica_period as i64 * 1000,
        };
        let offset = repl.offset.max(0) as u64;
        if let Some(cluster) = self.state.cluster.as_mut() {
            cluster.repl_offset = offset;
            cluster.replica_view = view;
        }
    }
}
