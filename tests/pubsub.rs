//! Pub/sub and keyspace notifications over TCP (issue 13): subscribed-mode
//! rules in RESP2 and RESP3, patterns, shard channels, PUBSUB, the
//! notifications every command emits, `expired` events on time, and a
//! subscriber that stops reading cut off by the pubsub output limit.
//! Transcripts were recorded from redis-server 7.0.15 and are checked
//! against it where it is installed.

mod common;

use std::time::{Duration, Instant};

use common::{eventually, info_field, replay_transcript, Raw, Server, Step};

const SUBSCRIBED_MODE: &[Step] = &[
    Step::Cmd(0, &["UNSUBSCRIBE"], b"*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:0\r\n"),
    Step::Cmd(0, &["PUNSUBSCRIBE"], b"*3\r\n$12\r\npunsubscribe\r\n$-1\r\n:0\r\n"),
    Step::Cmd(0, &["SUNSUBSCRIBE"], b"*3\r\n$12\r\nsunsubscribe\r\n$-1\r\n:0\r\n"),
    Step::Cmd(0, &["SUBSCRIBE", "c1", "c2"], b"*3\r\n$9\r\nsubscribe\r\n$2\r\nc1\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$2\r\nc2\r\n:2\r\n"),
    Step::Cmd(0, &["SUBSCRIBE", "c1"], b"*3\r\n$9\r\nsubscribe\r\n$2\r\nc1\r\n:2\r\n"),
    Step::Cmd(0, &["GET", "x"], b"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n"),
    Step::Cmd(0, &["CONFIG", "GET", "hz"], b"-ERR Can't execute 'config|get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n"),
    Step::Cmd(0, &["PING"], b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"),
    Step::Cmd(0, &["PING", "hi"], b"*2\r\n$4\r\npong\r\n$2\r\nhi\r\n"),
    Step::Cmd(0, &["PSUBSCRIBE", "c*", "d?"], b"*3\r\n$10\r\npsubscribe\r\n$2\r\nc*\r\n:3\r\n*3\r\n$10\r\npsubscribe\r\n$2\r\nd?\r\n:4\r\n"),
    Step::Cmd(1, &["PUBLISH", "c1", "hello"], b":2\r\n"),
    Step::Read(0, b"*3\r\n$7\r\nmessage\r\n$2\r\nc1\r\n$5\r\nhello\r\n*4\r\n$8\r\npmessage\r\n$2\r\nc*\r\n$2\r\nc1\r\n$5\r\nhello\r\n"),
    Step::Cmd(1, &["PUBLISH", "d1", "x"], b":1\r\n"),
    Step::Read(0, b"*4\r\n$8\r\npmessage\r\n$2\r\nd?\r\n$2\r\nd1\r\n$1\r\nx\r\n"),
    Step::Cmd(1, &["PUBLISH", "nobody", "x"], b":0\r\n"),
    Step::Cmd(1, &["PUBSUB", "NUMSUB", "c1", "zz"], b"*4\r\n$2\r\nc1\r\n:1\r\n$2\r\nzz\r\n:0\r\n"),
    Step::Cmd(1, &["PUBSUB", "NUMPAT"], b":2\r\n"),
    Step::Cmd(1, &["PUBSUB", "CHANNELS", "c2"], b"*1\r\n$2\r\nc2\r\n"),
    Step::Cmd(1, &["PUBSUB", "CHANNELS", "zz*"], b"*0\r\n"),
    Step::Cmd(1, &["PUBSUB", "CHANNELS", "a", "b"], b"-ERR unknown subcommand or wrong number of arguments for 'CHANNELS'. Try PUBSUB HELP.\r\n"),
    Step::Cmd(0, &["UNSUBSCRIBE", "c1", "nope"], b"*3\r\n$11\r\nunsubscribe\r\n$2\r\nc1\r\n:3\r\n*3\r\n$11\r\nunsubscribe\r\n$4\r\nnope\r\n:3\r\n"),
    Step::Cmd(0, &["PUNSUBSCRIBE", "d?"], b"*3\r\n$12\r\npunsubscribe\r\n$2\r\nd?\r\n:2\r\n"),
    Step::Cmd(0, &["SSUBSCRIBE", "s1"], b"*3\r\n$10\r\nssubscribe\r\n$2\r\ns1\r\n:1\r\n"),
    Step::Cmd(1, &["SPUBLISH", "s1", "m"], b":1\r\n"),
    Step::Read(0, b"*3\r\n$8\r\nsmessage\r\n$2\r\ns1\r\n$1\r\nm\r\n"),
    Step::Cmd(1, &["PUBSUB", "SHARDCHANNELS"], b"*1\r\n$2\r\ns1\r\n"),
    Step::Cmd(1, &["PUBSUB", "SHARDNUMSUB", "s1", "s2"], b"*4\r\n$2\r\ns1\r\n:1\r\n$2\r\ns2\r\n:0\r\n"),
    Step::Cmd(0, &["UNSUBSCRIBE"], b"*3\r\n$11\r\nunsubscribe\r\n$2\r\nc2\r\n:1\r\n"),
    Step::Cmd(0, &["PUNSUBSCRIBE"], b"*3\r\n$12\r\npunsubscribe\r\n$2\r\nc*\r\n:0\r\n"),
    Step::Cmd(0, &["GET", "x"], b"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n"),
    Step::Cmd(0, &["SUNSUBSCRIBE"], b"*3\r\n$12\r\nsunsubscribe\r\n$2\r\ns1\r\n:0\r\n"),
    Step::Cmd(0, &["GET", "x"], b"$-1\r\n"),
    Step::Cmd(0, &["SUBSCRIBE"], b"-ERR wrong number of arguments for 'subscribe' command\r\n"),
    Step::Cmd(0, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(0, &["SUBSCRIBE", "q"], b"+QUEUED\r\n"),
    Step::Cmd(0, &["EXEC"], b"*1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nq\r\n:1\r\n"),
    Step::Cmd(0, &["RESET"], b"+RESET\r\n"),
    Step::Cmd(0, &["GET", "x"], b"$-1\r\n"),
    Step::Skip(0, &["HELLO", "3", "SETNAME", "sub3"]),
    Step::Cmd(0, &["SUBSCRIBE", "c1"], b">3\r\n$9\r\nsubscribe\r\n$2\r\nc1\r\n:1\r\n"),
    Step::Cmd(0, &["SET", "x", "1"], b"+OK\r\n"),
    Step::Cmd(0, &["GET", "x"], b"$1\r\n1\r\n"),
    Step::Cmd(0, &["PING"], b"+PONG\r\n"),
    Step::Cmd(1, &["PUBLISH", "c1", "hello"], b":1\r\n"),
    Step::Read(0, b">3\r\n$7\r\nmessage\r\n$2\r\nc1\r\n$5\r\nhello\r\n"),
    Step::Cmd(0, &["PUBLISH", "c1", "self"], b">3\r\n$7\r\nmessage\r\n$2\r\nc1\r\n$4\r\nself\r\n:1\r\n"),
    Step::Cmd(0, &["RESET"], b"+RESET\r\n"),
];

#[test]
fn subscribed_mode_matches_redis() {
    let lapse = Server::lapse(&[]);
    lapse.raw().cmd(&["FLUSHALL"]);
    replay_transcript(lapse.port, 2, SUBSCRIBED_MODE, "lapse");
}

#[test]
fn recorded_subscribed_mode_is_redis_servers() {
    let Some(redis) = Server::redis() else {
        return;
    };
    redis.raw().cmd(&["FLUSHALL"]);
    replay_transcript(redis.port, 2, SUBSCRIBED_MODE, "redis-server");
}

/// CLIENT REPLY OFF / SKIP silence replies, not pushes: subscribe and
/// unsubscribe confirmations, messages (one's own PUBLISH in RESP3
/// included) and keyspace notifications still arrive, in RESP3 and RESP2
/// (Redis's `CLIENT_PUSHING`).
const REPLY_OFF: &[Step] = &[
    Step::Cmd(2, &["CONFIG", "SET", "notify-keyspace-events", "KEA"], b"+OK\r\n"),
    Step::Skip(0, &["HELLO", "3"]),
    Step::Send(0, &["CLIENT", "REPLY", "OFF"]),
    Step::Send(0, &["SUBSCRIBE", "ch"]),
    Step::Send(0, &["PSUBSCRIBE", "__keyspace@0__:*"]),
    Step::Send(0, &["SET", "k", "v"]),
    Step::Send(0, &["PUBLISH", "ch", "self"]),
    Step::Send(0, &["GET", "k"]),
    Step::Cmd(0, &["CLIENT", "REPLY", "ON"], b">3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n>3\r\n$10\r\npsubscribe\r\n$16\r\n__keyspace@0__:*\r\n:2\r\n>4\r\n$8\r\npmessage\r\n$16\r\n__keyspace@0__:*\r\n$16\r\n__keyspace@0__:k\r\n$3\r\nset\r\n>3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$4\r\nself\r\n+OK\r\n"),
    Step::Send(0, &["CLIENT", "REPLY", "SKIP"]),
    Step::Send(0, &["UNSUBSCRIBE", "ch"]),
    Step::Cmd(0, &["PING"], b">3\r\n$11\r\nunsubscribe\r\n$2\r\nch\r\n:1\r\n+PONG\r\n"),
    Step::Send(0, &["CLIENT", "REPLY", "OFF"]),
    Step::Cmd(2, &["SET", "k", "w"], b"+OK\r\n"),
    Step::Read(0, b">4\r\n$8\r\npmessage\r\n$16\r\n__keyspace@0__:*\r\n$16\r\n__keyspace@0__:k\r\n$3\r\nset\r\n"),
    Step::Send(0, &["PUNSUBSCRIBE"]),
    Step::Cmd(0, &["CLIENT", "REPLY", "ON"], b">3\r\n$12\r\npunsubscribe\r\n$16\r\n__keyspace@0__:*\r\n:0\r\n+OK\r\n"),
    Step::Send(1, &["CLIENT", "REPLY", "OFF"]),
    Step::Send(1, &["SUBSCRIBE", "c2"]),
    Step::Send(1, &["PING"]),
    Step::Cmd(2, &["PUBLISH", "c2", "hello"], b":1\r\n"),
    Step::Read(1, b"*3\r\n$9\r\nsubscribe\r\n$2\r\nc2\r\n:1\r\n*3\r\n$7\r\nmessage\r\n$2\r\nc2\r\n$5\r\nhello\r\n"),
    Step::Send(1, &["UNSUBSCRIBE"]),
    Step::Cmd(1, &["CLIENT", "REPLY", "ON"], b"*3\r\n$11\r\nunsubscribe\r\n$2\r\nc2\r\n:0\r\n+OK\r\n"),
    Step::Cmd(2, &["CONFIG", "SET", "notify-keyspace-events", ""], b"+OK\r\n"),
];

#[test]
fn pushes_pass_client_reply_off_and_skip_as_in_redis() {
    for (server, who) in Server::lapse_then_redis()
        .iter()
        .zip(["lapse", "redis-server"])
    {
        replay_transcript(server.port, 3, REPLY_OFF, who);
    }
}

type Notified = (&'static str, &'static [(&'static str, &'static str)]);

/// Each command (run in order, from an empty server, active expiry off)
/// and the notifications it publishes with `notify-keyspace-events KEAnm`.
const NOTIFIED_KEANM: &[Notified] = &[
    (
        "SET k v",
        &[
            ("__keyspace@0__:k", "new"),
            ("__keyevent@0__:new", "k"),
            ("__keyspace@0__:k", "set"),
            ("__keyevent@0__:set", "k"),
        ],
    ),
    (
        "SET k v EX 100",
        &[
            ("__keyspace@0__:k", "set"),
            ("__keyevent@0__:set", "k"),
            ("__keyspace@0__:k", "expire"),
            ("__keyevent@0__:expire", "k"),
        ],
    ),
    ("SET k v NX", &[]),
    (
        "SETNX n 1",
        &[
            ("__keyspace@0__:n", "new"),
            ("__keyevent@0__:new", "n"),
            ("__keyspace@0__:n", "set"),
            ("__keyevent@0__:set", "n"),
        ],
    ),
    (
        "SETEX e 100 v",
        &[
            ("__keyspace@0__:e", "new"),
            ("__keyevent@0__:new", "e"),
            ("__keyspace@0__:e", "set"),
            ("__keyevent@0__:set", "e"),
            ("__keyspace@0__:e", "expire"),
            ("__keyevent@0__:expire", "e"),
        ],
    ),
    (
        "PSETEX e 100 v",
        &[
            ("__keyspace@0__:e", "set"),
            ("__keyevent@0__:set", "e"),
            ("__keyspace@0__:e", "expire"),
            ("__keyevent@0__:expire", "e"),
        ],
    ),
    (
        "GETEX k PX 5000",
        &[
            ("__keyspace@0__:k", "expire"),
            ("__keyevent@0__:expire", "k"),
        ],
    ),
    (
        "GETEX k PERSIST",
        &[
            ("__keyspace@0__:k", "persist"),
            ("__keyevent@0__:persist", "k"),
        ],
    ),
    (
        "GETEX k EXAT 1",
        &[("__keyspace@0__:k", "del"), ("__keyevent@0__:del", "k")],
    ),
    (
        "GETDEL n",
        &[("__keyspace@0__:n", "del"), ("__keyevent@0__:del", "n")],
    ),
    (
        "GETSET g 1",
        &[
            ("__keyspace@0__:g", "keymiss"),
            ("__keyevent@0__:keymiss", "g"),
            ("__keyspace@0__:g", "new"),
            ("__keyevent@0__:new", "g"),
            ("__keyspace@0__:g", "set"),
            ("__keyevent@0__:set", "g"),
        ],
    ),
    (
        "MSET a 1 b 2",
        &[
            ("__keyspace@0__:a", "new"),
            ("__keyevent@0__:new", "a"),
            ("__keyspace@0__:a", "set"),
            ("__keyevent@0__:set", "a"),
            ("__keyspace@0__:b", "new"),
            ("__keyevent@0__:new", "b"),
            ("__keyspace@0__:b", "set"),
            ("__keyevent@0__:set", "b"),
        ],
    ),
    (
        "MSETNX c 1 d 2",
        &[
            ("__keyspace@0__:c", "new"),
            ("__keyevent@0__:new", "c"),
            ("__keyspace@0__:c", "set"),
            ("__keyevent@0__:set", "c"),
            ("__keyspace@0__:d", "new"),
            ("__keyevent@0__:new", "d"),
            ("__keyspace@0__:d", "set"),
            ("__keyevent@0__:set", "d"),
        ],
    ),
    (
        "APPEND a x",
        &[
            ("__keyspace@0__:a", "append"),
            ("__keyevent@0__:append", "a"),
        ],
    ),
    (
        "SETRANGE a 1 y",
        &[
            ("__keyspace@0__:a", "setrange"),
            ("__keyevent@0__:setrange", "a"),
        ],
    ),
    (
        "INCR i",
        &[
            ("__keyspace@0__:i", "new"),
            ("__keyevent@0__:new", "i"),
            ("__keyspace@0__:i", "incrby"),
            ("__keyevent@0__:incrby", "i"),
        ],
    ),
    (
        "DECR i",
        &[
            ("__keyspace@0__:i", "incrby"),
            ("__keyevent@0__:incrby", "i"),
        ],
    ),
    (
        "INCRBY i 5",
        &[
            ("__keyspace@0__:i", "incrby"),
            ("__keyevent@0__:incrby", "i"),
        ],
    ),
    (
        "DECRBY i 5",
        &[
            ("__keyspace@0__:i", "incrby"),
            ("__keyevent@0__:incrby", "i"),
        ],
    ),
    (
        "INCRBYFLOAT f 1.5",
        &[
            ("__keyspace@0__:f", "new"),
            ("__keyevent@0__:new", "f"),
            ("__keyspace@0__:f", "incrbyfloat"),
            ("__keyevent@0__:incrbyfloat", "f"),
        ],
    ),
    (
        "DEL a b nokey",
        &[
            ("__keyspace@0__:a", "del"),
            ("__keyevent@0__:del", "a"),
            ("__keyspace@0__:b", "del"),
            ("__keyevent@0__:del", "b"),
        ],
    ),
    (
        "UNLINK c",
        &[("__keyspace@0__:c", "del"), ("__keyevent@0__:del", "c")],
    ),
    (
        "RENAME d d2",
        &[
            ("__keyspace@0__:d2", "new"),
            ("__keyevent@0__:new", "d2"),
            ("__keyspace@0__:d", "rename_from"),
            ("__keyevent@0__:rename_from", "d"),
            ("__keyspace@0__:d2", "rename_to"),
            ("__keyevent@0__:rename_to", "d2"),
        ],
    ),
    (
        "RENAME d2 d3",
        &[
            ("__keyspace@0__:d3", "new"),
            ("__keyevent@0__:new", "d3"),
            ("__keyspace@0__:d2", "rename_from"),
            ("__keyevent@0__:rename_from", "d2"),
            ("__keyspace@0__:d3", "rename_to"),
            ("__keyevent@0__:rename_to", "d3"),
        ],
    ),
    (
        "COPY d3 d4",
        &[
            ("__keyspace@0__:d4", "new"),
            ("__keyevent@0__:new", "d4"),
            ("__keyspace@0__:d4", "copy_to"),
            ("__keyevent@0__:copy_to", "d4"),
        ],
    ),
    (
        "COPY d3 d4 REPLACE",
        &[
            ("__keyspace@0__:d4", "new"),
            ("__keyevent@0__:new", "d4"),
            ("__keyspace@0__:d4", "copy_to"),
            ("__keyevent@0__:copy_to", "d4"),
        ],
    ),
    (
        "MOVE d4 1",
        &[
            ("__keyspace@1__:d4", "new"),
            ("__keyevent@1__:new", "d4"),
            ("__keyspace@0__:d4", "move_from"),
            ("__keyevent@0__:move_from", "d4"),
            ("__keyspace@1__:d4", "move_to"),
            ("__keyevent@1__:move_to", "d4"),
        ],
    ),
    (
        "EXPIRE d3 100",
        &[
            ("__keyspace@0__:d3", "expire"),
            ("__keyevent@0__:expire", "d3"),
        ],
    ),
    (
        "PEXPIRE d3 100000",
        &[
            ("__keyspace@0__:d3", "expire"),
            ("__keyevent@0__:expire", "d3"),
        ],
    ),
    (
        "EXPIREAT d3 1",
        &[("__keyspace@0__:d3", "del"), ("__keyevent@0__:del", "d3")],
    ),
    ("PERSIST g", &[]),
    (
        "LPUSH l a b c",
        &[
            ("__keyspace@0__:l", "new"),
            ("__keyevent@0__:new", "l"),
            ("__keyspace@0__:l", "lpush"),
            ("__keyevent@0__:lpush", "l"),
        ],
    ),
    (
        "RPUSH l d",
        &[("__keyspace@0__:l", "rpush"), ("__keyevent@0__:rpush", "l")],
    ),
    (
        "LPUSHX l z",
        &[("__keyspace@0__:l", "lpush"), ("__keyevent@0__:lpush", "l")],
    ),
    ("RPUSHX nol z", &[]),
    (
        "LPOP l",
        &[("__keyspace@0__:l", "lpop"), ("__keyevent@0__:lpop", "l")],
    ),
    (
        "RPOP l 2",
        &[("__keyspace@0__:l", "rpop"), ("__keyevent@0__:rpop", "l")],
    ),
    (
        "LSET l 0 q",
        &[("__keyspace@0__:l", "lset"), ("__keyevent@0__:lset", "l")],
    ),
    (
        "LINSERT l BEFORE q w",
        &[
            ("__keyspace@0__:l", "linsert"),
            ("__keyevent@0__:linsert", "l"),
        ],
    ),
    (
        "LREM l 0 w",
        &[("__keyspace@0__:l", "lrem"), ("__keyevent@0__:lrem", "l")],
    ),
    (
        "LTRIM l 0 0",
        &[("__keyspace@0__:l", "ltrim"), ("__keyevent@0__:ltrim", "l")],
    ),
    (
        "LMOVE l l2 LEFT RIGHT",
        &[
            ("__keyspace@0__:l2", "new"),
            ("__keyevent@0__:new", "l2"),
            ("__keyspace@0__:l2", "rpush"),
            ("__keyevent@0__:rpush", "l2"),
            ("__keyspace@0__:l", "lpop"),
            ("__keyevent@0__:lpop", "l"),
            ("__keyspace@0__:l", "del"),
            ("__keyevent@0__:del", "l"),
        ],
    ),
    (
        "RPOPLPUSH l2 l3",
        &[
            ("__keyspace@0__:l3", "new"),
            ("__keyevent@0__:new", "l3"),
            ("__keyspace@0__:l3", "lpush"),
            ("__keyevent@0__:lpush", "l3"),
            ("__keyspace@0__:l2", "rpop"),
            ("__keyevent@0__:rpop", "l2"),
            ("__keyspace@0__:l2", "del"),
            ("__keyevent@0__:del", "l2"),
        ],
    ),
    (
        "HSET h a 1 b 2",
        &[
            ("__keyspace@0__:h", "new"),
            ("__keyevent@0__:new", "h"),
            ("__keyspace@0__:h", "hset"),
            ("__keyevent@0__:hset", "h"),
        ],
    ),
    (
        "HSETNX h c 3",
        &[("__keyspace@0__:h", "hset"), ("__keyevent@0__:hset", "h")],
    ),
    (
        "HDEL h a",
        &[("__keyspace@0__:h", "hdel"), ("__keyevent@0__:hdel", "h")],
    ),
    (
        "HINCRBY h n 1",
        &[
            ("__keyspace@0__:h", "hincrby"),
            ("__keyevent@0__:hincrby", "h"),
        ],
    ),
    (
        "HINCRBYFLOAT h m 1.5",
        &[
            ("__keyspace@0__:h", "hincrbyfloat"),
            ("__keyevent@0__:hincrbyfloat", "h"),
        ],
    ),
    (
        "HDEL h b c n m",
        &[
            ("__keyspace@0__:h", "hdel"),
            ("__keyevent@0__:hdel", "h"),
            ("__keyspace@0__:h", "del"),
            ("__keyevent@0__:del", "h"),
        ],
    ),
    (
        "SADD s a b c",
        &[
            ("__keyspace@0__:s", "new"),
            ("__keyevent@0__:new", "s"),
            ("__keyspace@0__:s", "sadd"),
            ("__keyevent@0__:sadd", "s"),
        ],
    ),
    (
        "SREM s a",
        &[("__keyspace@0__:s", "srem"), ("__keyevent@0__:srem", "s")],
    ),
    (
        "SADD one x",
        &[
            ("__keyspace@0__:one", "new"),
            ("__keyevent@0__:new", "one"),
            ("__keyspace@0__:one", "sadd"),
            ("__keyevent@0__:sadd", "one"),
        ],
    ),
    (
        "SPOP one",
        &[
            ("__keyspace@0__:one", "spop"),
            ("__keyevent@0__:spop", "one"),
            ("__keyspace@0__:one", "del"),
            ("__keyevent@0__:del", "one"),
        ],
    ),
    (
        "SMOVE s s2 c",
        &[
            ("__keyspace@0__:s", "srem"),
            ("__keyevent@0__:srem", "s"),
            ("__keyspace@0__:s2", "new"),
            ("__keyevent@0__:new", "s2"),
            ("__keyspace@0__:s2", "sadd"),
            ("__keyevent@0__:sadd", "s2"),
        ],
    ),
    (
        "SADD s x y",
        &[("__keyspace@0__:s", "sadd"), ("__keyevent@0__:sadd", "s")],
    ),
    ("SINTERSTORE si s s2", &[]),
    (
        "SUNIONSTORE su s s2",
        &[
            ("__keyspace@0__:su", "new"),
            ("__keyevent@0__:new", "su"),
            ("__keyspace@0__:su", "sunionstore"),
            ("__keyevent@0__:sunionstore", "su"),
        ],
    ),
    (
        "SDIFFSTORE sd s nokey",
        &[
            ("__keyspace@0__:nokey", "keymiss"),
            ("__keyevent@0__:keymiss", "nokey"),
            ("__keyspace@0__:sd", "new"),
            ("__keyevent@0__:new", "sd"),
            ("__keyspace@0__:sd", "sdiffstore"),
            ("__keyevent@0__:sdiffstore", "sd"),
        ],
    ),
    (
        "SINTERSTORE si nokey s",
        &[
            ("__keyspace@0__:nokey", "keymiss"),
            ("__keyevent@0__:keymiss", "nokey"),
        ],
    ),
    (
        "ZADD z 1 a 2 b",
        &[
            ("__keyspace@0__:z", "new"),
            ("__keyevent@0__:new", "z"),
            ("__keyspace@0__:z", "zadd"),
            ("__keyevent@0__:zadd", "z"),
        ],
    ),
    ("ZADD z 1 a", &[]),
    (
        "ZINCRBY z 1 a",
        &[("__keyspace@0__:z", "zincr"), ("__keyevent@0__:zincr", "z")],
    ),
    (
        "ZADD z INCR 1 a",
        &[("__keyspace@0__:z", "zincr"), ("__keyevent@0__:zincr", "z")],
    ),
    (
        "ZREM z a",
        &[("__keyspace@0__:z", "zrem"), ("__keyevent@0__:zrem", "z")],
    ),
    (
        "ZADD z 3 c 4 d 5 e",
        &[("__keyspace@0__:z", "zadd"), ("__keyevent@0__:zadd", "z")],
    ),
    (
        "ZREMRANGEBYRANK z 0 0",
        &[
            ("__keyspace@0__:z", "zremrangebyrank"),
            ("__keyevent@0__:zremrangebyrank", "z"),
        ],
    ),
    (
        "ZREMRANGEBYSCORE z 4 4",
        &[
            ("__keyspace@0__:z", "zremrangebyscore"),
            ("__keyevent@0__:zremrangebyscore", "z"),
        ],
    ),
    (
        "ZADD z 0 aa 0 ab",
        &[("__keyspace@0__:z", "zadd"), ("__keyevent@0__:zadd", "z")],
    ),
    (
        "ZREMRANGEBYLEX z [aa [aa",
        &[
            ("__keyspace@0__:z", "zremrangebylex"),
            ("__keyevent@0__:zremrangebylex", "z"),
        ],
    ),
    (
        "ZPOPMIN z",
        &[
            ("__keyspace@0__:z", "zpopmin"),
            ("__keyevent@0__:zpopmin", "z"),
        ],
    ),
    (
        "ZPOPMAX z",
        &[
            ("__keyspace@0__:z", "zpopmax"),
            ("__keyevent@0__:zpopmax", "z"),
        ],
    ),
    (
        "ZUNIONSTORE zu 1 z",
        &[
            ("__keyspace@0__:zu", "new"),
            ("__keyevent@0__:new", "zu"),
            ("__keyspace@0__:zu", "zunionstore"),
            ("__keyevent@0__:zunionstore", "zu"),
        ],
    ),
    (
        "ZINTERSTORE zi 1 nokey",
        &[
            ("__keyspace@0__:nokey", "keymiss"),
            ("__keyevent@0__:keymiss", "nokey"),
        ],
    ),
    (
        "ZDIFFSTORE zd 1 z",
        &[
            ("__keyspace@0__:zd", "new"),
            ("__keyevent@0__:new", "zd"),
            ("__keyspace@0__:zd", "zdiffstore"),
            ("__keyevent@0__:zdiffstore", "zd"),
        ],
    ),
    ("SWAPDB 0 1", &[]),
    ("FLUSHDB", &[]),
    (
        "GET nokey",
        &[
            ("__keyspace@0__:nokey", "keymiss"),
            ("__keyevent@0__:keymiss", "nokey"),
        ],
    ),
    (
        "PSETEX ex 1 v",
        &[
            ("__keyspace@0__:ex", "new"),
            ("__keyevent@0__:new", "ex"),
            ("__keyspace@0__:ex", "set"),
            ("__keyevent@0__:set", "ex"),
            ("__keyspace@0__:ex", "expire"),
            ("__keyevent@0__:expire", "ex"),
        ],
    ),
    ("DEBUG SLEEP 0.01", &[]),
    (
        "GET ex",
        &[
            ("__keyspace@0__:ex", "expired"),
            ("__keyevent@0__:expired", "ex"),
            ("__keyspace@0__:ex", "keymiss"),
            ("__keyevent@0__:keymiss", "ex"),
        ],
    ),
];

/// The same commands with `Kx`: only the key-space `expired` event.
const NOTIFIED_KX: &[Notified] = &[
    ("SET k v", &[]),
    ("SET k v EX 100", &[]),
    ("SET k v NX", &[]),
    ("SETNX n 1", &[]),
    ("SETEX e 100 v", &[]),
    ("PSETEX e 100 v", &[]),
    ("GETEX k PX 5000", &[]),
    ("GETEX k PERSIST", &[]),
    ("GETEX k EXAT 1", &[]),
    ("GETDEL n", &[]),
    ("GETSET g 1", &[]),
    ("MSET a 1 b 2", &[]),
    ("MSETNX c 1 d 2", &[]),
    ("APPEND a x", &[]),
    ("SETRANGE a 1 y", &[]),
    ("INCR i", &[]),
    ("DECR i", &[]),
    ("INCRBY i 5", &[]),
    ("DECRBY i 5", &[]),
    ("INCRBYFLOAT f 1.5", &[]),
    ("DEL a b nokey", &[]),
    ("UNLINK c", &[]),
    ("RENAME d d2", &[]),
    ("RENAME d2 d3", &[]),
    ("COPY d3 d4", &[]),
    ("COPY d3 d4 REPLACE", &[]),
    ("MOVE d4 1", &[]),
    ("EXPIRE d3 100", &[]),
    ("PEXPIRE d3 100000", &[]),
    ("EXPIREAT d3 1", &[]),
    ("PERSIST g", &[]),
    ("LPUSH l a b c", &[]),
    ("RPUSH l d", &[]),
    ("LPUSHX l z", &[]),
    ("RPUSHX nol z", &[]),
    ("LPOP l", &[]),
    ("RPOP l 2", &[]),
    ("LSET l 0 q", &[]),
    ("LINSERT l BEFORE q w", &[]),
    ("LREM l 0 w", &[]),
    ("LTRIM l 0 0", &[]),
    ("LMOVE l l2 LEFT RIGHT", &[]),
    ("RPOPLPUSH l2 l3", &[]),
    ("HSET h a 1 b 2", &[]),
    ("HSETNX h c 3", &[]),
    ("HDEL h a", &[]),
    ("HINCRBY h n 1", &[]),
    ("HINCRBYFLOAT h m 1.5", &[]),
    ("HDEL h b c n m", &[]),
    ("SADD s a b c", &[]),
    ("SREM s a", &[]),
    ("SADD one x", &[]),
    ("SPOP one", &[]),
    ("SMOVE s s2 c", &[]),
    ("SADD s x y", &[]),
    ("SINTERSTORE si s s2", &[]),
    ("SUNIONSTORE su s s2", &[]),
    ("SDIFFSTORE sd s nokey", &[]),
    ("SINTERSTORE si nokey s", &[]),
    ("ZADD z 1 a 2 b", &[]),
    ("ZADD z 1 a", &[]),
    ("ZINCRBY z 1 a", &[]),
    ("ZADD z INCR 1 a", &[]),
    ("ZREM z a", &[]),
    ("ZADD z 3 c 4 d 5 e", &[]),
    ("ZREMRANGEBYRANK z 0 0", &[]),
    ("ZREMRANGEBYSCORE z 4 4", &[]),
    ("ZADD z 0 aa 0 ab", &[]),
    ("ZREMRANGEBYLEX z [aa [aa", &[]),
    ("ZPOPMIN z", &[]),
    ("ZPOPMAX z", &[]),
    ("ZUNIONSTORE zu 1 z", &[]),
    ("ZINTERSTORE zi 1 nokey", &[]),
    ("ZDIFFSTORE zd 1 z", &[]),
    ("SWAPDB 0 1", &[]),
    ("FLUSHDB", &[]),
    ("GET nokey", &[]),
    ("PSETEX ex 1 v", &[]),
    ("DEBUG SLEEP 0.01", &[]),
    ("GET ex", &[("__keyspace@0__:ex", "expired")]),
];

/// The items of one pub/sub frame (`pmessage pattern channel payload`).
fn frame_items(frame: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(frame);
    text.split("\r\n")
        .skip(1)
        .collect::<Vec<_>>()
        .chunks(2)
        .filter(|c| c.len() == 2)
        .map(|c| c[1].to_string())
        .collect()
}

fn replay_notifications(port: u16, flags: &str, cases: &[Notified], who: &str) {
    let mut sub = Raw::connect(port);
    let mut client = Raw::connect(port);
    assert_eq!(client.cmd(&["FLUSHALL"]), "+OK\r\n");
    assert_eq!(client.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), "+OK\r\n");
    let set = ["CONFIG", "SET", "notify-keyspace-events", flags];
    assert_eq!(client.cmd(&set), "+OK\r\n");
    sub.cmd(&["PSUBSCRIBE", "__key*__:*"]);
    for (command, expected) in cases {
        let args: Vec<&str> = command.split(' ').collect();
        client.cmd(&args);
        // A marker on a matching channel ends this command's messages.
        client.cmd(&["PUBLISH", "__keymarker__:end", "x"]);
        let mut got = Vec::new();
        loop {
            let items = frame_items(&sub.reply());
            if items[2] == "__keymarker__:end" {
                break;
            }
            got.push((items[2].clone(), items[3].clone()));
        }
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(c, p)| (c.to_string(), p.to_string()))
            .collect();
        assert_eq!(got, expected, "{who} {flags}: {command}");
    }
}

