//! Streams over TCP as applications use them: blocking reads woken by
//! XADD, consumer groups' pending lists, claiming entries a crashed
//! consumer left behind once they have been idle long enough. The
//! group scenario runs on lapse and on redis-server alike.

mod common;

use std::time::{Duration, Instant};

use common::{Raw, Server};

fn text(r: &mut Raw) -> String {
    String::from_utf8_lossy(&r.reply()).into_owned()
}

#[test]
fn blocking_reads_are_woken_by_xadd() {
    let server = Server::lapse(&[]);
    let mut writer = server.raw();
    let mut reader = server.raw();
    let mut grouped = server.raw();
    assert_eq!(writer.cmd(&["XADD", "s", "1-0", "a", "1"]), "$3\r\n1-0\r\n");
    assert_eq!(writer.cmd(&["XGROUP", "CREATE", "s", "g", "$"]), "+OK\r\n");
    // `$` means what comes after the block began; `>` what the group
    // has not delivered yet.
    reader.send_cmd(&[b"XREAD", b"BLOCK", b"0", b"STREAMS", b"s", b"$"]);
    grouped.send_cmd(&[
        b"XREADGROUP",
        b"GROUP",
        b"g",
        b"c",
        b"BLOCK",
        b"5000",
        b"STREAMS",
        b"s",
        b">",
    ]);
    let blocked = common::blocked_clients_reach(&mut writer, 2);
    assert!(blocked, "the readers did not block");
    assert_eq!(writer.cmd(&["XADD", "s", "2-0", "b", "2"]), "$3\r\n2-0\r\n");
    let expected = "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n2-0\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n";
    assert_eq!(text(&mut reader), expected);
    assert_eq!(text(&mut grouped), expected);
    // The delivery is pending for the consumer.
    let pending = writer.cmd(&["XPENDING", "s", "g"]);
    assert!(
        pending.starts_with("*4\r\n:1\r\n$3\r\n2-0\r\n"),
        "{pending}"
    );
    // A timeout answers null, no earlier than asked.
    let start = Instant::now();
    reader.send_cmd(&[b"XREAD", b"BLOCK", b"100", b"STREAMS", b"s", b"$"]);
    assert_eq!(text(&mut reader), "*-1\r\n");
    assert!(start.elapsed() >= Duration::from_millis(100));
}

/// XPENDING's detail rows without their idle times (the clock's): id,
/// consumer and delivery count of each.
fn pending_rows(detail: &str) -> String {
    let lines: Vec<&str> = detail.split("\r\n").collect();
    let mut rows = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i] == "*4" && i + 7 < lines.len() {
            rows.push(format!(
                "{} {} {}",
                lines[i + 2],
                lines[i + 4],
                lines[i + 6]
            ));
            i += 7;
        } else {
            i += 1;
        }
    }
    rows.join(";")
}

/// A consumer reads, "crashes" without acknowledging, and another one
/// takes its entries over once they have been idle long enough.
fn crash_and_recovery(server: &Server) -> Vec<String> {
    let mut admin = server.raw();
    let mut seen = Vec::new();
    for i in 1..=4 {
        let (id, job) = (format!("{i}-0"), i.to_string());
        seen.push(admin.cmd(&["XADD", "jobs", &id, "job", &job]));
    }
    seen.push(admin.cmd(&["XGROUP", "CREATE", "jobs", "workers", "0"]));
    {
        let mut crashing = server.raw();
        seen.push(crashing.cmd(&[
            "XREADGROUP",
            "GROUP",
            "workers",
            "alice",
            "COUNT",
            "3",
            "STREAMS",
            "jobs",
            ">",
        ]));
        // Gone without an XACK.
    }
    seen.push(admin.cmd(&["XPENDING", "jobs", "workers"]));
    // Not idle long enough yet: nothing to take.
    seen.push(admin.cmd(&["XAUTOCLAIM", "jobs", "workers", "bob", "60000", "0"]));
    seen.push(admin.cmd(&["XCLAIM", "jobs", "workers", "bob", "60000", "1-0", "JUSTID"]));
    std::thread::sleep(Duration::from_millis(120));
    let mut recovering = server.raw();
    for args in [
        &[
            "XAUTOCLAIM",
            "jobs",
            "workers",
            "bob",
            "100",
            "0",
            "COUNT",
            "2",
        ][..],
        &[
            "XAUTOCLAIM",
            "jobs",
            "workers",
            "bob",
            "100",
            "2-0",
            "JUSTID",
        ],
        &["XPENDING", "jobs", "workers"],
    ] {
        seen.push(recovering.cmd(args));
    }
    // Delivery counts went up with the claims (not with JUSTID).
    let detail = recovering.cmd(&["XPENDING", "jobs", "workers", "-", "+", "10"]);
    seen.push(pending_rows(&detail));
    for args in [
        &["XACK", "jobs", "workers", "1-0", "2-0", "3-0", "9-0"][..],
        &["XPENDING", "jobs", "workers"],
        // The rest is delivered to the next reader.
        &[
            "XREADGROUP",
            "GROUP",
            "workers",
            "bob",
            "STREAMS",
            "jobs",
            ">",
        ],
        &["XINFO", "GROUPS", "jobs"],
    ] {
        seen.push(recovering.cmd(args));
    }
    seen
}

