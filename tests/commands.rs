//! Commands over TCP: the ones the differential test cannot compare (random
//! or server-specific replies) and the edge cases named in the issue.

mod common;

use std::time::{Duration, Instant};

use common::{eventually, info_field, Server};

#[test]
fn strings_edge_cases() {
    let server = Server::lapse(&[]);
    let mut r = server.raw();
    assert_eq!(
        r.cmd(&["SET", "k", "v", "KEEPTTL", "EX", "5"]),
        "-ERR syntax error\r\n"
    );
    assert_eq!(
        r.cmd(&["SET", "k", "v", "PX", "-1"]),
        "-ERR invalid expire time in 'set' command\r\n"
    );
    assert_eq!(
        r.cmd(&["SETEX", "k", "0", "v"]),
        "-ERR invalid expire time in 'setex' command\r\n"
    );
    assert_eq!(
        r.cmd(&["PSETEX", "k", "0", "v"]),
        "-ERR invalid expire time in 'psetex' command\r\n"
    );
    assert_eq!(r.cmd(&["SET", "k", "v", "EX", "100"]), "+OK\r\n");
    assert_eq!(r.cmd(&["APPEND", "k", "w"]), ":2\r\n");
    assert_eq!(r.cmd(&["SETRANGE", "k", "4", "x"]), ":5\r\n");
    assert_eq!(r.cmd(&["GET", "k"]), "$5\r\nvw\0\0x\r\n");
    assert_eq!(
        r.cmd(&["TTL", "k"]),
        ":100\r\n",
        "APPEND/SETRANGE keep the TTL"
    );
    assert_eq!(
        r.cmd(&["SETRANGE", "k", "-1", "x"]),
        "-ERR offset is out of range\r\n"
    );
    assert_eq!(
        r.cmd(&["SETRANGE", "k", "536870911", "xx"]),
        "-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"
    );
    assert_eq!(r.cmd(&["SETRANGE", "nokey", "5", ""]), ":0\r\n");
    assert_eq!(r.cmd(&["EXISTS", "nokey"]), ":0\r\n");
    assert_eq!(
        r.cmd(&["GETRANGE", "k", "-100", "100"]),
        "$5\r\nvw\0\0x\r\n"
    );
    assert_eq!(r.cmd(&["GETRANGE", "nokey", "0", "-1"]), "$0\r\n\r\n");
    assert_eq!(r.cmd(&["SET", "n", "10", "EX", "100"]), "+OK\r\n");
    assert_eq!(r.cmd(&["INCRBY", "n", "5"]), ":15\r\n");
    assert_eq!(r.cmd(&["TTL", "n"]), ":100\r\n", "INCR keeps the TTL");
    assert_eq!(r.cmd(&["INCRBYFLOAT", "n", "0.1"]), "$4\r\n15.1\r\n");
    assert_eq!(
        r.cmd(&["INCRBYFLOAT", "n", "abc"]),
        "-ERR value is not a valid float\r\n"
    );
    assert_eq!(r.cmd(&["GETEX", "n", "PERSIST"]), "$4\r\n15.1\r\n");
    assert_eq!(r.cmd(&["TTL", "n"]), ":-1\r\n");
    assert_eq!(r.cmd(&["GETEX", "n", "PX", "5000"]), "$4\r\n15.1\r\n");
    assert_eq!(
        r.cmd(&["GETEX", "n", "PERSIST", "EX", "5"]),
        "-ERR syntax error\r\n"
    );
    assert_eq!(r.cmd(&["GETDEL", "n"]), "$4\r\n15.1\r\n");
    assert_eq!(r.cmd(&["GETDEL", "n"]), "$-1\r\n");
    assert_eq!(
        r.cmd(&["MSET", "a", "1", "b"]),
        "-ERR wrong number of arguments for 'mset' command\r\n"
    );
    assert_eq!(r.cmd(&["MSETNX", "a", "1", "k", "2"]), ":0\r\n");
    assert_eq!(r.cmd(&["MGET", "a", "k"]), "*2\r\n$-1\r\n$5\r\nvw\0\0x\r\n");
}

