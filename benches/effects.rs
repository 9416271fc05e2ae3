//! Side-by-side benchmark of what issue 13 added: lapse (release build) and
//! redis-server, one after the other, on this machine.
//!
//! 1. `lag`: 1,000 probe keys sharing one deadline among N keys with 1-hour
//!    TTLs, never touched; one subscriber on `__keyevent@0__:expired`. How
//!    many `expired` events arrive within `LAG_WAIT_SECS`, and how late
//!    (arrival minus deadline): p50 / p99 / max.
//! 2. `publish`: PUBLISH throughput (redis-benchmark, 50 clients) with 1
//!    and 100 subscribers reading and discarding.
//! 3. `multi`: MULTI / SET / EXEC transactions per second, 50 connections,
//!    16 transactions pipelined per round trip.
//! 4. `blocking`: LPUSH/BLPOP ping-pong round trips per second; SET and GET
//!    `-P 16` throughput with 10,000 idle clients blocked on keys of their
//!    own against none.
//!
//! Run: `cargo bench --bench effects` (needs redis-server, redis-benchmark).
//! Knobs (env): `SECTIONS` (lag,publish,multi), `LAG_KEYS` (1000000),
//! `LAG_WAIT_SECS` (60), `SUBSCRIBERS` (1,100), `PIPELINES` (1,16),
//! `REQUESTS` (200000), `PAIRS` (3: runs per server, alternating, median),
//! `ROUNDS` (20000), `IDLE_WAITERS` (10000).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

const PROBES: usize = 1_000;

fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A server under test and its name in the tables.
struct Server {
    name: &'static str,
    running: common::Running,
}

impl Server {
    fn port(&self) -> u16 {
        self.running.port
    }
}

fn start(name: &'static str) -> Server {
    let (program, args): (&str, &[&str]) = if name == "lapse" {
        (env!("CARGO_BIN_EXE_lapse"), &["--loglevel", "warning"])
    } else {
        (
            "redis-server",
            &["--save", "", "--appendonly", "no", "--bind", "127.0.0.1"],
        )
    };
    let mut args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    args.extend(["--hz", "10", "--maxclients", "12000"].map(String::from));
    Server {
        name,
        running: common::start_server(program, &args),
    }
}

fn connect(port: u16) -> BufReader<TcpStream> {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_nodelay(true).unwrap();
    BufReader::new(s)
}

fn send(r: &mut BufReader<TcpStream>, args: &[&[u8]]) {
    let mut buf = Vec::new();
    lapse::protocol::encode_request(args, &mut buf);
    r.get_mut().write_all(&buf).unwrap();
}

/// Reads one reply of any shape, returning its lines (bulk bodies included).
fn read_reply(r: &mut BufReader<TcpStream>, out: &mut Vec<String>) {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let line = line.trim_end().to_string();
    let (kind, rest) = line.split_at(1);
    out.push(line.clone());
    match kind {
        "$" => {
            let n: i64 = rest.parse().unwrap();
            if n >= 0 {
                let mut body = vec![0u8; n as usize + 2];
                r.read_exact(&mut body).unwrap();
                out.push(String::from_utf8_lossy(&body[..n as usize]).into_owned());
            }
        }
        "*" | ">" => {
            let n: i64 = rest.parse().unwrap();
            for _ in 0..n.max(0) {
                read_reply(r, out);
            }
        }
        _ => {}
    }
}

fn cmd(r: &mut BufReader<TcpStream>, args: &[&str]) -> Vec<String> {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    send(r, &args);
    let mut out = Vec::new();
    read_reply(r, &mut out);
    out
}

/// Pipelined SETs: `make(i)` gives the arguments of the i-th.
fn load(port: u16, n: usize, make: impl Fn(usize) -> Vec<Vec<u8>>) {
    let mut r = connect(port);
    const BATCH: usize = 10_000;
    let mut i = 0;
    while i < n {
        let end = (i + BATCH).min(n);
        let mut buf = Vec::new();
        for j in i..end {
            let args = make(j);
            let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            lapse::protocol::encode_request(&args, &mut buf);
        }
        r.get_mut().write_all(&buf).unwrap();
        let mut replies = vec![0u8; 5 * (end - i)];
        r.read_exact(&mut replies).unwrap();
        i = end;
    }
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

fn lag(server: &Server, keys: usize, wait: Duration) {
    load(server.port(), keys, |i| {
        vec![
            b"SET".to_vec(),
            format!("long:{i}").into_bytes(),
            b"v".to_vec(),
            b"EX".to_vec(),
            b"3600".to_vec(),
        ]
    });
    let mut c = connect(server.port());
    cmd(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "Ex"]);
    let mut sub = connect(server.port());
    cmd(&mut sub, &["SUBSCRIBE", "__keyevent@0__:expired"]);
    let deadline_ms = unix_ms() + 2_000;
    let at = deadline_ms.to_string();
    load(server.port(), PROBES, |i| {
        vec![
            b"SET".to_vec(),
            format!("probe:{i}").into_bytes(),
            b"v".to_vec(),
            b"PXAT".to_vec(),
            at.clone().into_bytes(),
        ]
    });
    sub.get_ref()
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let until = Instant::now() + Duration::from_secs(2) + wait;
    let mut lags = Vec::new();
    while lags.len() < PROBES && Instant::now() < until {
        let mut frame = Vec::new();
        let mut line = String::new();
        match sub.read_line(&mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(_) => continue,
        }
        // `*3`: message, channel, key; read the rest with no timeout games.
        sub.get_ref().set_read_timeout(None).unwrap();
        for _ in 0..3 {
            read_reply(&mut sub, &mut frame);
        }
        sub.get_ref()
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        if frame.last().is_some_and(|k| k.starts_with("probe:")) {
            lags.push(unix_ms() - deadline_ms);
        }
    }
    lags.sort_unstable();
    println!(
        "| {} | {} | {}/{} | {} | {} | {} |",
        server.name,
        keys,
        lags.len(),
        PROBES,
        percentile(&lags, 0.50),
        percentile(&lags, 0.99),
        lags.last().copied().unwrap_or(0)
    );
}

