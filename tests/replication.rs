//! Replication, lapse as a replica of redis-server 7.0: the handshake,
//! full sync from disk and diskless, the command stream, ACKs (WAIT),
//! read-only replicas, Redis's expiry rules on replicas, promotion, and
//! a dropped link.
//!
//! Needs `redis-server` (see `Server::redis`).

mod common;

use std::time::Duration;

use common::{more_writes, populate, Raw, Server};

fn info(r: &mut Raw, field: &str) -> String {
    common::info_field(r, "replication", field)
}

/// Waits until the replica's link is up and it has applied everything
/// the primary has sent.
fn wait_in_sync(primary: &mut Raw, replica: &mut Raw) {
    let synced = common::eventually(Duration::from_secs(30), || {
        info(replica, "master_link_status") == "up"
            && info(replica, "slave_repl_offset") == info(primary, "master_repl_offset")
    });
    assert!(
        synced,
        "not in sync: replica {} at {}, primary at {}",
        info(replica, "master_link_status"),
        info(replica, "slave_repl_offset"),
        info(primary, "master_repl_offset")
    );
}

/// A lapse primary in a directory of its own (a disk sync's RDB goes
/// there), no save points, full syncs started without waiting for more
/// replicas; `extra` flags after those.
fn lapse_primary(name: &str, extra: &[&str]) -> Server {
    let dir = common::temp_dir(name);
    let mut args = vec![
        "--save",
        "",
        "--dir",
        dir.to_str().unwrap(),
        "--repl-diskless-sync-delay",
        "0",
    ];
    args.extend_from_slice(extra);
    Server::lapse(&args)
}

/// A redis-server primary (diskless or from disk, without the delay a
/// diskless sync waits for more replicas).
fn primary(diskless: bool) -> Option<Server> {
    let diskless = if diskless { "yes" } else { "no" };
    Server::redis_with(&[
        "--repl-diskless-sync",
        diskless,
        "--repl-diskless-sync-delay",
        "0",
    ])
}

#[test]
fn lapse_replicates_a_redis_server_primary() {
    for diskless in [true, false] {
        let Some(redis) = primary(diskless) else {
            return;
        };
        let mut p = redis.raw();
        populate(&mut p);
        let lapse = Server::lapse(&[]);
        let mut r = lapse.raw();
        assert_eq!(info(&mut r, "role"), "master");
        let port = redis.port.to_string();
        assert_eq!(r.cmd(&["REPLICAOF", "127.0.0.1", &port]), "+OK\r\n");
        assert_eq!(
            r.cmd(&["REPLICAOF", "127.0.0.1", &port]),
            "+OK Already connected to specified master\r\n"
        );
        wait_in_sync(&mut p, &mut r);
        assert_eq!(r.cmd(&["DEBUG", "DIGEST"]), p.cmd(&["DEBUG", "DIGEST"]));
        assert_eq!(common::stream_groups(&mut r), common::stream_groups(&mut p));
        assert!(r.cmd(&["FUNCTION", "LIST"]).contains("mylib"));
        more_writes(&mut p);
        wait_in_sync(&mut p, &mut r);
        assert_eq!(
            r.cmd(&["DEBUG", "DIGEST"]),
            p.cmd(&["DEBUG", "DIGEST"]),
            "diskless {diskless}"
        );
        assert_eq!(common::stream_groups(&mut r), common::stream_groups(&mut p));
        assert_eq!(
            r.cmd(&["SET", "x", "1"]),
            "-READONLY You can't write against a read only replica.\r\n"
        );
        let role = r.cmd(&["ROLE"]);
        assert!(
            role.starts_with(&format!(
                "*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:{port}\r\n$9\r\nconnected\r\n"
            )),
            "{role}"
        );
        // The primary counts the replica's acknowledgements.
        assert_eq!(p.cmd(&["WAIT", "1", "5000"]), ":1\r\n");
        let replicas = common::info_field(&mut p, "replication", "connected_slaves");
        assert_eq!(replicas, "1");
    }
}

