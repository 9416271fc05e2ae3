//! Small aggregates held packed: OBJECT ENCODING after every step of random
//! histories must be redis-server's, and while a value is packed its
//! elements come back in Redis's order (a listpack's), so whole replies
//! are compared exactly; once a value is a table, as a multiset.
//!
//! Both servers run with small limits (CONFIG SET on each) so histories
//! cross them often. Needs `redis-server` (see `Server::redis`).
//! `ENC_SEED` and `ENC_STEPS` override the seed and the length.

mod common;

use common::{Raw, Server};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const LIMITS: &[(&str, &str)] = &[
    ("hash-max-listpack-entries", "6"),
    ("hash-max-listpack-value", "8"),
    ("set-max-intset-entries", "6"),
    ("zset-max-listpack-entries", "6"),
    ("zset-max-listpack-value", "8"),
];

const KEYS: &[&str] = &["h0", "h1", "h2"];
const SET_KEYS: &[&str] = &["s0", "s1", "s2"];
const ZSET_KEYS: &[&str] = &["z0", "z1", "z2"];
/// Lists are `quicklist` in redis-server 7.0 whatever their size; lapse
/// holds short ones as one block: their contents must agree all the same,
/// across the block's size limit (8 KiB), which the long elements cross.
const LIST_KEYS: &[&str] = &["l0", "l1"];
const SCORES: &[&str] = &[
    "0", "1", "1", "2.5", "-3", "1e20", "-inf", "+inf", "0.1", "7",
];
/// Mostly integers. redis-server 7.0 has no listpack sets (a set of
/// strings is a hashtable); lapse follows 7.2, which packs them. With
/// `set-max-listpack-entries 0` (lapse only) 7.2's rules are 7.0's, so
/// the intset rules are compared here; the listpack ones are unit tests
/// of `value::set`.
const INTEGERS: &[&str] = &[
    "1",
    "2",
    "3",
    "5",
    "8",
    "13",
    "-1",
    "-40",
    "100",
    "9223372036854775807",
    "x",
    "007",
];
/// Short, at the limit (8), integer-like, binary and empty.
const ELEMENTS: &[&str] = &[
    "a", "b", "c", "d", "e", "f", "g", "1", "-7", "007", "12345678", "eightchr", "", "\u{e9}x",
];
/// Past the value limit: drawn now and then.
const LONG: &[&str] = &["123456789", "ninechars"];

fn pick<'a>(rng: &mut SmallRng, from: &[&'a str]) -> &'a str {
    from[rng.gen_range(0..from.len())]
}

fn element(rng: &mut SmallRng) -> &'static str {
    if rng.gen_bool(0.02) {
        pick(rng, LONG)
    } else {
        pick(rng, ELEMENTS)
    }
}

fn hash_command(rng: &mut SmallRng, key: &str) -> Vec<String> {
    let mut c: Vec<String> = match rng.gen_range(0..10) {
        0..=3 => vec!["HSET".into(), key.into()],
        4 => vec!["HSETNX".into(), key.into()],
        5 | 6 => vec!["HDEL".into(), key.into()],
        7 => vec![
            "HINCRBY".into(),
            key.into(),
            pick(rng, &["n", "m"]).into(),
            "1".into(),
        ],
        8 => vec!["HINCRBYFLOAT".into(), key.into(), "fl".into(), "0.1".into()],
        _ => vec!["HGET".into(), key.into(), element(rng).into()],
    };
    match c[0].as_str() {
        "HSET" => {
            for _ in 0..rng.gen_range(1..4) {
                c.push(element(rng).into());
                c.push(element(rng).into());
            }
        }
        "HSETNX" => {
            c.push(element(rng).into());
            c.push(element(rng).into());
        }
        "HDEL" => {
            for _ in 0..rng.gen_range(1..4) {
                c.push(element(rng).into());
            }
        }
        _ => {}
    }
    c
}

