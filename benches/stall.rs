//! Deletion stalls: the longest wait seen by a client sending PING in a
//! tight loop while another client deletes a big value, with DEL and with
//! UNLINK, in lapse and in redis-server (same run, one after the other).
//!
//! Run: `cargo bench --bench stall` (`STALL_MB`, default 400: the size of
//! the string). Aggregate values belong here too once lapse has them.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(program: &str, args: &[&str]) -> (Running, u16) {
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
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        std::thread::sleep(Duration::from_millis(20));
    }
    (Running(child), port)
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

/// Stores a `mb` MiB string at `big`, touching every page of it.
fn set_big(c: &mut BufReader<TcpStream>, mb: usize) {
    let mut req = Vec::new();
    let header = format!("*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n${}\r\n", mb << 20);
    req.extend_from_slice(header.as_bytes());
    c.get_mut().write_all(&req).unwrap();
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..mb {
        c.get_mut().write_all(&chunk).unwrap();
    }
    c.get_mut().write_all(b"\r\n").unwrap();
    assert_eq!(line(c), "+OK\r\n");
}

/// Deletes `big` with `command`; returns (reply time, worst PING wait).
fn measure(port: u16, command: &str, mb: usize) -> (Duration, Duration) {
    let mut c = connect(port);
    set_big(&mut c, mb);
    let stop = Arc::new(AtomicBool::new(false));
    let pinger = {
        let stop = stop.clone();
        let mut p = connect(port);
        std::thread::spawn(move || {
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
    std::thread::sleep(Duration::from_millis(300));
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

fn main() {
    if Command::new("redis-server")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED: redis-server is not on PATH (apt-get install -y redis-server)");
        return;
    }
    let mb: usize = std::env::var("STALL_MB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400);
    println!("\n## Deleting a {mb} MiB string while another client PINGs\n");
    println!("| server | command | reply after (ms) | worst PING (ms) |");
    println!("|---|---|---|---|");
    let lapse = env!("CARGO_BIN_EXE_lapse");
    let servers: [(&str, &str, &[&str]); 2] = [
        ("lapse", lapse, &["--loglevel", "warning"]),
        (
            "redis-server",
            "redis-server",
            &["--save", "", "--appendonly", "no"],
        ),
    ];
    for (name, program, args) in servers {
        for command in ["DEL", "UNLINK"] {
            let (_server, port) = start(program, args);
            let (reply, worst) = measure(port, command, mb);
            println!(
                "| {name} | {command} | {:.1} | {:.1} |",
                reply.as_secs_f64() * 1000.0,
                worst.as_secs_f64() * 1000.0
            );
        }
    }
}
