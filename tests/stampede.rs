//! Stampede protection in the server (issue 42, first step): soft
//! deadlines (`SET ... STALE` / `PSTALE`), GETLEASE's five states, SET's
//! `LEASE token` fencing, LEASE RELEASE, the INFO counters, leases ended
//! by any write and dropped by DEBUG RELOAD, what replicas get, and one
//! fill per lease among many clients.

mod common;

use std::time::Duration;

use common::{event_names, eventually, info_field, Raw, Server};

/// GETLEASE's reply as (value, state, token).
fn getlease(r: &mut Raw, key: &str, lease_ms: &str) -> (Option<String>, String, Option<u64>) {
    getlease_beta(r, key, lease_ms, "")
}

/// GETLEASE with `BETA beta` (none if empty).
fn getlease_beta(
    r: &mut Raw,
    key: &str,
    lease_ms: &str,
    beta: &str,
) -> (Option<String>, String, Option<u64>) {
    let mut cmd = vec!["GETLEASE", key, lease_ms];
    if !beta.is_empty() {
        cmd.extend(["BETA", beta]);
    }
    let reply = r.cmd(&cmd);
    let lines: Vec<&str> = reply.split("\r\n").collect();
    assert_eq!(lines[0], "*3", "{reply}");
    let (value, rest) = match lines[1] {
        "$-1" => (None, &lines[2..]),
        _ => (Some(lines[2].to_string()), &lines[3..]),
    };
    let state = rest[1].to_string();
    let token = match rest[2] {
        "$-1" => None,
        t => Some(t.trim_start_matches(':').parse().unwrap()),
    };
    (value, state, token)
}

#[test]
fn fill_busy_fence_and_release() {
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    let mut other = lapse.raw();
    // Missing: the first caller fills, the others are told it is busy.
    let (value, state, token) = getlease(&mut r, "k", "10000");
    assert_eq!((value, state.as_str()), (None, "fill"));
    let fill = token.unwrap();
    assert_eq!(
        getlease(&mut other, "k", "10000"),
        (None, "busy".into(), None)
    );
    // A wrong token writes nothing; the holder's does, from any
    // connection, and the write ends the lease.
    let wrong = (fill + 1000).to_string();
    assert_eq!(r.cmd(&["SET", "k", "v", "LEASE", &wrong]), "$-1\r\n");
    assert_eq!(r.cmd(&["EXISTS", "k"]), ":0\r\n");
    assert_eq!(
        other.cmd(&["SET", "k", "v", "LEASE", &fill.to_string()]),
        "+OK\r\n"
    );
    assert_eq!(
        r.cmd(&["SET", "k", "late", "LEASE", &fill.to_string()]),
        "$-1\r\n"
    );
    assert_eq!(r.cmd(&["GET", "k"]), "$1\r\nv\r\n");
    // Present, no soft deadline: fresh.
    assert_eq!(
        getlease(&mut r, "k", "100"),
        (Some("v".into()), "fresh".into(), None)
    );
    // A lease handed back lets the next caller fill at once.
    r.cmd(&["DEL", "k"]);
    let (_, state, token) = getlease(&mut r, "k", "60000");
    assert_eq!(state, "fill");
    let token = token.unwrap().to_string();
    assert_eq!(r.cmd(&["LEASE", "RELEASE", "k", "12345"]), ":0\r\n");
    assert_eq!(r.cmd(&["LEASE", "RELEASE", "k", &token]), ":1\r\n");
    assert_eq!(r.cmd(&["LEASE", "RELEASE", "k", &token]), ":0\r\n");
    let (_, state, next) = getlease(&mut other, "k", "60000");
    assert_eq!(state, "fill");
    assert!(next.unwrap() > token.parse().unwrap());
    // A write without the token ends the lease too; so does a deletion.
    r.cmd(&["SET", "k", "x"]);
    r.cmd(&["DEL", "k"]);
    assert_eq!(getlease(&mut r, "k", "50").1, "fill");
    // A lapsed lease is gone: the next caller fills.
    assert!(eventually(Duration::from_secs(5), || getlease(
        &mut other, "k", "50"
    )
    .1 == "fill"));
    // Leases are never persisted: DEBUG RELOAD drops them.
    assert_eq!(getlease(&mut r, "reload", "60000").1, "fill");
    assert_eq!(getlease(&mut other, "reload", "60000").1, "busy");
    assert_eq!(r.cmd(&["DEBUG", "RELOAD"]), "+OK\r\n");
    assert_eq!(getlease(&mut other, "reload", "60000").1, "fill");
    for (cmd, expected) in [
        (
            &["GETLEASE", "k", "0"][..],
            "-ERR lease-milliseconds must be a positive integer\r\n",
        ),
        (
            &["GETLEASE", "k", "x"],
            "-ERR value is not an integer or out of range\r\n",
        ),
        (
            &["SET", "k", "v", "LEASE", "x"],
            "-ERR value is not an integer or out of range\r\n",
        ),
        (&["SET", "k", "v", "STALE", "5"], "-ERR syntax error\r\n"),
        (
            &["SET", "k", "v", "EX", "5", "STALE", "0"],
            "-ERR invalid expire time in 'set' command\r\n",
        ),
        (&["LPUSH", "list", "a"], ":1\r\n"),
        (
            &["GETLEASE", "list", "10"],
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
        ),
    ] {
        assert_eq!(r.cmd(cmd), expected, "{cmd:?}");
    }
}

