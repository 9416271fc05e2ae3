//! Lazy free: which deletions hand big values to the background thread, and
//! the INFO counters that show it.

mod common;

use std::time::Duration;

use common::{eventually, info_field, Raw, Server};

fn freed(r: &mut Raw) -> u64 {
    info_field(r, "memory", "lazyfreed_objects")
        .parse()
        .unwrap()
}

fn pending(r: &mut Raw) -> u64 {
    info_field(r, "memory", "lazyfree_pending_objects")
        .parse()
        .unwrap()
}

/// Sets `key` to an 8 MiB string (big enough for the thread), with extra args.
fn set_big(r: &mut Raw, key: &str, extra: &[&str]) {
    let value = vec![b'x'; 8 * 1024 * 1024];
    let mut args: Vec<&[u8]> = vec![b"SET", key.as_bytes(), &value];
    args.extend(extra.iter().map(|a| a.as_bytes()));
    r.send_cmd(&args);
    assert_eq!(r.reply(), b"+OK\r\n");
}

/// Waits until the thread has freed `expected` objects in all.
fn settles_at(r: &mut Raw, expected: u64) {
    assert!(
        eventually(Duration::from_secs(5), || freed(r) == expected
            && pending(r) == 0),
        "lazyfreed_objects {} (expected {expected}), pending {}",
        freed(r),
        pending(r)
    );
}

#[test]
fn unlink_hands_big_values_over_and_del_follows_its_setting() {
    let server = Server::lapse(&[]);
    let mut r = server.raw();
    set_big(&mut r, "a", &[]);
    assert_eq!(r.cmd(&["UNLINK", "a"]), ":1\r\n");
    settles_at(&mut r, 1);
    // Small values are always freed inline.
    assert_eq!(r.cmd(&["SET", "small", "v"]), "+OK\r\n");
    assert_eq!(r.cmd(&["UNLINK", "small"]), ":1\r\n");
    set_big(&mut r, "b", &[]);
    assert_eq!(r.cmd(&["DEL", "b"]), ":1\r\n");
    settles_at(&mut r, 1);
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "lazyfree-lazy-user-del", "yes"]),
        "+OK\r\n"
    );
    set_big(&mut r, "c", &[]);
    assert_eq!(r.cmd(&["DEL", "c"]), ":1\r\n");
    settles_at(&mut r, 2);
}

#[test]
fn flushes_follow_async_sync_and_the_user_flush_setting() {
    let server = Server::lapse(&[]);
    let mut r = server.raw();
    for i in 0..1000 {
        assert_eq!(r.cmd(&["SET", &format!("k{i}"), "v"]), "+OK\r\n");
    }
    assert_eq!(r.cmd(&["FLUSHALL", "ASYNC"]), "+OK\r\n");
    settles_at(&mut r, 1000);
    assert_eq!(r.cmd(&["SET", "k", "v"]), "+OK\r\n");
    assert_eq!(r.cmd(&["FLUSHDB"]), "+OK\r\n");
    assert_eq!(r.cmd(&["SET", "k", "v"]), "+OK\r\n");
    assert_eq!(r.cmd(&["FLUSHDB", "SYNC"]), "+OK\r\n");
    settles_at(&mut r, 1000);
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "lazyfree-lazy-user-flush", "yes"]),
        "+OK\r\n"
    );
    assert_eq!(r.cmd(&["SET", "k", "v"]), "+OK\r\n");
    assert_eq!(r.cmd(&["FLUSHDB"]), "+OK\r\n");
    settles_at(&mut r, 1001);
}

#[test]
fn expiry_and_overwrites_follow_their_settings() {
    let server = Server::lapse(&[]);
    let mut r = server.raw();
    set_big(&mut r, "e1", &["PX", "20"]);
    assert!(eventually(Duration::from_secs(5), || r.cmd(&["DBSIZE"]) == ":0\r\n"));
    set_big(&mut r, "o1", &[]);
    set_big(&mut r, "o1", &[]);
    settles_at(&mut r, 0);

    assert_eq!(
        r.cmd(&[
            "CONFIG",
            "SET",
            "lazyfree-lazy-expire",
            "yes",
            "lazyfree-lazy-server-del",
            "yes"
        ]),
        "+OK\r\n"
    );
    set_big(&mut r, "e2", &["PX", "20"]);
    assert!(eventually(Duration::from_secs(5), || r.cmd(&["DBSIZE"]) == ":1\r\n"));
    settles_at(&mut r, 1);
    set_big(&mut r, "o1", &[]);
    settles_at(&mut r, 2);
    assert_eq!(r.cmd(&["STRLEN", "o1"]), ":8388608\r\n");
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "lazyfree-lazy-expire"]),
        "*2\r\n$20\r\nlazyfree-lazy-expire\r\n$3\r\nyes\r\n"
    );
}

