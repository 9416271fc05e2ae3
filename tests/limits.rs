//! Limits, authentication and protected mode: no client can crash the
//! server, bloat it, or use it without the password.

mod common;

use std::io::Write;
use std::net::{IpAddr, TcpStream, UdpSocket};
use std::time::Duration;

use common::{encode, eventually, info_field, Raw, Server};

fn stat(raw: &mut Raw, field: &str) -> u64 {
    info_field(raw, "stats", field).parse().unwrap()
}

#[test]
fn an_endless_bulk_is_cut_off_at_the_query_buffer_limit() {
    let server = Server::lapse(&["--client-query-buffer-limit", "1mb"]);
    let mut bad = server.raw();
    bad.send(b"*2\r\n$3\r\nSET\r\n$536870912\r\n");
    let chunk = vec![b'x'; 64 * 1024];
    let mut cut = false;
    for _ in 0..64 {
        if bad.reader.get_mut().write_all(&chunk).is_err() {
            cut = true;
            break;
        }
    }
    assert!(cut || bad.is_closed(), "a 4 MB request passed a 1 MB limit");
    let mut good = server.raw();
    assert_eq!(good.cmd(&["PING"]), "+PONG\r\n");
    assert_eq!(
        stat(&mut good, "client_query_buffer_limit_disconnections"),
        1
    );
}

#[test]
fn a_client_that_never_reads_is_disconnected_and_memory_stays_bounded() {
    let server = Server::lapse(&["--client-output-buffer-limit", "normal 8mb 4mb 10"]);
    let mut setup = server.raw();
    let value = vec![b'v'; 1024 * 1024];
    setup.send_cmd(&[b"SET", b"big", &value]);
    assert_eq!(setup.reply(), b"+OK\r\n");
    let rss_before: u64 = info_field(&mut setup, "memory", "used_memory_rss")
        .parse()
        .unwrap();

    // 200 MB of replies asked for, none read.
    let mut greedy = server.raw();
    let mut batch = Vec::new();
    for _ in 0..200 {
        batch.extend(encode(&[b"GET", b"big"]));
    }
    let _ = greedy.reader.get_mut().write_all(&batch);
    assert!(eventually(Duration::from_secs(10), || {
        stat(&mut setup, "client_output_buffer_limit_disconnections") == 1
    }));
    let rss_after: u64 = info_field(&mut setup, "memory", "used_memory_rss")
        .parse()
        .unwrap();
    assert!(
        rss_after < rss_before + 64 * 1024 * 1024,
        "RSS grew from {rss_before} to {rss_after}"
    );
    assert_eq!(setup.cmd(&["PING"]), "+PONG\r\n");
}

#[test]
fn maxclients_refuses_the_next_client() {
    let server = Server::lapse(&["--maxclients", "3"]);
    let mut held: Vec<Raw> = (0..3).map(|_| server.raw()).collect();
    for r in &mut held {
        assert_eq!(r.cmd(&["PING"]), "+PONG\r\n");
    }
    let mut refused = server.raw();
    assert_eq!(refused.reply(), b"-ERR max number of clients reached\r\n");
    assert!(refused.is_closed());
    drop(held.pop());
    assert!(eventually(Duration::from_secs(5), || {
        let mut again = server.raw();
        again.send(b"PING\r\n");
        again.reply() == b"+PONG\r\n"
    }));
    assert!(stat(&mut held[0], "rejected_connections") >= 1);
}