/// Redis's rules for expired keys on a replica: it never deletes one on
/// its own; reads see it as gone (GET, EXISTS, TTL, KEYS, MGET) while
/// DBSIZE still counts it; the primary's DEL removes it. Promoted, it
/// expires keys itself at once.
#[test]
fn a_replica_waits_for_the_primarys_del() {
    let Some(redis) = primary(true) else {
        return;
    };
    let mut p = redis.raw();
    // The primary does not expire on its own either: its DEL comes when
    // this test reads the key there.
    assert_eq!(p.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), "+OK\r\n");
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    r.cmd(&["REPLICAOF", "127.0.0.1", &redis.port.to_string()]);
    wait_in_sync(&mut p, &mut r);
    // A diskless primary streams once it has an ACK after the transfer
    // (up to a second): from then on the stream is prompt.
    assert_eq!(p.cmd(&["SET", "kept", "v"]), "+OK\r\n");
    wait_in_sync(&mut p, &mut r);
    let set_at = std::time::Instant::now();
    // Margins a loaded two-core CI machine keeps.
    assert_eq!(p.cmd(&["SET", "brief", "v", "PX", "1500"]), "+OK\r\n");
    wait_in_sync(&mut p, &mut r);
    assert_eq!(r.cmd(&["GET", "brief"]), "$1\r\nv\r\n");
    assert!(
        set_at.elapsed() < Duration::from_millis(1500),
        "too slow to test"
    );
    std::thread::sleep(Duration::from_millis(1700).saturating_sub(set_at.elapsed()));
    assert_eq!(r.cmd(&["GET", "brief"]), "$-1\r\n");
    assert_eq!(r.cmd(&["EXISTS", "brief"]), ":0\r\n");
    assert_eq!(r.cmd(&["TTL", "brief"]), ":-2\r\n");
    assert_eq!(
        r.cmd(&["MGET", "brief", "kept"]),
        "*2\r\n$-1\r\n$1\r\nv\r\n"
    );
    assert_eq!(r.cmd(&["KEYS", "*"]), "*1\r\n$4\r\nkept\r\n");
    assert_eq!(
        r.cmd(&["DBSIZE"]),
        ":2\r\n",
        "the replica deleted it itself"
    );
    // The primary finds it expired: its DEL reaches the replica.
    assert_eq!(p.cmd(&["GET", "brief"]), "$-1\r\n");
    wait_in_sync(&mut p, &mut r);
    assert_eq!(r.cmd(&["DBSIZE"]), ":1\r\n");

    // Promoted, it expires keys itself.
    assert_eq!(p.cmd(&["SET", "later", "v", "PX", "300"]), "+OK\r\n");
    wait_in_sync(&mut p, &mut r);
    assert_eq!(r.cmd(&["REPLICAOF", "NO", "ONE"]), "+OK\r\n");
    assert_eq!(info(&mut r, "role"), "master");
    assert_eq!(r.cmd(&["SET", "mine", "v"]), "+OK\r\n");
    assert!(
        common::eventually(Duration::from_secs(5), || r.cmd(&["DBSIZE"]) == ":2\r\n"),
        "the promoted replica did not expire 'later'"
    );
}

/// A link the primary drops is made again and continues where it was
/// (PSYNC with the primary's id and offset, `+CONTINUE`: no second full
/// sync), catching up with what was written meanwhile.
#[test]
fn a_dropped_link_is_made_again() {
    let Some(redis) = primary(true) else {
        return;
    };
    let mut p = redis.raw();
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    r.cmd(&["REPLICAOF", "127.0.0.1", &redis.port.to_string()]);
    wait_in_sync(&mut p, &mut r);
    assert_eq!(p.cmd(&["SET", "before", "drop"]), "+OK\r\n");
    wait_in_sync(&mut p, &mut r);
    let stat = |p: &mut Raw, field: &str| common::info_field(p, "stats", field);
    let full_syncs = stat(&mut p, "sync_full");
    assert_eq!(p.cmd(&["CLIENT", "KILL", "TYPE", "replica"]), ":1\r\n");
    assert_eq!(p.cmd(&["SET", "after", "drop"]), "+OK\r\n");
    wait_in_sync(&mut p, &mut r);
    assert_eq!(stat(&mut p, "sync_partial_ok"), "1");
    assert_eq!(stat(&mut p, "sync_full"), full_syncs);
    assert_eq!(
        r.cmd(&["MGET", "before", "after"]),
        "*2\r\n$4\r\ndrop\r\n$4\r\ndrop\r\n"
    );
    assert_eq!(r.cmd(&["DEBUG", "DIGEST"]), p.cmd(&["DEBUG", "DIGEST"]));
}

