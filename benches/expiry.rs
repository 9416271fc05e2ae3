//! Side-by-side expiry benchmark: lapse (release build) and redis-server,
//! same hz and effort, one after the other, on this machine.
//!
//! 1. Mass expiry: 1,000,000 keys whose deadlines fall within 2 s, among
//!    1,000,000 keys without TTL, never touched. Seconds after the first
//!    deadline until 50/90/99/100% are gone, RSS before and after, and the
//!    GET latency a client sees during reclamation.
//! 2. Expiry lag: 1,000 probe keys sharing one deadline among N keys with
//!    long TTLs, never touched: probes gone after 1, 10 and 60 s.
//!
//! Run: `cargo bench --bench expiry` (needs redis-server on PATH).
//! Knobs (env): `MASS_KEYS` (1000000), `LAG_SIZES` (0,10000,100000,1000000),
//! `LAG_SECS` (0.1,1,10,60), `SECTIONS` (mass,lag), `LAPSE_MODES` (extra lapse
//! runs, e.g. `uniform`; each is passed as `--expire-strategy <mode>`).

mod common;

use common::Running;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

const PROBES: u64 = 1_000;
const BATCH: usize = 10_000;

fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Which server a run uses.
#[derive(Clone)]
struct Target {
    name: String,
    program: String,
    args: Vec<String>,
}

