//! Differential test: the same seeded random command sequence against lapse
//! and a real redis-server; every reply must be identical, byte for byte,
//! except clock-dependent ones (compared with a tolerance) and KEYS (order).
//!
//! Needs `redis-server` on PATH: in CI its absence fails the test; on a
//! developer machine the test says loudly that it skipped.
//! `DIFF_SEED` and `DIFF_COMMANDS` override the seed and the length.

mod common;

use common::Server;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const KEYS: &[&str] = &["k0", "k1", "k2", "k3", "k4", "k5", "missing"];
/// Keys that mostly hold floats, for INCRBYFLOAT (which also runs on the
/// other keys, whatever they hold).
const FLOAT_KEYS: &[&str] = &["f0", "f1"];
const VALUES: &[&str] = &[
    "0",
    "1",
    "-5",
    "42",
    "abc",
    "",
    "hello world",
    "9223372036854775806",
    "3.5",
    "007",
];
const INTS: &[&str] = &[
    "0",
    "1",
    "-1",
    "7",
    "100",
    "-100",
    "abc",
    "9223372036854775807",
    "-9223372036854775808",
    "1.5",
    "",
];
/// Floats in every form strtold takes, and magnitudes where x87 long
/// double rounding shows (1000.1 -> 1000.09999999999999998).
const FLOATS: &[&str] = &[
    "0.5",
    "1.5",
    "-2.25",
    "0.1",
    "3",
    "abc",
    "",
    "-0.1",
    "inf",
    "+.5",
    "0x10",
    "0x1.8p-3",
    "1000.1",
    "1e300",
    "-1e300",
    "9223372036854775806",
    "1e-20",
    "5.",
    "1e",
    " 1",
    "1e5000",
    "0x",
    "-Infinity",
];

fn pick<'a>(rng: &mut SmallRng, from: &[&'a str]) -> &'a str {
    from[rng.gen_range(0..from.len())]
}

/// Relative TTLs: far in the future or already past, never close to now, so
/// the two servers (a few ms apart) agree on what has expired.
fn ttl_arg(rng: &mut SmallRng, millis: bool) -> String {
    let secs: i64 = match rng.gen_range(0..10) {
        0 => -10,
        1 => 0,
        // Overflows when added to the clock: an error on both servers. (A
        // huge value that fits would make GT/LT races on the millisecond.)
        2 if millis => return (i64::MAX - 1000).to_string(),
        2 => i64::MAX / 100,
        3 => return "abc".into(),
        _ => rng.gen_range(100..100_000),
    };
    if millis && secs.abs() < i64::MAX / 1000 {
        (secs * 1000).to_string()
    } else {
        secs.to_string()
    }
}

fn abs_time_arg(rng: &mut SmallRng, millis: bool) -> String {
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let at_ms = match rng.gen_range(0..4) {
        0 => now_ms - 100_000,
        1 => 1,
        _ => now_ms + rng.gen_range(100_000..10_000_000),
    };
    if millis { at_ms } else { at_ms / 1000 }.to_string()
}

fn set_options(rng: &mut SmallRng, getex: bool) -> Vec<String> {
    let mut opts = Vec::new();
    for _ in 0..rng.gen_range(0..3) {
        let choice = rng.gen_range(0..10);
        let opt: &[&str] = match (choice, getex) {
            (0, false) => &["NX"],
            (1, false) => &["XX"],
            (2, false) => &["GET"],
            (3, false) => &["KEEPTTL"],
            (3, true) => &["PERSIST"],
            (4, _) => &["EX"],
            (5, _) => &["PX"],
            (6, _) => &["EXAT"],
            (7, _) => &["PXAT"],
            (8, _) => &["BOGUS"],
            _ => &["EX"],
        };
        let opt = opt[0];
        opts.push(opt.to_string());
        match opt {
            "EX" => opts.push(ttl_arg(rng, false)),
            "PX" => opts.push(ttl_arg(rng, true)),
            "EXAT" => opts.push(abs_time_arg(rng, false)),
            "PXAT" => opts.push(abs_time_arg(rng, true)),
            _ => {}
        }
    }
    opts
}

/// How to compare the replies of a command.
#[derive(Clone, Copy, PartialEq)]
enum Compare {
    Exact,
    /// An integer reply that may differ by up to this much (TTL-like).
    Tolerance(i64),
    /// An array whose order is unspecified (KEYS, SMEMBERS).
    Unordered,
    /// Random picks: only the reply's first line (type and length) and
    /// errors must agree.
    Shape,
    /// Exact, except that replies holding a NUL byte compare as
    /// multisets: SORT ALPHA compares with strcoll, which stops at a NUL,
    /// so such strings can tie and keep a set's hash-table order.
    ExactUnlessNul,
}