/// CLIENT KILL answers as redis-server does (old and new forms, errors),
/// closes the clients it names, and `TYPE master` on a replica drops its
/// link, which is made again with a partial resync.
#[test]
fn client_kill_matches_redis_and_drops_the_master_link() {
    let Some(redis) = primary(true) else {
        return;
    };
    let lapse = Server::lapse(&[]);
    for server in [&redis, &lapse] {
        let mut r = server.raw();
        for (args, expected) in [
            (
                &["CLIENT", "KILL", "1.2.3.4:5"][..],
                "-ERR No such client\r\n",
            ),
            (
                &["CLIENT", "KILL", "ID", "0"],
                "-ERR client-id should be greater than 0\r\n",
            ),
            (
                &["CLIENT", "KILL", "ID", "x"],
                "-ERR client-id should be greater than 0\r\n",
            ),
            (
                &["CLIENT", "KILL", "TYPE", "nope"],
                "-ERR Unknown client type 'nope'\r\n",
            ),
            (
                &["CLIENT", "KILL", "USER", "nobody"],
                "-ERR No such user 'nobody'\r\n",
            ),
            (
                &["CLIENT", "KILL", "SKIPME", "maybe"],
                "-ERR syntax error\r\n",
            ),
            (
                &["CLIENT", "KILL", "ID", "999999", "TYPE", "normal"],
                ":0\r\n",
            ),
            (&["CLIENT", "KILL", "TYPE", "master"], ":0\r\n"),
        ] {
            assert_eq!(r.cmd(args), expected, "{args:?}");
        }
        let mut victim = server.raw();
        let id = victim.cmd(&["CLIENT", "ID"]);
        let id = id.trim_start_matches(':').trim();
        assert_eq!(r.cmd(&["CLIENT", "KILL", "ID", id]), ":1\r\n");
        assert!(victim.is_closed());
        // The old form may kill the caller itself, after its reply.
        let me = r.cmd(&["CLIENT", "INFO"]);
        let addr = me
            .split_whitespace()
            .find_map(|w| w.strip_prefix("addr="))
            .unwrap()
            .to_string();
        assert_eq!(r.cmd(&["CLIENT", "KILL", &addr]), "+OK\r\n");
        assert!(r.cmd_closes(&["PING"]));
    }

    let mut p = redis.raw();
    let mut r = lapse.raw();
    r.cmd(&["REPLICAOF", "127.0.0.1", &redis.port.to_string()]);
    wait_in_sync(&mut p, &mut r);
    assert_eq!(p.cmd(&["SET", "k", "1"]), "+OK\r\n");
    wait_in_sync(&mut p, &mut r);
    assert!(r
        .cmd(&["CLIENT", "LIST", "TYPE", "master"])
        .contains("flags=M"));
    assert_eq!(r.cmd(&["CLIENT", "KILL", "TYPE", "master"]), ":1\r\n");
    assert_eq!(p.cmd(&["SET", "k", "2"]), "+OK\r\n");
    wait_in_sync(&mut p, &mut r);
    assert_eq!(r.cmd(&["GET", "k"]), "$1\r\n2\r\n");
    assert_eq!(common::info_field(&mut p, "stats", "sync_partial_ok"), "1");
}

/// CLIENT KILL's LADDR and USER filters, and Redis 7.4's MAXAGE
/// (connections at least that many seconds old; redis-server 7.0 lacks it).
#[test]
fn client_kill_by_laddr_user_and_maxage() {
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    let mut old = lapse.raw();
    assert_eq!(old.cmd(&["PING"]), "+PONG\r\n");
    for (args, expected) in [
        (
            &["CLIENT", "KILL", "MAXAGE", "0"][..],
            "-ERR maxage should be greater than 0\r\n",
        ),
        (
            &["CLIENT", "KILL", "MAXAGE", "x"],
            "-ERR maxage is not an integer or out of range\r\n",
        ),
        (&["CLIENT", "KILL", "MAXAGE", "3600"], ":0\r\n"),
        (&["CLIENT", "KILL", "LADDR", "127.0.0.1:1"], ":0\r\n"),
    ] {
        assert_eq!(r.cmd(args), expected, "{args:?}");
    }
    // Ages are whole seconds: the other client is killed once 1 s old.
    let killed = common::eventually(Duration::from_secs(5), || {
        r.cmd(&["CLIENT", "KILL", "MAXAGE", "1"]) == ":1\r\n"
    });
    assert!(killed && old.is_closed());
    let mut a = lapse.raw();
    let mut b = lapse.raw();
    assert_eq!(a.cmd(&["PING"]), "+PONG\r\n");
    assert_eq!(b.cmd(&["PING"]), "+PONG\r\n");
    let laddr = format!("127.0.0.1:{}", lapse.port);
    assert_eq!(
        r.cmd(&["CLIENT", "KILL", "LADDR", &laddr, "USER", "default"]),
        ":2\r\n"
    );
    assert!(a.is_closed() && b.is_closed());
    assert_eq!(r.cmd(&["PING"]), "+PONG\r\n");
}

