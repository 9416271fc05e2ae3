//! Hash-field expiry (issue 21): HEXPIRE and its family reply for reply as
//! redis-server 7.4.1 did for the same session (recorded from it: 7.0,
//! which the other tests run beside lapse, has no such commands), fields
//! leave when their deadline passes and a read finds them, the hash goes
//! with its last field, and deadlines survive RENAME, COPY, MOVE,
//! DUMP/RESTORE, DEBUG RELOAD and an AOF rewritten as commands.

mod common;

use std::time::Duration;

use common::{
    conf_in, dump_and_restore, event_names, eventually, info_field, rewritten_aof_base, temp_dir,
    Raw, Server,
};

/// One step: a command and redis-server 7.4.1's reply, `T` standing for a
/// Unix time the moment decides.
const SESSION: &[(&[&str], &str)] = &[
    (&["HSET", "h", "f1", "v1", "f2", "v2", "f3", "v3"], ":3\r\n"),
    (
        &["HEXPIRE", "h", "100", "FIELDS", "2", "f1", "nosuch"],
        "*2\r\n:1\r\n:-2\r\n",
    ),
    (
        &["HEXPIRE", "h", "100", "NX", "FIELDS", "1", "f1"],
        "*1\r\n:0\r\n",
    ),
    (
        &["HEXPIRE", "h", "200", "XX", "FIELDS", "2", "f1", "f2"],
        "*2\r\n:1\r\n:0\r\n",
    ),
    (
        &["HEXPIRE", "h", "50", "GT", "FIELDS", "1", "f1"],
        "*1\r\n:0\r\n",
    ),
    (
        &["HEXPIRE", "h", "500", "LT", "FIELDS", "1", "f1"],
        "*1\r\n:0\r\n",
    ),
    (
        &["HTTL", "h", "FIELDS", "3", "f1", "f2", "nosuch"],
        "*3\r\n:200\r\n:-1\r\n:-2\r\n",
    ),
    (&["HEXPIRETIME", "h", "FIELDS", "1", "f1"], "*1\r\n:T\r\n"),
    (&["HPEXPIRETIME", "h", "FIELDS", "1", "f2"], "*1\r\n:-1\r\n"),
    (
        &["HPERSIST", "h", "FIELDS", "3", "f1", "f2", "nosuch"],
        "*3\r\n:1\r\n:-1\r\n:-2\r\n",
    ),
    (&["HEXPIRE", "h", "0", "FIELDS", "1", "f3"], "*1\r\n:2\r\n"),
    (
        &["HGETALL", "h"],
        "*4\r\n$2\r\nf2\r\n$2\r\nv2\r\n$2\r\nf1\r\n$2\r\nv1\r\n",
    ),
    (
        &["HEXPIRE", "nokey", "10", "FIELDS", "1", "a"],
        "*1\r\n:-2\r\n",
    ),
    (&["HTTL", "nokey", "FIELDS", "1", "a"], "*1\r\n:-2\r\n"),
    (&["HPERSIST", "nokey", "FIELDS", "1", "a"], "*1\r\n:-2\r\n"),
    (
        &["HEXPIRE", "h", "10", "FIELDS", "0"],
        "-ERR wrong number of arguments for 'hexpire' command\r\n",
    ),
    (
        &["HEXPIRE", "h", "10", "FIELDS", "2", "a"],
        "-ERR The `numfields` parameter must match the number of arguments\r\n",
    ),
    (
        &["HEXPIRE", "h", "10", "FIELDS", "1", "a", "b"],
        "-ERR The `numfields` parameter must match the number of arguments\r\n",
    ),
    (
        &["HEXPIRE", "h", "10", "FIELDS", "-1", "a"],
        "-ERR Parameter `numFields` should be greater than 0\r\n",
    ),
    (
        &["HTTL", "h", "FIELDS", "x", "a"],
        "-ERR Number of fields must be a positive integer\r\n",
    ),
    (
        &["HEXPIRE", "h", "abc", "FIELDS", "1", "a"],
        "-ERR value is not an integer or out of range\r\n",
    ),
    (
        &["HEXPIRE", "h", "-1", "FIELDS", "1", "f1"],
        "-ERR invalid expire time, must be >= 0\r\n",
    ),
    (
        &["HEXPIRE", "h", "10", "NX", "XX", "FIELDS", "1", "f1"],
        "-ERR Mandatory argument FIELDS is missing or not at the right position\r\n",
    ),
    (
        &["HEXPIRE", "h", "10", "BOGUS", "1", "f1"],
        "-ERR Mandatory argument FIELDS is missing or not at the right position\r\n",
    ),
    (
        &["HEXPIREAT", "h", "1", "FIELDS", "1", "f1"],
        "*1\r\n:2\r\n",
    ),
    (&["SET", "str", "v"], "+OK\r\n"),
    (
        &["HEXPIRE", "str", "10", "FIELDS", "1", "a"],
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    ),
    (
        &["HPEXPIRE", "h", "9999999999999999", "FIELDS", "1", "f2"],
        "-ERR invalid expire time in 'hpexpire' command\r\n",
    ),
    (
        &["HEXPIRE", "h", "9223372036854775", "FIELDS", "1", "f2"],
        "-ERR invalid expire time in 'hexpire' command\r\n",
    ),
    (&["HEXPIRE", "h", "10", "FIELDS", "1", "f2"], "*1\r\n:1\r\n"),
    (&["OBJECT", "ENCODING", "h"], "$10\r\nlistpackex\r\n"),
    (&["HSET", "h", "f2", "new"], ":0\r\n"),
    (&["HTTL", "h", "FIELDS", "1", "f2"], "*1\r\n:-1\r\n"),
];

