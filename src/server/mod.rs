//! The event loop: listeners, the connection table, the loop iteration
//! (poll, read and execute, before_sleep, cron), signals and clean shutdown.
//!
//! The only place that touches sockets. One thread owns everything; other
//! rooms get plain data (`Session`, `ServerState`) and never see a socket.
//! Rules from mio's examples: readiness is a hint; read and write until
//! `WouldBlock`; one client's I/O error closes that client, never the loop.

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use crate::net::{self, Listener, Stream};
use mio::{Events, Interest, Poll, Token};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook_mio::v1_0::Signals;
use slab::Slab;
use tracing::{debug, info, warn};

mod cluster;
mod output_limit;
mod replication;

use crate::blocking::{OnTimeout, Unblock, Waiter};
use crate::clock::{unix_time_ms, SystemClock};
use crate::config::Config;
use crate::connection::{Session, Sessions};
use crate::expire::{CycleKind, CycleSettings};
use crate::net::PeerSocket;
use crate::persistence::jobs::Pace;
use crate::protocol::Parsed;
use crate::state::ServerState;
use output_limit::enforce_output_limit;

const SIGNAL_TOKEN: Token = Token(usize::MAX - 1);
/// The link to the primary while it connects and syncs (then it becomes a
/// connection like a client's).
const MASTER_TOKEN: Token = Token(usize::MAX - 2);
/// Listener `i` uses token `LISTENER_BASE - i`.
const LISTENER_BASE: usize = usize::MAX - 3;
/// Reads of one client per readiness event before others get a turn.
const READS_PER_EVENT: usize = 16;
/// CPU one loop iteration spends on TLS handshakes (a server's signature
/// is about a millisecond); the handshakes past it wait for the next
/// iteration, after the other clients had their turn.
const HANDSHAKE_BUDGET: Duration = Duration::from_millis(1);
/// What a non-loopback client hears in protected mode (Redis's text).
/// Cron time for moving dict resizes forward, across all databases.
const DICT_REHASH_BUDGET: Duration = Duration::from_millis(1);
/// A subscriber's messages are written at most this often while less than
/// `PUBSUB_COALESCE_BYTES` wait: under a stream of PUBLISHes, one write
/// (and one wake-up of the subscriber) then carries many messages instead
/// of one or two. A message to a subscriber idle for longer goes out at
/// once; under a stream one waits at most this long. Measured with 100
/// subscribers and 50 publishers at -P 1: 0.80 of redis-server's PUBLISH
/// rate without coalescing, 0.93 at 1 ms, 2.0 at 2 ms (benches/effects.rs).
const PUBSUB_COALESCE: Duration = Duration::from_micros(2000);
const PUBSUB_COALESCE_BYTES: usize = 64 * 1024;
/// How soon the loop looks again at a background save waiting for its
/// writer thread (or slowed by `rdb-key-save-delay`).
const SAVE_WAIT_POLL: Duration = Duration::from_millis(1);
/// How long shutdown keeps trying to deliver queued replies.
const SHUTDOWN_FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// One client: its socket plus its `Session`.
struct Connection {
    socket: Stream,
    /// Boxed: taken out while its requests run (see `Server::take_session`)
    /// by swapping a pointer, not copying the whole session twice.
    session: Box<Session>,
    /// Registered for writable readiness (only while output is left over).
    wants_write: bool,
    /// Already in `pending_writes`.
    queued: bool,
    /// Already in `read_again`.
    read_again: bool,
    /// When its output was last written (subscribers' writes are
    /// coalesced, see `PUBSUB_COALESCE`).
    last_flush: Instant,
}

impl Connection {
    /// Puts this connection (at `token`) on the list flushed before the
    /// loop sleeps, once.
    fn queue_write(&mut self, token: usize, pending: &mut Vec<usize>) {
        if !self.queued {
            self.queued = true;
            pending.push(token);
        }
    }
}

/// The other clients, as a command being executed sees them: the
/// connection table, and the listeners where new ones wait.
struct Peers<'a> {
    conns: &'a Slab<Connection>,
    listeners: &'a [Listener],
}

impl<'a> Peers<'a> {
    fn of(conns: &'a Slab<Connection>, listeners: &'a [Listener]) -> Peers<'a> {
        Peers { conns, listeners }
    }
}

impl Sessions for Peers<'_> {
    fn for_each_session(&self, f: &mut dyn FnMut(&Session)) {
        for (_, conn) in self.conns.iter() {
            // The session being executed is taken out; its place reads id 0.
            if conn.session.id != 0 {
                f(&conn.session);
            }
        }
    }

    fn for_each_socket(&self, f: &mut dyn FnMut(usize, &Session, &dyn PeerSocket)) {
        for (token, conn) in self.conns.iter() {
            if conn.session.id != 0 {
                f(token, &conn.session, &conn.socket);
            }
        }
    }

    fn accept_waiting(&self, f: &mut dyn FnMut(Stream, net::Peer)) {
        for listener in self.listeners {
            loop {
                match listener.accept() {
                    Ok((socket, peer)) => f(socket, peer),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    // WouldBlock, or out of descriptors: the loop accepts
                    // the rest when it runs again (their readiness is
                    // still to be reported).
                    Err(_) => break,
                }
            }
        }
    }
}

