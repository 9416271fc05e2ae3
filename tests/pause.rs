//! CLIENT PAUSE / UNPAUSE against a real redis-server: which requests
//! wait (writes, scripts, EXEC of writes; everything under ALL), that
//! they run in order once the pause ends, and that meanwhile no key
//! expires. Each scenario runs on lapse and on redis-server and their
//! observations are compared.

mod common;

use std::io::BufRead;
use std::time::{Duration, Instant};

use common::{eventually, info_field, same_on_lapse_and_redis, Raw, Server};

/// True when nothing arrives on `r` for `ms` (the request is held).
fn silent_for(r: &mut Raw, ms: u64) -> bool {
    let stream = r.reader.get_ref();
    stream
        .set_read_timeout(Some(Duration::from_millis(ms)))
        .unwrap();
    let silent = match r.reader.fill_buf() {
        // Bytes (a reply) or the end of the stream: not held.
        Ok(_) => false,
        Err(e) => matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    };
    r.reader
        .get_ref()
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    silent
}

fn flags_of(admin: &mut Raw, id: &str) -> String {
    let list = admin.cmd(&["CLIENT", "LIST", "ID", id]);
    list.split_whitespace()
        .find_map(|f| f.strip_prefix("flags="))
        .unwrap_or_default()
        .to_string()
}

/// PAUSE WRITE: reads answer, writes wait (and the reads pipelined behind
/// them), a key past its deadline reads as missing but stays; UNPAUSE
/// runs what waited in order and expiry resumes.
fn write_pause(server: &Server) -> Vec<String> {
    let mut admin = server.raw();
    let mut w = server.raw();
    let mut seen = Vec::new();
    seen.push(admin.cmd(&["SET", "brief", "v", "PX", "150"]));
    seen.push(admin.cmd(&["SET", "plain", "1"]));
    let id = w.cmd(&["CLIENT", "ID"]);
    let id = id.trim().trim_start_matches(':').to_string();
    seen.push(admin.cmd(&["CLIENT", "PAUSE", "20000", "WRITE"]));
    seen.push(w.cmd(&["GET", "plain"]));
    seen.push(w.cmd(&["EVAL_RO", "return redis.call('GET', KEYS[1])", "1", "plain"]));
    w.send_cmd(&[b"SET", b"a", b"1"]);
    w.send_cmd(&[b"GET", b"a"]);
    seen.push(format!("held: {}", silent_for(&mut w, 400)));
    seen.push(format!("flags: {}", flags_of(&mut admin, &id)));
    // Past its deadline: missing to readers, still there.
    seen.push(admin.cmd(&["GET", "brief"]));
    seen.push(admin.cmd(&["DBSIZE"]));
    seen.push(info_field(&mut admin, "stats", "expired_keys"));
    let mut publisher = server.raw();
    publisher.send_cmd(&[b"PUBLISH", b"ch", b"m"]);
    seen.push(format!("publish held: {}", silent_for(&mut publisher, 200)));
    seen.push(admin.cmd(&["CLIENT", "UNPAUSE"]));
    seen.push(String::from_utf8_lossy(&w.reply()).into_owned());
    seen.push(String::from_utf8_lossy(&w.reply()).into_owned());
    seen.push(String::from_utf8_lossy(&publisher.reply()).into_owned());
    let expired = eventually(Duration::from_secs(10), || {
        admin.cmd(&["DBSIZE"]) == ":2\r\n"
    });
    seen.push(format!("expired after: {expired}"));
    seen
}