/// A small hash's field order (Redis 7.4's listpackex) as redis-server
/// 7.4.1 showed it: deadlines first (the later one set before an equal
/// one), a field that loses its deadline and a new one last.
const ORDER: &[(&[&str], &str)] = &[
    (
        &["HSET", "o", "a", "1", "b", "2", "c", "3", "d", "4"],
        ":4\r\n",
    ),
    (
        &["HEXPIRE", "o", "100", "FIELDS", "2", "a", "c"],
        "*2\r\n:1\r\n:1\r\n",
    ),
    (
        &["HKEYS", "o"],
        "*4\r\n$1\r\nc\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nd\r\n",
    ),
    (&["HSET", "o", "a", "new"], ":0\r\n"),
    (
        &["HKEYS", "o"],
        "*4\r\n$1\r\nc\r\n$1\r\nb\r\n$1\r\nd\r\n$1\r\na\r\n",
    ),
    (&["HSET", "o", "c", "new2", "e", "5"], ":1\r\n"),
    (
        &["HKEYS", "o"],
        "*5\r\n$1\r\nb\r\n$1\r\nd\r\n$1\r\na\r\n$1\r\nc\r\n$1\r\ne\r\n",
    ),
    (&["HEXPIRE", "o", "50", "FIELDS", "1", "d"], "*1\r\n:1\r\n"),
    (&["HPERSIST", "o", "FIELDS", "1", "d"], "*1\r\n:1\r\n"),
    (
        &["HKEYS", "o"],
        "*5\r\n$1\r\nb\r\n$1\r\na\r\n$1\r\nc\r\n$1\r\ne\r\n$1\r\nd\r\n",
    ),
];

/// HINCRBY and HINCRBYFLOAT keep a field's deadline and place, as
/// redis-server 7.4.1 showed (`HASH_SET_KEEP_TTL`).
const INCR_KEEPS: &[(&[&str], &str)] = &[
    (&["HSET", "k", "a", "1", "b", "2", "c", "3"], ":3\r\n"),
    (
        &["HEXPIRE", "k", "100", "FIELDS", "2", "b", "c"],
        "*2\r\n:1\r\n:1\r\n",
    ),
    (&["HINCRBY", "k", "b", "5"], ":7\r\n"),
    (&["HINCRBYFLOAT", "k", "c", "1.5"], "$3\r\n4.5\r\n"),
    (
        &["HTTL", "k", "FIELDS", "3", "a", "b", "c"],
        "*3\r\n:-1\r\n:100\r\n:100\r\n",
    ),
    (
        &["HGETALL", "k"],
        "*6\r\n$1\r\nc\r\n$3\r\n4.5\r\n$1\r\nb\r\n$1\r\n7\r\n$1\r\na\r\n$1\r\n1\r\n",
    ),
];