fn generate_core(rng: &mut SmallRng) -> (Vec<String>, Compare) {
    let k = |rng: &mut SmallRng| pick(rng, KEYS).to_string();
    let v = |rng: &mut SmallRng| pick(rng, VALUES).to_string();
    let i = |rng: &mut SmallRng| pick(rng, INTS).to_string();
    let small = |rng: &mut SmallRng| rng.gen_range(-12..12).to_string();
    let mut cmp = Compare::Exact;
    let cmd: Vec<String> = match rng.gen_range(0..60) {
        0 => vec!["GET".into(), k(rng)],
        1 | 2 => {
            let mut c = vec!["SET".into(), k(rng), v(rng)];
            c.extend(set_options(rng, false));
            c
        }
        3 => vec!["SETNX".into(), k(rng), v(rng)],
        4 => vec!["SETEX".into(), k(rng), ttl_arg(rng, false), v(rng)],
        5 => vec!["PSETEX".into(), k(rng), ttl_arg(rng, true), v(rng)],
        6 => {
            let mut c = vec!["GETEX".into(), k(rng)];
            c.extend(set_options(rng, true));
            c
        }
        7 => vec!["GETDEL".into(), k(rng)],
        8 => vec!["GETSET".into(), k(rng), v(rng)],
        9 => (0..rng.gen_range(0..4))
            .map(|_| k(rng))
            .fold(vec!["MGET".into()], |mut c, x| {
                c.push(x);
                c
            }),
        10 => {
            let mut c = vec!["MSET".into()];
            for _ in 0..rng.gen_range(0..3) {
                c.push(k(rng));
                c.push(v(rng));
            }
            if rng.gen_bool(0.1) {
                c.push(k(rng));
            }
            c
        }
        11 => vec!["MSETNX".into(), k(rng), v(rng), k(rng), v(rng)],
        12 => vec!["APPEND".into(), k(rng), v(rng)],
        13 => vec!["STRLEN".into(), k(rng)],
        14 => vec!["GETRANGE".into(), k(rng), small(rng), small(rng)],
        15 => vec![
            "SETRANGE".into(),
            k(rng),
            rng.gen_range(-1..20).to_string(),
            v(rng),
        ],
        16 => vec!["INCR".into(), k(rng)],
        17 => vec!["DECR".into(), k(rng)],
        18 => vec!["INCRBY".into(), k(rng), i(rng)],
        19 => vec!["DECRBY".into(), k(rng), i(rng)],
        20 => vec![
            "INCRBYFLOAT".into(),
            if rng.gen_bool(0.7) {
                pick(rng, FLOAT_KEYS).into()
            } else {
                k(rng)
            },
            pick(rng, FLOATS).into(),
        ],
        21 => vec![
            "SET".into(),
            pick(rng, FLOAT_KEYS).into(),
            pick(rng, &["1.5", "abc", "-3", "0.25"]).into(),
        ],
        22 => (0..rng.gen_range(0..4))
            .map(|_| k(rng))
            .fold(vec!["DEL".into()], |mut c, x| {
                c.push(x);
                c
            }),
        23 => vec!["EXISTS".into(), k(rng), k(rng)],
        24 => vec!["TYPE".into(), k(rng)],
        25 => vec!["RENAME".into(), k(rng), k(rng)],
        26 => vec!["RENAMENX".into(), k(rng), k(rng)],
        27 => {
            let mut c = vec!["COPY".into(), k(rng), k(rng)];
            if rng.gen_bool(0.5) {
                c.extend(["DB".into(), pick(rng, DB_INDEXES).into()]);
            }
            if rng.gen_bool(0.5) {
                c.push("REPLACE".into());
            }
            c
        }
        28 => vec!["MOVE".into(), k(rng), pick(rng, DB_INDEXES).into()],
        29 => vec![
            "SELECT".into(),
            pick(
                rng,
                &["0", "1", "0", "1", "16", "-1", "9223372036854775807"],
            )
            .into(),
        ],
        30 => {
            cmp = Compare::Unordered;
            vec![
                "KEYS".into(),
                pick(rng, &["*", "k*", "k[0-2]", "?1", "f*"]).into(),
            ]
        }
        31 => vec!["DBSIZE".into()],
        32 | 33 => {
            let name = pick(rng, &["EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"]);
            let when = match name {
                "EXPIRE" => ttl_arg(rng, false),
                "PEXPIRE" => ttl_arg(rng, true),
                "EXPIREAT" => abs_time_arg(rng, false),
                _ => abs_time_arg(rng, true),
            };
            let mut c = vec![name.into(), k(rng), when];
            for _ in 0..rng.gen_range(0..3) {
                c.push(pick(rng, &["NX", "XX", "GT", "LT", "nx", "ZZ"]).into());
            }
            c
        }
        34 | 35 => {
            let name = pick(rng, &["TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"]);
            cmp = Compare::Tolerance(if name.starts_with('P') { 2_000 } else { 2 });
            vec![name.into(), k(rng)]
        }
        36 => vec!["PERSIST".into(), k(rng)],
        37 => vec!["UNLINK".into(), k(rng), k(rng)],
        38 => vec!["TOUCH".into(), k(rng)],
        39 => vec!["ECHO".into(), v(rng)],
        40 => vec!["PING".into()],
        41 => vec![pick(rng, &["GET", "SET", "TTL", "EXPIRE", "INCRBY", "GETRANGE"]).into()],
        42 => vec![
            "SWAPDB".into(),
            pick(rng, &["0", "1", "9223372036854775807", "x"]).into(),
            pick(rng, DB_INDEXES).into(),
        ],
        // Cursors as strtoul reads them, on keys whose scan Redis answers
        // before it reads the options (missing or of another type).
        43 => {
            let name = pick(rng, &["SSCAN", "HSCAN", "ZSCAN"]);
            // A key that never exists, or one that may: then only with a
            // cursor that is refused whatever the type (a valid cursor past
            // 0 on a small value shows Redis's listpack layout).
            let key = pick(rng, &["never", "k0", "k1"]);
            let cursor = match key {
                "never" => pick(rng, CURSORS),
                _ => pick(rng, &[" 5", "5 ", "-", "18446744073709551616", "x", "0x1"]),
            };
            cmp = Compare::Unordered;
            let mut c = vec![name.into(), key.into(), cursor.into()];
            if rng.gen_bool(0.3) {
                c.extend(picks(rng, &["COUNT", "0", "TYPE", "MATCH"], 2));
            }
            c
        }
        44..=46 => {
            let name = pick(rng, &["LPUSH", "RPUSH", "LPUSHX", "RPUSHX"]);
            let mut c = vec![name.into(), k(rng)];
            for _ in 0..rng.gen_range(0..4) {
                c.push(v(rng));
            }
            c
        }
        47 | 48 => {
            let mut c = vec![pick(rng, &["LPOP", "RPOP"]).into(), k(rng)];
            if rng.gen_bool(0.4) {
                c.push(pick(rng, &["0", "1", "2", "10", "-1", "x"]).into());
            }
            c
        }
        49 => vec!["LLEN".into(), k(rng)],
        50 => vec!["LRANGE".into(), k(rng), small(rng), small(rng)],
        51 => vec!["LINDEX".into(), k(rng), small(rng)],
        52 => vec!["LSET".into(), k(rng), small(rng), v(rng)],
        53 => vec![
            "LINSERT".into(),
            k(rng),
            pick(rng, &["BEFORE", "AFTER", "after", "middle"]).into(),
            v(rng),
            v(rng),
        ],
        54 => vec!["LREM".into(), k(rng), small(rng), v(rng)],
        55 => vec!["LTRIM".into(), k(rng), small(rng), small(rng)],
        56 => {
            let mut c = vec!["LPOS".into(), k(rng), v(rng)];
            for _ in 0..rng.gen_range(0..3) {
                c.push(pick(rng, &["RANK", "COUNT", "MAXLEN", "BOGUS"]).into());
                c.push(pick(rng, &["0", "1", "2", "-1", "-2", "5", "x"]).into());
            }
            c
        }
        57 | 58 => vec![
            "LMOVE".into(),
            k(rng),
            k(rng),
            pick(rng, &["LEFT", "RIGHT", "left", "UP"]).into(),
            pick(rng, &["LEFT", "RIGHT"]).into(),
        ],
        59 => vec!["RPOPLPUSH".into(), k(rng), k(rng)],
        _ => vec![pick(rng, &["NOSUCH", "sEt", "gEt"]).into(), k(rng), v(rng)],
    };
    (cmd, cmp)
}

const DB_INDEXES: &[&str] = &[
    "0",
    "1",
    "16",
    "99",
    "-1",
    "x",
    "9223372036854775807",
    "2147483648",
    "-2147483649",
];
const CURSORS: &[&str] = &[
    "0",
    "-1",
    "",
    "+0",
    " 5",
    "5 ",
    "-",
    "18446744073709551615",
    "18446744073709551616",
    "x",
    "0x1",
];

