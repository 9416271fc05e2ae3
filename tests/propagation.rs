//! The propagation point (issue 13): what each kind of command puts on the
//! effect stream, and the property that replaying the stream into a fresh
//! server rebuilds the same dataset, step by step, with keys expiring
//! passively and actively along the way. In process, with a driven clock.

use lapse::harness::Harness;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The recorded stream as a list of commands, each `a b c`.
fn commands(stream: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(stream);
    let mut out = Vec::new();
    let mut lines = text.split("\r\n");
    while let Some(header) = lines.next() {
        let Some(n) = header.strip_prefix('*') else {
            continue;
        };
        let n: usize = n.parse().unwrap();
        let words: Vec<&str> = (0..n)
            .map(|_| {
                lines.next();
                lines.next().unwrap()
            })
            .collect();
        out.push(words.join(" "));
    }
    out
}

/// Runs `lines` and returns the stream they produced.
fn effects_of(h: &mut Harness, lines: &[&str]) -> Vec<String> {
    let stream = h.record_effects();
    for line in lines {
        h.run(line);
    }
    let recorded = stream.borrow().clone();
    commands(&recorded)
}

#[test]
fn effects_are_deterministic_rewrites() {
    let mut h = Harness::new();
    let now = h.now_ms;
    let got = effects_of(
        &mut h,
        &[
            "SET a 1 EX 100",
            "SET a 1 NX",
            "DEL nothere",
            "GET a",
            "EXPIRE a 50",
            "PERSIST a",
            "SETEX b 10 v",
            "INCRBYFLOAT f 1.5",
            "HINCRBYFLOAT h x 0.25",
            "SADD s m",
            "SPOP s",
            "EXPIRE b -1",
            "GETEX a PX 20",
            "GETEX a PERSIST",
            "SELECT 2",
            "LPUSH l x",
            "FLUSHDB",
        ],
    );
    let at = |ms: i64| (now + ms).to_string();
    assert_eq!(
        got,
        [
            "SELECT 0".to_string(),
            format!("SET a 1 PXAT {}", at(100_000)),
            format!("PEXPIREAT a {}", at(50_000)),
            "PERSIST a".into(),
            format!("SET b v PXAT {}", at(10_000)),
            "SET f 1.5 KEEPTTL".into(),
            "HSET h x 0.25".into(),
            "SADD s m".into(),
            "SREM s m".into(),
            "DEL b".into(),
            format!("PEXPIREAT a {}", at(20)),
            "PERSIST a".into(),
            "SELECT 2".into(),
            "LPUSH l x".into(),
            "FLUSHDB".into(),
        ]
    );
}

/// GEOADD goes out as the ZADD it amounts to; PFCOUNT refreshing its
/// cached count is a change and goes out too (as Redis), a cached one not;
/// a SETBIT or BITFIELD that changes nothing is not propagated.
#[test]
fn new_families_propagate_as_redis_does() {
    let mut h = Harness::new();
    let got = effects_of(
        &mut h,
        &[
            "GEOADD g CH 13.361389 38.115556 Palermo",
            "PFADD h a b c",
            "PFCOUNT h",
            "PFCOUNT h",
            "SETBIT b 3 1",
            "SETBIT b 3 1",
            "BITFIELD b GET u8 0",
            "BITFIELD b OVERFLOW FAIL INCRBY u2 0 7",
        ],
    );
    assert_eq!(
        got,
        [
            "SELECT 0",
            "zadd g CH 3479099956230698 Palermo",
            "PFADD h a b c",
            "PFCOUNT h",
            "SETBIT b 3 1",
        ]
    );
}

/// Redis 8.0's hash commands go out as Redis 8.0 sends them: HSETEX with
/// its deadline as PXAT, HGETEX as the HPEXPIREAT or HPERSIST it amounts
/// to, HGETDEL as HDEL, a past deadline as an HDEL per field; and
/// HINCRBYFLOAT on a field with a deadline as HSETEX KEEPTTL (an HSET
/// would drop the deadline).
#[test]
fn redis_8_hash_commands_propagate_as_redis_does() {
    let mut h = Harness::new();
    let now = h.now_ms;
    let got = effects_of(
        &mut h,
        &[
            "HSET h a 1 b 2",
            "HSETEX h EX 100 FIELDS 1 a 5",
            "HSETEX h FNX FIELDS 1 a 6",
            "HSETEX h FXX PXAT 4000000000000 FIELDS 1 b 7",
            "HINCRBYFLOAT h a 1.5",
            "HINCRBYFLOAT h z 1",
            "HGETEX h PX 500 FIELDS 2 z nosuch",
            "HGETEX h PERSIST FIELDS 2 z a",
            "HGETEX h PERSIST FIELDS 1 z",
            "HGETEX h FIELDS 1 a",
            "HGETEX h PXAT 1 FIELDS 1 z",
            "HSETEX h PXAT 1 FIELDS 1 c 1",
            "HGETDEL h FIELDS 2 nosuch other",
            "HGETDEL h FIELDS 3 a b a",
        ],
    );
    assert_eq!(
        got,
        [
            "SELECT 0".to_string(),
            "HSET h a 1 b 2".to_string(),
            format!("HSETEX h PXAT {} FIELDS 1 a 5", now + 100_000),
            "HSETEX h FXX PXAT 4000000000000 FIELDS 1 b 7".to_string(),
            "HSETEX h KEEPTTL FIELDS 1 a 6.5".to_string(),
            "HSET h z 1".to_string(),
            format!("HPEXPIREAT h {} FIELDS 2 z nosuch", now + 500),
            "HPERSIST h FIELDS 2 z a".to_string(),
            "HDEL h z".to_string(),
            "HDEL h c".to_string(),
            "HDEL h a b a".to_string(),
        ]
    );
    assert_eq!(h.run("EXISTS h"), ":0\r\n");
}