#[test]
fn stale_keys_are_served_while_one_client_refreshes() {
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    let mut other = lapse.raw();
    // Fresh for 300 ms, then stale for 60 s: the TTL is the hard deadline.
    assert_eq!(
        r.cmd(&["SET", "k", "v1", "PX", "300", "STALE", "60"]),
        "+OK\r\n"
    );
    let pttl: i64 = r.cmd(&["PTTL", "k"])[1..].trim().parse().unwrap();
    assert!((59_000..=60_300).contains(&pttl), "{pttl}");
    assert_eq!(getlease(&mut r, "k", "10000").1, "fresh");
    let mut granted = None;
    assert!(eventually(Duration::from_secs(5), || {
        let (value, state, token) = getlease(&mut r, "k", "10000");
        granted = token;
        value.as_deref() == Some("v1") && state == "refresh"
    }));
    assert!(granted.is_some());
    // One refresher; everyone else gets the stale value, plain GET too.
    assert_eq!(
        getlease(&mut other, "k", "10000"),
        (Some("v1".into()), "stale".into(), None)
    );
    assert_eq!(other.cmd(&["GET", "k"]), "$2\r\nv1\r\n");
    assert_eq!(info_field(&mut other, "stats", "stale_hits"), "1");
    // A write without STALE ends the soft deadline (and the lease).
    r.cmd(&["SET", "k", "v2", "PX", "60000"]);
    assert_eq!(
        getlease(&mut other, "k", "10000"),
        (Some("v2".into()), "fresh".into(), None)
    );
    // EXPIRE moves the hard deadline and keeps the grace: 500 ms left
    // with a 1 s grace is stale at once.
    r.cmd(&["SET", "k", "v3", "PX", "60000", "PSTALE", "1000"]);
    assert_eq!(getlease(&mut other, "k", "10000").1, "fresh");
    r.cmd(&["PEXPIRE", "k", "500"]);
    let (value, state, token) = getlease(&mut other, "k", "10000");
    assert_eq!((value.as_deref(), state.as_str()), (Some("v3"), "refresh"));
    // The refresher's SET with its token ends the lease and the staleness.
    let token = token.unwrap().to_string();
    assert_eq!(
        other.cmd(&["SET", "k", "v4", "EX", "60", "STALE", "10", "LEASE", &token]),
        "+OK\r\n"
    );
    assert_eq!(
        getlease(&mut r, "k", "10000"),
        (Some("v4".into()), "fresh".into(), None)
    );
    // A deletion ends a refresh lease: the next caller fills; so does
    // the expiry at the hard deadline.
    r.cmd(&["SET", "d", "v", "PX", "1", "PSTALE", "60000"]);
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(getlease(&mut r, "d", "60000").1, "refresh");
    assert_eq!(getlease(&mut other, "d", "60000").1, "stale");
    r.cmd(&["DEL", "d"]);
    assert_eq!(getlease(&mut other, "d", "60000").1, "fill");
    r.cmd(&["SET", "e", "v", "PX", "1", "PSTALE", "100"]);
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(getlease(&mut r, "e", "60000").1, "refresh");
    assert!(eventually(Duration::from_secs(5), || r
        .cmd(&["EXISTS", "e"])
        == ":0\r\n"));
    assert_eq!(getlease(&mut other, "e", "60000").1, "fill");
    // PERSIST: no hard deadline, so no soft one.
    r.cmd(&["SET", "p", "v", "PX", "1", "PSTALE", "60000"]);
    r.cmd(&["PERSIST", "p"]);
    assert_eq!(getlease(&mut r, "p", "10").1, "fresh");
    assert_eq!(info_field(&mut r, "stats", "lease_fills"), "1");
    assert!(
        info_field(&mut r, "stats", "leases_granted")
            .parse::<u64>()
            .unwrap()
            >= 2
    );
}

