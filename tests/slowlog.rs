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

/// INFO commandstats and latencystats list the same commands with the same
/// counts as redis-server's after the same session (times and percentile
/// values masked): calls of clients', EXEC's and scripts' commands, EXEC
/// and EVAL themselves, subcommands as `config|get`, a refused call as
/// rejected (an unknown subcommand not at all), an error reply as failed;
/// CONFIG RESETSTAT clears them; the percentiles follow
/// latency-tracking-info-percentiles, and nothing is tracked without
/// latency-tracking.
#[test]
fn commandstats_and_latencystats_match_redis_server() {
    let mask = |text: String| -> Vec<String> {
        let mut lines: Vec<String> = text
            .lines()
            .filter(|line| !line.starts_with('$'))
            .map(|line| {
                let mut out = String::new();
                let mut in_number = false;
                for ch in line.chars() {
                    if in_number && (ch.is_ascii_digit() || ch == '.') {
                        continue;
                    }
                    in_number = false;
                    out.push(ch);
                    if ch == '=' {
                        in_number = true;
                        out.push('N');
                    }
                }
                out
            })
            .collect();
        lines.sort();
        lines
    };
    let servers = Server::lapse_then_redis();
    let mut seen = Vec::new();
    for server in &servers {
        let mut r = server.raw();
        assert_eq!(r.cmd(&["CONFIG", "RESETSTAT"]), "+OK\r\n");
        r.cmd(&["SET", "a", "1"]);
        r.cmd(&["SET", "a"]);
        r.cmd(&["INCR", "a"]);
        r.cmd(&["LPUSH", "a", "x"]);
        r.cmd(&["CONFIG", "GET", "port"]);
        r.cmd(&["CONFIG", "NOSUCH"]);
        r.cmd(&["MULTI"]);
        r.cmd(&["SET", "b", "2"]);
        r.cmd(&["EXEC"]);
        r.cmd(&["EVAL", "redis.call('set','c','3') return 1", "0"]);
        let percentiles = r.cmd(&[
            "CONFIG",
            "SET",
            "latency-tracking-info-percentiles",
            "50 99.99",
        ]);
        let stats = r.cmd(&["INFO", "commandstats"]);
        let latency = r.cmd(&["INFO", "latencystats"]);
        let everything = r.cmd(&["INFO", "everything"]);
        assert!(
            everything.contains("# Commandstats\r\n") && everything.contains("# Latencystats\r\n")
        );
        assert!(!r.cmd(&["INFO"]).contains("# Commandstats"));
        assert_eq!(r.cmd(&["CONFIG", "RESETSTAT"]), "+OK\r\n");
        assert_eq!(
            r.cmd(&["CONFIG", "SET", "latency-tracking", "no"]),
            "+OK\r\n"
        );
        r.cmd(&["GET", "a"]);
        let untracked = r.cmd(&["INFO", "latencystats"]);
        let errors = [
            r.cmd(&["CONFIG", "SET", "latency-tracking-info-percentiles", "101"]),
            r.cmd(&["CONFIG", "SET", "latency-tracking-info-percentiles", "x"]),
            r.cmd(&["CONFIG", "GET", "latency-tracking-info-percentiles"]),
        ];
        seen.push((percentiles, mask(stats), mask(latency), untracked, errors));
    }
    let stats = &seen[0].1;
    assert!(
        stats
            .iter()
            .any(|l| l
                == "cmdstat_set:calls=N,usec=N,usec_per_call=N,rejected_calls=N,failed_calls=N"),
        "{stats:?}"
    );
    assert!(
        stats.iter().any(|l| l.starts_with("cmdstat_config|get:")),
        "{stats:?}"
    );
    assert!(
        seen[0]
            .2
            .iter()
            .any(|l| l == "latency_percentiles_usec_set:p50=N,p99.99=N"),
        "{:?}",
        seen[0].2
    );
    if let [lapse, redis] = seen.as_slice() {
        assert_eq!(lapse, redis);
    }
}