/// lapse as a primary: redis-server 7.0 and lapse replicate it (a full
/// sync from a fork-less save of the populated dataset, to disk or
/// straight to the sockets, then the stream), INFO lists them, and a
/// dropped link continues from lapse's backlog (`+CONTINUE`).
#[test]
fn redis_server_and_lapse_replicate_a_lapse_primary() {
    for diskless in ["yes", "no"] {
        replicate_a_lapse_primary(diskless);
    }
}

fn replicate_a_lapse_primary(diskless: &str) {
    // A disk sync's RDB goes to this test's own directory.
    let lapse = lapse_primary("repl-primary", &["--repl-diskless-sync", diskless]);
    let mut p = lapse.raw();
    populate(&mut p);
    let port = lapse.port.to_string();
    let Some(redis) = Server::redis_with(&["--replicaof", "127.0.0.1", &port]) else {
        return;
    };
    let replica = Server::lapse(&["--replicaof", "127.0.0.1", &port]);
    let mut theirs = redis.raw();
    let mut ours = replica.raw();
    wait_in_sync(&mut p, &mut theirs);
    wait_in_sync(&mut p, &mut ours);
    let digest = p.cmd(&["DEBUG", "DIGEST"]);
    assert_eq!(theirs.cmd(&["DEBUG", "DIGEST"]), digest);
    assert_eq!(
        ours.cmd(&["DEBUG", "DIGEST"]),
        digest,
        "diskless {diskless}"
    );
    // Diskless: nothing was written to disk.
    let dir = p.cmd(&["CONFIG", "GET", "dir"]);
    let dir = dir.lines().nth(4).unwrap();
    let on_disk = std::path::Path::new(dir).join("dump.rdb").exists();
    assert_eq!(on_disk, diskless == "no", "{dir}");
    let groups = common::stream_groups(&mut p);
    assert_eq!(common::stream_groups(&mut theirs), groups);
    assert_eq!(common::stream_groups(&mut ours), groups);
    more_writes(&mut p);
    wait_in_sync(&mut p, &mut theirs);
    wait_in_sync(&mut p, &mut ours);
    let digest = p.cmd(&["DEBUG", "DIGEST"]);
    assert_eq!(theirs.cmd(&["DEBUG", "DIGEST"]), digest);
    assert_eq!(ours.cmd(&["DEBUG", "DIGEST"]), digest);
    // Consumer group effects went out as Redis's XCLAIM/XGROUP forms.
    let groups = common::stream_groups(&mut p);
    assert_eq!(common::stream_groups(&mut theirs), groups);
    assert_eq!(common::stream_groups(&mut ours), groups);
    assert_eq!(info(&mut p, "connected_slaves"), "2");
    assert!(info(&mut p, "slave0").contains("state=online"));
    assert_eq!(info(&mut p, "repl_backlog_active"), "1");
    assert_eq!(common::info_field(&mut p, "stats", "sync_full"), "2");

    assert_eq!(p.cmd(&["CLIENT", "KILL", "TYPE", "replica"]), ":2\r\n");
    assert_eq!(p.cmd(&["SET", "after", "the drop"]), "+OK\r\n");
    wait_in_sync(&mut p, &mut theirs);
    wait_in_sync(&mut p, &mut ours);
    assert_eq!(common::info_field(&mut p, "stats", "sync_partial_ok"), "2");
    assert_eq!(common::info_field(&mut p, "stats", "sync_full"), "2");
    let digest = p.cmd(&["DEBUG", "DIGEST"]);
    assert_eq!(theirs.cmd(&["DEBUG", "DIGEST"]), digest);
    assert_eq!(ours.cmd(&["DEBUG", "DIGEST"]), digest);
    // The stream's bytes are counted apart from clients', as in 7.0.
    let bytes = |r: &mut Raw, field: &str| -> u64 {
        common::info_field(r, "stats", field).parse().unwrap()
    };
    assert!(bytes(&mut p, "total_net_repl_output_bytes") > 0);
    assert!(bytes(&mut ours, "total_net_repl_input_bytes") > 0);
    assert!(bytes(&mut p, "total_net_repl_input_bytes") == 0);
}

/// With lapse as the primary, a key's DEL reaches the replica soon after
/// its deadline (lapse's active expiry draws deadlines in order), and the
/// replica never removes it before.
#[test]
fn a_lapse_primarys_expiry_reaches_its_replica() {
    let lapse = lapse_primary("repl-expiry", &[]);
    let mut p = lapse.raw();
    let port = lapse.port.to_string();
    let replica = Server::lapse(&["--replicaof", "127.0.0.1", &port]);
    let mut r = replica.raw();
    wait_in_sync(&mut p, &mut r);
    assert_eq!(p.cmd(&["SET", "brief", "v", "PX", "300"]), "+OK\r\n");
    wait_in_sync(&mut p, &mut r);
    assert_eq!(r.cmd(&["DBSIZE"]), ":1\r\n");
    assert!(
        common::eventually(Duration::from_secs(5), || r.cmd(&["DBSIZE"]) == ":0\r\n"),
        "the primary's DEL never arrived"
    );
    assert_eq!(
        info(&mut r, "slave_repl_offset"),
        info(&mut p, "master_repl_offset")
    );
}

