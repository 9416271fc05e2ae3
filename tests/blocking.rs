//! Blocking commands over TCP (issue 15): errors, timeouts, wake order
//! across waiting clients, multi-key waits, a key of the wrong type while
//! waiting, pushes inside MULTI/EXEC waking waiters after EXEC, RENAME and
//! MOVE onto a waited key, requests pipelined behind a blocked one. The
//! transcript was recorded from redis-server 7.0.15 with four clients and
//! is checked against it where it is installed. Then CLIENT UNBLOCK, a
//! client that disconnects while blocked, and a real client library's
//! worker loop.

mod common;

use std::time::Duration;

use common::{eventually, info_field, replay_transcript, Raw, Server, Step};

const TRANSCRIPT: &[Step] = &[
    Step::Cmd(3, &["FLUSHALL"], b"+OK\r\n"),
    Step::Cmd(3, &["BLPOP", "k", "-1"], b"-ERR timeout is negative\r\n"),
    Step::Cmd(
        3,
        &["BLPOP", "k", "x"],
        b"-ERR timeout is not a float or out of range\r\n",
    ),
    Step::Cmd(3, &["BLPOP", "k", "1e400"], b"-ERR timeout is negative\r\n"),
    Step::Cmd(3, &["BLPOP", "k", "inf"], b"-ERR timeout is negative\r\n"),
    Step::Cmd(
        3,
        &["BZPOPMIN", "k", "-0.5"],
        b"-ERR timeout is negative\r\n",
    ),
    Step::Cmd(
        3,
        &["BLMPOP", "1", "0", "k", "LEFT"],
        b"-ERR numkeys should be greater than 0\r\n",
    ),
    Step::Cmd(
        3,
        &["BLMPOP", "x", "1", "k", "UP"],
        b"-ERR syntax error\r\n",
    ),
    Step::Cmd(
        3,
        &["BZMPOP", "x", "1", "k", "MIN"],
        b"-ERR timeout is not a float or out of range\r\n",
    ),
    Step::Cmd(
        3,
        &["BZMPOP", "1", "1", "k", "UP"],
        b"-ERR syntax error\r\n",
    ),
    Step::Cmd(
        3,
        &["LMPOP", "1", "k", "LEFT", "COUNT", "0"],
        b"-ERR count should be greater than 0\r\n",
    ),
    Step::Cmd(3, &["LMPOP", "2", "k", "LEFT"], b"-ERR syntax error\r\n"),
    Step::Cmd(
        3,
        &["ZMPOP", "1", "k", "MIN", "COUNT", "1", "COUNT", "2"],
        b"-ERR syntax error\r\n",
    ),
    Step::Cmd(
        3,
        &["BLMOVE", "a", "b", "UP", "LEFT", "0"],
        b"-ERR syntax error\r\n",
    ),
    Step::Cmd(3, &["SET", "str", "v"], b"+OK\r\n"),
    Step::Cmd(
        3,
        &["BLPOP", "str", "0"],
        b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    ),
    Step::Cmd(
        3,
        &["BLPOP", "nokey", "str", "0"],
        b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    ),
    Step::Cmd(
        3,
        &["BZPOPMIN", "str", "0"],
        b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
    ),
    Step::Cmd(3, &["RPUSH", "l1", "a"], b":1\r\n"),
    Step::Cmd(
        3,
        &["BLPOP", "l1", "str", "0"],
        b"*2\r\n$2\r\nl1\r\n$1\r\na\r\n",
    ),
    Step::Cmd(3, &["BLPOP", "nokey", "0.05"], b"*-1\r\n"),
    Step::Cmd(3, &["BZPOPMAX", "nokey", "0.05"], b"*-1\r\n"),
    Step::Cmd(
        3,
        &["BLMOVE", "nokey", "d", "LEFT", "LEFT", "0.05"],
        b"*-1\r\n",
    ),
    Step::Send(0, &["BLPOP", "q", "0"]),
    Step::Sleep(30),
    Step::Send(1, &["BLPOP", "q", "0"]),
    Step::Sleep(30),
    Step::Send(2, &["BRPOP", "q", "0"]),
    Step::Sleep(30),
    Step::Cmd(3, &["RPUSH", "q", "a", "b"], b":2\r\n"),
    Step::Read(0, b"*2\r\n$1\r\nq\r\n$1\r\na\r\n"),
    Step::Read(1, b"*2\r\n$1\r\nq\r\n$1\r\nb\r\n"),
    Step::Cmd(3, &["LLEN", "q"], b":0\r\n"),
    Step::Cmd(3, &["RPUSH", "q", "c"], b":1\r\n"),
    Step::Read(2, b"*2\r\n$1\r\nq\r\n$1\r\nc\r\n"),
    Step::Send(0, &["BLPOP", "k1", "k2", "0"]),
    Step::Sleep(30),
    Step::Cmd(3, &["RPUSH", "k2", "x"], b":1\r\n"),
    Step::Read(0, b"*2\r\n$2\r\nk2\r\n$1\r\nx\r\n"),
    Step::Cmd(3, &["RPUSH", "k1", "a"], b":1\r\n"),
    Step::Cmd(3, &["RPUSH", "k2", "b"], b":1\r\n"),
    Step::Cmd(
        0,
        &["BLPOP", "k2", "k1", "0"],
        b"*2\r\n$2\r\nk2\r\n$1\r\nb\r\n",
    ),
    Step::Cmd(
        0,
        &["BLPOP", "k3", "k1", "0"],
        b"*2\r\n$2\r\nk1\r\n$1\r\na\r\n",
    ),
    Step::Send(0, &["BLPOP", "w", "0"]),
    Step::Sleep(30),
    Step::Cmd(3, &["SET", "w", "v"], b"+OK\r\n"),
    Step::Sleep(30),
    Step::Cmd(3, &["DEL", "w"], b":1\r\n"),
    Step::Cmd(3, &["RPUSH", "w", "x"], b":1\r\n"),
    Step::Read(0, b"*2\r\n$1\r\nw\r\n$1\r\nx\r\n"),
    Step::Send(0, &["BLPOP", "m", "0"]),
    Step::Sleep(30),
    Step::Cmd(3, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(3, &["RPUSH", "m", "a", "b"], b"+QUEUED\r\n"),
    Step::Cmd(3, &["LPOP", "m"], b"+QUEUED\r\n"),
    Step::Cmd(3, &["EXEC"], b"*2\r\n:2\r\n$1\r\na\r\n"),
    Step::Read(0, b"*2\r\n$1\r\nm\r\n$1\r\nb\r\n"),
    Step::Cmd(3, &["LLEN", "m"], b":0\r\n"),
    Step::Cmd(3, &["MULTI"], b"+OK\r\n"),
    Step::Cmd(3, &["BLPOP", "empty", "0"], b"+QUEUED\r\n"),
    Step::Cmd(3, &["BZPOPMIN", "empty", "0"], b"+QUEUED\r\n"),
    Step::Cmd(3, &["EXEC"], b"*2\r\n*-1\r\n*-1\r\n"),
    Step::Send(0, &["BLPOP", "p", "0"]),
    Step::Send(0, &["PING"]),
    Step::Sleep(30),
    Step::Cmd(3, &["RPUSH", "p", "x"], b":1\r\n"),
    Step::Read(0, b"*2\r\n$1\r\np\r\n$1\r\nx\r\n"),
    Step::Read(0, b"+PONG\r\n"),
    Step::Send(0, &["BLMOVE", "src", "dst", "RIGHT", "LEFT", "0"]),
    Step::Sleep(30),
    Step::Cmd(3, &["RPUSH", "src", "1", "2"], b":2\r\n"),
    Step::Read(0, b"$1\r\n2\r\n"),
    Step::Cmd(3, &["LRANGE", "dst", "0", "-1"], b"*1\r\n$1\r\n2\r\n"),
    Step::Send(0, &["BRPOPLPUSH", "src2", "dst", "0"]),
    Step::Sleep(30),
    Step::Cmd(3, &["LPUSH", "src2", "z"], b":1\r\n"),
    Step::Read(0, b"$1\r\nz\r\n"),
    Step::Send(0, &["BZPOPMIN", "zs", "0"]),
    Step::Sleep(30),
    Step::Cmd(3, &["ZADD", "zs", "2", "b", "1", "a"], b":2\r\n"),
    Step::Read(0, b"*3\r\n$2\r\nzs\r\n$1\r\na\r\n$1\r\n1\r\n"),
    Step::Send(0, &["BLMPOP", "0", "2", "n1", "n2", "RIGHT", "COUNT", "3"]),
    Step::Sleep(30),
    Step::Cmd(3, &["RPUSH", "n2", "1", "2"], b":2\r\n"),
    Step::Read(0, b"*2\r\n$2\r\nn2\r\n*2\r\n$1\r\n2\r\n$1\r\n1\r\n"),
    Step::Send(0, &["BZMPOP", "0", "1", "zs2", "MAX", "COUNT", "2"]),
    Step::Sleep(30),
    Step::Cmd(3, &["ZADD", "zs2", "1", "a", "2", "b", "3", "c"], b":3\r\n"),
    Step::Read(
        0,
        b"*2\r\n$3\r\nzs2\r\n*2\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n",
    ),
    Step::Send(0, &["BLPOP", "r", "0"]),
    Step::Sleep(30),
    Step::Cmd(3, &["RPUSH", "tmp", "x"], b":1\r\n"),
    Step::Cmd(3, &["RENAME", "tmp", "r"], b"+OK\r\n"),
    Step::Read(0, b"*2\r\n$1\r\nr\r\n$1\r\nx\r\n"),
    Step::Send(0, &["BLPOP", "mv", "0"]),
    Step::Sleep(30),
    Step::Cmd(3, &["SELECT", "1"], b"+OK\r\n"),
    Step::Cmd(3, &["RPUSH", "mv", "y"], b":1\r\n"),
    Step::Cmd(3, &["MOVE", "mv", "0"], b":1\r\n"),
    Step::Cmd(3, &["SELECT", "0"], b"+OK\r\n"),
    Step::Read(0, b"*2\r\n$2\r\nmv\r\n$1\r\ny\r\n"),
    Step::Send(0, &["BLPOP", "t", "10"]),
    Step::Sleep(30),
    Step::Cmd(3, &["RPUSH", "t", "x"], b":1\r\n"),
    Step::Read(0, b"*2\r\n$1\r\nt\r\n$1\r\nx\r\n"),
    Step::Send(0, &["BLPOP", "t2", "0.1"]),
    Step::Sleep(250),
    Step::Read(0, b"*-1\r\n"),
    Step::Cmd(
        3,
        &["INFO", "keyspace"],
        b"$44\r\n# Keyspace\r\ndb0:keys=5,expires=0,avg_ttl=0\r\n\r\n",
    ),
];

#[test]
fn blocking_commands_match_redis() {
    let lapse = Server::lapse(&[]);
    replay_transcript(lapse.port, 4, TRANSCRIPT, "lapse");
}

#[test]
fn recorded_transcript_is_redis_servers() {
    let Some(redis) = Server::redis() else {
        return;
    };
    replay_transcript(redis.port, 4, TRANSCRIPT, "redis-server");
}

/// Timeouts under a millisecond are rounded up, as Redis 7.0 does
/// (`ceill`): every blocking command given one answers as a timeout does,
/// soon, instead of waiting forever; a timeout of 0 still waits forever.
fn tiny_timeouts(server: &Server) -> Vec<String> {
    let mut r = server.raw();
    assert_eq!(r.cmd(&["XADD", "s", "1-1", "f", "v"]), "$3\r\n1-1\r\n");
    assert_eq!(r.cmd(&["XGROUP", "CREATE", "s", "g", "$"]), "+OK\r\n");
    let calls: &[&[&str]] = &[
        &["BLPOP", "nolist", "0.001"],
        &["BRPOP", "nolist", "0.0001"],
        &["BLPOP", "nolist", "1e-300"],
        &["BLMPOP", "0.0005", "1", "nolist", "LEFT"],
        &["BLMOVE", "nolist", "dst", "LEFT", "RIGHT", "0.001"],
        &["BRPOPLPUSH", "nolist", "dst", "0.0001"],
        &["BZPOPMIN", "nozset", "0.001"],
        &["BZPOPMAX", "nozset", "0.0001"],
        &["BZMPOP", "0.0001", "1", "nozset", "MIN"],
        &["XREAD", "BLOCK", "1", "STREAMS", "s", "$"],
        &[
            "XREADGROUP",
            "GROUP",
            "g",
            "c",
            "BLOCK",
            "1",
            "STREAMS",
            "s",
            ">",
        ],
        &["BLPOP", "nolist", "-0.0001"],
    ];
    let mut seen = Vec::new();
    for call in calls {
        let started = std::time::Instant::now();
        let reply = if call[call.len() - 1] == "-0.0001" {
            // Rounds to 0: waits until something comes.
            r.send_cmd(&call.iter().map(|a| a.as_bytes()).collect::<Vec<_>>());
            assert_eq!(server.raw().cmd(&["RPUSH", "nolist", "x"]), ":1\r\n");
            String::from_utf8_lossy(&r.reply()).into_owned()
        } else {
            r.cmd(call)
        };
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{call:?} waited {:?}",
            started.elapsed()
        );
        seen.push(format!("{call:?} -> {reply}"));
    }
    seen
}

