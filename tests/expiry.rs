//! The active expire cycle seen from outside: mass reclamation while other
//! clients are served, and the INFO statistics that describe it.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{encode, eventually, info_field, Raw, Server};

/// Loads `count` keys named `{prefix}{i}` with the given extra SET args,
/// pipelined in batches.
fn load(raw: &mut Raw, prefix: &str, count: usize, extra: &[&[u8]]) {
    for chunk in (0..count).collect::<Vec<_>>().chunks(5_000) {
        let mut batch = Vec::new();
        for i in chunk {
            let key = format!("{prefix}{i}");
            let mut args: Vec<&[u8]> = vec![b"SET", key.as_bytes(), b"value"];
            args.extend_from_slice(extra);
            batch.extend(encode(&args));
        }
        raw.send(&batch);
        for _ in chunk {
            assert_eq!(raw.reply(), b"+OK\r\n");
        }
    }
}

fn int_field(raw: &mut Raw, section: &str, field: &str) -> f64 {
    info_field(raw, section, field).parse().unwrap()
}

#[test]
fn mass_expiry_is_reclaimed_while_clients_are_served() {
    let server = Server::lapse(&[]);
    let mut raw = server.raw();
    load(&mut raw, "live:", 100_000, &[]);
    // Loaded with the cycle off so that all 100,000 are due together.
    assert_eq!(raw.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), "+OK\r\n");
    load(&mut raw, "short:", 100_000, &[b"PX", b"50"]);
    std::thread::sleep(Duration::from_millis(60));
    assert_eq!(raw.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]), "+OK\r\n");

    // A concurrent client keeps pinging and records its worst wait.
    let stop = Arc::new(AtomicBool::new(false));
    let pinger = {
        let stop = stop.clone();
        let mut ping = server.raw();
        std::thread::spawn(move || {
            let (mut answered, mut worst) = (0u64, Duration::ZERO);
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                assert_eq!(ping.cmd(&["PING"]), "+PONG\r\n");
                worst = worst.max(started.elapsed());
                answered += 1;
            }
            (answered, worst)
        })
    };
    let reclaimed = eventually(Duration::from_secs(20), || {
        raw.cmd(&["DBSIZE"]) == ":100000\r\n"
    });
    stop.store(true, Ordering::Relaxed);
    let (answered, worst) = pinger.join().unwrap();
    assert!(
        reclaimed,
        "not all short-lived keys were reclaimed: {}",
        raw.cmd(&["DBSIZE"])
    );
    assert!(answered > 0, "no PING answered");
    // The slow cycle's budget is 25 ms at hz 10; allow a loaded machine plenty.
    assert!(worst < Duration::from_secs(1), "a PING waited {worst:?}");

    assert_eq!(int_field(&mut raw, "stats", "expired_keys"), 100_000.0);
    assert_eq!(
        int_field(&mut raw, "stats", "expired_keys_active"),
        100_000.0
    );
    assert_eq!(int_field(&mut raw, "stats", "expired_keys_passive"), 0.0);
    assert!(int_field(&mut raw, "stats", "expired_stale_perc") > 0.0);
    assert!(int_field(&mut raw, "stats", "expire_cycle_cpu_milliseconds") > 0.0);
    assert!(int_field(&mut raw, "stats", "expire_lag_active_max_ms") > 0.0);
    let p50 = int_field(&mut raw, "stats", "expire_lag_active_p50_ms");
    let p99 = int_field(&mut raw, "stats", "expire_lag_active_p99_ms");
    assert!(p50 <= p99, "{p50} > {p99}");
    // With 100,000 keys due at once, the 25 ms slow-cycle budget runs out.
    assert!(int_field(&mut raw, "stats", "expired_time_cap_reached_count") > 0.0);
    assert_eq!(
        info_field(&mut raw, "keyspace", "db0"),
        "keys=100000,expires=0,avg_ttl=0"
    );
}

#[test]
fn avg_ttl_is_estimated_from_samples() {
    let server = Server::lapse(&["--hz", "100"]);
    let mut raw = server.raw();
    load(&mut raw, "long:", 1_000, &[b"EX", b"3600"]);
    let avg_ttl = || -> i64 {
        let db0 = info_field(&mut server.raw(), "keyspace", "db0");
        assert!(db0.starts_with("keys=1000,expires=1000,avg_ttl="), "{db0}");
        db0.rsplit('=').next().unwrap().parse().unwrap()
    };
    assert!(eventually(Duration::from_secs(5), || avg_ttl() > 0));
    let ttl = avg_ttl();
    assert!(ttl > 3_000_000 && ttl <= 3_600_000, "avg_ttl {ttl}");
}

