//! The memory limit: `maxmemory` and the eight `maxmemory-policy`
//! policies — what each evicts, noeviction's OOM and what still works,
//! CONFIG SET maxmemory below the memory in use, OBJECT IDLETIME / FREQ
//! (errors as redis-server words them), evictions reaching a replica as
//! DELs and published as `evicted`, with lazy free on and off.

mod common;

use std::time::Duration;

use common::{info_field, Raw, Server};

fn used(r: &mut Raw) -> u64 {
    info_field(r, "memory", "used_memory").parse().unwrap()
}

fn evicted(r: &mut Raw) -> u64 {
    info_field(r, "stats", "evicted_keys").parse().unwrap()
}

fn ok(reply: String) {
    assert_eq!(reply, "+OK\r\n");
}

/// `n` keys `<prefix>:<i>` of 100 bytes, with a TTL of `ttl_s + i` seconds
/// (deadlines in the order of `i`) when `ttl_s` is set.
fn fill(r: &mut Raw, prefix: &str, n: usize, ttl_s: Option<u64>) {
    for i in 0..n {
        set_nth(r, prefix, i, ttl_s);
    }
}

/// `fill`'s `i`th key.
fn set_nth(r: &mut Raw, prefix: &str, i: usize, ttl_s: Option<u64>) {
    let key = format!("{prefix}:{i}");
    let value = "v".repeat(100);
    match ttl_s {
        Some(s) => ok(r.cmd(&["SET", &key, &value, "EX", &(s + i as u64).to_string()])),
        None => ok(r.cmd(&["SET", &key, &value])),
    }
}

fn exists(r: &mut Raw, key: &str) -> bool {
    r.cmd(&["EXISTS", key]) == ":1\r\n"
}

/// The server's own allocations move by some KB between commands:
/// checks of the limit allow this much.
const SLACK_BYTES: u64 = 64 * 1024;

/// Caps memory at what is in use now, then writes `n` new keys
/// (`new:<i>`, with a far TTL when `ttl`), and more until one is evicted:
/// each write evicts to make room (a deleted key's slot is reused by the
/// next). Checks the limit holds.
fn write_past_the_limit(r: &mut Raw, n: usize, ttl: bool) -> u64 {
    let limit = used(r);
    ok(r.cmd(&["CONFIG", "SET", "maxmemory", &limit.to_string()]));
    let ttl_s = ttl.then_some(100_000);
    fill(r, "new", n, ttl_s);
    // What the limit leaves room for moves a little: memory the limit
    // does not count (a replica's output buffer) was in use when it was
    // read, and such buffers drain.
    let mut i = n;
    while evicted(r) == 0 && i < n + 10_000 {
        set_nth(r, "new", i, ttl_s);
        i += 1;
    }
    assert!(used(r) <= limit + SLACK_BYTES, "over the limit");
    assert!(evicted(r) > 0, "nothing evicted");
    limit
}

/// A lapse with `policy`, `setup`, then 2000 new keys past the limit.
fn squeezed(policy: &str, ttl: bool, setup: impl FnOnce(&mut Raw)) -> (Server, Raw) {
    let server = Server::lapse(&["--maxmemory-policy", policy, "--maxmemory-samples", "10"]);
    let mut r = server.raw();
    setup(&mut r);
    write_past_the_limit(&mut r, 2000, ttl);
    (server, r)
}

#[test]
fn volatile_policies_never_evict_keys_without_a_ttl() {
    for policy in [
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
    ] {
        let (_server, mut r) = squeezed(policy, true, |r| {
            fill(r, "keep", 1000, None);
            fill(r, "ttl", 2000, Some(1000));
        });
        for i in 0..1000 {
            assert!(
                exists(&mut r, &format!("keep:{i}")),
                "{policy} evicted keep:{i}"
            );
        }
        // With only persistent keys left to take, writes are refused.
        // (Evicting every volatile key takes a few slices of 500 µs, as
        // `maxmemory-eviction-tenacity` 10 allows: writes go on meanwhile.)
        ok(r.cmd(&["CONFIG", "SET", "maxmemory", "1"]));
        let refused = common::eventually(Duration::from_secs(5), || {
            r.cmd(&["SET", "more", "x"])
                == "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
        });
        assert!(refused, "{policy}");
        for pattern in ["ttl:*", "new:*"] {
            assert_eq!(r.cmd(&["KEYS", pattern]), "*0\r\n", "{policy}");
        }
        assert!(exists(&mut r, "keep:0"));
    }
}