const FIELDS: &[&str] = &["a", "b", "c", "n"];
const MEMBERS: &[&str] = &["a", "b", "c", "1", "2", "x"];
const SCORES: &[&str] = &[
    "1", "2", "-1", "0", "1.5", "3", "0.1", "-2.5", "inf", "-inf", "abc", "+inf", "1e3", "0x10",
    "0x1.8p1", "1e400", "0x", "-0x.8",
];
/// Sorted sets only ever holding score 0, for the lex commands: Redis leaves
/// lex ranges over mixed scores unspecified.
const LEX_KEYS: &[&str] = &["lex0", "lex1"];
const LEX_BOUNDS: &[&str] = &["-", "+", "[a", "(a", "[c", "(c", "[bb", "a", "[", "("];
const SCORE_BOUNDS: &[&str] = &[
    "-inf", "+inf", "0", "1", "(1", "2", "(2", "1.5", "(-1", "x", "(", "3",
];

fn generate(rng: &mut SmallRng) -> (Vec<Vec<u8>>, Compare) {
    let (cmd, cmp) = match rng.gen_range(0..17) {
        0..=3 => generate_core(rng),
        4 | 5 => generate_hash(rng),
        6 | 7 => generate_set(rng),
        8 | 9 => generate_zset(rng),
        10 | 11 => (generate_bits(rng), Compare::Exact),
        12 => (generate_hll(rng), Compare::Exact),
        13 => (generate_geo(rng), Compare::Exact),
        14 => generate_sort(rng),
        _ => generate_stream(rng),
    };
    let mut cmd: Vec<Vec<u8>> = cmd.into_iter().map(String::into_bytes).collect();
    // A cursor past 0 depends on the table's layout, which differs where
    // Redis holds a small value as a listpack: leave the scans alone.
    // SORT's comparison mode depends on its exact options: left alone too.
    if !cmd[0].ends_with(b"SCAN") && !cmd[0].starts_with(b"SORT") && rng.gen_bool(0.1) {
        mutate(rng, &mut cmd);
    }
    (cmd, cmp)
}

/// Arguments that are not UTF-8 or hold a NUL: the bytes Redis echoes in
/// its errors, up to the NUL.
const ODD_BYTES: &[&[u8]] = &[b"\xe9", b"a\x00b", b"\x00", b"\xff\xfe x", b"caf\xc3\xa9"];

/// Gives a command an extra trailing argument, or swaps one argument for
/// odd bytes: how the arity and order-of-checks differences were found.
fn mutate(rng: &mut SmallRng, cmd: &mut Vec<Vec<u8>>) {
    let odd = ODD_BYTES[rng.gen_range(0..ODD_BYTES.len())].to_vec();
    // No argument after TTL's or PTTL's key: lapse reads it as KeyDB's
    // member (the random draws stay the same).
    let keydb_member = cmd.len() == 2 && (cmd[0] == b"TTL" || cmd[0] == b"PTTL");
    let mut push = |arg: Vec<u8>| {
        if !keydb_member {
            cmd.push(arg);
        }
    };
    match rng.gen_range(0..3) {
        // (Not WITHSCORE: lapse has ZRANK's 7.2 option, 7.0 does not.)
        0 => push(pick(rng, &["x", "1", "WITHSCORES", "0"]).into()),
        1 => push(odd),
        _ => {
            let i = rng.gen_range(0..cmd.len());
            // The name itself only in the unknown-command echo's position.
            cmd[i] = if i == 0 {
                [b"x".as_slice(), &odd].concat()
            } else {
                odd
            };
        }
    }
}

fn shown(cmd: &[Vec<u8>]) -> Vec<String> {
    cmd.iter()
        .map(|a| format!("{:?}", String::from_utf8_lossy(a)))
        .collect()
}

/// `count` draws from `from`, as owned arguments.
fn picks(rng: &mut SmallRng, from: &[&str], count: usize) -> Vec<String> {
    (0..count).map(|_| pick(rng, from).to_string()).collect()
}

/// A command name followed by `args`.
fn command(name: &str, args: Vec<String>) -> Vec<String> {
    std::iter::once(name.to_string()).chain(args).collect()
}

fn generate_hash(rng: &mut SmallRng) -> (Vec<String>, Compare) {
    let k = pick(rng, KEYS).to_string();
    let f = pick(rng, FIELDS).to_string();
    let mut cmp = Compare::Exact;
    let cmd = match rng.gen_range(0..17) {
        0 | 1 => {
            let name = pick(rng, &["HSET", "HMSET"]);
            let mut c = vec![name.into(), k];
            for _ in 0..rng.gen_range(0..3) {
                c.push(pick(rng, FIELDS).into());
                c.push(pick(rng, VALUES).into());
            }
            if rng.gen_bool(0.1) {
                c.push(f);
            }
            c
        }
        2 => vec!["HSETNX".into(), k, f, pick(rng, VALUES).into()],
        3 => vec!["HGET".into(), k, f],
        4 => command("HMGET", [vec![k], picks(rng, FIELDS, 2)].concat()),
        5 => command("HDEL", [vec![k], picks(rng, FIELDS, 2)].concat()),
        6 => vec!["HLEN".into(), k],
        7 => vec!["HEXISTS".into(), k, f],
        8 => {
            cmp = Compare::Unordered;
            vec![pick(rng, &["HKEYS", "HVALS", "HGETALL"]).into(), k]
        }
        9 => vec!["HINCRBY".into(), k, f, pick(rng, INTS).into()],
        10 => vec![
            "HINCRBYFLOAT".into(),
            if rng.gen_bool(0.5) { "fh".into() } else { k },
            f,
            pick(rng, FLOATS).into(),
        ],
        11 => vec!["HSTRLEN".into(), k, f],
        12 | 13 => {
            cmp = Compare::Shape;
            let mut c = vec!["HRANDFIELD".into(), k];
            if rng.gen_bool(0.7) {
                c.push(pick(rng, &["0", "1", "3", "100", "-1", "-5", "x"]).into());
                if rng.gen_bool(0.5) {
                    c.push(pick(rng, &["WITHVALUES", "withvalues", "BOGUS"]).into());
                }
            }
            c
        }
        14 => {
            cmp = Compare::Unordered;
            let mut c = vec!["HSCAN".into(), k, pick(rng, &["0", "0", "x"]).into()];
            c.extend(["COUNT".into(), "1000".into()]);
            if rng.gen_bool(0.3) {
                c.extend(["MATCH".into(), pick(rng, &["a*", "*", "[ab]"]).into()]);
            }
            c
        }
        _ => vec!["TYPE".into(), k],
    };
    (cmd, cmp)
}

