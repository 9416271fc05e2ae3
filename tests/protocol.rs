//! The wire: pipelining, split requests, inline commands, protocol errors
//! and the close that follows them, clients vanishing, clean shutdown.

mod common;

use std::io::Write;
use std::time::Duration;

use common::{encode, Server};

#[test]
fn ten_thousand_pipelined_commands_in_one_write() {
    let server = Server::lapse(&[]);
    let mut raw = server.raw();
    let mut batch = Vec::new();
    for i in 0..10_000 {
        batch.extend(encode(&[b"INCR", b"counter"]));
        if i % 1000 == 0 {
            batch.extend(encode(&[b"PING"]));
        }
    }
    raw.send(&batch);
    for i in 0..10_000 {
        assert_eq!(raw.reply(), format!(":{}\r\n", i + 1).into_bytes());
        if i % 1000 == 0 {
            assert_eq!(raw.reply(), b"+PONG\r\n");
        }
    }
}

#[test]
fn request_split_byte_by_byte() {
    let server = Server::lapse(&[]);
    let mut raw = server.raw();
    let request = encode(&[b"SET", b"split", b"a\r\nb"]);
    for b in &request {
        raw.send(std::slice::from_ref(b));
        std::thread::sleep(Duration::from_micros(200));
    }
    assert_eq!(raw.reply(), b"+OK\r\n");
    assert_eq!(raw.cmd(&["GET", "split"]), "$4\r\na\r\nb\r\n");
    for b in b"GET split\r\n" {
        raw.send(std::slice::from_ref(b));
    }
    assert_eq!(raw.reply(), b"$4\r\na\r\nb\r\n");
}

#[test]
fn inline_commands_with_quotes() {
    let server = Server::lapse(&[]);
    let mut raw = server.raw();
    raw.send(b"SET \"key with space\" 'it''s'\r\n");
    assert_eq!(
        raw.reply(),
        b"-ERR Protocol error: unbalanced quotes in request\r\n"
    );
    assert!(raw.is_closed());

    let mut raw = server.raw();
    raw.send(b"SET \"key with space\" \"v\\x41\\n\"\nGET \"key with space\"\r\nPING\n\r\n   \r\nECHO 'it\\'s'\r\n");
    assert_eq!(raw.reply(), b"+OK\r\n");
    assert_eq!(raw.reply(), b"$3\r\nvA\n\r\n");
    assert_eq!(raw.reply(), b"+PONG\r\n");
    assert_eq!(raw.reply(), b"$4\r\nit's\r\n");
}

#[test]
fn each_protocol_error_is_replied_then_closed() {
    let server = Server::lapse(&[]);
    let cases: &[(&[u8], &str)] = &[
        (b"*abc\r\n", "invalid multibulk length"),
        (b"*1048577\r\n", "invalid multibulk length"),
        (b"*1\r\n$-1\r\n", "invalid bulk length"),
        (b"*1\r\n$536870913\r\n", "invalid bulk length"),
        (b"*1\r\nfoo\r\n", "expected '$', got 'f'"),
        (b"SET a \"b\r\n", "unbalanced quotes in request"),
    ];
    for (input, message) in cases {
        let mut raw = server.raw();
        raw.send(b"PING\r\n");
        raw.send(input);
        assert_eq!(raw.reply(), b"+PONG\r\n");
        assert_eq!(
            String::from_utf8(raw.reply()).unwrap(),
            format!("-ERR Protocol error: {message}\r\n")
        );
        assert!(raw.is_closed(), "not closed after {message}");
    }
    let mut raw = server.raw();
    raw.send(&vec![b'x'; 70 * 1024]);
    assert_eq!(
        raw.reply(),
        b"-ERR Protocol error: too big inline request\r\n"
    );
    assert!(raw.is_closed());
    // The server still serves everyone else.
    assert_eq!(server.raw().cmd(&["PING"]), "+PONG\r\n");
}

