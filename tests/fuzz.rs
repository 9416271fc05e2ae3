//! Bounded fuzz passes on stable Rust: the request parser, random
//! argument vectors executed against the command table in process,
//! damaged AOF directories loaded at startup, and clients trying to hang
//! a running server (scripts that never end, timeouts under a
//! millisecond), and broken TLS peers on a TLS port.
//!
//! Each pass runs for `FUZZ_SECONDS` (default 10; CI sets 60 for the
//! five together) from a seed (`FUZZ_SEED`, default: the clock, printed so a
//! failure can be replayed). Any panic fails the test with the input that
//! caused it; each crash found becomes a regression test below.

mod common;

use std::time::{Duration, Instant};

use lapse::config::Config;
use lapse::connection::{ReplyMode, Session};
use lapse::protocol::{Parsed, RequestParser};
use lapse::state::ServerState;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

fn budget() -> Duration {
    let secs: f64 = std::env::var("FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10.0);
    Duration::from_secs_f64(secs / 5.0)
}

fn seed() -> u64 {
    let seed = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("FUZZ_SEED={seed}");
    seed
}

fn encode(args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    lapse::protocol::encode_request(args, &mut out);
    out
}

/// Parses `input` fed in random pieces; returns the requests found.
fn parse_in_pieces(input: &[u8], rng: &mut SmallRng) -> Vec<Vec<Vec<u8>>> {
    let mut parser = RequestParser::default();
    let mut buf: Vec<u8> = Vec::new();
    let mut fed = 0;
    let mut out = Vec::new();
    while fed < input.len() {
        let n = rng.gen_range(1..=input.len() - fed);
        buf.extend_from_slice(&input[fed..fed + n]);
        fed += n;
        loop {
            match parser.parse(&buf) {
                Ok(Parsed::Complete { consumed }) => {
                    assert!(consumed > 0 && consumed <= buf.len());
                    let args = parser.args(&buf);
                    if !args.is_empty() {
                        out.push(args.iter().map(<[u8]>::to_vec).collect());
                    }
                    buf.drain(..consumed);
                }
                Ok(Parsed::Incomplete) => break,
                Err(_) => return out,
            }
        }
    }
    out
}

#[test]
fn fuzz_request_parser() {
    let mut rng = SmallRng::seed_from_u64(seed());
    let deadline = Instant::now() + budget();
    let mut cases = 0u64;
    while Instant::now() < deadline {
        // Round trip: any argument vectors survive any split.
        let requests: Vec<Vec<Vec<u8>>> = (0..rng.gen_range(1..5))
            .map(|_| {
                (0..rng.gen_range(1..6))
                    .map(|_| (0..rng.gen_range(0..40)).map(|_| rng.gen()).collect())
                    .collect()
            })
            .collect();
        let stream: Vec<u8> = requests.iter().flat_map(|r| encode(r)).collect();
        assert_eq!(parse_in_pieces(&stream, &mut rng), requests);
        // Mutations: flip, cut and splice bytes; it must never panic.
        let mut junk = stream.clone();
        for _ in 0..rng.gen_range(1..8) {
            if junk.is_empty() {
                break;
            }
            let at = rng.gen_range(0..junk.len());
            match rng.gen_range(0..4) {
                0 => junk[at] = rng.gen(),
                1 => {
                    junk.remove(at);
                }
                2 => junk.insert(
                    at,
                    *b"*$\r\n-0123456789\"' \\x"
                        .get(rng.gen_range(0..20))
                        .unwrap_or(&b'*'),
                ),
                _ => junk.truncate(at),
            }
        }
        parse_in_pieces(&junk, &mut rng);
        cases += 1;
    }
    eprintln!("parser fuzz: {cases} cases");
}

const WORDS: &[&str] = &[
    "EX",
    "PX",
    "EXAT",
    "PXAT",
    "NX",
    "XX",
    "GT",
    "LT",
    "GET",
    "KEEPTTL",
    "PERSIST",
    "MATCH",
    "COUNT",
    "TYPE",
    "DB",
    "REPLACE",
    "ASYNC",
    "SYNC",
    "ID",
    "AUTH",
    "SETNAME",
    "LIB-NAME",
    "default",
    "ON",
    "OFF",
    "*",
    "k",
    "k2",
    "",
    "WITHSCORES",
    "WITHSCORE",
    "WITHVALUES",
    "BYSCORE",
    "BYLEX",
    "REV",
    "LIMIT",
    "CH",
    "INCR",
    "WEIGHTS",
    "AGGREGATE",
    "SUM",
    "MIN",
    "MAX",
    "(1",
    "[a",
    "(a",
    "-",
    "+",
    "LEFT",
    "RIGHT",
    "BEFORE",
    "AFTER",
    "RANK",
    "MAXLEN",
    "a",
    "b",
];
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "16",
    "100",
    "-100",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "536870911",
    "536870912",
    "1.5",
    "-0.0",
    "inf",
    "-inf",
    "nan",
    "1e308",
    "1e-308",
    "0x10",
    " 1",
    "1 ",
    "+1",
    "007",
    "0x1.8p-3",
    "-0x",
    "1e4932",
    "1e-4950",
    "1e",
    "Infinity",
    "18446744073709551616",
    "2147483648",
    "",
    "-",
    "1000.1",
];