/// MONITOR shows what redis-server's shows for the same session (the
/// time and the client's address masked): every command once it ran, a
/// script before the commands it runs (`lua` as their origin), EXEC after
/// its queued commands, the database after SELECT, AUTH and HELLO AUTH
/// redacted, administrative commands (CONFIG, DEBUG, MONITOR) and refused
/// requests not at all; quoting as Redis's `sdscatrepr`.
#[test]
fn monitor_matches_redis_server() {
    use std::io::BufRead;
    let servers = Server::lapse_then_redis();
    let mut seen = Vec::new();
    for server in &servers {
        let mut monitor = server.raw();
        assert_eq!(monitor.cmd(&["MONITOR"]), "+OK\r\n");
        let mut c = server.raw();
        let steps: &[&[&[u8]]] = &[
            &[b"SET", b"k", b"va\"l\n\x01ue"],
            &[b"INCR", b"n"],
            &[b"SELECT", b"2"],
            &[b"AUTH", b"pw"],
            &[b"CONFIG", b"GET", b"port"],
            &[b"MULTI"],
            &[b"SET", b"a", b"1"],
            &[b"EXEC"],
            &[b"EVAL", b"return redis.call('get','a')", b"0"],
            &[b"SET", b"x"],
            &[b"NOSUCH"],
            &[b"HELLO", b"2", b"AUTH", b"default", b"pw"],
            &[b"DEBUG", b"SLEEP", b"0"],
            &[b"PING"],
        ];
        for step in steps {
            c.send_cmd(step);
            c.reply();
        }
        let mut lines = Vec::new();
        while lines.last().map(String::as_str) != Some("[2] \"PING\"") {
            let mut line = String::new();
            monitor.reader.read_line(&mut line).unwrap();
            assert!(line.starts_with('+') && line.ends_with("\r\n"), "{line:?}");
            // "+<time> [<db> <origin>] <args>": keep the db, the args,
            // and whether the origin is a script.
            let (head, rest) = line.trim_end().split_once("] ").unwrap();
            let (_, origin) = head.split_once('[').unwrap();
            let (db, who) = origin.split_once(' ').unwrap();
            let who = if who == "lua" { " lua" } else { "" };
            lines.push(format!("[{db}{who}] {rest}"));
        }
        seen.push(lines);
    }
    assert_eq!(seen[0][0], r#"[0] "SET" "k" "va\"l\n\x01ue""#);
    assert!(seen[0].contains(&r#"[2 lua] "get" "a""#.to_string()));
    if let [lapse, redis] = seen.as_slice() {
        assert_eq!(lapse, redis);
    }
}

/// LATENCY as redis-server's, numbers masked: nothing sampled while
/// `latency-monitor-threshold` is 0; with 1 ms, a 50 ms DEBUG SLEEP is a
/// `command` event in LATEST and HISTORY, RESET forgets it; HISTOGRAM
/// gives a command's calls and a cumulative distribution (steps may
/// differ: Redis's come from its HdrHistogram); HELP is Redis's text less
/// DOCTOR and GRAPH, which lapse lacks.
#[test]
fn latency_matches_redis_server() {
    let mask = |reply: String| -> String {
        let mut out = String::new();
        for line in reply.split_inclusive("\r\n") {
            if line.starts_with(':') {
                out.push_str(":N\r\n");
            } else {
                out.push_str(line);
            }
        }
        out
    };
    let servers = Server::lapse_then_redis();
    let mut seen = Vec::new();
    for server in &servers {
        let mut r = server.raw();
        let mut replies = Vec::new();
        r.cmd(&["DEBUG", "SLEEP", "0.05"]);
        replies.push(r.cmd(&["LATENCY", "LATEST"]));
        r.cmd(&["CONFIG", "SET", "latency-monitor-threshold", "1"]);
        r.cmd(&["DEBUG", "SLEEP", "0.05"]);
        replies.push(mask(r.cmd(&["LATENCY", "LATEST"])));
        replies.push(mask(r.cmd(&["LATENCY", "HISTORY", "command"])));
        replies.push(r.cmd(&["LATENCY", "HISTORY", "nosuch"]));
        replies.push(r.cmd(&["LATENCY", "RESET", "nosuch", "command"]));
        replies.push(r.cmd(&["LATENCY", "LATEST"]));
        assert_eq!(r.cmd(&["CONFIG", "RESETSTAT"]), "+OK\r\n");
        for _ in 0..3 {
            r.cmd(&["SET", "k", "v"]);
        }
        let histogram = r.cmd(&["LATENCY", "HISTOGRAM", "set", "nosuch"]);
        let head = "*2\r\n$3\r\nset\r\n*4\r\n$5\r\ncalls\r\n:3\r\n$14\r\nhistogram_usec\r\n*";
        assert!(histogram.starts_with(head), "{histogram}");
        replies.push(r.cmd(&["LATENCY", "HISTOGRAM", "nosuch"]));
        replies.push(r.cmd(&["LATENCY", "NOSUCH"]));
        replies.push(r.cmd(&["LATENCY", "GRAPH", "nosuch"]));
        replies.push(r.cmd(&["LATENCY", "GRAPH"]));
        let doctor = r.cmd(&["LATENCY", "DOCTOR"]);
        assert!(doctor.starts_with('$') && doctor.len() > 40, "{doctor}");
        seen.push((replies, r.cmd(&["LATENCY", "HELP"])));
    }
    assert_eq!(
        seen[0].0[1],
        "*1\r\n*4\r\n$7\r\ncommand\r\n:N\r\n:N\r\n:N\r\n"
    );
    if let [lapse, redis] = seen.as_slice() {
        assert_eq!(lapse.0, redis.0);
        assert_eq!(lapse.1, redis.1);
    }
}