fn generate_set(rng: &mut SmallRng) -> (Vec<String>, Compare) {
    let k = pick(rng, KEYS).to_string();
    let m = pick(rng, MEMBERS).to_string();
    let mut cmp = Compare::Exact;
    let cmd = match rng.gen_range(0..19) {
        0..=2 => {
            let n = rng.gen_range(1..4);
            command("SADD", [vec![k], picks(rng, MEMBERS, n)].concat())
        }
        3 => command("SREM", [vec![k], picks(rng, MEMBERS, 2)].concat()),
        4 => {
            cmp = Compare::Unordered;
            vec!["SMEMBERS".into(), k]
        }
        5 => vec!["SISMEMBER".into(), k, m],
        6 => command("SMISMEMBER", [vec![k], picks(rng, MEMBERS, 2)].concat()),
        7 => vec!["SCARD".into(), k],
        8 => {
            // Popping everything (or nothing) keeps both servers' sets equal.
            cmp = Compare::Unordered;
            vec!["SPOP".into(), k, pick(rng, &["0", "100", "-1", "x"]).into()]
        }
        9 => {
            cmp = Compare::Shape;
            let mut c = vec!["SRANDMEMBER".into(), k];
            if rng.gen_bool(0.8) {
                c.push(pick(rng, &["0", "1", "3", "100", "-1", "-5", "x"]).into());
            }
            c
        }
        10 | 11 => vec!["SMOVE".into(), k, pick(rng, KEYS).into(), m],
        12 | 13 => {
            cmp = Compare::Unordered;
            let n = rng.gen_range(1..4);
            command(
                pick(rng, &["SINTER", "SUNION", "SDIFF"]),
                picks(rng, KEYS, n),
            )
        }
        14 | 15 => {
            let n = rng.gen_range(1..4);
            let name = pick(rng, &["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"]);
            command(name, picks(rng, KEYS, n + 1))
        }
        16 => {
            let n = rng.gen_range(1..4);
            let mut c = vec![
                "SINTERCARD".into(),
                pick(rng, &["1", "2", "3", "0", "5", "x"]).into(),
            ];
            c.extend(picks(rng, KEYS, n));
            if rng.gen_bool(0.4) {
                c.extend(["LIMIT".into(), pick(rng, &["0", "1", "2", "-1"]).into()]);
            }
            c
        }
        17 => {
            cmp = Compare::Unordered;
            let mut c = vec!["SSCAN".into(), k, "0".into(), "COUNT".into(), "1000".into()];
            if rng.gen_bool(0.3) {
                c.extend(["MATCH".into(), pick(rng, &["a*", "*", "[0-9]"]).into()]);
            }
            c
        }
        _ => vec!["TYPE".into(), k],
    };
    (cmd, cmp)
}

fn zadd_flags(rng: &mut SmallRng) -> Vec<String> {
    let mut flags = Vec::new();
    for _ in 0..rng.gen_range(0..3) {
        flags.push(pick(rng, &["NX", "XX", "GT", "LT", "CH", "INCR", "ch"]).to_string());
    }
    flags
}

fn range_options(rng: &mut SmallRng, by: bool) -> Vec<String> {
    let mut opts = Vec::new();
    for _ in 0..rng.gen_range(0..3) {
        match rng.gen_range(0..if by { 5 } else { 3 }) {
            0 => opts.push("WITHSCORES".into()),
            1 => opts.extend([
                "LIMIT".to_string(),
                pick(rng, &["0", "1", "2", "-1"]).into(),
                pick(rng, &["1", "2", "-1", "0"]).into(),
            ]),
            2 => opts.push(pick(rng, &["REV", "BOGUS"]).into()),
            3 => opts.push("BYSCORE".into()),
            _ => opts.push("BYLEX".into()),
        }
    }
    opts
}

fn generate_zset(rng: &mut SmallRng) -> (Vec<String>, Compare) {
    let k = pick(rng, KEYS).to_string();
    let lex = pick(rng, LEX_KEYS).to_string();
    let m = pick(rng, MEMBERS).to_string();
    let sb = |rng: &mut SmallRng| pick(rng, SCORE_BOUNDS).to_string();
    let lb = |rng: &mut SmallRng| pick(rng, LEX_BOUNDS).to_string();
    let small = |rng: &mut SmallRng| rng.gen_range(-6..6).to_string();
    let mut cmp = Compare::Exact;
    let cmd = match rng.gen_range(0..30) {
        0..=3 => {
            let mut c = vec!["ZADD".into(), k];
            c.extend(zadd_flags(rng));
            for _ in 0..rng.gen_range(1..3) {
                c.push(pick(rng, SCORES).into());
                c.push(pick(rng, MEMBERS).into());
            }
            if rng.gen_bool(0.05) {
                c.push(m);
            }
            c
        }
        4 => vec!["ZINCRBY".into(), k, pick(rng, SCORES).into(), m],
        5 => command("ZREM", [vec![k], picks(rng, MEMBERS, 2)].concat()),
        6 => vec!["ZSCORE".into(), k, m],
        7 => command("ZMSCORE", [vec![k], picks(rng, MEMBERS, 2)].concat()),
        8 => vec!["ZCARD".into(), k],
        9 => vec!["ZCOUNT".into(), k, sb(rng), sb(rng)],
        10 => vec![pick(rng, &["ZRANK", "ZREVRANK"]).into(), k, m],
        11 | 12 => {
            let by = rng.gen_bool(0.5);
            let (min, max) = if by {
                (sb(rng), sb(rng))
            } else {
                (small(rng), small(rng))
            };
            let mut c = if rng.gen_bool(0.3) {
                let src = pick(rng, KEYS).into();
                vec!["ZRANGESTORE".into(), k, src, min, max]
            } else {
                vec!["ZRANGE".into(), k, min, max]
            };
            c.extend(range_options(rng, by));
            c
        }
        13 => {
            let mut c = vec!["ZREVRANGE".into(), k, small(rng), small(rng)];
            if rng.gen_bool(0.5) {
                c.push("WITHSCORES".into());
            }
            c
        }
        14 | 15 => {
            let name = pick(rng, &["ZRANGEBYSCORE", "ZREVRANGEBYSCORE"]);
            let mut c = vec![name.into(), k, sb(rng), sb(rng)];
            c.extend(range_options(rng, false).into_iter().filter(|o| o != "REV"));
            c
        }
        16 => vec![
            "ZADD".into(),
            lex,
            "0".into(),
            pick(rng, &["a", "b", "bb", "c", "d"]).into(),
        ],
        17 => vec!["ZLEXCOUNT".into(), lex, lb(rng), lb(rng)],
        18 | 19 => {
            let name = pick(rng, &["ZRANGEBYLEX", "ZREVRANGEBYLEX"]);
            let mut c = vec![name.into(), lex, lb(rng), lb(rng)];
            if rng.gen_bool(0.4) {
                c.extend(["LIMIT".into(), small(rng), small(rng)]);
            }
            c
        }
        20 => {
            let mut c = if rng.gen_bool(0.3) {
                let dst = pick(rng, &["lex1", "k0"]).into();
                vec![
                    "ZRANGESTORE".into(),
                    dst,
                    lex,
                    lb(rng),
                    lb(rng),
                    "BYLEX".into(),
                ]
            } else {
                vec!["ZRANGE".into(), lex, lb(rng), lb(rng), "BYLEX".into()]
            };
            c.extend(range_options(rng, false));
            c
        }
        21 => vec!["ZREMRANGEBYRANK".into(), k, small(rng), small(rng)],
        22 => vec!["ZREMRANGEBYSCORE".into(), k, sb(rng), sb(rng)],
        23 => vec!["ZREMRANGEBYLEX".into(), lex, lb(rng), lb(rng)],
        24 => {
            let mut c = vec![pick(rng, &["ZPOPMIN", "ZPOPMAX"]).into(), k];
            if rng.gen_bool(0.5) {
                c.push(pick(rng, &["0", "1", "2", "10", "-1", "x"]).into());
            }
            c
        }
        25 => {
            cmp = Compare::Shape;
            let mut c = vec!["ZRANDMEMBER".into(), k];
            if rng.gen_bool(0.7) {
                c.push(pick(rng, &["0", "1", "3", "100", "-1", "-5", "x"]).into());
                if rng.gen_bool(0.5) {
                    c.push(pick(rng, &["WITHSCORES", "BOGUS"]).into());
                }
            }
            c
        }
        26 => {
            cmp = Compare::Unordered;
            vec!["ZSCAN".into(), k, "0".into(), "COUNT".into(), "1000".into()]
        }
        _ => {
            let name = pick(rng, &["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"]);
            let n = rng.gen_range(1..4);
            let mut c = vec![name.into(), pick(rng, KEYS).into()];
            c.push(pick(rng, &["1", "2", "3", "0", "5"]).into());
            c.extend(picks(rng, KEYS, n));
            if rng.gen_bool(0.3) {
                c.push("WEIGHTS".into());
                c.extend(picks(rng, &["1", "2", "0.5", "-1", "x"], n));
            }
            if rng.gen_bool(0.3) {
                c.extend([
                    "AGGREGATE".into(),
                    pick(rng, &["SUM", "MIN", "MAX", "AVG"]).into(),
                ]);
            }
            c
        }
    };
    (cmd, cmp)
}

