//! The loop's side of replication (Redis's `replication.c` socket work):
//! as a primary, streaming the effect stream and full syncs (disk or
//! diskless) to replicas and answering WAIT; as a replica, the link to
//! the primary from connect through handshake and full sync to the
//! command stream, and the replication cron.

use std::io::{self, Read, Write};
use std::net::ToSocketAddrs;
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Interest, Token};
use tracing::{info, warn};

use super::*;

/// A replica tries to reach its primary again this long after a failure,
/// and acknowledges its offset this often.
pub(super) const REPLICA_RETRY: Duration = Duration::from_secs(1);
pub(super) const REPLICA_ACK_PERIOD: Duration = Duration::from_secs(1);

/// The link to the primary before it carries the command stream.
pub(super) struct MasterLink {
    /// TCP, or TLS with `tls-replication`.
    socket: Stream,
    /// `None` until the connection is made.
    handshake: Option<crate::replication::Handshake>,
    /// The REPLICAOF it was made for (`Replication::epoch`).
    epoch: u64,
    addr: String,
}

impl Server {
    /// The primary's side, once per loop iteration: the stream written
    /// since goes to online replicas (and waits beside the RDB for those
    /// syncing), a background save starts for replicas that asked for a
    /// full sync, and finished saves are sent.
    pub(super) fn serve_replicas(&mut self) {
        use crate::replication::ReplicaState;
        let stream = crate::replication::take_stream(&mut self.state.repl);
        let hard_limit = self.state.config.output_limit_replica.hard_bytes as usize;
        let mut over_limit = Vec::new();
        // Replicas waiting for a full sync: how many, whether all can
        // take a diskless one, how long the first has waited.
        let (mut waiting, mut all_eof, mut longest) = (0, true, Duration::ZERO);
        for (token, conn) in self.conns.iter_mut() {
            let session = &mut conn.session;
            let Some(link) = session.replica.as_mut() else {
                continue;
            };
            let mut wrote = false;
            match link.state {
                ReplicaState::Online => {
                    session.reply.buf.extend_from_slice(&stream);
                    wrote = !stream.is_empty();
                }
                ReplicaState::InBgsave { .. }
                | ReplicaState::SendingRdb
                | ReplicaState::StreamingRdb { .. }
                | ReplicaState::WaitAck => link.held.extend_from_slice(&stream),
                ReplicaState::WaitBgsave => {
                    waiting += 1;
                    all_eof &= session.replica_eof_capable;
                    longest = longest.max(link.since.elapsed());
                }
            }
            let held = link.held.len() + session.reply.pending();
            if hard_limit > 0 && held > hard_limit {
                over_limit.push(token);
            }
            if wrote {
                conn.queue_write(token, &mut self.pending_writes);
            }
        }
        for token in over_limit {
            warn!("Client closed for overcoming of output buffer limits (replica).");
            self.state.stats.client_output_buffer_limit_disconnections += 1;
            self.close(token);
        }
        if waiting > 0 && self.state.persist.job().is_none() {
            // Diskless when every one can take it; then after the delay
            // (for more replicas to share the transfer) or as soon as
            // enough wait, as Redis's replicationCron decides.
            let config = &self.state.config;
            let diskless = config.repl_diskless_sync && all_eof;
            let max = config.repl_diskless_sync_max_replicas;
            if !diskless
                || longest.as_secs() >= config.repl_diskless_sync_delay
                || (max > 0 && waiting >= max)
            {
                self.start_full_sync(diskless);
            }
        }
        self.send_rdb_files();
        self.stream_rdb();
    }