/// A listpack hash becomes listpackex on the first field-deadline
/// command that looks at its fields, whether it sets one or not (Redis's
/// `hashTypeSetExInit`); HPERSIST leaves it as it is. As redis-server
/// 7.4.1 showed.
const CONVERTS: &[(&[&str], &str)] = &[
    (&["HSET", "conv:e", "a", "1", "b", "2"], ":2\r\n"),
    (&["HPERSIST", "conv:e", "FIELDS", "1", "a"], "*1\r\n:-1\r\n"),
    (&["OBJECT", "ENCODING", "conv:e"], "$8\r\nlistpack\r\n"),
    (
        &["HEXPIRE", "conv:e", "100", "FIELDS", "1", "missing"],
        "*1\r\n:-2\r\n",
    ),
    (&["OBJECT", "ENCODING", "conv:e"], "$10\r\nlistpackex\r\n"),
    (&["HSET", "conv:n", "a", "1"], ":1\r\n"),
    (
        &["HEXPIRE", "conv:n", "100", "GT", "FIELDS", "1", "a"],
        "*1\r\n:0\r\n",
    ),
    (&["OBJECT", "ENCODING", "conv:n"], "$10\r\nlistpackex\r\n"),
    (&["HTTL", "conv:n", "FIELDS", "1", "a"], "*1\r\n:-1\r\n"),
];