/// Keys mostly holding bitmaps (the other keys give WRONGTYPE and
/// integer-like strings).
const BIT_KEYS: &[&str] = &["b0", "b1", "b2", "k0", "missing"];
const BIT_OFFSETS: &[&str] = &[
    "0",
    "1",
    "7",
    "8",
    "15",
    "63",
    "100",
    "-1",
    "abc",
    "#1",
    "#3",
    "",
    "4294967296",
];
const BIT_INDICES: &[&str] = &["0", "1", "-1", "-2", "5", "-100", "100", "x", "3", "17"];
const FIELD_TYPES: &[&str] = &[
    "u8", "i8", "u1", "i64", "u63", "u64", "i0", "x8", "i16", "u4", "i5", "",
];
const FIELD_VALUES: &[&str] = &[
    "0",
    "1",
    "-1",
    "127",
    "128",
    "255",
    "300",
    "-129",
    "9223372036854775807",
    "-9223372036854775808",
    "abc",
];

fn generate_bits(rng: &mut SmallRng) -> Vec<String> {
    let k = pick(rng, BIT_KEYS).to_string();
    let range = |rng: &mut SmallRng, c: &mut Vec<String>| {
        for _ in 0..rng.gen_range(0..3) {
            c.push(pick(rng, BIT_INDICES).into());
        }
        if rng.gen_bool(0.3) {
            c.push(pick(rng, &["BIT", "BYTE", "bits"]).into());
        }
    };
    match rng.gen_range(0..9) {
        0 | 1 => {
            let bit = pick(rng, &["0", "1", "1", "2", "-1", "x"]);
            command("SETBIT", vec![k, pick(rng, BIT_OFFSETS).into(), bit.into()])
        }
        2 => command("GETBIT", vec![k, pick(rng, BIT_OFFSETS).into()]),
        3 => {
            let mut c = command("BITCOUNT", vec![k]);
            range(rng, &mut c);
            c
        }
        4 => {
            let mut c = command("BITPOS", vec![k, pick(rng, &["0", "1", "2", "x"]).into()]);
            range(rng, &mut c);
            c
        }
        5 => {
            let op = pick(rng, &["AND", "or", "XOR", "NOT", "nand"]);
            let mut c = command("BITOP", vec![op.into(), k]);
            let n = rng.gen_range(0..4);
            c.extend(picks(rng, BIT_KEYS, n));
            c
        }
        6 | 7 => {
            let name = pick(rng, &["BITFIELD", "BITFIELD", "BITFIELD_RO"]);
            let mut c = command(name, vec![k]);
            for _ in 0..rng.gen_range(0..4) {
                let op = pick(rng, &["GET", "SET", "INCRBY", "OVERFLOW", "get", "BOGUS"]);
                c.push(op.into());
                if op.eq_ignore_ascii_case("overflow") {
                    c.push(pick(rng, &["WRAP", "SAT", "FAIL", "nope"]).into());
                    continue;
                }
                c.push(pick(rng, FIELD_TYPES).into());
                c.push(pick(rng, BIT_OFFSETS).into());
                if !op.eq_ignore_ascii_case("get") {
                    c.push(pick(rng, FIELD_VALUES).into());
                }
            }
            c
        }
        8 if rng.gen_bool(0.5) => {
            let mut c = command("LCS", vec![k, pick(rng, KEYS).into()]);
            for _ in 0..rng.gen_range(0..3) {
                match rng.gen_range(0..5) {
                    0 => c.push("IDX".into()),
                    1 => c.push("LEN".into()),
                    2 => c.push("WITHMATCHLEN".into()),
                    3 => c.extend([
                        "MINMATCHLEN".into(),
                        pick(rng, &["0", "2", "-1", "x"]).into(),
                    ]),
                    _ => c.push("BOGUS".into()),
                }
            }
            c
        }
        _ => command("GET", vec![k]),
    }
}

/// HyperLogLog keys (and two others for WRONGTYPE and invalid strings).
const HLL_KEYS: &[&str] = &["h0", "h1", "h2", "k0", "b0", "missing"];

/// HyperLogLogs grown past the sparse limit now and then, compared by
/// count and by their bytes (GET), which must be Redis's exactly.
fn generate_hll(rng: &mut SmallRng) -> Vec<String> {
    let k = pick(rng, HLL_KEYS).to_string();
    match rng.gen_range(0..8) {
        0..=2 => {
            let n = if rng.gen_bool(0.1) {
                400
            } else {
                rng.gen_range(0..6)
            };
            let elements = (0..n).map(|_| format!("e{}", rng.gen_range(0..20000)));
            command("PFADD", std::iter::once(k).chain(elements).collect())
        }
        3 => {
            let n = rng.gen_range(0..3);
            let mut keys = vec![k];
            keys.extend(picks(rng, HLL_KEYS, n));
            command("PFCOUNT", keys)
        }
        4 => {
            let n = rng.gen_range(0..3);
            let mut keys = vec![k];
            keys.extend(picks(rng, HLL_KEYS, n));
            command("PFMERGE", keys)
        }
        5 => {
            let sub = pick(rng, &["ENCODING", "DECODE", "TODENSE", "bogus"]);
            command("PFDEBUG", vec![sub.into(), k])
        }
        _ => command("GET", vec![k]),
    }
}