    /// A diskless sync's RDB, as the save encodes it, to its replicas,
    /// the end mark after its last bytes; then they wait for their first
    /// ACK. Replicas of a save that ended without them (FLUSHALL
    /// abandoned it) are closed; a save whose replicas all left is
    /// abandoned. Tells the save how far behind the slowest one is.
    pub(super) fn stream_rdb(&mut self) {
        use crate::replication::ReplicaState;
        let taken = crate::persistence::save::take_replica_bytes(&mut self.state);
        let (started, ended) = (
            self.state.persist.bgsaves_started,
            self.state.persist.bgsaves_ended,
        );
        let (mut failed, mut behind, mut receiving) = (Vec::new(), 0, 0);
        for (token, conn) in self.conns.iter_mut() {
            let session = &mut conn.session;
            let Some(link) = session.replica.as_mut() else {
                continue;
            };
            let ReplicaState::StreamingRdb { save } = link.state else {
                continue;
            };
            match &taken {
                Some((bytes, complete)) if save == started => {
                    session.reply.buf.extend_from_slice(bytes);
                    if *complete {
                        session
                            .reply
                            .buf
                            .extend_from_slice(link.eof_mark.as_bytes());
                        link.state = ReplicaState::WaitAck;
                    } else {
                        receiving += 1;
                        behind = behind.max(session.reply.pending());
                    }
                    conn.queue_write(token, &mut self.pending_writes);
                }
                _ if ended >= save => failed.push(token),
                _ => {}
            }
        }
        self.state.persist.replica_output_behind = behind;
        if matches!(taken, Some((_, false))) && receiving == 0 {
            warn!("Diskless rdb transfer, last replica dropped, killing fork child.");
            crate::persistence::save::abandon(&mut self.state, crate::persistence::jobs::Job::Rdb);
        }
        for token in failed {
            warn!("The diskless sync of a replica failed; closing it");
            self.close(token);
        }
    }

    /// Answers the clients in WAIT whose replicas acknowledged enough, or
    /// whose time is up, with the count; their next requests run.
    pub(super) fn answer_waits(&mut self) {
        let now_ms = unix_time_ms();
        let waits = std::mem::take(&mut self.state.repl.waits);
        for wait in waits {
            let acked = self
                .conns
                .iter()
                .filter(|(_, c)| {
                    c.session
                        .replica
                        .as_ref()
                        .is_some_and(|r| r.ack_offset >= wait.target)
                })
                .count();
            let timed_out = wait
                .deadline_ms
                .is_some_and(|d| crate::blocking::deadline_passed(d, now_ms));
            if acked < wait.replicas && !timed_out {
                self.state.repl.waits.push(wait);
                continue;
            }
            let Some(conn) = self.conns.get_mut(wait.token) else {
                continue;
            };
            if conn.session.id != wait.client {
                continue;
            }
            conn.session.reply.int(acked as i64);
            conn.session.paused_until_ms = 0;
            conn.queue_write(wait.token, &mut self.pending_writes);
            self.resume.push(wait.token);
        }
    }

    /// A background save for the replicas waiting for a full sync: each
    /// gets `+FULLRESYNC <replid> <offset>` now, the offset of the
    /// save's snapshot, and the stream from here on waits for its RDB.
    pub(super) fn start_full_sync(&mut self, diskless: bool) {
        use crate::replication::ReplicaState;
        if diskless {
            crate::persistence::save::bgsave_to_replicas(&mut self.state, unix_time_ms());
        } else {
            match crate::persistence::save::bgsave(&mut self.state, unix_time_ms(), false) {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => {
                    warn!("Can't BGSAVE for replication: {e}");
                    return;
                }
            }
        }
        let save = self.state.persist.bgsaves_started;
        if let Some(feed) = &self.state.repl.feed {
            feed.buffer.borrow_mut().full_sync_started();
        }
        let header = format!(
            "+FULLRESYNC {} {}\r\n",
            self.state.repl.replid, self.state.repl.offset
        );
        // A diskless RDB's length is not known: it ends at a random mark.
        let mark = diskless.then(crate::replication::random_replid);
        for (token, conn) in self.conns.iter_mut() {
            let Some(link) = conn.session.replica.as_mut() else {
                continue;
            };
            if link.state != ReplicaState::WaitBgsave {
                continue;
            }
            let out = &mut conn.session.reply.buf;
            if !link.pre_psync {
                out.extend_from_slice(header.as_bytes());
            }
            match &mark {
                Some(mark) => {
                    link.state = ReplicaState::StreamingRdb { save };
                    link.eof_mark = mark.clone();
                    out.extend_from_slice(format!("$EOF:{mark}\r\n").as_bytes());
                }
                None => link.state = ReplicaState::InBgsave { save },
            }
            conn.queue_write(token, &mut self.pending_writes);
        }
        let target = if diskless { "replicas sockets" } else { "disk" };
        info!("Starting BGSAVE for SYNC with target: {target}");
    }