/// A served blocking pop goes out as its non-blocking form (the loop
/// serves a woken waiter through the same handler, so this covers it).
#[test]
fn blocking_pops_propagate_as_plain_pops() {
    let mut h = Harness::new();
    let got = effects_of(
        &mut h,
        &[
            "RPUSH bl a b c d",
            "BLPOP nothing bl 0",
            "BRPOP bl 1",
            "BLMOVE bl dst LEFT RIGHT 0",
            "BRPOPLPUSH dst bl 0",
            "LMPOP 2 none bl RIGHT COUNT 5",
            "ZADD bz 1 a 2 b 3 c",
            "BZPOPMIN bz 0",
            "BZMPOP 0 1 bz MAX COUNT 5",
            "MULTI",
            "BLPOP empty 0",
            "EXEC",
        ],
    );
    assert_eq!(
        got,
        [
            "SELECT 0",
            "RPUSH bl a b c d",
            "LPOP bl",
            "RPOP bl",
            "LMOVE bl dst LEFT RIGHT",
            "LMOVE dst bl RIGHT LEFT",
            "RPOP bl 2",
            "ZADD bz 1 a 2 b 3 c",
            "ZPOPMIN bz 1",
            "ZPOPMAX bz 2",
        ]
    );
}

/// A script's writes go out as the commands it ran, wrapped together;
/// a script that wrote nothing propagates nothing.
#[test]
fn a_script_propagates_its_effects() {
    let mut h = Harness::new();
    let now = h.now_ms;
    let got = effects_of(
        &mut h,
        &[
            "EVAL \"return redis.call('get', 'a')\" 0",
            "EVAL \"redis.call('set', KEYS[1], ARGV[1]) redis.call('expire', KEYS[1], 10) return redis.call('incrbyfloat', 'f', '1.5')\" 1 a v",
            "EVAL \"return redis.call('lpush', 'l', 'x')\" 0",
        ],
    );
    assert_eq!(
        got,
        [
            "SELECT 0".to_string(),
            "MULTI".into(),
            "set a v".into(),
            format!("PEXPIREAT a {}", now + 10_000),
            "SET f 1.5 KEEPTTL".into(),
            "EXEC".into(),
            "lpush l x".into(),
        ]
    );
}

#[test]
fn expired_keys_are_deleted_before_the_command_that_found_them() {
    let mut h = Harness::new();
    h.run("SET k v PX 10");
    h.run("SET gone v PX 10");
    h.run("CONFIG SET lazyfree-lazy-expire yes");
    let stream = h.record_effects();
    h.now_ms += 10;
    h.run("APPEND k x");
    h.run("GET nothing");
    h.expire_cycle();
    assert_eq!(
        commands(&stream.borrow()),
        ["SELECT 0", "UNLINK k", "APPEND k x", "UNLINK gone"]
    );
}

#[test]
fn a_transaction_is_one_unit() {
    let mut h = Harness::new();
    let stream = h.record_effects();
    for line in ["MULTI", "SET a 1", "GET a", "INCR a", "EXEC"] {
        h.run(line);
    }
    for line in ["MULTI", "SET b 1", "EXEC", "MULTI", "GET b", "EXEC"] {
        h.run(line);
    }
    assert_eq!(
        commands(&stream.borrow()),
        ["SELECT 0", "MULTI", "SET a 1", "INCR a", "EXEC", "SET b 1"]
    );
}

const KEYS: &[&str] = &["a", "b", "c", "d", "e", "f"];