#[test]
fn timeouts_under_a_millisecond_end() {
    let seen = common::same_on_lapse_and_redis(tiny_timeouts);
    assert!(seen[0].ends_with("*-1\r\n"), "{seen:?}");
}

fn blocked_clients(r: &mut Raw) -> u64 {
    info_field(r, "clients", "blocked_clients").parse().unwrap()
}

#[test]
fn client_unblock_ends_a_wait() {
    let lapse = Server::lapse(&[]);
    let mut admin = lapse.raw();
    let mut waiter = lapse.raw();
    let id = waiter.cmd(&["CLIENT", "ID"]);
    let id = id.trim().trim_start_matches(':').to_string();
    assert_eq!(admin.cmd(&["CLIENT", "UNBLOCK", &id]), ":0\r\n");
    for (how, expected) in [
        ("TIMEOUT", "*-1\r\n"),
        (
            "ERROR",
            "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n",
        ),
    ] {
        waiter.send_cmd(&[b"BLPOP", b"never", b"0"]);
        assert!(eventually(Duration::from_secs(5), || {
            blocked_clients(&mut admin) == 1
        }));
        let list = admin.cmd(&["CLIENT", "LIST", "ID", &id]);
        assert!(list.contains("flags=b"), "{list}");
        assert_eq!(admin.cmd(&["CLIENT", "UNBLOCK", &id, how]), ":1\r\n");
        assert_eq!(String::from_utf8_lossy(&waiter.reply()), expected);
        assert_eq!(blocked_clients(&mut admin), 0);
    }
    assert_eq!(
        admin.cmd(&["CLIENT", "UNBLOCK", &id, "SOON"]),
        "-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n"
    );
    assert_eq!(waiter.cmd(&["PING"]), "+PONG\r\n");
}

