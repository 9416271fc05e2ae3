//! Client-side caching (CLIENT TRACKING) against a real redis-server:
//! every scenario runs on lapse and on redis-server and the bytes each
//! connection receives are compared: RESP3 pushes in default, OPTIN,
//! NOLOOP and BCAST modes, RESP2 redirection to a `__redis__:invalidate`
//! subscriber, invalidations on writes, expiry and flushes, a redirect
//! target that left, the errors, TRACKINGINFO, GETREDIR and CLIENT LIST.

mod common;

use std::io::BufRead;
use std::time::Duration;

use common::{eventually, same_on_lapse_and_redis, Raw, Server};

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8_lossy(&bytes).into_owned()
}

fn id_of(r: &mut Raw) -> String {
    r.cmd(&["CLIENT", "ID"])
        .trim()
        .trim_start_matches(':')
        .to_string()
}

/// Whatever arrived within `ms` (pushes sent without a request).
fn pending(r: &mut Raw, ms: u64) -> String {
    r.reader
        .get_ref()
        .set_read_timeout(Some(Duration::from_millis(ms)))
        .unwrap();
    let mut got = Vec::new();
    while let Ok(buf) = r.reader.fill_buf() {
        if buf.is_empty() {
            break;
        }
        let n = buf.len();
        got.extend_from_slice(buf);
        r.reader.consume(n);
    }
    r.reader
        .get_ref()
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    text(got)
}

/// RESP3, default mode: reads are remembered, a change by another client
/// invalidates once, a change by the client itself arrives after its
/// reply (not at all with NOLOOP), expiry and FLUSHALL invalidate.
fn resp3_default_mode(server: &Server) -> Vec<String> {
    let mut c = server.raw();
    let mut other = server.raw();
    let mut seen = Vec::new();
    c.cmd(&["HELLO", "3"]);
    seen.push(c.cmd(&["CLIENT", "TRACKING", "ON"]));
    seen.push(c.cmd(&["GET", "k"]));
    seen.push(c.cmd(&["MGET", "a", "b"]));
    seen.push(other.cmd(&["SET", "k", "1"]));
    seen.push(other.cmd(&["MSET", "a", "1", "b", "2"]));
    seen.push(other.cmd(&["SET", "k", "2"]));
    // Pushes first, then the reply: k once, a and b.
    c.send_cmd(&[b"PING"]);
    seen.push(text(c.reply()));
    seen.push(text(c.reply()));
    seen.push(text(c.reply()));
    seen.push(text(c.reply()));
    // Its own write: the reply, then the push.
    seen.push(c.cmd(&["GET", "k"]));
    seen.push(c.cmd(&["SET", "k", "3"]));
    seen.push(text(c.reply()));
    // Expiry invalidates.
    seen.push(other.cmd(&["SET", "e", "v", "PX", "100"]));
    seen.push(c.cmd(&["GET", "e"]));
    let mut expired = String::new();
    let found = eventually(Duration::from_secs(10), || {
        expired.push_str(&pending(&mut c, 50));
        expired.contains("invalidate")
    });
    seen.push(format!("{found} {expired}"));
    seen.push(c.cmd(&["GET", "x"]));
    seen.push(other.cmd(&["FLUSHALL"]));
    seen.push(c.cmd(&["PING"]));
    seen.push(text(c.reply()));
    seen.push(c.cmd(&["CLIENT", "TRACKING", "ON", "NOLOOP"]));
    seen.push(c.cmd(&["GET", "n"]));
    seen.push(c.cmd(&["SET", "n", "1"]));
    seen.push(pending(&mut c, 100));
    seen.push(c.cmd(&["CLIENT", "TRACKINGINFO"]));
    seen.push(c.cmd(&["CLIENT", "GETREDIR"]));
    let info = c.cmd(&["CLIENT", "INFO"]);
    let flags = info.split_whitespace().find(|w| w.starts_with("flags="));
    seen.push(format!("{flags:?}"));
    seen.push(c.cmd(&["CLIENT", "TRACKING", "OFF"]));
    seen.push(c.cmd(&["CLIENT", "TRACKINGINFO"]));
    seen
}

