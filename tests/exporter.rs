//! Prometheus' redis_exporter (Debian's prometheus-redis-exporter) reads
//! lapse as it reads redis-server: after the same few commands, every
//! metric it exports for redis-server it exports for lapse too (role,
//! run id, command and error statistics, latency percentiles, slow log,
//! CPU, memory, replication, keyspace...).

mod common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{eventually, free_port, tool_present, Server};

/// An exporter process, killed on drop.
struct Exporter(Child, u16);

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn exporter_for(server: &Server) -> Exporter {
    let port = free_port();
    let child = Command::new("prometheus-redis-exporter")
        .args(["-redis.addr", &format!("redis://127.0.0.1:{}", server.port)])
        .args(["-web.listen-address", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start prometheus-redis-exporter");
    Exporter(child, port)
}

/// The names of the `redis_*` metrics the exporter serves.
fn metric_names(exporter: &Exporter) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let fetched = eventually(Duration::from_secs(10), || {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", exporter.1)) else {
            return false;
        };
        let _ = s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n");
        let mut body = String::new();
        let _ = s.read_to_string(&mut body);
        names = body
            .lines()
            .filter(|l| l.starts_with("redis_"))
            .map(|l| l.split(['{', ' ']).next().unwrap_or_default().to_string())
            .collect();
        names.contains("redis_up")
    });
    assert!(fetched, "the exporter served no metrics");
    names
}

#[test]
fn redis_exporter_exports_the_same_metrics_for_lapse() {
    if !tool_present("prometheus-redis-exporter", "the redis_exporter comparison") {
        return;
    }
    let mut exported = Vec::new();
    for server in Server::lapse_then_redis() {
        let mut r = server.raw();
        // Something for each statistic: a key with a TTL, a command
        // error, a slow-logged command.
        r.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
        r.cmd(&["SET", "k", "v", "EX", "100"]);
        r.cmd(&["INCR", "k"]);
        r.cmd(&["GET", "k"]);
        let exporter = exporter_for(&server);
        exported.push(metric_names(&exporter));
    }
    let ours = &exported[0];
    assert!(ours.len() > 100, "{ours:?}");
    for wanted in [
        "redis_up",
        "redis_commands_total",
        "redis_errors_total",
        "redis_cpu_sys_seconds_total",
        "redis_slowlog_length",
        "redis_db_keys",
        "redis_instance_info",
    ] {
        assert!(ours.contains(wanted), "{wanted} missing");
    }
    if let [ours, theirs] = &exported[..] {
        let missing: Vec<&String> = theirs.difference(ours).collect();
        assert!(missing.is_empty(), "lapse lacks {missing:?}");
    }
}