fn set_command(rng: &mut SmallRng, key: &str) -> Vec<String> {
    let a = pick(rng, SET_KEYS).to_string();
    let b = pick(rng, SET_KEYS).to_string();
    let mut c: Vec<String> = match rng.gen_range(0..12) {
        0..=4 => vec!["SADD".into(), key.into()],
        5 | 6 => vec!["SREM".into(), key.into()],
        7 => vec!["SMOVE".into(), a, key.into(), pick(rng, INTEGERS).into()],
        8 => vec!["SINTERSTORE".into(), key.into(), a, b],
        9 => vec!["SUNIONSTORE".into(), key.into(), a, b],
        10 => vec!["SDIFFSTORE".into(), key.into(), a, b],
        _ => vec!["SISMEMBER".into(), key.into(), pick(rng, INTEGERS).into()],
    };
    if c[0] == "SADD" || c[0] == "SREM" {
        for _ in 0..rng.gen_range(1..4) {
            c.push(pick(rng, INTEGERS).into());
        }
    }
    c
}

fn zset_command(rng: &mut SmallRng, key: &str) -> Vec<String> {
    let a = pick(rng, ZSET_KEYS).to_string();
    let b = pick(rng, ZSET_KEYS).to_string();
    let mut c: Vec<String> = match rng.gen_range(0..14) {
        0..=5 => vec!["ZADD".into(), key.into()],
        6 => vec![
            "ZINCRBY".into(),
            key.into(),
            pick(rng, SCORES).into(),
            element(rng).into(),
        ],
        7 | 8 => vec!["ZREM".into(), key.into()],
        9 => vec![pick(rng, &["ZPOPMIN", "ZPOPMAX"]).into(), key.into()],
        10 => vec!["ZREMRANGEBYRANK".into(), key.into(), "0".into(), "0".into()],
        11 => vec!["ZUNIONSTORE".into(), key.into(), "2".into(), a, b],
        12 => vec!["ZINTERSTORE".into(), key.into(), "2".into(), a, b],
        _ => vec!["ZDIFFSTORE".into(), key.into(), "2".into(), a, b],
    };
    match c[0].as_str() {
        "ZADD" => {
            if rng.gen_bool(0.2) {
                c.push(pick(rng, &["NX", "XX", "GT", "LT", "CH"]).into());
            }
            for _ in 0..rng.gen_range(1..4) {
                c.push(pick(rng, SCORES).into());
                c.push(element(rng).into());
            }
        }
        "ZREM" => {
            for _ in 0..rng.gen_range(1..3) {
                c.push(element(rng).into());
            }
        }
        _ => {}
    }
    c
}

fn list_command(rng: &mut SmallRng, key: &str) -> Vec<String> {
    let long = || "x".repeat(3000);
    let elem = |rng: &mut SmallRng| {
        if rng.gen_bool(0.05) {
            long()
        } else {
            element(rng).to_string()
        }
    };
    match rng.gen_range(0..12) {
        0..=2 => vec![
            pick(rng, &["LPUSH", "RPUSH"]).into(),
            key.into(),
            elem(rng),
            elem(rng),
        ],
        3 | 4 => vec![pick(rng, &["LPOP", "RPOP"]).into(), key.into()],
        5 => vec![
            "LSET".into(),
            key.into(),
            rng.gen_range(-3..3).to_string(),
            elem(rng),
        ],
        6 => vec![
            "LINSERT".into(),
            key.into(),
            pick(rng, &["BEFORE", "AFTER"]).into(),
            element(rng).into(),
            elem(rng),
        ],
        7 => vec![
            "LREM".into(),
            key.into(),
            rng.gen_range(-2..3).to_string(),
            element(rng).into(),
        ],
        8 => vec!["LTRIM".into(), key.into(), "1".into(), "-2".into()],
        9 => vec![
            "LINDEX".into(),
            key.into(),
            rng.gen_range(-4..4).to_string(),
        ],
        10 => vec![
            "LPOS".into(),
            key.into(),
            element(rng).into(),
            "RANK".into(),
            "-1".into(),
        ],
        _ => vec![
            "LMOVE".into(),
            pick(rng, LIST_KEYS).into(),
            key.into(),
            "LEFT".into(),
            "RIGHT".into(),
        ],
    }
}