/// Replicas get plain writes with the hard deadline (leases are the
/// primary's).
#[test]
fn a_replica_gets_the_hard_deadline_and_plain_writes() {
    let primary = Server::lapse(&[]);
    let replica = Server::lapse(&[]);
    let mut s = replica.raw();
    s.cmd(&["REPLICAOF", "127.0.0.1", &primary.port.to_string()]);
    let mut r = primary.raw();
    assert!(eventually(Duration::from_secs(10), || info_field(
        &mut s,
        "replication",
        "master_link_status"
    ) == "up"));
    let (_, _, token) = getlease(&mut r, "filled", "60000");
    r.cmd(&["SET", "filled", "v", "LEASE", &token.unwrap().to_string()]);
    r.cmd(&["SET", "soft", "v", "EX", "100", "STALE", "100"]);
    assert!(eventually(Duration::from_secs(10), || s
        .cmd(&["GET", "filled"])
        == "$1\r\nv\r\n"));
    assert!(eventually(Duration::from_secs(10), || s
        .cmd(&["EXISTS", "soft"])
        == ":1\r\n"));
    let ttl: i64 = s.cmd(&["TTL", "soft"])[1..].trim().parse().unwrap();
    assert!((190..=200).contains(&ttl), "{ttl}");
}

/// Many clients asking for one missing key at once: exactly one fill.
#[test]
fn one_fill_among_many_clients() {
    let lapse = Server::lapse(&[]);
    let port = lapse.port;
    let threads: Vec<_> = (0..40)
        .map(|_| {
            std::thread::spawn(move || {
                let mut r = Raw::connect(port);
                getlease(&mut r, "hot", "60000").1
            })
        })
        .collect();
    let states: Vec<String> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(
        states.iter().filter(|s| *s == "fill").count(),
        1,
        "{states:?}"
    );
    assert_eq!(
        states.iter().filter(|s| *s == "busy").count(),
        39,
        "{states:?}"
    );
}

