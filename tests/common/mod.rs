//! Test support: start the built `lapse` binary (or a real `redis-server`)
//! on a free port, talk to it with raw sockets or the `redis` crate.
#![allow(dead_code)]

pub mod certs;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running server process, killed on drop.
pub struct Server {
    pub child: Child,
    pub port: u16,
    /// The working directory made for it, if any (removed after it).
    dir: Option<OwnDirectory>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    /// A server a test started itself, listening on `port`.
    pub fn started(child: Child, port: u16) -> Server {
        Server {
            child,
            port,
            dir: None,
        }
    }

    /// Starts lapse with `--port 0` plus `extra` flags; waits for its port.
    /// (A config file in `extra` goes first, where lapse, like
    /// redis-server, expects it; the flags after it win.)
    pub fn lapse(extra: &[&str]) -> Server {
        Server::lapse_from(Server::lapse_command(extra), None)
    }

    /// `lapse(extra)`, its log appended to `log` (for a test that shows
    /// it when it fails).
    pub fn lapse_logging_to(log: &std::path::Path, extra: &[&str]) -> Server {
        Server::lapse_from(Server::lapse_command(extra), Some(log))
    }

    fn lapse_command(extra: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_lapse"));
        let (file, flags) = config_file_first(extra);
        command
            .args(file)
            .args(["--port", "0", "--loglevel", "notice"])
            .args(flags);
        command
    }

    /// Starts lapse with an open-files limit of `nofile` (a shell's
    /// `ulimit -n`), `--port 0` and `extra` flags.
    pub fn lapse_with_nofile(nofile: u32, extra: &[&str]) -> Server {
        Server::lapse_in_shell(&format!("ulimit -n {nofile} &&"), "", extra)
    }

    /// Starts lapse from `sh -c "<setup> exec <wrapper> lapse --port 0 …
    /// <extra>"` (limits, a signal disposition, a wrapper such as
    /// `prlimit … --`): the server is the child process itself.
    pub fn lapse_in_shell(setup: &str, wrapper: &str, extra: &[&str]) -> Server {
        let (file, flags) = config_file_first(extra);
        let file = file.unwrap_or_default();
        let line = format!(
            "{setup} exec {wrapper} {} {file} --port 0 --loglevel notice {}",
            env!("CARGO_BIN_EXE_lapse"),
            flags.join(" ")
        );
        let mut command = Command::new("sh");
        command.args(["-c", &line]);
        Server::lapse_from(command, None)
    }

    /// Starts `command` (lapse, logging to stdout) and waits for its port;
    /// its log goes on to `log` when one is given.
    fn lapse_from(mut command: Command, log: Option<&std::path::Path>) -> Server {
        let dir = OwnDirectory::new();
        let mut child = command
            .current_dir(&dir.0)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn lapse");
        let mut copy = log.map(|path| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .expect("open the log copy")
        });
        let mut keep = move |line: &str| {
            if let Some(file) = copy.as_mut() {
                let _ = writeln!(file, "{line}");
            }
        };
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let port = loop {
            let line = lines
                .next()
                .expect("lapse exited before listening")
                .expect("read lapse output");
            keep(&line);
            if let Some(rest) = line.split("listening on ").nth(1) {
                // A logfmt line ends its message with a quote.
                let rest = rest.trim().trim_end_matches('"');
                let port = rest.rsplit(':').next().unwrap().parse().unwrap();
                break port;
            }
        };
        // Keep draining the log so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.map_while(Result::ok).for_each(|l| keep(&l)));
        Server {
            child,
            port,
            dir: Some(dir),
        }
    }

    /// Starts a real redis-server on a free port when one is installed.
    ///
    /// Without one: in CI (`CI` set) this fails the test; elsewhere it says
    /// loudly that the comparison is skipped and returns `None`.
    pub fn redis() -> Option<Server> {
        Server::redis_with(&[])
    }

    /// `redis()` with `extra` arguments (a `--dir`, say; a config file
    /// first, as in `lapse`).
    pub fn redis_with(extra: &[&str]) -> Option<Server> {
        if !tool_present("redis-server", "the comparison with Redis") {
            return None;
        }
        let (file, extra) = config_file_first(extra);
        for _ in 0..10 {
            let port = free_port();
            let dir = OwnDirectory::new();
            let child = Command::new("redis-server")
                .current_dir(&dir.0)
                .args(file)
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args(REDIS_TEST_FLAGS)
                .args(extra)
                .stdout(Stdio::null())
                .spawn()
                .expect("spawn redis-server");
            let mut server = Server {
                child,
                port,
                dir: Some(dir),
            };
            // The port was free when picked; another process (a lapse of a
            // test running beside, which binds port 0) may have taken it
            // before this redis-server bound it: then it exited, and what
            // answers is not it. Retry with another port.
            if wait_for_port(port, Duration::from_secs(5)) && !answers_as(port, server.child.id()) {
                let _ = server.child.kill();
                let _ = server.child.wait();
                continue;
            }
            if wait_for_port(port, Duration::from_secs(5)) {
                // redis-server answers while it loads its files (DEBUG
                // DIGEST too, over half the data): wait for the end.
                let mut r = server.raw();
                let loaded = eventually(Duration::from_secs(30), || {
                    info_field(&mut r, "persistence", "loading") == "0"
                });
                assert!(loaded, "redis-server is still loading");
                return Some(server);
            }
        }
        panic!("could not start redis-server");
    }

    /// A lapse, and a redis-server beside it where one is installed: the
    /// same steps run on each, their replies compared.
    pub fn lapse_then_redis() -> Vec<Server> {
        let mut servers = vec![Server::lapse(&[])];
        servers.extend(Server::redis());
        servers
    }

    pub fn raw(&self) -> Raw {
        Raw::connect(self.port)
    }

    pub fn client(&self) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .unwrap()
            .get_connection()
            .expect("connect with the redis crate")
    }
}