/// The items of an array reply, sorted (for tables, whose order differs).
fn sorted_items(reply: &str) -> Vec<&str> {
    let mut items: Vec<&str> = reply.split("\r\n").skip(1).collect();
    items.sort_unstable();
    items
}

fn run(ours: &mut Raw, theirs: &mut Raw, cmd: &[String], whole: bool, context: &str) {
    let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let (a, b) = (ours.cmd(&args), theirs.cmd(&args));
    if whole {
        assert_eq!(a, b, "{context}: {cmd:?}");
    } else {
        assert_eq!(sorted_items(&a), sorted_items(&b), "{context}: {cmd:?}");
    }
}

#[test]
fn encodings_and_packed_order_follow_redis_across_random_histories() {
    let Some(redis) = Server::redis() else {
        return;
    };
    let lapse = Server::lapse(&[]);
    let seed: u64 = std::env::var("ENC_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261123);
    let steps: usize = std::env::var("ENC_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3000);
    let mut rng = SmallRng::seed_from_u64(seed);
    let (mut ours, mut theirs) = (lapse.raw(), redis.raw());
    for raw in [&mut ours, &mut theirs] {
        for (name, value) in LIMITS {
            assert_eq!(raw.cmd(&["CONFIG", "SET", name, value]), "+OK\r\n");
        }
    }
    let config = ["CONFIG", "SET", "set-max-listpack-entries", "0"];
    assert_eq!(ours.cmd(&config), "+OK\r\n");
    let mut seen = std::collections::HashMap::new();
    for step in 0..steps {
        let kind = rng.gen_range(0..4);
        let key = pick(&mut rng, [KEYS, SET_KEYS, ZSET_KEYS, LIST_KEYS][kind]);
        let cmd = match kind {
            0 => hash_command(&mut rng, key),
            1 => set_command(&mut rng, key),
            2 => zset_command(&mut rng, key),
            _ => list_command(&mut rng, key),
        };
        let context = format!("seed {seed} step {step}");
        run(&mut ours, &mut theirs, &cmd, true, &context);
        let encoding = vec!["OBJECT".to_string(), "ENCODING".into(), key.into()];
        run(&mut ours, &mut theirs, &encoding, true, &context);
        // Packed (or absent): the same elements in the same order.
        let encoding = theirs.cmd(&["OBJECT", "ENCODING", key]);
        let packed = !["$9\r\nhashtable\r\n", "$8\r\nskiplist\r\n"].contains(&encoding.as_str());
        *seen.entry(encoding).or_insert(0) += 1;
        if kind == 3 {
            let range = ["LRANGE", key, "0", "-1"].map(String::from);
            run(&mut ours, &mut theirs, &range, true, &context);
            continue;
        }
        let (reads, scan): (&[&str], &str) = match kind {
            0 => (&["HGETALL", "HKEYS", "HVALS", "HLEN"], "HSCAN"),
            1 => (&["SMEMBERS", "SCARD"], "SSCAN"),
            _ => (&["ZCARD"], "ZSCAN"),
        };
        for read in reads {
            let read = [read.to_string(), key.into()];
            run(&mut ours, &mut theirs, &read, packed, &context);
        }
        if kind == 2 {
            // A sorted set's order is the same in both forms.
            let range = ["ZRANGE", key, "0", "-1", "WITHSCORES"].map(String::from);
            run(&mut ours, &mut theirs, &range, true, &context);
        }
        let scan = [scan, key, "0", "COUNT", "1000"].map(String::from);
        run(&mut ours, &mut theirs, &scan, packed, &context);
        // Now and then a fresh start, so that new values are packed again.
        if rng.gen_bool(0.08) {
            run(
                &mut ours,
                &mut theirs,
                &["DEL".into(), key.into()],
                true,
                &context,
            );
        }
    }
    // The histories did cross the limits: both forms were compared often.
    for encoding in [
        "$8\r\nlistpack\r\n",
        "$6\r\nintset\r\n",
        "$9\r\nhashtable\r\n",
    ] {
        let n = seen.get(encoding).copied().unwrap_or(0);
        assert!(n > steps / 20, "{encoding:?} seen {n} times: {seen:?}");
    }
}
