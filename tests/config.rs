//! lapse as a drop-in for redis-server's configuration: the stock
//! redis.conf of Redis 7.0 (tests/fixtures/redis-7.0.conf, as the Debian
//! package ships it but for four paths), the settings that act on the
//! process and its sockets (daemonize, pidfile, logfile, unixsocket,
//! tcp-backlog, tcp-keepalive), rename-command and include, compared with
//! a real redis-server where one is installed.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{encode, eventually, temp_dir, tool_present, Raw, Server};

const STOCK_CONF: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/redis-7.0.conf");

/// CONFIG GET * as a map.
fn all_settings(r: &mut Raw) -> BTreeMap<String, String> {
    let reply = r.cmd(&["CONFIG", "GET", "*"]);
    let lines: Vec<&str> = reply.lines().skip(1).collect();
    // Bulk strings: a `$n` line, then the text.
    let words: Vec<&str> = lines.iter().skip(1).step_by(2).copied().collect();
    words
        .chunks(2)
        .map(|pair| (pair[0].to_string(), pair[1].to_string()))
        .collect()
}

/// The stock redis.conf starts lapse, and every setting redis-server
/// reports after reading the same file (and flags) lapse reports with the
/// same value.
#[test]
fn the_stock_redis_conf_loads_with_redis_servers_values() {
    let dir = temp_dir("stock-conf");
    let pidfile = dir.join("pid");
    let pid = pidfile.to_str().unwrap();
    // The flags every test redis-server gets, so both read the same.
    let flags: Vec<&str> = common::REDIS_TEST_FLAGS
        .iter()
        .copied()
        .chain(["--bind", "127.0.0.1"])
        .collect();
    let lapse = Server::lapse(&[&[STOCK_CONF][..], &flags[..], &["--pidfile", pid]].concat());
    let mut l = lapse.raw();
    assert_eq!(l.cmd(&["PING"]), "+PONG\r\n");
    let ours = all_settings(&mut l);
    assert!(ours.len() >= 190, "{}", ours.len());
    let redis_pid = dir.join("redis.pid");
    let redis_pid = ["--pidfile", redis_pid.to_str().unwrap()];
    let Some(redis) = Server::redis_with(&[&[STOCK_CONF][..], &flags[..], &redis_pid].concat())
    else {
        return;
    };
    let theirs = all_settings(&mut redis.raw());
    // Where the two differ by design: addresses and files of each process,
    // and who may change protected settings (lapse: local clients).
    let own = ["port", "dir", "pidfile", "enable-protected-configs"];
    let mut differences = Vec::new();
    for (name, value) in &theirs {
        match ours.get(name) {
            None => differences.push(format!("{name}: missing")),
            Some(v) if v != value && !own.contains(&name.as_str()) => {
                differences.push(format!("{name}: lapse '{v}', redis '{value}'"))
            }
            Some(_) => {}
        }
    }
    assert!(differences.is_empty(), "{differences:#?}");
    assert_eq!(
        std::fs::read_to_string(&pidfile).unwrap().trim(),
        lapse.child.id().to_string()
    );
}

/// CONFIG SET of settings lapse keeps without acting on them answers as
/// redis-server does: values checked alike, immutable ones refused alike.
#[test]
fn kept_settings_answer_config_set_as_redis_does() {
    let cases: &[&[&str]] = &[
        &["CONFIG", "SET", "io-threads", "4"],
        &["CONFIG", "SET", "tcp-backlog", "100"],
        &["CONFIG", "SET", "activerehashing", "maybe"],
        &["CONFIG", "SET", "activerehashing", "no"],
        &["CONFIG", "SET", "oom-score-adj", "relative"],
        &["CONFIG", "SET", "oom-score-adj-values", "0 200"],
        &["CONFIG", "SET", "oom-score-adj-values", "0 200 9999"],
        &["CONFIG", "SET", "tls-port", "70000"],
        &["CONFIG", "SET", "repl-diskless-load", "swapdb"],
        &["CONFIG", "SET", "tcp-keepalive", "60"],
        &["CONFIG", "SET", "repl-backlog-size", "1000"],
        &["CONFIG", "GET", "repl-backlog-size"],
        &["CONFIG", "GET", "slave-read-only"],
        &[
            "CONFIG",
            "SET",
            "slave-read-only",
            "no",
            "replica-read-only",
            "yes",
        ],
        // (Several patterns answer in Redis's hash order: one at a time.)
        &["CONFIG", "GET", "activerehashing"],
        &["CONFIG", "GET", "oom-score-adj"],
        &["CONFIG", "GET", "repl-diskless-load"],
    ];
    let mut transcripts = Vec::new();
    for server in Server::lapse_then_redis() {
        let mut r = server.raw();
        let replies: Vec<String> = cases.iter().map(|c| r.cmd(c)).collect();
        transcripts.push(replies);
    }
    assert_eq!(transcripts[0][0], "-ERR CONFIG SET failed (possibly related to argument 'io-threads') - can't set immutable config\r\n");
    if let [ours, theirs] = &transcripts[..] {
        for ((case, a), b) in cases.iter().zip(ours).zip(theirs) {
            assert_eq!(a, b, "{case:?}");
        }
    }
}

