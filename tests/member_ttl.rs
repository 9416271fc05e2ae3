//! Set member expiry (issue 40, Redis 8.12's SEXPIRE family): replies
//! as Redis 8.12's command pages give them (their examples, and the hash
//! family's rules where the pages say nothing), members gone when due
//! for every read and actively when nobody reads, the set with its last
//! member, events, the effects a replica and the AOF get, and deadlines
//! kept by RENAME, COPY, MOVE, DUMP/RESTORE, DEBUG RELOAD and an AOF
//! rewritten as commands.

mod common;

use std::time::Duration;

use common::{
    conf_in, dump_and_restore, event_names, eventually, info_field, rewritten_aof_base, run_tool,
    temp_dir, Raw, Server,
};

/// The examples of Redis 8.12's SEXPIRE, SPERSIST, STTL and SEXPIRETIME
/// pages, then the rules the S family shares with HEXPIRE's.
const SESSION: &[(&[&str], &str)] = &[
    (
        &["STTL", "no-key", "MEMBERS", "2", "member1", "member2"],
        "*2\r\n:-2\r\n:-2\r\n",
    ),
    (&["SADD", "myset", "member1", "member2"], ":2\r\n"),
    (
        &[
            "SEXPIRE", "myset", "300", "MEMBERS", "2", "member1", "member3",
        ],
        "*2\r\n:1\r\n:-2\r\n",
    ),
    (
        &[
            "STTL", "myset", "MEMBERS", "3", "member1", "member2", "member3",
        ],
        "*3\r\n:300\r\n:-1\r\n:-2\r\n",
    ),
    (
        &[
            "SEXPIRE", "myset", "300", "MEMBERS", "2", "member1", "member2",
        ],
        "*2\r\n:1\r\n:1\r\n",
    ),
    (
        &["SPERSIST", "myset", "MEMBERS", "1", "member2"],
        "*1\r\n:1\r\n",
    ),
    (
        &["SPERSIST", "myset", "MEMBERS", "2", "member2", "member3"],
        "*2\r\n:-1\r\n:-2\r\n",
    ),
    // Conditions: NX, XX, GT (no deadline is infinite), LT.
    (
        &["SEXPIRE", "myset", "100", "NX", "MEMBERS", "1", "member1"],
        "*1\r\n:0\r\n",
    ),
    (
        &[
            "SEXPIRE", "myset", "200", "XX", "MEMBERS", "2", "member1", "member2",
        ],
        "*2\r\n:1\r\n:0\r\n",
    ),
    (
        &["SEXPIRE", "myset", "50", "GT", "MEMBERS", "1", "member1"],
        "*1\r\n:0\r\n",
    ),
    (
        &["SEXPIRE", "myset", "500", "GT", "MEMBERS", "1", "member2"],
        "*1\r\n:0\r\n",
    ),
    (
        &["SEXPIRE", "myset", "500", "LT", "MEMBERS", "1", "member1"],
        "*1\r\n:0\r\n",
    ),
    (
        &["SEXPIRE", "myset", "500", "LT", "MEMBERS", "1", "member2"],
        "*1\r\n:1\r\n",
    ),
    (
        &["SPTTL", "myset", "MEMBERS", "1", "nosuch"],
        "*1\r\n:-2\r\n",
    ),
    (
        &["SPEXPIRETIME", "myset", "MEMBERS", "1", "nosuch"],
        "*1\r\n:-2\r\n",
    ),
    (
        &["SEXPIRETIME", "myset", "MEMBERS", "1", "member1"],
        "*1\r\n:T\r\n",
    ),
    (
        &[
            "SPEXPIREAT",
            "myset",
            "4000000000000",
            "MEMBERS",
            "1",
            "member1",
        ],
        "*1\r\n:1\r\n",
    ),
    (
        &["SPEXPIRETIME", "myset", "MEMBERS", "1", "member1"],
        "*1\r\n:4000000000000\r\n",
    ),
    (
        &[
            "SEXPIREAT",
            "myset",
            "4000000000",
            "MEMBERS",
            "1",
            "member1",
        ],
        "*1\r\n:1\r\n",
    ),
    (
        &["SEXPIRETIME", "myset", "MEMBERS", "1", "member1"],
        "*1\r\n:4000000000\r\n",
    ),
    // A deadline already past deletes the member (2); the set goes with
    // its last one.
    (&["SADD", "gone", "a", "b"], ":2\r\n"),
    (
        &["SEXPIRE", "gone", "0", "MEMBERS", "2", "a", "x"],
        "*2\r\n:2\r\n:-2\r\n",
    ),
    (&["SMEMBERS", "gone"], "*1\r\n$1\r\nb\r\n"),
    (
        &["SPEXPIREAT", "gone", "1", "MEMBERS", "1", "b"],
        "*1\r\n:2\r\n",
    ),
    (&["EXISTS", "gone"], ":0\r\n"),
    // A member keeps its deadline through SADD; SREM and a new SADD
    // leave it without one.
    (&["SADD", "keep", "m", "n"], ":2\r\n"),
    (
        &["SEXPIRE", "keep", "1000", "MEMBERS", "1", "m"],
        "*1\r\n:1\r\n",
    ),
    (&["SADD", "keep", "m"], ":0\r\n"),
    (&["STTL", "keep", "MEMBERS", "1", "m"], "*1\r\n:1000\r\n"),
    (&["SREM", "keep", "m"], ":1\r\n"),
    (&["SADD", "keep", "m"], ":1\r\n"),
    (&["STTL", "keep", "MEMBERS", "1", "m"], "*1\r\n:-1\r\n"),
    // A small set with member deadlines stays compact (an intset, a
    // listpack: `listpackex`), the deadlines following their members
    // through every change, and into a table past the limits.
    (&["SADD", "ints", "1", "3"], ":2\r\n"),
    (&["OBJECT", "ENCODING", "ints"], "$6\r\nintset\r\n"),
    (
        &["SEXPIRE", "ints", "100", "MEMBERS", "1", "3"],
        "*1\r\n:1\r\n",
    ),
    (&["OBJECT", "ENCODING", "ints"], "$6\r\nintset\r\n"),
    (&["SADD", "ints", "2", "0"], ":2\r\n"),
    (
        &["STTL", "ints", "MEMBERS", "4", "0", "1", "2", "3"],
        "*4\r\n:-1\r\n:-1\r\n:-1\r\n:100\r\n",
    ),
    (&["SADD", "ints", "x"], ":1\r\n"),
    (&["OBJECT", "ENCODING", "ints"], "$10\r\nlistpackex\r\n"),
    (
        &["SEXPIRE", "ints", "200", "MEMBERS", "1", "x"],
        "*1\r\n:1\r\n",
    ),
    (&["SREM", "ints", "0", "1"], ":2\r\n"),
    (
        &["STTL", "ints", "MEMBERS", "3", "2", "3", "x"],
        "*3\r\n:-1\r\n:100\r\n:200\r\n",
    ),
    (
        &["SPERSIST", "ints", "MEMBERS", "2", "3", "x"],
        "*2\r\n:1\r\n:1\r\n",
    ),
    (&["OBJECT", "ENCODING", "ints"], "$8\r\nlistpack\r\n"),
    (
        &["SEXPIRE", "ints", "300", "MEMBERS", "1", "x"],
        "*1\r\n:1\r\n",
    ),
    (
        &[
            "SADD",
            "ints",
            "a-member-longer-than-sixty-four-bytes-makes-the-set-a-table-at-once",
        ],
        ":1\r\n",
    ),
    (&["OBJECT", "ENCODING", "ints"], "$9\r\nhashtable\r\n"),
    (
        &["STTL", "ints", "MEMBERS", "2", "x", "2"],
        "*2\r\n:300\r\n:-1\r\n",
    ),
    // Errors.
    (
        &["SEXPIRE", "myset", "10", "MEMBERS", "2", "a"],
        "-ERR The `nummembers` parameter must match the number of arguments\r\n",
    ),
    (
        &["SEXPIRE", "myset", "10", "FOO", "1", "a"],
        "-ERR Mandatory argument MEMBERS is missing or not at the right position\r\n",
    ),
    (
        &["SEXPIRE", "myset", "10", "MEMBERS", "0", "a"],
        "-ERR Parameter `numMembers` should be greater than 0\r\n",
    ),
    (
        &["STTL", "myset", "MEMBERS", "x", "a"],
        "-ERR Number of members must be a positive integer\r\n",
    ),
    (
        &["SEXPIRE", "myset", "-1", "MEMBERS", "1", "a"],
        "-ERR invalid expire time, must be >= 0\r\n",
    ),
    (
        &[
            "SPEXPIREAT",
            "myset",
            "9223372036854775807",
            "MEMBERS",
            "1",
            "a",
        ],
        "-ERR invalid expire time in 'spexpireat' command\r\n",
    ),
    (&["SET", "str", "v"], "+OK\r\n"),
    (
        &["SEXPIRE", "str", "10", "MEMBERS", "1", "a"],
        "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    ),
    (
        &["SEXPIRE", "nokey", "10", "MEMBERS", "1", "a"],
        "*1\r\n:-2\r\n",
    ),
];

/// Replaces a Unix time in seconds in a one-element reply by `T`.
fn masked(reply: &str) -> String {
    match reply.strip_prefix("*1\r\n:") {
        Some(rest) if rest.len() == 12 && rest.starts_with('1') => "*1\r\n:T\r\n".to_string(),
        _ => reply.to_string(),
    }
}

#[test]
fn replies_and_errors_follow_redis_8_12s_pages() {
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    for (cmd, expected) in SESSION {
        assert_eq!(masked(&r.cmd(cmd)), *expected, "{cmd:?}");
    }
    let docs = r.cmd(&["COMMAND", "DOCS", "sexpire"]);
    assert!(docs.contains("$5\r\nsince\r\n$6\r\n8.12.0\r\n"), "{docs}");
}

#[test]
fn members_leave_on_time_for_every_read_and_the_set_with_its_last() {
    let lapse = Server::lapse(&["--notify-keyspace-events", "Ksg"]);
    let mut r = lapse.raw();
    let mut events = lapse.raw();
    events.cmd(&["PSUBSCRIBE", "__keyspace@0__:*"]);
    r.cmd(&["SADD", "s", "a", "b", "c"]);
    assert_eq!(
        r.cmd(&["SPEXPIRE", "s", "50", "MEMBERS", "2", "a", "b"]),
        "*2\r\n:1\r\n:1\r\n"
    );
    assert_eq!(r.cmd(&["SCARD", "s"]), ":3\r\n");
    // Once due, no read sees them: SCARD counts live members only.
    assert!(eventually(Duration::from_secs(5), || r
        .cmd(&["SCARD", "s"])
        == ":1\r\n"));
    assert_eq!(r.cmd(&["SMEMBERS", "s"]), "*1\r\n$1\r\nc\r\n");
    assert_eq!(r.cmd(&["SISMEMBER", "s", "a"]), ":0\r\n");
    assert_eq!(r.cmd(&["SRANDMEMBER", "s", "5"]), "*1\r\n$1\r\nc\r\n");
    assert_eq!(r.cmd(&["STTL", "s", "MEMBERS", "1", "a"]), "*1\r\n:-2\r\n");
    assert_eq!(info_field(&mut r, "stats", "expired_subkeys"), "2");
    r.cmd(&["SPEXPIRE", "s", "30", "MEMBERS", "1", "c"]);
    assert!(eventually(Duration::from_secs(5), || r
        .cmd(&["EXISTS", "s"])
        == ":0\r\n"));
    assert_eq!(
        event_names(&mut events, 6),
        ["sadd", "sexpire", "sexpired", "sexpire", "sexpired", "del"]
    );
}

/// Members nobody reads leave on time all the same (the active cycle, in
/// deadline order), and the set with its last member.
#[test]
fn unread_members_are_expired_actively() {
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    for k in 0..20 {
        let key = format!("s{k}");
        let members: Vec<String> = (0..300).map(|i| format!("m{i}")).collect();
        let mut sadd = vec!["SADD", &key];
        sadd.extend(members.iter().map(String::as_str));
        r.cmd(&sadd);
        let mut expire = vec!["SPEXPIRE", &key, "100", "MEMBERS", "100"];
        expire.extend(members[..100].iter().map(String::as_str));
        r.cmd(&expire);
    }
    r.cmd(&["SADD", "alone", "x"]);
    r.cmd(&["SPEXPIRE", "alone", "100", "MEMBERS", "1", "x"]);
    assert!(
        eventually(Duration::from_secs(5), || info_field(
            &mut r,
            "stats",
            "expired_subkeys"
        ) == "2001"),
        "{}",
        r.cmd(&["INFO", "stats"])
    );
    assert_eq!(r.cmd(&["DBSIZE"]), ":20\r\n");
    assert_eq!(r.cmd(&["SCARD", "s7"]), ":200\r\n");
}

/// The primary sends its replica SPEXPIREAT and, when members expire,
/// SREM; the replica expires nothing itself but its reads hide members
/// past their deadline.
#[test]
fn a_replica_follows_the_primarys_member_expiry() {
    let primary = Server::lapse(&[]);
    let replica = Server::lapse(&[]);
    let mut p = primary.raw();
    let mut s = replica.raw();
    s.cmd(&["REPLICAOF", "127.0.0.1", &primary.port.to_string()]);
    assert!(eventually(Duration::from_secs(10), || info_field(
        &mut s,
        "replication",
        "master_link_status"
    ) == "up"));
    p.cmd(&["SADD", "s", "a", "b"]);
    p.cmd(&["SEXPIRE", "s", "1000", "MEMBERS", "1", "a"]);
    assert!(eventually(Duration::from_secs(5), || s
        .cmd(&["STTL", "s", "MEMBERS", "1", "a"])
        == "*1\r\n:1000\r\n"));
    // Paused expiry on the primary stands in for a slow primary: the
    // replica hides the member past its deadline without deleting it.
    p.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    p.cmd(&["SPEXPIRE", "s", "100", "MEMBERS", "1", "b"]);
    assert!(eventually(Duration::from_secs(5), || s
        .cmd(&["SPTTL", "s", "MEMBERS", "1", "b"])
        == "*1\r\n:-2\r\n"));
    assert_eq!(s.cmd(&["SMEMBERS", "s"]), "*1\r\n$1\r\na\r\n");
    assert_eq!(info_field(&mut s, "stats", "expired_subkeys"), "0");
    // The primary's read expires it and the SREM reaches the replica.
    assert_eq!(p.cmd(&["SCARD", "s"]), ":1\r\n");
    assert!(eventually(Duration::from_secs(5), || s
        .cmd(&["DEBUG", "DIGEST"])
        == p.cmd(&["DEBUG", "DIGEST"])));
    assert_eq!(s.cmd(&["SCARD", "s"]), ":1\r\n");
}

#[test]
fn deadlines_travel_with_the_set_and_survive_restarts() {
    let dir = temp_dir("member-ttl");
    let conf = conf_in(&dir, "appendonly yes\nsave \"\"\naof-use-rdb-preamble no\n");
    let conf = conf.to_str().unwrap();
    let lapse = Server::lapse(&[conf]);
    let mut r = lapse.raw();
    r.cmd(&["SADD", "small", "a", "b"]);
    r.cmd(&["SPEXPIREAT", "small", "4000000000000", "MEMBERS", "1", "a"]);
    r.cmd(&["SADD", "ints", "1", "2", "3"]);
    r.cmd(&["SPEXPIREAT", "ints", "4000000002000", "MEMBERS", "1", "2"]);
    assert_eq!(r.cmd(&["OBJECT", "ENCODING", "ints"]), "$6\r\nintset\r\n");
    let members: Vec<String> = (0..600).map(|i| format!("m{i}")).collect();
    let mut sadd = vec!["SADD", "big"];
    sadd.extend(members.iter().map(String::as_str));
    r.cmd(&sadd);
    r.cmd(&[
        "SPEXPIREAT",
        "big",
        "4000000001000",
        "MEMBERS",
        "2",
        "m7",
        "m599",
    ]);
    let deadlines = |r: &mut Raw, key: &str, members: &[&str]| {
        let n = members.len().to_string();
        let mut cmd = vec!["SPEXPIRETIME", key, "MEMBERS", &n];
        cmd.extend(members);
        r.cmd(&cmd)
    };
    let check = |r: &mut Raw, prefix: &str| {
        assert_eq!(
            deadlines(r, &format!("{prefix}small"), &["a", "b"]),
            "*2\r\n:4000000000000\r\n:-1\r\n",
            "{prefix}"
        );
        assert_eq!(
            deadlines(r, &format!("{prefix}big"), &["m7", "m599", "m8"]),
            "*3\r\n:4000000001000\r\n:4000000001000\r\n:-1\r\n",
            "{prefix}"
        );
        assert_eq!(
            deadlines(r, &format!("{prefix}ints"), &["2", "3"]),
            "*2\r\n:4000000002000\r\n:-1\r\n",
            "{prefix}"
        );
    };
    check(&mut r, "");
    for key in ["small", "big", "ints"] {
        r.cmd(&["COPY", key, &format!("copy:{key}")]);
        r.cmd(&["RENAME", &format!("copy:{key}"), &format!("renamed:{key}")]);
        dump_and_restore(&mut r, key, &format!("restored:{key}"));
        r.cmd(&["COPY", key, &format!("moved:{key}")]);
        assert_eq!(r.cmd(&["MOVE", &format!("moved:{key}"), "1"]), ":1\r\n");
    }
    check(&mut r, "renamed:");
    check(&mut r, "restored:");
    r.cmd(&["SELECT", "1"]);
    check(&mut r, "moved:");
    r.cmd(&["SELECT", "0"]);
    assert_eq!(r.cmd(&["DEBUG", "RELOAD"]), "+OK\r\n");
    check(&mut r, "");
    check(&mut r, "restored:");
    let base = rewritten_aof_base(&mut r, &dir);
    assert!(base.contains("SPEXPIREAT"), "{base}");
    // An expiry after the rewrite reaches the AOF as an SREM.
    r.cmd(&["SADD", "soon", "x", "y"]);
    r.cmd(&["SPEXPIRE", "soon", "50", "MEMBERS", "1", "x"]);
    assert!(eventually(Duration::from_secs(5), || r
        .cmd(&["SCARD", "soon"])
        == ":1\r\n"));
    drop(r);
    drop(lapse);
    let lapse = Server::lapse(&[conf]);
    let mut r = lapse.raw();
    check(&mut r, "");
    check(&mut r, "restored:");
    assert_eq!(r.cmd(&["SMEMBERS", "soon"]), "*1\r\n$1\r\ny\r\n");
    drop(lapse);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Sorted sets (lapse's own ZEXPIRE family, built as the set family):
/// the same replies and rules, and every read sees live members only.
#[test]
fn sorted_set_members_expire_as_set_members_do() {
    let lapse = Server::lapse(&["--notify-keyspace-events", "Kzg"]);
    let mut r = lapse.raw();
    let mut events = lapse.raw();
    events.cmd(&["PSUBSCRIBE", "__keyspace@0__:*"]);
    for (cmd, expected) in [
        (
            &["ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"][..],
            ":4\r\n",
        ),
        (
            &["ZEXPIRE", "z", "300", "MEMBERS", "2", "a", "zz"],
            "*2\r\n:1\r\n:-2\r\n",
        ),
        (
            &["ZTTL", "z", "MEMBERS", "2", "a", "b"],
            "*2\r\n:300\r\n:-1\r\n",
        ),
        (
            &["ZEXPIRE", "z", "100", "NX", "MEMBERS", "1", "a"],
            "*1\r\n:0\r\n",
        ),
        (
            &["ZEXPIRE", "z", "100", "GT", "MEMBERS", "1", "a"],
            "*1\r\n:0\r\n",
        ),
        (
            &["ZPERSIST", "z", "MEMBERS", "2", "a", "b"],
            "*2\r\n:1\r\n:-1\r\n",
        ),
        // Small and without deadlines again: the plain listpack; with
        // one, `listpackex` (the deadlines beside the rows).
        (&["OBJECT", "ENCODING", "z"], "$8\r\nlistpack\r\n"),
        (
            &["ZPEXPIREAT", "z", "4000000000000", "MEMBERS", "1", "d"],
            "*1\r\n:1\r\n",
        ),
        (&["OBJECT", "ENCODING", "z"], "$10\r\nlistpackex\r\n"),
        // ZADD moves a member and keeps its deadline.
        (&["ZADD", "z", "0", "d"], ":0\r\n"),
        (
            &["ZPEXPIRETIME", "z", "MEMBERS", "1", "d"],
            "*1\r\n:4000000000000\r\n",
        ),
        (&["ZTTL", "nokey", "MEMBERS", "1", "a"], "*1\r\n:-2\r\n"),
        (
            &["ZEXPIRE", "z", "10", "MEMBERS", "0", "a"],
            "-ERR Parameter `numMembers` should be greater than 0\r\n",
        ),
    ] {
        assert_eq!(r.cmd(cmd), expected, "{cmd:?}");
    }
    r.cmd(&["ZADD", "other", "1", "a", "1", "b", "1", "c"]);
    r.cmd(&["ZPEXPIRE", "z", "50", "MEMBERS", "2", "a", "b"]);
    assert!(eventually(Duration::from_secs(5), || r
        .cmd(&["ZCARD", "z"])
        == ":2\r\n"));
    for (cmd, expected) in [
        (
            &["ZRANGE", "z", "0", "-1"][..],
            "*2\r\n$1\r\nd\r\n$1\r\nc\r\n",
        ),
        (
            &["ZRANGE", "z", "+inf", "-inf", "BYSCORE", "REV"],
            "*2\r\n$1\r\nc\r\n$1\r\nd\r\n",
        ),
        (&["ZSCORE", "z", "a"], "$-1\r\n"),
        (&["ZMSCORE", "z", "b", "c"], "*2\r\n$-1\r\n$1\r\n3\r\n"),
        (&["ZRANK", "z", "c"], ":1\r\n"),
        (&["ZCOUNT", "z", "-inf", "+inf"], ":2\r\n"),
        (&["ZRANDMEMBER", "z", "-5"], ""),
        (
            &["ZUNION", "2", "z", "other"],
            "*4\r\n$1\r\nd\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n",
        ),
        (&["ZINTER", "2", "z", "other"], "*1\r\n$1\r\nc\r\n"),
        (&["ZPOPMIN", "z"], "*2\r\n$1\r\nd\r\n$1\r\n0\r\n"),
    ] {
        let reply = r.cmd(cmd);
        if expected.is_empty() {
            // Five picks with repeats, all of them the live member left.
            assert!(
                !reply.contains("\r\na\r\n") && !reply.contains("\r\nb\r\n"),
                "{reply}"
            );
        } else {
            assert_eq!(reply, expected, "{cmd:?}");
        }
    }
    assert_eq!(info_field(&mut r, "stats", "expired_subkeys"), "2");
    r.cmd(&["ZPEXPIRE", "z", "30", "MEMBERS", "1", "c"]);
    assert!(eventually(Duration::from_secs(5), || r
        .cmd(&["EXISTS", "z"])
        == ":0\r\n"));
    let want = [
        "zadd", "zexpire", "zpersist", "zexpire", "zadd", "zadd", "zexpire", "zexpired", "zpopmin",
        "zexpire", "zexpired", "del",
    ];
    assert_eq!(event_names(&mut events, want.len()), want);
}

/// A sorted set's member deadlines survive DUMP/RESTORE, DEBUG RELOAD,
/// an AOF rewritten as commands and a restart; a replica follows.
#[test]
fn sorted_set_deadlines_survive_files_and_reach_a_replica() {
    let dir = temp_dir("zset-member-ttl");
    let conf = conf_in(&dir, "appendonly yes\nsave \"\"\naof-use-rdb-preamble no\n");
    let conf = conf.to_str().unwrap();
    let lapse = Server::lapse(&[conf]);
    let replica = Server::lapse(&[]);
    let mut s = replica.raw();
    s.cmd(&["REPLICAOF", "127.0.0.1", &lapse.port.to_string()]);
    let mut r = lapse.raw();
    // A skiplist and a listpack, each with member deadlines.
    for (key, n, encoding) in [("big", 600, "skiplist"), ("small", 10, "listpackex")] {
        let mut zadd = vec!["ZADD".to_string(), key.into()];
        for i in 0..n {
            zadd.extend([i.to_string(), format!("m{i}")]);
        }
        let zadd: Vec<&str> = zadd.iter().map(String::as_str).collect();
        r.cmd(&zadd);
        r.cmd(&[
            "ZPEXPIREAT",
            key,
            "4000000001000",
            "MEMBERS",
            "2",
            "m7",
            "m5",
        ]);
        r.cmd(&["ZPEXPIRE", key, "60000", "MEMBERS", "1", "m8"]);
        let reply = r.cmd(&["OBJECT", "ENCODING", key]);
        assert!(reply.ends_with(&format!("{encoding}\r\n")), "{reply}");
        dump_and_restore(&mut r, key, &format!("restored:{key}"));
    }
    let want = "*3\r\n:4000000001000\r\n:4000000001000\r\n:-1\r\n";
    let check = |r: &mut Raw, key: &str| {
        let got = r.cmd(&["ZPEXPIRETIME", key, "MEMBERS", "3", "m7", "m5", "m9"]);
        assert_eq!(got, want, "{key}");
    };
    const KEYS: [&str; 4] = ["big", "small", "restored:big", "restored:small"];
    KEYS.iter().for_each(|key| check(&mut r, key));
    assert_eq!(r.cmd(&["DEBUG", "RELOAD"]), "+OK\r\n");
    KEYS.iter().for_each(|key| check(&mut r, key));
    for key in ["big", "small"] {
        assert!(eventually(Duration::from_secs(10), || s.cmd(&[
            "ZPEXPIRETIME",
            key,
            "MEMBERS",
            "3",
            "m7",
            "m5",
            "m9"
        ]) == want));
    }
    let base = rewritten_aof_base(&mut r, &dir);
    assert!(base.contains("ZPEXPIREAT"), "{base}");
    // An expiry reaches the replica and the AOF as a ZREM.
    r.cmd(&["ZPEXPIRE", "big", "50", "MEMBERS", "1", "m1"]);
    assert!(eventually(Duration::from_secs(5), || r
        .cmd(&["ZCARD", "big"])
        == ":599\r\n"));
    assert!(eventually(Duration::from_secs(5), || s
        .cmd(&["DEBUG", "DIGEST"])
        == r.cmd(&["DEBUG", "DIGEST"])));
    drop(r);
    drop(lapse);
    let lapse = Server::lapse(&[conf]);
    let mut r = lapse.raw();
    KEYS.iter().for_each(|key| check(&mut r, key));
    assert_eq!(r.cmd(&["ZSCORE", "big", "m1"]), "$-1\r\n");
    assert_eq!(r.cmd(&["ZRANK", "big", "m2"]), ":1\r\n");
    drop(lapse);
    let _ = std::fs::remove_dir_all(&dir);
}

/// KeyDB's EXPIREMEMBER, EXPIREMEMBERAT and PEXPIREMEMBERAT, as KeyDB's
/// `expireMemberCore` answers them, onto the same deadlines for hashes,
/// sets and sorted sets; its TTL and PTTL with a member, as its
/// `ttlGenericCommand` answers them.
#[test]
fn keydb_expiremember_sets_the_same_deadlines() {
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    r.cmd(&["HSET", "h", "f1", "v", "f2", "v"]);
    r.cmd(&["SADD", "s", "a", "b"]);
    r.cmd(&["ZADD", "z", "1", "a", "2", "b"]);
    r.cmd(&["SET", "str", "v"]);
    for (cmd, expected) in [
        (&["EXPIREMEMBER", "h", "f1", "100"][..], ":1\r\n"),
        (&["EXPIREMEMBER", "s", "a", "5000", "ms"], ":1\r\n"),
        (&["EXPIREMEMBERAT", "z", "a", "4000000000"], ":1\r\n"),
        (
            &["ZEXPIRETIME", "z", "MEMBERS", "1", "a"],
            "*1\r\n:4000000000\r\n",
        ),
        (&["PEXPIREMEMBERAT", "z", "b", "4000000000123"], ":1\r\n"),
        (
            &["ZPEXPIRETIME", "z", "MEMBERS", "1", "b"],
            "*1\r\n:4000000000123\r\n",
        ),
        (&["EXPIREMEMBER", "s", "nosuch", "10"], ":0\r\n"),
        (&["EXPIREMEMBER", "nokey", "a", "10"], ":0\r\n"),
        (
            &["EXPIREMEMBER", "str", "a", "10"],
            "-ERR object type is unsupported\r\n",
        ),
        (
            &["EXPIREMEMBER", "s", "a", "10", "h"],
            "-ERR Invalid unit arg\r\n",
        ),
        (
            &["EXPIREMEMBER", "s", "a", "10", "s", "x"],
            "-ERR Invalid number of arguments\r\n",
        ),
        (
            &["EXPIREMEMBER", "s", "a", "x"],
            "-ERR value is not an integer or out of range\r\n",
        ),
        // A deadline already past takes the member at once.
        (&["EXPIREMEMBER", "s", "b", "0"], ":1\r\n"),
        (&["SMEMBERS", "s"], "*1\r\n$1\r\na\r\n"),
        // KeyDB's TTL and PTTL with a member: -2 no key, -1 a member
        // without a deadline, one not there or a type without members.
        (&["TTL", "h", "f2"], ":-1\r\n"),
        (&["PTTL", "s", "nosuch"], ":-1\r\n"),
        (&["TTL", "str", "a"], ":-1\r\n"),
        (&["PTTL", "nokey", "a"], ":-2\r\n"),
        (&["TTL", "s", "a", "b"], "-ERR Invalid arguments\r\n"),
        // Without a member, TTL is the key's own.
        (&["TTL", "s"], ":-1\r\n"),
    ] {
        assert_eq!(r.cmd(cmd), expected, "{cmd:?}");
    }
    let s: i64 = r.cmd(&["TTL", "h", "f1"])[1..].trim().parse().unwrap();
    assert!((90..=100).contains(&s), "{s}");
    let ms: i64 = r.cmd(&["PTTL", "s", "a"])[1..].trim().parse().unwrap();
    assert!((4_000..=5_000).contains(&ms), "{ms}");
    // The same deadlines through SPTTL and HTTL (ranges: the machine
    // may take its time between the commands).
    let spttl = r.cmd(&["SPTTL", "s", "MEMBERS", "1", "a"]);
    let ms: i64 = spttl.trim_start_matches("*1\r\n:").trim().parse().unwrap();
    assert!((4_000..=5_000).contains(&ms), "{spttl}");
    let httl = r.cmd(&["HTTL", "h", "FIELDS", "1", "f1"]);
    let s: i64 = httl.trim_start_matches("*1\r\n:").trim().parse().unwrap();
    assert!((90..=100).contains(&s), "{httl}");
    let at: i64 = r.cmd(&["PTTL", "z", "b"])[1..].trim().parse().unwrap();
    assert!(at > 1_000_000_000, "{at}");
}

/// What other commands do to member deadlines (Redis 8.12's pages say
/// nothing of them; lapse follows what HEXPIRE's fields get): SMOVE moves
/// a member without its deadline (one already in the destination keeps
/// its own), the *STORE commands store members without deadlines, ZINCRBY
/// keeps one, a member removed and added again has none.
#[test]
fn other_commands_and_member_deadlines() {
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    for (cmd, expected) in [
        (&["SADD", "src", "a", "b", "c"][..], ":3\r\n"),
        (&["SADD", "dst", "x"], ":1\r\n"),
        (
            &["SEXPIRE", "src", "100", "MEMBERS", "2", "a", "b"],
            "*2\r\n:1\r\n:1\r\n",
        ),
        (
            &["SEXPIRE", "dst", "200", "MEMBERS", "1", "x"],
            "*1\r\n:1\r\n",
        ),
        (&["SMOVE", "src", "dst", "a"], ":1\r\n"),
        (&["STTL", "dst", "MEMBERS", "1", "a"], "*1\r\n:-1\r\n"),
        (&["STTL", "src", "MEMBERS", "1", "a"], "*1\r\n:-2\r\n"),
        (&["SADD", "src", "x"], ":1\r\n"),
        (
            &["SEXPIRE", "src", "300", "MEMBERS", "1", "x"],
            "*1\r\n:1\r\n",
        ),
        (&["SMOVE", "src", "dst", "x"], ":1\r\n"),
        (&["STTL", "dst", "MEMBERS", "1", "x"], "*1\r\n:200\r\n"),
        (&["SINTERSTORE", "out", "src", "src"], ":2\r\n"),
        (
            &["STTL", "out", "MEMBERS", "2", "b", "c"],
            "*2\r\n:-1\r\n:-1\r\n",
        ),
        (&["SUNIONSTORE", "out", "src", "dst"], ":4\r\n"),
        (
            &["STTL", "out", "MEMBERS", "2", "b", "x"],
            "*2\r\n:-1\r\n:-1\r\n",
        ),
        (&["SDIFFSTORE", "out", "src", "dst"], ":2\r\n"),
        (&["STTL", "out", "MEMBERS", "1", "b"], "*1\r\n:-1\r\n"),
        (&["SREM", "src", "b"], ":1\r\n"),
        (&["SADD", "src", "b"], ":1\r\n"),
        (&["STTL", "src", "MEMBERS", "1", "b"], "*1\r\n:-1\r\n"),
        (&["ZADD", "z", "1", "a", "2", "b"], ":2\r\n"),
        (
            &["ZEXPIRE", "z", "100", "MEMBERS", "1", "a"],
            "*1\r\n:1\r\n",
        ),
        (&["ZINCRBY", "z", "5", "a"], "$1\r\n6\r\n"),
        (&["ZTTL", "z", "MEMBERS", "1", "a"], "*1\r\n:100\r\n"),
        (&["ZUNIONSTORE", "zo", "1", "z"], ":2\r\n"),
        (&["ZTTL", "zo", "MEMBERS", "1", "a"], "*1\r\n:-1\r\n"),
        (&["ZRANGESTORE", "zr", "z", "0", "-1"], ":2\r\n"),
        (&["ZTTL", "zr", "MEMBERS", "1", "a"], "*1\r\n:-1\r\n"),
        (&["ZREM", "z", "a"], ":1\r\n"),
        (&["ZADD", "z", "1", "a"], ":1\r\n"),
        (&["ZTTL", "z", "MEMBERS", "1", "a"], "*1\r\n:-1\r\n"),
    ] {
        assert_eq!(r.cmd(cmd), expected, "{cmd:?}");
    }
}

/// Members past their deadline that the active cycle has not removed
/// yet (it is off here: DEBUG SET-ACTIVE-EXPIRE 0) are gone for every
/// read all the same, in compact sets and sorted sets alike, blocking
/// pops included; a key whose members are all due is no key.
#[test]
fn members_past_their_deadline_are_gone_before_the_cycle_removes_them() {
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    r.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    r.cmd(&["SADD", "s", "a", "b", "c"]);
    r.cmd(&["SADD", "gone", "a"]);
    r.cmd(&["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
    r.cmd(&["ZADD", "zgone", "1", "a"]);
    for (cmd, key) in [
        ("SPEXPIRE", "s"),
        ("SPEXPIRE", "gone"),
        ("ZPEXPIRE", "z"),
        ("ZPEXPIRE", "zgone"),
    ] {
        assert_eq!(r.cmd(&[cmd, key, "1", "MEMBERS", "1", "a"]), "*1\r\n:1\r\n");
    }
    std::thread::sleep(Duration::from_millis(20));
    let bc = "*2\r\n$1\r\nb\r\n$1\r\nc\r\n";
    for (cmd, expected) in [
        (&["SCARD", "s"][..], ":2\r\n"),
        (&["SMEMBERS", "s"], bc),
        (
            &["SSCAN", "s", "0"],
            "*2\r\n$1\r\n0\r\n*2\r\n$1\r\nb\r\n$1\r\nc\r\n",
        ),
        (&["SISMEMBER", "s", "a"], ":0\r\n"),
        (&["SMISMEMBER", "s", "a", "b"], "*2\r\n:0\r\n:1\r\n"),
        (&["SINTER", "s", "s"], bc),
        (&["SDIFF", "s", "gone"], bc),
        (&["SINTERCARD", "1", "s"], ":2\r\n"),
        (&["SMOVE", "s", "dst", "a"], ":0\r\n"),
        (&["EXISTS", "gone", "zgone"], ":0\r\n"),
        (&["ZCARD", "z"], ":2\r\n"),
        (&["ZRANGE", "z", "0", "-1"], bc),
        (&["ZRANGEBYLEX", "z", "-", "+"], bc),
        (
            &["ZREVRANGE", "z", "0", "-1"],
            "*2\r\n$1\r\nc\r\n$1\r\nb\r\n",
        ),
        (&["ZLEXCOUNT", "z", "-", "+"], ":2\r\n"),
        (&["ZDIFF", "1", "z"], bc),
        (&["ZRANK", "z", "a"], "$-1\r\n"),
        (
            &["ZSCAN", "z", "0"],
            "*2\r\n$1\r\n0\r\n*4\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n",
        ),
        (
            &["BZPOPMIN", "z", "1"],
            "*3\r\n$1\r\nz\r\n$1\r\nb\r\n$1\r\n2\r\n",
        ),
        (&["BZPOPMIN", "zgone", "0.05"], "*-1\r\n"),
        (&["SPOP", "s", "5"], ""),
    ] {
        let reply = r.cmd(cmd);
        if expected.is_empty() {
            assert!(
                reply.starts_with("*2\r\n") && !reply.contains("\r\na\r\n"),
                "{reply}"
            );
        } else {
            assert_eq!(reply, expected, "{cmd:?}");
        }
    }
}

/// `lapse --check-rdb` runs the whole file as lapse loads it and says
/// what redis-server cannot read in it: sets and sorted sets with member
/// deadlines (lapse's types 240 and 241, which `redis-check-rdb` refuses);
/// once their members have none, the same keys make a file
/// `redis-check-rdb` passes. A damaged file is reported as one.
#[test]
fn check_rdb_explains_what_redis_server_cannot_read() {
    let dir = temp_dir("member-ttl-check");
    let conf = conf_in(&dir, "save \"\"\nappendonly no\n");
    let lapse = Server::lapse(&[conf.to_str().unwrap()]);
    let mut r = lapse.raw();
    r.cmd(&["SADD", "s", "a", "b"]);
    r.cmd(&["SEXPIRE", "s", "1000", "MEMBERS", "1", "a"]);
    r.cmd(&["ZADD", "z", "1", "a", "2", "b"]);
    r.cmd(&["ZEXPIRE", "z", "1000", "MEMBERS", "1", "b"]);
    r.cmd(&["SET", "str", "v", "EX", "1000"]);
    assert_eq!(r.cmd(&["SAVE"]), "+OK\r\n");
    let rdb = dir.join("dump.rdb");
    let check = |file: &std::path::Path| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_lapse"))
            .arg("--check-rdb")
            .arg(file)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (ok, report) = check(&rdb);
    assert!(ok, "{report}");
    for line in [
        "[info] 3 keys read",
        "[info] 1 expires",
        "keys by type: set 1, string 1, zset 1",
        "1 sets with member deadlines, written as lapse's object type 240",
        "1 sorted sets with member deadlines, written as lapse's object type 241",
        "not for redis-server 7.0",
    ] {
        assert!(report.contains(line), "{line:?} not in\n{report}");
    }
    if let Some(out) = run_tool("redis-check-rdb", &[rdb.as_os_str()]) {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!out.status.success(), "{text}");
        assert!(text.contains("Invalid object type: 24"), "{text}");
    }
    r.cmd(&["SPERSIST", "s", "MEMBERS", "1", "a"]);
    r.cmd(&["ZPERSIST", "z", "MEMBERS", "1", "b"]);
    assert_eq!(r.cmd(&["SAVE"]), "+OK\r\n");
    let (ok, report) = check(&rdb);
    assert!(
        ok && report.contains("redis-server 7.0 reads it too"),
        "{report}"
    );
    if let Some(out) = run_tool("redis-check-rdb", &[rdb.as_os_str()]) {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("RDB looks OK"),
            "{text}"
        );
    }
    let mut damaged = std::fs::read(&rdb).unwrap();
    let len = damaged.len();
    damaged.truncate(len - 12);
    let broken = dir.join("broken.rdb");
    std::fs::write(&broken, damaged).unwrap();
    let (ok, report) = check(&broken);
    assert!(!ok && report.contains("RDB ERROR DETECTED"), "{report}");
}