pub struct Server {
    poll: Poll,
    listeners: Vec<Listener>,
    conns: Slab<Connection>,
    state: ServerState,
    signals: Signals,
    /// Connections with queued output or a pending close, flushed in before_sleep.
    pending_writes: Vec<usize>,
    /// Empty sessions that stand in a connection's place while its own
    /// is taken out (id 0: no client), kept for the next time: one, or two
    /// while a retried waiter runs inside another client's request.
    /// Boxed: a placeholder trades places with a connection's own box.
    #[allow(clippy::vec_box)]
    placeholders: Vec<Box<Session>>,
    /// An accept failed (out of descriptors): the cron tries again.
    accept_retry: bool,
    /// Connections paused after wrong passwords (`Session::paused_until_ms`):
    /// the cron resumes them when their time comes.
    paused: Vec<usize>,
    /// Connections whose input was not drained (fairness cap); read next iteration.
    read_again: Vec<usize>,
    /// Time spent this iteration on TLS handshakes (`HANDSHAKE_BUDGET`).
    handshake_spent: Duration,
    /// Clients just unblocked whose pipelined input waits to be executed.
    resume: Vec<usize>,
    next_client_id: u64,
    clock: SystemClock,
    next_cron: Instant,
    /// A replica's link to its primary while connecting and syncing.
    master_link: Option<replication::MasterLink>,
    /// The primary's connection once it streams commands (its token), and
    /// the REPLICAOF it was made for.
    master_conn: Option<(usize, u64)>,
    /// When a replica may next try to connect, and when it last acked.
    next_master_connect: Instant,
    last_ack: Instant,
    /// The last `Replication::epoch` seen.
    master_epoch_seen: u64,
    /// When a primary last pinged its replicas, and sent waiting ones a
    /// newline.
    last_replica_ping: Instant,
    last_newline: Instant,
    /// Over `maxmemory` with more to evict than one slice allowed: the
    /// loop evicts again before it sleeps, and does not sleep long
    /// (Redis's `evictionTimeProc`).
    evicting: bool,
    /// The cluster bus's sockets, in cluster mode.
    bus: Option<cluster::Bus>,
}

/// The session a delivery is for: the running client when it is `current`
/// (taken out of the table while it runs), else its connection, queued for
/// a write. None if it left, or its slot now holds a newer client, or it
/// is closing.
fn recipient<'a>(
    current: &'a mut Option<(usize, &mut Session)>,
    conns: &'a mut Slab<Connection>,
    pending_writes: &mut Vec<usize>,
    to: crate::pubsub::Subscriber,
) -> Option<&'a mut Session> {
    let session = match current {
        Some((token, session)) if *token == to.token => &mut **session,
        _ => {
            let conn = conns.get_mut(to.token)?;
            conn.queue_write(to.token, pending_writes);
            &mut conn.session
        }
    };
    (session.id == to.client && !session.close_after_reply).then_some(session)
}

/// Refuses a `databases` count whose empty databases alone would not fit
/// in the memory the machine has (Redis, like lapse, allows up to
/// 2^31 - 1, then aborts allocating them): a clear error instead.
fn check_databases_fit(databases: usize) -> io::Result<()> {
    /// The struct and its first allocations (empty tables), in bytes.
    const EMPTY_DB_BYTES: usize = std::mem::size_of::<crate::db::Db>() + 128;
    let need = databases.saturating_mul(EMPTY_DB_BYTES) as u64;
    match crate::memory::available_memory() {
        Some(available) if need > available => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "databases {databases} would take {need} bytes before any key is stored, \
                 more than the {available} bytes this machine has available"
            ),
        )),
        _ => Ok(()),
    }
}

impl Server {
    /// Binds every address of `config.bind` on `config.port` (0 = a free port).
    pub fn bind(mut config: Config) -> io::Result<Self> {
        check_databases_fit(config.databases)?;
        crate::lazyfree::tune_allocator();
        config.maxclients = crate::fdlimit::fit_maxclients(config.maxclients);
        let poll = Poll::new()?;
        // `port 0` with a TLS port: no plain text (Redis's meaning); without
        // one, a free port (tests' and tools' convenience).
        let plain = config.port != 0 || config.tls.port == 0;
        let (mut listeners, port) = match plain {
            true => net::tcp_listeners(&config.bind, config.port, config.tcp_backlog)?,
            false => (Vec::new(), 0),
        };
        let tls = match config.tls.in_use() {
            false => None,
            true => Some(
                crate::tls::configs(&config.tls)
                    .map(crate::tls::TlsContext::new)
                    .map_err(|e| {
                        io::Error::new(
                            io::ErrorKind::InvalidInput,
                            format!("Failed to configure TLS. Check logs for more info. ({e})"),
                        )
                    })?,
            ),
        };
        if let (Some(context), tls_port @ 1..) = (&tls, config.tls.port) {
            let backlog = config.tcp_backlog;
            listeners.extend(net::tls_listeners(
                &config.bind,
                tls_port,
                backlog,
                context,
            )?);
        }
        if !config.unixsocket.is_empty() {
            let path = std::path::Path::new(&config.unixsocket);
            let listener = Listener::unix(path, config.unixsocketperm, config.tcp_backlog)
                .map_err(|e| {
                    io::Error::new(e.kind(), format!("Failed opening Unix socket: {e}"))
                })?;
            listeners.push(listener);
        }
        for (n, listener) in listeners.iter_mut().enumerate() {
            poll.registry()
                .register(listener, Token(LISTENER_BASE - n), Interest::READABLE)?;
            info!("listening on {}", listener.describe());
        }
        let mut signals = Signals::new([SIGINT, SIGTERM])?;
        poll.registry()
            .register(&mut signals, SIGNAL_TOKEN, Interest::READABLE)?;
        let users = crate::acl::users_at_startup(&config)?;
        let mut state = ServerState::new(config);
        if let Some(users) = users {
            state.acl.replace_users(users);
        }
        state.bound_port = port;
        state.tls = tls;
        let bus = cluster::start(&mut state, &poll)?;
        info!("Server initialized");
        // With the AOF on, it alone holds the data (as in Redis).
        if state.config.appendonly {
            crate::persistence::aof_load::load_at_startup(
                &mut state,
                unix_time_ms(),
                crate::dispatch::replay,
            )?;
        } else {
            crate::persistence::load::load_at_startup(&mut state, unix_time_ms())?;
        }
        Ok(Self {
            poll,
            listeners,
            conns: Slab::new(),
            state,
            signals,
            pending_writes: Vec::new(),
            placeholders: Vec::new(),
            accept_retry: false,
            paused: Vec::new(),
            read_again: Vec::new(),
            handshake_spent: Duration::ZERO,
            resume: Vec::new(),
            next_client_id: 1,
            clock: SystemClock::default(),
            next_cron: Instant::now(),
            master_link: None,
            master_conn: None,
            next_master_connect: Instant::now(),
            last_ack: Instant::now(),
            master_epoch_seen: 0,
            last_replica_ping: Instant::now(),
            last_newline: Instant::now(),
            evicting: false,
            bus,
        })
    }

    pub fn port(&self) -> u16 {
        self.state.bound_port
    }