/// Commands whose effect is to stop or stall the process, not to answer.
fn skipped(args: &[Vec<u8>]) -> bool {
    let is = |i: usize, w: &str| {
        args.get(i)
            .is_some_and(|a| a.eq_ignore_ascii_case(w.as_bytes()))
    };
    (is(0, "debug") && is(1, "sleep")) || is(0, "shutdown")
}

fn random_args(rng: &mut SmallRng, names: &[String]) -> Vec<Vec<u8>> {
    let mut args = Vec::new();
    let full = &names[rng.gen_range(0..names.len())];
    for part in full.split('|') {
        args.push(part.as_bytes().to_vec());
    }
    for _ in 0..rng.gen_range(0..7) {
        let arg: Vec<u8> = match rng.gen_range(0..5) {
            0 => WORDS[rng.gen_range(0..WORDS.len())].into(),
            1 | 2 => NUMBERS[rng.gen_range(0..NUMBERS.len())].into(),
            3 => format!("k{}", rng.gen_range(0..5)).into_bytes(),
            _ => (0..rng.gen_range(0..50)).map(|_| rng.gen()).collect(),
        };
        args.push(arg);
    }
    args
}

#[test]
fn fuzz_command_table() {
    let mut rng = SmallRng::seed_from_u64(seed());
    let names: Vec<String> = lapse::command_table::all()
        .flat_map(|c| {
            let mut v = vec![c.name.to_string()];
            v.extend(
                c.subcommands
                    .iter()
                    .map(|s| format!("{}|{}", c.name, s.name)),
            );
            v
        })
        .collect();
    // A random SAVE writes its file there, not into the repository.
    let mut config = Config {
        dir: std::env::temp_dir().display().to_string(),
        ..Config::default()
    };
    // Small, so a huge random count meets the reply limit quickly.
    config.output_limit_normal.hard_bytes = 1 << 20;
    let mut server = ServerState::new(config);
    let mut session = Session {
        authenticated: true,
        ..Session::default()
    };
    let deadline = Instant::now() + budget();
    let mut cases = 0u64;
    while Instant::now() < deadline {
        let args = random_args(&mut rng, &names);
        if skipped(&args) {
            continue;
        }
        let stream = encode(&args);
        let mut parser = RequestParser::default();
        let Ok(Parsed::Complete { .. }) = parser.parse(&stream) else {
            panic!("could not parse {args:?}");
        };
        let parsed = parser.args(&stream);
        let mode_before = session.reply_mode;
        let mut ctx = lapse::dispatch::context(
            1_700_000_000_000 + cases as i64,
            &mut session,
            &mut server,
            &(),
        );
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            lapse::dispatch::execute(&mut ctx, parsed);
        }));
        if outcome.is_err() {
            let shown: Vec<String> = args
                .iter()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            panic!("command panicked: {shown:?}");
        }
        // Every reply is well-formed: it ends a RESP line, unless the
        // command dropped an oversized reply and is closing the client,
        // blocked, or became a replica (it is answered later; here it is
        // simply let go).
        if session.blocked.take().is_some() {
            server.blocking.unblock(session.id);
        } else if session.paused_until_ms == i64::MAX {
            // WAIT for replicas that are not there: answered later by the
            // loop; here it is let go.
            session.paused_until_ms = 0;
            server.repl.waits.clear();
        } else if session.postponed {
            // Held by a CLIENT PAUSE the fuzz ran: the loop would run it
            // after the pause; here the pause ends and it is let go.
            session.postponed = false;
            server.unpause_clients(lapse::pause::PausePurpose::ClientCommand);
        } else if session.replica.take().is_some() {
            // SYNC/PSYNC: the loop answers a replica when its save starts.
        } else if session.close_after_reply {
            session.close_after_reply = false;
        } else if mode_before != ReplyMode::On || session.reply_mode != ReplyMode::On {
            // CLIENT REPLY OFF or SKIP: no reply is right.
            session.reply_mode = ReplyMode::On;
        } else {
            assert!(session.reply.buf.ends_with(b"\r\n"), "{args:?}");
        }
        session.reply.buf.clear();
        session.authenticated = true;
        server.config.requirepass.clear();
        cases += 1;
    }
    eprintln!("command fuzz: {cases} cases");
}