/// WAIT counts the replicas that acknowledged every write made so far:
/// at once when enough did, when they do, or when the timeout passes.
#[test]
fn wait_counts_acknowledging_replicas() {
    let lapse = lapse_primary("repl-wait", &[]);
    let mut p = lapse.raw();
    assert_eq!(p.cmd(&["WAIT", "0", "0"]), ":0\r\n");
    let started = std::time::Instant::now();
    assert_eq!(p.cmd(&["WAIT", "1", "200"]), ":0\r\n");
    assert!(started.elapsed() >= Duration::from_millis(190));
    let port = lapse.port.to_string();
    let replica = Server::lapse(&["--replicaof", "127.0.0.1", &port]);
    let mut r = replica.raw();
    wait_in_sync(&mut p, &mut r);
    assert_eq!(p.cmd(&["SET", "k", "v"]), "+OK\r\n");
    // Answered as soon as the replica acknowledges (GETACK), long before
    // the timeout.
    let started = std::time::Instant::now();
    assert_eq!(p.cmd(&["WAIT", "1", "20000"]), ":1\r\n");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(p.cmd(&["WAIT", "2", "100"]), ":1\r\n");
    assert_eq!(
        r.cmd(&["WAIT", "1", "0"]),
        "-ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.\r\n"
    );
    assert_eq!(p.cmd(&["WAIT", "1", "-1"]), "-ERR timeout is negative\r\n");
    if let Some(redis) = Server::redis() {
        let mut theirs = redis.raw();
        assert_eq!(
            theirs.cmd(&["WAIT", "1", "-1"]),
            "-ERR timeout is negative\r\n"
        );
        assert_eq!(theirs.cmd(&["WAIT", "0", "0"]), ":0\r\n");
    }
}

/// `timeout` closes idle clients, never replication links: a quiet
/// primary's link (and its replica's) stays, with no resync.
#[test]
fn idle_timeouts_spare_replication_links() {
    let lapse = lapse_primary("repl-timeout", &["--timeout", "1"]);
    let mut p = lapse.raw();
    let port = lapse.port.to_string();
    let replica = Server::lapse(&["--replicaof", "127.0.0.1", &port, "--timeout", "1"]);
    let mut r = replica.raw();
    wait_in_sync(&mut p, &mut r);
    std::thread::sleep(Duration::from_millis(2500));
    // (This test's own connections were idle: they are gone.)
    let mut p = lapse.raw();
    let mut r = replica.raw();
    assert_eq!(p.cmd(&["SET", "k", "v"]), "+OK\r\n");
    wait_in_sync(&mut p, &mut r);
    assert_eq!(common::info_field(&mut p, "stats", "sync_partial_ok"), "0");
    assert_eq!(common::info_field(&mut p, "stats", "sync_full"), "1");
}

/// A replica drops a link its primary is silent on for `repl-timeout`
/// seconds and makes it again (continuing from the backlog).
#[test]
fn a_silent_primary_times_out() {
    let lapse = lapse_primary("repl-silent", &[]);
    let mut p = lapse.raw();
    let port = lapse.port.to_string();
    let replica = Server::lapse(&["--replicaof", "127.0.0.1", &port, "--repl-timeout", "1"]);
    let mut r = replica.raw();
    wait_in_sync(&mut p, &mut r);
    assert_eq!(p.cmd(&["SET", "k", "1"]), "+OK\r\n");
    wait_in_sync(&mut p, &mut r);
    // The primary's loop stops for 2.5 s: no data, no pings.
    p.send_cmd(&[b"DEBUG", b"SLEEP", b"2.5"]);
    assert!(
        common::eventually(Duration::from_secs(5), || info(
            &mut r,
            "master_link_status"
        ) == "down"),
        "the replica never noticed the silence"
    );
    assert_eq!(p.reply(), b"+OK\r\n");
    assert_eq!(p.cmd(&["SET", "k", "2"]), "+OK\r\n");
    wait_in_sync(&mut p, &mut r);
    assert_eq!(r.cmd(&["GET", "k"]), "$1\r\n2\r\n");
    assert_eq!(common::info_field(&mut p, "stats", "sync_partial_ok"), "1");
}