/// Redis 8.0's HGETDEL, HGETEX and HSETEX. No 8.0 server can be built
/// here (the stored redis source stops at 7.4), so these are the replies
/// and errors of Redis's documentation examples and of its source
/// (`t_hash.c`: checks in that order, messages verbatim).
const REDIS_8: &[(&[&str], &str)] = &[
    // HGETDEL's documented example.
    (
        &[
            "HSET", "mykey", "field1", "Hello", "field2", "World", "field3", "!",
        ],
        ":3\r\n",
    ),
    (
        &["HGETDEL", "mykey", "FIELDS", "2", "field3", "field4"],
        "*2\r\n$1\r\n!\r\n$-1\r\n",
    ),
    (
        &["HGETDEL", "mykey", "FIELDS", "2", "field1", "field2"],
        "*2\r\n$5\r\nHello\r\n$5\r\nWorld\r\n",
    ),
    (&["EXISTS", "mykey"], ":0\r\n"),
    (&["HGETDEL", "mykey", "FIELDS", "1", "a"], "*1\r\n$-1\r\n"),
    // A field named twice is deleted once.
    (&["HSET", "d", "a", "1", "b", "2"], ":2\r\n"),
    (
        &["HGETDEL", "d", "FIELDS", "2", "a", "a"],
        "*2\r\n$1\r\n1\r\n$-1\r\n",
    ),
    (
        &["HGETDEL", "d", "FIELDS", "2", "a"],
        "-ERR The `numfields` parameter must match the number of arguments\r\n",
    ),
    (
        &["HGETDEL", "d", "FIELDS", "0", "a"],
        "-ERR Number of fields must be a positive integer\r\n",
    ),
    (
        &["HGETDEL", "d", "FIELD", "1", "a"],
        "-ERR Mandatory argument FIELDS is missing or not at the right position\r\n",
    ),
    // HGETEX's documented example.
    (
        &["HSET", "e", "field1", "Hello", "field2", "World"],
        ":2\r\n",
    ),
    (
        &["HGETEX", "e", "EX", "120", "FIELDS", "1", "field1"],
        "*1\r\n$5\r\nHello\r\n",
    ),
    (
        &["HGETEX", "e", "EX", "100", "FIELDS", "1", "field2"],
        "*1\r\n$5\r\nWorld\r\n",
    ),
    (
        &["HTTL", "e", "FIELDS", "3", "field1", "field2", "field3"],
        "*3\r\n:120\r\n:100\r\n:-2\r\n",
    ),
    (
        &["HGETEX", "e", "PERSIST", "FIELDS", "2", "field1", "nosuch"],
        "*2\r\n$5\r\nHello\r\n$-1\r\n",
    ),
    (
        &["HTTL", "e", "FIELDS", "2", "field1", "field2"],
        "*2\r\n:-1\r\n:100\r\n",
    ),
    (
        &["HGETEX", "e", "FIELDS", "1", "field2"],
        "*1\r\n$5\r\nWorld\r\n",
    ),
    // A past deadline deletes (the hash with its last field).
    (
        &[
            "HGETEX", "e", "PXAT", "1", "FIELDS", "2", "field1", "field2",
        ],
        "*2\r\n$5\r\nHello\r\n$5\r\nWorld\r\n",
    ),
    (&["EXISTS", "e"], ":0\r\n"),
    (
        &["HGETEX", "e", "EX", "10", "FIELDS", "1", "a"],
        "*1\r\n$-1\r\n",
    ),
    (
        &["HGETEX", "e", "EX", "-1", "FIELDS", "1", "a"],
        "-ERR invalid expire time, must be >= 0\r\n",
    ),
    (
        &["HGETEX", "e", "PX", "x", "FIELDS", "1", "a"],
        "-ERR value is not an integer or out of range\r\n",
    ),
    (
        &["HGETEX", "e", "EX", "9223372036854775", "FIELDS", "1", "a"],
        "-ERR invalid expire time in 'hgetex' command\r\n",
    ),
    (
        &["HGETEX", "e", "EX", "10", "FIELDS", "2", "a"],
        "-ERR The `numfields` parameter must match the number of arguments\r\n",
    ),
    (
        &["HGETEX", "e", "KEEPTTL", "FIELDS", "1", "a"],
        "-ERR Mandatory argument FIELDS is missing or not at the right position\r\n",
    ),
    // HSETEX's documented example (its EXAT, in the past today, made
    // future here).
    (
        &[
            "HSETEX",
            "s",
            "EXAT",
            "4000000000",
            "FIELDS",
            "2",
            "field1",
            "Hello",
            "field2",
            "World",
        ],
        ":1\r\n",
    ),
    (
        &["HEXPIRETIME", "s", "FIELDS", "2", "field1", "field2"],
        "*2\r\n:4000000000\r\n:4000000000\r\n",
    ),
    (
        &[
            "HSETEX", "s", "FNX", "EX", "60", "FIELDS", "2", "field1", "Hello", "field2", "World",
        ],
        ":0\r\n",
    ),
    (
        &[
            "HSETEX", "s", "FXX", "EX", "60", "KEEPTTL", "FIELDS", "2", "field1", "hello",
            "field2", "world",
        ],
        "-ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified\r\n",
    ),
    (
        &[
            "HSETEX", "s", "FXX", "KEEPTTL", "FIELDS", "2", "field1", "hello", "field2", "world",
        ],
        ":1\r\n",
    ),
    (
        &["HEXPIRETIME", "s", "FIELDS", "1", "field1"],
        "*1\r\n:4000000000\r\n",
    ),
    (
        &[
            "HSETEX", "s", "FXX", "FIELDS", "2", "field1", "x", "nosuch", "y",
        ],
        ":0\r\n",
    ),
    // Without KEEPTTL a field set loses its deadline, as with HSET.
    (&["HSETEX", "s", "FIELDS", "1", "field1", "plain"], ":1\r\n"),
    (
        &["HEXPIRETIME", "s", "FIELDS", "2", "field1", "field2"],
        "*2\r\n:-1\r\n:4000000000\r\n",
    ),
    (
        &["HSETEX", "s", "PXAT", "1", "FIELDS", "1", "field2", "gone"],
        ":1\r\n",
    ),
    (&["HGETALL", "s"], "*2\r\n$6\r\nfield1\r\n$5\r\nplain\r\n"),
    (
        &["HSETEX", "s", "FNX", "FXX", "FIELDS", "1", "a", "1"],
        "-ERR Only one of FXX or FNX arguments can be specified\r\n",
    ),
    (
        &["HSETEX", "s", "KEEPTTL", "PX", "1", "FIELDS", "1", "a", "1"],
        "-ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified\r\n",
    ),
    (
        &["HSETEX", "s", "BOGUS", "FIELDS", "1", "a", "1"],
        "-ERR unknown argument: BOGUS\r\n",
    ),
    (
        &["HSETEX", "s", "FIELDS", "0", "a", "1"],
        "-ERR invalid number of fields\r\n",
    ),
    (
        &["HSETEX", "s", "FIELDS", "2", "a", "1"],
        "-ERR wrong number of arguments for 'hsetex' command\r\n",
    ),
    (
        &["HSETEX", "s", "EX", "-5", "FIELDS", "1", "a", "1"],
        "-ERR invalid expire time, must be >= 0\r\n",
    ),
    (&["SET", "str8", "v"], "+OK\r\n"),
    // HSETEX checks its arguments before the key; the others the key first.
    (
        &["HSETEX", "str8", "BOGUS", "FIELDS", "1", "a", "1"],
        "-ERR unknown argument: BOGUS\r\n",
    ),
    (
        &["HSETEX", "str8", "FIELDS", "1", "a", "1"],
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    ),
    (
        &["HGETDEL", "str8", "BOGUS", "1", "a"],
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    ),
    (
        &["HGETEX", "str8", "BOGUS", "1", "a"],
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    ),
    // HGETEX with an option and HSETEX with a deadline make a listpack
    // hash listpackex first (`hashTypeSetExInit`), PERSIST included; an
    // HSETEX that FNX stops, or without a deadline, does not.
    (&["HSET", "conv:p", "a", "1"], ":1\r\n"),
    (
        &["HGETEX", "conv:p", "PERSIST", "FIELDS", "1", "a"],
        "*1\r\n$1\r\n1\r\n",
    ),
    (&["OBJECT", "ENCODING", "conv:p"], "$10\r\nlistpackex\r\n"),
    (&["HSET", "conv:q", "a", "1", "b", "2"], ":2\r\n"),
    (
        &[
            "HSETEX", "conv:q", "FNX", "EX", "100", "FIELDS", "1", "a", "x",
        ],
        ":0\r\n",
    ),
    (
        &["HSETEX", "conv:q", "KEEPTTL", "FIELDS", "1", "a", "x"],
        ":1\r\n",
    ),
    (&["OBJECT", "ENCODING", "conv:q"], "$8\r\nlistpack\r\n"),
    (
        &["HSETEX", "conv:q", "EXAT", "1", "FIELDS", "1", "a", "y"],
        ":1\r\n",
    ),
    (&["OBJECT", "ENCODING", "conv:q"], "$10\r\nlistpackex\r\n"),
    (&["HGETALL", "conv:q"], "*2\r\n$1\r\nb\r\n$1\r\n2\r\n"),
];