/// daemonize, pidfile, logfile, unixsocket and unixsocketperm do what
/// they say: the command returns at once, the server runs detached,
/// writes its pid and log, serves the Unix socket, and SHUTDOWN removes
/// the pid file and the socket.
#[test]
fn daemonized_with_pidfile_logfile_and_unix_socket() {
    let dir = temp_dir("daemonize");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let (pidfile, logfile, socket) = (path("pid"), path("log"), path("sock"));
    let status = Command::new(env!("CARGO_BIN_EXE_lapse"))
        .args(["--port", "0", "--daemonize", "yes", "--save", ""])
        .args(["--pidfile", &pidfile, "--logfile", &logfile])
        .args(["--unixsocket", &socket, "--unixsocketperm", "700"])
        .current_dir(&dir)
        .status()
        .expect("run lapse");
    assert!(status.success());
    assert!(eventually(Duration::from_secs(10), || Path::new(&socket)
        .exists()
        && std::fs::read_to_string(&pidfile)
            .is_ok_and(|p| p.ends_with('\n'))));
    let pid: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);

    let mut unix = std::os::unix::net::UnixStream::connect(&socket).unwrap();
    unix.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut ask = |args: &[&[u8]]| {
        unix.write_all(&encode(args)).unwrap();
        let mut buf = vec![0u8; 4096];
        let n = unix.read(&mut buf).unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    assert_eq!(ask(&[b"PING"]), "+PONG\r\n");
    let info = ask(&[b"CLIENT", b"INFO"]);
    assert!(
        info.contains(&format!("addr={socket}:0 laddr={socket}:0 ")),
        "{info}"
    );
    assert!(info.contains(" flags=U "), "{info}");
    assert!(ask(&[b"CONFIG", b"GET", b"unixsocketperm"]).ends_with("$3\r\n700\r\n"));
    let log = std::fs::read_to_string(&logfile).unwrap();
    assert!(log.contains("Ready to accept connections"), "{log}");
    let _ = ask(&[b"SHUTDOWN", b"NOSAVE"]);
    assert!(eventually(Duration::from_secs(10), || !Path::new(
        &format!("/proc/{pid}")
    )
    .exists()
        || std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.contains(") Z "))));
    assert!(!Path::new(&pidfile).exists(), "the pid file stays");
    assert!(!Path::new(&socket).exists(), "the socket file stays");
}

