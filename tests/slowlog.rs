//! SLOWLOG as redis-server 7.0 keeps it: with a threshold of 0 every
//! command is logged, newest first, each command of an EXEC on its own
//! (EXEC itself not), arguments cut at 32 and 128 bytes, secrets
//! redacted, the log trimmed to `slowlog-max-len`; GET/LEN/RESET/HELP and
//! their errors answer as redis-server's do. INFO errorstats, the other
//! per-command record, is compared here too.

mod common;

use common::Server;
use redis::Value;

/// The argument arrays of SLOWLOG GET -1, newest first.
fn logged_args(c: &mut redis::Connection) -> Vec<Vec<String>> {
    let Value::Array(entries) = redis::cmd("SLOWLOG").arg("GET").arg(-1).query(c).unwrap() else {
        panic!("SLOWLOG GET is not an array");
    };
    entries
        .into_iter()
        .map(|entry| {
            let Value::Array(fields) = entry else {
                panic!("an entry is not an array")
            };
            assert_eq!(fields.len(), 6);
            let Value::Array(args) = &fields[3] else {
                panic!("no argument array")
            };
            args.iter()
                .map(|a| match a {
                    Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                    other => panic!("{other:?}"),
                })
                .collect()
        })
        .collect()
}

/// The same session on a server: what the slow log shows of it, and the
/// replies of the SLOWLOG commands themselves.
fn session(server: &Server) -> (Vec<Vec<String>>, Vec<String>) {
    let mut c = server.client();
    let mut r = server.raw();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(0)
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("SLOWLOG").arg("RESET").query(&mut c).unwrap();
    r.cmd(&["SET", "k", &"x".repeat(200)]);
    let keys: Vec<String> = (0..40).map(|i| format!("key{i}")).collect();
    let mut del = vec!["DEL"];
    del.extend(keys.iter().map(String::as_str));
    r.cmd(&del);
    r.cmd(&["AUTH", "nobody", "secret"]);
    r.cmd(&["CONFIG", "SET", "requirepass", "", "hz", "10"]);
    r.cmd(&["MULTI"]);
    r.cmd(&["INCR", "n"]);
    r.cmd(&["GET", "n"]);
    r.cmd(&["EXEC"]);
    let logged = logged_args(&mut c);
    let replies = vec![
        r.cmd(&["SLOWLOG", "GET", "-2"]),
        r.cmd(&["SLOWLOG", "GET", "x"]),
        r.cmd(&["SLOWLOG", "GET", "1", "2"]),
        r.cmd(&["SLOWLOG", "HELP"]),
        r.cmd(&["SLOWLOG", "NOPE"]),
        r.cmd(&["CONFIG", "SET", "slowlog-max-len", "2"]),
        r.cmd(&["PING"]),
        r.cmd(&["SLOWLOG", "LEN"]),
        r.cmd(&["SLOWLOG", "RESET"]),
        r.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "-1"]),
        r.cmd(&["PING"]),
        r.cmd(&["SLOWLOG", "LEN"]),
    ];
    (logged, replies)
}

#[test]
fn slowlog_matches_redis_server() {
    let lapse = Server::lapse(&[]);
    let (logged, replies) = session(&lapse);
    // Newest first; EXEC's commands one by one, EXEC itself not.
    assert_eq!(logged[0], ["GET", "n"]);
    assert_eq!(logged[1], ["INCR", "n"]);
    assert_eq!(logged[2], ["MULTI"]);
    assert_eq!(
        logged[3],
        ["CONFIG", "SET", "requirepass", "(redacted)", "hz", "10"]
    );
    assert_eq!(logged[4], ["AUTH", "(redacted)", "(redacted)"]);
    assert_eq!(logged[5].len(), 32);
    assert_eq!(logged[5][31], "... (10 more arguments)");
    assert_eq!(
        logged[6][2],
        format!("{}... (72 more bytes)", "x".repeat(128))
    );
    let Some(redis) = Server::redis() else {
        return;
    };
    let (their_logged, their_replies) = session(&redis);
    assert_eq!(logged, their_logged);
    assert_eq!(replies, their_replies);
}

/// Only commands at or over the threshold are logged, with their real
/// duration in microseconds.
#[test]
fn a_slow_command_is_logged_with_its_duration() {
    let lapse = Server::lapse(&[]);
    let mut c = lapse.client();
    let mut r = lapse.raw();
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "20000"]),
        "+OK\r\n"
    );
    assert_eq!(r.cmd(&["DEBUG", "SLEEP", "0.05"]), "+OK\r\n");
    assert_eq!(r.cmd(&["PING"]), "+PONG\r\n");
    assert_eq!(logged_args(&mut c), [["DEBUG", "SLEEP", "0.05"]]);
    let Value::Array(entries) = redis::cmd("SLOWLOG").arg("GET").query(&mut c).unwrap() else {
        panic!("not an array");
    };
    let Value::Array(fields) = &entries[0] else {
        panic!("not an entry")
    };
    let Value::Int(duration_us) = fields[2] else {
        panic!("no duration")
    };
    assert!((50_000..5_000_000).contains(&duration_us), "{duration_us}");
}

/// INFO errorstats counts error replies by code as redis-server does,
/// inside a transaction too; CONFIG RESETSTAT clears it.
#[test]
fn errorstats_match_redis_server() {
    let servers = Server::lapse_then_redis();
    let mut seen = Vec::new();
    for server in &servers {
        let mut r = server.raw();
        r.cmd(&["LPUSH", "list", "a"]);
        r.cmd(&["GET", "list"]);
        r.cmd(&["NOSUCHCOMMAND"]);
        r.cmd(&["SET", "k", "v", "BADOPTION"]);
        r.cmd(&["EVALSHA", &"0".repeat(40), "0"]);
        r.cmd(&["INCR", "list"]);
        r.cmd(&["MULTI"]);
        r.cmd(&["INCR", "list"]);
        r.cmd(&["EXEC"]);
        let stats = r.cmd(&["INFO", "errorstats"]);
        let total = common::info_field(&mut r, "stats", "total_error_replies");
        assert_eq!(r.cmd(&["CONFIG", "RESETSTAT"]), "+OK\r\n");
        let after = r.cmd(&["INFO", "errorstats"]);
        seen.push((stats, total, after));
    }
    assert!(
        seen[0].0.contains("errorstat_WRONGTYPE:count=3"),
        "{}",
        seen[0].0
    );
    if let [lapse, redis] = seen.as_slice() {
        assert_eq!(lapse, redis);
    }
}