#[test]
fn every_command_notifies_as_redis_does() {
    let lapse = Server::lapse(&[]);
    replay_notifications(lapse.port, "KEAnm", NOTIFIED_KEANM, "lapse");
    replay_notifications(lapse.port, "Kx", NOTIFIED_KX, "lapse");
}

#[test]
fn recorded_notifications_are_redis_servers() {
    let Some(redis) = Server::redis() else {
        return;
    };
    replay_notifications(redis.port, "KEAnm", NOTIFIED_KEANM, "redis-server");
    replay_notifications(redis.port, "Kx", NOTIFIED_KX, "redis-server");
}

/// Keys nobody touches expire among many long TTLs; each `expired` event
/// arrives, and soon after the deadline (generous margin: the point is
/// that they arrive at all, which in Redis they may not for minutes).
#[test]
fn expired_events_arrive_on_time() {
    let lapse = Server::lapse(&[]);
    let mut client = lapse.raw();
    let mut sub = lapse.raw();
    let flags = ["CONFIG", "SET", "notify-keyspace-events", "Ex"];
    assert_eq!(client.cmd(&flags), "+OK\r\n");
    let mut fill = Vec::new();
    for i in 0..20_000 {
        let key = format!("long:{i}");
        fill.extend(common::encode(&[
            b"SET",
            key.as_bytes(),
            b"v",
            b"EX",
            b"3600",
        ]));
    }
    client.send(&fill);
    for _ in 0..20_000 {
        client.reply();
    }
    assert!(sub
        .cmd(&["SUBSCRIBE", "__keyevent@0__:expired"])
        .contains("subscribe"));
    let probes = 50;
    let start = Instant::now();
    for i in 0..probes {
        assert_eq!(
            client.cmd(&["SET", &format!("probe:{i}"), "v", "PX", "200"]),
            "+OK\r\n"
        );
    }
    let mut seen = std::collections::HashSet::new();
    while seen.len() < probes {
        let items = frame_items(&sub.reply());
        assert_eq!(items[0], "message");
        seen.insert(items[2].clone());
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "only {} of {probes} expired events within 5 s",
            seen.len()
        );
    }
    assert!(seen.iter().all(|k| k.starts_with("probe:")));
}

