//! The append-only file: what lapse writes reloads into the same data
//! (DEBUG DIGEST), passes `redis-check-aof` and loads in redis-server 7.0;
//! lapse loads redis-server's AOF directories; rewrites, turning the AOF
//! on at run time, damaged files and crashes behave as Redis's do.
//!
//! Needs `redis-server` and `redis-check-aof` for the interop checks (see
//! `Server::redis`, `common::run_tool`).

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{conf_in, lapse_refuses, more_writes, populate, run_tool, temp_dir, Raw, Server};

/// A config file with the AOF on in `dir`, plus `extra`.
fn aof_conf(dir: &Path, extra: &str) -> PathBuf {
    conf_in(dir, &format!("appendonly yes\nsave \"\"\n{extra}"))
}

/// Kills `server` (SIGKILL) once what it acknowledged is in its AOF file.
/// Under `appendfsync everysec` a write waits (up to 2 s, as in Redis)
/// while the previous fsync is still running, so a kill right after a
/// reply may lose it — within the policy, but not what these tests are
/// about: they wait for `aof_buffer_length:0` first.
fn crash(server: Server) {
    let mut r = server.raw();
    let written = common::eventually(Duration::from_secs(5), || {
        let text = r.cmd(&["INFO", "persistence"]);
        !text.contains("aof_enabled:1") || text.contains("aof_buffer_length:0\r\n")
    });
    assert!(written, "the AOF buffer was never written");
    drop(server);
}

fn number(r: &mut Raw, field: &str) -> i64 {
    common::info_field(r, "persistence", field)
        .parse()
        .unwrap_or_else(|_| panic!("{field} is not a number"))
}

/// Waits (generously) until no rewrite runs or waits to run.
fn wait_for_rewrite(r: &mut Raw) {
    assert!(
        common::eventually(Duration::from_secs(60), || {
            number(r, "aof_rewrite_in_progress") == 0 && number(r, "aof_rewrite_scheduled") == 0
        }),
        "the rewrite never ended"
    );
}

fn manifest(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("appendonlydir/appendonly.aof.manifest")).unwrap()
}

/// The files in the AOF directory, sorted.
fn aof_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("appendonlydir"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Every write reloads after a crash (kill -9), through the increment
/// file, then through a rewritten base in each format; the files pass
/// redis-check-aof and load in redis-server 7.0 with the same digest.
#[test]
fn the_aof_round_trips_through_restarts_rewrites_and_redis() {
    let dir = temp_dir("aof-roundtrip");
    let conf = aof_conf(&dir, "");
    let conf = conf.to_str().unwrap();
    let first = Server::lapse(&[conf]);
    let mut r = first.raw();
    populate(&mut r);
    more_writes(&mut r);
    let digest = r.cmd(&["DEBUG", "DIGEST"]);
    assert_eq!(
        manifest(&dir),
        "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
    );
    crash(first);
    let second = Server::lapse(&[conf]);
    let mut r = second.raw();
    assert_eq!(r.cmd(&["DEBUG", "DIGEST"]), digest);
    assert!(r.cmd(&["FUNCTION", "LIST"]).contains("mylib"));
    assert_eq!(r.cmd(&["GET", "counter"]), "$1\r\n1\r\n");

    // A rewrite: a new base (RDB preamble) and increment; the old files go.
    assert_eq!(
        r.cmd(&["BGREWRITEAOF"]),
        "+Background append only file rewriting started\r\n"
    );
    wait_for_rewrite(&mut r);
    // (The old files are deleted on a thread, as Redis does: soon after.)
    let expected = [
        "appendonly.aof.2.base.rdb",
        "appendonly.aof.2.incr.aof",
        "appendonly.aof.manifest",
    ];
    assert!(
        common::eventually(Duration::from_secs(5), || aof_files(&dir) == expected),
        "{:?}",
        aof_files(&dir)
    );
    assert_eq!(r.cmd(&["INCR", "counter"]), ":2\r\n");
    let digest = r.cmd(&["DEBUG", "DIGEST"]);
    assert_eq!(r.cmd(&["DEBUG", "LOADAOF"]), "+OK\r\n");
    assert_eq!(r.cmd(&["DEBUG", "DIGEST"]), digest);
    drop(second);

    // A base of commands.
    let third = Server::lapse(&[conf, "--aof-use-rdb-preamble", "no"]);
    let mut r = third.raw();
    assert_eq!(r.cmd(&["DEBUG", "DIGEST"]), digest);
    r.cmd(&["BGREWRITEAOF"]);
    wait_for_rewrite(&mut r);
    assert!(manifest(&dir).starts_with("file appendonly.aof.3.base.aof seq 3 type b\n"));
    let base = std::fs::read(dir.join("appendonlydir/appendonly.aof.3.base.aof")).unwrap();
    assert!(base.starts_with(b"*3\r\n$8\r\nFUNCTION\r\n$4\r\nLOAD\r\n"));
    assert_eq!(r.cmd(&["SET", "after", "rewrite"]), "+OK\r\n");
    let digest = r.cmd(&["DEBUG", "DIGEST"]);
    drop(third);
    let fourth = Server::lapse(&[conf]);
    assert_eq!(fourth.raw().cmd(&["DEBUG", "DIGEST"]), digest);
    drop(fourth);

    let manifest_path = dir.join("appendonlydir/appendonly.aof.manifest");
    if let Some(out) = run_tool("redis-check-aof", &[manifest_path.as_os_str()]) {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("All AOF files and manifest are valid"),
            "{text}"
        );
    }
    let dir_arg = dir.to_str().unwrap();
    let Some(redis) = Server::redis_with(&["--dir", dir_arg, "--appendonly", "yes"]) else {
        return;
    };
    let mut theirs = redis.raw();
    assert_eq!(theirs.cmd(&["DEBUG", "DIGEST"]), digest);
    drop(redis);
    let _ = std::fs::remove_dir_all(&dir);
}