/// GETLEASE WAIT: callers of a key being filled block (no polling) until
/// it is written, then all get the value; a lease that is handed back or
/// lapses goes to the earliest waiter, the others keep waiting; a wait
/// that runs out answers `busy`; inside MULTI WAIT acts as 0.
#[test]
fn waiters_get_the_fill_or_take_the_lease_over() {
    let lapse = Server::lapse(&[]);
    let port = lapse.port;
    let mut r = lapse.raw();
    let waiter = |key: &'static str, lease: &'static str, wait: &'static str| {
        std::thread::spawn(move || Raw::connect(port).cmd(&["GETLEASE", key, lease, "WAIT", wait]))
    };
    let blocked = |r: &mut Raw, n: usize| {
        eventually(Duration::from_secs(10), || {
            info_field(r, "clients", "blocked_clients") == n.to_string()
        })
    };
    let fill_token = |reply: &str| -> u64 {
        assert!(reply.starts_with("*3\r\n$-1\r\n$4\r\nfill\r\n:"), "{reply}");
        reply.rsplit(':').next().unwrap().trim().parse().unwrap()
    };
    // A write wakes every waiter with the value.
    let (_, _, token) = getlease(&mut r, "k", "60000");
    let waiters: Vec<_> = (0..5).map(|_| waiter("k", "1000", "20000")).collect();
    assert!(blocked(&mut r, 5));
    assert_eq!(info_field(&mut r, "stats", "lease_waits"), "5");
    r.cmd(&["SET", "k", "v", "LEASE", &token.unwrap().to_string()]);
    for w in waiters {
        assert_eq!(w.join().unwrap(), "*3\r\n$1\r\nv\r\n$5\r\nfresh\r\n$-1\r\n");
    }
    // Handed back: the earliest waiter fills, the next keeps waiting
    // until that fill is written.
    let (_, _, token) = getlease(&mut r, "h", "60000");
    let first = waiter("h", "60000", "20000");
    assert!(blocked(&mut r, 1));
    let second = waiter("h", "60000", "20000");
    assert!(blocked(&mut r, 2));
    r.cmd(&["LEASE", "RELEASE", "h", &token.unwrap().to_string()]);
    let token = fill_token(&first.join().unwrap());
    assert!(blocked(&mut r, 1));
    r.cmd(&["SET", "h", "w", "LEASE", &token.to_string()]);
    assert_eq!(
        second.join().unwrap(),
        "*3\r\n$1\r\nw\r\n$5\r\nfresh\r\n$-1\r\n"
    );
    // A filler that never writes: its lease lapses to the waiter.
    getlease(&mut r, "crashed", "200");
    fill_token(&waiter("crashed", "60000", "20000").join().unwrap());
    // A wait that runs out: busy.
    getlease(&mut r, "slow", "60000");
    assert_eq!(
        waiter("slow", "100", "50").join().unwrap(),
        "*3\r\n$-1\r\n$4\r\nbusy\r\n$-1\r\n"
    );
    assert_eq!(info_field(&mut r, "stats", "lease_wait_timeouts"), "1");
    // Inside MULTI, WAIT acts as 0.
    r.cmd(&["MULTI"]);
    r.cmd(&["GETLEASE", "slow", "100", "WAIT", "10000"]);
    assert_eq!(r.cmd(&["EXEC"]), "*1\r\n*3\r\n$-1\r\n$4\r\nbusy\r\n$-1\r\n");
}