/// A subscriber that never reads is cut off at the pubsub limit; the
/// publisher and everyone else go on.
#[test]
fn a_subscriber_that_does_not_read_is_disconnected() {
    let lapse = Server::lapse(&[]);
    let mut client = lapse.raw();
    let limit = [
        "CONFIG",
        "SET",
        "client-output-buffer-limit",
        "pubsub 1mb 0 0",
    ];
    assert_eq!(client.cmd(&limit), "+OK\r\n");
    let mut sub = lapse.raw();
    assert!(sub.cmd(&["SUBSCRIBE", "firehose"]).contains("subscribe"));
    let payload = "x".repeat(64 * 1024);
    let cut = eventually(Duration::from_secs(20), || {
        client.cmd(&["PUBLISH", "firehose", &payload]);
        info_field(
            &mut client,
            "stats",
            "client_output_buffer_limit_disconnections",
        ) == "1"
    });
    assert!(cut, "the silent subscriber was never disconnected");
    // What was already written may still be in flight; then the EOF.
    let mut drained = 0u64;
    let mut buf = vec![0u8; 1 << 16];
    let closed = loop {
        match std::io::Read::read(&mut sub.reader, &mut buf) {
            Ok(0) | Err(_) => break true,
            Ok(n) => drained += n as u64,
        }
        if drained > 64 << 20 {
            break false;
        }
    };
    assert!(closed, "the subscriber's connection stayed open");
    assert_eq!(client.cmd(&["PUBLISH", "firehose", "x"]), ":0\r\n");
    assert_eq!(client.cmd(&["PING"]), "+PONG\r\n");
}