#[test]
fn expiry_commands_edge_cases() {
    let server = Server::lapse(&[]);
    let mut r = server.raw();
    assert_eq!(r.cmd(&["TTL", "nokey"]), ":-2\r\n");
    assert_eq!(r.cmd(&["PTTL", "nokey"]), ":-2\r\n");
    assert_eq!(r.cmd(&["EXPIRE", "nokey", "10"]), ":0\r\n");
    assert_eq!(r.cmd(&["SET", "k", "v"]), "+OK\r\n");
    assert_eq!(r.cmd(&["EXPIRETIME", "k"]), ":-1\r\n");
    assert_eq!(r.cmd(&["EXPIRE", "k", "10", "GT"]), ":0\r\n");
    assert_eq!(r.cmd(&["EXPIRE", "k", "10", "NX"]), ":1\r\n");
    assert_eq!(r.cmd(&["EXPIRE", "k", "5", "GT"]), ":0\r\n");
    assert_eq!(r.cmd(&["EXPIRE", "k", "5", "LT"]), ":1\r\n");
    let at: i64 = r.cmd(&["PEXPIRETIME", "k"])[1..].trim().parse().unwrap();
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    assert!((at - now_ms - 5_000).abs() < 2_000, "{at} vs {now_ms}");
    assert_eq!(
        r.cmd(&["EXPIRE", "k", "9223372036854775807"]),
        "-ERR invalid expire time in 'expire' command\r\n"
    );
    assert_eq!(
        r.cmd(&["PEXPIREAT", "k", "9223372036854775807", "XX", "NX"]),
        "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n"
    );
    assert_eq!(r.cmd(&["SET", "k", "v2"]), "+OK\r\n");
    assert_eq!(r.cmd(&["TTL", "k"]), ":-1\r\n", "SET clears the TTL");
    assert_eq!(
        r.cmd(&["EXPIREAT", "k", "1"]),
        ":1\r\n",
        "a past time deletes"
    );
    assert_eq!(r.cmd(&["EXISTS", "k"]), ":0\r\n");
    assert_eq!(r.cmd(&["SET", "k", "v", "EX", "50"]), "+OK\r\n");
    assert_eq!(r.cmd(&["PERSIST", "k"]), ":1\r\n");
    assert_eq!(r.cmd(&["TTL", "k"]), ":-1\r\n");
}

#[test]
fn passive_expiry_with_active_cycle_off() {
    let server = Server::lapse(&[]);
    let mut r = server.raw();
    assert_eq!(r.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), "+OK\r\n");
    for i in 0..50 {
        assert_eq!(
            r.cmd(&["SET", &format!("k{i}"), "v", "PX", "50"]),
            "+OK\r\n"
        );
    }
    std::thread::sleep(Duration::from_millis(300));
    // Nobody touched them and the cycle is off: still counted.
    assert_eq!(r.cmd(&["DBSIZE"]), ":50\r\n");
    // A read of one deletes it (and counts it as expired)...
    assert_eq!(r.cmd(&["GET", "k0"]), "$-1\r\n");
    assert_eq!(r.cmd(&["DBSIZE"]), ":49\r\n");
    assert_eq!(info_field(&mut r, "stats", "expired_keys"), "1");
    // ...and so does a write: EXPIRE must not resurrect it.
    assert_eq!(r.cmd(&["EXPIRE", "k1", "100"]), ":0\r\n");
    assert_eq!(r.cmd(&["DBSIZE"]), ":48\r\n");
    assert_eq!(info_field(&mut r, "stats", "expired_keys_passive"), "2");
    // Switching the cycle back on reclaims the rest without any access.
    assert_eq!(r.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]), "+OK\r\n");
    assert!(eventually(Duration::from_secs(5), || r.cmd(&["DBSIZE"]) == ":0\r\n"));
}