/// A client that disconnects while blocked is forgotten: a later push
/// stays in the list, and the idle timeout never closes a waiting client.
#[test]
fn disconnected_and_idle_waiters() {
    let lapse = Server::lapse(&["--timeout", "1"]);
    let mut admin = lapse.raw();
    {
        let mut gone = lapse.raw();
        gone.send_cmd(&[b"BLPOP", b"q", b"0"]);
        assert!(eventually(Duration::from_secs(5), || {
            blocked_clients(&mut admin) == 1
        }));
    }
    assert!(eventually(Duration::from_secs(5), || {
        blocked_clients(&mut admin) == 0
    }));
    assert_eq!(admin.cmd(&["RPUSH", "q", "x"]), ":1\r\n");
    assert_eq!(admin.cmd(&["LLEN", "q"]), ":1\r\n");
    // Idle for longer than `timeout 1`, but blocked: still connected.
    let mut patient = lapse.raw();
    patient.send_cmd(&[b"BLPOP", b"later", b"0"]);
    for _ in 0..5 {
        // The admin client stays active; the waiter does nothing.
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(admin.cmd(&["PING"]), "+PONG\r\n");
    }
    assert_eq!(admin.cmd(&["RPUSH", "later", "y"]), ":1\r\n");
    assert_eq!(
        String::from_utf8_lossy(&patient.reply()),
        "*2\r\n$5\r\nlater\r\n$1\r\ny\r\n"
    );
}