    /// Runs until SIGINT/SIGTERM or SHUTDOWN; errors only if the poll fails.
    pub fn run(mut self) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        // Redis 7.2's words (7.0 ends after "connections"): tools match
        // either with "Ready to accept connections".
        info!("Ready to accept connections tcp");
        while !self.state.shutdown_requested {
            self.before_sleep();
            // A slice of a background save, if one is under way.
            let save_pace = crate::persistence::save::tick(&mut self.state);
            let timeout = if !self.read_again.is_empty()
                || !self.resume.is_empty()
                || self.evicting
                || save_pace == Pace::Busy
            {
                Duration::ZERO
            } else if save_pace == Pace::Waiting {
                self.sleep_budget().min(SAVE_WAIT_POLL)
            } else if !self.pending_writes.is_empty() {
                // Subscribers' coalesced output is due soon.
                self.sleep_budget().min(PUBSUB_COALESCE)
            } else {
                self.sleep_budget()
            };
            match self.poll.poll(&mut events, Some(timeout)) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            self.handshake_spent = Duration::ZERO;
            for token in std::mem::take(&mut self.read_again) {
                if let Some(conn) = self.conns.get_mut(token) {
                    conn.read_again = false;
                }
                self.handle_readable(token, false);
            }
            for event in events.iter() {
                match event.token() {
                    SIGNAL_TOKEN => self.handle_signals(),
                    MASTER_TOKEN => self.master_link_event(event.is_writable()),
                    // A refused connection may come as an error alone.
                    Token(t) if self.is_bus_token(t) => self.bus_event(
                        t,
                        event.is_writable() || event.is_error() || event.is_write_closed(),
                    ),
                    Token(t) if t > LISTENER_BASE - self.listeners.len() && t <= LISTENER_BASE => {
                        self.accept_all(LISTENER_BASE - t)
                    }
                    Token(t) => {
                        if event.is_readable() || event.is_read_closed() || event.is_error() {
                            // If the peer's FIN came with this event, read on
                            // to the EOF: no later edge will announce it.
                            let eof_pending = event.is_read_closed() || event.is_error();
                            self.handle_readable(t, !eof_pending);
                        }
                        // A hang-up is also a reason to try the write: it
                        // fails and closes a client that was only waiting
                        // for its last replies to drain.
                        if event.is_writable() || event.is_write_closed() || event.is_error() {
                            self.flush(t);
                        }
                    }
                }
            }
            for token in std::mem::take(&mut self.resume) {
                self.process_input(token);
            }
            if Instant::now() >= self.next_cron {
                self.server_cron();
            }
        }
        self.shutdown();
        Ok(())
    }

    /// SIGTERM/SIGINT: save first if save points are set (as Redis's
    /// `prepareForShutdown`); if that fails, keep serving, as Redis does.
    fn handle_signals(&mut self) {
        let signals: Vec<i32> = self.signals.pending().collect();
        for signal in signals {
            let name = if signal == SIGINT {
                "SIGINT"
            } else {
                "SIGTERM"
            };
            warn!("Received {name} scheduling shutdown...");
            match crate::persistence::shutdown::save_for_shutdown(
                &mut self.state,
                None,
                false,
                unix_time_ms(),
            ) {
                Ok(()) => self.state.shutdown_requested = true,
                Err(e) => warn!("Error trying to save the DB, can't exit: {e}"),
            }
        }
    }

    fn accept_all(&mut self, listener: usize) {
        loop {
            let (socket, peer) = match self.listeners[listener].accept() {
                Ok(pair) => pair,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Out of descriptors and the like. Readiness is edge
                    // triggered: no new event may come for the connections
                    // still queued, so the cron accepts again.
                    if !self.accept_retry {
                        warn!("accept failed: {e}; retrying from the cron");
                    }
                    self.accept_retry = true;
                    self.state.stats.rejected_connections += 1;
                    return;
                }
            };
            if self.state.welcome(&socket, &peer) {
                self.admit(socket, peer);
            }
        }
    }

    /// Gives a client `welcome` counted in its place in the connection
    /// table (and the poll): its token, or `None` when it could not be
    /// registered (then it is closed).
    fn admit(&mut self, mut socket: Stream, peer: net::Peer) -> Option<usize> {
        let entry = self.conns.vacant_entry();
        let token = Token(entry.key());
        if let Err(e) = self
            .poll
            .registry()
            .register(&mut socket, token, Interest::READABLE)
        {
            warn!("cannot register client {}: {e}", peer.addr);
            self.state.connected_clients -= 1;
            return None;
        }
        let mut session = Session::new(
            self.next_client_id,
            peer.addr,
            peer.laddr,
            socket.as_raw_fd(),
            unix_time_ms(),
        );
        session.unix_socket = peer.unix;
        session.tls = socket.is_tls();
        session.transport_memory = socket.transport_memory();
        session.authenticated = self.state.acl.default_is_open();
        session.token = token.0;
        self.next_client_id += 1;
        entry.insert(Connection {
            socket,
            session: Box::new(session),
            wants_write: false,
            queued: false,
            read_again: false,
            last_flush: Instant::now(),
        });
        debug!("accepted client {}", self.next_client_id - 1);
        Some(token.0)
    }

    /// Reads what the client sent and executes every complete request.
    /// `short_read_drains`: a read shorter than the buffer means the socket
    /// is drained for now (true for a plain readable edge; false when the
    /// event also carried the peer's EOF, which must still be read).
    fn handle_readable(&mut self, token: usize, short_read_drains: bool) {
        for _ in 0..READS_PER_EVENT {
            let Some(conn) = self.conns.get_mut(token) else {
                return;
            };
            if conn.session.close_after_reply {
                return;
            }
            // A handshake past this iteration's budget waits its turn
            // (its readiness is not lost: it is read again next time).
            let handshaking = conn.socket.is_handshaking().then(Instant::now);
            if handshaking.is_some() && self.handshake_spent >= HANDSHAKE_BUDGET {
                return self.read_later(token);
            }
            let spare = conn.session.query.spare();
            let room = spare.len();
            let result = (&conn.socket).read(spare);
            if let Some(started) = handshaking {
                self.handshake_spent += started.elapsed();
            }
            if conn.session.transport_memory > 0 {
                conn.session.transport_memory = conn.socket.transport_memory();
            }
            match result {
                Ok(0) => {
                    // The peer finished sending; it may still read what we
                    // queued (`nc` half-closes), so close after the flush.
                    conn.session.close_after_reply = true;
                    conn.queue_write(token, &mut self.pending_writes);
                    return;
                }
                Ok(n) => {
                    conn.session.query.commit(n);
                    self.state.stats.read_bytes(n, conn.session.master);
                    self.process_input(token);
                    // A short read drained the socket: on Linux a later
                    // arrival raises a new edge, so skip the read that would
                    // only say WouldBlock (one syscall less per request).
                    if short_read_drains && n < room {
                        return self.queue_tls_records(token);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return self.queue_tls_records(token)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    debug!("read error on client: {e}");
                    return self.close(token);
                }
            }
        }
        // Still more to read: come back after others had their turn.
        self.read_later(token);
    }

    /// Reads the client at `token` again on the next iteration, once.
    fn read_later(&mut self, token: usize) {
        if let Some(conn) = self.conns.get_mut(token) {
            if !std::mem::replace(&mut conn.read_again, true) {
                self.read_again.push(token);
            }
        }
    }

    /// A TLS connection whose handshake records the socket would not take
    /// yet is flushed (and so watched for writable readiness).
    fn queue_tls_records(&mut self, token: usize) {
        if let Some(conn) = self.conns.get_mut(token) {
            if conn.socket.pending_output() {
                conn.queue_write(token, &mut self.pending_writes);
            }
        }
    }

    /// Parses and executes every complete request in the query buffer.
    fn process_input(&mut self, token: usize) {
        let Some(mut session) = self.take_session(token) else {
            return;
        };
        let query = std::mem::take(&mut session.query);
        let mut parser = std::mem::take(&mut session.parser);
        parser.set_max_bulk_len(self.state.config.proto_max_bulk_len);
        // One clock reading per batch of requests read together.
        let now_ms = unix_time_ms();
        session.command_tick = crate::clock::ticks();
        let mut offset = 0;
        // A blocked client's further requests wait until it is unblocked.
        while !session.close_after_reply
            && !self.state.shutdown_requested
            && session.blocked.is_none()
            && !session.postponed
            && session.paused_until_ms <= now_ms
        {
            // Per request: an AUTH earlier in the batch lifts the limits.
            parser.set_unauthenticated(!session.authenticated);
            match parser.parse(&query.data()[offset..]) {
                Ok(Parsed::Incomplete) => break,
                Ok(Parsed::Complete { consumed }) => {
                    let args = parser.args(&query.data()[offset..]);
                    if !args.is_empty() {
                        // The primary's stream: nothing expires under it,
                        // and only REPLCONF GETACK answers.
                        let (master, replied_before) = (session.master, session.reply.buf.len());
                        if master {
                            self.state.freeze_expiry(true);
                        }
                        let peers = Peers::of(&self.conns, &self.listeners);
                        let mut ctx =
                            crate::dispatch::context(now_ms, &mut session, &mut self.state, &peers);
                        crate::dispatch::execute(&mut ctx, args);
                        if session.postponed {
                            // Kept whole for when the pause ends.
                            break;
                        }
                        if master {
                            self.state.freeze_expiry(false);
                            // A command of the primary failed here.
                            if session.reply.buf[replied_before..].starts_with(b"-") {
                                self.state.stats.unexpected_error_replies += 1;
                            }
                            if !args[0].eq_ignore_ascii_case(b"replconf") {
                                session.reply.buf.truncate(replied_before);
                            }
                            self.state.repl.offset += consumed as i64;
                            self.state.repl.last_io = Instant::now();
                        }
                        if self.state.busy.has_leftovers() {
                            self.take_back_busy_clients();
                        }
                        if self.state.new_listeners.is_some()
                            || self.state.new_tls_listeners.is_some()
                        {
                            self.switch_listeners();
                        }
                    } else if session.master {
                        self.state.repl.offset += consumed as i64;
                    }
                    offset += consumed;
                    if self.state.blocking.has_ready() {
                        // Against the time now, as Redis updates its
                        // cached time first: a key that expired while the
                        // command ran (DEBUG SLEEP in a MULTI) serves no one.
                        self.serve_ready_keys(unix_time_ms(), token);
                    }
                    self.apply_unblock_requests();
                    if self.state.has_deliveries() {
                        self.deliver_messages(Some((token, &mut session)), now_ms);
                    }
                    enforce_output_limit(
                        &self.state.config,
                        &mut self.state.stats,
                        &mut session,
                        now_ms,
                    );
                }
                Err(e) => {
                    session
                        .reply
                        .error(format!("ERR Protocol error: {}", e.message()).as_bytes());
                    session.close_after_reply = true;
                    debug!("protocol error from {}: {}", session.addr, e.message());
                }
            }
        }
        // Outside the batch the next command's start is read afresh.
        session.command_tick = 0;
        session.query = query;
        session.query.consume(offset);
        session.parser = parser;
        let over_limit = session.query.len() as u64 > self.state.config.client_query_buffer_limit;
        self.return_session(token, session);
        let Some(conn) = self.conns.get_mut(token) else {
            return;
        };
        // Slowed after wrong passwords: the rest waits for the cron.
        if conn.session.paused_until_ms > now_ms && !self.paused.contains(&token) {
            self.paused.push(token);
        }
        if conn.session.postponed {
            self.state.pause.hold(token);
        }
        if over_limit {
            warn!(
                "closing client {}: query buffer limit reached",
                conn.session.addr
            );
            self.state.stats.client_query_buffer_limit_disconnections += 1;
            return self.close(token);
        }
        if conn.session.reply.pending() > 0 || conn.session.close_after_reply {
            conn.queue_write(token, &mut self.pending_writes);
        }
    }

    /// `maxmemory-clients`: while all clients' buffers together (`total`)
    /// hold more than the limit, disconnects the biggest first (never one
    /// marked CLIENT NO-EVICT), as Redis 7.0 does; records the total for
    /// INFO.
    fn evict_clients(&mut self, mut total: usize) {
        self.state.stats.mem_clients_normal = total as u64;
        let config = &self.state.config;
        let limit = config.maxmemory_clients.bytes(config.maxmemory) as usize;
        if limit == 0 || total <= limit {
            return;
        }
        let mut biggest: Vec<(usize, usize)> = self
            .conns
            .iter()
            .filter(|(_, c)| {
                // Replication links are not clients to evict (as in Redis).
                !c.session.no_evict && !c.session.master && c.session.replica.is_none()
            })
            .map(|(token, c)| (c.session.memory(), token))
            .collect();
        biggest.sort_unstable_by(|a, b| b.cmp(a));
        for (memory, token) in biggest {
            if total <= limit {
                break;
            }
            if let Some(conn) = self.conns.get(token) {
                warn!("Evicting client: {} (maxmemory-clients)", conn.session.addr);
            }
            total -= memory;
            self.state.stats.evicted_clients += 1;
            self.close(token);
        }
        self.state.stats.mem_clients_normal = total as u64;
    }

    /// Resumes the paused connections whose time has come (their buffered
    /// requests run; gone ones are forgotten).
    fn resume_paused(&mut self, now_ms: i64) {
        let conns = &self.conns;
        let resume = &mut self.resume;
        self.paused.retain(|&token| match conns.get(token) {
            Some(conn) if conn.session.paused_until_ms > now_ms => true,
            Some(_) => {
                resume.push(token);
                false
            }
            None => false,
        });
    }

    /// Listens on the listeners CONFIG SET port/bind (TCP) or tls-port
    /// (TLS) made (see `ServerState::new_listeners`) instead of the old
    /// ones of that kind, which close; the others and a Unix socket stay.
    /// Connected clients stay connected.
    fn switch_listeners(&mut self) {
        let tcp = self.state.new_listeners.take();
        let tls = self.state.new_tls_listeners.take();
        if tcp.is_none() && tls.is_none() {
            return;
        }
        let registry = self.poll.registry();
        for listener in &mut self.listeners {
            let _ = registry.deregister(listener);
        }
        let (keep_tcp, keep_tls) = (tcp.is_none(), tls.is_none());
        let kept: Vec<Listener> = std::mem::take(&mut self.listeners)
            .into_iter()
            .filter(|l| match l {
                Listener::Tcp(_) => keep_tcp,
                Listener::Tls(..) => keep_tls,
                Listener::Unix(..) => true,
            })
            .collect();
        let port = tcp.as_ref().map(|(_, port)| *port);
        let fresh_tcp = tcp.map(|(listeners, _)| listeners).unwrap_or_default();
        self.listeners = fresh_tcp
            .into_iter()
            .chain(tls.unwrap_or_default())
            .chain(kept)
            .collect();
        for (n, listener) in self.listeners.iter_mut().enumerate() {
            if let Err(e) =
                registry.register(listener, Token(LISTENER_BASE - n), Interest::READABLE)
            {
                warn!("cannot listen on {}: {e}", listener.describe());
            } else {
                info!("listening on {}", listener.describe());
            }
        }
        if let Some(port) = port {
            self.state.bound_port = port;
        }
    }

    /// Hands back the clients served while a script was busy: answers not
    /// yet sent, and requests that wait to run now (see `busy`).
    fn take_back_busy_clients(&mut self) {
        let (served, arrivals) = self.state.busy.finish();
        let arrived = arrivals.into_iter().filter_map(|arrival| {
            let token = self.admit(arrival.socket, arrival.peer)?;
            Some((token, arrival.left))
        });
        let arrived: Vec<_> = arrived.collect();
        for (token, left) in served.into_iter().chain(arrived) {
            let Some(conn) = self.conns.get_mut(token) else {
                continue;
            };
            conn.session.reply.sent += left.sent;
            conn.session.reply.buf.extend_from_slice(&left.output);
            let change = left.transaction;
            if change.discarded {
                conn.session.multi = None;
                self.state.unwatch_all(conn.session.id);
            }
            if change.open {
                let transaction = conn.session.multi.get_or_insert_with(Default::default);
                transaction.aborted |= change.doomed;
            }
            if left.close {
                conn.session.close_after_reply = true;
            } else if !left.input.is_empty() {
                conn.session.query.extend(&left.input);
                self.resume.push(token);
            }
            if conn.session.reply.pending() > 0 || conn.session.close_after_reply {
                conn.queue_write(token, &mut self.pending_writes);
            }
        }
    }

    /// Serves the clients blocked on keys that changed, each in the order
    /// it blocked, by running its command again as if it had just arrived
    /// (Redis's `handleClientsBlockedOnKeys`). A waiter that still finds
    /// nothing ends the round for that key: the ones behind it would too.
    /// `current` is the client whose command made the keys ready.
    fn serve_ready_keys(&mut self, now_ms: i64, current: usize) {
        while let Some(waiters) = self.state.blocking.next_ready() {
            for waiter in waiters {
                if waiter.token == current {
                    continue;
                }
                match self.retry_blocked(waiter, now_ms) {
                    Some(true) => self.resume.push(waiter.token),
                    Some(false) => break,
                    None => {}
                }
            }
        }
    }

    /// Runs a blocked client's command again: `Some(true)` if it was served
    /// (its reply is queued), `Some(false)` if it still waits, `None` if
    /// that client is gone.
    fn retry_blocked(&mut self, waiter: Waiter, now_ms: i64) -> Option<bool> {
        let conn = self.conns.get_mut(waiter.token)?;
        if conn.session.id != waiter.client {
            return None;
        }
        let blocked = conn.session.blocked.take()?;
        let mut session = self.take_session(waiter.token)?;
        let peers = Peers::of(&self.conns, &self.listeners);
        let mut ctx = crate::dispatch::context(now_ms, &mut session, &mut self.state, &peers);
        crate::dispatch::retry(&mut ctx, blocked.cmd, blocked.args.as_args());
        let waiting = std::mem::take(&mut session.still_waiting);
        if waiting {
            session.blocked = Some(blocked);
        } else {
            self.state.blocking.unblock(waiter.client);
        }
        enforce_output_limit(
            &self.state.config,
            &mut self.state.stats,
            &mut session,
            now_ms,
        );
        self.put_back(waiter.token, session);
        Some(!waiting)
    }

    /// Returns a session taken out of its connection and queues its output.
    fn put_back(&mut self, token: usize, session: Box<Session>) {
        self.return_session(token, session);
        if let Some(conn) = self.conns.get_mut(token) {
            conn.queue_write(token, &mut self.pending_writes);
        }
    }

    /// Takes the session of the connection at `token` out of the table,
    /// so that a command can run with it beside the other connections
    /// (`Peers`); a placeholder of id 0 stands in its place meanwhile.
    fn take_session(&mut self, token: usize) -> Option<Box<Session>> {
        let conn = self.conns.get_mut(token)?;
        let placeholder = self.placeholders.pop().unwrap_or_default();
        Some(std::mem::replace(&mut conn.session, placeholder))
    }

    /// Puts a session taken out back in its connection (dropped if the
    /// connection went meanwhile), keeping the placeholder for next time.
    fn return_session(&mut self, token: usize, session: Box<Session>) {
        let Some(conn) = self.conns.get_mut(token) else {
            return;
        };
        let placeholder = std::mem::replace(&mut conn.session, session);
        // Nothing reaches a placeholder (deliveries check the client id).
        debug_assert!(placeholder.id == 0 && placeholder.reply.buf.is_empty());
        if placeholder.id == 0 {
            self.placeholders.push(placeholder);
        }
    }

    /// Ends the waits that timed out and those CLIENT UNBLOCK asked to end;
    /// retries the waiters of leases that lapsed (one of them takes the
    /// lease over).
    fn end_waits(&mut self, now_ms: i64) {
        for (db, key) in self.state.leases.take_lapsed(now_ms) {
            self.state.blocking.key_changed(db, &key);
        }
        if self.state.blocking.has_ready() {
            self.serve_ready_keys(now_ms, usize::MAX);
        }
        for waiter in self.state.blocking.take_timed_out(now_ms) {
            self.finish_wait(waiter, Unblock::Timeout);
        }
        self.apply_unblock_requests();
    }

    /// Ends the waits CLIENT UNBLOCK (or a timeout found while another
    /// client ran) asked to end; after nearly every request there is none,
    /// and this inlines to that one check.
    #[inline]
    fn apply_unblock_requests(&mut self) {
        if self.state.blocking.has_unblock_requests() {
            self.apply_unblock_requests_now();
        }
    }

    #[inline(never)]
    fn apply_unblock_requests_now(&mut self) {
        for (waiter, how) in self.state.blocking.take_unblock_requests() {
            self.state.blocking.unblock(waiter.client);
            self.finish_wait(waiter, how);
        }
    }

    /// Answers a client whose wait ended without data: a null array (as a
    /// timeout), or CLIENT UNBLOCK's error; then its queued requests run.
    fn finish_wait(&mut self, waiter: Waiter, how: Unblock) {
        let Some(conn) = self.conns.get_mut(waiter.token) else {
            return;
        };
        let session = &mut conn.session;
        if session.id != waiter.client {
            return;
        }
        let Some(blocked) = session.blocked.take() else {
            return;
        };
        match how {
            Unblock::Timeout => match blocked.on_timeout {
                OnTimeout::NullArray => session.reply.null_array(),
                OnTimeout::LeaseBusy => crate::commands::lease::wait_timed_out(
                    &mut session.reply,
                    &mut self.state.leases,
                ),
            },
            Unblock::Error => session
                .reply
                .error(b"UNBLOCKED client unblocked via CLIENT UNBLOCK"),
            Unblock::StateChanged => {
                session.reply.error(
                    b"UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)",
                );
                session.close_after_reply = true;
            }
            Unblock::Refused(error) => session.reply.error(&error),
        }
        conn.queue_write(waiter.token, &mut self.pending_writes);
        self.resume.push(waiter.token);
    }

    /// Writes queued pub/sub messages (and keyspace notifications) into
    /// their subscribers' output buffers, the running client's included
    /// when it is `current` (taken out of the table while it runs).
    fn deliver_messages(&mut self, mut current: Option<(usize, &mut Session)>, now_ms: i64) {
        let config = &self.state.config;
        let stats = &mut self.state.stats;
        let (conns, pending_writes) = (&mut self.conns, &mut self.pending_writes);
        for delivery in self.state.pubsub.take_outbox() {
            let Some(session) = recipient(&mut current, conns, pending_writes, delivery.to) else {
                continue;
            };
            delivery.encode(&mut session.reply);
            enforce_output_limit(config, stats, session, now_ms);
        }
        for invalidation in self.state.tracking.take_outbox() {
            // A flush's null is in the tracking client's own protocol.
            let Some(own) = recipient(&mut current, conns, pending_writes, invalidation.to) else {
                continue;
            };
            let own_resp3 = own.reply.resp3;
            let target = match invalidation.redirect {
                None => Some(own),
                Some(to) => recipient(&mut current, conns, pending_writes, to),
            };
            match target {
                Some(target) => {
                    let redirected = invalidation.redirect.is_some();
                    let subscribed = target.is_subscribed();
                    crate::tracking::encode(
                        &invalidation,
                        own_resp3,
                        redirected,
                        subscribed,
                        &mut target.reply,
                    );
                    enforce_output_limit(config, stats, target, now_ms);
                }
                None => {
                    // Redirected to a client that left: the tracking
                    // client is told (in RESP3), and flagged.
                    let gone = invalidation.redirect.map_or(0, |r| r.client);
                    if let Some(t) = self.state.tracking.tracker_mut(invalidation.to.client) {
                        t.broken_redirect = true;
                    }
                    if let Some(own) =
                        recipient(&mut current, conns, pending_writes, invalidation.to)
                    {
                        if own.reply.resp3 {
                            own.reply.push(2);
                            own.reply.bulk(b"tracking-redir-broken");
                            own.reply.int(gone as i64);
                        }
                    }
                }
            }
        }
        // MONITOR's lines, the same bytes for every watcher.
        let (lines, watchers) = self.state.monitors.take();
        if lines.is_empty() {
            return;
        }
        for &to in watchers {
            let Some(session) = recipient(&mut current, conns, pending_writes, to) else {
                continue;
            };
            session.reply.buf.extend_from_slice(&lines);
            enforce_output_limit(config, stats, session, now_ms);
        }
    }

    /// Evicts while over `maxmemory` though no command asks (a limit
    /// lowered, a slice that ran out of time), a slice per iteration.
    /// A replica leaves its keys to its primary.
    fn evict_between_commands(&mut self) {
        if self.state.repl.is_replica() {
            self.evicting = false;
            return;
        }
        let not_counted =
            crate::evict::not_counted(&self.state, &Peers::of(&self.conns, &self.listeners));
        let outcome = crate::evict::perform_evictions(&mut self.state, not_counted, unix_time_ms());
        self.evicting = outcome == crate::evict::Outcome::Running;
        if self.state.has_deliveries() {
            self.deliver_messages(None, unix_time_ms());
        }
    }

    /// Closes the clients CLIENT KILL named (the link to the primary
    /// among them: it is made again, as in Redis).
    fn kill_clients(&mut self) {
        let ids = std::mem::take(&mut self.state.kill_requests);
        let tokens: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, c)| ids.contains(&c.session.id))
            .map(|(token, _)| token)
            .collect();
        for token in tokens {
            self.close(token);
        }
    }

    /// Work done before each poll: a fast expire cycle, then one write per
    /// client with queued output.
    /// The pause ended (its time, or CLIENT UNPAUSE): the clients it held
    /// run their requests now, in the order they were held.
    /// Reads the held clients' requests again once the pause ends or
    /// becomes less restrictive (those that must still wait are held
    /// again).
    fn resume_postponed(&mut self) {
        let on = self.state.check_pause(unix_time_ms());
        if !self.state.pause.take_relaxed() && on {
            return;
        }
        for token in self.state.pause.take_held() {
            if let Some(conn) = self.conns.get_mut(token) {
                conn.session.postponed = false;
                self.resume.push(token);
            }
        }
    }

    fn before_sleep(&mut self) {
        if self.state.pause.is_on() || self.state.pause.held_count() > 0 {
            self.resume_postponed();
        }
        if self.master_epoch_seen != self.state.repl.epoch {
            self.replication_cron();
        }
        if !self.state.kill_requests.is_empty() {
            self.kill_clients();
        }
        if self.state.repl.feed.is_some() {
            self.serve_replicas();
        }
        self.cluster_before_sleep();
        if !self.state.repl.waits.is_empty() {
            self.answer_waits();
        }
        if self.evicting || crate::evict::over_limit(&self.state) {
            self.evict_between_commands();
        } else if self.state.stats.eviction_exceeded_since.is_some() {
            crate::evict::end_exceeded_spell(&mut self.state);
        }
        self.active_expire_cycle(CycleKind::Fast);
        // BCAST invalidations: what changed under each prefix this round.
        if self.state.tracking.has_broadcasts() {
            self.state.tracking.broadcast();
            self.deliver_messages(None, unix_time_ms());
        }
        if self.state.blocking.any() || !self.state.leases.is_empty() {
            self.end_waits(unix_time_ms());
        }
        self.state.free_garbage();
        // Effects reach the AOF before any reply leaves: one write (and,
        // with `always`, one sync) for the whole iteration.
        crate::persistence::aof::flush(&mut self.state, false);
        let mut deferred = Vec::new();
        // One clock reading for the iteration's flushes (it times only
        // subscribers' coalescing, in milliseconds).
        let mut now = None;
        for token in std::mem::take(&mut self.pending_writes) {
            let Some(conn) = self.conns.get_mut(token) else {
                continue;
            };
            let session = &conn.session;
            if session.is_subscribed()
                && !session.close_after_reply
                && session.reply.pending() < PUBSUB_COALESCE_BYTES
                && conn.last_flush.elapsed() < PUBSUB_COALESCE
            {
                deferred.push(token);
                continue;
            }
            conn.queued = false;
            conn.last_flush = *now.get_or_insert_with(Instant::now);
            self.flush(token);
        }
        self.pending_writes = deferred;
        if self.bus.is_some() {
            self.sync_bus(unix_time_ms());
        }
    }

    /// Writes queued output until done or `WouldBlock`; keeps the rest and
    /// asks for writable readiness only while some remains.
    fn flush(&mut self, token: usize) {
        // A reply written mid-iteration must not overtake its effect's way
        // to the AOF either.
        if self.state.aof.must_flush(self.state.config.appendfsync) {
            crate::persistence::aof::flush(&mut self.state, false);
        }
        let Some(conn) = self.conns.get_mut(token) else {
            return;
        };
        let reply = &mut conn.session.reply;
        while reply.pending() > 0 {
            match (&conn.socket).write(&reply.buf[reply.sent..]) {
                Ok(0) => return self.close(token),
                Ok(n) => {
                    reply.sent += n;
                    let replica = conn.session.replica.is_some();
                    self.state.stats.wrote_bytes(n, replica);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    debug!("write error on client: {e}");
                    return self.close(token);
                }
            }
        }
        reply.compact();
        let mut done = reply.pending() == 0;
        if done && conn.socket.pending_output() {
            match conn.socket.send_pending() {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => done = false,
                Err(e) => {
                    debug!("write error on client: {e}");
                    return self.close(token);
                }
            }
        }
        if done && conn.session.close_after_reply {
            return self.close(token);
        }
        if done == conn.wants_write {
            let interest = if done {
                Interest::READABLE
            } else {
                Interest::READABLE | Interest::WRITABLE
            };
            if self
                .poll
                .registry()
                .reregister(&mut conn.socket, Token(token), interest)
                .is_err()
            {
                return self.close(token);
            }
            conn.wants_write = !done;
        }
    }

    fn close(&mut self, token: usize) {
        if self.master_conn.is_some_and(|(t, _)| t == token) {
            self.master_conn = None;
            self.state.repl.link_down();
            self.next_master_connect = Instant::now() + replication::REPLICA_RETRY;
            warn!("Connection with master lost.");
        }
        if let Some(mut conn) = self.conns.try_remove(token) {
            let _ = self.poll.registry().deregister(&mut conn.socket);
            self.state.forget_client(conn.session.id);
            self.state.pause.forget(token);
            self.state.connected_clients -= 1;
            debug!("closed client {}", conn.session.addr);
        }
    }

    /// Periodic work, `hz` times a second: the slow expire cycle, idle
    /// clients.
    fn server_cron(&mut self) {
        let now_ms = unix_time_ms();
        if self.state.cron_paused {
            let period = Duration::from_micros(1_000_000 / u64::from(self.state.config.hz.max(1)));
            self.next_cron = Instant::now() + period;
            return;
        }
        crate::memory::sample_peak_memory();
        self.state.stats.sample_rates(now_ms);
        self.resume_paused(now_ms);
        if std::mem::take(&mut self.accept_retry) {
            for listener in 0..self.listeners.len() {
                self.accept_all(listener);
            }
        }
        self.active_expire_cycle(CycleKind::Slow);
        if self.state.tracking.any() {
            // A CONFIG SET of the limit is met even on an idle server.
            let max_keys = self.state.config.tracking_table_max_keys;
            self.state.tracking.limit_used_slots(max_keys);
        }
        crate::persistence::aof::cron(&mut self.state, now_ms);
        crate::persistence::save::cron(&mut self.state, now_ms);
        self.replication_cron();
        self.cluster_cron(now_ms);
        self.state.migrate_conns.close_idle();
        crate::log::set_replica(self.state.repl.is_replica());
        self.close_idle_clients();
        // One pass over the clients: idle buffers given back, and what
        // they all hold afterwards.
        let mut held = 0;
        for (_, conn) in self.conns.iter_mut() {
            conn.session.shrink_idle_buffers(now_ms);
            held += conn.session.memory();
        }
        self.evict_clients(held);
        let commands = self.state.stats.total_commands_processed;
        self.state.lazyfree.cron(commands);
        // Resizes move forward on every write too; this finishes idle ones.
        let per_db = DICT_REHASH_BUDGET / self.state.dbs.len().max(1) as u32;
        for db in &mut self.state.dbs {
            db.rehash_for(per_db);
        }
        let period = Duration::from_micros(1_000_000 / u64::from(self.state.config.hz.max(1)));
        self.next_cron = Instant::now() + period;
    }

    /// Closes clients idle for longer than `timeout` seconds.
    fn close_idle_clients(&mut self) {
        let timeout_s = self.state.config.timeout;
        if timeout_s == 0 {
            return;
        }
        let now_ms = unix_time_ms();
        let idle: Vec<usize> = self
            .conns
            .iter()
            .filter(|(_, c)| {
                // A blocked client is waiting, not idle; replication
                // links are never idle clients (as in Redis).
                c.session.blocked.is_none()
                    && !c.session.master
                    && c.session.replica.is_none()
                    && now_ms.saturating_sub(c.session.last_interaction_ms) as u64
                        > timeout_s.saturating_mul(1000)
            })
            .map(|(t, _)| t)
            .collect();
        for token in idle {
            debug!("closing idle client");
            self.close(token);
        }
    }

    fn active_expire_cycle(&mut self, kind: CycleKind) {
        let state = &mut self.state;
        // Under CLIENT PAUSE the dataset stays as it is (Redis 7.0).
        if state.pause.is_on() {
            return;
        }
        if state.repl.is_replica() {
            // A replica's keys leave when its primary's DELs arrive, but
            // for those its own clients gave a deadline (a writable
            // replica), which it expires itself, in deadline order.
            const REPLICA_KEYS_PER_CALL: usize = 256;
            let now_ms = unix_time_ms();
            let deleted: usize = state
                .dbs
                .iter_mut()
                .map(|db| db.expire_replica_keys(now_ms, REPLICA_KEYS_PER_CALL))
                .sum();
            if deleted == 0 {
                return;
            }
        } else {
            let settings = CycleSettings {
                effort: state.config.active_expire_effort,
                hz: state.config.hz,
                strategy: state.config.expire_strategy,
            };
            let threshold_ms = state.config.latency_monitor_threshold;
            let started = (threshold_ms > 0).then(Instant::now);
            state.expire.run(
                kind,
                &mut state.dbs,
                settings,
                &mut self.clock,
                &mut state.rng,
            );
            if let Some(started) = started {
                let ms = started.elapsed().as_millis() as u64;
                let now_s = unix_time_ms() / 1000;
                state
                    .latency
                    .add_if_needed(threshold_ms, "expire-cycle", ms, now_s);
            }
        }
        state.process_key_events();
        if state.has_deliveries() {
            self.deliver_messages(None, unix_time_ms());
        }
    }

    /// How long the loop may sleep: until the next cron, or (deadline
    /// strategy) until the first key is due, so the fast cycle removes it
    /// within milliseconds of its deadline.
    fn sleep_budget(&self) -> Duration {
        let mut until_cron = self.next_cron.saturating_duration_since(Instant::now());
        // A lease that lapses hands it to a waiter: wake for it too.
        let lapse = match self.state.blocking.any() {
            true => self.state.leases.next_lapse_ms(),
            false => None,
        };
        for at_ms in [self.state.blocking.next_deadline_ms(), lapse]
            .into_iter()
            .flatten()
        {
            let wait_ms = (at_ms - unix_time_ms()).max(0) as u64;
            until_cron = until_cron.min(Duration::from_millis(wait_ms));
        }
        let earliest = crate::expire::earliest_deadline_ms(&self.state.dbs);
        match earliest {
            Some(at_ms) if self.state.expire.enabled => {
                let wait_ms = (at_ms - unix_time_ms()).max(0) as u64;
                until_cron.min(Duration::from_millis(wait_ms))
            }
            _ => until_cron,
        }
    }

    /// Stops accepting, delivers queued replies (for a bounded time), returns.
    fn shutdown(&mut self) {
        // Effects of commands run after the SHUTDOWN in its iteration.
        let _ = crate::persistence::aof::before_shutdown(&mut self.state, true);
        for mut listener in self.listeners.drain(..) {
            let _ = self.poll.registry().deregister(&mut listener);
        }
        let deadline = Instant::now() + SHUTDOWN_FLUSH_TIMEOUT;
        let mut events = Events::with_capacity(256);
        loop {
            let tokens: Vec<usize> = self
                .conns
                .iter()
                .filter(|(_, c)| c.session.reply.pending() > 0)
                .map(|(t, _)| t)
                .collect();
            if tokens.is_empty() || Instant::now() >= deadline {
                break;
            }
            for t in tokens {
                self.flush(t);
            }
            let _ = self.poll.poll(&mut events, Some(Duration::from_millis(10)));
        }
        // Shutdown waits for the lazyfree thread to finish its work.
        self.state.free_garbage();
        self.state.lazyfree.shutdown();
        warn!("Redis is now ready to exit, bye bye...");
    }
}