/// Replaces the Unix time in a reply by `T`.
fn masked(reply: &str) -> String {
    match reply.strip_prefix("*1\r\n:") {
        Some(rest) if rest.len() > 9 && rest.starts_with('1') => "*1\r\n:T\r\n".to_string(),
        _ => reply.to_string(),
    }
}

#[test]
fn replies_and_errors_are_redis_7_4s_and_8_0s() {
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    let all = [SESSION, ORDER, INCR_KEEPS, CONVERTS, REDIS_8];
    for (cmd, expected) in all.into_iter().flatten() {
        assert_eq!(masked(&r.cmd(cmd)), *expected, "{cmd:?}");
    }
}

#[test]
fn fields_leave_on_time_and_the_hash_with_its_last_field() {
    let lapse = Server::lapse(&["--notify-keyspace-events", "Kh$g"]);
    let mut r = lapse.raw();
    let mut events = lapse.raw();
    events.cmd(&["PSUBSCRIBE", "__keyspace@0__:*"]);
    r.cmd(&["HSET", "h", "a", "1", "b", "2", "c", "3"]);
    assert_eq!(
        r.cmd(&["HPEXPIRE", "h", "50", "FIELDS", "2", "a", "b"]),
        "*2\r\n:1\r\n:1\r\n"
    );
    assert_eq!(r.cmd(&["HLEN", "h"]), ":3\r\n");
    // Gone once due, whichever read finds them; HLEN counts live fields.
    assert!(eventually(Duration::from_secs(5), || r.cmd(&["HLEN", "h"]) == ":1\r\n"));
    assert_eq!(r.cmd(&["HGETALL", "h"]), "*2\r\n$1\r\nc\r\n$1\r\n3\r\n");
    assert_eq!(r.cmd(&["HGET", "h", "a"]), "$-1\r\n");
    assert_eq!(r.cmd(&["HTTL", "h", "FIELDS", "1", "a"]), "*1\r\n:-2\r\n");
    let stats = r.cmd(&["INFO", "stats"]);
    assert!(stats.contains("expired_subkeys:2\r\n"), "{stats}");
    // The last field: the hash goes with it.
    r.cmd(&["HPEXPIRE", "h", "30", "FIELDS", "1", "c"]);
    assert!(eventually(Duration::from_secs(5), || r
        .cmd(&["EXISTS", "h"])
        == ":0\r\n"));
    // Notifications: hset, hexpire, hexpired, hexpire, hexpired, del.
    assert_eq!(
        event_names(&mut events, 6),
        ["hset", "hexpire", "hexpired", "hexpire", "hexpired", "del"]
    );
}

