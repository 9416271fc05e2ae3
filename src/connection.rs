//! One client's state apart from its socket: buffers, parser, selected db,
//! protocol, name and flags.
//!
//! The socket stays in `server`; a `Session` is plain data, so commands can
//! read and change it and tests can build one without any network.

use crate::blocking::BlockedOn;
use crate::multi::Transaction;
use crate::net::PeerSocket;
use crate::protocol::{Reply, RequestParser};

/// Read this many bytes at a time (Redis's `PROTO_IOBUF_LEN`).
pub const READ_CHUNK: usize = 16 * 1024;
/// An idle query buffer larger than this is released (Redis's clientsCron
/// does the same) so one big request doesn't pin memory forever.
const QUERY_BUFFER_KEEP: usize = 64 * 1024;

/// Bytes read from a client and not yet executed.
///
/// The backing vector stays initialised past `len`, so each read fills
/// spare room directly without zeroing it first.
#[derive(Debug, Default)]
pub struct QueryBuffer {
    buf: Vec<u8>,
    /// Bytes of `buf` holding received data.
    len: usize,
}

impl QueryBuffer {
    pub fn data(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Room for at least `READ_CHUNK` more bytes, to read into.
    pub fn spare(&mut self) -> &mut [u8] {
        if self.buf.len() - self.len < READ_CHUNK {
            self.buf.resize(self.len + READ_CHUNK, 0);
        }
        &mut self.buf[self.len..]
    }

    /// Appends bytes received elsewhere (while a script was busy).
    pub fn extend(&mut self, bytes: &[u8]) {
        self.buf.truncate(self.len);
        self.buf.extend_from_slice(bytes);
        self.len = self.buf.len();
    }

    /// Marks `n` bytes of the spare room as received.
    pub fn commit(&mut self, n: usize) {
        self.len = (self.len + n).min(self.buf.len());
    }

    /// Releases the buffer of a client with nothing pending that has been
    /// idle (Redis's `clientsCronResizeQueryBuffer`); the next read
    /// allocates a fresh one.
    pub fn shrink_idle(&mut self) {
        if self.len == 0 && self.buf.capacity() > 0 {
            self.buf = Vec::new();
        } else if self.buf.capacity() > self.len {
            // Half a request, then silence: keep its bytes, not the room
            // the read made for more (16 KB per client).
            self.buf.truncate(self.len);
            self.buf.shrink_to_fit();
        }
    }

    /// Drops the first `n` bytes (executed requests).
    pub fn consume(&mut self, n: usize) {
        let n = n.min(self.len);
        self.buf.copy_within(n..self.len, 0);
        self.len -= n;
        if self.len == 0 && self.buf.len() > QUERY_BUFFER_KEEP {
            self.buf = Vec::new();
        }
    }
}

#[derive(Debug, Default)]
pub struct Session {
    /// Unique, increasing client id (CLIENT ID).
    pub id: u64,
    /// `ip:port` of the peer and of our end, for CLIENT LIST/INFO.
    pub addr: String,
    /// Wrong passwords on this connection since its last good one.
    pub auth_failures: u32,
    /// Unix ms before which this connection's requests wait (slowed after
    /// wrong passwords); 0: not paused.
    pub paused_until_ms: i64,
    pub laddr: String,
    /// The socket's file descriptor number, for CLIENT LIST/INFO.
    pub fd: i32,
    /// Bytes read but not yet executed; parsed requests are consumed from the front.
    pub query: QueryBuffer,
    pub parser: RequestParser,
    /// Encoded replies waiting to be written, and the protocol version.
    pub reply: Reply,
    /// Selected database index.
    pub db: usize,
    /// CLIENT SETNAME, empty when unset.
    pub name: String,
    /// CLIENT SETINFO lib-name / lib-ver.
    pub lib_name: String,
    pub lib_ver: String,
    pub no_evict: bool,
    /// The ACL user it is authenticated as; empty: `default`.
    pub user: String,
    /// Its next request waits for CLIENT PAUSE to end (kept unread in
    /// the query buffer; flag `b`).
    pub postponed: bool,
    /// Connected through the Unix socket (`unixsocket`): flag `U`, and
    /// local for protected mode and the protected commands.
    pub unix_socket: bool,
    /// Connected over TLS (`tls-port`): in a TLS cluster, redirections
    /// and CLUSTER's replies give it the TLS ports, others the plain ones.
    pub tls: bool,
    /// What a TLS connection's state and buffers hold (0 over plain TCP),
    /// as the loop last saw them: part of `memory`.
    pub transport_memory: usize,
    pub no_touch: bool,
    /// CLIENT REPLY: what becomes of this client's replies.
    pub reply_mode: ReplyMode,
    /// Where, in the reply of a command whose reply is dropped (CLIENT
    /// REPLY OFF / SKIP), pushes were written (pub/sub confirmations and
    /// messages): they are sent all the same (Redis's `CLIENT_PUSHING`).
    pub pushed: Vec<std::ops::Range<usize>>,
    /// Close once the queued replies are written (QUIT, protocol error).
    pub close_after_reply: bool,
    /// Passed AUTH (or no password was required when it connected).
    pub authenticated: bool,
    /// Since when (unix ms) unsent output has been over the soft limit.
    pub output_soft_since_ms: Option<i64>,
    /// Creation and last-command times, unix ms (age/idle in CLIENT LIST).
    pub created_ms: i64,
    pub last_interaction_ms: i64,
    /// The last command executed and its subcommand (`cmd=` in CLIENT LIST).
    pub last_cmd: (&'static str, Option<&'static str>),
    /// The last command's name as sent and its table entry: a pipeline
    /// repeating it is resolved by one comparison instead of a lookup.
    pub last_top: Option<(
        crate::protocol::ExactWord,
        &'static crate::command_table::Command,
    )>,
    /// The transaction being queued, between MULTI and EXEC/DISCARD.
    pub multi: Option<Transaction>,
    /// Cluster mode: ASKING was sent (for the next command, or the
    /// transaction it opens), and READONLY (reads served by a replica).
    pub asking: bool,
    pub readonly: bool,
    /// The connection table slot this client lives in (where deliveries
    /// to it go).
    pub token: usize,
    /// The command this client waits to run again (BLPOP and friends).
    pub blocked: Option<BlockedOn>,
    /// Blocking commands must not block (inside EXEC): they answer as if
    /// they had timed out.
    pub deny_blocking: bool,
    /// The client a script's commands run as (Redis's `CLIENT_SCRIPT`):
    /// SORT then sorts a set whose own order it would otherwise reply.
    pub in_script: bool,
    /// The blocked command is being retried: finding no data again keeps
    /// the wait (`still_waiting`) instead of registering a new one.
    pub retrying: bool,
    pub still_waiting: bool,
    /// Channels, patterns and shard channels subscribed (a copy of the
    /// pubsub room's count, for the subscribed-mode gate and CLIENT LIST).
    pub pubsub_counts: (usize, usize, usize),
    /// The link to this replica's primary: its commands are the
    /// replication stream (no replies, no read-only or disk checks).
    pub master: bool,
    /// This connection is a replica of this server (after SYNC/PSYNC).
    pub replica: Option<Box<crate::replication::ReplicaLink>>,
    /// The port it announced with REPLCONF listening-port.
    pub replica_port: u16,
    /// It announced `REPLCONF capa eof`: it can take a diskless RDB.
    pub replica_eof_capable: bool,
    /// While the loop runs a batch of its requests: when the last one
    /// ended (`clock::ticks`), the next one's start for the slow log; 0
    /// outside a batch.
    pub command_tick: u64,
}

impl Session {
    pub fn new(id: u64, addr: String, laddr: String, fd: i32, now_ms: i64) -> Self {
        Self {
            id,
            addr,
            laddr,
            fd,
            created_ms: now_ms,
            last_interaction_ms: now_ms,
            last_cmd: ("NULL", None),
            ..Self::default()
        }
    }