    /// Sends finished saves to their replicas, a chunk at a time while
    /// each one's output drains, then the stream held meanwhile.
    pub(super) fn send_rdb_files(&mut self) {
        use crate::replication::ReplicaState;
        const CHUNK: usize = 256 * 1024;
        let persist = &self.state.persist;
        let path = crate::persistence::save::rdb_path(&self.state);
        let mut failed = Vec::new();
        for (token, conn) in self.conns.iter_mut() {
            let session = &mut conn.session;
            let Some(link) = session.replica.as_mut() else {
                continue;
            };
            if let ReplicaState::InBgsave { save } = link.state {
                if persist.bgsaves_ended < save {
                    continue;
                }
                let opened = (persist.bgsaves_ended == save && persist.last_bgsave_wrote_file)
                    .then(|| std::fs::File::open(&path))
                    .and_then(Result::ok)
                    .and_then(|f| f.metadata().ok().map(|m| (f, m.len())));
                let Some((file, len)) = opened else {
                    failed.push(token);
                    continue;
                };
                session
                    .reply
                    .buf
                    .extend_from_slice(format!("${len}\r\n").as_bytes());
                link.rdb = Some((file, len));
                link.state = ReplicaState::SendingRdb;
            }
            if link.state != ReplicaState::SendingRdb {
                continue;
            }
            while session.reply.pending() < 4 * CHUNK {
                let Some((file, left)) = link.rdb.as_mut() else {
                    break;
                };
                if *left == 0 {
                    link.rdb = None;
                    session.reply.buf.append(&mut link.held);
                    link.state = ReplicaState::Online;
                    info!("Synchronization with replica {} succeeded", session.addr);
                    break;
                }
                let want = (*left).min(CHUNK as u64) as usize;
                let at = session.reply.buf.len();
                session.reply.buf.resize(at + want, 0);
                match file.read(&mut session.reply.buf[at..]) {
                    Ok(n) if n > 0 => {
                        session.reply.buf.truncate(at + n);
                        *left -= n as u64;
                    }
                    _ => {
                        session.reply.buf.truncate(at);
                        failed.push(token);
                        break;
                    }
                }
            }
            conn.queue_write(token, &mut self.pending_writes);
        }
        for token in failed {
            warn!("The sync of a replica failed; closing it");
            self.close(token);
        }
    }