/// A worker loop as applications write it with the `redis` crate: BLPOP
/// with a timeout, fed by a producer on another connection.
#[test]
fn a_client_library_worker_receives_jobs() {
    let lapse = Server::lapse(&[]);
    let port = lapse.port;
    let worker = std::thread::spawn(move || {
        let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
        let mut con = client.get_connection().unwrap();
        let mut jobs = Vec::new();
        while jobs.len() < 100 {
            let job: Option<(String, String)> = redis::cmd("BLPOP")
                .arg("jobs")
                .arg(5)
                .query(&mut con)
                .unwrap();
            jobs.push(job.expect("a job within 5 s").1);
        }
        jobs
    });
    let mut producer = lapse.client();
    for i in 0..100 {
        let _: i64 = redis::cmd("RPUSH")
            .arg("jobs")
            .arg(format!("job:{i}"))
            .query(&mut producer)
            .unwrap();
    }
    let jobs = worker.join().unwrap();
    let expected: Vec<String> = (0..100).map(|i| format!("job:{i}")).collect();
    assert_eq!(jobs, expected);
}

/// A blocked command counts once however it ends: woken by a push, after
/// passing over a key of the wrong type, or timing out (INFO commandstats
/// calls and `total_commands_processed`), as in Redis 7.0.
fn counted_once(server: &Server) -> Vec<String> {
    let (mut admin, mut waiter) = (server.raw(), server.raw());
    let mut seen = vec![admin.cmd(&["CONFIG", "RESETSTAT"])];
    // The INFO polls are commands too: counted, then left out.
    let mut polls = 0;
    let mut wait_blocked = |admin: &mut Raw| {
        assert!(eventually(Duration::from_secs(5), || {
            polls += 1;
            blocked_clients(admin) == 1
        }));
    };
    waiter.send_cmd(&[b"BLPOP", b"q", b"0"]);
    wait_blocked(&mut admin);
    seen.push(admin.cmd(&["RPUSH", "q", "x"]));
    seen.push(String::from_utf8_lossy(&waiter.reply()).into_owned());
    waiter.send_cmd(&[b"BLPOP", b"q", b"0"]);
    wait_blocked(&mut admin);
    seen.push(admin.cmd(&["SET", "q", "s"]));
    seen.push(admin.cmd(&["DEL", "q"]));
    seen.push(admin.cmd(&["RPUSH", "q", "y"]));
    seen.push(String::from_utf8_lossy(&waiter.reply()).into_owned());
    seen.push(waiter.cmd(&["BLPOP", "q", "0.05"]));
    let processed: i64 = info_field(&mut admin, "stats", "total_commands_processed")
        .parse()
        .unwrap();
    seen.push(format!("processed {}", processed - polls));
    let stats = admin.cmd(&["INFO", "commandstats"]);
    for name in ["blpop", "rpush"] {
        let line = stats
            .lines()
            .find(|l| l.starts_with(&format!("cmdstat_{name}:")));
        let calls = line.and_then(|l| l.split(',').next()).unwrap_or_default();
        seen.push(calls.to_string());
    }
    seen
}