/// Geo sets (and others for WRONGTYPE), members each with two possible
/// positions, all distinct, so that no two members tie on a distance.
const GEO_KEYS: &[&str] = &["g0", "g1", "k0", "missing"];
const GEO_MEMBERS: &[(&str, [(&str, &str); 2])] = &[
    ("palermo", [("13.361389", "38.115556"), ("13.5", "38.2")]),
    ("catania", [("15.087269", "37.502669"), ("15.1", "37.4")]),
    ("rome", [("12.496365", "41.902782"), ("12.6", "41.8")]),
    ("north", [("10.1", "84.9"), ("-170.3", "85.0")]),
    ("south", [("-60.2", "-84.7"), ("179.9", "-85.05")]),
    ("dateline", [("179.99", "0.1"), ("-179.98", "-0.2")]),
    ("origin", [("0.001", "0.002"), ("-0.003", "0.004")]),
    ("bad", [("181", "10"), ("10", "86")]),
];
const GEO_CENTRES: &[(&str, &str)] = &[
    ("15", "37"),
    ("0", "0"),
    ("179.5", "84"),
    ("-179.5", "-84.9"),
    ("13.4", "38.1"),
    ("200", "0"),
    ("x", "1"),
];
const GEO_DISTANCES: &[&str] = &["0", "1", "50", "200", "1000", "20000", "-1", "x"];
const GEO_UNITS: &[&str] = &["m", "km", "KM", "mi", "ft", "furlong"];

fn geo_options(rng: &mut SmallRng, c: &mut Vec<String>, store: bool) {
    for _ in 0..rng.gen_range(0..4) {
        match rng.gen_range(0..9) {
            0 => c.push("WITHDIST".into()),
            1 => c.push("WITHCOORD".into()),
            2 => c.push("WITHHASH".into()),
            3 => c.push(pick(rng, &["ASC", "DESC"]).into()),
            4 | 5 => {
                c.push("COUNT".into());
                c.push(pick(rng, &["1", "2", "5", "0", "x"]).into());
                if rng.gen_bool(0.3) {
                    c.push("ANY".into());
                }
            }
            6 if store => {
                c.push(pick(rng, &["STORE", "STOREDIST"]).into());
                c.push(pick(rng, GEO_KEYS).into());
            }
            _ => c.push(pick(rng, &["ANY", "BOGUS", "STOREDIST"]).into()),
        }
    }
}

fn generate_geo(rng: &mut SmallRng) -> Vec<String> {
    let k = pick(rng, GEO_KEYS).to_string();
    let member = |rng: &mut SmallRng| {
        GEO_MEMBERS[rng.gen_range(0..GEO_MEMBERS.len())]
            .0
            .to_string()
    };
    let centre = |rng: &mut SmallRng, c: &mut Vec<String>| {
        let (lon, lat) = GEO_CENTRES[rng.gen_range(0..GEO_CENTRES.len())];
        c.extend([lon.to_string(), lat.to_string()]);
    };
    let radius = |rng: &mut SmallRng, c: &mut Vec<String>| {
        c.push(pick(rng, GEO_DISTANCES).into());
        c.push(pick(rng, GEO_UNITS).into());
    };
    match rng.gen_range(0..10) {
        0..=2 => {
            let mut c = command("GEOADD", vec![k]);
            if rng.gen_bool(0.3) {
                c.push(pick(rng, &["NX", "XX", "CH", "GT"]).into());
            }
            for _ in 0..rng.gen_range(1..4) {
                let (name, positions) = GEO_MEMBERS[rng.gen_range(0..GEO_MEMBERS.len())];
                let (lon, lat) = positions[rng.gen_range(0..2)];
                c.extend([lon.to_string(), lat.to_string(), name.to_string()]);
            }
            c
        }
        3 => {
            let mut c = command("GEODIST", vec![k, member(rng), member(rng)]);
            if rng.gen_bool(0.5) {
                c.push(pick(rng, GEO_UNITS).into());
            }
            c
        }
        4 => {
            let name = pick(rng, &["GEOPOS", "GEOHASH"]);
            let n = rng.gen_range(0..3);
            let mut c = command(name, vec![k]);
            c.extend((0..n).map(|_| member(rng)).chain(["nope".to_string()]));
            c
        }
        5 => {
            let name = pick(rng, &["GEORADIUS", "GEORADIUS_RO"]);
            let mut c = command(name, vec![k]);
            centre(rng, &mut c);
            radius(rng, &mut c);
            geo_options(rng, &mut c, name == "GEORADIUS");
            c
        }
        6 => {
            let name = pick(rng, &["GEORADIUSBYMEMBER", "GEORADIUSBYMEMBER_RO"]);
            let mut c = command(name, vec![k, member(rng)]);
            radius(rng, &mut c);
            geo_options(rng, &mut c, name == "GEORADIUSBYMEMBER");
            c
        }
        _ => {
            let store = rng.gen_bool(0.3);
            let mut c = if store {
                command("GEOSEARCHSTORE", vec![pick(rng, GEO_KEYS).into(), k])
            } else {
                command("GEOSEARCH", vec![k])
            };
            if rng.gen_bool(0.5) {
                c.push("FROMMEMBER".into());
                c.push(member(rng));
            } else {
                c.push("FROMLONLAT".into());
                centre(rng, &mut c);
            }
            if rng.gen_bool(0.5) {
                c.push("BYRADIUS".into());
                radius(rng, &mut c);
            } else {
                c.push("BYBOX".into());
                c.push(pick(rng, GEO_DISTANCES).into());
                radius(rng, &mut c);
            }
            geo_options(rng, &mut c, false);
            if store && rng.gen_bool(0.5) {
                c.push("STOREDIST".into());
            }
            c
        }
    }
}