    /// A replica's side of the cron: a link made for an older REPLICAOF is
    /// dropped, a missing one made (at most once a second), the offset
    /// acknowledged every second.
    pub(super) fn replication_cron(&mut self) {
        self.drop_stale_master_link();
        if self.state.repl.is_replica()
            && self.master_link.is_none()
            && self.master_conn.is_none()
            && Instant::now() >= self.next_master_connect
        {
            self.connect_master();
        }
        // A silent primary (no data, not even its pings, for
        // `repl-timeout`): the link is dropped and made again.
        let timeout = Duration::from_secs(self.state.config.repl_timeout);
        if (self.master_conn.is_some() || self.master_link.is_some())
            && self.state.repl.last_io.elapsed() > timeout
        {
            warn!("MASTER timeout: no data nor PING received...");
            if let Some((token, _)) = self.master_conn {
                self.close(token);
            } else {
                self.master_link_failed("Timeout connecting to the MASTER...");
            }
        }
        // A primary counts its good replicas (`min-replicas-max-lag`, as
        // Redis's cron does) and pings them (`repl-ping-replica-period`).
        if let Some(feed) = &self.state.repl.feed {
            let max_lag = self.state.config.min_replicas_max_lag;
            let (mut replicas, mut good) = (0, 0);
            for (_, conn) in self.conns.iter() {
                if let Some(link) = &conn.session.replica {
                    replicas += 1;
                    let online = link.state == crate::replication::ReplicaState::Online;
                    good += u64::from(online && link.last_ack.elapsed().as_secs() <= max_lag);
                }
            }
            self.state.repl.good_replicas = good;
            let ping_period = Duration::from_secs(self.state.config.repl_ping_replica_period);
            // Not while clients are paused: a failover compares offsets
            // that must not move (Redis skips them during a manual one).
            if self.last_replica_ping.elapsed() >= ping_period && !self.state.pause.is_on() {
                self.last_replica_ping = Instant::now();
                if replicas > 0 {
                    feed.buffer.borrow_mut().ping();
                }
            }
        }
        // Replicas waiting for their save hear a newline every second, so
        // that their `repl-timeout` does not run out (as Redis does).
        if self.state.repl.feed.is_some() && self.last_newline.elapsed() >= Duration::from_secs(1) {
            self.last_newline = Instant::now();
            for (token, conn) in self.conns.iter_mut() {
                let waiting = conn.session.replica.as_ref().is_some_and(|r| {
                    matches!(
                        r.state,
                        crate::replication::ReplicaState::WaitBgsave
                            | crate::replication::ReplicaState::InBgsave { .. }
                    )
                });
                if waiting {
                    conn.session.reply.buf.push(b'\n');
                    conn.queue_write(token, &mut self.pending_writes);
                }
            }
        }
        if let Some((token, _)) = self.master_conn {
            if self.last_ack.elapsed() >= REPLICA_ACK_PERIOD {
                self.last_ack = Instant::now();
                let ack = crate::replication::ack(self.state.repl.offset);
                if let Some(conn) = self.conns.get_mut(token) {
                    conn.session.reply.buf.extend_from_slice(&ack);
                    conn.queue_write(token, &mut self.pending_writes);
                }
            }
        }
    }

    /// The link being made, out of the poll (to be dropped, or to become
    /// the master client).
    pub(super) fn take_master_link(&mut self) -> Option<MasterLink> {
        let mut link = self.master_link.take()?;
        let _ = self.poll.registry().deregister(&mut link.socket);
        Some(link)
    }

    /// Drops the link to a primary REPLICAOF no longer names.
    pub(super) fn drop_stale_master_link(&mut self) {
        let epoch = self.state.repl.epoch;
        if self.master_link.as_ref().is_some_and(|l| l.epoch != epoch) {
            self.take_master_link();
        }
        if let Some((token, link_epoch)) = self.master_conn {
            if link_epoch != epoch {
                self.master_conn = None;
                self.close(token);
                self.state.repl.link_down();
            }
        }
        // A new REPLICAOF connects at once, whatever failed before.
        if self.master_epoch_seen != epoch {
            self.master_epoch_seen = epoch;
            self.next_master_connect = Instant::now();
        }
    }