fn targets() -> Vec<Target> {
    let lapse = env!("CARGO_BIN_EXE_lapse").to_string();
    let mut out = vec![Target {
        name: "lapse".into(),
        program: lapse.clone(),
        args: vec!["--loglevel".into(), "warning".into()],
    }];
    for mode in common::env_list("LAPSE_MODES", "") {
        out.push(Target {
            name: format!("lapse ({mode})"),
            program: lapse.clone(),
            args: vec![
                "--loglevel".into(),
                "warning".into(),
                "--expire-strategy".into(),
                mode,
            ],
        });
    }
    out.push(Target {
        name: "redis-server".into(),
        program: "redis-server".into(),
        args: ["--save", "", "--appendonly", "no", "--bind", "127.0.0.1"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
    });
    out
}

fn start(target: &Target) -> Running {
    let mut args: Vec<String> = ["--hz", "10", "--active-expire-effort", "1"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(target.args.iter().cloned());
    common::start_server(&target.program, &args)
}

struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    fn connect(port: u16) -> Client {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_nodelay(true).unwrap();
        Client {
            reader: BufReader::new(s),
        }
    }

    fn encode(args: &[&[u8]], out: &mut Vec<u8>) {
        lapse::protocol::encode_request(args, out);
    }

    /// Sends `n` SETs built by `make` in pipelined batches; checks every +OK.
    fn load(&mut self, n: u64, mut make: impl FnMut(u64, &mut Vec<u8>)) {
        let mut i = 0;
        while i < n {
            let end = (i + BATCH as u64).min(n);
            let mut batch = Vec::new();
            for j in i..end {
                make(j, &mut batch);
            }
            self.reader.get_mut().write_all(&batch).unwrap();
            let mut replies = vec![0u8; 5 * (end - i) as usize];
            self.reader.read_exact(&mut replies).unwrap();
            assert!(replies.chunks(5).all(|r| r == b"+OK\r\n"), "load failed");
            i = end;
        }
    }

    fn line_cmd(&mut self, args: &[&[u8]]) -> String {
        let mut buf = Vec::new();
        Self::encode(args, &mut buf);
        self.reader.get_mut().write_all(&buf).unwrap();
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        if let Some(len) = line.strip_prefix('$') {
            let len: i64 = len.trim().parse().unwrap();
            if len >= 0 {
                let mut body = vec![0u8; len as usize + 2];
                self.reader.read_exact(&mut body).unwrap();
            }
        }
        line.trim().to_string()
    }

    /// Sends a command whose reply is one bulk string; returns it as text.
    fn bulk_cmd(&mut self, args: &[&[u8]]) -> String {
        let mut buf = Vec::new();
        Self::encode(args, &mut buf);
        self.reader.get_mut().write_all(&buf).unwrap();
        let mut header = String::new();
        self.reader.read_line(&mut header).unwrap();
        let len: usize = header.trim()[1..].parse().unwrap();
        let mut body = vec![0u8; len + 2];
        self.reader.read_exact(&mut body).unwrap();
        String::from_utf8_lossy(&body).into_owned()
    }

    fn dbsize(&mut self) -> u64 {
        self.line_cmd(&[b"DBSIZE"])[1..].parse().unwrap()
    }
}

/// Latency percentiles from microsecond samples.
fn percentiles(mut us: Vec<u64>) -> (f64, f64, f64) {
    if us.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    us.sort_unstable();
    let at = |p: f64| us[((us.len() as f64 * p) as usize).min(us.len() - 1)] as f64 / 1000.0;
    (at(0.50), at(0.99), *us.last().unwrap() as f64 / 1000.0)
}

struct MassResult {
    name: String,
    /// Seconds after the first deadline until 50/90/99/100% were gone.
    gone_at: [Option<f64>; 4],
    rss_before: f64,
    rss_after: f64,
    get_ms: (f64, f64, f64),
    gets: usize,
}

fn mass_expiry(target: &Target, keys: u64) -> MassResult {
    let server = start(target);
    let mut c = Client::connect(server.port);
    c.load(keys, |i, out| {
        Client::encode(
            &[b"SET", format!("p:{i}").as_bytes(), b"0123456789abcdef"],
            out,
        )
    });
    // Deadlines spread over 2 s, starting once the load is surely done.
    let first_deadline = unix_ms() + 2_000 + (keys as i64 / 200);
    c.load(keys, |i, out| {
        let at = (first_deadline + (i % 2_000) as i64).to_string();
        Client::encode(
            &[
                b"SET",
                format!("e:{i}").as_bytes(),
                b"0123456789abcdef",
                b"PXAT",
                at.as_bytes(),
            ],
            out,
        )
    });
    assert!(
        unix_ms() < first_deadline,
        "load too slow for the chosen deadline"
    );
    let rss_before = common::rss_mb(server.child.id());
    std::thread::sleep(Duration::from_millis(
        (first_deadline - unix_ms()).max(0) as u64
    ));

    // A client doing GETs of live keys during reclamation.
    let stop = Arc::new(AtomicBool::new(false));
    let getter = {
        let stop = stop.clone();
        let mut g = Client::connect(server.port);
        std::thread::spawn(move || {
            let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
            let mut lat = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let key = format!("p:{}", rng.gen_range(0..keys));
                let t = Instant::now();
                g.line_cmd(&[b"GET", key.as_bytes()]);
                lat.push(t.elapsed().as_micros() as u64);
            }
            lat
        })
    };
    let thresholds = [0.5, 0.9, 0.99, 1.0];
    let mut gone_at = [None; 4];
    let started = Instant::now();
    let offset = (unix_ms() - first_deadline) as f64 / 1000.0;
    while started.elapsed() < Duration::from_secs(300) {
        let gone = (2 * keys).saturating_sub(c.dbsize()) as f64 / keys as f64;
        let t = offset + started.elapsed().as_secs_f64();
        for (slot, th) in gone_at.iter_mut().zip(thresholds) {
            if slot.is_none() && gone >= th {
                *slot = Some(t);
            }
        }
        if gone_at[3].is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    let lat = getter.join().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    MassResult {
        name: target.name.clone(),
        gone_at,
        rss_before,
        rss_after: common::rss_mb(server.child.id()),
        gets: lat.len(),
        get_ms: percentiles(lat),
    }
}

/// Probes gone after each of `checkpoints` seconds, among `others` long-TTL
/// keys, and (lapse only) its INFO expiry lag p99 / max at the end.
fn probe_lag(target: &Target, others: u64, checkpoints: &[f64]) -> (Vec<u64>, String) {
    let server = start(target);
    let mut c = Client::connect(server.port);
    c.load(others, |i, out| {
        Client::encode(
            &[b"SET", format!("o:{i}").as_bytes(), b"v", b"EX", b"36000"],
            out,
        )
    });
    let deadline = unix_ms() + 1_000;
    let at = deadline.to_string();
    c.load(PROBES, |i, out| {
        Client::encode(
            &[
                b"SET",
                format!("probe:{i}").as_bytes(),
                b"v",
                b"PXAT",
                at.as_bytes(),
            ],
            out,
        )
    });
    let mut out = Vec::new();
    for &secs in checkpoints {
        let wait = deadline + (secs * 1000.0) as i64 - unix_ms();
        std::thread::sleep(Duration::from_millis(wait.max(0) as u64));
        out.push((others + PROBES).saturating_sub(c.dbsize()));
    }
    let lag = if target.program.ends_with("lapse") {
        let info = c.bulk_cmd(&[b"INFO", b"stats"]);
        let field = |name: &str| {
            info.lines()
                .find_map(|l| {
                    l.strip_prefix(&format!("{name}:"))
                        .map(|v| v.trim().to_string())
                })
                .unwrap_or_default()
        };
        format!(
            "{} / {}",
            field("expire_lag_active_p99_ms"),
            field("expire_lag_active_max_ms")
        )
    } else {
        "n/a".into()
    };
    (out, lag)
}

fn fmt_secs(v: Option<f64>) -> String {
    v.map_or_else(|| "> 300".into(), |s| format!("{s:.2}"))
}

fn main() {
    if common::redis_server_missing() {
        return;
    }
    // `cargo bench` passes --bench; this program takes no arguments.
    let sections = common::env_list("SECTIONS", "mass,lag");
    let targets = targets();
    if sections.iter().any(|s| s == "mass") {
        let keys: u64 = std::env::var("MASS_KEYS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1_000_000);
        println!("\n## Mass expiry: {keys} keys with deadlines spread over 2 s among {keys} without TTL (hz 10, effort 1)\n");
        println!("| server | 50% gone (s) | 90% | 99% | 100% | RSS before (MB) | RSS after (MB) | GET p50 (ms) | GET p99 (ms) | GET max (ms) | GETs |");
        println!("|---|---|---|---|---|---|---|---|---|---|---|");
        for t in &targets {
            let r = mass_expiry(t, keys);
            println!(
                "| {} | {} | {} | {} | {} | {:.0} | {:.0} | {:.3} | {:.3} | {:.1} | {} |",
                r.name,
                fmt_secs(r.gone_at[0]),
                fmt_secs(r.gone_at[1]),
                fmt_secs(r.gone_at[2]),
                fmt_secs(r.gone_at[3]),
                r.rss_before,
                r.rss_after,
                r.get_ms.0,
                r.get_ms.1,
                r.get_ms.2,
                r.gets
            );
        }
        println!("\nTimes are seconds after the first deadline; the last deadline is at 2.00 s.");
    }
    if sections.iter().any(|s| s == "lag") {
        let sizes: Vec<u64> = common::env_list("LAG_SIZES", "0,10000,100000,1000000")
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let checkpoints: Vec<f64> = common::env_list("LAG_SECS", "0.1,1,10,60")
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        println!("\n## Expiry lag: {PROBES} probes sharing one deadline among N keys with long TTLs (never touched)\n");
        let header: Vec<String> = checkpoints
            .iter()
            .map(|s| format!("gone after {s} s"))
            .collect();
        println!(
            "| server | N | {} | lapse lag p99 / max (ms) |",
            header.join(" | ")
        );
        println!("|---|---|{}---|", "---|".repeat(checkpoints.len()));
        for &n in &sizes {
            for t in &targets {
                let (gone, lag) = probe_lag(t, n, &checkpoints);
                let cells: Vec<String> = gone.iter().map(|g| format!("{g} / {PROBES}")).collect();
                println!("| {} | {} | {} | {} |", t.name, n, cells.join(" | "), lag);
            }
        }
    }
}