/// `min-replicas-to-write`: a primary refuses writes with Redis's
/// NOREPLICAS until enough replicas acknowledge within
/// `min-replicas-max-lag` seconds, and again when they stop.
#[test]
fn min_replicas_to_write_refuses_writes_without_good_replicas() {
    let refused = "-NOREPLICAS Not enough good replicas to write.\r\n";
    if let Some(redis) = Server::redis_with(&["--min-replicas-to-write", "1"]) {
        assert_eq!(redis.raw().cmd(&["SET", "k", "v"]), refused);
    }
    let lapse = lapse_primary(
        "repl-min",
        &[
            "--min-replicas-to-write",
            "1",
            "--min-replicas-max-lag",
            "2",
        ],
    );
    let mut p = lapse.raw();
    assert_eq!(p.cmd(&["SET", "k", "v"]), refused);
    assert_eq!(p.cmd(&["GET", "k"]), "$-1\r\n");
    let port = lapse.port.to_string();
    let replica = Server::lapse(&["--replicaof", "127.0.0.1", &port]);
    let mut r = replica.raw();
    wait_in_sync(&mut p, &mut r);
    assert!(
        common::eventually(Duration::from_secs(5), || p.cmd(&["SET", "k", "v"])
            == "+OK\r\n"),
        "writes still refused with a good replica"
    );
    assert_eq!(info(&mut p, "min_slaves_good_slaves"), "1");
    drop(replica);
    assert!(
        common::eventually(Duration::from_secs(10), || p.cmd(&["SET", "k", "v"])
            == refused),
        "writes still accepted with no replica"
    );
}

/// A diskless sync waits `repl-diskless-sync-delay` for more replicas and
/// serves them with one save; a transfer whose replicas all left is
/// abandoned; FLUSHALL during one drops its replica, which syncs again.
#[test]
fn diskless_syncs_are_shared_and_abandoned() {
    let lapse = lapse_primary("repl-diskless", &["--repl-diskless-sync-delay", "1"]);
    let mut p = lapse.raw();
    populate(&mut p);
    let port = lapse.port.to_string();
    let persistence = |p: &mut Raw, field: &str| common::info_field(p, "persistence", field);
    let first = Server::lapse(&["--replicaof", "127.0.0.1", &port]);
    let second = Server::lapse(&["--replicaof", "127.0.0.1", &port]);
    let digest = p.cmd(&["DEBUG", "DIGEST"]);
    for replica in [&first, &second] {
        let mut r = replica.raw();
        wait_in_sync(&mut p, &mut r);
        assert_eq!(r.cmd(&["DEBUG", "DIGEST"]), digest);
    }
    assert_eq!(common::info_field(&mut p, "stats", "sync_full"), "2");
    assert_eq!(persistence(&mut p, "rdb_saves"), "1", "one save for both");

    // A slow transfer (1 ms a key) whose only replica goes away ends.
    let cmd = |p: &mut Raw, args: &[&str]| assert_eq!(p.cmd(args), "+OK\r\n");
    cmd(&mut p, &["CONFIG", "SET", "repl-diskless-sync-delay", "0"]);
    cmd(&mut p, &["CONFIG", "SET", "rdb-key-save-delay", "1000"]);
    for i in 0..2000 {
        cmd(&mut p, &["SET", &format!("pad:{i}"), "x"]);
    }
    let third = Server::lapse(&["--replicaof", "127.0.0.1", &port]);
    let saving = |p: &mut Raw| persistence(p, "rdb_bgsave_in_progress") == "1";
    assert!(common::eventually(Duration::from_secs(10), || saving(
        &mut p
    )));
    drop(third);
    assert!(
        common::eventually(Duration::from_secs(1), || !saving(&mut p)),
        "the transfer went on without replicas"
    );

    // FLUSHALL abandons a transfer: its replica is dropped, comes back
    // and syncs the data as it is now.
    let fourth = Server::lapse(&["--replicaof", "127.0.0.1", &port]);
    assert!(common::eventually(Duration::from_secs(10), || saving(
        &mut p
    )));
    cmd(&mut p, &["FLUSHALL"]);
    cmd(&mut p, &["CONFIG", "SET", "rdb-key-save-delay", "0"]);
    cmd(&mut p, &["SET", "after", "flush"]);
    let mut r = fourth.raw();
    wait_in_sync(&mut p, &mut r);
    assert_eq!(r.cmd(&["DEBUG", "DIGEST"]), p.cmd(&["DEBUG", "DIGEST"]));
    assert_eq!(r.cmd(&["DBSIZE"]), ":1\r\n");
    // Two, three, and the fourth's twice.
    assert_eq!(common::info_field(&mut p, "stats", "sync_full"), "5");
}