/// RESP2 with REDIRECT to a subscriber of `__redis__:invalidate`, and
/// what happens when that subscriber leaves.
fn resp2_redirect(server: &Server) -> Vec<String> {
    let mut sink = server.raw();
    let mut c = server.raw();
    let mut other = server.raw();
    let mut seen = Vec::new();
    let sink_id = id_of(&mut sink);
    seen.push(sink.cmd(&["SUBSCRIBE", "__redis__:invalidate"]));
    seen.push(c.cmd(&["CLIENT", "TRACKING", "ON", "REDIRECT", &sink_id]));
    seen.push(c.cmd(&["CLIENT", "GETREDIR"]).replace(&sink_id, "ID"));
    seen.push(c.cmd(&["GET", "k"]));
    seen.push(other.cmd(&["SET", "k", "1"]));
    seen.push(text(sink.reply()));
    seen.push(other.cmd(&["FLUSHALL"]));
    seen.push(text(sink.reply()));
    let list = c.cmd(&["CLIENT", "LIST", "ID", &id_of(&mut other)]);
    seen.push(format!(
        "{:?}",
        list.split_whitespace().find(|w| w.starts_with("redir="))
    ));
    drop(sink);
    // The target left: RESP2 gets nothing, the client is flagged.
    seen.push(c.cmd(&["GET", "k"]));
    let gone = eventually(Duration::from_secs(5), || {
        other.cmd(&["SET", "k", "2"]);
        c.cmd(&["GET", "k"]);
        c.cmd(&["CLIENT", "TRACKINGINFO"])
            .contains("broken_redirect")
    });
    seen.push(format!("broken: {gone}"));
    seen
}