#[test]
fn a_woken_command_counts_once_as_in_redis() {
    let seen = common::same_on_lapse_and_redis(counted_once);
    assert_eq!(seen[seen.len() - 2], "cmdstat_blpop:calls=3");
}

/// A key made ready and expired inside one EXEC (RPUSH, PEXPIRE 100,
/// DEBUG SLEEP 0.2) wakes no blocked client: its wait goes on until
/// CLIENT UNBLOCK, as in Redis (the ready keys are served against the time
/// after the command, not before it).
fn expired_before_served(server: &common::Server) -> Vec<String> {
    let (mut blocked, mut r) = (server.raw(), server.raw());
    let id = blocked.cmd(&["CLIENT", "ID"]);
    let id = id.trim_start_matches(':').trim_end().to_string();
    let mut seen = vec![r.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"])];
    blocked.send_cmd(&[b"BRPOP", b"k", b"0"]);
    let waiting = common::blocked_clients_reach(&mut r, 1);
    seen.push(format!("{waiting}"));
    for cmd in [
        "MULTI",
        "RPUSH k hello",
        "PEXPIRE k 100",
        "DEBUG SLEEP 0.2",
        "EXEC",
    ] {
        let args: Vec<&str> = cmd.split(' ').collect();
        seen.push(r.cmd(&args));
    }
    let list = r.cmd(&["CLIENT", "LIST", "ID", &id]);
    seen.push(format!("{}", list.contains("flags=b")));
    seen.push(r.cmd(&["CLIENT", "UNBLOCK", &id]));
    seen.push(String::from_utf8_lossy(&blocked.reply()).into_owned());
    seen.push(r.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]));
    seen
}

#[test]
fn a_key_expired_inside_exec_wakes_no_one_as_in_redis() {
    let seen = common::same_on_lapse_and_redis(expired_before_served);
    assert_eq!(seen[7], "true");
}

/// A server that becomes a replica ends every wait with Redis's
/// `UNBLOCKED ... instance state changed` error and closes those
/// connections (Redis's `disconnectAllBlockedClients`): a blocked write
/// (BLMOVE here) can never run on a replica when its key fills from the
/// primary's stream.
fn state_change_unblocks(server: &Server) -> Vec<String> {
    let (mut blocked, mut admin) = (server.raw(), server.raw());
    blocked.send_cmd(&[b"BLMOVE", b"src", b"dst", b"LEFT", b"RIGHT", b"0"]);
    assert!(common::blocked_clients_reach(&mut admin, 1));
    // An address nothing listens on: the link stays down, which is enough.
    let mut seen = vec![admin.cmd(&["REPLICAOF", "127.0.0.1", "1"])];
    seen.push(String::from_utf8_lossy(&blocked.reply()).into_owned());
    seen.push(format!("closed {}", blocked.is_closed()));
    seen.push(admin.cmd(&["REPLICAOF", "NO", "ONE"]));
    seen
}

#[test]
fn becoming_a_replica_unblocks_and_closes_blocked_clients_as_redis_does() {
    let seen = common::same_on_lapse_and_redis(state_change_unblocks);
    assert!(seen[1].starts_with("-UNBLOCKED force unblock"), "{seen:?}");
    assert_eq!(seen[2], "closed true");
}