#[test]
fn untouched_keys_disappear_within_a_second_of_expiring() {
    let server = Server::lapse(&[]);
    let mut r = server.raw();
    for i in 0..1000 {
        r.send_cmd(&[b"SET", format!("t{i}").as_bytes(), b"v", b"PX", b"100"]);
    }
    for i in 0..500 {
        r.send_cmd(&[b"SET", format!("p{i}").as_bytes(), b"v"]);
    }
    for _ in 0..1500 {
        r.reply();
    }
    let deadline = Instant::now() + Duration::from_millis(100);
    assert!(eventually(Duration::from_secs(5), || r.cmd(&["DBSIZE"]) == ":500\r\n"));
    let lag = Instant::now().saturating_duration_since(deadline);
    assert!(
        lag < Duration::from_secs(2),
        "took {lag:?} after the deadline"
    );
    assert_eq!(info_field(&mut r, "stats", "expired_keys_active"), "1000");
    assert_eq!(
        info_field(&mut r, "keyspace", "db0"),
        "keys=500,expires=0,avg_ttl=0"
    );
}

#[test]
fn keyspace_commands() {
    let server = Server::lapse(&[]);
    let mut r = server.raw();
    assert_eq!(r.cmd(&["RANDOMKEY"]), "$-1\r\n");
    for i in 0..300 {
        r.cmd(&["SET", &format!("key:{i}"), "v"]);
    }
    let key = r.cmd(&["RANDOMKEY"]);
    assert!(key.contains("key:"), "{key}");
    // A full SCAN returns every key at least once.
    let mut con = server.client();
    let mut seen = std::collections::HashSet::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg("key:1*")
            .arg("COUNT")
            .arg(20)
            .query(&mut con)
            .unwrap();
        seen.extend(keys);
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    let expected = (0..300).filter(|i| i.to_string().starts_with('1')).count();
    assert_eq!(seen.len(), expected);
    let (_, typed): (u64, Vec<String>) = redis::cmd("SCAN")
        .arg(0)
        .arg("TYPE")
        .arg("hash")
        .query(&mut con)
        .unwrap();
    assert!(typed.is_empty());
    assert_eq!(r.cmd(&["TYPE", "key:1"]), "+string\r\n");
    assert_eq!(r.cmd(&["TYPE", "nokey"]), "+none\r\n");
    assert_eq!(r.cmd(&["KEYS", "key:29?"]).matches("key:29").count(), 10);
    assert_eq!(r.cmd(&["SELECT", "1"]), "+OK\r\n");
    assert_eq!(r.cmd(&["SET", "other", "v"]), "+OK\r\n");
    assert_eq!(r.cmd(&["FLUSHDB", "BOGUS"]), "-ERR syntax error\r\n");
    assert_eq!(r.cmd(&["FLUSHDB", "ASYNC"]), "+OK\r\n");
    assert_eq!(r.cmd(&["DBSIZE"]), ":0\r\n");
    assert_eq!(r.cmd(&["SELECT", "0"]), "+OK\r\n");
    assert_eq!(r.cmd(&["DBSIZE"]), ":300\r\n");
    assert_eq!(r.cmd(&["FLUSHALL"]), "+OK\r\n");
    assert_eq!(r.cmd(&["DBSIZE"]), ":0\r\n");
}

#[test]
fn connection_commands() {
    let server = Server::lapse(&[]);
    let mut r = server.raw();
    let hello = r.cmd(&["HELLO", "3", "SETNAME", "tester"]);
    assert!(
        hello.starts_with("%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n"),
        "{hello}"
    );
    assert_eq!(r.cmd(&["GET", "nokey"]), "_\r\n");
    assert_eq!(r.cmd(&["CLIENT", "GETNAME"]), "$6\r\ntester\r\n");
    let info = r.cmd(&["CLIENT", "INFO"]);
    assert!(
        info.starts_with('=') && info.contains("name=tester") && info.contains("resp=3"),
        "{info}"
    );
    let mut other = server.raw();
    assert_eq!(other.cmd(&["CLIENT", "SETNAME", "second"]), "+OK\r\n");
    assert_eq!(
        other.cmd(&["CLIENT", "SETNAME", "has space"]),
        "-ERR Client names cannot contain spaces, newlines or special characters.\r\n"
    );
    let list = r.cmd(&["CLIENT", "LIST"]);
    assert!(
        list.contains("name=tester") && list.contains("name=second"),
        "{list}"
    );
    assert!(other.cmd(&["CLIENT", "ID"]).starts_with(':'));
    assert_eq!(
        other.cmd(&["CLIENT", "SETINFO", "LIB-NAME", "mylib"]),
        "+OK\r\n"
    );
    assert_eq!(
        other.cmd(&["CLIENT", "NO-EVICT", "maybe"]),
        "-ERR syntax error\r\n"
    );
    assert_eq!(other.cmd(&["CLIENT", "NO-TOUCH", "on"]), "+OK\r\n");
    assert_eq!(
        other.cmd(&["CLIENT", "BOGUS"]),
        "-ERR unknown subcommand 'BOGUS'. Try CLIENT HELP.\r\n"
    );
    assert_eq!(r.cmd(&["SELECT", "3"]), "+OK\r\n");
    assert_eq!(r.cmd(&["RESET"]), "+RESET\r\n");
    assert_eq!(
        r.cmd(&["GET", "nokey"]),
        "$-1\r\n",
        "RESET goes back to RESP2"
    );
    assert_eq!(r.cmd(&["CLIENT", "GETNAME"]), "$-1\r\n");
    assert_eq!(r.cmd(&["ECHO", "hi"]), "$2\r\nhi\r\n");
    assert_eq!(r.cmd(&["PING", "hi"]), "$2\r\nhi\r\n");
    assert_eq!(
        r.cmd(&["PING", "a", "b"]),
        "-ERR wrong number of arguments for 'ping' command\r\n"
    );
}