/// What every test redis-server is started with (besides its port): no
/// files, DEBUG allowed, as lapse's tests run.
pub const REDIS_TEST_FLAGS: [&str; 6] = [
    "--save",
    "",
    "--appendonly",
    "no",
    "--enable-debug-command",
    "yes",
];

/// Runs `scenario` on a lapse and on a redis-server (where installed) and
/// asserts they saw the same, step by step; returns lapse's steps.
pub fn same_on_lapse_and_redis(scenario: fn(&Server) -> Vec<String>) -> Vec<String> {
    let mut runs: Vec<Vec<String>> = Vec::new();
    for server in Server::lapse_then_redis() {
        runs.push(scenario(&server));
    }
    if let [lapse, redis] = &runs[..] {
        for (n, (a, b)) in lapse.iter().zip(redis).enumerate() {
            assert_eq!(a, b, "step {n}");
        }
        assert_eq!(lapse.len(), redis.len());
    }
    runs.swap_remove(0)
}

/// Whether the server on `port` is the process `pid` (INFO's
/// `process_id`), without panicking on a connection that fails.
fn answers_as(port: u16, pid: u32) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream.write_all(b"INFO server\r\n").is_err() {
        return false;
    }
    let (mut seen, mut buf) = (Vec::new(), [0u8; 4096]);
    let wanted = format!("process_id:{pid}\r\n");
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buf[..n]);
        if String::from_utf8_lossy(&seen).contains(&wanted) {
            return true;
        }
        if seen.len() > 64 * 1024
            || String::from_utf8_lossy(&seen).contains("process_id:") && seen.ends_with(b"\r\n\r\n")
        {
            break;
        }
    }
    false
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_for_port(port: u16, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// A server's arguments split as both servers take them: a config file
/// (the first argument, unless it is a flag), then the flags.
fn config_file_first<'a, 'b>(args: &'b [&'a str]) -> (Option<&'a str>, &'b [&'a str]) {
    match args.split_first() {
        Some((first, rest)) if !first.starts_with("--") => (Some(*first), rest),
        _ => (None, args),
    }
}

/// A fresh, empty working directory for one server, removed after it: no
/// `dump.rdb` lying around is loaded at its start (not even one a process
/// that had the same pid left), and nothing it saves lands in the
/// repository.
struct OwnDirectory(std::path::PathBuf);

impl OwnDirectory {
    fn new() -> OwnDirectory {
        static STARTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("lapse-server-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("server working directory");
        OwnDirectory(dir)
    }
}

impl Drop for OwnDirectory {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Waits (up to 10 s) until the server `r` talks to reports `n` blocked
/// clients (INFO `blocked_clients`); whether it did.
pub fn blocked_clients_reach(r: &mut Raw, n: usize) -> bool {
    let n = n.to_string();
    eventually(Duration::from_secs(10), || {
        info_field(r, "clients", "blocked_clients") == n
    })
}

/// Polls `check` until it returns true or `timeout` passes.
pub fn eventually(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if check() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A raw RESP connection: send bytes, read whole replies as bytes.
pub struct Raw {
    pub reader: BufReader<TcpStream>,
}

impl Raw {
    pub fn connect(port: u16) -> Raw {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        Raw {
            reader: BufReader::new(stream),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.reader.get_mut().write_all(bytes).expect("send");
    }

    /// Sends one command as a multibulk request.
    pub fn send_cmd(&mut self, args: &[&[u8]]) {
        self.send(&encode(args));
    }

    /// Sends a command and returns its reply as text (lossy).
    pub fn cmd(&mut self, args: &[&str]) -> String {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.send_cmd(&args);
        String::from_utf8_lossy(&self.reply()).into_owned()
    }

    /// Reads exactly one complete reply, returning its raw bytes.
    pub fn reply(&mut self) -> Vec<u8> {
        let mut out = Vec::new();
        read_value(&mut self.reader, &mut out);
        out
    }

    /// Sends a command and returns whether the server closed the
    /// connection instead of answering.
    pub fn cmd_closes(&mut self, args: &[&str]) -> bool {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let _ = self.reader.get_mut().write_all(&encode(&args));
        self.is_closed()
    }

    /// True if the server closed the connection (EOF) within the timeout.
    pub fn is_closed(&mut self) -> bool {
        let mut buf = [0u8; 64];
        matches!(self.reader.read(&mut buf), Ok(0) | Err(_))
    }
}

pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    lapse::protocol::encode_request(args, &mut out);
    out
}

fn read_value(r: &mut BufReader<TcpStream>, out: &mut Vec<u8>) {
    let mut first = [0u8; 1];
    r.read_exact(&mut first).expect("read reply type");
    out.push(first[0]);
    let line = {
        let mut tmp = Vec::new();
        let text = read_line_rest(r, &mut tmp);
        out.extend_from_slice(&tmp);
        text
    };
    match first[0] {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => {}
        b'$' | b'=' | b'!' => {
            let len: i64 = line.parse().unwrap();
            if len >= 0 {
                let mut body = vec![0u8; len as usize + 2];
                r.read_exact(&mut body).unwrap();
                out.extend_from_slice(&body);
            }
        }
        b'*' | b'~' | b'>' => {
            let n: i64 = line.parse().unwrap();
            for _ in 0..n.max(0) {
                read_value(r, out);
            }
        }
        b'%' | b'|' => {
            let n: i64 = line.parse().unwrap();
            for _ in 0..n * 2 {
                read_value(r, out);
            }
        }
        other => panic!("unknown reply type {:?}", other as char),
    }
}

fn read_line_rest(r: &mut BufReader<TcpStream>, out: &mut Vec<u8>) -> String {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line).expect("read reply line");
    assert!(line.ends_with(b"\r\n"), "bad line: {line:?}");
    out.extend_from_slice(&line);
    String::from_utf8_lossy(&line[..line.len() - 2]).into_owned()
}

/// Reads an INFO field as text.
pub fn info_field(raw: &mut Raw, section: &str, field: &str) -> String {
    let text = raw.cmd(&["INFO", section]);
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in INFO {section}: {text}"))
        .trim()
        .to_string()
}

/// One request and the exact reply redis-server gave it (recorded).
pub type Case = (&'static [&'static [u8]], &'static [u8]);

/// Runs recorded cases in order on one connection; every reply must be
/// the recorded one, byte for byte.
pub fn replay_cases(r: &mut Raw, cases: &[Case], who: &str) {
    for (args, expected) in cases {
        r.send_cmd(args);
        let got = r.reply();
        let shown: Vec<_> = args.iter().map(|a| String::from_utf8_lossy(a)).collect();
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(expected),
            "{who}: {shown:?}"
        );
        assert_eq!(got, *expected, "{who}: exact bytes of {shown:?}");
    }
}

/// One step of a recorded multi-client transcript.
pub enum Step {
    /// A client sends a command; the frames it reads back (a SUBSCRIBE of
    /// two channels answers with two).
    Cmd(usize, &'static [&'static str], &'static [u8]),
    /// A client sends a command and reads no reply yet (it blocks).
    Send(usize, &'static [&'static str]),
    /// A client sends a command whose reply varies (HELLO): read, not
    /// compared.
    Skip(usize, &'static [&'static str]),
    /// A client reads frames that arrived for it (a message, a wake-up).
    Read(usize, &'static [u8]),
    /// Wait this many ms (for TTLs to pass, for blocked clients to settle).
    Sleep(u64),
}

/// Reads whole frames until they hold as many bytes as `expected`.
fn read_frames(r: &mut Raw, expected: &[u8]) -> Vec<u8> {
    let mut got = Vec::new();
    while got.len() < expected.len() {
        got.extend(r.reply());
    }
    got
}

/// Replays a transcript with `clients` connections to `port`.
pub fn replay_transcript(port: u16, clients: usize, steps: &[Step], who: &str) {
    let mut conns: Vec<Raw> = (0..clients).map(|_| Raw::connect(port)).collect();
    for (n, step) in steps.iter().enumerate() {
        let send = |conns: &mut Vec<Raw>, client: usize, args: &[&str]| {
            let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            conns[client].send_cmd(&args);
        };
        let (client, expected) = match step {
            Step::Sleep(ms) => {
                std::thread::sleep(Duration::from_millis(*ms));
                continue;
            }
            Step::Send(client, args) => {
                send(&mut conns, *client, args);
                continue;
            }
            Step::Skip(client, args) => {
                send(&mut conns, *client, args);
                conns[*client].reply();
                continue;
            }
            Step::Cmd(client, args, expected) => {
                send(&mut conns, *client, args);
                (*client, *expected)
            }
            Step::Read(client, expected) => (*client, *expected),
        };
        let got = read_frames(&mut conns[client], expected);
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(expected),
            "{who}, step {n}, client {client}"
        );
    }
}