/// tcp-backlog sets the listen queue and tcp-keepalive the clients'
/// keepalive timer, as `ss` shows them.
#[test]
fn tcp_backlog_and_keepalive_reach_the_sockets() {
    if !tool_present("ss", "the socket options check (package iproute2)") {
        return;
    }
    let server = Server::lapse(&["--tcp-backlog", "77", "--tcp-keepalive", "120"]);
    let port = server.port.to_string();
    let ss = |args: &[&str]| {
        let out = Command::new("ss").args(args).output().expect("ss");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let listening = ss(&["-ltnH", &format!("sport = :{port}")]);
    let backlog = listening.split_whitespace().nth(2);
    assert_eq!(backlog, Some("77"), "{listening}");
    let mut r = server.raw();
    assert_eq!(r.cmd(&["PING"]), "+PONG\r\n");
    let established = ss(&[
        "-tnoH",
        "state",
        "established",
        &format!("( sport = :{port} )"),
    ]);
    // 120 s: "2min" at first, "1min59sec" a moment later.
    let timer = ["timer:(keepalive,2min,", "timer:(keepalive,1min"];
    assert!(
        timer.iter().any(|t| established.contains(t)),
        "{established}"
    );
    // 0 turns it off for clients that connect after.
    assert_eq!(r.cmd(&["CONFIG", "SET", "tcp-keepalive", "0"]), "+OK\r\n");
    let mut later = server.raw();
    assert_eq!(later.cmd(&["PING"]), "+PONG\r\n");
    // The first client's timer shows while its reply is in flight: poll.
    let mut established = String::new();
    let one_timer = eventually(Duration::from_secs(10), || {
        established = ss(&[
            "-tnoH",
            "state",
            "established",
            &format!("( sport = :{port} )"),
        ]);
        established.lines().count() == 2 && established.matches("keepalive").count() == 1
    });
    assert!(one_timer, "{established}");
}

/// rename-command and include in a config file: renamed commands answer
/// only to their new names (in scripts too), removed ones not at all, the
/// replies byte for byte as redis-server's with the same file.
#[test]
fn rename_command_and_include_as_redis_server() {
    let dir = temp_dir("rename-command");
    let inner = dir.join("renames.conf");
    std::fs::write(
        &inner,
        "rename-command GET fetch\nrename-command FLUSHALL \"\"\n",
    )
    .unwrap();
    let conf = dir.join("main.conf");
    std::fs::write(&conf, format!("include {}\nhz 20\n", inner.display())).unwrap();
    let conf = conf.to_str().unwrap();
    let cases: &[&[&str]] = &[
        &["SET", "k", "v"],
        &["GET", "k"],
        &["FETCH", "k"],
        &["fetch", "k"],
        // After the new name, the old one (a repeated name is recognised
        // by its bytes, never by the entry it found).
        &["GET", "k"],
        &["FLUSHALL"],
        &["EVAL", "return redis.call('fetch', 'k')", "0"],
        &["EVAL", "return redis.pcall('get', 'k')", "0"],
        &["CONFIG", "GET", "hz"],
    ];
    let mut servers = vec![Server::lapse(&[conf])];
    servers.extend(Server::redis_with(&[conf]));
    let transcripts: Vec<Vec<String>> = servers
        .iter()
        .map(|s| {
            let mut r = s.raw();
            cases.iter().map(|c| r.cmd(c)).collect()
        })
        .collect();
    assert_eq!(transcripts[0][2], "$1\r\nv\r\n");
    assert!(
        transcripts[0][1].starts_with("-ERR unknown command 'GET'"),
        "{}",
        transcripts[0][1]
    );
    if let [ours, theirs] = &transcripts[..] {
        for ((case, a), b) in cases.iter().zip(ours).zip(theirs) {
            assert_eq!(a, b, "{case:?}");
        }
    }
}

/// The log is written as redis-server writes it (`pid:role dd Mon yyyy
/// hh:mm:ss.mmm <level> message`, with Redis's start and stop lines,
/// which tools wait for), or in Valkey 8's logfmt with an ISO 8601 time.
#[test]
fn the_log_has_redis_lines_and_valkey_logfmt() {
    let dir = common::temp_dir("log-format");
    let log = dir.join("redis.log");
    let server = Server::lapse_logging_to(&log, &[]);
    let pid = server.child.id();
    assert!(server.raw().cmd_closes(&["SHUTDOWN", "NOSAVE"]));
    let mut text = String::new();
    let stopped = eventually(Duration::from_secs(10), || {
        text = std::fs::read_to_string(&log).unwrap_or_default();
        text.contains("bye bye")
    });
    assert!(stopped, "{text}");
    let legacy = |line: &str| {
        let (head, rest) = line.split_once(' ').unwrap_or_default();
        let date: Vec<&str> = rest.splitn(5, ' ').collect();
        head == format!("{pid}:M")
            && date.len() == 5
            && date[0].len() == 2
            && date[1].len() == 3
            && date[2].len() == 4
            && date[3].len() == 12
            && ["*", "#", "-", "."].contains(&date[4].get(..1).unwrap_or_default())
    };
    for wanted in [
        "Redis version=7.0.15",
        "Server initialized",
        "Ready to accept connections",
        "Redis is now ready to exit, bye bye...",
    ] {
        let line = text.lines().find(|l| l.contains(wanted));
        assert!(line.is_some_and(legacy), "{wanted}:\n{text}");
    }
    let log2 = dir.join("valkey.log");
    let server = Server::lapse_logging_to(
        &log2,
        &[
            "--log-format",
            "logfmt",
            "--log-timestamp-format",
            "iso8601",
        ],
    );
    let mut text = String::new();
    let ready = eventually(Duration::from_secs(10), || {
        text = std::fs::read_to_string(&log2).unwrap_or_default();
        text.contains("Ready to accept")
    });
    assert!(ready, "{text}");
    drop(server);
    let ready = text.lines().find(|l| l.contains("Ready to accept"));
    let ready = ready.unwrap_or_default();
    assert!(ready.starts_with("pid="), "{text}");
    assert!(ready.contains(" role=master timestamp=\"20"), "{ready}");
    assert!(
        ready.ends_with("level=notice message=\"Ready to accept connections tcp\""),
        "{ready}"
    );
}

/// Every setting CONFIG GET * shows can be set to its own value (as
/// Redis's suite does, skipping what Redis itself refuses), empty string
/// values included; Redis's hidden test settings show only by name.
#[test]
fn every_setting_takes_its_own_value_and_hidden_ones_show_by_name() {
    let lapse = common::Server::lapse(&[]);
    let mut r = lapse.raw();
    let skipped = [
        "rdbchecksum",
        "daemonize",
        "io-threads-do-reads",
        "tcp-backlog",
        "always-show-logo",
        "syslog-enabled",
        "cluster-enabled",
        "disable-thp",
        "aclfile",
        "unixsocket",
        "pidfile",
        "syslog-ident",
        "appendfilename",
        "appenddirname",
        "supervised",
        "syslog-facility",
        "databases",
        "io-threads",
        "logfile",
        "unixsocketperm",
        "replicaof",
        "slaveof",
        "requirepass",
        "server_cpulist",
        "bio_cpulist",
        "aof_rewrite_cpulist",
        "bgsave_cpulist",
        "set-proc-title",
        "cluster-config-file",
        "cluster-port",
        "oom-score-adj",
        "oom-score-adj-values",
        "enable-protected-configs",
        "enable-debug-command",
        "enable-module-command",
        "dbfilename",
        "dir",
        "socket-mark-id",
    ];
    let mut client = lapse.client();
    let all: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("*")
        .query(&mut client)
        .unwrap();
    let mut refused = Vec::new();
    for pair in all.chunks(2) {
        let (name, value) = (&pair[0], &pair[1]);
        if skipped.contains(&name.as_str()) || name.starts_with("tls-") {
            continue;
        }
        let set: redis::RedisResult<String> = redis::cmd("CONFIG")
            .arg("SET")
            .arg(name)
            .arg(value)
            .query(&mut client);
        if set.is_err() {
            refused.push(format!("{name}={value}: {set:?}"));
        }
    }
    assert!(refused.is_empty(), "{refused:?}");
    assert!(!all
        .iter()
        .any(|n| n == "key-load-delay" || n == "rdb-key-save-delay"));
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "key-load-delay"]),
        "*2\r\n$14\r\nkey-load-delay\r\n$1\r\n0\r\n"
    );
    assert_eq!(r.cmd(&["CONFIG", "GET", "key-load-*"]), "*0\r\n");
    assert!(r
        .cmd(&["CONFIG", "SET", "log-format", "logfmt"])
        .contains("can't set immutable config"));
}