#[test]
fn server_commands() {
    let server = Server::lapse(&[]);
    let mut r = server.raw();
    let mut con = server.client();
    let count: i64 = redis::cmd("COMMAND").arg("COUNT").query(&mut con).unwrap();
    let all: Vec<redis::Value> = redis::cmd("COMMAND").query(&mut con).unwrap();
    assert_eq!(all.len() as i64, count);
    let info = r.cmd(&["COMMAND", "INFO", "get", "nosuch"]);
    assert!(
        info.starts_with("*2\r\n*10\r\n$3\r\nget\r\n:2\r\n"),
        "{info}"
    );
    assert!(info.ends_with("*-1\r\n"), "{info}");
    let docs: redis::Value = redis::cmd("COMMAND").arg("DOCS").query(&mut con).unwrap();
    assert!(matches!(
        docs,
        redis::Value::Array(_) | redis::Value::Map(_)
    ));
    let list: Vec<String> = redis::cmd("COMMAND").arg("LIST").query(&mut con).unwrap();
    assert!(list.contains(&"config|get".to_string()) && list.contains(&"set".to_string()));

    let keyspace = r.cmd(&["INFO"]);
    for field in [
        "redis_version:7.0.15",
        "lapse_version:",
        "connected_clients:2",
        "used_memory:",
        "expired_stale_perc:",
        "# Keyspace",
    ] {
        assert!(keyspace.contains(field), "{field} missing from INFO");
    }
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "save"]),
        "*2\r\n$4\r\nsave\r\n$23\r\n3600 1 300 100 60 10000\r\n"
    );
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "appendonly"]),
        "*2\r\n$10\r\nappendonly\r\n$2\r\nno\r\n"
    );
    assert_eq!(r.cmd(&["CONFIG", "SET", "hz", "1000"]), "+OK\r\n");
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "hz"]),
        "*2\r\n$2\r\nhz\r\n$3\r\n500\r\n"
    );
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "hz", "abc"]),
        config_set_failed("hz", "argument couldn't be parsed into an integer")
    );
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "active-expire-effort", "11"]),
        config_set_failed(
            "active-expire-effort",
            "argument must be between 1 and 10 inclusive"
        )
    );
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "databases", "3"]),
        config_set_failed("databases", "can't set immutable config")
    );
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "nosuch", "3"]),
        "-ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'\r\n"
    );
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "hz", "20", "active-expire-effort", "0"])
            .chars()
            .next(),
        Some('-')
    );
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "hz"]),
        "*2\r\n$2\r\nhz\r\n$3\r\n500\r\n",
        "all or nothing"
    );
    let multi = r.cmd(&["CONFIG", "GET", "*expire*"]);
    assert!(multi.contains("active-expire-effort"), "{multi}");
    let time = r.cmd(&["TIME"]);
    assert!(time.starts_with("*2\r\n$10\r\n"), "{time}");
    let started = Instant::now();
    assert_eq!(r.cmd(&["DEBUG", "SLEEP", "0.2"]), "+OK\r\n");
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(
        r.cmd(&["DEBUG", "NOPE"]),
        "-ERR unknown subcommand or wrong number of arguments for 'NOPE'. Try DEBUG HELP.\r\n"
    );
}