#[test]
fn volatile_ttl_evicts_the_nearest_deadlines_first() {
    let (_server, mut r) = squeezed("volatile-ttl", true, |r| fill(r, "ttl", 3000, Some(1000)));
    let gone: Vec<bool> = (0..3000)
        .map(|i| !exists(&mut r, &format!("ttl:{i}")))
        .collect();
    let first_kept = gone.iter().position(|g| !g).unwrap();
    assert!(first_kept > 0);
    assert!(
        gone[first_kept..].iter().all(|g| !g),
        "a later deadline went before an earlier one"
    );
}

#[test]
fn lru_and_lfu_keep_the_keys_in_use() {
    for policy in ["allkeys-lru", "allkeys-lfu"] {
        let server = Server::lapse(&["--maxmemory-policy", policy, "--maxmemory-samples", "10"]);
        let mut r = server.raw();
        fill(&mut r, "cold", 3000, None);
        fill(&mut r, "hot", 200, None);
        // LRU's clock counts seconds: the cold keys must be older.
        std::thread::sleep(Duration::from_millis(2100));
        for _ in 0..20 {
            for i in 0..200 {
                r.cmd(&["GET", &format!("hot:{i}")]);
            }
        }
        write_past_the_limit(&mut r, 2000, false);
        let evicted = evicted(&mut r);
        assert!(evicted > 1000, "{policy}: {evicted}");
        let hot_lost = (0..200)
            .filter(|i| !exists(&mut r, &format!("hot:{i}")))
            .count();
        assert_eq!(hot_lost, 0, "{policy} evicted keys in use");
    }
}

#[test]
fn allkeys_random_and_config_set_below_the_memory_in_use() {
    let server = Server::lapse(&["--maxmemory-policy", "allkeys-random"]);
    let mut r = server.raw();
    let base = used(&mut r);
    fill(&mut r, "k", 5000, None);
    ok(r.cmd(&["SELECT", "1"]));
    fill(&mut r, "k", 5000, Some(1000));
    let half = base + (used(&mut r) - base) * 7 / 10;
    ok(r.cmd(&["CONFIG", "SET", "maxmemory", &half.to_string()]));
    // The loop evicts down to the new limit, a slice at a time.
    let under = common::eventually(Duration::from_secs(5), || {
        used(&mut r) <= half + SLACK_BYTES
    });
    assert!(under, "{} > {half}", used(&mut r));
    assert_eq!(r.cmd(&["PING"]), "+PONG\r\n");
    // One INFO for the key counts and the evictions: a command's first
    // call allocates its latency histogram, which may evict a few keys
    // more between two separate reads.
    let info = r.cmd(&["INFO", "stats", "keyspace"]);
    let field = |prefix: &str| -> u64 {
        let line = info.lines().find(|l| l.starts_with(prefix)).unwrap();
        let value = line[prefix.len()..].split(',').next().unwrap();
        value.parse().unwrap()
    };
    let (a, b) = (field("db0:keys="), field("db1:keys="));
    assert!(a < 5000 && b < 5000, "both databases give keys: {a} {b}");
    assert_eq!(field("evicted_keys:"), 10_000 - a - b);
}

#[test]
fn noeviction_refuses_writes_that_grow_memory_and_serves_the_rest() {
    let oom = "-OOM command not allowed when used memory > 'maxmemory'.\r\n";
    let servers = Server::lapse_then_redis();
    let mut script_replies = Vec::new();
    for server in &servers {
        let mut r = server.raw();
        fill(&mut r, "k", 100, None);
        ok(r.cmd(&["CONFIG", "SET", "maxmemory", "1"]));
        assert_eq!(r.cmd(&["SET", "new", "v"]), oom);
        assert_eq!(r.cmd(&["LPUSH", "l", "v"]), oom);
        assert_eq!(
            r.cmd(&["GET", "k:1"]),
            format!("$100\r\n{}\r\n", "v".repeat(100))
        );
        assert_eq!(r.cmd(&["DEL", "k:1"]), ":1\r\n");
        assert_eq!(r.cmd(&["EXPIRE", "k:2", "100"]), ":1\r\n");
        assert_eq!(r.cmd(&["PING"]), "+PONG\r\n");
        // In a script: the same, command by command.
        let script_set = r.cmd(&["EVAL", "return redis.call('SET', KEYS[1], 'v')", "1", "s"]);
        assert!(
            script_set.starts_with("-OOM command not allowed"),
            "{script_set}"
        );
        script_replies.push(script_set);
        let script_get = r.cmd(&["EVAL", "return redis.call('GET', KEYS[1])", "1", "k:3"]);
        assert_eq!(script_get, format!("$100\r\n{}\r\n", "v".repeat(100)));
        // In a transaction: queueing is refused, EXEC answers why.
        ok(r.cmd(&["MULTI"]));
        assert_eq!(r.cmd(&["GET", "k:3"]), oom);
        assert_eq!(
            r.cmd(&["EXEC"]),
            "-EXECABORT Transaction discarded because of previous errors.\r\n"
        );
        assert_eq!(evicted(&mut r), 0);
        ok(r.cmd(&["CONFIG", "SET", "maxmemory", "0"]));
        ok(r.cmd(&["SET", "new", "v"]));
    }
    if let [lapse, redis] = script_replies.as_slice() {
        assert_eq!(lapse, redis);
    }
}

