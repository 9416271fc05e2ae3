//! RDB files: what SAVE writes must pass `redis-check-rdb` and load into a
//! real redis-server holding exactly the same data (DEBUG DIGEST, which
//! both servers compute alike), function libraries included.
//!
//! Needs `redis-server` and `redis-check-rdb` (see `Server::redis`).

mod common;

use std::process::Command;

use common::{conf_in, populate, temp_dir, Raw, Server};

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

    // Deep checks of every listpack and intset lapse wrote, as RESTORE's.
    let redis = Server::redis_with(&[
        "--dir",
        dir_arg,
        "--dbfilename",
        "dump.rdb",
        "--sanitize-dump-payload",
        "yes",
    ])
    .expect("redis-server");
    let mut theirs = redis.raw();
    assert_eq!(theirs.cmd(&["DEBUG", "DIGEST"]), digest);
    assert_eq!(
        common::stream_groups(&mut theirs),
        common::stream_groups(&mut r)
    );
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
        "21"
    );

    // A key saved before its deadline, which has passed by the next
    // start; and one already past it at the save, which is not written.
    assert_eq!(r.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), "+OK\r\n");
    let set_at = std::time::Instant::now();
    assert_eq!(r.cmd(&["SET", "soon", "v", "PX", "1500"]), "+OK\r\n");
    assert_eq!(r.cmd(&["SET", "gone", "v", "PX", "1"]), "+OK\r\n");
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(r.cmd(&["SAVE"]), "+OK\r\n");
    assert!(
        set_at.elapsed().as_millis() < 1500,
        "the test machine is too slow"
    );
    drop(second);
    std::thread::sleep(std::time::Duration::from_millis(1600).saturating_sub(set_at.elapsed()));
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
    assert_eq!(
        common::stream_groups(&mut ours),
        common::stream_groups(&mut theirs)
    );
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

/// The INFO persistence field `field`, as a number.
fn persistence_number(r: &mut Raw, field: &str) -> i64 {
    common::info_field(r, "persistence", field)
        .parse()
        .unwrap_or_else(|_| panic!("{field} is not a number"))
}

/// Waits (with a generous deadline) for the background save to end.
fn wait_for_bgsave(r: &mut Raw) {
    assert!(
        common::eventually(std::time::Duration::from_secs(60), || {
            persistence_number(r, "rdb_bgsave_in_progress") == 0
        }),
        "the background save never ended"
    );
}