/// BETA (XFetch in the server): never early before the key has a
/// measured recompute time; with one, a reader may get `refresh` before
/// the soft deadline (certainly, with a huge beta), and while that early
/// lease is out the others read the key `fresh`.
#[test]
fn beta_refreshes_early_once_the_recompute_time_is_known() {
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    r.cmd(&["SET", "k", "v", "EX", "100", "STALE", "10"]);
    let huge = "1000000000";
    assert_eq!(getlease_beta(&mut r, "k", "1000", huge).1, "fresh");
    // A fill that takes ~50 ms gives the key its delta.
    r.cmd(&["DEL", "k"]);
    let (_, state, token) = getlease(&mut r, "k", "60000");
    assert_eq!(state, "fill");
    std::thread::sleep(Duration::from_millis(50));
    let token = token.unwrap().to_string();
    r.cmd(&[
        "SET", "k", "v2", "EX", "100", "STALE", "10", "LEASE", &token,
    ]);
    assert_eq!(getlease_beta(&mut r, "k", "1000", "0.000000001").1, "fresh");
    assert_eq!(getlease_beta(&mut r, "k", "1000", "").1, "fresh");
    let (value, state, token) = getlease_beta(&mut r, "k", "1000", huge);
    assert_eq!((value.as_deref(), state.as_str()), (Some("v2"), "refresh"));
    assert!(token.is_some());
    assert_eq!(getlease_beta(&mut r, "k", "1000", huge).1, "fresh");
    assert_eq!(info_field(&mut r, "stats", "early_refreshes"), "1");
    for (cmd, expected) in [
        (
            &["GETLEASE", "k", "10", "BETA", "0"][..],
            "-ERR BETA must be a positive number\r\n",
        ),
        (
            &["GETLEASE", "k", "10", "BETA", "x"],
            "-ERR BETA must be a positive number\r\n",
        ),
        (&["GETLEASE", "k", "10", "BETA"], "-ERR syntax error\r\n"),
        (
            &["GETLEASE", "k", "10", "WAIT", "-1"],
            "-ERR timeout is negative\r\n",
        ),
    ] {
        assert_eq!(r.cmd(cmd), expected, "{cmd:?}");
    }
}

/// Soft deadlines are kept in order only while the `stale` event has
/// readers: a key given one before `x` was turned on still signals it,
/// and one given while it was off again, after it came back on.
#[test]
fn the_stale_event_comes_for_soft_deadlines_given_before_it_was_on() {
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    let mut events = lapse.raw();
    events.cmd(&["SUBSCRIBE", "__keyevent@0__:stale"]);
    r.cmd(&["SET", "early", "v", "PX", "300", "PSTALE", "60000"]);
    // Stale since 1970, gone in 2255.
    r.cmd(&[
        "SET",
        "past",
        "v",
        "PXAT",
        "1000",
        "PSTALE",
        "9000000000000",
    ]);
    r.cmd(&["CONFIG", "SET", "notify-keyspace-events", "Ex"]);
    assert_eq!(event_names(&mut events, 1), ["early"]);
    r.cmd(&["CONFIG", "SET", "notify-keyspace-events", "E$"]);
    r.cmd(&["SET", "later", "v", "PX", "300", "PSTALE", "60000"]);
    r.cmd(&["CONFIG", "SET", "notify-keyspace-events", "Ex"]);
    r.cmd(&["SET", "last", "v", "PX", "600", "PSTALE", "60000"]);
    // "past", stale before anyone listened, never signals.
    assert_eq!(event_names(&mut events, 2), ["later", "last"]);
}

/// The `stale` event (class `x`) comes once, at the soft deadline, in
/// deadline order; EXPIRE moves the soft deadline with the hard one, a
/// plain write drops it.
#[test]
fn the_stale_event_comes_at_the_soft_deadline() {
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    r.cmd(&["CONFIG", "SET", "notify-keyspace-events", "Ex"]);
    let mut events = lapse.raw();
    events.cmd(&["SUBSCRIBE", "__keyevent@0__:stale"]);
    r.cmd(&["SET", "plain", "v", "PX", "200", "PSTALE", "60000"]);
    assert_eq!(r.cmd(&["SET", "plain", "w", "PX", "60000"]), "+OK\r\n");
    let start = std::time::Instant::now();
    r.cmd(&["SET", "moved", "v", "PX", "60000", "PSTALE", "1000"]);
    r.cmd(&["SET", "soon", "v", "PX", "300", "PSTALE", "60000"]);
    // Hard deadline in 1.7 s, grace 1 s kept: stale from 0.7 s.
    assert_eq!(r.cmd(&["PEXPIRE", "moved", "1700"]), ":1\r\n");
    assert_eq!(event_names(&mut events, 1), ["soon"]);
    let soon = start.elapsed();
    // (lapse's clock is read once per loop iteration: a few ms early.)
    assert!(
        soon >= Duration::from_millis(250) && soon < Duration::from_secs(5),
        "{soon:?}"
    );
    assert_eq!(getlease(&mut r, "soon", "1000").1, "refresh");
    assert_eq!(event_names(&mut events, 1), ["moved"]);
    let moved = start.elapsed();
    assert!(moved >= Duration::from_millis(650), "{moved:?}");
    // A stale key's deadline moved again, still stale: no second event
    // ("plain", whose soft deadline a plain write dropped, never comes).
    assert_eq!(r.cmd(&["PEXPIRE", "soon", "30000"]), ":1\r\n");
    r.cmd(&["SET", "last", "v", "PX", "100", "PSTALE", "60000"]);
    assert_eq!(event_names(&mut events, 1), ["last"]);
}

