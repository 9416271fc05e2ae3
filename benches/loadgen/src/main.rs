//! A load generator that costs the client little: at -P 16 on a two-core
//! machine redis-benchmark's own work per request (building each request,
//! a hiredis reply object per element) can be more than the server's, so
//! the rate it reports is the client's. This one sends pipelines of one
//! command over many connections from one thread, counts replies without
//! building them, and reports requests per second: the server's rate.
//!
//!   loadgen PORT CONNECTIONS PIPELINE REQUESTS KEYSPACE -- COMMAND ARGS...
//!
//! `__rand_int__` in an argument becomes a random number below KEYSPACE,
//! twelve digits with leading zeros (as redis-benchmark writes it). A
//! measuring tool, not server code: it stops at the first error.
use std::io::{ErrorKind, Read, Write};
use std::time::Instant;

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

/// How many bytes the whole reply at the start of `buf` takes, if it is
/// all there.
fn reply_len(buf: &[u8]) -> Option<usize> {
    let line_end = buf.iter().position(|&b| b == b'\r')?;
    let after = line_end + 2;
    if buf.len() < after {
        return None;
    }
    let number = || -> i64 {
        match &buf[1..line_end] {
            [b'-', ..] => -1,
            digits => digits.iter().fold(0, |n, &d| n * 10 + i64::from(d - b'0')),
        }
    };
    match buf[0] {
        b'+' | b':' | b'_' | b',' | b'#' => Some(after),
        b'-' => panic!("error reply: {}", String::from_utf8_lossy(&buf[..line_end])),
        b'$' => {
            let n = number();
            if n < 0 {
                return Some(after);
            }
            let end = after + n as usize + 2;
            (buf.len() >= end).then_some(end)
        }
        b'*' => {
            let mut at = after;
            for _ in 0..number().max(0) {
                at += reply_len(&buf[at..])?;
            }
            Some(at)
        }
        other => panic!("unknown reply type {}", other as char),
    }
}

/// The command encoded once, with where its `__rand_int__`s go.
struct Template {
    bytes: Vec<u8>,
    /// Offsets of twelve-digit numbers to draw for each request.
    numbers: Vec<usize>,
}

const PLACEHOLDER: &str = "__rand_int__";

impl Template {
    fn new(args: &[String]) -> Template {
        let mut bytes = format!("*{}\r\n", args.len()).into_bytes();
        let mut numbers = Vec::new();
        for arg in args {
            bytes.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            // The placeholder and its twelve digits have the same length.
            let at = bytes.len();
            numbers.extend(arg.match_indices(PLACEHOLDER).map(|(i, _)| at + i));
            bytes.extend_from_slice(arg.replace(PLACEHOLDER, "000000000000").as_bytes());
            bytes.extend_from_slice(b"\r\n");
        }
        Template { bytes, numbers }
    }

    /// One request, each number drawn anew below `keyspace`.
    fn encode(&self, keyspace: u64, rng: &mut u64, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&self.bytes);
        for &at in &self.numbers {
            *rng ^= *rng << 13;
            *rng ^= *rng >> 7;
            *rng ^= *rng << 17;
            let mut n = *rng % keyspace;
            for digit in out[start + at..start + at + 12].iter_mut().rev() {
                *digit = b'0' + (n % 10) as u8;
                n /= 10;
            }
        }
    }
}

struct Conn {
    stream: TcpStream,
    out: Vec<u8>,
    written: usize,
    input: Vec<u8>,
    waiting: usize,
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let dash = argv
        .iter()
        .position(|a| a == "--")
        .expect("usage: see the source");
    let n = |i: usize| -> u64 { argv[i].parse().expect("a number") };
    let (port, connections, pipeline, requests, keyspace) = (n(1), n(2), n(3), n(4), n(5).max(1));
    let command = Template::new(&argv[dash + 1..]);
    let mut poll = Poll::new().expect("poll");
    let mut conns = Vec::new();
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut sent = 0u64;
    let mut done = 0u64;
    let start = Instant::now();
    for i in 0..connections as usize {
        let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().expect("address");
        let std = std::net::TcpStream::connect(addr).expect("connect");
        std.set_nodelay(true).expect("nodelay");
        std.set_nonblocking(true).expect("nonblocking");
        let mut stream = TcpStream::from_std(std);
        poll.registry()
            .register(
                &mut stream,
                Token(i),
                Interest::READABLE | Interest::WRITABLE,
            )
            .expect("register");
        conns.push(Conn {
            stream,
            out: Vec::new(),
            written: 0,
            input: Vec::new(),
            waiting: 0,
        });
    }
    let mut events = Events::with_capacity(1024);
    let mut buf = vec![0u8; 1 << 16];
    while done < requests {
        for conn in &mut conns {
            if conn.waiting == 0 && sent < requests {
                let batch = pipeline.min(requests - sent);
                conn.out.clear();
                conn.written = 0;
                for _ in 0..batch {
                    command.encode(keyspace, &mut rng, &mut conn.out);
                }
                conn.waiting = batch as usize;
                sent += batch;
            }
            while conn.written < conn.out.len() {
                match conn.stream.write(&conn.out[conn.written..]) {
                    Ok(k) => conn.written += k,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) => panic!("write: {e}"),
                }
            }
        }
        poll.poll(&mut events, None).expect("poll");
        for event in events.iter() {
            let conn = &mut conns[event.token().0];
            loop {
                match conn.stream.read(&mut buf) {
                    Ok(0) => panic!("the server closed a connection"),
                    Ok(k) => conn.input.extend_from_slice(&buf[..k]),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) => panic!("read: {e}"),
                }
            }
            let mut at = 0;
            while let Some(len) = reply_len(&conn.input[at..]) {
                at += len;
                conn.waiting -= 1;
                done += 1;
            }
            conn.input.drain(..at);
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    println!("{:.0} requests per second", requests as f64 / seconds);
}