/// SORT over the shared keys (lists, sets, sorted sets, strings), with
/// weights and hash fields under `w_<element>` and `h_<element>`.
fn generate_sort(rng: &mut SmallRng) -> (Vec<String>, Compare) {
    let k = pick(rng, KEYS).to_string();
    let element = |rng: &mut SmallRng| {
        pick(rng, &["a", "b", "c", "1", "2", "x", "0", "-5", "42"]).to_string()
    };
    match rng.gen_range(0..6) {
        0 => {
            let value = pick(
                rng,
                &["1", "2.5", "-3", "abc", "", "10", "0x10", "nan", "1e400"],
            );
            (
                command("SET", vec![format!("w_{}", element(rng)), value.into()]),
                Compare::Exact,
            )
        }
        1 => {
            let value = pick(rng, &["x", "y", "z", "3", ""]);
            let key = format!("h_{}", element(rng));
            (
                command("HSET", vec![key, "f".into(), value.into()]),
                Compare::Exact,
            )
        }
        _ => {
            let name = pick(rng, &["SORT", "SORT", "SORT_RO"]);
            let mut c = command(name, vec![k]);
            // A set's own order (no sort) and the order of equal ALPHA
            // weights (a stable sort keeps the input's) are hash-table
            // orders: compared as multisets, without a LIMIT that would
            // pick from them.
            let (mut by_constant, mut by_pattern, mut alpha) = (false, false, false);
            let mut store = false;
            for _ in 0..rng.gen_range(0..4) {
                match rng.gen_range(0..8) {
                    0 => c.push(pick(rng, &["ASC", "DESC"]).into()),
                    1 => {
                        alpha = true;
                        c.push("ALPHA".into());
                    }
                    2 => c.extend([
                        "LIMIT".into(),
                        pick(rng, &["0", "1", "-1", "5", "x"]).into(),
                        pick(rng, &["1", "2", "-1", "0", "10"]).into(),
                    ]),
                    3 => {
                        let by = pick(rng, &["w_*", "h_*->f", "nosort", "w_*->", "#"]);
                        by_constant |= !by.contains('*');
                        by_pattern |= by.contains('*');
                        c.extend(["BY".into(), by.into()]);
                    }
                    4 => c.extend([
                        "GET".into(),
                        pick(rng, &["#", "w_*", "h_*->f", "fixed"]).into(),
                    ]),
                    5 if name == "SORT" => {
                        store = true;
                        c.extend(["STORE".into(), pick(rng, KEYS).into()]);
                    }
                    _ => c.push(pick(rng, &["BOGUS", "GET", "LIMIT"]).into()),
                }
            }
            let unordered = (by_constant && !store) || (alpha && by_pattern);
            if unordered {
                if let Some(at) = c.iter().position(|a| a == "LIMIT") {
                    c.truncate(at);
                }
            }
            let cmp = if unordered {
                Compare::Unordered
            } else if alpha && !store {
                Compare::ExactUnlessNul
            } else {
                Compare::Exact
            };
            (c, cmp)
        }
    }
}

/// Streams with explicit IDs (and `<ms>-*`, which follows from the
/// stream): a generated `*` ID is the server's clock, compared by shape.
const STREAM_KEYS: &[&str] = &["x0", "x1", "k0", "missing"];

fn stream_id(rng: &mut SmallRng) -> String {
    match rng.gen_range(0..12) {
        0 => pick(
            rng,
            &[
                "0-0",
                "-",
                "+",
                "x",
                "0",
                "18446744073709551615-18446744073709551615",
                "1-x",
                "",
            ],
        )
        .into(),
        1 => format!("{}-*", rng.gen_range(0..30)),
        2 => format!("{}", rng.gen_range(0..30)),
        3 => format!("({}-{}", rng.gen_range(0..30), rng.gen_range(0..3)),
        _ => format!("{}-{}", rng.gen_range(0..30), rng.gen_range(0..3)),
    }
}

fn generate_stream(rng: &mut SmallRng) -> (Vec<String>, Compare) {
    let k = pick(rng, STREAM_KEYS).to_string();
    let trim = |rng: &mut SmallRng, c: &mut Vec<String>| {
        let strategy = pick(rng, &["MAXLEN", "MINID", "maxlen"]);
        c.push(strategy.into());
        if rng.gen_bool(0.5) {
            c.push(pick(rng, &["~", "=", "~"]).into());
        }
        if strategy == "MINID" {
            c.push(stream_id(rng));
        } else {
            c.push(pick(rng, &["0", "1", "3", "10", "-1", "x"]).into());
        }
        if rng.gen_bool(0.2) {
            c.extend(["LIMIT".into(), pick(rng, &["0", "1", "5", "-1"]).into()]);
        }
    };
    if rng.gen_bool(0.4) {
        return (generate_stream_group(rng, k), Compare::Exact);
    }
    let cmd = match rng.gen_range(0..12) {
        0..=3 => {
            let mut c = command("XADD", vec![k]);
            if rng.gen_bool(0.1) {
                c.push("NOMKSTREAM".into());
            }
            if rng.gen_bool(0.2) {
                trim(rng, &mut c);
            }
            c.push(stream_id(rng));
            for _ in 0..rng.gen_range(0..4) {
                c.push(pick(rng, &["f1", "f2", "f3"]).into());
                c.push(pick(rng, VALUES).into());
            }
            c
        }
        4 => {
            // An auto ID: its text is the clock's, its shape is not.
            let mut c = command(
                "XADD",
                vec!["xauto".into(), "*".into(), "f".into(), "v".into()],
            );
            if rng.gen_bool(0.3) {
                c.splice(2..2, ["MAXLEN".to_string(), "~".into(), "5".into()]);
            }
            return (c, Compare::Shape);
        }
        5 | 6 => {
            let name = pick(rng, &["XRANGE", "XREVRANGE"]);
            let mut c = command(name, vec![k, stream_id(rng), stream_id(rng)]);
            if rng.gen_bool(0.3) {
                c.extend([
                    "COUNT".into(),
                    pick(rng, &["0", "1", "3", "-1", "x"]).into(),
                ]);
            }
            c
        }
        7 => {
            let mut c = command("XDEL", vec![k]);
            for _ in 0..rng.gen_range(1..3) {
                c.push(stream_id(rng));
            }
            c
        }
        8 => {
            let mut c = command("XTRIM", vec![k]);
            trim(rng, &mut c);
            c
        }
        9 => command("XLEN", vec![k]),
        10 => {
            let mut c = command("XREAD", vec![]);
            if rng.gen_bool(0.3) {
                c.extend(["COUNT".into(), pick(rng, &["1", "2", "0"]).into()]);
            }
            c.push("STREAMS".into());
            let n = rng.gen_range(1..3);
            let keys = picks(rng, STREAM_KEYS, n);
            c.extend(keys);
            for _ in 0..n {
                c.push(if rng.gen_bool(0.2) {
                    "$".into()
                } else {
                    stream_id(rng)
                });
            }
            c
        }
        _ => {
            if rng.gen_bool(0.5) {
                let mut c = command("XSETID", vec![k, stream_id(rng)]);
                if rng.gen_bool(0.3) {
                    c.extend([
                        "ENTRIESADDED".into(),
                        pick(rng, &["0", "5", "100", "-1"]).into(),
                    ]);
                }
                if rng.gen_bool(0.3) {
                    c.extend(["MAXDELETEDID".into(), stream_id(rng)]);
                }
                c
            } else {
                // (FULL shows delivery and seen times: not compared.)
                command("XINFO", vec!["STREAM".into(), k])
            }
        }
    };
    (cmd, Compare::Exact)
}