#[test]
fn a_crashed_consumer_s_entries_are_claimed_as_on_redis() {
    let seen = common::same_on_lapse_and_redis(crash_and_recovery);
    // Claimed by bob; counts bumped by XAUTOCLAIM, not by JUSTID.
    assert_eq!(seen[12], "1-0 bob :2;2-0 bob :2;3-0 bob :1");
    assert_eq!(seen[13], ":3\r\n");
}

/// A reader blocked in XREADGROUP: its group destroyed or its stream
/// deleted, it gets Redis 7.0.15's error for each.
fn blocked_group_reader(server: &Server) -> Vec<String> {
    let mut admin = server.raw();
    let mut reader = server.raw();
    let mut seen = Vec::new();
    seen.push(admin.cmd(&["XGROUP", "CREATE", "q", "g", "$", "MKSTREAM"]));
    let block = |r: &mut Raw| {
        r.send_cmd(&[
            b"XREADGROUP",
            b"GROUP",
            b"g",
            b"c",
            b"BLOCK",
            b"0",
            b"STREAMS",
            b"q",
            b">",
        ]);
    };
    let wait_blocked = |r: &mut Raw, n: &str| {
        let ok = common::eventually(Duration::from_secs(5), || {
            common::info_field(r, "clients", "blocked_clients") == n
        });
        assert!(ok, "not blocked");
    };
    block(&mut reader);
    wait_blocked(&mut admin, "1");
    seen.push(admin.cmd(&["XGROUP", "DESTROY", "q", "g"]));
    seen.push(text(&mut reader));
    seen.push(admin.cmd(&["XGROUP", "CREATE", "q", "g", "$"]));
    block(&mut reader);
    wait_blocked(&mut admin, "1");
    seen.push(admin.cmd(&["DEL", "q"]));
    seen.push(text(&mut reader));
    seen.push(common::info_field(&mut admin, "clients", "blocked_clients"));
    seen
}

#[test]
fn a_blocked_group_reader_follows_its_group_and_stream_as_on_redis() {
    let seen = common::same_on_lapse_and_redis(blocked_group_reader);
    assert!(seen[2].starts_with("-NOGROUP"), "{seen:?}");
    assert!(seen[5].starts_with("-UNBLOCKED"), "{seen:?}");
    assert_eq!(seen[6], "0");
}

/// A blocked XREADGROUP ends with Redis 7.0's error when its key is
/// overwritten by another type (SET, or DEL + SADD in a transaction) or
/// its database flushed, instead of waiting for ever.
fn readgroup_released(server: &Server) -> Vec<String> {
    let (mut r, mut waiter) = (server.raw(), server.raw());
    let mut seen = Vec::new();
    let changes: &[&[&str]] = &[&["SET", "s", "v"], &["FLUSHALL"], &["DEL", "s"]];
    for change in changes {
        r.cmd(&["DEL", "s"]);
        seen.push(r.cmd(&["XADD", "s", "666", "f", "v"]));
        seen.push(r.cmd(&["XGROUP", "CREATE", "s", "g", "$"]));
        waiter.send_cmd(&[
            b"XREADGROUP",
            b"GROUP",
            b"g",
            b"c",
            b"BLOCK",
            b"0",
            b"STREAMS",
            b"s",
            b">",
        ]);
        let blocked = common::blocked_clients_reach(&mut r, 1);
        assert!(blocked);
        seen.push(r.cmd(change));
        seen.push(String::from_utf8_lossy(&waiter.reply()).into_owned());
    }
    seen
}

#[test]
fn a_blocked_xreadgroup_is_released_when_its_key_goes_as_in_redis() {
    let seen = common::same_on_lapse_and_redis(readgroup_released);
    assert_eq!(seen[3], "-UNBLOCKED the stream key no longer exists\r\n");
    assert_eq!(seen[7], "-UNBLOCKED the stream key no longer exists\r\n");
}

/// A blocked XREAD whose key becomes another type (XADD, DEL, LPUSH in
/// one transaction) waits on, and is served by the stream made next, as
/// in Redis (a first XREAD of a list still answers WRONGTYPE).
fn xread_through_a_type_change(server: &Server) -> Vec<String> {
    let (mut reader, mut r) = (server.raw(), server.raw());
    reader.send_cmd(&[b"XREAD", b"BLOCK", b"20000", b"STREAMS", b"s1", b"$"]);
    let blocked = common::blocked_clients_reach(&mut r, 1);
    let mut seen = vec![format!("{blocked}")];
    for cmd in [
        "MULTI",
        "XADD s1 * old abcd1234",
        "DEL s1",
        "LPUSH s1 foo bar",
        "EXEC",
    ] {
        let args: Vec<&str> = cmd.split(' ').collect();
        seen.push(r.cmd(&args).chars().take(8).collect());
    }
    seen.push(common::info_field(&mut r, "clients", "blocked_clients"));
    seen.push(r.cmd(&["XREAD", "STREAMS", "s1", "0"]));
    seen.push(r.cmd(&["DEL", "s1"]));
    r.cmd(&["XADD", "s1", "*", "new", "abcd1234"]);
    let reply = String::from_utf8_lossy(&reader.reply()).into_owned();
    seen.push(format!("{}", reply.contains("new\r\n$8\r\nabcd1234")));
    seen
}

#[test]
fn a_blocked_xread_waits_through_a_type_change_as_in_redis() {
    let seen = common::same_on_lapse_and_redis(xread_through_a_type_change);
    assert_eq!(seen.last().map(String::as_str), Some("true"));
}
