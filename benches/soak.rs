//! Soak: many misbehaving clients against one lapse (release build, loopback
//! only) while a well-behaved client writes and verifies its own keys.
//! Bounded in time and stops by itself.
//!
//! Run: `cargo bench --bench soak` (`SOAK_SECONDS`, default 60).
//!
//! The server requires a password. Misbehaviours, each on its own threads
//! (`SOAK_KINDS` picks some, by number): 0 connect and vanish at once;
//! 1 half-written requests; 2 pipelines of garbage; 3 slow readers of big
//! replies; 4 clients that never read; 5 writers of 512-byte values into
//! database 1 that empty it with FLUSHDB ASYNC every second (lazy-free
//! churn); 6 unauthenticated clients sending a 400 MB AUTH argument;
//! 7 unauthenticated clients pipelining PINGs without reading the NOAUTH
//! errors. Printed every second: connected clients, RSS, limit
//! disconnections, objects waiting for lazy free; at the end: totals and
//! whether any acknowledged write was lost.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

#[derive(Default)]
struct Counters {
    connections: AtomicU64,
    connect_errors: AtomicU64,
    io_errors: AtomicU64,
    acked_writes: AtomicU64,
    lost_writes: AtomicU64,
}

fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    lapse::protocol::encode_request(args, &mut out);
    out
}

/// The server's password.
const PASSWORD: &[u8] = b"soak-secret";
/// Kinds of misbehaving clients that never authenticate.
const UNAUTHENTICATED: [usize; 2] = [6, 7];

/// Connects, and authenticates unless `anonymous`.
fn connect(port: u16, c: &Counters, anonymous: bool) -> Option<TcpStream> {
    let mut s = match TcpStream::connect(("127.0.0.1", port)) {
        Ok(s) => s,
        Err(_) => {
            c.connect_errors.fetch_add(1, Ordering::Relaxed);
            return None;
        }
    };
    c.connections.fetch_add(1, Ordering::Relaxed);
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = s.set_write_timeout(Some(Duration::from_secs(5)));
    if !anonymous {
        let mut ok = [0u8; 5];
        let authed = s.write_all(&encode(&[b"AUTH", PASSWORD])).is_ok()
            && s.read_exact(&mut ok).is_ok()
            && &ok == b"+OK\r\n";
        if !authed {
            c.io_errors.fetch_add(1, Ordering::Relaxed);
            return None;
        }
    }
    Some(s)
}