    /// Starts connecting to the primary (the handshake begins when the
    /// socket is writable).
    pub(super) fn connect_master(&mut self) {
        let Some((host, port)) = self.state.repl.master.clone() else {
            return;
        };
        self.next_master_connect = Instant::now() + REPLICA_RETRY;
        let addr = match (host.as_str(), port)
            .to_socket_addrs()
            .map(|mut a| a.next())
        {
            Ok(Some(addr)) => addr,
            Ok(None) | Err(_) => {
                warn!("Unable to resolve the master {host}:{port}");
                return;
            }
        };
        info!("Connecting to MASTER {host}:{port}");
        let socket = match TcpStream::connect(addr) {
            Ok(socket) => socket,
            Err(e) => {
                warn!("Unable to connect to MASTER: {e}");
                return;
            }
        };
        let tls = &self.state.config.tls;
        let mut socket = match tls.replication {
            false => Stream::Tcp(socket),
            true => match crate::tls::client_config(tls)
                .map_err(io::Error::other)
                .and_then(|config| crate::tls::connect(config, &host))
            {
                Ok(client) => crate::net::TlsStream::stream(socket, client),
                Err(e) => {
                    warn!("Unable to connect to MASTER over TLS: {e}");
                    return;
                }
            },
        };
        let interest = Interest::READABLE | Interest::WRITABLE;
        if let Err(e) = self
            .poll
            .registry()
            .register(&mut socket, MASTER_TOKEN, interest)
        {
            warn!("Unable to connect to MASTER: {e}");
            return;
        }
        self.state.repl.link = crate::replication::Link::Connecting;
        self.state.repl.last_io = Instant::now();
        self.master_link = Some(MasterLink {
            socket,
            handshake: None,
            epoch: self.state.repl.epoch,
            addr: addr.to_string(),
        });
    }

