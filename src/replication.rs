//! Replication, the replica's side (Redis 7.0's protocol): `REPLICAOF
//! host port` makes this server a copy of another (redis-server or
//! lapse). Owns the role, the link's state and offsets, and the
//! handshake: PING, AUTH (`masterauth`/`masteruser`), REPLCONF
//! listening-port, REPLCONF capa eof psync2, PSYNC; then the RDB of a full
//! sync (`$<len>` from disk, or diskless `$EOF:<mark>`), loaded with every
//! key kept; then the primary's command stream, which the loop runs as
//! the master client (`Session::master`): nothing expires while it runs,
//! its replies are dropped, the bytes it consumed advance the offset that
//! `REPLCONF ACK` reports every second and on `REPLCONF GETACK`.
//!
//! The socket work is the loop's (`server`); this room parses what the
//! primary sends during the handshake (`Handshake`) and keeps the state
//! INFO replication and ROLE show.

use std::time::Instant;

use crate::propagate::Propagator;
use crate::protocol::encode_request;

/// The link to the primary, as ROLE and INFO name its states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// Not connected; the cron tries again.
    Connect,
    /// Connecting, or in the handshake.
    Connecting,
    /// Receiving the RDB of a full sync.
    Sync,
    /// Applying the command stream.
    Connected,
}

impl Link {
    pub fn name(self) -> &'static str {
        match self {
            Link::Connect => "connect",
            Link::Connecting => "connecting",
            Link::Sync => "sync",
            Link::Connected => "connected",
        }
    }
}

/// The replication state (`ServerState::repl`).
pub struct Replication {
    /// The primary this server replicates, when it is a replica.
    pub master: Option<(String, u16)>,
    pub link: Link,
    /// The primary's replication id and how far into its stream this
    /// replica has applied (`master_repl_offset` / `slave_repl_offset`).
    pub master_replid: String,
    pub offset: i64,
    /// The last time anything came from the primary.
    pub last_io: Instant,
    /// When the link last went down (`master_link_down_since_seconds`).
    pub down_since: Instant,
    /// This server's own replication id (a primary's, for ROLE/INFO).
    pub replid: String,
    /// Full syncs done as a replica (`sync_full` on the primary side).
    pub full_syncs: u64,
    /// Bumped by every REPLICAOF that changes the primary: the loop drops
    /// a link made for an older one.
    pub epoch: u64,
    /// The data is the primary's up to `offset` (the link dropped after a
    /// sync): the next handshake asks to continue from there (PSYNC
    /// <replid> <offset+1>) instead of a full sync.
    pub resumable: bool,
    /// The primary's side: the stream for replicas and its backlog, from
    /// the first replica on.
    pub feed: Option<Feed>,
    /// Full and partial syncs served (INFO stats `sync_full`,
    /// `sync_partial_ok`, `sync_partial_err`).
    pub sync_full: u64,
    pub sync_partial_ok: u64,
    pub sync_partial_err: u64,
    /// Clients in WAIT, answered by the loop.
    pub waits: Vec<Wait>,
    /// Online replicas that acknowledged within `min-replicas-max-lag`
    /// (counted by the cron; INFO's `min_slaves_good_slaves`).
    pub good_replicas: u64,
}

/// A client in WAIT: how many replicas must have acknowledged `target`,
/// until when (unix ms; `None`: no timeout).
#[derive(Debug, Clone)]
pub struct Wait {
    pub client: u64,
    pub token: usize,
    pub target: i64,
    pub replicas: usize,
    pub deadline_ms: Option<i64>,
}

impl Default for Replication {
    fn default() -> Self {
        Replication {
            master: None,
            link: Link::Connect,
            master_replid: String::new(),
            offset: 0,
            last_io: Instant::now(),
            down_since: Instant::now(),
            replid: random_replid(),
            full_syncs: 0,
            epoch: 0,
            resumable: false,
            feed: None,
            sync_full: 0,
            sync_partial_ok: 0,
            sync_partial_err: 0,
            waits: Vec::new(),
            good_replicas: 0,
        }
    }
}