#[test]
fn passive_lag_and_stale_share_decay() {
    let server = Server::lapse(&[]);
    let mut raw = server.raw();
    assert_eq!(raw.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), "+OK\r\n");
    assert_eq!(raw.cmd(&["SET", "k", "v", "PX", "20"]), "+OK\r\n");
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(raw.cmd(&["GET", "k"]), "$-1\r\n");
    let lag = int_field(&mut raw, "stats", "expire_lag_passive_max_ms");
    assert!(lag >= 100.0, "passive lag {lag}");
    assert_eq!(
        int_field(&mut raw, "stats", "expire_lag_active_max_ms"),
        0.0
    );
    assert_eq!(raw.cmd(&["CONFIG", "RESETSTAT"]), "+OK\r\n");
    assert_eq!(int_field(&mut raw, "stats", "expired_keys"), 0.0);
}

#[test]
fn effort_and_hz_change_at_run_time() {
    let server = Server::lapse(&["--hz", "1"]);
    let mut raw = server.raw();
    assert_eq!(
        raw.cmd(&["CONFIG", "SET", "hz", "100", "active-expire-effort", "10"]),
        "+OK\r\n"
    );
    load(&mut raw, "s:", 20_000, &[b"PX", b"10"]);
    // At hz 100 the cron runs every 10 ms: reclamation is quick.
    assert!(eventually(Duration::from_secs(5), || raw.cmd(&["DBSIZE"]) == ":0\r\n"));
}

/// Loads `others` long-TTL keys and `probes` keys sharing one deadline
/// `delay_ms` from now; returns the deadline (unix ms).
fn load_probes(raw: &mut Raw, others: usize, probes: usize, delay_ms: i64) -> i64 {
    load(raw, "other:", others, &[b"EX", b"36000"]);
    let deadline = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        + delay_ms;
    let at = deadline.to_string();
    load(raw, "probe:", probes, &[b"PXAT", at.as_bytes()]);
    deadline
}

#[test]
fn deadline_strategy_removes_probes_on_time_among_many_live_ttls() {
    let server = Server::lapse(&[]);
    let mut raw = server.raw();
    assert_eq!(info_field(&mut raw, "stats", "expire_strategy"), "deadline");
    load_probes(&mut raw, 200_000, 1_000, 300);
    let mut other = server.raw();
    // Served meanwhile, and the probes are gone soon after their deadline.
    assert!(eventually(Duration::from_secs(5), || {
        assert_eq!(other.cmd(&["PING"]), "+PONG\r\n");
        raw.cmd(&["DBSIZE"]) == ":200000\r\n"
    }));
    assert_eq!(int_field(&mut raw, "stats", "expired_keys_active"), 1_000.0);
    // Generous for a loaded machine; the benchmark measures ~1 ms.
    let p99 = int_field(&mut raw, "stats", "expire_lag_active_p99_ms");
    assert!(p99 < 1000.0, "p99 lag {p99} ms");
}

#[test]
fn uniform_strategy_stays_available_and_switchable() {
    let server = Server::lapse(&["--expire-strategy", "uniform"]);
    let mut raw = server.raw();
    assert_eq!(info_field(&mut raw, "stats", "expire_strategy"), "uniform");
    load_probes(&mut raw, 50_000, 1_000, 100);
    std::thread::sleep(Duration::from_millis(1_000));
    // Uniform sampling among 50,000 live TTLs leaves most probes behind...
    let left: u64 = raw.cmd(&["DBSIZE"])[1..].trim().parse().unwrap();
    assert!(left > 50_500, "{left}");
    // ...and switching at run time picks them up at once.
    assert_eq!(
        raw.cmd(&["CONFIG", "SET", "expire-strategy", "deadline"]),
        "+OK\r\n"
    );
    assert!(eventually(Duration::from_secs(5), || raw.cmd(&["DBSIZE"])
        == ":50000\r\n"));
    assert_eq!(
        raw.cmd(&["CONFIG", "SET", "expire-strategy", "random"]),
        "-ERR CONFIG SET failed (possibly related to argument 'expire-strategy') - argument(s) must be one of the following: deadline, uniform\r\n"
    );
}