/// Memory freed by a FLUSHALL ASYNC goes back to the OS once the server is
/// quiet, as redis-server's allocator gives it back (glibc kept it all:
/// 1.2 GB resident with one key left).
#[test]
fn flushed_memory_returns_to_the_os() {
    let server = Server::lapse(&[]);
    let mut r = server.raw();
    let rss = |r: &mut Raw| -> u64 { info_field(r, "memory", "used_memory_rss").parse().unwrap() };
    let value = vec![b'v'; 1000];
    for batch in 0..200 {
        let mut pipeline = Vec::new();
        for i in 0..1000 {
            let key = format!("key:{batch}:{i}");
            pipeline.extend(common::encode(&[b"SET", key.as_bytes(), &value]));
        }
        r.send(&pipeline);
        for _ in 0..1000 {
            assert_eq!(r.reply(), b"+OK\r\n");
        }
    }
    let full = rss(&mut r);
    assert!(full > 200_000_000, "200,000 values of 1 KB in {full} bytes");
    assert_eq!(r.cmd(&["FLUSHALL", "ASYNC"]), "+OK\r\n");
    assert_eq!(r.cmd(&["SET", "one", "key"]), "+OK\r\n");
    let returned = eventually(Duration::from_secs(10), || {
        std::thread::sleep(Duration::from_millis(100));
        rss(&mut r) < full / 4
    });
    assert!(returned, "RSS {} of {full} after the flush", rss(&mut r));
}

/// CONFIG RESETSTAT zeroes `lazyfreed_objects`; a stream of 200 nodes is
/// freed in the background (one object), one of a single node at once,
/// as Redis counts a stream's free effort.
fn stream_lazyfree_counts(server: &Server) -> Vec<String> {
    let mut r = server.raw();
    let mut seen = vec![
        r.cmd(&["CONFIG", "SET", "stream-node-max-entries", "5"]),
        r.cmd(&["SADD", "big", "x"]),
    ];
    // Something freed in the background before the reset (a set of 200).
    for i in 0..200 {
        r.cmd(&["SADD", "big", &format!("m{i}")]);
    }
    seen.push(r.cmd(&["UNLINK", "big"]));
    let drained = |r: &mut Raw| {
        common::eventually(Duration::from_secs(10), || {
            common::info_field(r, "memory", "lazyfree_pending_objects") == "0"
        })
    };
    seen.push(format!("{}", drained(&mut r)));
    seen.push(r.cmd(&["CONFIG", "RESETSTAT"]));
    seen.push(common::info_field(&mut r, "memory", "lazyfreed_objects"));
    for i in 0..1000 {
        r.cmd(&["XADD", "stream", "*", "foo", &i.to_string()]);
    }
    seen.push(r.cmd(&["XGROUP", "CREATE", "stream", "g", "0"]));
    seen.push(r.cmd(&["UNLINK", "stream"]));
    seen.push(format!("{}", drained(&mut r)));
    seen.push(common::info_field(&mut r, "memory", "lazyfreed_objects"));
    seen.push(r.cmd(&["CONFIG", "RESETSTAT"]));
    seen.push(
        r.cmd(&["XADD", "s", "*", "a", "b"])
            .chars()
            .take(1)
            .collect(),
    );
    seen.push(r.cmd(&["UNLINK", "s"]));
    seen.push(common::info_field(&mut r, "memory", "lazyfreed_objects"));
    seen.push(r.cmd(&["CONFIG", "SET", "stream-node-max-entries", "100"]));
    seen
}

#[test]
fn lazyfree_counts_streams_and_resets_as_redis_does() {
    let seen = common::same_on_lapse_and_redis(stream_lazyfree_counts);
    assert_eq!(seen[5], "0");
    assert_eq!(seen[9], "1");
}
