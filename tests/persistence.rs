//! RDB files: what SAVE writes must pass `redis-check-rdb` and load into a
//! real redis-server holding exactly the same data (DEBUG DIGEST, which
//! both servers compute alike), function libraries included.
//!
//! Needs `redis-server` and `redis-check-rdb` (see `Server::redis`).

mod common;

use std::process::Command;

use common::{Raw, Server};

/// A fresh directory for one test's files.
fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("lapse-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every type, small (packed) and big, integer-like and binary members,
/// deadlines, several databases.
fn populate(r: &mut Raw) {
    let ok = |reply: String| assert!(!reply.starts_with('-'), "{reply}");
    ok(r.cmd(&["SET", "s", "plain"]));
    ok(r.cmd(&["SET", "n", "12345", "EX", "1000"]));
    ok(r.cmd(&["SET", "big", &"x".repeat(100_000)]));
    ok(r.cmd(&["RPUSH", "l", "a", "1", "-7", ""]));
    ok(r.cmd(&["SADD", "ints", "1", "2", "3", "-40"]));
    ok(r.cmd(&["SADD", "strs", "a", "b\u{e9}", "007"]));
    ok(r.cmd(&["ZADD", "z", "1", "a", "2.5", "b", "-inf", "c", "1e300", "d"]));
    ok(r.cmd(&["HSET", "h", "f", "v", "n", "1"]));
    ok(r.cmd(&["PEXPIRE", "h", "500000"]));
    for i in 0..700 {
        let (m, v) = (format!("member{i}"), format!("{i}"));
        r.cmd(&["HSET", "bighash", &m, &v]);
        r.cmd(&["SADD", "bigset", &m]);
        r.cmd(&["ZADD", "bigz", &v, &m]);
        r.cmd(&["RPUSH", "biglist", &m]);
    }
    ok(r.cmd(&["SELECT", "5"]));
    ok(r.cmd(&["SET", "elsewhere", "x"]));
    ok(r.cmd(&["SELECT", "0"]));
    ok(r.cmd(&[
        "FUNCTION",
        "LOAD",
        "#!lua name=mylib\nredis.register_function('f', function() return 1 end)",
    ]));
}

#[test]
fn save_writes_an_rdb_that_redis_checks_and_loads_alike() {
    let dir = temp_dir("save");
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    let dir_arg = dir.to_str().unwrap();
    assert_eq!(r.cmd(&["CONFIG", "SET", "dir", dir_arg]), "+OK\r\n");
    populate(&mut r);
    let before = r.cmd(&["LASTSAVE"]);
    assert_eq!(r.cmd(&["SAVE"]), "+OK\r\n");
    assert!(r.cmd(&["LASTSAVE"]) >= before);
    let file = dir.join("dump.rdb");
    assert!(file.exists());
    let digest = r.cmd(&["DEBUG", "DIGEST"]);

    let Some(_) = Server::redis() else {
        return;
    };
    let check = Command::new("redis-check-rdb").arg(&file).output();
    let check = match check {
        Ok(out) => out,
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("\n!!! SKIPPED: redis-check-rdb is not on PATH ({e}) !!!\n");
            return;
        }
        Err(e) => panic!("redis-check-rdb is required in CI: {e}"),
    };
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success() && text.contains("Checksum OK"),
        "{text}"
    );

    let redis =
        Server::redis_with(&["--dir", dir_arg, "--dbfilename", "dump.rdb"]).expect("redis-server");
    let mut theirs = redis.raw();
    assert_eq!(theirs.cmd(&["DEBUG", "DIGEST"]), digest);
    assert!(theirs.cmd(&["FUNCTION", "LIST"]).contains("mylib"));
    let ttl = theirs.cmd(&["TTL", "n"]);
    assert!(ttl.starts_with(":99") || ttl.starts_with(":100"), "{ttl}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dir_and_dbfilename_are_checked_as_redis_checks_them() {
    let lapse = Server::lapse(&[]);
    let mut r = lapse.raw();
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "dir", "/no/such/dir"]),
        "-ERR CONFIG SET failed (possibly related to argument 'dir') - No such file or directory\r\n"
    );
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "dbfilename", "a/b.rdb"]),
        "-ERR CONFIG SET failed (possibly related to argument 'dbfilename') - dbfilename can't be a path, just a filename\r\n"
    );
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "dbfilename"]),
        "*2\r\n$10\r\ndbfilename\r\n$8\r\ndump.rdb\r\n"
    );
}