/// A state whose AOF lives in `dir` (loading whatever is there).
fn aof_state(dir: &std::path::Path) -> (ServerState, std::io::Result<()>) {
    let mut state = ServerState::new(Config {
        dir: dir.display().to_string(),
        appendonly: true,
        ..Config::default()
    });
    let loaded = lapse::persistence::aof_load::load_at_startup(
        &mut state,
        1_700_000_000_000,
        lapse::dispatch::replay,
    );
    (state, loaded)
}

/// Damaged AOF directories (bit flips, cuts and splices in the manifest,
/// the RDB base and the increment): loading answers Ok or an error, never
/// a panic.
#[test]
fn fuzz_aof_loader() {
    let mut rng = SmallRng::seed_from_u64(seed());
    let root = std::env::temp_dir().join(format!("lapse-fuzz-aof-{}", std::process::id()));
    let good_dir = root.join("good");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&good_dir).unwrap();
    {
        let (mut state, loaded) = aof_state(&good_dir);
        loaded.unwrap();
        let mut session = Session {
            authenticated: true,
            ..Session::default()
        };
        let commands: &[&[&[u8]]] = &[
            &[b"SET", b"s", b"v", b"PX", b"100000"],
            &[b"RPUSH", b"l", b"a", b"b", b"1"],
            &[b"HSET", b"h", b"f", b"v"],
            &[b"SADD", b"set", b"1", b"2"],
            &[b"ZADD", b"z", b"1.5", b"m"],
            &[b"MULTI"],
            &[b"INCR", b"n"],
            &[b"SELECT", b"2"],
            &[b"EXEC"],
            &[b"SET", b"after", b"x"],
        ];
        for args in commands {
            let wire = encode(&args.iter().map(|a| a.to_vec()).collect::<Vec<_>>());
            let mut parser = RequestParser::default();
            assert!(matches!(parser.parse(&wire), Ok(Parsed::Complete { .. })));
            let mut ctx =
                lapse::dispatch::context(1_700_000_000_000, &mut session, &mut state, &());
            lapse::dispatch::execute(&mut ctx, parser.args(&wire));
        }
        lapse::persistence::aof::flush(&mut state, true);
    }
    let aof_dir = good_dir.join("appendonlydir");
    let files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&aof_dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    assert_eq!(
        files.len(),
        3,
        "{:?}",
        files.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    let deadline = Instant::now() + budget();
    let (mut cases, mut refused) = (0u64, 0u64);
    while Instant::now() < deadline {
        let dir = root.join(format!("case{}", cases % 4));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("appendonlydir")).unwrap();
        let victim = rng.gen_range(0..files.len());
        for (i, (name, bytes)) in files.iter().enumerate() {
            let mut bytes = bytes.clone();
            if i == victim {
                for _ in 0..rng.gen_range(1..4) {
                    if bytes.is_empty() {
                        break;
                    }
                    let at = rng.gen_range(0..bytes.len());
                    match rng.gen_range(0..4) {
                        0 => bytes[at] ^= 1 << rng.gen_range(0..8),
                        1 => bytes.truncate(at),
                        2 => {
                            bytes.remove(at);
                        }
                        _ => bytes.insert(at, *b"*$\r\n#9 ".get(rng.gen_range(0..7)).unwrap()),
                    }
                }
            }
            std::fs::write(dir.join("appendonlydir").join(name), bytes).unwrap();
        }
        let (_, loaded) = aof_state(&dir);
        refused += u64::from(loaded.is_err());
        cases += 1;
    }
    let _ = std::fs::remove_dir_all(&root);
    eprintln!("AOF loader fuzz: {cases} cases, {refused} refused");
}

