//! The other clients while a script runs past `busy-reply-threshold`.
//!
//! Redis keeps reading its clients then: each request is refused with
//! `-BUSY`, except SCRIPT KILL / FUNCTION KILL (which stop a script that
//! has not written) and SHUTDOWN NOSAVE; what may be served is what the
//! command table marks `allow_busy`. The script holds the keyspace
//! and the caller's session, so this room works beside the connection
//! table rather than in it: it reads the sockets it is lent, keeps what it
//! read and what it answered in buffers of its own, and hands both back
//! when the script ends ([`Busy::finish`]); the server then writes what is
//! left and executes any request kept for after the script.
//!
//! Clients that connect meanwhile are accepted (the server lends its
//! listeners) and served the same way; the server gives them their place
//! in its connection table when the script ends.
//!
//! Only clients in a plain state are read (no request half read, not
//! blocked or subscribed, logged in); replies queued for them before the
//! script are written first. Transactions go on as in Redis: MULTI and
//! DISCARD are served, a command refused with -BUSY inside MULTI dooms
//! the transaction, and a refused EXEC discards it
//! (`-EXECABORT Transaction discarded because of: BUSY ...`); what became
//! of the client's transaction is handed back with the rest
//! ([`TransactionChange`]), so none runs half refused.
//! Any other `allow_busy` request (WATCH, AUTH, HELLO, ...) stops reading
//! that client until the script ends; it then runs as if it had just
//! arrived.

use std::collections::HashMap;
use std::io::ErrorKind;

use crate::command_table::{self, Flags};
use crate::connection::{Session, READ_CHUNK};
use crate::net::{Peer, PeerSocket, Stream};
use crate::protocol::{Parsed, RequestParser};
use crate::scripting::RunningScript;

/// Redis's replies to anything else while a script is busy.
const BUSY_EVAL: &[u8] =
    b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";
const BUSY_FUNCTION: &[u8] =
    b"-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n";
const UNKILLABLE: &[u8] = b"-UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.\r\n";

/// What a round of serving decided about the script (the later, the
/// stronger: one client's SHUTDOWN NOSAVE outweighs another's KILL).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Continue,
    /// SCRIPT KILL or FUNCTION KILL was accepted.
    Kill,
    /// SHUTDOWN NOSAVE: stop the script and the server.
    Shutdown,
}

/// What happened to one client while the script ran.
#[derive(Debug, Default)]
pub struct Leftover {
    /// Bytes read and not answered (a partial request, or the requests
    /// from one that waits for the script's end on).
    pub input: Vec<u8>,
    /// Bytes of the client's queued replies written meanwhile.
    pub sent: usize,
    /// Answers not yet written.
    pub output: Vec<u8>,
    /// The client hung up, broke the protocol or sent too much.
    pub close: bool,
    /// What became of the client's transaction.
    pub transaction: TransactionChange,
    /// A request waits for the script's end.
    waiting: bool,
    parser: RequestParser,
}

/// What MULTI, DISCARD and refused commands did to a client's transaction
/// while the script ran, for the server to apply when it ends.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TransactionChange {
    /// The transaction open before the script was discarded (by DISCARD
    /// or a refused EXEC): it ends, and its watched keys are forgotten.
    pub discarded: bool,
    /// A transaction is open now (the one from before, or one MULTI
    /// opened meanwhile).
    pub open: bool,
    /// A command was refused while it is open: its EXEC aborts.
    pub doomed: bool,
}

impl TransactionChange {
    /// DISCARD, or a refused EXEC: no transaction, no watched keys.
    fn discard(&mut self) {
        *self = TransactionChange {
            discarded: true,
            ..TransactionChange::default()
        };
    }
}

/// A client that connected while the script ran: the server gives it its
/// place in the connection table when the script ends.
pub struct Arrival {
    pub socket: Stream,
    pub peer: Peer,
    pub left: Leftover,
}

#[derive(Default)]
pub struct Busy {
    clients: HashMap<usize, Leftover>,
    arrivals: Vec<Arrival>,
}

impl std::fmt::Debug for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Busy({} clients, {} arrivals)",
            self.clients.len(),
            self.arrivals.len()
        )
    }
}

impl Busy {
    /// Whether this room has anything to hand back.
    pub fn has_leftovers(&self) -> bool {
        !self.clients.is_empty() || !self.arrivals.is_empty()
    }