impl Replication {
    pub fn is_replica(&self) -> bool {
        self.master.is_some()
    }

    /// The link went down (or a new primary was set): the cron connects.
    pub fn link_down(&mut self) {
        if self.link != Link::Connect {
            self.down_since = Instant::now();
        }
        // What was applied can be continued from, with the same primary.
        self.resumable = self.link == Link::Connected && !self.master_replid.is_empty();
        self.link = Link::Connect;
    }

    /// Where a handshake asks to continue from: the primary's replication
    /// id and the next offset wanted.
    pub fn resume_point(&self) -> Option<(String, i64)> {
        self.resumable
            .then(|| (self.master_replid.clone(), self.offset + 1))
    }
}

/// 40 random hex digits (Redis's `changeReplicationId`).
pub fn random_replid() -> String {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    (0..40)
        .map(|_| char::from_digit(rng.gen_range(0..16), 16).unwrap_or('0'))
        .collect()
}

/// The ACK a replica sends: `REPLCONF ACK <offset>`.
pub fn ack(offset: i64) -> Vec<u8> {
    let mut out = Vec::new();
    let offset = offset.to_string();
    encode_request(&[&b"REPLCONF"[..], b"ACK", offset.as_bytes()], &mut out);
    out
}

/// What the handshake expects next.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Pong,
    Auth,
    Port,
    Capa,
    Psync,
    /// The bulk header of the RDB (newlines before it are keep-alives).
    BulkHeader,
    /// `len` bytes of RDB.
    Bulk {
        len: usize,
    },
    /// RDB bytes up to the 40-byte `mark` (diskless sync).
    UntilMark {
        mark: Vec<u8>,
    },
}

/// What the handshake asks of the loop after some input.
#[derive(Debug, PartialEq, Eq)]
pub enum Progress {
    /// Wait for more input.
    More,
    /// Send these bytes, then wait for more input.
    Send(Vec<u8>),
    /// The primary continues the stream from this replica's offset
    /// (`+CONTINUE`): the data stays; `rest` is the stream's next bytes.
    Continued {
        replid: Option<String>,
        rest: Vec<u8>,
    },
    /// The full sync's RDB is complete: load it, then the rest of the
    /// input (`rest`) is the start of the command stream.
    Synced {
        replid: String,
        offset: i64,
        rdb: Vec<u8>,
        rest: Vec<u8>,
    },
}

/// The replica's side of the handshake and the full sync's transfer, over
/// the bytes the primary sends (the loop does the socket I/O).
pub struct Handshake {
    step: Step,
    auth: Option<(Option<String>, String)>,
    /// PSYNC's arguments: the primary's id and the offset to go on from,
    /// or a full sync (`?`, `-1`).
    resume: Option<(String, i64)>,
    port: u16,
    input: Vec<u8>,
    replid: String,
    offset: i64,
    rdb: Vec<u8>,
}

/// Longest line the primary may send during the handshake.
const MAX_LINE: usize = 64 * 1024;

impl Handshake {
    /// A handshake for a replica listening on `port`, authenticating as
    /// `auth` (user, password) when set. Returns it and the first bytes to
    /// send (PING).
    pub fn start(
        port: u16,
        auth: Option<(Option<String>, String)>,
        resume: Option<(String, i64)>,
    ) -> (Handshake, Vec<u8>) {
        let mut out = Vec::new();
        encode_request(&[&b"PING"[..]], &mut out);
        let handshake = Handshake {
            step: Step::Pong,
            auth,
            resume,
            port,
            input: Vec::new(),
            replid: String::new(),
            offset: -1,
            rdb: Vec::new(),
        };
        (handshake, out)
    }

    /// Whether the RDB is being received (INFO's `master_sync_in_progress`).
    pub fn transferring(&self) -> bool {
        matches!(self.step, Step::Bulk { .. } | Step::UntilMark { .. })
    }