#[test]
fn idle_clients_are_closed_after_timeout() {
    let server = Server::lapse(&["--timeout", "1"]);
    let mut idle = server.raw();
    assert_eq!(idle.cmd(&["PING"]), "+PONG\r\n");
    let mut busy = server.raw();
    for _ in 0..25 {
        assert_eq!(busy.cmd(&["PING"]), "+PONG\r\n");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(idle.is_closed(), "idle client still open after 2.5 s");
    assert_eq!(busy.cmd(&["PING"]), "+PONG\r\n");
}

#[test]
fn authentication() {
    let server = Server::lapse(&["--requirepass", "s3cret"]);
    let mut r = server.raw();
    assert_eq!(r.cmd(&["PING"]), "-NOAUTH Authentication required.\r\n");
    assert_eq!(r.cmd(&["GET", "k"]), "-NOAUTH Authentication required.\r\n");
    assert!(r
        .cmd(&["HELLO", "3"])
        .starts_with("-NOAUTH HELLO must be called with the client already authenticated"));
    assert_eq!(
        r.cmd(&["AUTH", "wrong"]),
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    assert_eq!(
        r.cmd(&["AUTH", "someone", "s3cret"]),
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    assert_eq!(r.cmd(&["AUTH", "s3cret"]), "+OK\r\n");
    assert_eq!(r.cmd(&["PING"]), "+PONG\r\n");
    assert_eq!(r.cmd(&["RESET"]), "+RESET\r\n");
    assert_eq!(r.cmd(&["PING"]), "-NOAUTH Authentication required.\r\n");
    assert!(r
        .cmd(&["HELLO", "3", "AUTH", "default", "s3cret"])
        .starts_with("%7\r\n"));
    assert_eq!(r.cmd(&["PING"]), "+PONG\r\n");

    // A new password applies to new connections at once.
    assert_eq!(r.cmd(&["CONFIG", "SET", "requirepass", "other"]), "+OK\r\n");
    let mut fresh = server.raw();
    assert_eq!(fresh.cmd(&["AUTH", "s3cret"]).chars().next(), Some('-'));
    assert_eq!(fresh.cmd(&["AUTH", "default", "other"]), "+OK\r\n");

    // The redis crate authenticates through the URL.
    let client = redis::Client::open(format!("redis://:other@127.0.0.1:{}/", server.port)).unwrap();
    let mut con = client.get_connection().unwrap();
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");

    let open = Server::lapse(&[]);
    assert_eq!(
        open.raw().cmd(&["AUTH", "x"]),
        "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n"
    );
    assert_eq!(open.raw().cmd(&["AUTH", "default", "anything"]), "+OK\r\n");
}

/// This machine's address on a non-loopback interface, if it has one.
fn outside_address() -> Option<IpAddr> {
    // Connecting a UDP socket sends nothing; it only picks a route.
    let socket = UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[test]
fn protected_mode_refuses_outside_clients_without_a_password() {
    let Some(ip) = outside_address() else {
        let _ = std::io::stderr()
            .write_all(b"SKIPPED protected mode test: this machine has no non-loopback address\n");
        return;
    };
    let connect = |port: u16| {
        let s = TcpStream::connect((ip, port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        Raw {
            reader: std::io::BufReader::new(s),
        }
    };
    let protected = Server::lapse(&["--bind", "0.0.0.0"]);
    let mut outside = connect(protected.port);
    let reply = String::from_utf8(outside.reply()).unwrap();
    assert!(
        reply.starts_with("-DENIED Redis is running in protected mode"),
        "{reply}"
    );
    assert!(outside.is_closed());
    // Loopback clients are still served.
    assert_eq!(Raw::connect(protected.port).cmd(&["PING"]), "+PONG\r\n");

    let with_password = Server::lapse(&["--bind", "0.0.0.0", "--requirepass", "pw"]);
    assert_eq!(connect(with_password.port).cmd(&["AUTH", "pw"]), "+OK\r\n");
    let unprotected = Server::lapse(&["--bind", "0.0.0.0", "--protected-mode", "no"]);
    assert_eq!(connect(unprotected.port).cmd(&["PING"]), "+PONG\r\n");
}

#[test]
fn huge_sizes_and_numbers_get_errors_not_crashes() {
    let server = Server::lapse(&[]);
    let mut r = server.raw();
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "proto-max-bulk-len", "9223372036854775807"]),
        "+OK\r\n"
    );
    // Allowed by the setting, impossible for the allocator: an error, not an abort.
    assert_eq!(
        r.cmd(&["SETRANGE", "k", "4611686018427387904", "x"]),
        "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"
    );
    assert_eq!(
        r.cmd(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 0 1 9223372036854775807"
        ]),
        "+OK\r\n"
    );
    for cmd in [
        &["INCRBY", "n", "9223372036854775807"][..],
        &["INCRBY", "n", "1"],
        &["DECRBY", "n", "-9223372036854775808"],
        &["INCRBYFLOAT", "f", "1e308"],
        &["INCRBYFLOAT", "f", "1e308"],
        &[
            "GETRANGE",
            "k",
            "-9223372036854775808",
            "9223372036854775807",
        ],
        &["EXPIRE", "k", "-9223372036854775808"],
        &["PEXPIREAT", "n", "9223372036854775807"],
        &[
            "SCAN",
            "18446744073709551615",
            "COUNT",
            "9223372036854775807",
        ],
        &["SELECT", "9223372036854775807"],
        &["CLIENT", "LIST", "ID", "9223372036854775807"],
    ] {
        let reply = r.cmd(cmd);
        assert!(!reply.is_empty(), "{cmd:?}");
    }
    assert_eq!(r.cmd(&["PING"]), "+PONG\r\n");
}

#[test]
fn default_bind_is_loopback_v4_and_v6_when_available() {
    let server = Server::lapse(&[]);
    let mut r = server.raw();
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "bind"]),
        "*2\r\n$4\r\nbind\r\n$14\r\n127.0.0.1 -::1\r\n"
    );
    if std::net::TcpListener::bind("[::1]:0").is_ok() {
        let s = TcpStream::connect(("::1", server.port)).expect("IPv6 loopback listener");
        let mut v6 = Raw {
            reader: std::io::BufReader::new(s),
        };
        assert_eq!(v6.cmd(&["PING"]), "+PONG\r\n");
    }
}