    /// The clients served while the script ran, by connection token, and
    /// those that connected meanwhile.
    pub fn finish(&mut self) -> (Vec<(usize, Leftover)>, Vec<Arrival>) {
        (
            self.clients.drain().collect(),
            std::mem::take(&mut self.arrivals),
        )
    }

    /// One round: reads every client that may be served and answers its
    /// complete requests. `max_query` bounds what one client may send.
    pub fn serve(
        &mut self,
        token: usize,
        session: &Session,
        socket: &dyn PeerSocket,
        script: &RunningScript,
        max_query: u64,
        stats: &FunctionStats,
    ) -> Verdict {
        let idle = session.blocked.is_none()
            && !session.is_subscribed()
            && session.query.is_empty()
            && session.authenticated
            && !session.close_after_reply;
        if !idle {
            return Verdict::Continue;
        }
        // What was queued for the client before the script comes first.
        let queued = &session.reply.buf[session.reply.sent..];
        let client = self.clients.entry(token).or_insert_with(|| Leftover {
            transaction: TransactionChange {
                open: session.multi.is_some(),
                ..TransactionChange::default()
            },
            ..Leftover::default()
        });
        let resp3 = session.reply.resp3;
        client.exchange(socket, queued, script, max_query, (resp3, stats))
    }

    /// A client accepted (and counted) while the script runs: it is served
    /// from now on as the others are, unless it must log in first (then
    /// what it sends waits for the script's end, AUTH included, as other
    /// clients' non-busy requests do).
    pub fn arrive(&mut self, socket: Stream, peer: Peer, authenticated: bool) {
        let left = Leftover {
            waiting: !authenticated,
            ..Leftover::default()
        };
        self.arrivals.push(Arrival { socket, peer, left });
    }

    /// One round over the clients that connected while the script runs.
    pub fn serve_arrivals(
        &mut self,
        script: &RunningScript,
        max_query: u64,
        stats: &FunctionStats,
    ) -> Verdict {
        let mut verdict = Verdict::Continue;
        for arrival in &mut self.arrivals {
            let v = arrival
                .left
                .exchange(&arrival.socket, &[], script, max_query, (false, stats));
            verdict = verdict.max(v);
        }
        verdict
    }
}