/// lapse loads the AOF directories redis-server 7.0 writes: an RDB
/// preamble base, a base of commands, increments with its SELECTs,
/// transactions and absolute deadlines.
#[test]
fn lapse_loads_redis_servers_aof() {
    for preamble in ["yes", "no"] {
        let dir = temp_dir(&format!("aof-from-redis-{preamble}"));
        let dir_arg = dir.to_str().unwrap();
        let Some(redis) = Server::redis_with(&[
            "--dir",
            dir_arg,
            "--appendonly",
            "yes",
            "--aof-use-rdb-preamble",
            preamble,
        ]) else {
            return;
        };
        let mut theirs = redis.raw();
        populate(&mut theirs);
        theirs.cmd(&["BGREWRITEAOF"]);
        wait_for_rewrite(&mut theirs);
        more_writes(&mut theirs);
        let digest = theirs.cmd(&["DEBUG", "DIGEST"]);
        crash(redis);
        let conf = aof_conf(&dir, "");
        let lapse = Server::lapse(&[conf.to_str().unwrap()]);
        let mut ours = lapse.raw();
        assert_eq!(
            ours.cmd(&["DEBUG", "DIGEST"]),
            digest,
            "preamble {preamble}"
        );
        assert!(ours.cmd(&["FUNCTION", "LIST"]).contains("mylib"));
        drop(lapse);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Keys whose deadline passed while the server was down are gone after
/// loading, from the base and from the increment alike; nothing expires
/// during the load itself (a later write in the log still finds them).
#[test]
fn keys_expired_while_down_are_gone_after_load() {
    let dir = temp_dir("aof-expired");
    let conf = aof_conf(&dir, "");
    let conf = conf.to_str().unwrap();
    let first = Server::lapse(&[conf]);
    let mut r = first.raw();
    let set_at = std::time::Instant::now();
    assert_eq!(r.cmd(&["SET", "in-base", "v", "PX", "1500"]), "+OK\r\n");
    r.cmd(&["BGREWRITEAOF"]);
    wait_for_rewrite(&mut r);
    assert_eq!(r.cmd(&["SET", "in-incr", "v", "PX", "1500"]), "+OK\r\n");
    assert_eq!(r.cmd(&["RPUSH", "kept", "a"]), ":1\r\n");
    assert_eq!(r.cmd(&["PEXPIRE", "kept", "1500"]), ":1\r\n");
    // Written after the deadline in the log's own order: a write to a
    // key that is still there when it replays.
    assert_eq!(r.cmd(&["RPUSH", "kept", "b"]), ":2\r\n");
    assert_eq!(r.cmd(&["PERSIST", "kept"]), ":1\r\n");
    assert!(set_at.elapsed() < Duration::from_millis(1500), "too slow");
    crash(first);
    // Well past the deadlines (the server's clock read them a little
    // after `set_at`, later still on a loaded machine).
    std::thread::sleep(Duration::from_millis(2500).saturating_sub(set_at.elapsed()));
    let second = Server::lapse(&[conf]);
    let mut r = second.raw();
    assert_eq!(r.cmd(&["EXISTS", "in-base", "in-incr"]), ":0\r\n");
    assert_eq!(
        r.cmd(&["LRANGE", "kept", "0", "-1"]),
        "*2\r\n$1\r\na\r\n$1\r\nb\r\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The increment file of a fresh directory, written by a run of lapse
/// with `writes`; returns its path.
fn incr_with(dir: &Path, conf: &str, writes: &[&[&str]]) -> PathBuf {
    let server = Server::lapse(&[conf]);
    let mut r = server.raw();
    for w in writes {
        let reply = r.cmd(w);
        assert!(!reply.starts_with('-'), "{reply}");
    }
    crash(server);
    dir.join("appendonlydir/appendonly.aof.1.incr.aof")
}

/// A last file cut mid-command loads up to its last whole command (and
/// is truncated there) with `aof-load-truncated yes`, Redis's default,
/// and is refused with the file and offset with `no`; so is an open MULTI
/// at the end, whose commands are dropped.
#[test]
fn a_truncated_tail_loads_up_to_the_last_whole_command() {
    let dir = temp_dir("aof-truncated");
    let conf = aof_conf(&dir, "");
    let conf = conf.to_str().unwrap();
    let incr = incr_with(
        &dir,
        conf,
        &[&["SET", "a", "1"], &["SET", "b", "2"], &["SET", "c", "3"]],
    );
    let whole = std::fs::read(&incr).unwrap();
    let cut = whole.len() - 3;
    std::fs::write(&incr, &whole[..cut]).unwrap();
    let text = lapse_refuses(&[conf, "--aof-load-truncated", "no"]);
    assert!(
        text.contains("Unexpected end of file") && text.contains(&incr.display().to_string()),
        "{text}"
    );
    let last_whole = whole.len() - common::encode(&[b"SET", b"c", b"3"]).len();
    assert!(text.contains(&format!("offset {last_whole}")), "{text}");
    let server = Server::lapse(&[conf]);
    let mut r = server.raw();
    assert_eq!(
        r.cmd(&["MGET", "a", "b", "c"]),
        "*3\r\n$1\r\n1\r\n$1\r\n2\r\n$-1\r\n"
    );
    assert_eq!(std::fs::metadata(&incr).unwrap().len() as usize, last_whole);
    assert_eq!(r.cmd(&["SET", "d", "4"]), "+OK\r\n");
    crash(server);
    let server = Server::lapse(&[conf]);
    assert_eq!(server.raw().cmd(&["GET", "d"]), "$1\r\n4\r\n");
    crash(server);

    // An open transaction at the end is reverted.
    let mut bytes = std::fs::read(&incr).unwrap();
    let good = bytes.len();
    bytes.extend(common::encode(&[b"MULTI"]));
    bytes.extend(common::encode(&[b"SET", b"e", b"5"]));
    std::fs::write(&incr, &bytes).unwrap();
    let server = Server::lapse(&[conf]);
    assert_eq!(server.raw().cmd(&["EXISTS", "d", "e"]), ":1\r\n");
    assert_eq!(std::fs::metadata(&incr).unwrap().len() as usize, good);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Damage that is not a cut tail stops startup with the file, the offset
/// and what was wrong: garbage in the middle, an unknown command, a
/// manifest naming a missing file, a broken manifest, a damaged base.
#[test]
fn damaged_aof_files_are_refused_with_the_file_and_offset() {
    let dir = temp_dir("aof-damaged");
    let conf = aof_conf(&dir, "");
    let conf = conf.to_str().unwrap();
    let incr = incr_with(&dir, conf, &[&["SET", "a", "1"], &["SET", "b", "2"]]);
    let whole = std::fs::read(&incr).unwrap();
    let shown = incr.display().to_string();

    let mut garbage = whole.clone();
    let middle = common::encode(&[b"SELECT", b"0"]).len();
    garbage[middle] = b'!';
    std::fs::write(&incr, &garbage).unwrap();
    let text = lapse_refuses(&[conf]);
    assert!(
        text.contains("Bad file format")
            && text.contains(&shown)
            && text.contains(&format!("offset {middle}")),
        "{text}"
    );

    let mut unknown = whole.clone();
    unknown.extend(common::encode(&[b"NOSUCHCOMMAND", b"x"]));
    std::fs::write(&incr, &unknown).unwrap();
    let text = lapse_refuses(&[conf]);
    assert!(
        text.contains("Unknown command 'NOSUCHCOMMAND'")
            && text.contains(&format!("offset {}", whole.len())),
        "{text}"
    );
    std::fs::write(&incr, &whole).unwrap();

    let manifest_path = dir.join("appendonlydir/appendonly.aof.manifest");
    let good_manifest = std::fs::read_to_string(&manifest_path).unwrap();
    std::fs::write(
        &manifest_path,
        format!("{good_manifest}file appendonly.aof.9.incr.aof seq 9 type i\n"),
    )
    .unwrap();
    let text = lapse_refuses(&[conf]);
    assert!(
        text.contains("appendonly.aof.9.incr.aof") && text.contains("No such file"),
        "{text}"
    );
    std::fs::write(&manifest_path, "file x seq 1 type z\n").unwrap();
    let text = lapse_refuses(&[conf]);
    assert!(
        text.contains("Unknown AOF file type") && text.contains("line 1"),
        "{text}"
    );
    std::fs::write(&manifest_path, &good_manifest).unwrap();

    let base = dir.join("appendonlydir/appendonly.aof.1.base.rdb");
    let mut rdb = std::fs::read(&base).unwrap();
    let last = rdb.len() - 1;
    rdb[last] ^= 1;
    std::fs::write(&base, &rdb).unwrap();
    let text = lapse_refuses(&[conf]);
    assert!(
        text.contains("Wrong RDB checksum") && text.contains("base.rdb"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// CONFIG SET appendonly yes writes a base of what is there, and from then
/// on every write; `no` stops appending. BGSAVE and BGREWRITEAOF wait for
/// each other as in Redis.
#[test]
fn the_aof_turns_on_and_off_at_run_time() {
    let dir = temp_dir("aof-config-set");
    let conf = conf_in(&dir, "save \"\"\n");
    let conf = conf.to_str().unwrap();
    let first = Server::lapse(&[conf, "--rdb-key-save-delay", "2000"]);
    let mut r = first.raw();
    assert_eq!(
        common::info_field(&mut r, "persistence", "aof_enabled"),
        "0"
    );
    for i in 0..100 {
        r.cmd(&["SET", &format!("k{i}"), "v"]);
    }
    assert_eq!(r.cmd(&["CONFIG", "SET", "appendonly", "yes"]), "+OK\r\n");
    assert_eq!(
        common::info_field(&mut r, "persistence", "aof_enabled"),
        "1"
    );
    assert_eq!(number(&mut r, "aof_rewrite_in_progress"), 1);
    assert_eq!(
        r.cmd(&["BGSAVE"]),
        "-ERR An AOF log rewriting in progress: can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.\r\n"
    );
    assert_eq!(
        r.cmd(&["BGSAVE", "SCHEDULE"]),
        "+Background saving scheduled\r\n"
    );
    assert_eq!(
        r.cmd(&["BGREWRITEAOF"]),
        "-ERR Background append only file rewriting already in progress\r\n"
    );
    // Writes during the first base land in the increment.
    assert_eq!(r.cmd(&["SET", "during", "rewrite"]), "+OK\r\n");
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "0"]),
        "+OK\r\n"
    );
    wait_for_rewrite(&mut r);
    assert!(common::eventually(Duration::from_secs(30), || {
        number(&mut r, "rdb_bgsave_in_progress") == 0 && dir.join("dump.rdb").exists()
    }));
    assert_eq!(
        manifest(&dir),
        "file appendonly.aof.1.base.rdb seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
    );
    assert_eq!(r.cmd(&["SET", "after", "on"]), "+OK\r\n");
    let digest = r.cmd(&["DEBUG", "DIGEST"]);
    assert_eq!(r.cmd(&["CONFIG", "SET", "appendonly", "no"]), "+OK\r\n");
    assert_eq!(r.cmd(&["SET", "after", "off"]), "+OK\r\n");
    crash(first);
    let second = Server::lapse(&[conf, "--appendonly", "yes"]);
    let mut r = second.raw();
    assert_eq!(r.cmd(&["DEBUG", "DIGEST"]), digest);
    assert_eq!(r.cmd(&["GET", "during"]), "$7\r\nrewrite\r\n");
    let _ = std::fs::remove_dir_all(&dir);
}

/// kill -9 under a steady INCR load with `appendfsync always`: every
/// acknowledged increment is in the AOF the next start loads.
#[test]
fn kill_9_loses_nothing_acknowledged_with_appendfsync_always() {
    let dir = temp_dir("aof-kill9");
    let conf = aof_conf(&dir, "appendfsync always\n");
    let conf = conf.to_str().unwrap();
    let mut server = Server::lapse(&[conf]);
    let port = server.port;
    let writers: Vec<_> = (0..4)
        .map(|i| {
            std::thread::spawn(move || {
                let mut r = Raw::connect(port);
                let key = format!("counter{i}");
                let mut acknowledged = 0;
                loop {
                    r.send_cmd(&[b"INCR", key.as_bytes()]);
                    let mut line = String::new();
                    match std::io::BufRead::read_line(&mut r.reader, &mut line) {
                        Ok(n) if n > 0 && line.starts_with(':') => {
                            acknowledged = line[1..].trim().parse::<i64>().unwrap();
                        }
                        _ => return (key, acknowledged),
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    server.child.kill().unwrap();
    let _ = server.child.wait();
    let results: Vec<(String, i64)> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    let restarted = Server::lapse(&[conf]);
    let mut r = restarted.raw();
    for (key, acknowledged) in results {
        assert!(acknowledged > 0, "no INCR was acknowledged");
        let stored = common::get_int(&mut r, &key).unwrap();
        assert!(
            stored >= acknowledged,
            "{key}: acknowledged {acknowledged}, found {stored}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// An old-style single `appendonly.aof` in `dir` (Redis before 7.0) is
/// moved into the directory as its base and loaded.
#[test]
fn a_single_file_aof_from_before_redis_7_is_upgraded() {
    let dir = temp_dir("aof-upgrade");
    let mut old = Vec::new();
    old.extend(common::encode(&[b"SELECT", b"0"]));
    old.extend(common::encode(&[b"SET", b"old", b"style"]));
    old.extend(common::encode(&[b"RPUSH", b"l", b"1", b"2"]));
    std::fs::write(dir.join("appendonly.aof"), &old).unwrap();
    let conf = aof_conf(&dir, "");
    let server = Server::lapse(&[conf.to_str().unwrap()]);
    let mut r = server.raw();
    assert_eq!(r.cmd(&["GET", "old"]), "$5\r\nstyle\r\n");
    assert_eq!(r.cmd(&["LLEN", "l"]), ":2\r\n");
    assert!(!dir.join("appendonly.aof").exists());
    assert_eq!(
        manifest(&dir),
        "file appendonly.aof seq 1 type b\nfile appendonly.aof.1.incr.aof seq 1 type i\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// INFO persistence reports the AOF's sizes and status as redis-server
/// does; the AOF's location is fixed at startup, as in Redis.
#[test]
fn info_reports_the_aof() {
    let dir = temp_dir("aof-info");
    let conf = aof_conf(&dir, "");
    let server = Server::lapse(&[conf.to_str().unwrap()]);
    let mut r = server.raw();
    assert_eq!(r.cmd(&["SET", "k", "v"]), "+OK\r\n");
    let size = number(&mut r, "aof_current_size");
    let base = number(&mut r, "aof_base_size");
    let incr = std::fs::metadata(dir.join("appendonlydir/appendonly.aof.1.incr.aof"))
        .unwrap()
        .len() as i64;
    assert_eq!(size, base + incr);
    assert_eq!(
        common::info_field(&mut r, "persistence", "aof_last_write_status"),
        "ok"
    );
    assert_eq!(number(&mut r, "aof_buffer_length"), 0);
    assert_eq!(
        r.cmd(&["CONFIG", "GET", "appendfsync"]),
        "*2\r\n$11\r\nappendfsync\r\n$8\r\neverysec\r\n"
    );
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "appenddirname", "x"]),
        "-ERR CONFIG SET failed (possibly related to argument 'appenddirname') - can't set immutable config\r\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A rewrite's base holds the data of its start while writes go on (the
/// writes land in the new increment): after the rewrite and more writes,
/// a crash and a restart give the live data's digest, in lapse and in
/// redis-server.
#[test]
fn a_rewrite_under_writes_loses_and_repeats_nothing() {
    let dir = temp_dir("aof-rewrite-writes");
    let conf = aof_conf(&dir, "");
    let conf = conf.to_str().unwrap();
    let first = Server::lapse(&[conf]);
    let mut r = first.raw();
    for i in 0..3000 {
        let k = format!("k{i}");
        r.cmd(&["SET", &k, &i.to_string()]);
        if i % 3 == 0 {
            r.cmd(&["PEXPIRE", &k, "400"]);
        }
    }
    // One key per 200 µs: the base takes about 0.6 s.
    assert_eq!(
        r.cmd(&["CONFIG", "SET", "rdb-key-save-delay", "200"]),
        "+OK\r\n"
    );
    assert_eq!(
        r.cmd(&["BGREWRITEAOF"]),
        "+Background append only file rewriting started\r\n"
    );
    let mut i = 0;
    while number(&mut r, "aof_rewrite_in_progress") == 1 {
        let k = format!("k{}", (i * 7) % 3000);
        r.cmd(&["INCR", &k]);
        r.cmd(&["APPEND", &format!("k{}", (i * 13) % 3000), "x"]);
        r.cmd(&["DEL", &format!("k{}", (i * 17) % 3000)]);
        r.cmd(&["RPUSH", "list", &i.to_string()]);
        r.cmd(&["EXPIRE", &format!("k{}", (i * 19) % 3000), "1000"]);
        i += 1;
    }
    assert!(i > 20, "the rewrite ended too soon to test anything");
    assert_eq!(
        common::info_field(&mut r, "persistence", "aof_last_bgrewrite_status"),
        "ok"
    );
    for j in 0..50 {
        r.cmd(&["INCR", &format!("k{j}")]);
    }
    // Let the short deadlines pass, and make sure every such key is gone
    // (a lookup deletes it and logs its DEL), so that both servers hold
    // the same keys whatever their active expiry did meanwhile.
    std::thread::sleep(Duration::from_millis(500));
    let short: Vec<String> = (0..3000).step_by(3).map(|i| format!("k{i}")).collect();
    let mut exists: Vec<&str> = vec!["EXISTS"];
    exists.extend(short.iter().map(String::as_str));
    r.cmd(&exists);
    r.cmd(&["SET", "last", "write"]);
    let digest = r.cmd(&["DEBUG", "DIGEST"]);
    crash(first);
    let second = Server::lapse(&[conf]);
    assert_eq!(second.raw().cmd(&["DEBUG", "DIGEST"]), digest);
    drop(second);
    let Some(redis) = Server::redis_with(&["--dir", dir.to_str().unwrap(), "--appendonly", "yes"])
    else {
        return;
    };
    assert_eq!(redis.raw().cmd(&["DEBUG", "DIGEST"]), digest);
    drop(redis);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A full disk (here: a file-size limit the AOF outgrows) turns into
/// MISCONF errors on writes and `aof_last_write_status:err`; when the disk
/// has room again the cron's retry writes what was waiting, writes are
/// accepted again, and nothing acknowledged is missing after a restart.
#[test]
fn a_full_disk_refuses_writes_and_recovers_when_the_disk_does() {
    let dir = temp_dir("aof-disk-full");
    let conf = aof_conf(&dir, "");
    let conf = conf.to_str().unwrap();
    // 64 KiB per file; SIGXFSZ ignored so that a write past it fails
    // with EFBIG instead of killing the process.
    let server = Server::lapse_in_shell("trap '' XFSZ;", "prlimit --fsize=65536: --", &[conf]);
    let mut r = server.raw();
    let value = "v".repeat(1000);
    let mut acknowledged = Vec::new();
    let mut refused = None;
    for i in 0..200 {
        let key = format!("k{i}");
        let reply = r.cmd(&["SET", &key, &value]);
        if reply == "+OK\r\n" {
            acknowledged.push(key);
        } else {
            refused = Some(reply);
            break;
        }
    }
    let refused = refused.expect("the AOF never hit the limit");
    assert!(
        refused.starts_with("-MISCONF Errors writing to the AOF file: File too large"),
        "{refused}"
    );
    assert_eq!(
        common::info_field(&mut r, "persistence", "aof_last_write_status"),
        "err"
    );
    assert!(r.cmd(&["PING"]).starts_with("-MISCONF"));
    assert_eq!(
        r.cmd(&["GET", "k0"]).len(),
        "$1000\r\n".len() + 1000 + 2,
        "reads still work"
    );
    let pid = server.child.id().to_string();
    let raised = std::process::Command::new("prlimit")
        .args(["--pid", &pid, "--fsize=unlimited:"])
        .status()
        .unwrap();
    assert!(raised.success());
    assert!(
        common::eventually(Duration::from_secs(10), || {
            common::info_field(&mut r, "persistence", "aof_last_write_status") == "ok"
        }),
        "the AOF never recovered"
    );
    assert_eq!(r.cmd(&["SET", "after", "recovery"]), "+OK\r\n");
    acknowledged.push("after".into());
    crash(server);
    let restarted = Server::lapse(&[conf]);
    let mut r = restarted.raw();
    for key in &acknowledged {
        assert_eq!(r.cmd(&["EXISTS", key]), ":1\r\n", "{key} was lost");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The AOF rewrites itself when it has grown by
/// `auto-aof-rewrite-percentage` over its size after the last rewrite and
/// is past `auto-aof-rewrite-min-size`; the data stays whole.
#[test]
fn the_aof_rewrites_itself_when_it_has_grown_enough() {
    let dir = temp_dir("aof-auto");
    let conf = aof_conf(
        &dir,
        "auto-aof-rewrite-min-size 20kb\nauto-aof-rewrite-percentage 100\n",
    );
    let conf = conf.to_str().unwrap();
    let server = Server::lapse(&[conf]);
    let mut r = server.raw();
    assert_eq!(number(&mut r, "aof_rewrites"), 0);
    let value = "v".repeat(100);
    // The same few keys over and over: a rewrite shrinks the AOF to them.
    for i in 0..400 {
        r.cmd(&["SET", &format!("k{}", i % 10), &value]);
    }
    assert!(
        common::eventually(Duration::from_secs(10), || number(&mut r, "aof_rewrites")
            >= 1),
        "no automatic rewrite"
    );
    wait_for_rewrite(&mut r);
    assert!(manifest(&dir).contains("appendonly.aof.2.base.rdb"));
    assert!(number(&mut r, "aof_current_size") < 20 * 1024);
    let digest = r.cmd(&["DEBUG", "DIGEST"]);
    crash(server);
    let server = Server::lapse(&[conf]);
    assert_eq!(server.raw().cmd(&["DEBUG", "DIGEST"]), digest);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Big values (written in pieces by a background save or rewrite) reload
/// whole: through BGSAVE into redis-server (and redis-check-rdb), through
/// a command base and an RDB-preamble base into lapse.
#[test]
fn big_values_written_in_pieces_reload_everywhere() {
    let dir = temp_dir("aof-big");
    let conf = aof_conf(&dir, "aof-use-rdb-preamble no\n");
    let conf = conf.to_str().unwrap();
    let first = Server::lapse(&[conf]);
    let mut r = first.raw();
    for chunk in 0..10 {
        let members: Vec<String> = (0..1000)
            .map(|i| format!("m{}", chunk * 1000 + i))
            .collect();
        let mut args: Vec<&str> = vec!["RPUSH", "biglist"];
        args.extend(members.iter().map(String::as_str));
        r.cmd(&args);
        args[0] = "SADD";
        args[1] = "bigset";
        r.cmd(&args);
        let mut pairs: Vec<String> = Vec::new();
        for m in &members {
            pairs.push(format!("{}", m.len()));
            pairs.push(m.clone());
        }
        let mut zadd: Vec<&str> = vec!["ZADD", "bigz"];
        zadd.extend(pairs.iter().map(String::as_str));
        r.cmd(&zadd);
        let mut hset: Vec<&str> = vec!["HSET", "bighash"];
        for m in &members {
            hset.push(m);
            hset.push("value");
        }
        r.cmd(&hset);
    }
    assert_eq!(
        r.cmd(&["SET", "bigstring", &"s".repeat(3 << 20)]),
        "+OK\r\n"
    );
    assert_eq!(r.cmd(&["PEXPIRE", "bigset", "1000000"]), ":1\r\n");
    let digest = r.cmd(&["DEBUG", "DIGEST"]);
    r.cmd(&["BGREWRITEAOF"]);
    wait_for_rewrite(&mut r);
    assert!(manifest(&dir).contains(".base.aof"));
    assert_eq!(r.cmd(&["BGSAVE"]), "+Background saving started\r\n");
    assert!(common::eventually(Duration::from_secs(30), || {
        number(&mut r, "rdb_bgsave_in_progress") == 0
    }));
    crash(first);
    let second = Server::lapse(&[conf, "--aof-use-rdb-preamble", "yes"]);
    let mut r = second.raw();
    assert_eq!(r.cmd(&["DEBUG", "DIGEST"]), digest);
    r.cmd(&["BGREWRITEAOF"]);
    wait_for_rewrite(&mut r);
    assert_eq!(r.cmd(&["DEBUG", "LOADAOF"]), "+OK\r\n");
    assert_eq!(r.cmd(&["DEBUG", "DIGEST"]), digest);
    drop(second);
    let rdb = dir.join("dump.rdb");
    if let Some(out) = run_tool("redis-check-rdb", &[rdb.as_os_str()]) {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("Checksum OK"),
            "{text}"
        );
    }
    let Some(redis) = Server::redis_with(&["--dir", dir.to_str().unwrap()]) else {
        return;
    };
    assert_eq!(redis.raw().cmd(&["DEBUG", "DIGEST"]), digest);
    drop(redis);
    let _ = std::fs::remove_dir_all(&dir);
}

/// DEBUG LOADAOF and DEBUG RELOAD are not written to the AOF (nor
/// replicated): replaying one from the file would load the file again,
/// without end (it overflowed the stack in Redis's own expire tests).
/// Nor are the commands the replay runs counted as client calls.
#[test]
fn debug_loads_are_not_appended_and_replayed_commands_are_not_counted() {
    let dir = temp_dir("aof-debug-load");
    let conf = aof_conf(&dir, "");
    let conf = conf.to_str().unwrap();
    let server = Server::lapse(&[conf, "--enable-debug-command", "yes"]);
    let mut r = server.raw();
    assert_eq!(r.cmd(&["SET", "k", "v"]), "+OK\r\n");
    assert_eq!(r.cmd(&["MULTI"]), "+OK\r\n");
    assert_eq!(r.cmd(&["INCR", "n"]), "+QUEUED\r\n");
    assert_eq!(r.cmd(&["EXEC"]), "*1\r\n:1\r\n");
    for _ in 0..3 {
        assert_eq!(r.cmd(&["DEBUG", "LOADAOF"]), "+OK\r\n");
    }
    assert_eq!(r.cmd(&["DEBUG", "RELOAD"]), "+OK\r\n");
    assert_eq!(r.cmd(&["GET", "k"]), "$1\r\nv\r\n");
    assert_eq!(r.cmd(&["CONFIG", "RESETSTAT"]), "+OK\r\n");
    assert_eq!(r.cmd(&["DEBUG", "LOADAOF"]), "+OK\r\n");
    let stats = r.cmd(&["INFO", "commandstats"]);
    assert!(stats.contains("cmdstat_debug|loadaof:calls=1,"), "{stats}");
    for replayed in ["set", "incr", "multi", "exec"] {
        assert!(!stats.contains(&format!("cmdstat_{replayed}:")), "{stats}");
    }
    let incr: Vec<u8> = std::fs::read_dir(dir.join("appendonlydir"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".incr.aof"))
        .flat_map(|p| std::fs::read(p).unwrap())
        .collect();
    let text = String::from_utf8_lossy(&incr).to_ascii_lowercase();
    assert!(text.contains("set") && !text.contains("debug"), "{text}");
    drop(server);
    let again = Server::lapse(&[conf, "--enable-debug-command", "yes"]);
    let mut r = again.raw();
    assert_eq!(r.cmd(&["GET", "k"]), "$1\r\nv\r\n");
    assert_eq!(r.cmd(&["GET", "n"]), "$1\r\n1\r\n");
    let processed = common::info_field(&mut r, "stats", "total_commands_processed");
    assert_eq!(
        processed, "2",
        "the GETs; the replayed SET and transaction are not client calls"
    );
    let stats = r.cmd(&["INFO", "commandstats"]);
    assert!(stats.contains("cmdstat_get:calls=2,"), "{stats}");
    for replayed in ["set", "incr", "multi", "exec"] {
        assert!(!stats.contains(&format!("cmdstat_{replayed}:")), "{stats}");
    }
}

/// An empty stream that never had an entry (last ID 0-0), with a group,
/// survives an AOF rewrite without the RDB preamble: it is written as
/// Redis writes it (XADD ... MAXLEN 0 0-1, then XSETID 0-0), which XADD
/// accepts, and loads back the same.
#[test]
fn an_empty_stream_with_no_last_id_survives_a_plain_aof_rewrite() {
    let dir = temp_dir("empty-stream-aof");
    let conf = conf_in(&dir, "appendonly yes\naof-use-rdb-preamble no\n");
    let server = Server::lapse(&[conf.to_str().unwrap()]);
    let mut r = server.raw();
    assert_eq!(
        r.cmd(&[
            "XGROUP",
            "CREATE",
            "mystream",
            "group-name",
            "$",
            "MKSTREAM"
        ]),
        "+OK\r\n"
    );
    let groups = r.cmd(&["XINFO", "GROUPS", "mystream"]);
    r.cmd(&["BGREWRITEAOF"]);
    wait_for_rewrite(&mut r);
    let base = std::fs::read_dir(dir.join("appendonlydir"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains(".base.aof"))
        .expect("a base file");
    let text = String::from_utf8_lossy(&std::fs::read(base).unwrap()).into_owned();
    assert!(
        text.contains("MAXLEN\r\n$1\r\n0\r\n$3\r\n0-1\r\n"),
        "{text}"
    );
    assert_eq!(r.cmd(&["DEBUG", "LOADAOF"]), "+OK\r\n");
    assert_eq!(r.cmd(&["XINFO", "GROUPS", "mystream"]), groups);
    assert_eq!(r.cmd(&["XLEN", "mystream"]), ":0\r\n");
}