/// A writable replica expires the deadlines its own clients set, on its
/// own and on time, and only those: a key the primary gave a TTL waits
/// for the primary's DEL, and a key the primary rewrote since is kept.
#[test]
fn a_writable_replica_expires_only_its_own_ttls() {
    let lapse = lapse_primary("repl-writable", &[]);
    let mut p = lapse.raw();
    // The primary sends no DELs of its own during this test.
    assert_eq!(p.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), "+OK\r\n");
    let port = lapse.port.to_string();
    let replica = Server::lapse(&[
        "--replicaof",
        "127.0.0.1",
        &port,
        "--replica-read-only",
        "no",
    ]);
    let mut r = replica.raw();
    wait_in_sync(&mut p, &mut r);
    let ok = |reply: String| assert_eq!(reply, "+OK\r\n");
    ok(p.cmd(&["SET", "theirs", "v", "PX", "200"]));
    ok(p.cmd(&["SET", "shared", "v"]));
    ok(p.cmd(&["SET", "plain", "v"]));
    wait_in_sync(&mut p, &mut r);
    ok(r.cmd(&["SET", "mine", "v", "PX", "200"]));
    assert_eq!(r.cmd(&["PEXPIRE", "shared", "300"]), ":1\r\n");
    assert_eq!(r.cmd(&["EXPIRE", "plain", "1"]), ":1\r\n");
    // The primary rewrites `plain` without a TTL: no longer the replica's.
    ok(p.cmd(&["SET", "plain", "w"]));
    wait_in_sync(&mut p, &mut r);
    assert_eq!(
        common::info_field(&mut r, "stats", "slave_expires_tracked_keys"),
        "3"
    );
    let dbsize = |r: &mut Raw| r.cmd(&["DBSIZE"]);
    assert_eq!(dbsize(&mut r), ":4\r\n");
    // `mine` and `shared` leave untouched; `theirs` stays (missing to
    // reads) until the primary deletes it.
    assert!(
        common::eventually(Duration::from_secs(5), || dbsize(&mut r) == ":2\r\n"),
        "the replica did not expire its own keys: {}",
        dbsize(&mut r)
    );
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(dbsize(&mut r), ":2\r\n");
    assert_eq!(r.cmd(&["GET", "theirs"]), "$-1\r\n");
    assert_eq!(r.cmd(&["GET", "plain"]), "$1\r\nw\r\n");
    assert_eq!(common::info_field(&mut r, "stats", "expired_keys"), "2");
    assert_eq!(
        common::info_field(&mut r, "stats", "slave_expires_tracked_keys"),
        "0"
    );
    assert_eq!(p.cmd(&["GET", "theirs"]), "$-1\r\n");
    wait_in_sync(&mut p, &mut r);
    assert_eq!(dbsize(&mut r), ":1\r\n");
}

/// Attaches to `port` as Redis's test suite does (the old `SYNC`: the RDB
/// comes as a bulk string, with no `+FULLRESYNC` line before it), and
/// returns the connection past the RDB with the first line it read.
fn attach_with_sync(port: u16) -> (Raw, String) {
    use std::io::{BufRead, Read};
    let mut r = Raw::connect(port);
    r.send(b"SYNC\r\n");
    let mut line = String::new();
    // Newlines are allowed before the RDB (keepalives while it is made).
    while line.trim().is_empty() {
        line.clear();
        r.reader.read_line(&mut line).expect("SYNC answer");
    }
    let first = line.trim_end().to_string();
    if let Some(len) = first.strip_prefix('$') {
        let len: u64 = len.parse().expect("RDB length");
        let mut rdb = Vec::new();
        (&mut r.reader).take(len).read_to_end(&mut rdb).unwrap();
    }
    (r, first)
}

/// Reads the replication stream until `last` arrives: each command as
/// `a b c`, PINGs left out.
fn stream_until(r: &mut Raw, last: &str) -> Vec<String> {
    let mut seen = Vec::new();
    loop {
        let reply = String::from_utf8_lossy(&r.reply()).into_owned();
        let words: Vec<&str> = reply
            .split("\r\n")
            .filter(|w| !w.starts_with(['*', '$']) && !w.is_empty())
            .collect();
        let command = words.join(" ").to_lowercase();
        if command == "ping" {
            continue;
        }
        let done = command == last;
        seen.push(command);
        if done || seen.len() > 100 {
            return seen;
        }
    }
}