/// A fresh directory for one test's files.
pub fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lapse-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every type, small (packed) and big, integer-like and binary members,
/// deadlines, several databases.
pub fn populate(r: &mut Raw) {
    let ok = |reply: String| assert!(!reply.starts_with('-'), "{reply}");
    ok(r.cmd(&["SET", "s", "plain"]));
    ok(r.cmd(&["SET", "n", "12345", "EX", "1000"]));
    ok(r.cmd(&["SET", "big", &"x".repeat(100_000)]));
    ok(r.cmd(&["RPUSH", "l", "a", "1", "-7", ""]));
    ok(r.cmd(&["SADD", "ints", "1", "2", "3", "-40"]));
    ok(r.cmd(&["SADD", "strs", "a", "b\u{e9}", "007"]));
    ok(r.cmd(&["ZADD", "z", "1", "a", "2.5", "b", "-inf", "c", "1e300", "d"]));
    ok(r.cmd(&["HSET", "h", "f", "v", "n", "1"]));
    // Integers at each listpack and intset width, scores that are whole,
    // fractional, huge and negative zero.
    let edges = [
        "0",
        "127",
        "128",
        "-1",
        "-4096",
        "4095",
        "4096",
        "-32768",
        "32768",
        "8388607",
        "-8388609",
        "2147483648",
        "-9223372036854775808",
        "9223372036854775807",
        "007",
        "-0",
    ];
    for (i, n) in edges.iter().enumerate() {
        ok(r.cmd(&["HSET", "hedges", n, &i.to_string()]));
        ok(r.cmd(&["RPUSH", "ledges", n]));
    }
    ok(r.cmd(&["SADD", "wide", "1", "-70000"]));
    ok(r.cmd(&["SADD", "widest", "1", "9223372036854775807"]));
    for (score, m) in [
        ("1.5", "a"),
        ("-0", "b"),
        ("1e300", "c"),
        ("4611686018427387904", "d"),
        ("-3", "e"),
    ] {
        ok(r.cmd(&["ZADD", "zedges", score, m]));
    }
    ok(r.cmd(&["PEXPIRE", "h", "500000"]));
    for i in 0..700 {
        let (m, v) = (format!("member{i}"), format!("{i}"));
        r.cmd(&["HSET", "bighash", &m, &v]);
        r.cmd(&["SADD", "bigset", &m]);
        r.cmd(&["ZADD", "bigz", &v, &m]);
        r.cmd(&["RPUSH", "biglist", &m]);
    }
    // Streams: several nodes, entries with other fields than the node's
    // first, deleted entries, integer-looking values, an emptied stream.
    for i in 1..=250 {
        let (id, v) = (format!("{i}-{}", i % 3), format!("{}", i * 7));
        let fields: Vec<&str> = if i % 10 == 0 {
            vec!["XADD", "st", &id, "other", "x", "f2", &v]
        } else {
            vec!["XADD", "st", &id, "f", &v, "g", "text"]
        };
        ok(r.cmd(&fields));
    }
    ok(r.cmd(&["XDEL", "st", "5-2", "100-1", "101-2"]));
    ok(r.cmd(&["XADD", "stbig", "1-1", "f", &"y".repeat(3000)]));
    ok(r.cmd(&["XADD", "stbig", "2-0", "f", &"y".repeat(3000), "h", "1"]));
    ok(r.cmd(&["XADD", "stempty", "7-7", "f", "v"]));
    ok(r.cmd(&["XDEL", "stempty", "7-7"]));
    ok(r.cmd(&[
        "XSETID",
        "stempty",
        "9-0",
        "ENTRIESADDED",
        "3",
        "MAXDELETEDID",
        "8-0",
    ]));
    // Consumer groups: pending entries, an acknowledged one, consumers
    // with and without pending entries, a group with no entries read.
    ok(r.cmd(&["XGROUP", "CREATE", "st", "g1", "0"]));
    ok(r.cmd(&[
        "XREADGROUP",
        "GROUP",
        "g1",
        "alice",
        "COUNT",
        "5",
        "STREAMS",
        "st",
        ">",
    ]));
    ok(r.cmd(&[
        "XREADGROUP",
        "GROUP",
        "g1",
        "bob",
        "COUNT",
        "2",
        "STREAMS",
        "st",
        ">",
    ]));
    ok(r.cmd(&["XACK", "st", "g1", "2-2"]));
    ok(r.cmd(&["XGROUP", "CREATE", "st", "g2", "$", "ENTRIESREAD", "-1"]));
    ok(r.cmd(&["XGROUP", "CREATECONSUMER", "st", "g2", "carol"]));
    ok(r.cmd(&["SELECT", "5"]));
    ok(r.cmd(&["SET", "elsewhere", "x"]));
    ok(r.cmd(&["SELECT", "0"]));
    ok(r.cmd(&[
        "FUNCTION",
        "LOAD",
        "#!lua name=mylib\nredis.register_function('f', function() return 1 end)",
    ]));
}