/// One kind of misbehaving client, run in a loop until `stop`.
fn misbehave(kind: usize, port: u16, c: &Counters, stop: &AtomicBool, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    while !stop.load(Ordering::Relaxed) {
        let Some(mut s) = connect(port, c, UNAUTHENTICATED.contains(&kind)) else {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        let result: std::io::Result<()> = (|| {
            match kind {
                // Connect and vanish.
                0 => {}
                // Half-written request, then gone.
                1 => s.write_all(b"*3\r\n$3\r\nSET\r\n$5\r\nhalf-\r\n$1000\r\nonly a part")?,
                // A pipeline of garbage (the server answers and closes).
                2 => {
                    let junk: Vec<u8> = (0..rng.gen_range(1..4096)).map(|_| rng.gen()).collect();
                    s.write_all(&junk)?;
                    let mut sink = [0u8; 4096];
                    let _ = s.read(&mut sink);
                }
                // Slow reader of big replies.
                3 => {
                    let mut batch = Vec::new();
                    for _ in 0..20 {
                        batch.extend(encode(&[b"GET", b"soak:big"]));
                    }
                    s.write_all(&batch)?;
                    let mut buf = [0u8; 1024];
                    for _ in 0..50 {
                        if s.read(&mut buf)? == 0 {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
                // Lazy-free churn: a second of pipelined writes into
                // database 1, then FLUSHDB ASYNC.
                5 => {
                    s.write_all(&encode(&[b"SELECT", b"1"]))?;
                    let mut ok = [0u8; 5];
                    s.read_exact(&mut ok)?;
                    let value = vec![b'v'; 512];
                    let until = Instant::now() + Duration::from_secs(1);
                    while Instant::now() < until {
                        let mut batch = Vec::new();
                        for _ in 0..100 {
                            let key = format!("churn:{}", rng.gen_range(0..10_000_000u64));
                            batch.extend(encode(&[b"SET", key.as_bytes(), &value]));
                        }
                        s.write_all(&batch)?;
                        s.read_exact(&mut [0u8; 500])?;
                    }
                    s.write_all(&encode(&[b"FLUSHDB", b"ASYNC"]))?;
                    s.read_exact(&mut ok)?;
                }
                // Unauthenticated: a 400 MB AUTH argument, streamed until
                // the server hangs up (Redis's limit: 16 KB).
                6 => {
                    s.write_all(b"*2\r\n$4\r\nAUTH\r\n$400000000\r\n")?;
                    let piece = vec![b'p'; 64 * 1024];
                    for _ in 0..400_000_000 / piece.len() {
                        s.write_all(&piece)?;
                    }
                }
                // Unauthenticated: PINGs pipelined without reading the
                // NOAUTH errors, until the server hangs up or a write
                // times out.
                7 => {
                    let pings = encode(&[b"PING"]).repeat(10_000);
                    for _ in 0..10_000 {
                        s.write_all(&pings)?;
                    }
                }
                // Never reads: asks for 200 MB of replies and holds on.
                _ => {
                    let mut batch = Vec::new();
                    for _ in 0..200 {
                        batch.extend(encode(&[b"GET", b"soak:big"]));
                    }
                    let _ = s.write_all(&batch);
                    std::thread::sleep(Duration::from_millis(rng.gen_range(100..2000)));
                }
            }
            Ok(())
        })();
        if result.is_err() {
            c.io_errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The well-behaved client: SET, check the OK, and read back every key it
/// was told was written.
fn verify(port: u16, c: &Counters, stop: &AtomicBool) {
    let Some(s) = connect(port, c, false) else {
        panic!("the verifier cannot connect");
    };
    let mut r = BufReader::new(s);
    let mut line = String::new();
    let mut i = 0u64;
    let check = |r: &mut BufReader<TcpStream>, key: u64| {
        let k = format!("soak:key:{key}");
        r.get_mut()
            .write_all(&encode(&[b"GET", k.as_bytes()]))
            .unwrap();
        let mut header = String::new();
        r.read_line(&mut header).unwrap();
        let mut body = String::new();
        if header.starts_with('$') && header != "$-1\r\n" {
            r.read_line(&mut body).unwrap();
        }
        if body.trim_end() != format!("value:{key}") {
            c.lost_writes.fetch_add(1, Ordering::Relaxed);
        }
    };
    while !stop.load(Ordering::Relaxed) {
        let (k, v) = (format!("soak:key:{i}"), format!("value:{i}"));
        r.get_mut()
            .write_all(&encode(&[b"SET", k.as_bytes(), v.as_bytes()]))
            .unwrap();
        line.clear();
        r.read_line(&mut line).unwrap();
        if line == "+OK\r\n" {
            c.acked_writes.fetch_add(1, Ordering::Relaxed);
        }
        if i.is_multiple_of(10) {
            check(&mut r, i / 2);
        }
        i += 1;
    }
    for key in 0..i {
        check(&mut r, key);
    }
}

fn info(port: u16, field: &str) -> String {
    let out = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "--no-auth-warning"])
        .args(["-a", std::str::from_utf8(PASSWORD).unwrap_or_default()])
        .args(["INFO", "everything"])
        .output();
    out.ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout).lines().find_map(|l| {
                l.strip_prefix(&format!("{field}:"))
                    .map(|v| v.trim().to_string())
            })
        })
        .unwrap_or_else(|| "?".into())
}

fn main() {
    let seconds: u64 = std::env::var("SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Command::new(env!("CARGO_BIN_EXE_lapse"))
        .args([
            "--port",
            &port.to_string(),
            "--loglevel",
            "warning",
            "--save",
            "",
        ])
        .args(["--client-output-buffer-limit", "normal 64mb 16mb 5"])
        .args([
            "--requirepass",
            std::str::from_utf8(PASSWORD).unwrap_or_default(),
        ])
        .stdout(Stdio::null())
        .spawn()
        .expect("start lapse");
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        std::thread::sleep(Duration::from_millis(20));
    }
    let counters = Arc::new(Counters::default());
    {
        let mut s = connect(port, &counters, false).unwrap();
        s.write_all(&encode(&[b"SET", b"soak:big", &vec![b'b'; 1024 * 1024]]))
            .unwrap();
        let mut ok = [0u8; 5];
        s.read_exact(&mut ok).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    // 8 kinds x 8 threads of misbehaving clients (`SOAK_KINDS` picks some).
    let kinds: Vec<usize> = std::env::var("SOAK_KINDS")
        .unwrap_or_else(|_| "0,1,2,3,4,5,6,7".into())
        .split(',')
        .filter_map(|k| k.trim().parse().ok())
        .collect();
    for &kind in &kinds {
        for t in 0..8 {
            let (c, s) = (counters.clone(), stop.clone());
            threads.push(std::thread::spawn(move || {
                misbehave(kind, port, &c, &s, (kind * 100 + t) as u64)
            }));
        }
    }
    let verifier = {
        let (c, s) = (counters.clone(), stop.clone());
        std::thread::spawn(move || verify(port, &c, &s))
    };
    println!("| t (s) | connected | RSS (MB) | output-limit cuts | query-limit cuts | lazy free pending | connections made |");
    println!("|---|---|---|---|---|---|---|");
    let started = Instant::now();
    let (mut max_rss, mut max_pending): (f64, u64) = (0.0, 0);
    while started.elapsed() < Duration::from_secs(seconds) {
        std::thread::sleep(Duration::from_secs(1));
        let rss = common::rss_mb(server.id());
        max_rss = max_rss.max(rss);
        let pending = info(port, "lazyfree_pending_objects");
        max_pending = max_pending.max(pending.parse().unwrap_or(0));
        println!(
            "| {} | {} | {:.0} | {} | {} | {} | {} |",
            started.elapsed().as_secs(),
            info(port, "connected_clients"),
            rss,
            info(port, "client_output_buffer_limit_disconnections"),
            info(port, "client_query_buffer_limit_disconnections"),
            pending,
            counters.connections.load(Ordering::Relaxed)
        );
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    verifier.join().expect("verifier");
    let alive = server.try_wait().ok().flatten().is_none();
    let c = &counters;
    println!(
        "\nserver alive at the end: {alive}; max RSS {max_rss:.0} MB; most objects pending lazy free {max_pending}"
    );
    println!(
        "connections {}, connect errors {}, client-side I/O errors {}, acknowledged writes {}, lost {}",
        c.connections.load(Ordering::Relaxed),
        c.connect_errors.load(Ordering::Relaxed),
        c.io_errors.load(Ordering::Relaxed),
        c.acked_writes.load(Ordering::Relaxed),
        c.lost_writes.load(Ordering::Relaxed)
    );
    let _ = server.kill();
    let _ = server.wait();
    assert!(alive, "the server died");
    assert_eq!(
        c.lost_writes.load(Ordering::Relaxed),
        0,
        "acknowledged writes were lost"
    );
}