    /// Takes `data` from the primary.
    pub fn feed(&mut self, data: &[u8]) -> Result<Progress, String> {
        self.input.extend_from_slice(data);
        let mut send = Vec::new();
        loop {
            match self.step.clone() {
                Step::Bulk { len } => {
                    let want = len - self.rdb.len();
                    let take = want.min(self.input.len());
                    self.rdb.extend(self.input.drain(..take));
                    if self.rdb.len() < len {
                        return Ok(progress(send));
                    }
                    return Ok(self.synced());
                }
                Step::UntilMark { mark } => {
                    // The mark may end in this read, or have straddled the
                    // last one; what follows it is the command stream.
                    let from = self.rdb.len().saturating_sub(mark.len() - 1);
                    self.rdb.append(&mut self.input);
                    let found = self.rdb[from..]
                        .windows(mark.len())
                        .position(|w| w == mark.as_slice());
                    if let Some(at) = found {
                        let end = from + at;
                        self.input = self.rdb.split_off(end + mark.len());
                        self.rdb.truncate(end);
                        return Ok(self.synced());
                    }
                    return Ok(progress(send));
                }
                _ => {}
            }
            let Some(end) = crate::protocol::request::memchr(b'\n', &self.input) else {
                if self.input.len() > MAX_LINE {
                    return Err("the primary sent a line too long".into());
                }
                return Ok(progress(send));
            };
            let line: Vec<u8> = self.input.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line).trim_end().to_string();
            if line.is_empty() {
                // A keep-alive while the primary prepares the sync.
                continue;
            }
            match self.step {
                Step::Pong => {
                    // An error about authentication is fine here: AUTH follows.
                    if line.starts_with('-')
                        && !line.starts_with("-NOAUTH")
                        && !line.starts_with("-NOPERM")
                        && !line.starts_with("-ERR operation not permitted")
                    {
                        return Err(format!("Error reply to PING from master: '{line}'"));
                    }
                    self.next_after_pong(&mut send);
                }
                Step::Auth => {
                    if line.starts_with('-') {
                        return Err(format!("Unable to AUTH to MASTER: {line}"));
                    }
                    self.send_port(&mut send);
                }
                Step::Port => {
                    // Errors are only logged: old primaries do not know it.
                    encode_request(
                        &[&b"REPLCONF"[..], b"capa", b"eof", b"capa", b"psync2"],
                        &mut send,
                    );
                    self.step = Step::Capa;
                }
                Step::Capa => {
                    match &self.resume {
                        Some((replid, offset)) => {
                            let offset = offset.to_string();
                            encode_request(
                                &[&b"PSYNC"[..], replid.as_bytes(), offset.as_bytes()],
                                &mut send,
                            )
                        }
                        None => encode_request(&[&b"PSYNC"[..], b"?", b"-1"], &mut send),
                    }
                    self.step = Step::Psync;
                }
                Step::Psync => {
                    let words: Vec<&str> = line.split(' ').collect();
                    match words.as_slice() {
                        ["+FULLRESYNC", replid, offset] => {
                            self.replid = replid.to_string();
                            self.offset = offset.parse().map_err(|_| {
                                format!("Bad offset in the primary's FULLRESYNC: '{line}'")
                            })?;
                            self.step = Step::BulkHeader;
                        }
                        ["+CONTINUE", rest @ ..] if self.resume.is_some() => {
                            // The stream goes on where this replica is;
                            // the primary may have a new id (psync2).
                            return Ok(Progress::Continued {
                                replid: rest.first().map(|r| r.to_string()),
                                rest: std::mem::take(&mut self.input),
                            });
                        }
                        _ => {
                            return Err(format!("Unexpected reply to PSYNC from master: '{line}'"))
                        }
                    }
                }
                Step::BulkHeader => {
                    if let Some(eof) = line.strip_prefix("$EOF:") {
                        if eof.len() != 40 {
                            return Err(format!("Bad EOF mark from the primary: '{line}'"));
                        }
                        self.step = Step::UntilMark {
                            mark: eof.as_bytes().to_vec(),
                        };
                    } else if let Some(len) = line.strip_prefix('$') {
                        let len = len
                            .parse::<usize>()
                            .map_err(|_| format!("Bad RDB length from the primary: '{line}'"))?;
                        self.step = Step::Bulk { len };
                    } else {
                        return Err(format!(
                            "Bad protocol from MASTER, the first byte is not '$' (we received '{line}'), are you sure the host and port are right?"
                        ));
                    }
                }
                Step::Bulk { .. } | Step::UntilMark { .. } => {}
            }
        }
    }

    fn next_after_pong(&mut self, send: &mut Vec<u8>) {
        match &self.auth {
            Some((user, password)) => {
                match user {
                    Some(user) => {
                        encode_request(&[&b"AUTH"[..], user.as_bytes(), password.as_bytes()], send)
                    }
                    None => encode_request(&[&b"AUTH"[..], password.as_bytes()], send),
                }
                self.step = Step::Auth;
            }
            None => self.send_port(send),
        }
    }

    fn send_port(&mut self, send: &mut Vec<u8>) {
        let port = self.port.to_string();
        encode_request(
            &[&b"REPLCONF"[..], b"listening-port", port.as_bytes()],
            send,
        );
        self.step = Step::Port;
    }

    fn synced(&mut self) -> Progress {
        Progress::Synced {
            replid: std::mem::take(&mut self.replid),
            offset: self.offset,
            rdb: std::mem::take(&mut self.rdb),
            rest: std::mem::take(&mut self.input),
        }
    }
}

