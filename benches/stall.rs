//! Big values, lapse against redis-server in the same run:
//!
//! - **stall**: the longest wait seen by a client sending PING in a tight
//!   loop while another client deletes a big value: with DEL, with UNLINK,
//!   and with DEL under `lazyfree-lazy-user-del yes`. The values: a string
//!   of `STALL_MB` MiB (default 400), and a hash, a set, a sorted set and a
//!   list of `STALL_ELEMS` elements each (default 1,000,000).
//! - **memory**: bytes per element of each aggregate type holding
//!   `STALL_ELEMS` small elements (`m:<n>`; hash values `v`; scores `n`),
//!   from INFO `used_memory` and from the process's RSS.
//!
//! Run: `cargo bench --bench stall` (`SECTIONS=stall,memory`, `KINDS=
//! string,hash,set,zset,list` and `TRIALS=5` to choose).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn start(program: &str, args: &[&str]) -> (common::Running, u16) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let server = common::start_server(program, &args);
    let port = server.port;
    (server, port)
}

fn connect(port: u16) -> BufReader<TcpStream> {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_nodelay(true).unwrap();
    BufReader::new(s)
}

fn line(r: &mut BufReader<TcpStream>) -> String {
    let mut l = String::new();
    r.read_line(&mut l).unwrap();
    l
}

/// What a big value is made of.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Str,
    Hash,
    Set,
    ZSet,
    List,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Str => "string",
            Kind::Hash => "hash",
            Kind::Set => "set",
            Kind::ZSet => "zset",
            Kind::List => "list",
        }
    }
}

/// Elements per fill command.
const BATCH: usize = 1000;

/// Stores a big value of `kind` at `big`: a `mb` MiB string (every page
/// touched), or `elems` elements sent in pipelined batches.
fn fill(c: &mut BufReader<TcpStream>, kind: Kind, mb: usize, elems: usize) {
    if kind == Kind::Str {
        let header = format!("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n${}\r\n", mb << 20);
        c.get_mut().write_all(header.as_bytes()).unwrap();
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..mb {
            c.get_mut().write_all(&chunk).unwrap();
        }
        c.get_mut().write_all(b"\r\n").unwrap();
        assert_eq!(line(c), "+OK\r\n");
        return;
    }
    let command = match kind {
        Kind::Hash => "HSET",
        Kind::Set => "SADD",
        Kind::ZSet => "ZADD",
        _ => "RPUSH",
    };
    let mut batches = 0;
    for start in (0..elems).step_by(BATCH) {
        let mut args: Vec<String> = vec![command.into(), "big".into()];
        for i in start..(start + BATCH).min(elems) {
            match kind {
                Kind::Hash => args.extend([format!("m:{i}"), "v".into()]),
                Kind::ZSet => args.extend([i.to_string(), format!("m:{i}")]),
                _ => args.push(format!("m:{i}")),
            }
        }
        let mut req = format!("*{}\r\n", args.len());
        for a in &args {
            req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        c.get_mut().write_all(req.as_bytes()).unwrap();
        batches += 1;
    }
    for _ in 0..batches {
        assert!(line(c).starts_with(':'));
    }
}

/// Deletes `big` with `command`; returns (reply time, worst PING wait).
fn measure(port: u16, kind: Kind, command: &str, mb: usize, elems: usize) -> (Duration, Duration) {
    // Fill from a connection of its own, closed before measuring: its
    // query buffer grew to the value's size, and freeing that (on close or
    // when the server trims idle buffers) is not the deletion's cost.
    fill(&mut connect(port), kind, mb, elems);
    std::thread::sleep(Duration::from_millis(200));
    let mut c = connect(port);
    let stop = Arc::new(AtomicBool::new(false));
    let pinger = {
        let stop = stop.clone();
        let mut p = connect(port);
        std::thread::spawn(move || {
            realtime_priority();
            let mut worst = Duration::ZERO;
            let mut buf = [0u8; 7];
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                p.get_mut().write_all(b"PING\r\n").unwrap();
                p.read_exact(&mut buf).unwrap();
                worst = worst.max(t.elapsed());
            }
            worst
        })
    };
    std::thread::sleep(Duration::from_millis(100));
    let t = Instant::now();
    c.get_mut()
        .write_all(format!("{command} big\r\n").as_bytes())
        .unwrap();
    assert_eq!(line(&mut c), ":1\r\n");
    let reply = t.elapsed();
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    (reply, pinger.join().unwrap())
}

/// Gives the calling (pinger) thread a real-time priority when allowed
/// (root, as in CI), so that what it measures is the server's stalls, not
/// its own waits for a core on a busy machine. Says so when it can't.
fn realtime_priority() {
    let param = libc::sched_param { sched_priority: 10 };
    // SAFETY: a system call on the calling thread with a valid parameter.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc != 0 {
        eprintln!("note: the pinger runs at normal priority (SCHED_FIFO refused)");
    }
}