/// BGSAVE writes the dataset as it was when the save began, while the
/// server goes on serving writes that change, delete, expire and add keys
/// (and SWAPDB and FLUSHDB, which finish the affected databases at once):
/// the file loads back (in lapse and in redis-server) with the digest of
/// the start, and passes redis-check-rdb.
#[test]
fn bgsave_writes_the_data_of_its_start_while_writes_go_on() {
    let dir = temp_dir("bgsave");
    // One key per 200 µs: the save of ~3,000 keys lasts about 0.6 s.
    let conf = conf_in(&dir, "rdb-key-save-delay 200\n");
    let conf = conf.to_str().unwrap();
    let lapse = Server::lapse(&[conf]);
    let mut r = lapse.raw();
    populate(&mut r);
    for i in 0..2000 {
        let (k, v) = (format!("k{i}"), format!("v{i}"));
        r.cmd(&["SET", &k, &v, "EX", "100000"]);
    }
    r.cmd(&["SELECT", "3"]);
    for i in 0..200 {
        r.cmd(&["SET", &format!("three{i}"), "x"]);
    }
    r.cmd(&["SELECT", "0"]);
    let digest = r.cmd(&["DEBUG", "DIGEST"]);
    assert_eq!(r.cmd(&["BGSAVE"]), "+Background saving started\r\n");
    assert_eq!(
        r.cmd(&["BGSAVE"]),
        "-ERR Background save already in progress\r\n"
    );
    assert_eq!(
        r.cmd(&["SAVE"]),
        "-ERR Background save already in progress\r\n"
    );
    assert_eq!(persistence_number(&mut r, "rdb_bgsave_in_progress"), 1);
    let mut changes = 0;
    for round in 0..40 {
        for i in (round..2000).step_by(97) {
            let k = format!("k{i}");
            match i % 4 {
                0 => r.cmd(&["SET", &k, "changed"]),
                1 => r.cmd(&["DEL", &k]),
                2 => r.cmd(&["PEXPIRE", &k, "1"]),
                _ => r.cmd(&["APPEND", &k, "+"]),
            };
            r.cmd(&["SET", &format!("new{round}:{i}"), "x"]);
            changes += 1;
        }
        r.cmd(&["LPUSH", "biglist", "front"]);
        r.cmd(&["HDEL", "bighash", &format!("member{round}")]);
        r.cmd(&["ZINCRBY", "bigz", "5", &format!("member{round}")]);
        if round == 20 {
            assert_eq!(r.cmd(&["SWAPDB", "3", "5"]), "+OK\r\n");
            r.cmd(&["SELECT", "3"]);
            assert_eq!(r.cmd(&["FLUSHDB"]), "+OK\r\n");
            r.cmd(&["SELECT", "0"]);
        }
    }
    assert!(changes > 500);
    assert_eq!(
        persistence_number(&mut r, "rdb_bgsave_in_progress"),
        1,
        "the save ended before the writes were done: the test proves nothing"
    );
    wait_for_bgsave(&mut r);
    assert_eq!(
        common::info_field(&mut r, "persistence", "rdb_last_bgsave_status"),
        "ok"
    );
    assert_ne!(r.cmd(&["DEBUG", "DIGEST"]), digest);
    drop(lapse);

    let again = Server::lapse(&[conf]);
    assert_eq!(again.raw().cmd(&["DEBUG", "DIGEST"]), digest);
    drop(again);
    let file = dir.join("dump.rdb");
    let Some(_) = Server::redis() else {
        return;
    };
    let check = Command::new("redis-check-rdb").arg(&file).output().unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    let dir_arg = dir.to_str().unwrap();
    let redis = Server::redis_with(&["--dir", dir_arg]).unwrap();
    assert_eq!(redis.raw().cmd(&["DEBUG", "DIGEST"]), digest);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Save points as Redis parses and reports them; one that is reached
/// starts a background save from the cron.
#[test]
fn save_points_start_background_saves() {
    let dir = temp_dir("savepoints");
    // A flag adds to the file's points, as redis-server's flags do.
    let conf = conf_in(&dir, "save 1 1\n");
    let lapse = Server::lapse(&[conf.to_str().unwrap(), "--save", "100", "1000"]);
    let mut r = lapse.raw();
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "save"]),
        "*2\r\n$4\r\nsave\r\n$12\r\n1 1 100 1000\r\n"
    );
    for bad in ["1", "0 1", "1 -1", "x 1"] {
        assert_eq!(
            r.cmd(&["CONFIG", "SET", "save", bad]),
            format!(
                "-ERR CONFIG SET failed (possibly related to argument 'save') - Invalid save parameters\r\n"
            ),
            "{bad}"
        );
    }
    assert_eq!(persistence_number(&mut r, "rdb_changes_since_last_save"), 0);
    let lastsave = r.cmd(&["LASTSAVE"]);
    assert_eq!(r.cmd(&["SET", "a", "1"]), "+OK\r\n");
    assert_eq!(persistence_number(&mut r, "rdb_changes_since_last_save"), 1);
    assert!(
        common::eventually(std::time::Duration::from_secs(10), || {
            r.cmd(&["LASTSAVE"]) != lastsave
        }),
        "no save within 10 s of a `save 1 1` point"
    );
    wait_for_bgsave(&mut r);
    assert_eq!(persistence_number(&mut r, "rdb_changes_since_last_save"), 0);
    assert!(persistence_number(&mut r, "rdb_saves") >= 1);
    assert!(dir.join("dump.rdb").exists());
    assert_eq!(r.cmd(&["CONFIG", "SET", "save", ""]), "+OK\r\n");
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "save"]),
        "*2\r\n$4\r\nsave\r\n$0\r\n\r\n"
    );
    drop(lapse);
    let defaults = Server::lapse(&[]);
    assert_eq!(
        defaults.raw().cmd(&["CONFIG", "GET", "save"]),
        "*2\r\n$4\r\nsave\r\n$23\r\n3600 1 300 100 60 10000\r\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A background save that fails (here the target name is a directory,
/// which defeats the rename even for root) is reported in INFO; with save
/// points and `stop-writes-on-bgsave-error yes`, writes and PING get
/// Redis's MISCONF until a save succeeds; reads go on. The previous file
/// is never touched and no temporary file is left.
#[test]
fn a_failed_bgsave_refuses_writes_until_a_save_succeeds() {
    let dir = temp_dir("misconf");
    let conf = conf_in(&dir, "save 3600 1\ndbfilename blocked.rdb\n");
    let lapse = Server::lapse(&[conf.to_str().unwrap()]);
    let mut r = lapse.raw();
    // Once the server has started (it would refuse to load a directory).
    assert_eq!(r.cmd(&["SET", "k", "v"]), "+OK\r\n");
    std::fs::create_dir_all(dir.join("blocked.rdb").join("inside")).unwrap();
    assert_eq!(r.cmd(&["BGSAVE"]), "+Background saving started\r\n");
    wait_for_bgsave(&mut r);
    assert_eq!(
        common::info_field(&mut r, "persistence", "rdb_last_bgsave_status"),
        "err"
    );
    let misconf = r.cmd(&["SET", "k", "w"]);
    assert!(
        misconf.starts_with("-MISCONF Redis is configured to save RDB snapshots"),
        "{misconf}"
    );
    assert!(r.cmd(&["PING"]).starts_with("-MISCONF"));
    assert_eq!(r.cmd(&["GET", "k"]), "$1\r\nv\r\n");
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "stop-writes-on-bgsave-error", "no"]),
        "+OK\r\n"
    );
    assert_eq!(r.cmd(&["SET", "k", "w"]), "+OK\r\n");
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "stop-writes-on-bgsave-error", "yes"]),
        "+OK\r\n"
    );
    assert!(r.cmd(&["SET", "k", "x"]).starts_with("-MISCONF"));
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("temp-"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    // The disk "recovers": the next save succeeds and writes are back.
    std::fs::remove_dir_all(dir.join("blocked.rdb")).unwrap();
    assert_eq!(r.cmd(&["BGSAVE"]), "+Background saving started\r\n");
    wait_for_bgsave(&mut r);
    assert_eq!(
        common::info_field(&mut r, "persistence", "rdb_last_bgsave_status"),
        "ok"
    );
    assert_eq!(r.cmd(&["SET", "k", "y"]), "+OK\r\n");
    assert!(dir.join("blocked.rdb").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

/// With save points set (the default), SIGTERM and a bare SHUTDOWN save
/// before exiting; SHUTDOWN NOSAVE does not; FLUSHALL saves the empty
/// dataset at once, as Redis does.
#[test]
fn shutdown_and_sigterm_save_when_save_points_are_set() {
    let dir = temp_dir("sigterm");
    let conf = conf_in(&dir, "");
    let conf = conf.to_str().unwrap();
    let file = dir.join("dump.rdb");

    let first = Server::lapse(&[conf]);
    let mut r = first.raw();
    assert_eq!(r.cmd(&["SET", "by", "sigterm"]), "+OK\r\n");
    let pid = first.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    assert!(r.is_closed());
    let mut first = first;
    let _ = first.child.wait();
    let second = Server::lapse(&[conf]);
    let mut r = second.raw();
    assert_eq!(r.cmd(&["GET", "by"]), "$7\r\nsigterm\r\n");

    assert_eq!(r.cmd(&["SET", "by", "shutdown"]), "+OK\r\n");
    r.send_cmd(&[b"SHUTDOWN"]);
    assert!(r.is_closed());
    drop(second);
    let third = Server::lapse(&[conf]);
    let mut r = third.raw();
    assert_eq!(r.cmd(&["GET", "by"]), "$8\r\nshutdown\r\n");

    assert_eq!(r.cmd(&["SET", "by", "nosave"]), "+OK\r\n");
    r.send_cmd(&[b"SHUTDOWN", b"NOSAVE"]);
    assert!(r.is_closed());
    drop(third);
    let fourth = Server::lapse(&[conf]);
    let mut r = fourth.raw();
    assert_eq!(r.cmd(&["GET", "by"]), "$8\r\nshutdown\r\n");

    let size_before = std::fs::metadata(&file).unwrap().len();
    assert_eq!(r.cmd(&["FLUSHALL"]), "+OK\r\n");
    assert!(std::fs::metadata(&file).unwrap().len() < size_before);
    drop(fourth);
    let fifth = Server::lapse(&[conf]);
    assert_eq!(fifth.raw().cmd(&["DBSIZE"]), ":0\r\n");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A damaged RDB file stops startup with a message naming the file, what
/// was wrong and where; the server never starts with part of the data.
#[test]
fn a_damaged_rdb_file_is_refused_with_the_file_and_offset() {
    let dir = temp_dir("damaged");
    let conf = conf_in(&dir, "");
    let first = Server::lapse(&[conf.to_str().unwrap()]);
    let mut r = first.raw();
    populate(&mut r);
    assert_eq!(r.cmd(&["SAVE"]), "+OK\r\n");
    drop(first);
    let file = dir.join("dump.rdb");
    let good = std::fs::read(&file).unwrap();
    let start = |bytes: &[u8]| {
        std::fs::write(&file, bytes).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_lapse"))
            .arg(&conf)
            .args(["--port", "0"])
            .output()
            .unwrap();
        assert!(!out.status.success(), "lapse started on a damaged file");
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };
    let shown = file.display().to_string();
    let text = start(&good[..good.len() / 2]);
    let truncated =
        text.contains("unexpected end of file") || text.contains("past the end of the file");
    assert!(text.contains(&shown) && truncated, "{text}");
    assert!(text.contains("byte offset"), "{text}");
    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x01;
    let text = start(&flipped);
    assert!(text.contains("Wrong RDB checksum"), "{text}");
    let mut bad_type = good.clone();
    // The first key's type byte: after the header, AUX fields, functions,
    // SELECTDB and RESIZEDB; find it as the byte before the key "s" after
    // SELECTDB 0 (an AUX value such as used-mem may hold the same bytes).
    let db0 = good
        .windows(3)
        .position(|w| w == [0xFE, 0x00, 0xFB])
        .unwrap();
    let at = db0
        + good[db0..]
            .windows(3)
            .position(|w| w == [0x00, 0x01, b's'])
            .unwrap();
    bad_type[at] = 0x63;
    let text = start(&bad_type);
    assert!(text.contains("Unknown RDB encoding type 99"), "{text}");
    assert!(text.contains(&format!("byte offset {at}")), "{text}");
    let text = start(b"REDIS0010\xfe");
    assert!(text.contains("unexpected end of file"), "{text}");
    let text = start(b"NOTREDIS0010");
    assert!(text.contains("wrong signature"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// DUMP payloads cross between lapse and redis-server 7.0 both ways for
/// every type and encoding (same DEBUG DIGEST-VALUE after RESTORE), and
/// RESTORE's options and errors answer as redis-server answers them.
#[test]
fn dump_and_restore_interoperate_with_redis() {
    let lapse = Server::lapse(&[]);
    let Some(redis) = Server::redis() else {
        return;
    };
    let (mut ours, mut theirs) = (lapse.raw(), redis.raw());
    populate(&mut ours);
    populate(&mut theirs);
    let keys = ours.cmd(&["KEYS", "*"]);
    let keys: Vec<String> = keys
        .lines()
        .filter(|l| !l.starts_with('*') && !l.starts_with('$'))
        .map(String::from)
        .collect();
    assert!(keys.len() > 15, "{keys:?}");
    for key in &keys {
        for lapse_to_redis in [true, false] {
            let (from, to) = if lapse_to_redis {
                (&mut ours, &mut theirs)
            } else {
                (&mut theirs, &mut ours)
            };
            from.send_cmd(&[b"DUMP", key.as_bytes()]);
            let reply = from.reply();
            let payload = reply_bulk(&reply);
            let digest = from.cmd(&["DEBUG", "DIGEST-VALUE", key]);
            // (The digest tells whether a deadline is set: keep that.)
            let ttl: &[u8] = if from.cmd(&["PTTL", key]).starts_with(":-") {
                b"0"
            } else {
                b"1000000"
            };
            to.send_cmd(&[b"RESTORE", b"copy", ttl, &payload, b"REPLACE"]);
            assert_eq!(to.reply(), b"+OK\r\n", "{key}");
            assert_eq!(to.cmd(&["DEBUG", "DIGEST-VALUE", "copy"]), digest, "{key}");
            assert_eq!(to.cmd(&["TYPE", "copy"]), from.cmd(&["TYPE", key]), "{key}");
        }
    }
    // Options and errors, replayed on both.
    ours.send_cmd(&[b"DUMP", b"s"]);
    let payload = reply_bulk(&ours.reply());
    let mut corrupt = payload.clone();
    corrupt[1] ^= 0x20;
    let mut short = payload.clone();
    short.truncate(5);
    // A valid frame around a body that is not a value.
    let mut bad_body = vec![0x04u8, 0xFF];
    bad_body.extend_from_slice(&10u16.to_le_bytes());
    let crc = lapse::persistence::rdb::crc64(&bad_body);
    bad_body.extend_from_slice(&crc.to_le_bytes());
    let far = "99999999999999";
    let cases: Vec<Vec<&[u8]>> = vec![
        vec![b"RESTORE", b"s", b"0", &payload],
        vec![b"RESTORE", b"n1", b"-5", &payload],
        vec![b"RESTORE", b"n1", b"x", &payload],
        vec![b"RESTORE", b"n1", b"0", &corrupt],
        vec![b"RESTORE", b"n1", b"0", &short],
        vec![b"RESTORE", b"n1", b"0", &bad_body],
        vec![b"RESTORE", b"n1", b"0", &payload, b"IDLETIME", b"-1"],
        vec![b"RESTORE", b"n1", b"0", &payload, b"FREQ", b"256"],
        vec![
            b"RESTORE",
            b"n1",
            b"0",
            &payload,
            b"FREQ",
            b"1",
            b"IDLETIME",
            b"1",
        ],
        vec![b"RESTORE", b"n1", b"0", &payload, b"BOGUS"],
        vec![
            b"RESTORE",
            b"n2",
            b"0",
            &payload,
            b"IDLETIME",
            b"5",
            b"REPLACE",
        ],
        vec![b"RESTORE", b"n3", b"100000", &payload],
        vec![b"PTTL", b"n3"],
        vec![b"RESTORE", b"n4", far.as_bytes(), &payload, b"ABSTTL"],
        vec![b"PEXPIRETIME", b"n4"],
        vec![b"RESTORE", b"s", b"1", &payload, b"ABSTTL", b"REPLACE"],
        vec![b"EXISTS", b"s"],
        vec![b"GET", b"n2"],
        vec![b"DUMP", b"nothing"],
    ];
    for case in &cases {
        ours.send_cmd(case);
        theirs.send_cmd(case);
        let (a, b) = (ours.reply(), theirs.reply());
        let shown =
            String::from_utf8_lossy(case[0]).to_string() + " " + &String::from_utf8_lossy(case[1]);
        if case[0] == b"PTTL" {
            // Both close to 100 s.
            let (a, b) = (String::from_utf8_lossy(&a), String::from_utf8_lossy(&b));
            let near = |t: &str| t.starts_with(":99") || t.starts_with(":100000\r");
            assert!(near(&a) && near(&b), "{a} {b}");
            continue;
        }
        assert_eq!(
            String::from_utf8_lossy(&a),
            String::from_utf8_lossy(&b),
            "{shown}"
        );
    }
}

/// The bytes of a bulk reply.
fn reply_bulk(reply: &[u8]) -> Vec<u8> {
    let header_end = reply.windows(2).position(|w| w == b"\r\n").unwrap();
    reply[header_end + 2..reply.len() - 2].to_vec()
}

/// A ziplist (the pre-7.0 compact encoding) of `entries`, as Redis's
/// `ziplist.c` lays it out: integer-like entries in the narrowest integer
/// encoding, every previous-length and the tail offset exact (so that
/// redis-server's deep integrity check passes it).
fn ziplist(entries: &[&[u8]]) -> Vec<u8> {
    let mut body: Vec<u8> = Vec::new();
    let (mut prev, mut tail) = (0usize, 10usize);
    for entry in entries {
        let start = body.len();
        tail = 10 + start;
        if prev < 254 {
            body.push(prev as u8);
        } else {
            body.push(0xFE);
            body.extend_from_slice(&(prev as u32).to_le_bytes());
        }
        let text = std::str::from_utf8(entry).ok();
        let int = text
            .and_then(|t| t.parse::<i64>().ok())
            .filter(|n| Some(n.to_string().as_str()) == text);
        match int {
            Some(n @ 0..=12) => body.push(0xF1 + n as u8),
            Some(n) if i8::try_from(n).is_ok() => body.extend_from_slice(&[0xFE, n as i8 as u8]),
            Some(n) if i16::try_from(n).is_ok() => {
                body.push(0xC0);
                body.extend_from_slice(&(n as i16).to_le_bytes());
            }
            Some(n) if (-(1 << 23)..(1 << 23)).contains(&n) => {
                body.push(0xF0);
                body.extend_from_slice(&(n as i32).to_le_bytes()[..3]);
            }
            Some(n) if i32::try_from(n).is_ok() => {
                body.push(0xD0);
                body.extend_from_slice(&(n as i32).to_le_bytes());
            }
            Some(n) => {
                body.push(0xE0);
                body.extend_from_slice(&n.to_le_bytes());
            }
            None => {
                let len = entry.len();
                if len < 64 {
                    body.push(len as u8);
                } else if len < 16384 {
                    body.extend_from_slice(&[0x40 | (len >> 8) as u8, len as u8]);
                } else {
                    body.push(0x80);
                    body.extend_from_slice(&(len as u32).to_be_bytes());
                }
                body.extend_from_slice(entry);
            }
        }
        prev = body.len() - start;
    }
    let mut out = Vec::new();
    out.extend_from_slice(&((10 + body.len() + 1) as u32).to_le_bytes());
    out.extend_from_slice(&(tail as u32).to_le_bytes());
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&body);
    out.push(0xFF);
    out
}

/// A zipmap (Redis before 2.6) of field/value pairs, each value followed
/// by `free` unused bytes.
fn zipmap(pairs: &[(&[u8], &[u8])], free: u8) -> Vec<u8> {
    let len = |out: &mut Vec<u8>, n: usize| {
        if n < 254 {
            out.push(n as u8);
        } else {
            out.push(0xFE);
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
    };
    let mut out = vec![pairs.len() as u8];
    for (field, value) in pairs {
        len(&mut out, field.len());
        out.extend_from_slice(field);
        len(&mut out, value.len());
        out.push(free);
        out.extend_from_slice(value);
        out.extend(std::iter::repeat_n(0u8, usize::from(free)));
    }
    out.push(0xFF);
    out
}

/// lapse loads the encodings redis-server 7.0 no longer writes but still
/// loads (zipmap and ziplist hashes, ziplist lists and sorted sets,
/// quicklist-1 lists of ziplists) exactly as redis-server does: a file
/// built here loads in both (redis-server deep-checking every blob) with
/// the same DEBUG DIGEST.
#[test]
fn older_encodings_load_as_redis_loads_them() {
    use lapse::persistence::rdb::{write_len, write_string};
    let long = "L".repeat(300);
    let mut ints: Vec<String> = [
        "0", "12", "13", "-1", "127", "-128", "300", "-32768", "40000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    ints.extend(["8388607", "-8388609", "2147483648", "-9223372036854775808"].map(String::from));
    ints.extend(["007", "1.5", "", "text"].map(String::from));
    ints.push(long.clone());
    let list: Vec<&[u8]> = ints.iter().map(|s| s.as_bytes()).collect();
    let mut file = b"REDIS0009".to_vec();
    file.extend_from_slice(&[0xFE, 0x00]);
    let key = |file: &mut Vec<u8>, kind: u8, name: &str| {
        file.push(kind);
        write_string(file, name.as_bytes());
    };
    key(&mut file, 9, "zipmap");
    let pairs: Vec<(&[u8], &[u8])> = vec![
        (b"a", b"1"),
        (b"long", long.as_bytes()),
        (b"", b"empty field"),
    ];
    write_string(&mut file, &zipmap(&pairs, 3));
    key(&mut file, 10, "ziplist-list");
    write_string(&mut file, &ziplist(&list));
    key(&mut file, 12, "ziplist-zset");
    let zpairs: Vec<&[u8]> = vec![b"m1", b"-2", b"m2", b"1.5", b"m3", b"40000", b"m4", b"inf"];
    write_string(&mut file, &ziplist(&zpairs));
    key(&mut file, 13, "ziplist-hash");
    let hpairs: Vec<&[u8]> = vec![b"f1", b"1", b"f2", long.as_bytes(), b"-5", b"neg"];
    write_string(&mut file, &ziplist(&hpairs));
    key(&mut file, 14, "quicklist");
    write_len(&mut file, 2);
    write_string(&mut file, &ziplist(&list[..5]));
    write_string(&mut file, &ziplist(&list[5..]));
    file.push(0xFF);
    let crc = lapse::persistence::rdb::crc64(&file);
    file.extend_from_slice(&crc.to_le_bytes());

    let dir = temp_dir("old-encodings");
    std::fs::write(dir.join("dump.rdb"), &file).unwrap();
    let conf = conf_in(&dir, "");
    let lapse = Server::lapse(&[conf.to_str().unwrap()]);
    let mut ours = lapse.raw();
    assert_eq!(ours.cmd(&["DBSIZE"]), ":5\r\n");
    assert_eq!(
        ours.cmd(&["HGET", "zipmap", "long"]),
        format!("${}\r\n{long}\r\n", long.len())
    );
    assert_eq!(
        ours.cmd(&["LINDEX", "quicklist", "12"]),
        "$20\r\n-9223372036854775808\r\n"
    );
    assert_eq!(ours.cmd(&["ZSCORE", "ziplist-zset", "m4"]), "$3\r\ninf\r\n");
    let digest = ours.cmd(&["DEBUG", "DIGEST"]);
    let dir_arg = dir.to_str().unwrap();
    let Some(redis) = Server::redis_with(&["--dir", dir_arg, "--sanitize-dump-payload", "yes"])
    else {
        return;
    };
    let mut theirs = redis.raw();
    assert_eq!(theirs.cmd(&["DBSIZE"]), ":5\r\n");
    assert_eq!(theirs.cmd(&["DEBUG", "DIGEST"]), digest);
    let _ = std::fs::remove_dir_all(&dir);
}

/// DEBUG RELOAD (redis-server's test suite leans on it): save, empty,
/// load back, digest unchanged; NOSAVE loads the last file; NOFLUSH
/// without MERGE trips on the keys still there (redis-server aborts on a
/// duplicate key; lapse answers Redis's load error and keeps serving).
#[test]
fn debug_reload_round_trips_the_dataset() {
    let dir = temp_dir("debug-reload");
    let conf = conf_in(&dir, "");
    let lapse = Server::lapse(&[conf.to_str().unwrap()]);
    let mut r = lapse.raw();
    populate(&mut r);
    let digest = r.cmd(&["DEBUG", "DIGEST"]);
    assert_eq!(r.cmd(&["DEBUG", "RELOAD"]), "+OK\r\n");
    assert_eq!(r.cmd(&["DEBUG", "DIGEST"]), digest);
    assert_eq!(r.cmd(&["SET", "later", "x"]), "+OK\r\n");
    assert_eq!(r.cmd(&["DEBUG", "RELOAD", "NOSAVE"]), "+OK\r\n");
    assert_eq!(r.cmd(&["EXISTS", "later"]), ":0\r\n");
    assert_eq!(r.cmd(&["DEBUG", "DIGEST"]), digest);
    assert_eq!(
        r.cmd(&["DEBUG", "RELOAD", "NOFLUSH", "NOSAVE"]),
        "-ERR Error trying to load the RDB dump, check server logs.\r\n"
    );
    assert_eq!(
        r.cmd(&["DEBUG", "RELOAD", "NOFLUSH", "NOSAVE", "MERGE"]),
        "+OK\r\n"
    );
    assert_eq!(r.cmd(&["DEBUG", "DIGEST"]), digest);
    assert_eq!(
        r.cmd(&["DEBUG", "RELOAD", "BOGUS"]),
        "-ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.\r\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
