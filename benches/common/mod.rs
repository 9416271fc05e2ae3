//! Helpers the side-by-side benches share (`mod common;` in each).
#![allow(dead_code)] // each bench uses its own subset

use std::process::Command;

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