/// A random piece of Lua that never ends by itself (and writes nothing,
/// so it can be killed): loops of every kind around random statements,
/// nested `depth` deep at most.
fn endless_lua(rng: &mut SmallRng, depth: u32) -> String {
    let inner = if depth == 0 {
        String::new()
    } else {
        let pieces = rng.gen_range(0..3);
        (0..pieces)
            .map(|_| statement(rng, depth - 1))
            .collect::<Vec<_>>()
            .join(" ")
    };
    match rng.gen_range(0..5) {
        0 => format!("while true do {inner} end"),
        1 => format!("repeat {inner} until false"),
        2 => format!("for i = 1, 1e300 do {inner} end"),
        3 => format!("local function f(n) {inner} return f(n + 1) end f(1)"),
        _ => format!("while 1 do pcall(function() {inner} end) end"),
    }
}

fn statement(rng: &mut SmallRng, depth: u32) -> String {
    match rng.gen_range(0..9) {
        0 => "local x = 1".into(),
        1 => format!("local s = string.rep('a', {})", rng.gen_range(0..5000)),
        2 => "redis.call('ping')".into(),
        3 => "redis.pcall('get', 'k')".into(),
        4 => "pcall(error, 'x')".into(),
        5 => "local t = {} for j = 1, 100 do t[j] = j end".into(),
        6 => format!("pcall(function() {} end)", endless_lua(rng, depth)),
        7 => "coroutine.wrap(function() local y = 2 end)()".into(),
        _ => endless_lua(rng, depth),
    }
}

/// A blocking command with a timeout under a millisecond (or a BLOCK of
/// one), written as clients write it.
fn tiny_timeout_call(rng: &mut SmallRng) -> Vec<String> {
    let t = ["0.001", "0.0001", "1e-300", "0.0009999", "0x1p-20", "5e-4"][rng.gen_range(0..6)]
        .to_string();
    let key = format!("nokey{}", rng.gen_range(0..3));
    let words: Vec<&str> = match rng.gen_range(0..8) {
        0 => vec!["BLPOP", &key, &t],
        1 => vec!["BRPOP", &key, "other", &t],
        2 => vec!["BLMPOP", &t, "1", &key, "LEFT"],
        3 => vec!["BLMOVE", &key, "dst", "LEFT", "RIGHT", &t],
        4 => vec!["BZPOPMIN", &key, &t],
        5 => vec!["BZMPOP", &t, "1", &key, "MAX"],
        6 => vec!["XREAD", "BLOCK", "1", "STREAMS", &key, "$"],
        _ => vec!["BRPOPLPUSH", &key, "dst", &t],
    };
    words.into_iter().map(String::from).collect()
}

/// Clients trying to hang a running lapse: endless scripts (each must be
/// reported busy to a client that connects meanwhile, and be killed by
/// one) and blocking commands with tiny timeouts (each must end).
#[test]
fn fuzz_no_client_hangs_the_server() {
    let mut rng = SmallRng::seed_from_u64(seed());
    let lapse = common::Server::lapse(&["--busy-reply-threshold", "20"]);
    let deadline = Instant::now() + budget();
    let (mut scripts, mut waits) = (0u64, 0u64);
    let mut waiter = lapse.raw();
    while Instant::now() < deadline {
        if rng.gen_bool(0.5) {
            let call = tiny_timeout_call(&mut rng);
            let started = Instant::now();
            let words: Vec<&str> = call.iter().map(String::as_str).collect();
            let reply = waiter.cmd(&words);
            assert!(
                reply == "*-1\r\n" || reply == "$-1\r\n",
                "{call:?}: {reply}"
            );
            assert!(started.elapsed() < Duration::from_secs(2), "{call:?}");
            waits += 1;
            continue;
        }
        let script = endless_lua(&mut rng, 3);
        let mut runner = lapse.raw();
        runner.send_cmd(&[b"EVAL", script.as_bytes(), b"0"]);
        // Whatever the script does, a new client is answered and can end it.
        let ended = common::eventually(Duration::from_secs(10), || {
            let mut killer = lapse.raw();
            match killer.cmd(&["SCRIPT", "KILL"]).as_str() {
                "+OK\r\n" => true,
                // Not yet running, or it already failed by itself.
                r if r.starts_with("-NOTBUSY") => {
                    let mut probe = lapse.raw();
                    probe.cmd(&["PING"]) == "+PONG\r\n" && {
                        killer.cmd(&["SCRIPT", "KILL"]).starts_with("-NOTBUSY")
                    }
                }
                r => panic!("SCRIPT KILL answered {r} during {script}"),
            }
        });
        assert!(ended, "could not end {script}");
        let reply = String::from_utf8_lossy(&runner.reply()).into_owned();
        assert!(reply.starts_with('-'), "{script}: {reply}");
        assert_eq!(lapse.raw().cmd(&["PING"]), "+PONG\r\n", "after {script}");
        scripts += 1;
    }
    eprintln!("hang fuzz: {scripts} endless scripts killed, {waits} tiny timeouts ended");
}