/// What a SYNC client (Redis's test suite reads propagation this way)
/// receives: the RDB without a `+FULLRESYNC` line, then a stream that
/// starts with SELECT, GETDEL as DEL, SCAN's lazy expiry as DEL, PUBLISH
/// (replicas only), transactions wrapped only when they wrote more than
/// once. The same from redis-server 7.0.
#[test]
fn the_sync_stream_matches_redis() {
    let seen = common::same_on_lapse_and_redis(|server| {
        let mut r = server.raw();
        let mut steps = vec![
            r.cmd(&["CONFIG", "SET", "repl-ping-replica-period", "3600"]),
            r.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]),
            r.cmd(&["SET", "gone", "v", "PX", "1"]),
        ];
        std::thread::sleep(Duration::from_millis(5));
        let (mut stream, first) = attach_with_sync(server.port);
        steps.push(first.chars().take(1).collect());
        for line in [
            "SET foo bar",
            "GETDEL foo",
            "SCAN 0",
            "MULTI",
            "PUBLISH ch hello",
            "EXEC",
            "MULTI",
            "SET a 1",
            "GET a",
            "SET b 2",
            "EXEC",
            "MULTI",
            "DEL nothere",
            "EXEC",
            "SELECT 1",
            "SET end 1",
        ] {
            let args: Vec<&str> = line.split(' ').collect();
            steps.push(r.cmd(&args));
        }
        steps.extend(stream_until(&mut stream, "set end 1"));
        steps.push(r.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]));
        steps
    });
    let stream: Vec<&str> = seen.iter().skip(20).map(String::as_str).collect();
    assert_eq!(
        stream,
        [
            "select 0",
            "set foo bar",
            "del foo",
            "del gone",
            "publish ch hello",
            "multi",
            "set a 1",
            "set b 2",
            "exec",
            "select 1",
            "set end 1",
            "+OK\r\n",
        ]
    );
}

/// MIGRATE to another server (a lapse here, whichever server migrates):
/// keys moved with their TTL, COPY and REPLACE, KEYS, AUTH errors from the
/// target, NOKEY, a refused connection; the stream gets one DEL of what
/// moved; SLOWLOG shows AUTH's password redacted. Compared with Redis.
fn migrations(server: &Server) -> Vec<String> {
    let target = Server::lapse(&[]);
    let mut t = target.raw();
    let port = target.port.to_string();
    let mut r = server.raw();
    let mut seen = vec![
        r.cmd(&["CONFIG", "SET", "repl-ping-replica-period", "3600"]),
        r.cmd(&["SET", "k", "v", "EX", "100"]),
        r.cmd(&["RPUSH", "l", "a", "b"]),
        r.cmd(&["SET", "c", "1"]),
    ];
    let (mut stream, _) = attach_with_sync(server.port);
    // MIGRATE to the target, db 3 unless said: `key`, then the options.
    let migrate = |key: &str, rest: &str| -> Vec<String> {
        let mut cmd: Vec<String> = ["MIGRATE", "127.0.0.1", &port, key, "3", "1000"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        cmd.extend(rest.split_whitespace().map(String::from));
        cmd
    };
    let words = |line: &str| line.split(' ').map(String::from).collect::<Vec<_>>();
    for cmd in [
        migrate("k", ""),
        migrate("nokey", ""),
        migrate("", "COPY KEYS l c nope"),
        migrate("", "KEYS l c"),
        migrate("", "REPLACE KEYS l c"),
        migrate("k", "KEYS l"),
        migrate("", "KEYS"),
        migrate("x", "BOGUS"),
        words("SET s v"),
        words("CONFIG SET slowlog-log-slower-than 0"),
        migrate("s", "AUTH secret"),
        words("CONFIG SET slowlog-log-slower-than 10000"),
        words("MIGRATE 127.0.0.1 1 s 0 1000"),
        words("EXISTS k l c s"),
        words("SET end 1"),
    ] {
        let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
        seen.push(r.cmd(&args));
    }
    let slowlog = r.cmd(&["SLOWLOG", "GET", "2"]);
    seen.push(format!(
        "{}",
        slowlog.contains("(redacted)") && !slowlog.contains("secret")
    ));
    seen.extend(stream_until(&mut stream, "set end 1"));
    t.cmd(&["SELECT", "3"]);
    seen.push(t.cmd(&["LRANGE", "l", "0", "-1"]));
    let ttl: i64 = t
        .cmd(&["TTL", "k"])
        .trim_start_matches(':')
        .trim()
        .parse()
        .unwrap_or(-9);
    seen.push(format!("{}", (90..=100).contains(&ttl)));
    seen
}

#[test]
fn migrate_moves_keys_as_redis_does() {
    let seen = common::same_on_lapse_and_redis(migrations);
    assert!(seen.contains(&"del k".to_string()), "{seen:?}");
    assert!(seen.contains(&"del l c".to_string()), "{seen:?}");
}