/// Writes keys with and without soft deadlines, one of them big (a
/// background save writes it in pieces).
fn write_soft_keys(r: &mut Raw) {
    // Stale at once, gone in an hour.
    r.cmd(&["SET", "stale", "v", "PX", "1", "PSTALE", "3600000"]);
    r.cmd(&["SET", "fresh", "v", "EX", "3600", "STALE", "60"]);
    r.cmd(&["SET", "plain", "v", "EX", "3600"]);
    let big = "x".repeat(1_500_000);
    r.cmd(&["SET", "bigstale", &big, "PX", "1", "PSTALE", "3600000"]);
}

/// The soft deadlines `write_soft_keys` gave, as GETLEASE sees them (each
/// lease handed back).
fn check_soft_keys(r: &mut Raw, who: &str) {
    for (key, want) in [
        ("stale", "refresh"),
        ("bigstale", "refresh"),
        ("fresh", "fresh"),
        ("plain", "fresh"),
    ] {
        let (_, state, token) = getlease(r, key, "60000");
        assert_eq!(state, want, "{who}: {key}");
        if let Some(token) = token {
            let released = r.cmd(&["LEASE", "RELEASE", key, &token.to_string()]);
            assert_eq!(released, ":1\r\n", "{who}");
        }
    }
    let ttl: i64 = r.cmd(&["TTL", "stale"])[1..].trim().parse().unwrap();
    assert!((3500..=3600).contains(&ttl), "{who}: {ttl}");
}