fn config_set_failed(name: &str, reason: &str) -> String {
    format!("-ERR CONFIG SET failed (possibly related to argument '{name}') - {reason}\r\n")
}

/// An address that cannot be bound is named in the error, as Redis names
/// it, and lapse exits instead of serving without it.
#[test]
fn a_listen_address_in_use_is_named() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lapse"))
        .args(["--port", &port, "--bind", "127.0.0.1", "--save", ""])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    let expected =
        format!("Could not create server TCP listening socket 127.0.0.1:{port}: bind: Address already in use");
    assert!(text.contains(&expected), "{text}");
}

/// A databases count whose empty databases cannot fit in memory is refused
/// at startup with a message, not an abort while allocating them.
#[test]
fn an_impossible_databases_count_is_refused_clearly() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lapse"))
        .args(["--port", "0", "--databases", "2147483647"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("databases 2147483647 would take"), "{text}");
}

/// Wrong passwords count in INFO stats (`acl_access_denied_auth`, Redis
/// 7.2's field), through AUTH and HELLO alike.
#[test]
fn failed_auth_attempts_are_counted() {
    let server = Server::lapse(&["--requirepass", "secret"]);
    let mut r = server.raw();
    let wrong = "-WRONGPASS invalid username-password pair or user is disabled.\r\n";
    assert_eq!(r.cmd(&["AUTH", "nope"]), wrong);
    assert_eq!(r.cmd(&["AUTH", "default", "nope"]), wrong);
    assert_eq!(r.cmd(&["HELLO", "2", "AUTH", "default", "nope"]), wrong);
    assert_eq!(r.cmd(&["AUTH", "secret"]), "+OK\r\n");
    assert_eq!(info_field(&mut r, "stats", "acl_access_denied_auth"), "3");
}

/// After three wrong passwords a connection's requests wait, longer after
/// each further one (100, 200, 400 ms ...): guessing slows to about one a
/// second per connection; the right password resets it.
#[test]
fn wrong_passwords_slow_the_connection_down() {
    let server = Server::lapse(&["--requirepass", "secret"]);
    let mut r = server.raw();
    let started = Instant::now();
    let mut batch = Vec::new();
    for _ in 0..6 {
        batch.extend(common::encode(&[b"AUTH", b"nope"]));
    }
    batch.extend(common::encode(&[b"AUTH", b"secret"]));
    batch.extend(common::encode(&[b"PING"]));
    r.send(&batch);
    for _ in 0..6 {
        assert_eq!(
            r.reply(),
            b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
        );
    }
    assert_eq!(r.reply(), b"+OK\r\n");
    assert_eq!(r.reply(), b"+PONG\r\n");
    // Paused after the 4th, 5th and 6th failures: at least 100+200+400 ms.
    assert!(
        started.elapsed() >= Duration::from_millis(700),
        "{:?}",
        started.elapsed()
    );
}