/// A config file for a server whose files go to `dir`, plus `extra`.
pub fn conf_in(dir: &std::path::Path, extra: &str) -> std::path::PathBuf {
    let conf = dir.join("lapse.conf");
    std::fs::write(&conf, format!("dir {}\n{extra}", dir.display())).unwrap();
    conf
}

/// Runs a Redis tool (`redis-check-rdb`, `redis-check-aof`) with `args`.
/// Without it: in CI this fails the test; elsewhere it says loudly that
/// the check is skipped and returns `None`.
pub fn run_tool(tool: &str, args: &[&std::ffi::OsStr]) -> Option<std::process::Output> {
    match Command::new(tool).args(args).output() {
        Ok(out) => Some(out),
        Err(e) if std::env::var_os("CI").is_none() => {
            let banner =
                format!("\n!!! SKIPPED: {tool} is not on PATH ({e}); the check did not run !!!\n");
            let _ = std::io::stderr().lock().write_all(banner.as_bytes());
            None
        }
        Err(e) => panic!("{tool} is required in CI (.ci/run installs it): {e}"),
    }
}

/// Starts lapse with `args` and expects it to refuse to start; returns
/// what it logged.
pub fn lapse_refuses(args: &[&str]) -> String {
    let dir = OwnDirectory::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_lapse"))
        .args(args)
        .args(["--port", "0"])
        .current_dir(&dir.0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run lapse");
    // A server that did start is stopped (and the test fails below).
    if !eventually(Duration::from_secs(20), || {
        child.try_wait().is_ok_and(|s| s.is_some())
    }) {
        let _ = child.kill();
    }
    let out = child.wait_with_output().expect("lapse output");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "lapse started: {text}");
    text
}