/// Soft deadlines survive DEBUG RELOAD and restarts from the RDB and from
/// the AOF (its increments, and a base of either form); redis-server
/// and its checkers read every file, the keys with their hard deadline.
#[test]
fn soft_deadlines_survive_files() {
    for (name, extra) in [
        ("rdb", "appendonly no\n"),
        ("aof-rdb", "appendonly yes\nsave \"\"\n"),
        (
            "aof-cmds",
            "appendonly yes\nsave \"\"\naof-use-rdb-preamble no\n",
        ),
    ] {
        let dir = common::temp_dir(&format!("stampede-{name}"));
        let conf = common::conf_in(&dir, extra);
        let conf = conf.to_str().unwrap();
        let mut lapse = Server::lapse(&[conf]);
        let mut r = lapse.raw();
        write_soft_keys(&mut r);
        check_soft_keys(&mut r, name);
        assert_eq!(r.cmd(&["DEBUG", "RELOAD"]), "+OK\r\n");
        check_soft_keys(&mut r, &format!("{name}, reloaded"));
        let aof = name != "rdb";
        let restart = |r: Raw, lapse: Server| {
            drop(r);
            drop(lapse);
            let lapse = Server::lapse(&[conf]);
            let r = lapse.raw();
            (r, lapse)
        };
        if aof {
            // Replayed from the increments (and the RELOAD's base).
            let (mut r2, lapse2) = restart(r, lapse);
            check_soft_keys(&mut r2, &format!("{name}, replayed"));
            assert!(r2.cmd(&["BGREWRITEAOF"]).starts_with('+'));
            assert!(eventually(Duration::from_secs(60), || {
                info_field(&mut r2, "persistence", "aof_rewrite_in_progress") == "0"
                    && info_field(&mut r2, "persistence", "aof_rewrite_scheduled") == "0"
            }));
            (r, lapse) = restart(r2, lapse2);
        } else {
            assert_eq!(r.cmd(&["SAVE"]), "+OK\r\n");
            (r, lapse) = restart(r, lapse);
        }
        check_soft_keys(&mut r, &format!("{name}, restarted"));
        drop(r);
        drop(lapse);
        let dir_arg = dir.to_str().unwrap();
        let theirs = if aof {
            let manifest = dir.join("appendonlydir/appendonly.aof.manifest");
            if let Some(out) = common::run_tool("redis-check-aof", &[manifest.as_os_str()]) {
                let text = String::from_utf8_lossy(&out.stdout);
                assert!(out.status.success(), "{name}: {text}");
            }
            Server::redis_with(&["--dir", dir_arg, "--appendonly", "yes"])
        } else {
            let rdb = dir.join("dump.rdb");
            if let Some(out) = common::run_tool("redis-check-rdb", &[rdb.as_os_str()]) {
                let text = String::from_utf8_lossy(&out.stdout);
                assert!(
                    out.status.success() && text.contains("Checksum OK"),
                    "{text}"
                );
            }
            Server::redis_with(&["--dir", dir_arg])
        };
        if let Some(redis) = theirs {
            let mut theirs = redis.raw();
            assert_eq!(theirs.cmd(&["DBSIZE"]), ":4\r\n", "{name}");
            let ttl: i64 = theirs.cmd(&["TTL", "stale"])[1..].trim().parse().unwrap();
            assert!((3500..=3600).contains(&ttl), "{name}: {ttl}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A lapse replica keeps the primary's soft deadlines (as absolute
/// times), refuses GETLEASE while a replica (leases live on the
/// primary), and has them as a primary after a failover; a redis-server
/// replica follows the same stream, the keys with their hard deadline.
#[test]
fn soft_deadlines_reach_replicas() {
    let primary = Server::lapse(&[]);
    let replica = Server::lapse(&[]);
    let redis = Server::redis();
    let mut r = primary.raw();
    let port = primary.port.to_string();
    let mut followers = vec![replica.raw()];
    followers.extend(redis.iter().map(Server::raw));
    for f in &mut followers {
        f.cmd(&["REPLICAOF", "127.0.0.1", &port]);
    }
    // Before the link: in the full sync's RDB; after: in the stream.
    r.cmd(&["SET", "synced", "v", "PX", "1", "PSTALE", "3600000"]);
    for f in &mut followers {
        assert!(eventually(Duration::from_secs(10), || info_field(
            f,
            "replication",
            "master_link_status"
        ) == "up"));
    }
    write_soft_keys(&mut r);
    r.cmd(&["SET", "last", "v"]);
    for f in &mut followers {
        assert!(eventually(Duration::from_secs(10), || f
            .cmd(&["GET", "last"])
            == "$1\r\nv\r\n"));
    }
    let mut s = replica.raw();
    let refused = s.cmd(&["GETLEASE", "stale", "1000"]);
    assert!(refused.starts_with("-READONLY"), "{refused}");
    if let Some(theirs) = followers.get_mut(1) {
        assert_eq!(theirs.cmd(&["DBSIZE"]), ":6\r\n");
        let ttl: i64 = theirs.cmd(&["TTL", "stale"])[1..].trim().parse().unwrap();
        assert!((3500..=3600).contains(&ttl), "{ttl}");
    }
    assert_eq!(s.cmd(&["REPLICAOF", "NO", "ONE"]), "+OK\r\n");
    check_soft_keys(&mut s, "promoted replica");
    assert_eq!(getlease(&mut s, "synced", "1000").1, "refresh");
}

/// GETLEASE as the rest of the server sees it: a blocking read in the
/// `string` group (ACL categories, COMMAND DOCS), served like GET under
/// CLIENT PAUSE WRITE and at the memory limit, never blocking inside a
/// script, counted in commandstats and shown by MONITOR.
#[test]
fn getlease_among_the_other_commands() {
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    let cats = r.cmd(&["ACL", "CAT", "blocking"]);
    assert!(cats.contains("getlease"), "{cats}");
    let docs = r.cmd(&["COMMAND", "DOCS", "getlease"]);
    for part in ["lease-milliseconds", "WAIT", "BETA", "O(1)"] {
        assert!(docs.contains(part), "{docs}");
    }
    r.cmd(&[
        "ACL",
        "SETUSER",
        "nb",
        "on",
        "nopass",
        "+@all",
        "-@blocking",
        "~*",
    ]);
    let mut nb = lapse.raw();
    nb.cmd(&["AUTH", "nb", "x"]);
    let refused = nb.cmd(&["GETLEASE", "k", "100"]);
    assert!(refused.starts_with("-NOPERM"), "{refused}");
    // A script's GETLEASE answers at once.
    let mut holder = lapse.raw();
    assert_eq!(getlease(&mut holder, "k", "60000").1, "fill");
    let script = "return redis.call('GETLEASE', KEYS[1], '100', 'WAIT', '10000')";
    let reply = r.cmd(&["EVAL", script, "1", "k"]);
    assert!(reply.contains("busy"), "{reply}");
    // CLIENT PAUSE WRITE holds writes, not GETLEASE.
    r.cmd(&["SET", "f", "v"]);
    let mut pauser = lapse.raw();
    pauser.cmd(&["CLIENT", "PAUSE", "10000", "WRITE"]);
    assert_eq!(getlease(&mut r, "f", "100").1, "fresh");
    assert_eq!(getlease(&mut r, "missing", "100").1, "fill");
    pauser.cmd(&["CLIENT", "UNPAUSE"]);
    // Past the memory limit writes are refused, GETLEASE is not.
    r.cmd(&["CONFIG", "SET", "maxmemory", "1"]);
    let oom = r.cmd(&["SET", "x", "y"]);
    assert!(oom.starts_with("-OOM"), "{oom}");
    assert_eq!(getlease(&mut r, "f", "100").1, "fresh");
    r.cmd(&["CONFIG", "SET", "maxmemory", "0"]);
    let mut monitor = lapse.raw();
    assert_eq!(monitor.cmd(&["MONITOR"]), "+OK\r\n");
    getlease(&mut r, "f", "100");
    let line = String::from_utf8_lossy(&monitor.reply()).into_owned();
    assert!(line.contains("\"GETLEASE\" \"f\" \"100\""), "{line}");
    let stats = r.cmd(&["INFO", "commandstats"]);
    assert!(stats.contains("cmdstat_getlease:calls="), "{stats}");
}

/// A key past its hard deadline that GETLEASE itself finds and removes
/// is a missing key: the fill lease it grants holds through the expiry
/// that removal signals (the filler's write is not fenced, nobody else
/// fills).
#[test]
fn a_fill_lease_outlives_the_expiry_its_own_lookup_found() {
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    let mut other = lapse.raw();
    r.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    // A lease out elsewhere: the server records every key event.
    assert_eq!(getlease(&mut other, "elsewhere", "60000").1, "fill");
    r.cmd(&["SET", "k", "v", "PX", "1"]);
    std::thread::sleep(Duration::from_millis(20));
    let (_, state, token) = getlease(&mut r, "k", "10000");
    assert_eq!(state, "fill");
    assert_eq!(getlease(&mut other, "k", "10000").1, "busy");
    let token = token.unwrap().to_string();
    assert_eq!(r.cmd(&["SET", "k", "w", "LEASE", &token]), "+OK\r\n");
    assert_eq!(getlease(&mut other, "k", "10000").1, "fresh");
}