/// `dir` and `dbfilename` choose where files are written: Redis 7.0 lets
/// CONFIG SET change them only as `enable-protected-configs` allows (lapse:
/// loopback clients by default; `no` here).
#[test]
fn file_locations_are_protected_configs() {
    let dir = temp_dir("protected");
    let conf = dir.join("p.conf");
    std::fs::write(&conf, "enable-protected-configs no\n").unwrap();
    let lapse = Server::lapse(&[conf.to_str().unwrap()]);
    let mut r = lapse.raw();
    for name in ["dir", "dbfilename"] {
        assert_eq!(
            r.cmd(&["CONFIG", "SET", name, "x"]),
            format!(
                "-ERR CONFIG SET failed (possibly related to argument '{name}') - can't set protected config\r\n"
            )
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// lapse loads at startup what SAVE wrote (same DEBUG DIGEST, functions
/// included), skipping keys whose deadline passed, counted in INFO
/// persistence as Redis counts them.
#[test]
fn a_saved_file_loads_back_at_startup() {
    let dir = temp_dir("reload");
    let conf = dir.join("dir.conf");
    std::fs::write(&conf, format!("dir {}\n", dir.display())).unwrap();
    let first = Server::lapse(&[conf.to_str().unwrap()]);
    let mut r = first.raw();
    populate(&mut r);
    let digest = r.cmd(&["DEBUG", "DIGEST"]);
    assert_eq!(r.cmd(&["SAVE"]), "+OK\r\n");
    drop(first);
    let second = Server::lapse(&[conf.to_str().unwrap()]);
    let mut r = second.raw();
    assert_eq!(r.cmd(&["DEBUG", "DIGEST"]), digest);
    assert!(r.cmd(&["FUNCTION", "LIST"]).contains("mylib"));
    assert_eq!(
        common::info_field(&mut r, "persistence", "rdb_last_load_keys_loaded"),
        "13"
    );

    // A key saved with a deadline that has passed by the next start.
    assert_eq!(r.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), "+OK\r\n");
    assert_eq!(r.cmd(&["SET", "soon", "v", "PX", "20"]), "+OK\r\n");
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(r.cmd(&["SAVE"]), "+OK\r\n");
    drop(second);
    let third = Server::lapse(&[conf.to_str().unwrap()]);
    let mut r = third.raw();
    assert_eq!(
        common::info_field(&mut r, "persistence", "rdb_last_load_keys_expired"),
        "1"
    );
    assert_eq!(r.cmd(&["EXISTS", "soon"]), ":0\r\n");
    assert_eq!(r.cmd(&["DEBUG", "DIGEST"]), digest);
    let _ = std::fs::remove_dir_all(&dir);
}

/// lapse loads what redis-server 7.0 saves: its compact encodings (intset,
/// listpack hashes and sorted sets, quicklist lists) and its big ones.
#[test]
fn lapse_loads_redis_servers_rdb() {
    let dir = temp_dir("from-redis");
    let dir_arg = dir.to_str().unwrap();
    let Some(redis) = Server::redis_with(&["--dir", dir_arg]) else {
        return;
    };
    let mut theirs = redis.raw();
    populate(&mut theirs);
    assert_eq!(
        theirs.cmd(&["OBJECT", "ENCODING", "ints"]),
        "$6\r\nintset\r\n"
    );
    assert_eq!(
        theirs.cmd(&["OBJECT", "ENCODING", "h"]),
        "$8\r\nlistpack\r\n"
    );
    let digest = theirs.cmd(&["DEBUG", "DIGEST"]);
    assert_eq!(theirs.cmd(&["SAVE"]), "+OK\r\n");
    let conf = dir.join("dir.conf");
    std::fs::write(&conf, format!("dir {dir_arg}\n")).unwrap();
    let lapse = Server::lapse(&[conf.to_str().unwrap()]);
    let mut ours = lapse.raw();
    assert_eq!(ours.cmd(&["DEBUG", "DIGEST"]), digest);
    assert_eq!(ours.cmd(&["OBJECT", "ENCODING", "h"]), "$8\r\nlistpack\r\n");
    assert!(ours.cmd(&["FUNCTION", "LIST"]).contains("mylib"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// SHUTDOWN SAVE writes the file first (the next start loads it); Redis's
/// flag rules and its ABORT answer when no shutdown is in progress.
#[test]
fn shutdown_save_writes_the_file_and_flags_follow_redis() {
    let dir = temp_dir("shutdown");
    let conf = dir.join("dir.conf");
    std::fs::write(&conf, format!("dir {}\n", dir.display())).unwrap();
    let first = Server::lapse(&[conf.to_str().unwrap()]);
    let mut r = first.raw();
    assert_eq!(
        r.cmd(&["SHUTDOWN", "ABORT"]),
        "-ERR No shutdown in progress.\r\n"
    );
    assert_eq!(
        r.cmd(&["SHUTDOWN", "SAVE", "NOSAVE"]),
        "-ERR syntax error\r\n"
    );
    assert_eq!(
        r.cmd(&["SHUTDOWN", "ABORT", "NOW"]),
        "-ERR syntax error\r\n"
    );
    assert_eq!(r.cmd(&["SET", "kept", "yes"]), "+OK\r\n");
    r.send_cmd(&[b"SHUTDOWN", b"SAVE"]);
    assert!(r.is_closed());
    assert!(dir.join("dump.rdb").exists());
    drop(first);
    let second = Server::lapse(&[conf.to_str().unwrap()]);
    assert_eq!(second.raw().cmd(&["GET", "kept"]), "$3\r\nyes\r\n");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `rdbchecksum no` writes 0 in place of the CRC (not checked on load, as
/// in Redis); `rdbcompression no` leaves long strings plain; both load.
#[test]
fn checksum_and_compression_settings_shape_the_file() {
    let dir = temp_dir("settings");
    let conf = dir.join("s.conf");
    std::fs::write(
        &conf,
        format!("dir {}\nrdbchecksum no\nrdbcompression no\n", dir.display()),
    )
    .unwrap();
    let first = Server::lapse(&[conf.to_str().unwrap()]);
    let mut r = first.raw();
    let long = "y".repeat(5000);
    assert_eq!(r.cmd(&["SET", "long", &long]), "+OK\r\n");
    assert_eq!(r.cmd(&["SAVE"]), "+OK\r\n");
    let bytes = std::fs::read(dir.join("dump.rdb")).unwrap();
    assert_eq!(&bytes[bytes.len() - 8..], &[0; 8]);
    assert!(bytes.len() > 5000, "stored plain: {}", bytes.len());
    drop(first);
    let second = Server::lapse(&[conf.to_str().unwrap()]);
    assert_eq!(second.raw().cmd(&["STRLEN", "long"]), ":5000\r\n");
    let _ = std::fs::remove_dir_all(&dir);
}