/// Effects a copy (the AOF, a replica) must reproduce: transactions, scripts, expiry, deletes,
/// several databases, a lazily expired key.
pub fn more_writes(r: &mut Raw) {
    let ok = |reply: String| assert!(!reply.starts_with('-'), "{reply}");
    ok(r.cmd(&["MULTI"]));
    ok(r.cmd(&["INCR", "counter"]));
    ok(r.cmd(&["LPUSH", "queue", "job1", "job2"]));
    ok(r.cmd(&["EXEC"]));
    ok(r.cmd(&[
        "EVAL",
        "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('INCRBYFLOAT', KEYS[2], '1.5')",
        "2",
        "fromlua",
        "f",
        "v",
    ]));
    ok(r.cmd(&["SPOP", "strs"]));
    ok(r.cmd(&["SET", "brief", "x", "PX", "1"]));
    std::thread::sleep(Duration::from_millis(5));
    ok(r.cmd(&["GET", "brief"]));
    ok(r.cmd(&["EXPIRE", "s", "5000"]));
    ok(r.cmd(&["DEL", "big"]));
    ok(r.cmd(&["SELECT", "3"]));
    ok(r.cmd(&["HSET", "db3", "f", "v"]));
    ok(r.cmd(&["SELECT", "0"]));
    ok(r.cmd(&["SWAPDB", "3", "4"]));
    // Stream group effects: deliveries, NOACK reads, claims, trims.
    ok(r.cmd(&["XADD", "st", "MAXLEN", "~", "200", "*", "f", "late"]));
    ok(r.cmd(&["XREADGROUP", "GROUP", "g2", "dave", "STREAMS", "st", ">"]));
    ok(r.cmd(&[
        "XREADGROUP",
        "GROUP",
        "g1",
        "erin",
        "NOACK",
        "COUNT",
        "3",
        "STREAMS",
        "st",
        ">",
    ]));
    ok(r.cmd(&["XCLAIM", "st", "g1", "frank", "0", "1-1", "3-0"]));
    ok(r.cmd(&["XAUTOCLAIM", "st", "g1", "gina", "0", "0", "COUNT", "2"]));
    ok(r.cmd(&["XGROUP", "DELCONSUMER", "st", "g1", "bob"]));
}