fn progress(send: Vec<u8>) -> Progress {
    if send.is_empty() {
        Progress::More
    } else {
        Progress::Send(send)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(bytes: &[u8]) -> String {
        String::from_utf8_lossy(bytes)
            .split("\r\n")
            .filter(|w| !w.starts_with(['*', '$']) && !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn the_handshake_follows_redis_and_takes_either_transfer() {
        for diskless in [false, true] {
            let auth = Some((Some("repl".to_string()), "secret".to_string()));
            let (mut h, first) = Handshake::start(6380, auth, None);
            assert_eq!(words(&first), "PING");
            let Progress::Send(out) = h.feed(b"-NOAUTH Authentication required.\r\n").unwrap()
            else {
                panic!()
            };
            assert_eq!(words(&out), "AUTH repl secret");
            let Progress::Send(out) = h.feed(b"+OK\r\n").unwrap() else {
                panic!()
            };
            assert_eq!(words(&out), "REPLCONF listening-port 6380");
            let Progress::Send(out) = h.feed(b"+OK\r\n").unwrap() else {
                panic!()
            };
            assert_eq!(words(&out), "REPLCONF capa eof capa psync2");
            let Progress::Send(out) = h.feed(b"+OK\r\n").unwrap() else {
                panic!()
            };
            assert_eq!(words(&out), "PSYNC ? -1");
            let replid = "a".repeat(40);
            let reply = format!("\n+FULLRESYNC {replid} 1234\r\n\n\n");
            assert_eq!(h.feed(reply.as_bytes()).unwrap(), Progress::More);
            let mark = "m".repeat(40);
            let header = if diskless {
                format!("$EOF:{mark}\r\n")
            } else {
                "$9\r\n".to_string()
            };
            assert_eq!(h.feed(header.as_bytes()).unwrap(), Progress::More);
            assert!(h.transferring());
            assert_eq!(h.feed(b"REDIS").unwrap(), Progress::More);
            let tail = if diskless {
                format!("0010{mark}*1\r\n$4\r\nPING\r\n")
            } else {
                "0010*1\r\n$4\r\nPING\r\n".to_string()
            };
            assert_eq!(
                h.feed(tail.as_bytes()).unwrap(),
                Progress::Synced {
                    replid: replid.clone(),
                    offset: 1234,
                    rdb: b"REDIS0010".to_vec(),
                    rest: b"*1\r\n$4\r\nPING\r\n".to_vec(),
                }
            );
        }
    }

    #[test]
    fn a_resuming_replica_asks_to_continue() {
        let replid = "b".repeat(40);
        let (mut h, _) = Handshake::start(1, None, Some((replid.clone(), 501)));
        let Progress::Send(out) = h.feed(b"+PONG\r\n+OK\r\n+OK\r\n").unwrap() else {
            panic!()
        };
        assert!(words(&out).ends_with(&format!("PSYNC {replid} 501")));
        let new = "c".repeat(40);
        let reply = format!("+CONTINUE {new}\r\n*1\r\n$4\r\nPING\r\n");
        assert_eq!(
            h.feed(reply.as_bytes()).unwrap(),
            Progress::Continued {
                replid: Some(new),
                rest: b"*1\r\n$4\r\nPING\r\n".to_vec(),
            }
        );
    }

    #[test]
    fn a_refusing_primary_is_an_error() {
        let (mut h, _) = Handshake::start(1, None, None);
        assert!(h.feed(b"-ERR nope\r\n").is_err());
        let (mut h, _) = Handshake::start(1, None, None);
        h.feed(b"+PONG\r\n+OK\r\n+OK\r\n").unwrap();
        assert!(h
            .feed(b"-ERR Can't SYNC while not connected with my master\r\n")
            .is_err());
        let (mut h, _) = Handshake::start(1, None, None);
        h.feed(b"+PONG\r\n+OK\r\n+OK\r\n+FULLRESYNC x 0\r\n")
            .unwrap();
        assert!(h.feed(b"HTTP/1.1 400\r\n").is_err());
    }
}

// ---------------------------------------------------------------------
// The primary's side: replicas attached to this server.
// ---------------------------------------------------------------------

/// Where a replica of this server is in its sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaState {
    /// Asked for a full sync; waits for a background save to start.
    WaitBgsave,
    /// The save of its sync is being written (`save` is its number, see
    /// `Persistence::bgsaves_started`); the stream since waits in `held`.
    InBgsave { save: u64 },
    /// The RDB file is being sent.
    SendingRdb,
    /// A diskless sync: the RDB of save `save` goes to its socket as it is
    /// encoded, between `$EOF:<mark>` and the mark.
    StreamingRdb { save: u64 },
    /// The diskless RDB is out; the stream starts at its first `REPLCONF
    /// ACK` (until it has read the mark, bytes after it would be taken
    /// for RDB, as Redis's `repl_start_cmd_stream_on_ack`).
    WaitAck,
    /// Receives the stream as it happens.
    Online,
}

impl ReplicaState {
    /// INFO's `slaveN:...,state=`.
    pub fn name(self) -> &'static str {
        match self {
            ReplicaState::WaitBgsave
            | ReplicaState::InBgsave { .. }
            | ReplicaState::StreamingRdb { .. } => "wait_bgsave",
            ReplicaState::SendingRdb => "send_bulk",
            ReplicaState::WaitAck | ReplicaState::Online => "online",
        }
    }
}

/// A connection that is a replica of this server (`Session::replica`).
#[derive(Debug)]
pub struct ReplicaLink {
    pub state: ReplicaState,
    /// The stream since its sync's snapshot, while the RDB is not out yet.
    pub held: Vec<u8>,
    /// The offset it acknowledged last (REPLCONF ACK), and when.
    pub ack_offset: i64,
    pub last_ack: Instant,
    /// The RDB file being sent, and the bytes of it left.
    pub rdb: Option<(std::fs::File, u64)>,
    /// When it asked for a full sync (a diskless sync waits
    /// `repl-diskless-sync-delay` for others to join).
    pub since: Instant,
    /// The end mark of its diskless RDB.
    pub eof_mark: String,
    /// It asked with SYNC, not PSYNC: its RDB comes without a
    /// `+FULLRESYNC` line before it (Redis's `CLIENT_PRE_PSYNC`).
    pub pre_psync: bool,
}

impl ReplicaLink {
    pub fn new(state: ReplicaState) -> ReplicaLink {
        ReplicaLink {
            state,
            held: Vec::new(),
            ack_offset: 0,
            last_ack: Instant::now(),
            rdb: None,
            since: Instant::now(),
            eof_mark: String::new(),
            pre_psync: false,
        }
    }
}

/// The stream encoded for replicas since the loop last distributed it.
#[derive(Default)]
pub struct FeedBuffer {
    encoder: crate::propagate::StreamEncoder,
    pub pending: Vec<u8>,
}

impl FeedBuffer {
    /// A PING in the stream (Redis's `repl-ping-replica-period`): keeps
    /// replicas' links alive while nothing is written.
    pub fn ping(&mut self) {
        encode_request(&[&b"PING"[..]], &mut self.pending);
    }

    /// A full sync starts: what follows its snapshot selects its database.
    pub fn full_sync_started(&mut self) {
        self.encoder.forget_selected();
    }
}

/// The propagation point's consumer for replicas.
pub struct FeedSink(pub std::rc::Rc<std::cell::RefCell<FeedBuffer>>);

impl crate::propagate::Sink for FeedSink {
    fn feed(&mut self, effects: &[crate::propagate::Effect]) {
        let buffer = &mut *self.0.borrow_mut();
        buffer.encoder.encode(effects, &mut buffer.pending);
    }
}

/// The primary's stream history (`repl-backlog-size`): what a replica
/// that lost its link can continue from. A ring of bytes, written and
/// read with at most two copies.
pub struct Backlog {
    ring: Vec<u8>,
    /// Where the oldest byte kept is, and how many are kept.
    start: usize,
    len: usize,
    /// The stream offset of the first byte kept.
    pub first_offset: i64,
}

impl Backlog {
    pub fn new(capacity: usize, next_offset: i64) -> Backlog {
        Backlog {
            ring: vec![0; capacity.max(1)],
            start: 0,
            len: 0,
            first_offset: next_offset,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn capacity(&self) -> usize {
        self.ring.len()
    }

    /// The same history in a ring of `capacity` bytes (CONFIG SET
    /// repl-backlog-size): the newest bytes that fit stay.
    pub fn resize(&mut self, capacity: usize) {
        let mut resized = Backlog::new(capacity, self.first_offset);
        if let Some(kept) = self.since(self.first_offset) {
            resized.push(&kept);
        }
        *self = resized;
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds the stream's next bytes, forgetting the oldest past capacity.
    pub fn push(&mut self, mut data: &[u8]) {
        let capacity = self.ring.len();
        if data.len() >= capacity {
            // Only the newest `capacity` bytes can stay.
            let dropped = self.len + data.len() - capacity;
            data = &data[data.len() - capacity..];
            self.ring.copy_from_slice(data);
            self.start = 0;
            self.len = capacity;
            self.first_offset += dropped as i64;
            return;
        }
        let end = (self.start + self.len) % capacity;
        let first = data.len().min(capacity - end);
        self.ring[end..end + first].copy_from_slice(&data[..first]);
        self.ring[..data.len() - first].copy_from_slice(&data[first..]);
        let total = self.len + data.len();
        if total > capacity {
            let dropped = total - capacity;
            self.start = (self.start + dropped) % capacity;
            self.first_offset += dropped as i64;
            self.len = capacity;
        } else {
            self.len = total;
        }
    }

    /// The bytes from stream offset `from` (the next one a replica wants)
    /// to the end, if the backlog still has them.
    pub fn since(&self, from: i64) -> Option<Vec<u8>> {
        let end = self.first_offset + self.len as i64;
        if from < self.first_offset || from > end {
            return None;
        }
        let capacity = self.ring.len();
        let skip = (from - self.first_offset) as usize;
        let at = (self.start + skip) % capacity;
        let wanted = self.len - skip;
        let first = wanted.min(capacity - at);
        let mut out = Vec::with_capacity(wanted);
        out.extend_from_slice(&self.ring[at..at + first]);
        out.extend_from_slice(&self.ring[..wanted - first]);
        Some(out)
    }
}

/// What the primary side keeps (`Replication::feed`), made when the
/// first replica asks to sync.
pub struct Feed {
    pub buffer: std::rc::Rc<std::cell::RefCell<FeedBuffer>>,
    pub sink: crate::propagate::SinkId,
    pub backlog: Backlog,
}

/// The backlog's size as configured (`repl-backlog-size`).
pub fn backlog_bytes(config: &crate::config::Config) -> usize {
    usize::try_from(config.repl_backlog_size).unwrap_or(usize::MAX)
}

impl Replication {
    /// Makes the primary's side (the feed from the propagation point and
    /// a backlog of `backlog_bytes`) when the first replica asks for it;
    /// false if it was there.
    pub fn start_feed(&mut self, propagate: &mut Propagator, backlog_bytes: usize) -> bool {
        if self.feed.is_some() {
            return false;
        }
        let buffer = std::rc::Rc::new(std::cell::RefCell::new(FeedBuffer::default()));
        let sink = propagate.attach(Box::new(FeedSink(std::rc::Rc::clone(&buffer))));
        self.feed = Some(Feed {
            buffer,
            sink,
            backlog: Backlog::new(backlog_bytes, self.offset + 1),
        });
        tracing::info!(
            "Replication backlog created, my new replication ID is '{}'",
            self.replid
        );
        true
    }
}

/// The offset the stream will have once what is written so far is out.
pub fn written_offset(repl: &Replication) -> i64 {
    repl.offset
        + repl
            .feed
            .as_ref()
            .map_or(0, |f| f.buffer.borrow().pending.len() as i64)
}

/// Asks every replica for its offset through the stream (`REPLCONF
/// GETACK *`), as Redis does for WAIT.
pub fn request_acks(repl: &mut Replication) {
    if let Some(feed) = &repl.feed {
        encode_request(
            &[&b"REPLCONF"[..], b"GETACK", b"*"],
            &mut feed.buffer.borrow_mut().pending,
        );
    }
}

/// Takes the stream written since the last call: the offset advances
/// and the backlog keeps it; the caller hands it to the replicas.
pub fn take_stream(repl: &mut Replication) -> Vec<u8> {
    let Some(feed) = repl.feed.as_mut() else {
        return Vec::new();
    };
    let bytes = std::mem::take(&mut feed.buffer.borrow_mut().pending);
    repl.offset += bytes.len() as i64;
    feed.backlog.push(&bytes);
    bytes
}

#[cfg(test)]
mod primary_tests {
    use super::*;

    #[test]
    fn the_backlog_keeps_the_newest_bytes_and_their_offsets() {
        let mut b = Backlog::new(10, 101);
        b.push(b"abcdef");
        let mut smaller = Backlog::new(10, 101);
        smaller.push(b"abcdef");
        smaller.resize(4);
        assert_eq!(
            (smaller.first_offset, smaller.since(103).unwrap()),
            (103, b"cdef".to_vec())
        );
        smaller.resize(8);
        smaller.push(b"gh");
        assert_eq!(smaller.since(103).unwrap(), b"cdefgh");
        assert_eq!(b.since(101).unwrap(), b"abcdef");
        assert_eq!(b.since(104).unwrap(), b"def");
        assert_eq!(b.since(107).unwrap(), b"");
        assert_eq!(b.since(108), None);
        b.push(b"ghijkl");
        assert_eq!(b.first_offset, 103);
        assert_eq!(b.since(102), None);
        assert_eq!(b.since(103).unwrap(), b"cdefghijkl");
        // Wrapping around, and a push bigger than the whole ring.
        b.push(b"mn");
        assert_eq!(b.since(105).unwrap(), b"efghijklmn");
        assert_eq!(b.since(110).unwrap(), b"jklmn");
        b.push(b"0123456789ABC");
        assert_eq!(b.first_offset, 118);
        assert_eq!(b.since(118).unwrap(), b"3456789ABC");
        assert_eq!(b.since(117), None);
    }

    #[test]
    fn the_backlog_matches_a_model_under_random_pushes() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut b = Backlog::new(64, 1);
        let mut all: Vec<u8> = Vec::new();
        for _ in 0..2000 {
            let n = rng.gen_range(0..100);
            let data: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
            b.push(&data);
            all.extend_from_slice(&data);
            let kept = all.len().min(64);
            assert_eq!(b.len(), kept);
            assert_eq!(b.first_offset, (all.len() - kept) as i64 + 1);
            let from = b.first_offset + rng.gen_range(0..=kept as i64);
            let start = (from - 1) as usize;
            assert_eq!(b.since(from).unwrap(), all[start..]);
        }
    }
}