/// `INFO memory` field `used_memory`.
fn used_memory(c: &mut BufReader<TcpStream>) -> u64 {
    c.get_mut().write_all(b"INFO memory\r\n").unwrap();
    let header = line(c);
    let len: usize = header[1..].trim().parse().unwrap();
    let mut body = vec![0u8; len + 2];
    c.read_exact(&mut body).unwrap();
    String::from_utf8_lossy(&body)
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

/// Bytes per element of a fresh `kind` value of `elems` elements:
/// (used_memory growth, RSS growth) divided by `elems`.
fn bytes_per_element(program: &str, args: &[&str], kind: Kind, elems: usize) -> (f64, f64) {
    let (server, port) = start(program, args);
    let mut c = connect(port);
    let (used0, rss0) = (used_memory(&mut c), common::rss_bytes(server.child.id()));
    fill(&mut c, kind, 0, elems);
    let (used1, rss1) = (used_memory(&mut c), common::rss_bytes(server.child.id()));
    let per = |a: u64, b: u64| b.saturating_sub(a) as f64 / elems as f64;
    (per(used0, used1), per(rss0, rss1))
}

fn main() {
    if common::redis_server_missing() {
        return;
    }
    let env_num = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    };
    let mb = env_num("STALL_MB", 400);
    let elems = env_num("STALL_ELEMS", 1_000_000);
    let trials = env_num("TRIALS", 5).max(1);
    let sections = common::env_list("SECTIONS", "stall,memory");
    let kinds: Vec<Kind> = common::env_list("KINDS", "string,hash,set,zset,list")
        .iter()
        .filter_map(|k| {
            [Kind::Str, Kind::Hash, Kind::Set, Kind::ZSet, Kind::List]
                .into_iter()
                .find(|kind| kind.name() == k)
        })
        .collect();
    let lapse = env!("CARGO_BIN_EXE_lapse");
    let servers: [(&str, &str, &[&str]); 2] = [
        ("lapse", lapse, &["--loglevel", "warning"]),
        (
            "redis-server",
            "redis-server",
            &["--save", "", "--appendonly", "no"],
        ),
    ];
    if sections.iter().any(|s| s == "stall") {
        println!("\n## Deleting a big value while another client PINGs\n");
        println!("Strings: {mb} MiB. Aggregates: {elems} elements.\n");
        println!(
            "Each row: {trials} trials on a fresh server; worst PING per trial, then its \
             best and median over the trials (the best is what the deletion costs \
             every time; noise from other work on the machine hits single trials).\n"
        );
        println!("| value | server | command | reply (ms, median) | worst PING best (ms) | worst PING median (ms) |");
        println!("|---|---|---|---|---|---|");
        for &kind in &kinds {
            for (name, program, args) in servers {
                for command in ["EXISTS (baseline)", "DEL", "UNLINK", "DEL (lazy-user-del)"] {
                    let mut replies = Vec::new();
                    let mut worsts = Vec::new();
                    for _ in 0..trials {
                        let (_server, port) = start(program, args);
                        if command.contains("lazy") {
                            let mut c = connect(port);
                            c.get_mut()
                                .write_all(b"CONFIG SET lazyfree-lazy-user-del yes\r\n")
                                .unwrap();
                            assert_eq!(line(&mut c), "+OK\r\n");
                        }
                        let verb = command.split(' ').next().unwrap_or(command);
                        let (reply, worst) = measure(port, kind, verb, mb, elems);
                        replies.push(reply.as_secs_f64() * 1000.0);
                        worsts.push(worst.as_secs_f64() * 1000.0);
                    }
                    let sorted = |mut v: Vec<f64>| {
                        v.sort_by(f64::total_cmp);
                        v
                    };
                    let (replies, worsts) = (sorted(replies), sorted(worsts));
                    println!(
                        "| {} | {name} | {command} | {:.1} | {:.1} | {:.1} |",
                        kind.name(),
                        replies[replies.len() / 2],
                        worsts[0],
                        worsts[worsts.len() / 2],
                    );
                }
            }
        }
    }
    if sections.iter().any(|s| s == "memory") {
        println!("\n## Bytes per element, {elems} small elements in one value\n");
        println!(
            "| type | lapse used_memory | redis used_memory | lapse RSS | redis RSS | RSS ratio |"
        );
        println!("|---|---|---|---|---|---|");
        for &kind in kinds.iter().filter(|&&k| k != Kind::Str) {
            let (lu, lr) = bytes_per_element(lapse, servers[0].2, kind, elems);
            let (ru, rr) = bytes_per_element("redis-server", servers[1].2, kind, elems);
            println!(
                "| {} | {lu:.1} | {ru:.1} | {lr:.1} | {rr:.1} | {:.2} |",
                kind.name(),
                lr / rr
            );
        }
    }
}