/// Consumer groups: everything but what reports elapsed times (the
/// range form of XPENDING, XINFO CONSUMERS), which two servers a few ms
/// apart cannot agree on.
fn generate_stream_group(rng: &mut SmallRng, k: String) -> Vec<String> {
    let g = pick(rng, &["g1", "g2", "nog"]).to_string();
    let c = pick(rng, &["c1", "c2", "c3"]).to_string();
    match rng.gen_range(0..10) {
        0 => {
            let mut cmd = command("XGROUP", vec!["CREATE".into(), k, g]);
            cmd.push(if rng.gen_bool(0.3) {
                "$".into()
            } else {
                stream_id(rng)
            });
            if rng.gen_bool(0.3) {
                cmd.push("MKSTREAM".into());
            }
            if rng.gen_bool(0.2) {
                cmd.extend([
                    "ENTRIESREAD".into(),
                    pick(rng, &["0", "3", "-1", "-2"]).into(),
                ]);
            }
            cmd
        }
        1 => {
            let sub = pick(rng, &["SETID", "DESTROY", "CREATECONSUMER", "DELCONSUMER"]);
            let mut cmd = command("XGROUP", vec![sub.into(), k, g]);
            match sub {
                "SETID" => cmd.push(if rng.gen_bool(0.3) {
                    "$".into()
                } else {
                    stream_id(rng)
                }),
                "DESTROY" => {}
                _ => cmd.push(c),
            }
            cmd
        }
        2..=4 => {
            let mut cmd = command("XREADGROUP", vec!["GROUP".into(), g, c]);
            if rng.gen_bool(0.3) {
                cmd.extend(["COUNT".into(), pick(rng, &["1", "2", "0"]).into()]);
            }
            if rng.gen_bool(0.2) {
                cmd.push("NOACK".into());
            }
            cmd.extend(["STREAMS".into(), k]);
            cmd.push(if rng.gen_bool(0.7) {
                ">".into()
            } else {
                stream_id(rng)
            });
            cmd
        }
        5 => {
            let mut cmd = command("XACK", vec![k, g]);
            cmd.push(stream_id(rng));
            cmd
        }
        6 => command("XPENDING", vec![k, g]),
        7 => {
            let mut cmd = command("XCLAIM", vec![k, g, c, "0".into(), stream_id(rng)]);
            if rng.gen_bool(0.3) {
                cmd.push(pick(rng, &["JUSTID", "FORCE", "RETRYCOUNT", "BOGUS"]).into());
            }
            cmd
        }
        8 => {
            let mut cmd = command("XAUTOCLAIM", vec![k, g, c, "0".into(), stream_id(rng)]);
            if rng.gen_bool(0.4) {
                cmd.extend(["COUNT".into(), pick(rng, &["1", "2", "0"]).into()]);
            }
            if rng.gen_bool(0.3) {
                cmd.push("JUSTID".into());
            }
            cmd
        }
        _ => command("XINFO", vec!["GROUPS".into(), k]),
    }
}

fn parse_int(reply: &[u8]) -> Option<i64> {
    std::str::from_utf8(reply)
        .ok()?
        .strip_prefix(':')?
        .trim_end()
        .parse()
        .ok()
}

fn sorted_lines(reply: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(reply);
    let mut items: Vec<String> = text.split("\r\n").skip(1).map(String::from).collect();
    items.sort();
    items
}

fn same(a: &[u8], b: &[u8], cmp: Compare) -> bool {
    match cmp {
        Compare::Exact => a == b,
        Compare::Unordered => sorted_lines(a) == sorted_lines(b),
        // A single random pick's length varies with the member picked; an
        // aggregate's count does not.
        Compare::Shape => {
            let first = |r: &[u8]| r.split(|&c| c == b'\n').next().map(<[u8]>::to_vec);
            match a.first() {
                Some(b'$') => b.first() == Some(&b'$'),
                _ => first(a) == first(b),
            }
        }
        Compare::ExactUnlessNul if a.contains(&0) || b.contains(&0) => {
            sorted_lines(a) == sorted_lines(b)
        }
        Compare::ExactUnlessNul => a == b,
        Compare::Tolerance(t) => match (parse_int(a), parse_int(b)) {
            (Some(x), Some(y)) if x >= 0 && y >= 0 => (x - y).abs() <= t,
            _ => a == b,
        },
    }
}

#[test]
fn random_commands_match_redis_server() {
    run_differential(false);
}

/// The same in RESP3, where maps, sets, doubles and nulls are framed
/// differently.
#[test]
fn random_commands_match_redis_server_in_resp3() {
    run_differential(true);
}

fn run_differential(resp3: bool) {
    let Some(redis) = Server::redis() else {
        return;
    };
    let lapse = Server::lapse(&[]);
    let seed: u64 = std::env::var("DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261122)
        + u64::from(resp3);
    let count: usize = std::env::var("DIFF_COMMANDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6000);
    let mut rng = SmallRng::seed_from_u64(seed);
    let (mut ours, mut theirs) = (lapse.raw(), redis.raw());
    // Keys stored with a deadline already past (SET .. PXAT 1) stay counted
    // by DBSIZE until reclaimed; with active expiry off, only lookups reclaim
    // them, identically on both servers.
    for raw in [&mut ours, &mut theirs] {
        assert_eq!(raw.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), "+OK\r\n");
    }
    if resp3 {
        for raw in [&mut ours, &mut theirs] {
            assert!(raw.cmd(&["HELLO", "3"]).starts_with('%'));
        }
    }
    let mut history: Vec<String> = Vec::new();
    for n in 0..count {
        let (cmd, cmp) = generate(&mut rng);
        let args: Vec<&[u8]> = cmd.iter().map(|s| s.as_slice()).collect();
        if cmd[0].starts_with(b"SORT") {
            // Redis's SORT reads errno after strtod without clearing it, so
            // an ERANGE left by an earlier command fails it; INCRBYFLOAT
            // clears errno (string2ld) and keeps that bug out of the
            // comparison.
            for raw in [&mut ours, &mut theirs] {
                raw.cmd(&["INCRBYFLOAT", "errno-reset", "0"]);
            }
        }
        ours.send_cmd(&args);
        theirs.send_cmd(&args);
        let (a, b) = (ours.reply(), theirs.reply());
        history.push(shown(&cmd).join(" "));
        // Same key count too (it includes keys past their deadline that
        // nothing looked up yet): catches a lookup one side did and the
        // other did not, which no reply shows.
        let sizes = (ours.cmd(&["DBSIZE"]), theirs.cmd(&["DBSIZE"]));
        if sizes.0 != sizes.1 {
            let start = history.len().saturating_sub(15);
            panic!(
                "seed {seed}, DBSIZE after command #{n} {:?}: lapse {:?}, redis {:?}\nrecent commands:\n{}",
                shown(&cmd),
                sizes.0,
                sizes.1,
                history[start..].join("\n")
            );
        }
        if !same(&a, &b, cmp) {
            let start = history.len().saturating_sub(15);
            panic!(
                "seed {seed}, command #{n} {:?}\n  lapse: {:?}\n  redis: {:?}\nrecent commands:\n{}",
                shown(&cmd),
                String::from_utf8_lossy(&a),
                String::from_utf8_lossy(&b),
                history[start..].join("\n")
            );
        }
    }
}
