//! Transactions over TCP (issue 13): MULTI/EXEC/DISCARD/WATCH replies and
//! errors, and exactly which changes doom a WATCH (writes from another
//! client, FLUSHDB/FLUSHALL/SWAPDB/MOVE/RENAME, expiry), recorded from
//! redis-server 7.0.15 with two clients. The transcript is replayed
//! against lapse, and against redis-server where it is installed so the
//! recording cannot drift from the real thing.

mod common;

use common::{replay_transcript, Server, Step};

const TRANSCRIPT: &[Step] = &[
    Step::Cmd(0, &["FLUSHALL"], b"+OK\r\n"),
    Step::Cmd(0, &["EXEC"], b"-ERR EXEC without MULTI\r\n"),
    Step::Cmd(0, &["DISCARD"], b"-ERR DISCARD without MULTI\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["MULTI"], b"-ERR MULTI calls can not be nested\r\n"),
    Step::Cmd(0, &["SET", "a", "1"], b"+QUEUED\r\n"),
    Step::Cmd(0, &["INCR", "a"], b"+QUEUED\r\n"),
    Step::Cmd(0, &["LPUSH", "a", "x"], b"+QUEUED\r\n"),
    Step::Cmd(0, &["GET", "a"], b"+QUEUED\r\n"),
    Step::Cmd(0, &["WATCH", "a"], b"-ERR WATCH inside MULTI is not allowed\r\n"),
    Step::Cmd(0, &["EXEC"], b"*4\r\n+OK\r\n:2\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n$1\r\n2\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["SET", "b", "1"], b"+QUEUED\r\n"),
    Step::Cmd(0, &["NOSUCHCOMMAND", "x"], b"-ERR unknown command 'NOSUCHCOMMAND', with args beginning with: 'x' \r\n"),
    Step::Cmd(0, &["GET"], b"-ERR wrong number of arguments for 'get' command\r\n"),
    Step::Cmd(0, &["EXEC"], b"-EXECABORT Transaction discarded because of previous errors.\r\n"),
    Step::Cmd(0, &["GET", "b"], b"$-1\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["SET", "b", "1"], b"+QUEUED\r\n"),
    Step::Cmd(0, &["DISCARD"], b"+OK\r\n"),
    Step::Cmd(0, &["GET", "b"], b"$-1\r\n"),
    Step::Cmd(0, &["WATCH", "k"], b"+OK\r\n"),
    Step::Cmd(1, &["SET", "k", "v"], b"+OK\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["SET", "k", "mine"], b"+QUEUED\r\n"),
    Step::Cmd(0, &["EXEC"], b"*-1\r\n"),
    Step::Cmd(0, &["GET", "k"], b"$1\r\nv\r\n"),
    Step::Cmd(0, &["WATCH", "k"], b"+OK\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["SET", "k", "mine"], b"+QUEUED\r\n"),
    Step::Cmd(0, &["EXEC"], b"*1\r\n+OK\r\n"),
    Step::Cmd(0, &["SADD", "s", "m"], b":1\r\n"),
    Step::Cmd(0, &["HSET", "h", "f", "v"], b":1\r\n"),
    Step::Cmd(0, &["WATCH", "s", "h", "nokey"], b"+OK\r\n"),
    Step::Cmd(1, &["SADD", "s", "m"], b":0\r\n"),
    Step::Cmd(1, &["HDEL", "h", "zz"], b":0\r\n"),
    Step::Cmd(1, &["DEL", "nokey"], b":0\r\n"),
    Step::Cmd(1, &["GET", "s"], b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
    Step::Cmd(1, &["EXPIRE", "nokey", "10"], b":0\r\n"),
    Step::Cmd(1, &["SREM", "s", "zz"], b":0\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["PING"], b"+QUEUED\r\n"),
    Step::Cmd(0, &["EXEC"], b"*1\r\n+PONG\r\n"),
    Step::Cmd(0, &["WATCH", "s"], b"+OK\r\n"),
    Step::Cmd(1, &["SREM", "s", "m"], b":1\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["EXEC"], b"*-1\r\n"),
    Step::Cmd(0, &["SET", "x", "1"], b"+OK\r\n"),
    Step::Cmd(0, &["WATCH", "x"], b"+OK\r\n"),
    Step::Cmd(1, &["RENAME", "x", "y"], b"+OK\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["EXEC"], b"*-1\r\n"),
    Step::Cmd(0, &["WATCH", "y"], b"+OK\r\n"),
    Step::Cmd(1, &["MOVE", "y", "1"], b":1\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["EXEC"], b"*-1\r\n"),
    Step::Cmd(0, &["SET", "x", "1"], b"+OK\r\n"),
    Step::Cmd(0, &["WATCH", "x"], b"+OK\r\n"),
    Step::Cmd(1, &["FLUSHDB"], b"+OK\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["EXEC"], b"*-1\r\n"),
    Step::Cmd(0, &["WATCH", "x"], b"+OK\r\n"),
    Step::Cmd(1, &["FLUSHDB"], b"+OK\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["EXEC"], b"*0\r\n"),
    Step::Cmd(0, &["SET", "x", "1"], b"+OK\r\n"),
    Step::Cmd(0, &["WATCH", "x"], b"+OK\r\n"),
    Step::Cmd(1, &["FLUSHALL"], b"+OK\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["EXEC"], b"*-1\r\n"),
    Step::Cmd(1, &["SELECT", "1"], b"+OK\r\n"),
    Step::Cmd(1, &["SET", "z", "1"], b"+OK\r\n"),
    Step::Cmd(0, &["WATCH", "z"], b"+OK\r\n"),
    Step::Cmd(1, &["SWAPDB", "0", "1"], b"+OK\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["EXEC"], b"*-1\r\n"),
    Step::Cmd(1, &["FLUSHALL"], b"+OK\r\n"),
    Step::Cmd(1, &["SELECT", "0"], b"+OK\r\n"),
    Step::Cmd(0, &["SET", "x", "1"], b"+OK\r\n"),
    Step::Cmd(0, &["WATCH", "x"], b"+OK\r\n"),
    Step::Cmd(1, &["SELECT", "2"], b"+OK\r\n"),
    Step::Cmd(1, &["SET", "x", "2"], b"+OK\r\n"),
    Step::Cmd(1, &["SELECT", "0"], b"+OK\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["EXEC"], b"*0\r\n"),
    Step::Cmd(0, &["WATCH", "x"], b"+OK\r\n"),
    Step::Cmd(1, &["EXPIRE", "x", "100"], b":1\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["EXEC"], b"*-1\r\n"),
    Step::Cmd(0, &["WATCH", "x"], b"+OK\r\n"),
    Step::Cmd(1, &["PERSIST", "x"], b":1\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["EXEC"], b"*-1\r\n"),
    Step::Cmd(0, &["WATCH", "x"], b"+OK\r\n"),
    Step::Cmd(0, &["UNWATCH"], b"+OK\r\n"),
    Step::Cmd(1, &["SET", "x", "3"], b"+OK\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["EXEC"], b"*0\r\n"),
    Step::Cmd(0, &["WATCH", "x"], b"+OK\r\n"),
    Step::Cmd(1, &["SET", "x", "4"], b"+OK\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["DISCARD"], b"+OK\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["EXEC"], b"*0\r\n"),
    Step::Cmd(0, &["SET", "t", "1", "PX", "50"], b"+OK\r\n"),
    Step::Cmd(0, &["WATCH", "t"], b"+OK\r\n"),
    Step::Sleep(150),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["EXEC"], b"*-1\r\n"),
    Step::Cmd(0, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"], b"+OK\r\n"),
    Step::Cmd(0, &["SET", "u", "1", "PX", "20"], b"+OK\r\n"),
    Step::Sleep(60),
    Step::Cmd(0, &["WATCH", "u"], b"+OK\r\n"),
    Step::Cmd(1, &["DEL", "u"], b":0\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["EXEC"], b"*0\r\n"),
    Step::Cmd(0, &["SET", "u", "1", "PX", "20"], b"+OK\r\n"),
    Step::Sleep(60),
    Step::Cmd(0, &["WATCH", "u"], b"+OK\r\n"),
    Step::Cmd(1, &["SET", "u", "2"], b"+OK\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["EXEC"], b"*-1\r\n"),
    Step::Cmd(0, &["DEBUG", "SET-ACTIVE-EXPIRE", "1"], b"+OK\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["SET", "v", "abc"], b"+QUEUED\r\n"),
    Step::Cmd(0, &["INCR", "v"], b"+QUEUED\r\n"),
    Step::Cmd(0, &["LPUSH", "v", "1"], b"+QUEUED\r\n"),
    Step::Cmd(0, &["APPEND", "v", "d"], b"+QUEUED\r\n"),
    Step::Cmd(0, &["EXEC"], b"*4\r\n+OK\r\n-ERR value is not an integer or out of range\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n:4\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["WATCH", "v"], b"-ERR WATCH inside MULTI is not allowed\r\n"),
    Step::Cmd(0, &["GET", "v"], b"+QUEUED\r\n"),
    Step::Cmd(0, &["EXEC"], b"*1\r\n$4\r\nabcd\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["SELECT", "1"], b"+QUEUED\r\n"),
    Step::Cmd(0, &["SET", "in1", "x"], b"+QUEUED\r\n"),
    Step::Cmd(0, &["EXEC"], b"*2\r\n+OK\r\n+OK\r\n"),
    Step::Cmd(0, &["GET", "in1"], b"$1\r\nx\r\n"),
    Step::Cmd(0, &["SELECT", "0"], b"+OK\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["RESET"], b"+RESET\r\n"),
    Step::Cmd(0, &["EXEC"], b"-ERR EXEC without MULTI\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["EXEC"], b"*0\r\n"),
    // Commands flagged no-multi are refused while queueing, dooming it.
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["SET", "nm", "1"], b"+QUEUED\r\n"),
    Step::Cmd(0, &["SAVE"], b"-ERR Command not allowed inside a transaction\r\n"),
    Step::Cmd(0, &["SHUTDOWN"], b"-ERR Command not allowed inside a transaction\r\n"),
    Step::Cmd(0, &["EXEC"], b"-EXECABORT Transaction discarded because of previous errors.\r\n"),
    Step::Cmd(0, &["EXISTS", "nm"], b":0\r\n"),
    // EXEC is checked with the flags of what it queued: a write is
    // refused without enough replicas, reads are not.
    Step::Cmd(0, &["SET", "xx", "1"], b"+OK\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["INCR", "xx"], b"+QUEUED\r\n"),
    Step::Cmd(1, &["CONFIG", "SET", "min-replicas-to-write", "2"], b"+OK\r\n"),
    Step::Cmd(0, &["EXEC"], b"-EXECABORT Transaction discarded because of: NOREPLICAS Not enough good replicas to write.\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["GET", "xx"], b"+QUEUED\r\n"),
    Step::Cmd(0, &["EXEC"], b"*1\r\n$1\r\n1\r\n"),
    Step::Cmd(1, &["CONFIG", "SET", "min-replicas-to-write", "0"], b"+OK\r\n"),
];

#[test]
fn transactions_match_redis() {
    let lapse = Server::lapse(&[]);
    replay_transcript(lapse.port, 2, TRANSCRIPT, "lapse");
}

#[test]
fn recorded_transcript_is_redis_servers() {
    let Some(redis) = Server::redis() else {
        return;
    };
    replay_transcript(redis.port, 2, TRANSCRIPT, "redis-server");
}

/// A transaction's replies with the `redis` crate, as applications use it.
#[test]
fn a_client_library_runs_an_atomic_pipeline() {
    let lapse = Server::lapse(&[]);
    let mut con = lapse.client();
    let (a, b): (i64, i64) = redis::pipe()
        .atomic()
        .cmd("INCR")
        .arg("counter")
        .cmd("INCRBY")
        .arg("counter")
        .arg(10)
        .query(&mut con)
        .unwrap();
    assert_eq!((a, b), (1, 11));
}