    /// Back to a fresh connection's state (RESET), keeping identity;
    /// `authenticated` is what a new connection would be.
    pub fn reset(&mut self, authenticated: bool) {
        self.authenticated = authenticated;
        self.user.clear();
        self.db = 0;
        self.name.clear();
        self.reply.resp3 = false;
        self.no_evict = false;
        self.no_touch = false;
        self.reply_mode = ReplyMode::On;
        self.multi = None;
        self.pubsub_counts = (0, 0, 0);
        self.asking = false;
        self.readonly = false;
    }

    /// Gives back what one big request or reply grew (from the cron, as
    /// Redis does): argument storage and the output buffer at once, the
    /// query buffer once the client has been idle for `QUERY_IDLE_MS`.
    pub fn shrink_idle_buffers(&mut self, now_ms: i64) {
        /// Redis frees an idle client's query buffer after 2 seconds.
        const QUERY_IDLE_MS: i64 = 2000;
        self.parser.shrink_idle();
        self.reply.shrink_idle();
        if now_ms.saturating_sub(self.last_interaction_ms) >= QUERY_IDLE_MS {
            self.query.shrink_idle();
        }
    }

    /// Bytes its buffers hold (CLIENT LIST `tot-mem`, `maxmemory-clients`).
    pub fn memory(&self) -> usize {
        self.query.capacity() + self.reply.buf.capacity() + self.transport_memory
    }