/// A ClientHello as rustls sends it, for the TLS pass to damage.
fn client_hello() -> Vec<u8> {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    let name = "localhost".try_into().unwrap();
    let mut conn = rustls::ClientConnection::new(std::sync::Arc::new(config), name).unwrap();
    let mut hello = Vec::new();
    conn.write_tls(&mut hello).unwrap();
    hello
}

/// Bytes a broken or hostile TLS peer sends: random bytes, records with
/// random types, versions and lengths (some longer than what follows),
/// or a real ClientHello with bytes flipped or cut short.
fn hostile_tls(rng: &mut SmallRng, hello: &[u8]) -> Vec<u8> {
    match rng.gen_range(0..3) {
        0 => (0..rng.gen_range(1..600)).map(|_| rng.gen()).collect(),
        1 => {
            let mut out = Vec::new();
            for _ in 0..rng.gen_range(1..5) {
                let kind = *[20u8, 21, 22, 23, rng.gen()]
                    .get(rng.gen_range(0..5))
                    .unwrap();
                let len: u16 = rng.gen_range(0..20_000);
                out.extend_from_slice(&[kind, 3, rng.gen_range(0..5)]);
                out.extend_from_slice(&len.to_be_bytes());
                let body = usize::from(len).min(rng.gen_range(0..2000));
                out.extend((0..body).map(|_| rng.gen::<u8>()));
            }
            out
        }
        _ => {
            let mut out = hello.to_vec();
            for _ in 0..rng.gen_range(0..8) {
                let at = rng.gen_range(0..out.len());
                out[at] ^= 1 << rng.gen_range(0..8);
            }
            out.truncate(rng.gen_range(1..=out.len()));
            out
        }
    }
}

#[test]
fn fuzz_tls_port() {
    let Some(dir) = common::certs::certificates("fuzz-tls") else {
        return;
    };
    let mut rng = SmallRng::seed_from_u64(seed());
    let (lapse, tls) = common::certs::lapse_with_tls(&dir, &[]);
    let hello = client_hello();
    let deadline = Instant::now() + budget();
    let mut good = common::certs::TlsClient::connect(&dir, tls, "ca.crt", Some("client")).unwrap();
    let (mut peers, mut kept) = (0u64, Vec::new());
    while Instant::now() < deadline {
        let mut socket = std::net::TcpStream::connect(("127.0.0.1", tls)).unwrap();
        use std::io::Write;
        let _ = socket.write_all(&hostile_tls(&mut rng, &hello));
        // Some stay open mid-handshake; most go away.
        if rng.gen_bool(0.1) && kept.len() < 50 {
            kept.push(socket);
        }
        peers += 1;
        if peers % 20 == 0 {
            assert_eq!(good.cmd(&format!("SET fuzz {peers}")).unwrap(), "+OK");
            assert_eq!(lapse.raw().cmd(&["PING"]), "+PONG\r\n");
        }
    }
    let mut fresh = common::certs::TlsClient::connect(&dir, tls, "ca.crt", Some("client")).unwrap();
    assert_eq!(fresh.cmd("PING").unwrap(), "+PONG");
    assert_eq!(good.cmd("PING").unwrap(), "+PONG");
    drop(kept);
    // Every hostile peer that went away was closed: only the two TLS
    // clients (and the one asking) are left.
    let closed = common::eventually(Duration::from_secs(10), || {
        common::info_field(&mut lapse.raw(), "clients", "connected_clients") == "3"
    });
    assert!(closed, "hostile peers left connected");
    eprintln!("TLS fuzz: {peers} hostile peers");
}