/// Under WRITE a write is held even while it is only being queued in a
/// MULTI, and an EXEC of a transaction holding a write is held; an EXEC
/// of reads is not.
fn transactions_under_write_pause(server: &Server) -> Vec<String> {
    let mut admin = server.raw();
    let mut w = server.raw();
    let mut seen = Vec::new();
    seen.push(w.cmd(&["MULTI"]));
    seen.push(w.cmd(&["INCR", "n"]));
    seen.push(admin.cmd(&["CLIENT", "PAUSE", "20000", "WRITE"]));
    w.send_cmd(&[b"EXEC"]);
    seen.push(format!("exec held: {}", silent_for(&mut w, 300)));
    seen.push(admin.cmd(&["CLIENT", "UNPAUSE"]));
    seen.push(String::from_utf8_lossy(&w.reply()).into_owned());
    seen.push(admin.cmd(&["CLIENT", "PAUSE", "20000", "WRITE"]));
    seen.push(w.cmd(&["MULTI"]));
    seen.push(w.cmd(&["GET", "n"]));
    seen.push(w.cmd(&["EXEC"]));
    seen.push(w.cmd(&["MULTI"]));
    w.send_cmd(&[b"SET", b"m", b"1"]);
    seen.push(format!("queueing held: {}", silent_for(&mut w, 300)));
    seen.push(admin.cmd(&["CLIENT", "UNPAUSE"]));
    seen.push(String::from_utf8_lossy(&w.reply()).into_owned());
    seen.push(w.cmd(&["EXEC"]));
    seen
}

/// PAUSE ALL holds every command, and ends by itself; a second PAUSE
/// extends it, never shortens it; the errors are Redis's.
fn all_pause_and_errors(server: &Server) -> Vec<String> {
    let mut admin = server.raw();
    let mut w = server.raw();
    let mut seen = Vec::new();
    let started = Instant::now();
    seen.push(admin.cmd(&["CLIENT", "PAUSE", "600"]));
    seen.push(w.cmd(&["PING"]));
    let waited = started.elapsed();
    // A second PAUSE (held until the first ends, being a command).
    seen.push(admin.cmd(&["CLIENT", "PAUSE", "100", "WRITE"]));
    seen.push(format!(
        "waited about the pause: {}",
        waited >= Duration::from_millis(300)
    ));
    for bad in [
        &["CLIENT", "PAUSE", "abc"][..],
        &["CLIENT", "PAUSE", "-1"],
        &["CLIENT", "PAUSE", "10", "foo"],
        &["CLIENT", "PAUSE", "1.5"],
        &["CLIENT", "PAUSE", "1", "WRITE", "extra"],
        &["CLIENT", "PAUSE", "99999999999999999999"],
        &["CLIENT", "PAUSE", "9223372036854775807"],
        &["CLIENT", "UNPAUSE", "x"],
        &["CLIENT", "PAUSE"],
    ] {
        seen.push(admin.cmd(bad));
    }
    seen.push(admin.cmd(&["CLIENT", "PAUSE", "0"]));
    seen.push(w.cmd(&["PING"]));
    seen
}

#[test]
fn write_pause_holds_writes_and_expiry_until_unpause() {
    let seen = same_on_lapse_and_redis(write_pause);
    assert_eq!(seen[5], "held: true");
    assert_eq!(seen[6], "flags: b");
    assert_eq!(seen[7], "$-1\r\n");
    assert_eq!(seen[8], ":2\r\n", "the expired key was deleted");
    assert_eq!(seen[10], "publish held: true");
    assert_eq!(seen[12], "+OK\r\n");
    assert_eq!(seen[13], "$1\r\n1\r\n");
    assert_eq!(seen[15], "expired after: true");
}

#[test]
fn transactions_wait_for_a_write_pause_as_in_redis() {
    let seen = same_on_lapse_and_redis(transactions_under_write_pause);
    assert_eq!(seen[3], "exec held: true");
    assert_eq!(seen[11], "queueing held: true");
}

#[test]
fn all_pause_holds_everything_then_ends_by_itself() {
    let seen = same_on_lapse_and_redis(all_pause_and_errors);
    assert_eq!(seen[3], "waited about the pause: true");
    assert_eq!(seen.last().unwrap(), "+PONG\r\n");
}