    /// Which class of client this is (CLIENT LIST TYPE, output limits).
    pub fn client_type(&self) -> ClientType {
        if self.master {
            ClientType::Master
        } else if self.replica.is_some() {
            ClientType::Replica
        } else if self.is_subscribed() {
            ClientType::PubSub
        } else {
            ClientType::Normal
        }
    }

    /// The ACL user's name.
    pub fn user_name(&self) -> &str {
        if self.user.is_empty() {
            "default"
        } else {
            &self.user
        }
    }

    /// Subscribed to anything (in RESP2 that limits what it may run).
    pub fn is_subscribed(&self) -> bool {
        let (c, p, s) = self.pubsub_counts;
        c + p + s > 0
    }

    /// One line of CLIENT LIST / the reply of CLIENT INFO, in Redis's format.
    /// `running`: the request this client is executing (its own line):
    /// Redis still holds it in the query buffer (`qbuf`) and as arguments
    /// (`argv-mem`), here it is counted as its request's bytes.
    pub fn info_line(
        &self,
        now_ms: i64,
        tracking: Option<&crate::tracking::Tracker>,
        running: Option<&crate::protocol::Args>,
    ) -> String {
        // Redis's letters in its order.
        let mut flags = String::new();
        if self.replica.is_some() {
            flags.push('S');
        }
        if self.master {
            flags.push('M');
        }
        if self.is_subscribed() {
            flags.push('P');
        }
        if self.multi.is_some() {
            flags.push('x');
        }
        if self.blocked.is_some() || self.postponed {
            flags.push('b');
        }
        if let Some(t) = tracking {
            flags.push('t');
            if t.broken_redirect {
                flags.push('R');
            }
            if t.bcast {
                flags.push('B');
            }
        }
        if self.unix_socket {
            flags.push('U');
        }
        if self.no_evict {
            flags.push('e');
        }
        if flags.is_empty() {
            flags.push('N');
        }
        let multi = self.multi.as_ref().map_or(-1, |t| t.queue.len() as i64);
        let multi_mem = self.multi.as_ref().map_or(0, Transaction::heap_bytes);
        let (qbuf, argv_mem) = match running {
            Some(args) => {
                let argv: usize = args.iter().map(<[u8]>::len).sum();
                let digits = |n: usize| n.to_string().len();
                let framing: usize = args.iter().map(|a| 5 + digits(a.len())).sum();
                (3 + digits(args.len()) + framing + argv, argv)
            }
            None => (self.query.len(), 0),
        };
        // Redis's output: a 16 KiB buffer (`obl`), then a list of blocks
        // (`oll`, `omem`); `rbs` is the buffer's size.
        const BUF: usize = 16 * 1024;
        let pending = self.reply.pending();
        let beyond = pending.saturating_sub(BUF);
        format!(
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free={} argv-mem={} multi-mem={} rbs={} rbp={} obl={} oll={} omem={} tot-mem={} events=r cmd={} user={} redir={} resp={} lib-name={} lib-ver={}",
            self.id,
            self.addr,
            self.laddr,
            self.fd,
            self.name,
            (now_ms - self.created_ms).max(0) / 1000,
            (now_ms - self.last_interaction_ms).max(0) / 1000,
            flags,
            self.db,
            self.pubsub_counts.0,
            self.pubsub_counts.1,
            self.pubsub_counts.2,
            multi,
            qbuf,
            self.query.capacity().saturating_sub(self.query.len()),
            argv_mem,
            multi_mem,
            self.reply.buf.capacity(),
            pending.min(self.reply.buf.capacity()),
            pending.min(BUF),
            beyond.div_ceil(BUF),
            beyond,
            self.memory(),
            match self.last_cmd {
                (name, Some(sub)) => format!("{name}|{sub}"),
                (name, None) => name.to_string(),
            },
            self.user_name(),
            tracking.map_or(-1, |t| t.redirect.map_or(0, |r| r.client as i64)),
            if self.reply.resp3 { 3 } else { 2 },
            self.lib_name,
            self.lib_ver,
        )
    }
}

/// CLIENT REPLY's modes, as Redis's `CLIENT_REPLY_OFF` / `_SKIP_NEXT` /
/// `_SKIP` flags.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReplyMode {
    #[default]
    On,
    /// No replies until CLIENT REPLY ON.
    Off,
    /// CLIENT REPLY SKIP ran: the next command's reply is dropped.
    SkipNext,
    /// This command's reply is dropped.
    Skip,
}