impl Leftover {
    /// Reads what the client sent, answers its complete requests, and
    /// writes `queued` (what it was owed before the script; `sent` counts
    /// how much of it went out), then the answers.
    fn exchange(
        &mut self,
        socket: &dyn PeerSocket,
        queued: &[u8],
        script: &RunningScript,
        max_query: u64,
        stats: (bool, &FunctionStats),
    ) -> Verdict {
        if self.close || self.waiting {
            return Verdict::Continue;
        }
        let mut chunk = [0u8; READ_CHUNK];
        loop {
            match socket.read_into(&mut chunk) {
                Ok(0) => {
                    self.close = true;
                    break;
                }
                Ok(n) => {
                    self.input.extend_from_slice(&chunk[..n]);
                    if self.input.len() as u64 > max_query {
                        self.close = true;
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    self.close = true;
                    break;
                }
            }
        }
        let verdict = self.answer(script, stats);
        while self.sent < queued.len() {
            match socket.write_from(&queued[self.sent..]) {
                Ok(0) => return verdict,
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return verdict,
            }
        }
        while !self.output.is_empty() {
            match socket.write_from(&self.output) {
                Ok(0) => break,
                Ok(n) => {
                    self.output.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        verdict
    }
}

/// FUNCTION STATS's reply while a function is busy, in RESP3 or not
/// (`None` while an EVAL script is: then it is -BUSY, as in Redis).
pub type FunctionStats<'a> = dyn Fn(bool) -> Option<Vec<u8>> + 'a;

/// What one request read while a script is busy gets.
enum Answer {
    Reply(&'static [u8]),
    Owned(Vec<u8>),
    /// +OK, and the script is stopped.
    Kill,
    Shutdown,
    /// It waits (with what follows it) for the script's end.
    AfterScript,
}

fn decide(
    args: &crate::protocol::Args,
    script: &RunningScript,
    (resp3, stats): (bool, &FunctionStats),
    transaction: &mut TransactionChange,
) -> Answer {
    let busy = if script.eval {
        BUSY_EVAL
    } else {
        BUSY_FUNCTION
    };
    let Some(top) = command_table::lookup(&args[0]) else {
        return Answer::Reply(busy);
    };
    let cmd = match args.len() {
        2.. if !top.subcommands.is_empty() => top.subcommand(&args[1]).unwrap_or(top),
        _ => top,
    };
    if !cmd.flags.has(Flags::ALLOW_BUSY) {
        // Redis's `rejectCommand`: a refused EXEC discards its
        // transaction and watched keys, saying why (in MULTI or not); any
        // other refusal dooms the transaction.
        if cmd.name == "exec" {
            transaction.discard();
            let why = &busy[1..busy.len() - 2];
            let mut reply = b"-EXECABORT Transaction discarded because of: ".to_vec();
            reply.extend_from_slice(why);
            reply.extend_from_slice(b"\r\n");
            return Answer::Owned(reply);
        }
        transaction.doomed |= transaction.open;
        return Answer::Reply(busy);
    }
    match (top.name, cmd.name, transaction.open) {
        ("multi", _, true) => Answer::Reply(b"-ERR MULTI calls can not be nested\r\n"),
        ("multi", _, false) => {
            transaction.open = true;
            Answer::Reply(b"+OK\r\n")
        }
        ("discard", _, true) => {
            transaction.discard();
            Answer::Reply(b"+OK\r\n")
        }
        ("discard", _, false) => Answer::Reply(b"-ERR DISCARD without MULTI\r\n"),
        ("watch", _, true) => Answer::Reply(b"-ERR WATCH inside MULTI is not allowed\r\n"),
        // Anything else in a transaction (queued, in Redis) waits.
        (_, _, true) => Answer::AfterScript,
        _ => decide_plain(top, cmd, args, script, (resp3, stats), busy),
    }
}

/// The `allow_busy` commands outside a transaction.
fn decide_plain(
    top: &command_table::Command,
    cmd: &command_table::Command,
    args: &crate::protocol::Args,
    script: &RunningScript,
    (resp3, stats): (bool, &FunctionStats),
    busy: &'static [u8],
) -> Answer {
    let is = |a: &[u8], b: &str| a.eq_ignore_ascii_case(b.as_bytes());
    match (top.name, cmd.name) {
        (_, "kill") => {
            if script.wrote {
                Answer::Reply(UNKILLABLE)
            } else if (top.name == "script") != script.eval {
                // SCRIPT KILL stops only EVAL, FUNCTION KILL only FCALL.
                Answer::Reply(busy)
            } else {
                Answer::Kill
            }
        }
        ("function", "stats") => match stats(resp3) {
            Some(reply) => Answer::Owned(reply),
            None => Answer::Reply(BUSY_EVAL),
        },
        ("shutdown", _) if args.iter().skip(1).any(|a| is(a, "nosave")) => Answer::Shutdown,
        ("shutdown", _) => Answer::Reply(busy),
        _ => Answer::AfterScript,
    }
}

impl Leftover {
    /// Answers the complete requests read so far.
    fn answer(&mut self, script: &RunningScript, stats: (bool, &FunctionStats)) -> Verdict {
        let mut verdict = Verdict::Continue;
        let mut offset = 0;
        while !self.close && !self.waiting {
            match self.parser.parse(&self.input[offset..]) {
                Ok(Parsed::Incomplete) => break,
                Ok(Parsed::Complete { consumed }) => {
                    let args = self.parser.args(&self.input[offset..]);
                    if args.is_empty() {
                        offset += consumed;
                        continue;
                    }
                    match decide(&args, script, stats, &mut self.transaction) {
                        Answer::Reply(reply) => self.output.extend_from_slice(reply),
                        Answer::Owned(reply) => self.output.extend_from_slice(&reply),
                        Answer::Kill => {
                            self.output.extend_from_slice(b"+OK\r\n");
                            verdict = Verdict::Kill;
                        }
                        Answer::Shutdown => return Verdict::Shutdown,
                        Answer::AfterScript => {
                            self.waiting = true;
                            break;
                        }
                    }
                    offset += consumed;
                }
                Err(e) => {
                    self.output.extend_from_slice(
                        format!("-ERR Protocol error: {}\r\n", e.message()).as_bytes(),
                    );
                    self.close = true;
                }
            }
        }
        self.input.drain(..offset);
        verdict
    }
}