/// Each request (the last of a group sent in order) under PAUSE WRITE:
/// whether it is held, and what INFO `blocked_clients` and CLIENT LIST
/// show meanwhile, then its reply once the pause ends. Scripts go by the
/// flags they declare (Redis's `getCommandFlags`): EVAL without a shebang
/// may replicate and waits, one with `no-writes` runs, EVAL_RO of a
/// script that did not declare `no-writes` waits (and is refused after);
/// a transaction's write waits where it is queued, EXEC of reads runs.
const HELD_OR_NOT: &[&[&[&str]]] = &[
    &[&["SET", "k", "v"]],
    &[&["GET", "k"]],
    &[&["EVAL", "return 1", "0"]],
    &[&["EVAL", "#!lua flags=no-writes\nreturn 1", "0"]],
    &[&["EVAL", "#!lua\nreturn 1", "0"]],
    &[&["EVAL", "#!lua flags=allow-stale,no-writes\nreturn 2", "0"]],
    &[&["EVAL_RO", "return 1", "0"]],
    &[&["EVAL_RO", "#!lua\nreturn 1", "0"]],
    &[&["EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"]],
    &[&["SCRIPT", "LOAD", "#!lua flags=no-writes\nreturn 3"]],
    &[&["FCALL", "ro", "0"]],
    &[&["FCALL", "rw", "0"]],
    &[&["FCALL", "nosuch", "0"]],
    &[&["FCALL_RO", "ro", "0"]],
    &[&["FCALL_RO", "rw", "0"]],
    &[&["PUBLISH", "c", "m"]],
    &[&["SPUBLISH", "c", "m"]],
    &[&["PFCOUNT", "hll"]],
    &[&["MULTI"], &["GET", "k"], &["EXEC"]],
    &[&["MULTI"], &["SET", "k", "1"]],
    &[
        &["MULTI"],
        &["EVAL", "#!lua flags=no-writes\nreturn 1", "0"],
        &["EXEC"],
    ],
    &[&["MULTI"], &["EVAL", "return 1", "0"]],
    &[&["FUNCTION", "DELETE", "nolib"]],
    &[&["SWAPDB", "0", "1"]],
    &[&["PING"]],
];

fn what_write_pause_holds(server: &Server) -> Vec<String> {
    let mut admin = server.raw();
    let library = "#!lua name=l\n\
        redis.register_function{function_name='ro', callback=function() return 1 end, flags={'no-writes'}}\n\
        redis.register_function('rw', function() return 2 end)";
    assert_eq!(admin.cmd(&["FUNCTION", "LOAD", library]), "$1\r\nl\r\n");
    let mut seen = Vec::new();
    for group in HELD_OR_NOT {
        let mut c = server.raw();
        let id = c.cmd(&["CLIENT", "ID"]);
        let id = id.trim().trim_start_matches(':').to_string();
        assert_eq!(
            admin.cmd(&["CLIENT", "PAUSE", "100000", "WRITE"]),
            "+OK\r\n"
        );
        let (last, before) = group.split_last().unwrap();
        for args in before {
            c.cmd(args);
        }
        let bytes: Vec<&[u8]> = last.iter().map(|a| a.as_bytes()).collect();
        c.send_cmd(&bytes);
        let held = silent_for(&mut c, 150);
        let blocked = info_field(&mut admin, "clients", "blocked_clients");
        let list = admin.cmd(&["CLIENT", "LIST", "ID", &id]);
        let field = |name: &str| {
            list.split_whitespace()
                .find_map(|f| f.strip_prefix(name))
                .unwrap_or_default()
                .to_string()
        };
        let (flags, cmd) = (field("flags="), field("cmd="));
        assert_eq!(admin.cmd(&["CLIENT", "UNPAUSE"]), "+OK\r\n");
        let reply = String::from_utf8_lossy(&c.reply()).into_owned();
        seen.push(format!(
            "{last:?}: held {held}, blocked_clients {blocked}, flags {flags}, cmd {cmd}, {reply:?}"
        ));
    }
    seen
}

#[test]
fn a_write_pause_holds_what_may_replicate_by_the_flags_scripts_declare() {
    let seen = same_on_lapse_and_redis(what_write_pause_holds);
    let held = |n: usize| seen[n].contains("held true, blocked_clients 1, flags b");
    assert!(held(0) && !held(1), "{seen:?}");
    assert!(
        held(2) && !held(3) && held(4) && held(7) && !held(10),
        "{seen:?}"
    );
    assert!(seen[0].contains("cmd set"), "{seen:?}");
}