impl ReplyMode {
    /// Whether the reply of a command running in this mode is dropped.
    pub fn drops(self) -> bool {
        matches!(self, ReplyMode::Off | ReplyMode::Skip)
    }

    /// After a command: whether its reply is dropped, and the mode for
    /// the next one (a SKIP covers exactly one command).
    pub fn after_command(self) -> (bool, ReplyMode) {
        match self {
            ReplyMode::On => (false, ReplyMode::On),
            ReplyMode::Off => (true, ReplyMode::Off),
            ReplyMode::SkipNext => (false, ReplyMode::Skip),
            ReplyMode::Skip => (true, ReplyMode::On),
        }
    }
}

/// The classes of client Redis applies output limits to and CLIENT LIST /
/// CLIENT KILL filter by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientType {
    Normal,
    /// A replica connected to this server.
    Replica,
    /// A client in subscribed mode (RESP2 SUBSCRIBE/PSUBSCRIBE).
    PubSub,
    /// This server's own connection to its primary.
    Master,
}

impl ClientType {
    /// Redis's `getClientTypeByName`: `replica` and `slave` are one type.
    pub fn from_name(name: &[u8]) -> Option<ClientType> {
        let known = [
            ("normal", ClientType::Normal),
            ("replica", ClientType::Replica),
            ("slave", ClientType::Replica),
            ("pubsub", ClientType::PubSub),
            ("master", ClientType::Master),
        ];
        known
            .iter()
            .find(|(n, _)| name.eq_ignore_ascii_case(n.as_bytes()))
            .map(|&(_, t)| t)
    }
}

/// Something that can show every other client's session (the server's
/// connection table), for CLIENT LIST.
pub trait Sessions {
    fn for_each_session(&self, f: &mut dyn FnMut(&Session));
    /// Every other client with its socket and connection token (to serve
    /// them while a script is busy). None by default.
    fn for_each_socket(&self, _f: &mut dyn FnMut(usize, &Session, &dyn PeerSocket)) {}
    /// Accepts the connections waiting on the listeners, handing each to
    /// `f` (while a script is busy, when the loop does not run). None by
    /// default.
    fn accept_waiting(&self, _f: &mut dyn FnMut(crate::net::Stream, crate::net::Peer)) {}
}

/// No other clients: for in-process tests.
impl Sessions for () {
    fn for_each_session(&self, _f: &mut dyn FnMut(&Session)) {}
}

#[cfg(test)]
mod query_buffer_tests {
    use super::*;

    #[test]
    fn an_idle_half_request_keeps_only_its_bytes() {
        let mut q = QueryBuffer::default();
        let half = b"*2\r\n$3\r\nGET\r\n$5\r\nab";
        q.spare()[..half.len()].copy_from_slice(half);
        q.commit(half.len());
        assert!(q.capacity() >= READ_CHUNK);
        q.shrink_idle();
        assert_eq!(q.data(), half);
        assert!(q.buf.capacity() <= half.len() + 16, "{}", q.buf.capacity());
        // The next read makes room again and completes the request.
        q.spare()[..3].copy_from_slice(b"c\r\n");
        q.commit(3);
        assert_eq!(&q.data()[half.len()..], b"c\r\n");
        q.consume(q.len());
        q.shrink_idle();
        assert_eq!(q.buf.capacity(), 0);
    }
}