/// redis-benchmark's requests per second for one PUBLISH run.
fn publish_rps(port: u16, requests: u64, pipeline: u64) -> f64 {
    benchmark_rps(
        port,
        requests,
        pipeline,
        &["PUBLISH", "bench", "0123456789abcdef"],
    )
}

/// Requests per second of one redis-benchmark run (50 clients) with
/// `what` (`-t set`, or a command line).
fn benchmark_rps(port: u16, requests: u64, pipeline: u64, what: &[&str]) -> f64 {
    let port = port.to_string();
    let requests = requests.to_string();
    let pipeline = pipeline.to_string();
    let out = Command::new("redis-benchmark")
        .args(["-p", &port, "-c", "50", "-n", &requests, "-P", &pipeline])
        .args(["-r", "1000000", "--csv"])
        .args(what)
        .output()
        .expect("redis-benchmark");
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().unwrap_or_default().replace('"', "");
    last.split(',')
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// Subscribers on `bench` that read and discard until stopped.
fn subscribers(port: u16, n: usize, stop: Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<()>> {
    (0..n)
        .map(|_| {
            let mut r = connect(port);
            cmd(&mut r, &["SUBSCRIBE", "bench"]);
            r.get_ref()
                .set_read_timeout(Some(Duration::from_millis(100)))
                .unwrap();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 1 << 16];
                while !stop.load(Ordering::Relaxed) {
                    let _ = r.read(&mut buf);
                }
            })
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// `pairs` runs of `run(port)` on each server, alternating which goes
/// first; the medians, lapse's then redis-server's.
fn side_by_side(servers: &[Server; 2], pairs: usize, run: impl Fn(u16) -> f64) -> (f64, f64) {
    let mut runs = [Vec::new(), Vec::new()];
    for pair in 0..pairs {
        for k in if pair % 2 == 0 { [0, 1] } else { [1, 0] } {
            runs[k].push(run(servers[k].port()));
        }
    }
    let [lapse, redis] = runs;
    (median(lapse), median(redis))
}

/// MULTI/SET/EXEC transactions per second: 50 connections, `pipeline`
/// transactions per round trip, `total` transactions in all.
fn multi_tps(port: u16, total: u64, pipeline: u64) -> f64 {
    let conns = 50;
    let per_conn = total / conns;
    let start = Instant::now();
    let done = Arc::new(Mutex::new(0u64));
    let handles: Vec<_> = (0..conns)
        .map(|c| {
            let done = done.clone();
            std::thread::spawn(move || {
                let mut r = connect(port);
                let mut rng = rand::rngs::SmallRng::seed_from_u64(c);
                let mut sent = 0;
                let mut buf = Vec::new();
                while sent < per_conn {
                    buf.clear();
                    let batch = pipeline.min(per_conn - sent);
                    for _ in 0..batch {
                        let key = format!("key:{}", rng.gen_range(0..1_000_000));
                        lapse::protocol::encode_request(&[b"MULTI".as_slice()], &mut buf);
                        lapse::protocol::encode_request(
                            &[b"SET".as_slice(), key.as_bytes(), b"0123456789abcdef"],
                            &mut buf,
                        );
                        lapse::protocol::encode_request(&[b"EXEC".as_slice()], &mut buf);
                    }
                    r.get_mut().write_all(&buf).unwrap();
                    // +OK, +QUEUED, *1 +OK per transaction.
                    let mut lines = String::new();
                    for _ in 0..batch * 4 {
                        lines.clear();
                        r.read_line(&mut lines).unwrap();
                    }
                    sent += batch;
                }
                *done.lock().unwrap() += sent;
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let transactions = *done.lock().unwrap();
    transactions as f64 / start.elapsed().as_secs_f64()
}

/// Producer/consumer ping-pong: the producer LPUSHes a job that wakes the
/// consumer's BLPOP, the consumer answers through a second list the
/// producer BLPOPs. Round trips per second.
fn pingpong(port: u16, rounds: u64) -> f64 {
    let consumer = std::thread::spawn(move || {
        let mut r = connect(port);
        for _ in 0..rounds {
            cmd(&mut r, &["BLPOP", "jobs", "0"]);
            cmd(&mut r, &["LPUSH", "acks", "done"]);
        }
    });
    let mut r = connect(port);
    let start = Instant::now();
    for _ in 0..rounds {
        cmd(&mut r, &["LPUSH", "jobs", "job"]);
        cmd(&mut r, &["BLPOP", "acks", "0"]);
    }
    let elapsed = start.elapsed().as_secs_f64();
    consumer.join().unwrap();
    rounds as f64 / elapsed
}

/// `n` connections each blocked on a key of its own, held until dropped.
fn idle_waiters(port: u16, n: usize) -> Vec<BufReader<TcpStream>> {
    let waiters: Vec<_> = (0..n)
        .map(|i| {
            let mut r = connect(port);
            send(&mut r, &[b"BLPOP", format!("idle:{i}").as_bytes(), b"0"]);
            r
        })
        .collect();
    let mut admin = connect(port);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info = cmd(&mut admin, &["INFO", "clients"]).join("\n");
        if info.contains(&format!("blocked_clients:{n}")) {
            return waiters;
        }
        assert!(
            Instant::now() < deadline,
            "{n} clients did not block: {info}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn main() {
    if common::redis_server_missing() {
        return;
    }
    let sections = common::env_list("SECTIONS", "lag,publish,multi,blocking");
    let requests = env_num("REQUESTS", 200_000);
    let pairs = env_num("PAIRS", 3) as usize;
    let pipelines: Vec<u64> = common::env_list("PIPELINES", "1,16")
        .iter()
        .filter_map(|p| p.parse().ok())
        .collect();
    if sections.iter().any(|s| s == "lag") {
        let keys = env_num("LAG_KEYS", 1_000_000) as usize;
        let wait = Duration::from_secs(env_num("LAG_WAIT_SECS", 60));
        println!(
            "\n## expired events: {PROBES} probes sharing one deadline among {keys} long TTLs\n"
        );
        println!("| server | long TTLs | arrived | p50 ms | p99 ms | max ms |");
        println!("|---|---|---|---|---|---|");
        for name in ["lapse", "redis-server"] {
            lag(&start(name), keys, wait);
        }
    }
    let servers = [start("lapse"), start("redis-server")];
    if sections.iter().any(|s| s == "publish") {
        println!("\n## PUBLISH, 50 clients, {requests} requests (median of {pairs})\n");
        println!("| subscribers | -P | lapse rps | redis rps | ratio |");
        println!("|---|---|---|---|---|");
        for subs in common::env_list("SUBSCRIBERS", "1,100") {
            let n: usize = subs.parse().unwrap();
            let stop = Arc::new(AtomicBool::new(false));
            let mut readers = Vec::new();
            for s in &servers {
                readers.extend(subscribers(s.port(), n, stop.clone()));
            }
            for &p in &pipelines {
                let (l, r) = side_by_side(&servers, pairs, |port| publish_rps(port, requests, p));
                println!("| {n} | {p} | {l:.0} | {r:.0} | {:.2} |", l / r);
            }
            stop.store(true, Ordering::Relaxed);
            for h in readers {
                let _ = h.join();
            }
        }
    }
    if sections.iter().any(|s| s == "blocking") {
        let rounds = env_num("ROUNDS", 20_000);
        println!(
            "\n## BLPOP woken by LPUSH: ping-pong round trips ({rounds}, median of {pairs})\n"
        );
        println!("| lapse rt/s | redis rt/s | ratio |");
        println!("|---|---|---|");
        let (l, r) = side_by_side(&servers, pairs, |port| pingpong(port, rounds));
        println!("| {l:.0} | {r:.0} | {:.2} |", l / r);
        let idle = env_num("IDLE_WAITERS", 10_000) as usize;
        println!("\n## SET/GET -P 16 with {idle} idle blocked clients ({requests} requests, median of {pairs})\n");
        println!("| server | test | none blocked rps | {idle} blocked rps | blocked / none |");
        println!("|---|---|---|---|---|");
        for server in &servers {
            for test in ["set", "get"] {
                let run = || {
                    let runs: Vec<f64> = (0..pairs)
                        .map(|_| benchmark_rps(server.port(), requests, 16, &["-t", test]))
                        .collect();
                    median(runs)
                };
                let before = run();
                let waiters = idle_waiters(server.port(), idle);
                let during = run();
                drop(waiters);
                println!(
                    "| {} | {test} | {before:.0} | {during:.0} | {:.3} |",
                    server.name,
                    during / before
                );
            }
        }
    }
    if sections.iter().any(|s| s == "multi") {
        println!(
            "\n## MULTI/SET/EXEC, 50 connections, {requests} transactions (median of {pairs})\n"
        );
        println!("| -P | lapse tx/s | redis tx/s | ratio |");
        println!("|---|---|---|---|");
        for &p in &pipelines {
            let (l, r) = side_by_side(&servers, pairs, |port| multi_tps(port, requests, p));
            println!("| {p} | {l:.0} | {r:.0} | {:.2} |", l / r);
        }
    }
}