/// Redis 8.0's commands notify as its source does: HSETEX `hset` then
/// `hexpire` (or `hdel` for a past deadline), HGETEX `hexpire`,
/// `hpersist` or `hdel`, HGETDEL `hdel`; `del` when the hash goes.
#[test]
fn redis_8_commands_notify_as_redis_does() {
    let lapse = Server::lapse(&["--notify-keyspace-events", "Kh$g"]);
    let mut r = lapse.raw();
    let mut events = lapse.raw();
    events.cmd(&["PSUBSCRIBE", "__keyspace@0__:*"]);
    r.cmd(&[
        "HSETEX", "h", "EX", "100", "FIELDS", "2", "a", "1", "b", "2",
    ]);
    r.cmd(&["HGETEX", "h", "PERSIST", "FIELDS", "1", "a"]);
    r.cmd(&["HGETEX", "h", "PERSIST", "FIELDS", "1", "a"]);
    r.cmd(&["HGETEX", "h", "PX", "5000", "FIELDS", "1", "a"]);
    r.cmd(&["HGETEX", "h", "FIELDS", "1", "a"]);
    r.cmd(&["HSETEX", "h", "PXAT", "1", "FIELDS", "1", "c", "3"]);
    r.cmd(&["HGETDEL", "h", "FIELDS", "1", "nosuch"]);
    r.cmd(&["HGETDEL", "h", "FIELDS", "1", "a"]);
    r.cmd(&["HGETEX", "h", "PXAT", "1", "FIELDS", "1", "b"]);
    let want = [
        "hset", "hexpire", "hpersist", "hexpire", "hset", "hdel", "hdel", "hdel", "del",
    ];
    assert_eq!(event_names(&mut events, want.len()), want);
    assert_eq!(r.cmd(&["EXISTS", "h"]), ":0\r\n");
}