#[test]
fn unknown_command_keeps_the_connection() {
    let server = Server::lapse(&[]);
    let mut raw = server.raw();
    assert_eq!(
        raw.cmd(&["FOO", "a", "b\r\nc"]),
        "-ERR unknown command 'FOO', with args beginning with: 'a' 'b  c' \r\n"
    );
    assert_eq!(
        raw.cmd(&["GET"]),
        "-ERR wrong number of arguments for 'get' command\r\n"
    );
    assert_eq!(raw.cmd(&["PING"]), "+PONG\r\n");
}

#[test]
fn quit_replies_then_closes() {
    let server = Server::lapse(&[]);
    let mut raw = server.raw();
    raw.send(&[encode(&[b"QUIT"]), encode(&[b"PING"])].concat());
    assert_eq!(raw.reply(), b"+OK\r\n");
    assert!(raw.is_closed());
}

#[test]
fn clients_vanishing_mid_request_do_not_harm_others() {
    let server = Server::lapse(&[]);
    let mut good = server.raw();
    for i in 0..50 {
        let mut bad = server.raw();
        bad.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\npartial");
        if i % 2 == 0 {
            // Ask for a large reply and never read it.
            bad.send(&encode(&[b"CLIENT", b"LIST"]));
        }
        drop(bad);
    }
    assert_eq!(good.cmd(&["SET", "k", "v"]), "+OK\r\n");
    assert_eq!(good.cmd(&["GET", "k"]), "$1\r\nv\r\n");
    // Every vanished client is closed on the server too (a FIN arriving with
    // the last data once went unnoticed and leaked the connection).
    assert!(common::eventually(Duration::from_secs(5), || {
        common::info_field(&mut good, "clients", "connected_clients") == "1"
    }));
}

#[test]
fn a_reader_that_stops_reading_gets_its_data_later() {
    let server = Server::lapse(&[]);
    let mut raw = server.raw();
    let big = vec![b'v'; 1024 * 1024];
    raw.send_cmd(&[b"SET", b"big", &big]);
    assert_eq!(raw.reply(), b"+OK\r\n");
    // Ask for 20 MB of replies before reading any of them.
    let mut batch = Vec::new();
    for _ in 0..20 {
        batch.extend(encode(&[b"GET", b"big"]));
    }
    raw.send(&batch);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(server.raw().cmd(&["PING"]), "+PONG\r\n");
    for _ in 0..20 {
        let reply = raw.reply();
        assert_eq!(reply.len(), big.len() + "$1048576\r\n\r\n".len());
    }
}

#[test]
fn sigterm_flushes_and_exits_zero() {
    let mut server = Server::lapse(&[]);
    let mut raw = server.raw();
    assert_eq!(raw.cmd(&["SET", "a", "1"]), "+OK\r\n");
    let pid = server.child.id() as i32;
    // SAFETY: sending a signal to our own child process.
    let rc = unsafe { libc_kill(pid, 15) };
    assert_eq!(rc, 0);
    let status = server.child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(raw.is_closed());
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

#[test]
fn redis_crate_client_works() {
    let server = Server::lapse(&[]);
    let mut con = server.client();
    let _: () = redis::cmd("SET").arg("x").arg(42).query(&mut con).unwrap();
    let v: i64 = redis::cmd("GET").arg("x").query(&mut con).unwrap();
    assert_eq!(v, 42);
    let mut pipe = redis::pipe();
    for i in 0..100 {
        pipe.cmd("INCRBY").arg("x").arg(i);
    }
    let results: Vec<i64> = pipe.query(&mut con).unwrap();
    assert_eq!(results.last(), Some(&(42 + 4950)));
    let err = redis::cmd("INCR")
        .arg("nope")
        .arg("extra")
        .query::<i64>(&mut con)
        .unwrap_err();
    assert!(
        err.to_string().contains("wrong number of arguments"),
        "{err}"
    );
    let _ = std::io::stdout().flush();
}