#[test]
fn object_idletime_and_freq_follow_the_policy_as_redis() {
    let servers = Server::lapse_then_redis();
    let mut replies = Vec::new();
    for server in &servers {
        let mut r = server.raw();
        ok(r.cmd(&["SET", "k", "v"]));
        // Idle seconds on a clock of whole seconds: a SET just before a
        // second's end reads 1 an instant later (either server).
        let idle = r.cmd(&["OBJECT", "IDLETIME", "k"]);
        let idle = if idle == ":1\r\n" {
            ":0\r\n".into()
        } else {
            idle
        };
        let mut got = vec![
            idle,
            r.cmd(&["OBJECT", "FREQ", "k"]),
            r.cmd(&["OBJECT", "IDLETIME", "missing"]),
        ];
        ok(r.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]));
        ok(r.cmd(&["SET", "f", "v"]));
        got.push(r.cmd(&["OBJECT", "FREQ", "f"]));
        for _ in 0..100 {
            r.cmd(&["GET", "f"]);
        }
        let freq: i64 = r.cmd(&["OBJECT", "FREQ", "f"]).trim()[1..].parse().unwrap();
        assert!(freq > 5, "{freq}");
        got.push(r.cmd(&["OBJECT", "IDLETIME", "f"]));
        got.push(r.cmd(&["OBJECT", "FREQ", "missing"]));
        replies.push(got);
        // Redis 7.0 has no CLIENT NO-TOUCH (7.2 has): lapse only.
        if replies.len() == 1 {
            ok(r.cmd(&["CLIENT", "NO-TOUCH", "ON"]));
            for _ in 0..100 {
                r.cmd(&["GET", "f"]);
            }
            let untouched: i64 = r.cmd(&["OBJECT", "FREQ", "f"]).trim()[1..].parse().unwrap();
            assert_eq!(untouched, freq, "NO-TOUCH reads counted");
        }
    }
    if let [lapse, redis] = replies.as_slice() {
        assert_eq!(lapse, redis);
    }
}

#[test]
fn evictions_reach_the_replica_and_subscribers_with_lazy_free_on_and_off() {
    for lazy in ["no", "yes"] {
        let dir = common::temp_dir("evict-repl");
        let primary = Server::lapse(&[
            "--dir",
            dir.to_str().unwrap(),
            "--save",
            "",
            "--repl-diskless-sync-delay",
            "0",
            "--maxmemory-policy",
            "allkeys-random",
            "--lazyfree-lazy-eviction",
            lazy,
            "--notify-keyspace-events",
            "Ee",
        ]);
        let mut p = primary.raw();
        // Big hashes (tables, not listpacks) go to the lazyfree thread
        // when lazy.
        for i in 0..50 {
            let key = format!("big:{i}");
            let mut args = vec!["HSET", key.as_str()];
            let fields: Vec<String> = (0..1000).map(|f| format!("f{f}")).collect();
            for f in &fields {
                args.push(f);
                args.push("value");
            }
            assert_eq!(p.cmd(&args), ":1000\r\n");
        }
        let replica = Server::lapse(&["--replicaof", "127.0.0.1", &primary.port.to_string()]);
        let mut r = replica.raw();
        let mut sub = primary.raw();
        sub.cmd(&["SUBSCRIBE", "__keyevent@0__:evicted"]);
        let synced = common::eventually(Duration::from_secs(20), || {
            info_field(&mut r, "replication", "master_link_status") == "up"
                && r.cmd(&["DBSIZE"]) == ":50\r\n"
        });
        assert!(synced);
        write_past_the_limit(&mut p, 20, false);
        let left = p.cmd(&["DBSIZE"]);
        let message = String::from_utf8_lossy(&sub.reply()).into_owned();
        // allkeys-random: the first may be one of the new keys.
        assert!(
            message.contains("evicted") && (message.contains("big:") || message.contains("new:")),
            "{message}"
        );
        assert!(
            common::eventually(Duration::from_secs(10), || r.cmd(&["DBSIZE"]) == left),
            "lazy {lazy}: the replica kept evicted keys"
        );
        let freed = |p: &mut Raw| -> u64 {
            info_field(p, "memory", "lazyfreed_objects")
                .parse()
                .unwrap()
        };
        if lazy == "yes" {
            assert!(common::eventually(Duration::from_secs(5), || freed(&mut p) > 0));
        } else {
            assert_eq!(freed(&mut p), 0);
        }
        ok(p.cmd(&["CONFIG", "SET", "maxmemory", "0"]));
    }
}

