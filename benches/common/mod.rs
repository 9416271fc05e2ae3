//! Helpers the side-by-side benches share (`mod common;` in each).
#![allow(dead_code)] // each bench uses its own subset

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server process on its own port, killed on drop.
pub struct Running {
    pub child: Child,
    pub port: u16,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `program --port <free port> args...` and waits until it accepts
/// connections (lapse and redis-server take the same flags).
pub fn start_server(program: &str, args: &[String]) -> Running {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(program)
        .args(["--port", &port.to_string()])
        .args(args)
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("start {program}: {e}"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{program} did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    Running { child, port }
}

/// A comma-separated list from the environment, or `default`.
pub fn env_list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.trim().to_string())
        .collect()
}

/// True (after saying so loudly) when redis-server is not installed.
pub fn redis_server_missing() -> bool {
    let missing = Command::new("redis-server")
        .arg("--version")
        .output()
        .is_err();
    if missing {
        eprintln!("SKIPPED: redis-server is not on PATH (apt-get install -y redis-server)");
    }
    missing
}

/// Resident memory of process `pid`, in bytes (0 if unknown).
pub fn rss_bytes(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// Resident memory of process `pid`, in MiB.
pub fn rss_mb(pid: u32) -> f64 {
    rss_bytes(pid) as f64 / (1024.0 * 1024.0)
}