/// DEBUG is for whom `enable-debug-command` allows: by default loopback
/// clients (the tests' own), with `no` nobody, with Redis's error; the
/// setting cannot change at run time, as in Redis.
#[test]
fn debug_follows_enable_debug_command() {
    let local = Server::lapse(&[]);
    assert_eq!(local.raw().cmd(&["DEBUG", "SLEEP", "0"]), "+OK\r\n");
    let dir = std::env::temp_dir().join(format!("lapse-debug-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("nodebug.conf");
    std::fs::write(&conf, "enable-debug-command no\n").unwrap();
    let closed = Server::lapse(&[conf.to_str().unwrap()]);
    let mut r = closed.raw();
    assert_eq!(
        r.cmd(&["DEBUG", "SLEEP", "0"]),
        "-ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", \
         you can run it from a local connection, otherwise you need to set this option in the \
         configuration file, and then restart the server.\r\n"
    );
    // Arity comes first, as in Redis.
    assert_eq!(
        r.cmd(&["DEBUG"]),
        "-ERR wrong number of arguments for 'debug' command\r\n"
    );
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "enable-debug-command", "yes"]),
        config_set_failed("enable-debug-command", "can't set immutable config")
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn config_file_and_flags() {
    let dir = std::env::temp_dir().join(format!("lapse-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.conf");
    std::fs::write(
        &good,
        "# test\nhz 42\nactive-expire-effort 3\ndatabases 4\n",
    )
    .unwrap();
    let server = Server::lapse(&[good.to_str().unwrap(), "--hz", "7"]);
    let mut r = server.raw();
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "hz"]),
        "*2\r\n$2\r\nhz\r\n$1\r\n7\r\n",
        "flags win"
    );
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "active-expire-effort"]),
        "*2\r\n$20\r\nactive-expire-effort\r\n$1\r\n3\r\n"
    );
    assert_eq!(r.cmd(&["SELECT", "4"]), "-ERR DB index is out of range\r\n");

    // CONFIG REWRITE keeps the file's lines and comments, writes what
    // changed, and a server started from it has the same settings.
    assert!(info_field(&mut r, "server", "config_file").ends_with("good.conf"));
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "hz", "21", "maxclients", "77"]),
        "+OK\r\n"
    );
    assert_eq!(r.cmd(&["REPLICAOF", "127.0.0.1", "1"]), "+OK\r\n");
    assert_eq!(r.cmd(&["CONFIG", "REWRITE"]), "+OK\r\n");
    let text = std::fs::read_to_string(&good).unwrap();
    assert!(
        text.starts_with("# test\nhz 21\nactive-expire-effort 3\ndatabases 4\n"),
        "{text}"
    );
    for line in [
        "maxclients 77",
        "replicaof 127.0.0.1 1",
        "# Generated by CONFIG REWRITE",
    ] {
        assert!(text.lines().any(|l| l == line), "{line}: {text}");
    }
    assert_eq!(r.cmd(&["REPLICAOF", "NO", "ONE"]), "+OK\r\n");
    assert_eq!(r.cmd(&["CONFIG", "REWRITE"]), "+OK\r\n");
    let text = std::fs::read_to_string(&good).unwrap();
    assert!(!text.contains("replicaof"), "{text}");
    let again = Server::lapse(&[good.to_str().unwrap()]);
    assert_eq!(
        again.raw().cmd(&["CONFIG", "GET", "maxclients"]),
        "*2\r\n$10\r\nmaxclients\r\n$2\r\n77\r\n"
    );
    let no_file = "-ERR The server is running without a config file\r\n";
    assert_eq!(
        Server::lapse(&[]).raw().cmd(&["CONFIG", "REWRITE"]),
        no_file
    );
    if let Some(redis) = Server::redis() {
        assert_eq!(redis.raw().cmd(&["CONFIG", "REWRITE"]), no_file);
    }

    let bad = dir.join("bad.conf");
    std::fs::write(&bad, "hz 10\nfrobnicate yes\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lapse"))
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.conf") && err.contains("line 2") && err.contains("frobnicate"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn redis_cli_works_against_lapse() {
    let Some(_redis) = Server::redis() else {
        return;
    };
    let server = Server::lapse(&[]);
    let port = server.port.to_string();
    let run = |args: &[&str], stdin: &str| {
        use std::io::Write;
        let mut child = std::process::Command::new("redis-cli")
            .args(["-p", &port])
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("redis-cli");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
    };
    assert_eq!(run(&["SET", "cli", "hello"], ""), "OK\n");
    assert_eq!(run(&["GET", "cli"], ""), "hello\n");
    assert_eq!(run(&[], "INCR n\nTTL n\n"), "1\n-1\n");
}

#[test]
fn redis_benchmark_runs_without_errors() {
    let Some(_redis) = Server::redis() else {
        return;
    };
    let server = Server::lapse(&[]);
    let out = std::process::Command::new("redis-benchmark")
        .args([
            "-p",
            &server.port.to_string(),
            "-t",
            "set,get,incr,mset,ping",
            "-q",
            "-n",
            "2000",
        ])
        .output()
        .expect("redis-benchmark");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(!text.to_lowercase().contains("error"), "{text}");
    assert!(text.contains("MSET"), "{text}");
}