/// used_memory follows the data: up with keys, down when they go; the
/// peak remembers the high point.
#[test]
fn used_memory_moves_with_the_data() {
    let server = Server::lapse(&[]);
    let mut r = server.raw();
    let before = used(&mut r);
    fill(&mut r, "k", 10_000, None);
    let full = used(&mut r);
    assert!(full > before + 10_000 * 100, "{before} -> {full}");
    ok(r.cmd(&["FLUSHALL", "SYNC"]));
    let after = used(&mut r);
    assert!(after < before + 100_000, "{before} -> {full} -> {after}");
    let peak: u64 = info_field(&mut r, "memory", "used_memory_peak")
        .parse()
        .unwrap();
    assert!(peak >= full, "{peak} < {full}");
}

/// MEMORY USAGE sizes keys (and answers bad input as redis-server does);
/// MEMORY STATS, DOCTOR and PURGE answer; INFO splits dataset and overhead.
#[test]
fn memory_usage_stats_doctor_and_purge() {
    let servers = Server::lapse_then_redis();
    let mut errors = Vec::new();
    for server in &servers {
        let mut r = server.raw();
        ok(r.cmd(&["SET", "small", "v"]));
        ok(r.cmd(&["SET", "big", &"x".repeat(10_000)]));
        let usage = |r: &mut Raw, key: &str| -> i64 {
            r.cmd(&["MEMORY", "USAGE", key]).trim()[1..]
                .parse()
                .unwrap()
        };
        let (small, big) = (usage(&mut r, "small"), usage(&mut r, "big"));
        assert!(small > 0 && small < 200, "{small}");
        assert!(big > 10_000 && big < 12_000, "{big}");
        assert_eq!(r.cmd(&["MEMORY", "USAGE", "missing"]), "$-1\r\n");
        errors.push([
            r.cmd(&["MEMORY", "USAGE", "small", "SAMPLES", "x"]),
            r.cmd(&["MEMORY", "USAGE", "small", "FOO"]),
            r.cmd(&["MEMORY", "USAGE"]),
        ]);
        let stats = r.cmd(&["MEMORY", "STATS"]);
        for name in [
            "peak.allocated",
            "total.allocated",
            "overhead.total",
            "keys.count",
            "dataset.bytes",
        ] {
            assert!(stats.contains(name), "{name}: {stats}");
        }
        assert!(r.cmd(&["MEMORY", "DOCTOR"]).contains("Sam"));
        ok(r.cmd(&["MEMORY", "PURGE"]));
        let dataset: u64 = info_field(&mut r, "memory", "used_memory_dataset")
            .parse()
            .unwrap();
        let overhead: u64 = info_field(&mut r, "memory", "used_memory_overhead")
            .parse()
            .unwrap();
        assert!(dataset > 10_000, "{dataset}");
        assert!(overhead > 0);
    }
    if let [lapse, redis] = errors.as_slice() {
        assert_eq!(lapse, redis);
    }
}

/// A long round of evictions is a LATENCY event (`eviction-cycle`, as in
/// Redis), and INFO counts the time spent over the limit.
#[test]
fn a_long_eviction_round_is_a_latency_event() {
    let server = Server::lapse(&[
        "--maxmemory-policy",
        "allkeys-random",
        "--maxmemory-eviction-tenacity",
        "100",
        "--latency-monitor-threshold",
        "1",
    ]);
    let mut r = server.raw();
    // 100,000 keys, pipelined.
    let mut batch = Vec::new();
    let value = [b'v'; 100];
    for i in 0..100_000 {
        batch.extend(common::encode(&[
            b"SET",
            format!("k:{i}").as_bytes(),
            &value,
        ]));
    }
    r.send(&batch);
    for _ in 0..100_000 {
        r.reply();
    }
    let base = used(&mut r) / 10;
    // One command past a limit far below: evicting ~90,000 keys at once.
    ok(r.cmd(&["CONFIG", "SET", "maxmemory", &base.to_string()]));
    let latest = r.cmd(&["LATENCY", "LATEST"]);
    assert!(latest.contains("eviction-cycle"), "{latest}");
    let over: u64 = info_field(&mut r, "stats", "total_eviction_exceeded_time")
        .parse()
        .unwrap();
    assert!(over >= 1, "{over}");
}