/// What a stream's consumer groups hold, as replies that carry no times:
/// to compare two servers' copies (DEBUG DIGEST covers entries only).
/// Without `entries-read` and `lag`: Redis 7.0 propagates a delivery as
/// an XCLAIM with LASTID, which moves a replica's group but not its read
/// counter, so its own replicas disagree there too.
pub fn stream_groups(r: &mut Raw) -> String {
    let info = r.cmd(&["XINFO", "GROUPS", "st"]);
    let mut lines = info.split("\r\n");
    let mut out = String::new();
    while let Some(line) = lines.next() {
        out.push_str(line);
        out.push('\n');
        if line == "entries-read" || line == "lag" {
            // The value: `:n`, or a null.
            lines.next();
        }
    }
    for group in ["g1", "g2"] {
        out += &r.cmd(&["XPENDING", "st", group]);
    }
    out
}

/// The packages' folder, or `None` (with a loud message outside CI) when
/// they or Python are missing.
pub fn python_deps() -> Option<&'static std::path::Path> {
    let deps = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/pydeps"));
    let python = Command::new("python3").arg("--version").output();
    let ready = python.is_ok_and(|o| o.status.success())
        && deps.join("redis").is_dir()
        && deps.join("huey").is_dir();
    if ready {
        return Some(deps);
    }
    if std::env::var_os("CI").is_some() {
        panic!(
            "python3 with redis and huey in .ci/pydeps is required in CI (.ci/run installs them)"
        );
    }
    let banner = "\n\
        !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
        !!! SKIPPED: the client-library test needs python3 and the packages  !!!\n\
        !!! in .ci/pydeps: pip3 install --target .ci/pydeps redis huey       !!!\n\
        !!! (the versions are in .ci/run)                                    !!!\n\
        !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n";
    let _ = std::io::stderr().lock().write_all(banner.as_bytes());
    None
}