/// Under a low open-files limit lapse lowers maxclients to fit (as Redis
/// does), refuses clients past it with Redis's error instead of leaving
/// them queued, refuses CONFIG SET maxclients past what the OS allows, and
/// serves new clients again once others leave: the listener never wedges.
#[test]
fn maxclients_fits_the_open_files_limit_and_the_listener_never_wedges() {
    let server = Server::lapse_with_nofile(64, &[]);
    let mut admin = server.raw();
    assert_eq!(
        admin.cmd(&["CONFIG", "GET", "maxclients"]),
        "*2\r\n$10\r\nmaxclients\r\n$2\r\n32\r\n"
    );
    assert_eq!(
        admin.cmd(&["CONFIG", "SET", "maxclients", "100"]),
        "-ERR CONFIG SET failed (possibly related to argument 'maxclients') - The operating \
         system is not able to handle the specified number of clients, try with 32\r\n"
    );
    // The admin connection is one of the 32.
    let mut clients: Vec<Raw> = (0..31).map(|_| server.raw()).collect();
    for c in &mut clients {
        assert_eq!(c.cmd(&["PING"]), "+PONG\r\n");
    }
    for _ in 0..5 {
        let mut extra = server.raw();
        assert_eq!(extra.reply(), b"-ERR max number of clients reached\r\n");
        assert!(extra.is_closed());
    }
    clients.truncate(10);
    let served = eventually(Duration::from_secs(5), || {
        let mut fresh = server.raw();
        fresh.cmd(&["PING"]) == "+PONG\r\n"
    });
    assert!(served, "no new client was served after others left");
}