/// BCAST with prefixes (one message per round, NOLOOP's own keys left
/// out), OPTIN with CACHING YES, and the errors.
fn bcast_optin_and_errors(server: &Server) -> Vec<String> {
    let mut c = server.raw();
    let mut other = server.raw();
    let mut seen = Vec::new();
    c.cmd(&["HELLO", "3"]);
    seen.push(c.cmd(&[
        "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "user:", "PREFIX", "job:",
    ]));
    seen.push(other.cmd(&["SET", "user:1", "a"]));
    seen.push(other.cmd(&["SET", "other", "a"]));
    seen.push(c.reply().len().to_string());
    seen.push(c.cmd(&["CLIENT", "TRACKINGINFO"]));
    let flags = c.cmd(&["CLIENT", "INFO"]);
    seen.push(format!(
        "{:?}",
        flags.split_whitespace().find(|w| w.starts_with("flags="))
    ));
    for bad in [
        &["CLIENT", "TRACKING", "ON", "PREFIX", "user:1"][..],
        &["CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "us"],
        &["CLIENT", "TRACKING", "ON"],
    ] {
        seen.push(c.cmd(bad));
    }
    seen.push(c.cmd(&["CLIENT", "TRACKING", "OFF"]));
    for bad in [
        &[
            "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a", "PREFIX", "ab",
        ][..],
        &["CLIENT", "TRACKING", "ON", "BCAST", "OPTIN"],
        &["CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT"],
        &["CLIENT", "TRACKING", "ON", "REDIRECT", "999999"],
        &["CLIENT", "TRACKING", "ON", "REDIRECT", "x"],
        &["CLIENT", "TRACKING", "ON", "FOO"],
        &["CLIENT", "TRACKING", "MAYBE"],
        &["CLIENT", "CACHING", "YES"],
    ] {
        seen.push(c.cmd(bad));
    }
    seen.push(c.cmd(&["CLIENT", "TRACKING", "ON", "OPTIN"]));
    seen.push(c.cmd(&["CLIENT", "CACHING", "NO"]));
    seen.push(c.cmd(&["CLIENT", "TRACKING", "ON", "OPTOUT"]));
    seen.push(c.cmd(&["GET", "not-cached"]));
    seen.push(c.cmd(&["CLIENT", "CACHING", "YES"]));
    seen.push(c.cmd(&["GET", "cached"]));
    seen.push(other.cmd(&["SET", "not-cached", "1"]));
    seen.push(other.cmd(&["SET", "cached", "1"]));
    seen.push(c.cmd(&["PING"]));
    seen.push(pending(&mut c, 100));
    seen
}

#[test]
fn resp3_pushes_invalidate_reads_on_writes_expiry_and_flush() {
    let seen = same_on_lapse_and_redis(resp3_default_mode);
    assert_eq!(seen[6], ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n");
    assert!(seen[15].starts_with("true"), "{}", seen[15]);
}

#[test]
fn resp2_redirect_sends_invalidate_messages_to_the_subscriber() {
    let seen = same_on_lapse_and_redis(resp2_redirect);
    assert_eq!(
        seen[5],
        "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$1\r\nk\r\n"
    );
    assert_eq!(seen.last().unwrap(), "broken: true");
}

#[test]
fn bcast_optin_optout_and_errors_as_redis() {
    same_on_lapse_and_redis(bcast_optin_and_errors);
}

/// Scripts: a client's own writes through a script are its own for
/// NOLOOP; a script that reads anything lets its caller cache the keys it
/// declared (not the keys its commands name), one that only writes does
/// not (Redis's `script_caller`).
fn scripts_and_tracking(server: &Server) -> Vec<String> {
    let mut c = server.raw();
    let mut other = server.raw();
    let mut seen = Vec::new();
    c.cmd(&["HELLO", "3"]);
    seen.push(c.cmd(&["CLIENT", "TRACKING", "ON", "NOLOOP"]));
    seen.push(c.cmd(&["SET", "key1", "1"]));
    seen.push(c.cmd(&["GET", "key1"]));
    seen.push(c.cmd(&[
        "EVAL",
        "return redis.call('set', KEYS[1], '2')",
        "1",
        "key1",
    ]));
    seen.push(c.cmd(&["GET", "key1"]));
    seen.push(pending(&mut c, 100));
    seen.push(c.cmd(&["CLIENT", "TRACKING", "OFF"]));
    seen.push(c.cmd(&["CLIENT", "TRACKING", "ON"]));
    seen.push(other.cmd(&["MSET", "d1", "1", "d2", "1", "x", "1"]));
    seen.push(c.cmd(&["EVAL", "redis.call('set', 'x', 'bar')", "2", "d1", "d2"]));
    seen.push(other.cmd(&["MSET", "d1", "2", "d2", "2"]));
    seen.push(pending(&mut c, 100));
    seen.push(c.cmd(&["EVAL", "redis.call('get', 'x')", "2", "d1", "d2"]));
    seen.push(other.cmd(&["MSET", "x", "3"]));
    seen.push(other.cmd(&["MSET", "d2", "3", "d1", "3"]));
    seen.push(pending(&mut c, 200));
    seen.push(c.cmd(&["EVAL_RO", "redis.call('ping')", "1", "d1"]));
    seen.push(other.cmd(&["SET", "d1", "4"]));
    seen.push(c.cmd(&["EVAL_RO", "redis.call('get', 'x')", "1", "d1"]));
    seen.push(other.cmd(&["SET", "d1", "5"]));
    seen.push(pending(&mut c, 200));
    seen
}

#[test]
fn scripts_track_their_declared_keys_for_their_caller_as_redis() {
    let seen = same_on_lapse_and_redis(scripts_and_tracking);
    assert_eq!(seen[5], "", "NOLOOP: the script's write is the caller's");
    assert_eq!(seen[11], "", "a script that only wrote tracks nothing");
    assert!(
        seen[15].contains("d2") && !seen[15].contains("$1\r\nx"),
        "{}",
        seen[15]
    );
}

/// `tracking-table-max-keys` lowered: the table is brought under it by
/// the cron even when no command follows, and before the next command
/// runs, whose client hears of its dropped keys before that command's
/// own reply (even a QUEUED one: Redis's #11715).
fn table_limit(server: &Server) -> Vec<String> {
    let mut admin = server.raw();
    let mut c = server.raw();
    let mut seen = Vec::new();
    c.cmd(&["HELLO", "3"]);
    seen.push(c.cmd(&["CLIENT", "TRACKING", "ON"]));
    seen.push(c.cmd(&["MGET", "a", "b", "c"]));
    seen.push(admin.cmd(&["CONFIG", "SET", "tracking-table-max-keys", "2"]));
    let mut dropped = String::new();
    let found = eventually(Duration::from_secs(5), || {
        dropped.push_str(&pending(&mut c, 50));
        dropped.contains("invalidate")
    });
    seen.push(format!(
        "cron dropped one: {found} {}",
        dropped.matches("invalidate").count()
    ));
    seen.push(c.cmd(&["MULTI"]));
    seen.push(admin.cmd(&["CONFIG", "SET", "tracking-table-max-keys", "1"]));
    c.send_cmd(&[b"PING"]);
    let first = text(c.reply());
    seen.push(format!(
        "first: {}",
        first.starts_with(">2\r\n$10\r\ninvalidate")
    ));
    seen.push(text(c.reply()));
    seen.push(c.cmd(&["EXEC"]));
    seen.push(admin.cmd(&["CONFIG", "SET", "tracking-table-max-keys", "1000000"]));
    seen
}

#[test]
fn the_tracking_table_is_kept_under_its_limit_as_redis_does() {
    let seen = same_on_lapse_and_redis(table_limit);
    assert_eq!(seen[3], "cron dropped one: true 1");
    assert_eq!(seen[6], "first: true");
    assert_eq!(seen[7], "+QUEUED\r\n");
}