/// The folder the node packages (node-redis, bullmq) are installed in,
/// or `None` (loudly outside CI) when node or a package is missing.
pub fn node_deps() -> Option<std::path::PathBuf> {
    let deps = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/nodedeps"));
    if tool_present("node", "the node client tests")
        && deps.join("node_modules/redis").is_dir()
        && deps.join("node_modules/bullmq").is_dir()
    {
        return Some(deps.to_path_buf());
    }
    if std::env::var_os("CI").is_some() {
        panic!("node-redis and bullmq in .ci/nodedeps are required in CI (.ci/run installs them)");
    }
    eprintln!("\n!!! SKIPPED: node-redis or bullmq is not in .ci/nodedeps: npm install --prefix .ci/nodedeps redis@5.12.1 bullmq@5.81.5 !!!\n");
    None
}

/// Whether `tool` runs (`<tool> --version`). Without it: in CI this fails
/// the test; elsewhere it says loudly that `what` is skipped.
pub fn tool_present(tool: &str, what: &str) -> bool {
    tool_answers(tool, "--version", what)
}

/// `tool_present` for a tool asked for its version another way
/// (`openssl version`).
pub fn tool_answers(tool: &str, probe: &str, what: &str) -> bool {
    let found = Command::new(tool)
        .arg(probe)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        if std::env::var_os("CI").is_some() {
            panic!("{tool} is required in CI (.ci/run installs it) but is not on PATH");
        }
        // Written to the stderr handle directly: the test harness captures
        // eprintln! of passing tests, and this must be seen.
        let rule = "!".repeat(72);
        let banner = format!(
            "\n{rule}\n!!! SKIPPED: {tool} is not on PATH; {what} did not run.\n\
             !!! Install it: apt-get install -y {tool} (.ci/run installs it)\n{rule}\n"
        );
        let _ = std::io::stderr().lock().write_all(banner.as_bytes());
    }
    found
}

/// The integer at `key` (GET), `None` when it is missing or not one.
pub fn get_int(r: &mut Raw, key: &str) -> Option<i64> {
    r.cmd(&["GET", key]).lines().nth(1)?.parse().ok()
}

/// A field of INFO replication, or `None` where the connection failed:
/// Sentinel's `CLIENT KILL TYPE normal` may close it at any time.
pub fn replication_field(port: u16, field: &str) -> Option<String> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).ok()?;
    let mut conn = client.get_connection().ok()?;
    let text: String = redis::cmd("INFO")
        .arg("replication")
        .query(&mut conn)
        .ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .map(|v| v.trim().to_string())
}

/// The next `n` keyspace notifications' event names (a subscribed
/// connection's messages).
pub fn event_names(events: &mut Raw, n: usize) -> Vec<String> {
    (0..n)
        .map(|_| {
            let message = String::from_utf8_lossy(&events.reply()).into_owned();
            message
                .rsplit("\r\n")
                .nth(1)
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// DUMPs `key` and RESTOREs the payload as `to`.
pub fn dump_and_restore(r: &mut Raw, key: &str, to: &str) {
    r.send_cmd(&[b"DUMP", key.as_bytes()]);
    let dump = r.reply();
    let header_end = dump.windows(2).position(|w| w == b"\r\n").unwrap();
    let payload = &dump[header_end + 2..dump.len() - 2];
    r.send_cmd(&[b"RESTORE", to.as_bytes(), b"0", payload]);
    assert_eq!(r.reply(), b"+OK\r\n", "RESTORE {to}");
}

/// Runs BGREWRITEAOF to its end; the new base's text (a base written as
/// commands, `aof-use-rdb-preamble no`, in `dir`).
pub fn rewritten_aof_base(r: &mut Raw, dir: &std::path::Path) -> String {
    assert!(r.cmd(&["BGREWRITEAOF"]).starts_with('+'));
    assert!(eventually(Duration::from_secs(60), || {
        info_field(r, "persistence", "aof_rewrite_in_progress") == "0"
            && info_field(r, "persistence", "aof_rewrite_scheduled") == "0"
    }));
    std::fs::read_dir(dir.join("appendonlydir"))
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().contains(".base.aof"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .expect("a base written as commands")
}