/// A client that must still authenticate may send at most 10 arguments of
/// 16 KB each (Redis's limits, its error, then the close), and may have at
/// most 16 KB of replies unsent (481 NOAUTH errors are 16,354 bytes: all
/// answered; 482 close the connection with nothing answered); an AUTH
/// earlier in the same pipeline lifts them for what follows. Compared
/// with redis-server given the same password.
#[test]
fn unauthenticated_clients_get_redis_limits() {
    let lapse = Server::lapse(&["--requirepass", "pw"]);
    let redis = Server::redis();
    if let Some(redis) = &redis {
        assert_eq!(
            redis.raw().cmd(&["CONFIG", "SET", "requirepass", "pw"]),
            "+OK\r\n"
        );
    }
    let servers = std::iter::once(&lapse).chain(redis.as_ref());
    for server in servers {
        let mut r = server.raw();
        r.send_cmd(&[&b"PING"[..]; 11]);
        assert_eq!(
            r.reply(),
            b"-ERR Protocol error: unauthenticated multibulk length\r\n"
        );
        assert!(r.is_closed());
        let mut r = server.raw();
        r.send(b"*2\r\n$4\r\nAUTH\r\n$16385\r\n");
        assert_eq!(
            r.reply(),
            b"-ERR Protocol error: unauthenticated bulk length\r\n"
        );
        assert!(r.is_closed());
        // At the limits, and after AUTH in the same write, all is served.
        let mut r = server.raw();
        let mut batch = encode(&[b"ECHO", &[b'x'; 16 * 1024]]);
        batch.extend(encode(&[b"AUTH", b"pw"]));
        batch.extend(encode(&[b"SET", b"k", &[b'v'; 100_000]]));
        batch.extend(encode(&[b"STRLEN", b"k"]));
        r.send(&batch);
        assert_eq!(r.reply(), b"-NOAUTH Authentication required.\r\n");
        assert_eq!(r.reply(), b"+OK\r\n");
        assert_eq!(r.reply(), b"+OK\r\n");
        assert_eq!(r.reply(), b":100000\r\n");
        let mut r = server.raw();
        r.send(&encode(&[b"PING"]).repeat(481));
        for _ in 0..481 {
            assert_eq!(r.reply(), b"-NOAUTH Authentication required.\r\n");
        }
        let mut r = server.raw();
        r.send(&encode(&[b"PING"]).repeat(482));
        assert!(r.is_closed(), "482 unread NOAUTH errors were kept");
    }
}

/// `maxmemory-clients`: once all clients' buffers together pass it, the
/// biggest client is disconnected (Redis 7.0's client eviction), counted in
/// INFO stats `evicted_clients`; the small ones go on being served.
#[test]
fn maxmemory_clients_evicts_the_biggest_client() {
    let server = Server::lapse(&[]);
    let mut small = server.raw();
    assert_eq!(
        small.cmd(&["CONFIG", "SET", "maxmemory-clients", "1mb"]),
        "+OK\r\n"
    );
    assert_eq!(
        small.cmd(&["CONFIG", "GET", "maxmemory-clients"]),
        "*2\r\n$17\r\nmaxmemory-clients\r\n$7\r\n1048576\r\n"
    );
    for (value, reason) in [
        ("abc", "argument must be a memory or percent value"),
        ("-5", "argument must be a memory or percent value"),
        ("101%", "percentage argument must be less or equal to 100"),
    ] {
        assert_eq!(
            small.cmd(&["CONFIG", "SET", "maxmemory-clients", value]),
            format!(
                "-ERR CONFIG SET failed (possibly related to argument 'maxmemory-clients') - {reason}\r\n"
            )
        );
    }
    // Half of a 3 MB SET: its query buffer alone passes the limit.
    let big_client_is_evicted = || {
        let mut big = server.raw();
        big.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3000000\r\n");
        big.send(&vec![b'x'; 1_500_000]);
        eventually(Duration::from_secs(5), || big.is_closed())
    };
    assert!(
        big_client_is_evicted(),
        "the biggest client was not evicted"
    );
    assert_eq!(small.cmd(&["PING"]), "+PONG\r\n");
    assert_eq!(info_field(&mut small, "stats", "evicted_clients"), "1");
    // A percentage is of maxmemory: 1% of 100 MB, the same 1 MB.
    for (name, value) in [("maxmemory", "100mb"), ("maxmemory-clients", "1%")] {
        assert_eq!(small.cmd(&["CONFIG", "SET", name, value]), "+OK\r\n");
    }
    assert!(big_client_is_evicted(), "1% of maxmemory did not hold");
    assert_eq!(info_field(&mut small, "stats", "evicted_clients"), "2");
}