#[test]
fn deadlines_travel_with_the_hash_and_survive_restarts() {
    let dir = temp_dir("hash-field-ttl");
    let conf = conf_in(&dir, "appendonly yes\nsave \"\"\naof-use-rdb-preamble no\n");
    let conf = conf.to_str().unwrap();
    let lapse = Server::lapse(&[conf]);
    let mut r = lapse.raw();
    // Small (packed with deadlines) and big (a table with deadlines).
    r.cmd(&["HSET", "small", "a", "1", "b", "2"]);
    r.cmd(&["HPEXPIREAT", "small", "4000000000000", "FIELDS", "1", "a"]);
    for i in 0..600 {
        r.cmd(&["HSET", "big", &format!("f{i}"), "v"]);
    }
    r.cmd(&[
        "HPEXPIREAT",
        "big",
        "4000000001000",
        "FIELDS",
        "2",
        "f7",
        "f599",
    ]);
    let deadlines = |r: &mut Raw, key: &str, fields: &[&str]| {
        let n = fields.len().to_string();
        let mut cmd = vec!["HPEXPIRETIME", key, "FIELDS", &n];
        cmd.extend(fields);
        r.cmd(&cmd)
    };
    let small = "*2\r\n:4000000000000\r\n:-1\r\n";
    let big = "*3\r\n:4000000001000\r\n:4000000001000\r\n:-1\r\n";
    let check = |r: &mut Raw, prefix: &str| {
        assert_eq!(
            deadlines(r, &format!("{prefix}small"), &["a", "b"]),
            small,
            "{prefix}"
        );
        assert_eq!(
            deadlines(r, &format!("{prefix}big"), &["f7", "f599", "f8"]),
            big,
            "{prefix}"
        );
    };
    check(&mut r, "");
    assert_eq!(
        r.cmd(&["OBJECT", "ENCODING", "small"]),
        "$10\r\nlistpackex\r\n"
    );
    // RENAME, COPY, DUMP/RESTORE.
    for key in ["small", "big"] {
        r.cmd(&["COPY", key, &format!("copy:{key}")]);
        r.cmd(&["RENAME", &format!("copy:{key}"), &format!("renamed:{key}")]);
        dump_and_restore(&mut r, key, &format!("restored:{key}"));
    }
    for prefix in ["renamed:", "restored:"] {
        check(&mut r, prefix);
    }
    // MOVE to another database and back.
    for key in ["small", "big"] {
        r.cmd(&["COPY", key, &format!("moved:{key}")]);
        assert_eq!(r.cmd(&["MOVE", &format!("moved:{key}"), "1"]), ":1\r\n");
    }
    r.cmd(&["SELECT", "1"]);
    check(&mut r, "moved:");
    for key in ["small", "big"] {
        assert_eq!(r.cmd(&["MOVE", &format!("moved:{key}"), "0"]), ":1\r\n");
    }
    r.cmd(&["SELECT", "0"]);
    check(&mut r, "moved:");
    // DEBUG RELOAD (an RDB round trip) and a restart from the AOF,
    // rewritten as commands.
    assert_eq!(r.cmd(&["DEBUG", "RELOAD"]), "+OK\r\n");
    check(&mut r, "");
    let base = rewritten_aof_base(&mut r, &dir);
    assert!(base.contains("HPEXPIREAT"), "{base}");
    drop(r);
    drop(lapse);
    let lapse = Server::lapse(&[conf]);
    let mut r = lapse.raw();
    check(&mut r, "");
    check(&mut r, "restored:");
    drop(lapse);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Fields nobody reads leave on time all the same (the active cycle, in
/// deadline order), big hashes' and small ones', and the hash with its
/// last field.
#[test]
fn unread_fields_are_expired_actively() {
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    r.cmd(&["HSET", "small", "a", "1", "b", "2"]);
    r.cmd(&["HPEXPIRE", "small", "40", "FIELDS", "2", "a", "b"]);
    for i in 0..1000 {
        r.cmd(&["HSET", "big", &format!("f{i}"), "v"]);
    }
    r.cmd(&["HPEXPIRE", "big", "60", "FIELDS", "3", "f1", "f500", "f999"]);
    r.cmd(&["HPEXPIRE", "big", "3600000", "FIELDS", "1", "f2"]);
    // Only INFO is asked (it reads no key): the cycle must do it.
    assert!(
        eventually(Duration::from_secs(5), || {
            info_field(&mut r, "stats", "expired_subkeys") == "5"
        }),
        "{}",
        r.cmd(&["INFO", "stats"])
    );
    assert_eq!(r.cmd(&["EXISTS", "small"]), ":0\r\n");
    assert_eq!(r.cmd(&["HLEN", "big"]), ":997\r\n");
    assert_eq!(
        r.cmd(&["HTTL", "big", "FIELDS", "2", "f2", "f3"]),
        "*2\r\n:3600\r\n:-1\r\n"
    );
    // INFO keyspace counts the hashes with field deadlines (7.4's
    // `subexpiry`), and says nothing of them where there are none.
    let keyspace = r.cmd(&["INFO", "keyspace"]);
    assert!(
        keyspace.contains("db0:keys=1,expires=0,avg_ttl=0,subexpiry=1\r\n"),
        "{keyspace}"
    );
    r.cmd(&["HPERSIST", "big", "FIELDS", "1", "f2"]);
    let keyspace = r.cmd(&["INFO", "keyspace"]);
    assert!(
        keyspace.contains("db0:keys=1,expires=0,avg_ttl=0\r\n"),
        "{keyspace}"
    );
}

/// Where fields past their deadline are kept — on a replica, until the
/// primary's HDEL, and while CLIENT PAUSE holds expiry — reads do not see
/// them (Redis 7.4 answers a replica's clients so), and they are still
/// there to be deleted.
#[test]
fn kept_fields_past_their_deadline_are_not_read() {
    let primary = Server::lapse(&[]);
    let mut p = primary.raw();
    // The primary expires nothing on its own: its HDEL comes when this
    // test reads the field there.
    assert_eq!(p.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), "+OK\r\n");
    let replica = Server::lapse(&[]);
    let mut r = replica.raw();
    r.cmd(&["REPLICAOF", "127.0.0.1", &primary.port.to_string()]);
    // In sync, and the stream prompt (a diskless primary streams once the
    // replica acknowledged the transfer).
    for marker in ["synced", "streaming"] {
        p.cmd(&["SET", marker, "1"]);
        assert!(eventually(Duration::from_secs(30), || r
            .cmd(&["GET", marker])
            == "$1\r\n1\r\n"));
    }
    p.cmd(&["HSET", "h", "a", "1", "b", "2", "c", "3"]);
    let set_at = std::time::Instant::now();
    p.cmd(&["HPEXPIRE", "h", "1500", "FIELDS", "1", "a"]);
    // HTTL rounds up: 2 for the first 500 ms, then 1 (a loaded machine
    // may take that long to pass it on).
    assert!(
        eventually(Duration::from_millis(1400), || matches!(
            r.cmd(&["HTTL", "h", "FIELDS", "1", "a"]).as_str(),
            "*1\r\n:2\r\n" | "*1\r\n:1\r\n"
        )),
        "the replica did not get the deadline in time"
    );
    std::thread::sleep(Duration::from_millis(1600).saturating_sub(set_at.elapsed()));
    let hidden = |r: &mut Raw| {
        assert_eq!(r.cmd(&["HGET", "h", "a"]), "$-1\r\n");
        assert_eq!(r.cmd(&["HEXISTS", "h", "a"]), ":0\r\n");
        assert_eq!(r.cmd(&["HTTL", "h", "FIELDS", "1", "a"]), "*1\r\n:-2\r\n");
        assert_eq!(
            r.cmd(&["HGETALL", "h"]),
            "*4\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n"
        );
        assert_eq!(r.cmd(&["HLEN", "h"]), ":2\r\n");
    };
    hidden(&mut r);
    // Still kept: the primary's HDEL, when it comes, finds it.
    assert_eq!(info_field(&mut r, "stats", "expired_subkeys"), "0");
    assert_eq!(p.cmd(&["HGET", "h", "a"]), "$-1\r\n");
    assert!(eventually(Duration::from_secs(30), || r
        .cmd(&["DEBUG", "DIGEST"])
        == p.cmd(&["DEBUG", "DIGEST"])));
    hidden(&mut r);

    // CLIENT PAUSE WRITE holds expiry on a primary the same way.
    let lapse = Server::lapse(&[]);
    let mut s = lapse.raw();
    s.cmd(&["HSET", "k", "a", "1", "b", "2"]);
    let set_at = std::time::Instant::now();
    s.cmd(&["HPEXPIRE", "k", "100", "FIELDS", "1", "a"]);
    assert_eq!(s.cmd(&["CLIENT", "PAUSE", "10000", "WRITE"]), "+OK\r\n");
    std::thread::sleep(Duration::from_millis(200).saturating_sub(set_at.elapsed()));
    assert_eq!(s.cmd(&["HGET", "k", "a"]), "$-1\r\n");
    assert_eq!(s.cmd(&["HGETALL", "k"]), "*2\r\n$1\r\nb\r\n$1\r\n2\r\n");
    assert_eq!(info_field(&mut s, "stats", "expired_subkeys"), "0");
    assert_eq!(s.cmd(&["CLIENT", "UNPAUSE"]), "+OK\r\n");
    assert!(eventually(Duration::from_secs(5), || info_field(
        &mut s,
        "stats",
        "expired_subkeys"
    ) == "1"));
    assert_eq!(s.cmd(&["HLEN", "k"]), ":1\r\n");
}

/// COMMAND DOCS gives the hash-field commands the version that brought
/// them (Redis 7.4's expiry commands, 8.0's HGETDEL/HGETEX/HSETEX).
#[test]
fn command_docs_give_the_hash_field_commands_their_version() {
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    for (command, since) in [
        ("hexpire", "7.4.0"),
        ("hpexpireat", "7.4.0"),
        ("httl", "7.4.0"),
        ("hpersist", "7.4.0"),
        ("hgetex", "8.0.0"),
        ("hsetex", "8.0.0"),
        ("hgetdel", "8.0.0"),
    ] {
        let docs = r.cmd(&["COMMAND", "DOCS", command]);
        assert!(
            docs.contains(&format!("$5\r\nsince\r\n$5\r\n{since}\r\n")),
            "{command}: {docs}"
        );
    }
}
