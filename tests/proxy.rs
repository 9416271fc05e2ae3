//! Sharding through an existing proxy: twemproxy (`nutcracker`) in front
//! of three lapse instances, as README's set-up describes. Keys spread
//! over the three; the commands the proxy forwards (single-key ones, the
//! multi-key ones it splits — MGET, MSET, DEL, EXISTS — hash-tagged
//! multi-key commands, scripts) answer byte for byte as the same proxy in
//! front of three redis-servers answers them; a TTL set through the proxy
//! expires on the shard.
//!
//! Needs `nutcracker` (and `redis-server` for the comparison).

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{eventually, free_port, temp_dir, Raw, Server};

/// Starts nutcracker on a free port in front of `backends`, named
/// `one`, `two`, `three` (the names, not the addresses, place keys, so
/// lapse and redis-server shards hold the same keys).
fn nutcracker(dir: &Path, backends: &[u16]) -> Server {
    let port = free_port();
    let names = ["one", "two", "three"];
    let servers: String = backends
        .iter()
        .zip(names)
        .map(|(p, name)| format!("   - 127.0.0.1:{p}:1 {name}\n"))
        .collect();
    let conf = dir.join("nutcracker.yml");
    std::fs::write(
        &conf,
        format!(
            "shards:\n  listen: 127.0.0.1:{port}\n  hash: murmur\n  hash_tag: \"{{}}\"\n  \
             distribution: ketama\n  redis: true\n  auto_eject_hosts: false\n  \
             timeout: 2000\n  servers:\n{servers}"
        ),
    )
    .unwrap();
    let child = Command::new("nutcracker")
        .arg("-c")
        .arg(&conf)
        .args(["-s", &free_port().to_string(), "-a", "127.0.0.1"])
        .arg("-o")
        .arg(dir.join("nutcracker.log"))
        .arg("-p")
        .arg(dir.join("nutcracker.pid"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn nutcracker");
    let proxy = Server::started(child, port);
    let up = eventually(Duration::from_secs(10), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(up, "nutcracker did not start");
    proxy
}

/// Commands as an application sends them through the proxy.
const SCRIPT: &[&[&str]] = &[
    &["SET", "user:1", "ada"],
    &["SET", "user:2", "grace", "EX", "1000"],
    &["GET", "user:1"],
    &["GET", "nosuch"],
    &["MSET", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5"],
    &["MGET", "a", "b", "c", "d", "e", "nosuch"],
    &["INCR", "a"],
    &["INCRBY", "b", "10"],
    &["INCRBYFLOAT", "c", "0.5"],
    &["DECR", "d"],
    &["APPEND", "e", "xyz"],
    &["STRLEN", "e"],
    &["GETRANGE", "e", "0", "1"],
    &["SETNX", "a", "x"],
    &["GETSET", "a", "7"],
    &["SETEX", "s", "100", "v"],
    &["TTL", "s"],
    &["PERSIST", "s"],
    &["TTL", "s"],
    &["EXPIRE", "s", "500"],
    &["PTTL", "nosuch"],
    &["TYPE", "a"],
    &["EXISTS", "a", "b", "nosuch"],
    &["DEL", "a", "b", "nosuch"],
    &["HSET", "h", "f1", "v1", "f2", "v2"],
    &["HGET", "h", "f1"],
    &["HMGET", "h", "f1", "nosuch"],
    &["HINCRBY", "h", "n", "5"],
    &["HLEN", "h"],
    &["HDEL", "h", "f2"],
    &["HGETALL", "h"],
    &["LPUSH", "q", "j1", "j2", "j3"],
    &["RPUSH", "q", "j0"],
    &["LRANGE", "q", "0", "-1"],
    &["LPOP", "q"],
    &["RPOP", "q"],
    &["LLEN", "q"],
    &["LINDEX", "q", "0"],
    &["RPOPLPUSH", "{q}src", "{q}dst"],
    &["RPUSH", "{q}src", "x", "y"],
    &["RPOPLPUSH", "{q}src", "{q}dst"],
    &["LRANGE", "{q}dst", "0", "-1"],
    &["SADD", "{s}1", "a", "b", "c"],
    // (One member in common: Redis 7.0 orders small sets by hash, seeded
    // at random, so replies with several members can't be compared.)
    &["SADD", "{s}2", "c", "d", "e"],
    &["SINTER", "{s}1", "{s}2"],
    &["SUNIONSTORE", "{s}3", "{s}1", "{s}2"],
    &["SCARD", "{s}3"],
    &["SISMEMBER", "{s}1", "a"],
    &["SREM", "{s}1", "a"],
    &["ZADD", "board", "10", "ann", "20", "bob", "15", "cy"],
    &["ZRANGE", "board", "0", "-1", "WITHSCORES"],
    &["ZINCRBY", "board", "10", "ann"],
    &["ZREVRANK", "board", "ann"],
    &["ZRANGEBYSCORE", "board", "12", "+inf"],
    &["ZSCORE", "board", "cy"],
    &["ZREM", "board", "bob"],
    &["ZCARD", "board"],
    &[
        "EVAL",
        "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('INCR', KEYS[1])",
        "1",
        "lua",
        "41",
    ],
    &["GET", "lua"],
    &["MGET", "user:1", "user:2", "lua", "e"],
];

/// Replies to `SCRIPT` through `proxy`, one by one.
fn run_script(proxy: u16) -> Vec<String> {
    let mut r = Raw::connect(proxy);
    SCRIPT.iter().map(|args| r.cmd(args)).collect()
}

fn dbsize(port: u16) -> usize {
    let reply = Raw::connect(port).cmd(&["DBSIZE"]);
    reply.trim()[1..].parse().unwrap()
}

/// Three servers behind a proxy: the replies to `SCRIPT` and how many
/// keys each shard holds.
fn sharded(dir: &Path, backends: &[Server]) -> (Vec<String>, Vec<usize>) {
    let ports: Vec<u16> = backends.iter().map(|s| s.port).collect();
    let proxy = nutcracker(dir, &ports);
    let replies = run_script(proxy.port);
    (replies, ports.into_iter().map(dbsize).collect())
}

#[test]
fn nutcracker_shards_keys_over_three_lapse_instances() {
    if !common::tool_present("nutcracker", "the twemproxy sharding test") {
        return;
    }
    let dir = temp_dir("proxy");
    let lapses: Vec<Server> = (0..3).map(|_| Server::lapse(&[])).collect();
    let (replies, sizes) = sharded(&dir, &lapses);
    assert!(replies.iter().all(|r| !r.starts_with('-')), "{replies:?}");

    // Many keys spread over all three, each readable through the proxy,
    // each on exactly one shard.
    let proxy = nutcracker(&dir, &lapses.iter().map(|s| s.port).collect::<Vec<_>>());
    let mut p = Raw::connect(proxy.port);
    for i in 0..300 {
        let key = format!("k{i}");
        assert_eq!(p.cmd(&["SET", &key, &i.to_string()]), "+OK\r\n");
    }
    let mut on_shards = vec![0; 3];
    for i in 0..300 {
        let key = format!("k{i}");
        assert_eq!(
            p.cmd(&["GET", &key]),
            format!("${}\r\n{i}\r\n", i.to_string().len())
        );
        let holders: Vec<usize> = (0..3)
            .filter(|&s| Raw::connect(lapses[s].port).cmd(&["EXISTS", &key]) == ":1\r\n")
            .collect();
        assert_eq!(holders.len(), 1, "{key} on {holders:?}");
        on_shards[holders[0]] += 1;
    }
    assert!(on_shards.iter().all(|&n| n > 30), "{on_shards:?}");

    // A TTL set through the proxy expires on its shard, untouched (the
    // shards' DBSIZE drops: active expiry, not a lookup).
    let total = || -> usize { lapses.iter().map(|s| dbsize(s.port)).sum() };
    let before = total();
    assert_eq!(p.cmd(&["SET", "soon", "x", "PX", "50"]), "+OK\r\n");
    assert_eq!(total(), before + 1);
    assert!(eventually(Duration::from_secs(5), || total() == before));
    assert_eq!(p.cmd(&["GET", "soon"]), "$-1\r\n");

    // The same proxy in front of redis-servers answers the same.
    let Some(first) = Server::redis() else {
        return;
    };
    let redises = vec![first, Server::redis().unwrap(), Server::redis().unwrap()];
    let redis_dir = temp_dir("proxy-redis");
    let (expected, redis_sizes) = sharded(&redis_dir, &redises);
    for ((args, got), want) in SCRIPT.iter().zip(&replies).zip(&expected) {
        assert_eq!(got, want, "{args:?}");
    }
    assert_eq!(sizes, redis_sizes, "keys placed differently");
}