/// CONFIG SET port: a port in use refuses the whole CONFIG SET (nothing
/// of it applies, as Redis rolls back); a free one is listened on at once
/// and the old one closed, connected clients staying. The same refusal as
/// redis-server's.
#[test]
fn config_set_port_rebinds_or_rolls_back_as_redis_does() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let used = busy.local_addr().unwrap().port().to_string();
    let refusal = |server: &common::Server| {
        let mut r = server.raw();
        let reply = r.cmd(&[
            "CONFIG",
            "SET",
            "maxmemory",
            "10000001",
            "port",
            &used,
            "client-query-buffer-limit",
            "10m",
        ]);
        (reply, r.cmd(&["CONFIG", "GET", "maxmemory"]))
    };
    let lapse = common::Server::lapse(&[]);
    let (reply, maxmemory) = refusal(&lapse);
    assert_eq!(
        reply,
        "-ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. Check server logs.\r\n"
    );
    assert_eq!(maxmemory, "*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n");
    if let Some(redis) = common::Server::redis() {
        assert_eq!(refusal(&redis), (reply, maxmemory));
    }
    let mut r = lapse.raw();
    let free = common::free_port().to_string();
    assert_eq!(r.cmd(&["CONFIG", "SET", "port", &free]), "+OK\r\n");
    let mut moved = common::Raw::connect(free.parse().unwrap());
    assert_eq!(moved.cmd(&["PING"]), "+PONG\r\n");
    assert_eq!(common::info_field(&mut moved, "server", "tcp_port"), free);
    assert_eq!(r.cmd(&["PING"]), "+PONG\r\n");
    assert!(std::net::TcpStream::connect(("127.0.0.1", lapse.port)).is_err());
}

/// CONFIG SET loglevel changes what the running server logs: at
/// `nothing` a DEBUG LOG line is left out, back at `notice` it is written.
#[test]
fn config_set_loglevel_takes_effect_at_once() {
    let dir = common::temp_dir("loglevel");
    let log = dir.join("lapse.log");
    let lapse = common::Server::lapse_logging_to(&log, &[]);
    let mut r = lapse.raw();
    assert_eq!(r.cmd(&["CONFIG", "SET", "loglevel", "nothing"]), "+OK\r\n");
    assert_eq!(r.cmd(&["DEBUG", "LOG", "hidden-line"]), "+OK\r\n");
    assert_eq!(r.cmd(&["CONFIG", "SET", "loglevel", "notice"]), "+OK\r\n");
    assert_eq!(r.cmd(&["DEBUG", "LOG", "shown-line"]), "+OK\r\n");
    let written = common::eventually(std::time::Duration::from_secs(10), || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("shown-line"))
    });
    assert!(written);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("hidden-line"), "{text}");
}