fn random_command(rng: &mut SmallRng) -> String {
    let k = KEYS[rng.gen_range(0..KEYS.len())];
    let k2 = KEYS[rng.gen_range(0..KEYS.len())];
    let v = ["1", "2", "x", "10", "-3", "2.5"][rng.gen_range(0..6)];
    let ttl = rng.gen_range(1..200);
    let n = rng.gen_range(-3..5);
    match rng.gen_range(0..83) {
        0 => format!("SET {k} {v}"),
        1 => format!("SET {k} {v} PX {ttl}"),
        2 => format!("SET {k} {v} NX EX 1"),
        3 => format!("SETEX {k} 1 {v}"),
        4 => format!("PSETEX {k} {ttl} {v}"),
        5 => format!("GETEX {k} PX {ttl}"),
        6 => format!("GETEX {k} PERSIST"),
        7 => format!("GETDEL {k}"),
        8 => format!("INCR {k}"),
        9 => format!("INCRBYFLOAT {k} 0.1"),
        10 => format!("APPEND {k} {v}"),
        11 => format!("SETRANGE {k} 2 {v}"),
        12 => format!("PEXPIRE {k} {ttl}"),
        13 => format!("EXPIRE {k} {n}"),
        14 => format!("PERSIST {k}"),
        15 => format!("DEL {k} {k2}"),
        16 => format!("UNLINK {k}"),
        17 => format!("RENAME {k} {k2}"),
        18 => format!("COPY {k} {k2} REPLACE"),
        19 => format!("MOVE {k} 1"),
        20 => format!("LPUSH {k} {v} {v}"),
        21 => format!("RPOP {k}"),
        22 => format!("LMOVE {k} {k2} LEFT RIGHT"),
        23 => format!("LTRIM {k} 0 {n}"),
        24 => format!("LREM {k} 0 {v}"),
        25 => format!("LSET {k} 0 {v}"),
        26 => format!("HSET {k} f{n} {v}"),
        27 => format!("HDEL {k} f{n}"),
        28 => format!("HINCRBY {k} f{n} 2"),
        29 => format!("HINCRBYFLOAT {k} g 0.5"),
        30 => format!("SADD {k} {v} {n}"),
        31 => format!("SREM {k} {v}"),
        32 => format!("SPOP {k} {}", rng.gen_range(1..3)),
        33 => format!("SMOVE {k} {k2} {v}"),
        34 => format!("SUNIONSTORE {k} {k2} {k}"),
        35 => format!("ZADD {k} {n} {v}"),
        36 => format!("ZINCRBY {k} 1.5 {v}"),
        37 => format!("ZREM {k} {v}"),
        38 => format!("ZPOPMIN {k}"),
        39 => format!("ZREMRANGEBYSCORE {k} -1 1"),
        40 => format!("ZUNIONSTORE {k} 2 {k} {k2}"),
        41 => format!("GET {k}"),
        42 => format!("SELECT {}", rng.gen_range(0..2)),
        43 => "SWAPDB 0 1".into(),
        44 => format!("MSET {k} {v} {k2} {v}"),
        45 => "MULTI".into(),
        46 => "EXEC".into(),
        47 => format!("SET {k} {v} PXAT 1"),
        48 => format!("LMPOP 2 {k} {k2} RIGHT COUNT 2"),
        49 => format!("ZMPOP 1 {k} MAX"),
        50 => format!(
            "EVAL \"redis.pcall('incr', KEYS[1]) redis.pcall('pexpire', KEYS[1], ARGV[1]) return redis.pcall('get', KEYS[2])\" 2 {k} {k2} {ttl}"
        ),
        52 => format!("SETBIT {k} {} 1", rng.gen_range(0..40)),
        53 => format!("BITFIELD {k} OVERFLOW SAT INCRBY i5 {} {n}", rng.gen_range(0..20)),
        54 => format!("BITOP XOR {k} {k} {k2}"),
        55 => format!("PFADD {k} {v} {n}"),
        56 => format!("PFCOUNT {k}"),
        57 => format!("PFMERGE {k} {k2}"),
        58 => format!("GEOADD {k} {n} {n} {v}"),
        59 => format!("GEOSEARCHSTORE {k} {k2} FROMLONLAT 0 0 BYRADIUS 1000 km STOREDIST"),
        61 => format!("SORT {k} ALPHA DESC LIMIT 0 3 STORE {k2}"),
        62 => format!("SORT {k} BY nosort STORE {k2}"),
        63 => format!("XADD {k} * f {v}"),
        64 => format!("XADD {k} MAXLEN ~ 2 * f {v}"),
        65 => format!("XGROUP CREATE {k} g 0 MKSTREAM"),
        66 => format!("XREADGROUP GROUP g c COUNT 2 STREAMS {k} >"),
        67 => format!("XTRIM {k} MINID ~ {ttl}"),
        68 => format!("XAUTOCLAIM {k} g d 0 0 COUNT 1"),
        // Hash fields with deadlines: set, conditional, past, persisted,
        // read (a field past its deadline leaves on the read).
        69 => format!("HPEXPIRE {k} {ttl} FIELDS 2 f{n} g"),
        70 => format!("HPEXPIRE {k} {ttl} GT FIELDS 1 f{n}"),
        71 => format!("HEXPIREAT {k} 1 FIELDS 1 f{n}"),
        72 => format!("HPERSIST {k} FIELDS 1 f{n}"),
        73 => format!("HGETALL {k}"),
        74 => format!("HPEXPIRE {k} {ttl} NX FIELDS 1 g"),
        // Redis 8.0's: get and delete, get and set or drop deadlines
        // (past ones delete), set with deadlines, kept, conditional.
        75 => format!("HGETDEL {k} FIELDS 2 f{n} g"),
        76 => format!("HGETEX {k} PX {ttl} FIELDS 2 f{n} g"),
        77 => format!("HGETEX {k} PERSIST FIELDS 1 g"),
        78 => format!("HGETEX {k} EXAT 1 FIELDS 1 f{n}"),
        79 => format!("HSETEX {k} PX {ttl} FIELDS 2 g {v} f{n} {v}"),
        80 => format!("HSETEX {k} FXX KEEPTTL FIELDS 1 g {v}"),
        81 => format!("HSETEX {k} FNX PXAT 1 FIELDS 1 f{n} {v}"),
        _ => format!("SINTERSTORE {k} {k2}"),
    }
}