    /// The link to the primary is readable or writable: the connection
    /// completes, the handshake goes on, the RDB arrives.
    pub(super) fn master_link_event(&mut self, writable: bool) {
        let Some(link) = self.master_link.as_mut() else {
            return;
        };
        if link.handshake.is_none() {
            if !writable {
                return;
            }
            let connected = match link.socket.tcp().map(|s| s.take_error()) {
                Some(Ok(None)) => link.socket.tcp().is_some_and(|s| s.peer_addr().is_ok()),
                _ => false,
            };
            if !connected {
                return self
                    .master_link_failed("Error condition on socket for SYNC: Connection refused");
            }
            info!("MASTER <-> REPLICA sync started");
            let config = &self.state.config;
            let auth = (!config.masterauth.is_empty()).then(|| {
                let user = (!config.masteruser.is_empty()).then(|| config.masteruser.clone());
                (user, config.masterauth.clone())
            });
            let resume = self.state.repl.resume_point();
            // The port the primary (and Sentinel) should reach this
            // replica on: its TLS port when replication is over TLS, as
            // Redis announces it.
            let tls = &config.tls;
            let port = match tls.replication && tls.port != 0 {
                true => tls.port,
                false => self.state.bound_port,
            };
            let (handshake, first) = crate::replication::Handshake::start(port, auth, resume);
            link.handshake = Some(handshake);
            let registered =
                self.poll
                    .registry()
                    .reregister(&mut link.socket, MASTER_TOKEN, Interest::READABLE);
            if registered.is_err() || (&link.socket).write_all(&first).is_err() {
                return self.master_link_failed("Unable to send PING to MASTER");
            }
        }
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let Some(link) = self.master_link.as_mut() else {
                return;
            };
            let n = match (&link.socket).read(&mut buf) {
                Ok(0) => {
                    return self.master_link_failed("MASTER aborted replication: connection closed")
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return self.master_link_failed(&format!("I/O error reading from MASTER: {e}"))
                }
            };
            self.state.stats.read_bytes(n, true);
            self.state.repl.last_io = Instant::now();
            let Some(handshake) = link.handshake.as_mut() else {
                return;
            };
            let progress = handshake.feed(&buf[..n]);
            if handshake.transferring() {
                self.state.repl.link = crate::replication::Link::Sync;
            }
            match progress {
                Ok(crate::replication::Progress::More) => {}
                Ok(crate::replication::Progress::Send(bytes)) => {
                    if (&link.socket).write_all(&bytes).is_err() {
                        return self.master_link_failed("Unable to write to MASTER");
                    }
                }
                Ok(crate::replication::Progress::Synced {
                    replid,
                    offset,
                    rdb,
                    rest,
                }) => return self.finish_full_sync(replid, offset, &rdb, &rest),
                Ok(crate::replication::Progress::Continued { replid, rest }) => {
                    return self.continue_sync(replid, &rest)
                }
                Err(e) => return self.master_link_failed(&e),
            }
        }
    }

    pub(super) fn master_link_failed(&mut self, why: &str) {
        warn!("{why}");
        self.take_master_link();
        self.state.repl.link_down();
        self.next_master_connect = Instant::now() + REPLICA_RETRY;
    }

    /// The full sync's RDB arrived: the data is replaced by it, and the
    /// link becomes the master client.
    pub(super) fn finish_full_sync(
        &mut self,
        replid: String,
        offset: i64,
        rdb: &[u8],
        rest: &[u8],
    ) {
        let Some(link) = self.take_master_link() else {
            return;
        };
        info!(
            "MASTER <-> REPLICA sync: received {} bytes of RDB; flushing old data and loading",
            rdb.len()
        );
        let state = &mut self.state;
        crate::persistence::load::empty_data(state);
        let source = std::path::Path::new("(the primary's RDB)");
        if let Err(e) = crate::persistence::load::load_rdb(
            state,
            rdb,
            source,
            unix_time_ms(),
            crate::persistence::load::Load::KeepAll,
        ) {
            warn!("Failed trying to load the MASTER synchronization DB from socket: {e}");
            state.repl.link_down();
            self.next_master_connect = Instant::now() + REPLICA_RETRY;
            return;
        }
        state.repl.master_replid = replid;
        state.repl.offset = offset;
        state.repl.full_syncs += 1;
        info!("MASTER <-> REPLICA sync: Finished with success");
        // The AOF holds none of what was just loaded: a new base.
        if state.aof.state != crate::persistence::aof_files::AofState::Off {
            let _ = crate::persistence::aof::request_rewrite(state, unix_time_ms());
        }
        self.attach_master_conn(link, rest);
    }

    /// The primary continues the stream where this replica is (`+CONTINUE`).
    pub(super) fn continue_sync(&mut self, replid: Option<String>, rest: &[u8]) {
        let Some(link) = self.take_master_link() else {
            return;
        };
        if let Some(replid) = replid {
            self.state.repl.master_replid = replid;
        }
        info!(
            "Successful partial resynchronization with master at offset {}.",
            self.state.repl.offset
        );
        self.attach_master_conn(link, rest);
    }

    /// The link becomes the master client, whose first commands may
    /// already be in `rest`; the offset is acknowledged at once (a
    /// diskless primary streams only after that).
    pub(super) fn attach_master_conn(&mut self, mut link: MasterLink, rest: &[u8]) {
        self.state.repl.link = crate::replication::Link::Connected;
        self.state.repl.resumable = false;
        let entry = self.conns.vacant_entry();
        let token = entry.key();
        if let Err(e) =
            self.poll
                .registry()
                .register(&mut link.socket, Token(token), Interest::READABLE)
        {
            warn!("cannot register the master link: {e}");
            self.state.repl.link_down();
            return;
        }
        let laddr = link
            .socket
            .tcp()
            .and_then(|s| s.local_addr().ok())
            .map_or_else(String::new, |a| a.to_string());
        let mut session = Session::new(
            self.next_client_id,
            link.addr.clone(),
            laddr,
            link.socket.as_raw_fd(),
            unix_time_ms(),
        );
        self.next_client_id += 1;
        session.master = true;
        session.authenticated = true;
        session.transport_memory = link.socket.transport_memory();
        session.token = token;
        session.query.extend(rest);
        entry.insert(Connection {
            socket: link.socket,
            session: Box::new(session),
            wants_write: false,
            queued: false,
            read_again: false,
            last_flush: Instant::now(),
        });
        self.state.connected_clients += 1;
        self.master_conn = Some((token, link.epoch));
        self.last_ack = Instant::now();
        if let Some(conn) = self.conns.get_mut(token) {
            let ack = crate::replication::ack(self.state.repl.offset);
            conn.session.reply.buf.extend_from_slice(&ack);
            conn.queue_write(token, &mut self.pending_writes);
        }
        self.process_input(token);
    }
}