/// Random commands of every family, with TTLs running out while the clock
/// moves and active cycles in between, on one server; its effect stream
/// replayed into a second server at the same moments: both datasets have
/// the same DEBUG DIGEST after every step.
#[test]
fn replaying_the_stream_rebuilds_the_dataset() {
    let seeds: u64 = std::env::var("REPLAY_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(8);
    for seed in 0..seeds {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut primary = Harness::new();
        let mut replica = Harness::new();
        let stream = primary.record_effects();
        let mut fed = 0;
        let mut history = Vec::new();
        for step in 0..3000 {
            primary.now_ms += rng.gen_range(0..20);
            if rng.gen_bool(0.05) {
                primary.expire_cycle();
                history.push("<active expire cycle>".to_string());
            } else {
                let cmd = random_command(&mut rng);
                primary.run(&cmd);
                history.push(cmd);
            }
            // The replica applies what arrived, at the same moment.
            replica.now_ms = primary.now_ms;
            let bytes = stream.borrow()[fed..].to_vec();
            fed += bytes.len();
            let errors = replica.replay(&bytes);
            assert!(
                errors.is_empty(),
                "seed {seed} step {step}: replay errors {errors:?} after {:?}, stream {:?}",
                &history[history.len().saturating_sub(8)..],
                commands(&bytes)
            );
            if primary.digest() != replica.digest() {
                for db in 0..2 {
                    for h in [&mut primary, &mut replica] {
                        let keys: Vec<String> = KEYS
                            .iter()
                            .map(|k| {
                                let d = &h.server.dbs[db];
                                format!("{k}={:?}", d.peek(k.as_bytes()))
                            })
                            .collect();
                        eprintln!("db{db}: {keys:?}");
                    }
                }
                let recent = &history[history.len().saturating_sub(12)..];
                panic!(
                    "seed {seed} step {step}: datasets differ\nrecent:\n{}\nstream tail: {:?}",
                    recent.join("\n"),
                    commands(&stream.borrow())
                        .iter()
                        .rev()
                        .take(8)
                        .collect::<Vec<_>>()
                );
            }
        }
    }
}

/// RESTORE goes out with an absolute deadline (its TTL made absolute,
/// ABSTTL appended), as Redis rewrites it; one whose deadline has passed
/// stores nothing, and goes out as DEL only if REPLACE removed a value.
#[test]
fn restore_propagates_an_absolute_ttl() {
    let mut h = Harness::new();
    let now = h.now_ms;
    h.run("SET src hello");
    let reply = h.exec(&[b"DUMP", b"src"]);
    let start = reply.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
    let payload = &reply[start..reply.len() - 2];
    let stream = h.record_effects();
    for args in [
        &[&b"RESTORE"[..], b"a", b"5000", payload][..],
        &[b"RESTORE", b"b", b"0", payload],
        &[b"RESTORE", b"c", b"1", payload, b"ABSTTL"],
        &[b"RESTORE", b"b", b"1", payload, b"ABSTTL", b"REPLACE"],
    ] {
        assert_eq!(h.exec(args), b"+OK\r\n");
    }
    let got = commands(&stream.borrow());
    let dumped = String::from_utf8_lossy(payload);
    assert_eq!(
        got,
        [
            "SELECT 0".to_string(),
            format!("RESTORE a {} {dumped} ABSTTL", now + 5000),
            format!("RESTORE b 0 {dumped}"),
            "DEL b".into(),
        ]
    );
    assert_eq!(h.run("EXISTS a b c"), ":1\r\n");
}
