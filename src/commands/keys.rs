//! Keyspace commands: DEL, EXISTS, TYPE, RENAME, COPY, MOVE, SWAPDB, KEYS,
//! SCAN, RANDOMKEY, DBSIZE, FLUSHDB, FLUSHALL.

use super::aggregate::{reply_scan, ScanArgs};
use super::{db_index_arg, int_arg, is, CmdError, CmdResult, Ctx, Handler};
use crate::db::{EventClass, Ttl};
use crate::glob;
use crate::protocol::{Args, OwnedArgs};

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[
    ("del", del),
    ("unlink", unlink),
    ("exists", exists),
    ("touch", touch),
    ("object|encoding", object_encoding),
    ("object|idletime", object_idletime),
    ("object|freq", object_freq),
    ("object|refcount", object_refcount),
    ("object|help", object_help),
    ("type", type_cmd),
    ("rename", rename),
    ("renamenx", renamenx),
    ("copy", copy),
    ("move", move_cmd),
    ("dump", dump),
    ("restore", restore),
    ("restore-asking", restore),
    ("swapdb", swapdb),
    ("keys", keys),
    ("scan", scan),
    ("randomkey", randomkey),
    ("dbsize", dbsize),
    ("flushdb", flushdb),
    ("flushall", flushall),
];

/// DEL and UNLINK: UNLINK always lets the lazyfree thread free big values,
/// DEL when `lazyfree-lazy-user-del` says so.
fn del(ctx: &mut Ctx, args: Args) -> CmdResult {
    let lazy = ctx.server.config.lazyfree.user_del;
    del_generic(ctx, args, lazy)
}

fn unlink(ctx: &mut Ctx, args: Args) -> CmdResult {
    del_generic(ctx, args, true)
}

fn del_generic(ctx: &mut Ctx, args: Args, lazy: bool) -> CmdResult {
    let now_ms = ctx.now_ms;
    let db = ctx.db();
    let mut deleted = 0;
    for key in args.iter().skip(1) {
        if db.delete(key, now_ms, lazy) {
            db.signal(EventClass::GENERIC, "del", key);
            deleted += 1;
        }
    }
    ctx.out().int(deleted as i64);
    Ok(())
}

/// EXISTS and TOUCH: how many of the named keys exist (repeats count).
fn exists(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    let db = ctx.db();
    let found = args.iter().skip(1).filter(|k| db.exists(k, now_ms)).count();
    ctx.out().int(found as i64);
    Ok(())
}

/// TOUCH: EXISTS that records an access of each key.
fn touch(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    let db = ctx.db();
    let found = args
        .iter()
        .skip(1)
        .filter(|k| db.touch_key(k, now_ms))
        .count();
    ctx.out().int(found as i64);
    Ok(())
}

fn object_help(ctx: &mut Ctx, _args: Args) -> CmdResult {
    super::reply_help(
        ctx,
        "OBJECT",
        &[
            "ENCODING <key>",
            "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>",
            "    Return the access frequency index of the <key>. The returned integer is",
            "    proportional to the logarithm of the recent access frequency of the key.",
            "IDLETIME <key>",
            "    Return the idle time of the <key>, that is the approximated number of",
            "    seconds elapsed since the last access to the key.",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the specified",
            "    <key>.",
        ],
    );
    Ok(())
}

/// Integers Redis shares between keys (`OBJ_SHARED_INTEGERS`), whose
/// one object OBJECT REFCOUNT reports with `OBJ_SHARED_REFCOUNT`.
const SHARED_INTEGERS: i64 = 10_000;

/// A value's reference count as Redis reports it: an integer string of
/// 0..9999 is its shared object (unless an LRU or LFU memory limit needs
/// each key's own access data), anything else has one reference.
pub(super) fn refcount_of(
    config: &crate::config::Config,
    value: crate::value::ValueRef<'_>,
    encoding: &str,
) -> i64 {
    let sharing = config.maxmemory == 0 || !config.maxmemory_policy.uses_access_data();
    let shared_int = match value {
        crate::value::ValueRef::Str(s) if encoding == "int" => std::str::from_utf8(s)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .is_some_and(|n| (0..SHARED_INTEGERS).contains(&n)),
        _ => false,
    };
    if sharing && shared_int {
        SHARED_REFCOUNT
    } else {
        1
    }
}
const SHARED_REFCOUNT: i64 = i32::MAX as i64;

/// OBJECT REFCOUNT as Redis answers it (see `refcount_of`).
fn object_refcount(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    let db = ctx.session.db;
    let Some(encoding) = ctx.server.dbs[db].encoding(&args[2], now_ms) else {
        ctx.out().null();
        return Ok(());
    };
    let refcount = match ctx.server.dbs[db].peek(&args[2]) {
        Some((value, _)) => refcount_of(&ctx.server.config, value, encoding),
        None => 1,
    };
    ctx.out().int(refcount);
    Ok(())
}

/// OBJECT IDLETIME: seconds since the key was last used (not counting
/// this look); Redis's error under an LFU policy, which keeps no time.
fn object_idletime(ctx: &mut Ctx, args: Args) -> CmdResult {
    if ctx.server.config.maxmemory_policy.is_lfu() {
        return Err(CmdError::Static(
            "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ));
    }
    let now_ms = ctx.now_ms;
    match ctx.db().access_of(&args[2], now_ms) {
        Some((idle_ms, _)) => ctx.out().int((idle_ms / 1000) as i64),
        None => ctx.out().null(),
    }
    Ok(())
}

/// OBJECT FREQ: the key's logarithmic access counter, decayed; Redis's
/// error unless an LFU policy is set.
fn object_freq(ctx: &mut Ctx, args: Args) -> CmdResult {
    if !ctx.server.config.maxmemory_policy.is_lfu() {
        return Err(CmdError::Static(
            "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
        ));
    }
    let now_ms = ctx.now_ms;
    match ctx.db().access_of(&args[2], now_ms) {
        Some((_, freq)) => ctx.out().int(i64::from(freq)),
        None => ctx.out().null(),
    }
    Ok(())
}

/// OBJECT ENCODING: Redis's name for the representation (see
/// `ValueRef::encoding`); a missing key is a null reply.
fn object_encoding(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    match ctx.db().encoding(&args[2], now_ms) {
        Some(name) => ctx.out().bulk(name.as_bytes()),
        None => ctx.out().null(),
    }
    Ok(())
}

fn type_cmd(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    let name = ctx.db().type_name(&args[1], now_ms).unwrap_or("none");
    ctx.out().simple(name);
    Ok(())
}

/// RENAME and RENAMENX. Returns false if `nx` and the target exists.
fn rename_generic(ctx: &mut Ctx, args: &Args, nx: bool) -> Result<bool, CmdError> {
    let now_ms = ctx.now_ms;
    let (src, dst) = (&args[1], &args[2]);
    let db = ctx.db();
    if !db.contains(src, now_ms) {
        return Err(CmdError::NoSuchKey);
    }
    if src == dst {
        return Ok(!nx);
    }
    if nx && db.contains(dst, now_ms) {
        return Ok(false);
    }
    if let Some(detached) = db.detach(src, now_ms) {
        db.attach(dst, detached, now_ms);
        db.signal(EventClass::GENERIC, "rename_from", src);
        db.signal(EventClass::GENERIC, "rename_to", dst);
    }
    Ok(true)
}

fn rename(ctx: &mut Ctx, args: Args) -> CmdResult {
    rename_generic(ctx, &args, false)?;
    ctx.out().ok();
    Ok(())
}

fn renamenx(ctx: &mut Ctx, args: Args) -> CmdResult {
    let renamed = rename_generic(ctx, &args, true)?;
    ctx.out().int(i64::from(renamed));
    Ok(())
}

fn copy(ctx: &mut Ctx, args: Args) -> CmdResult {
    let mut target_db = ctx.session.db;
    let mut replace = false;
    let mut i = 3;
    while i < args.len() {
        if is(&args[i], "REPLACE") {
            replace = true;
        } else if is(&args[i], "DB") && i + 1 < args.len() {
            target_db = db_index_arg(&args[i + 1], ctx.server.dbs.len(), None)?;
            i += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if ctx.server.cluster.is_some() && (ctx.session.db != 0 || target_db != 0) {
        return Err(CmdError::Static(
            "ERR Copying to another database is not allowed in cluster mode",
        ));
    }
    let (src, dst) = (&args[1], &args[2]);
    if target_db == ctx.session.db && src == dst {
        return Err(CmdError::Static(
            "ERR source and destination objects are the same",
        ));
    }
    let now_ms = ctx.now_ms;
    let source_db = ctx.session.db;
    let dbs = &mut ctx.server.dbs;
    let copied = dbs[source_db].duplicate(src, now_ms).and_then(|copy| {
        let target = &mut dbs[target_db];
        if target.contains(dst, now_ms) && !replace {
            return None;
        }
        target.attach(dst, copy, now_ms);
        target.signal(EventClass::GENERIC, "copy_to", dst);
        Some(())
    });
    ctx.out().int(i64::from(copied.is_some()));
    Ok(())
}

/// DUMP: the value as redis-server 7.0 serializes it (RDB type and
/// encoding, RDB version 10, CRC-64), so RESTORE in either server reads it.
fn dump(ctx: &mut Ctx, args: Args) -> CmdResult {
    let options = crate::persistence::rdb::SaveOptions {
        compress: ctx.server.config.rdbcompression,
        checksum: true,
    };
    let now_ms = ctx.now_ms;
    let db = ctx.session.db;
    let payload = ctx.server.dbs[db]
        .get(&args[1], now_ms)
        .map(|value| crate::persistence::rdb::dump_value(value, options));
    match payload {
        Some(payload) => ctx.out().bulk(&payload),
        None => ctx.out().null(),
    }
    Ok(())
}

/// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f], as
/// Redis 7.0 checks and applies it. A relative TTL is propagated as an
/// absolute one (with ABSTTL); a deadline already passed stores nothing
/// (propagated as DEL if REPLACE removed an old value). IDLETIME sets the
/// key's idle time under an LRU policy, FREQ its counter under an LFU one.
fn restore(ctx: &mut Ctx, args: Args) -> CmdResult {
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq): (Option<i64>, Option<u8>) = (None, None);
    let mut i = 4;
    while i < args.len() {
        let more = i + 1 < args.len();
        if is(&args[i], "REPLACE") {
            replace = true;
        } else if is(&args[i], "ABSTTL") {
            absttl = true;
        } else if is(&args[i], "IDLETIME") && more && freq.is_none() {
            let seconds = int_arg(&args[i + 1])?;
            if seconds < 0 {
                return Err(CmdError::Static("ERR Invalid IDLETIME value, must be >= 0"));
            }
            idle = Some(seconds);
            i += 1;
        } else if is(&args[i], "FREQ") && more && idle.is_none() {
            let count = int_arg(&args[i + 1])?;
            let count = u8::try_from(count)
                .map_err(|_| CmdError::Static("ERR Invalid FREQ value, must be >= 0 and <= 255"))?;
            freq = Some(count);
            i += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    let now_ms = ctx.now_ms;
    let db = ctx.session.db;
    let key = &args[1];
    if !replace && ctx.server.dbs[db].contains(key, now_ms) {
        return Err(CmdError::Static("BUSYKEY Target key name already exists."));
    }
    let ttl = int_arg(&args[2])?;
    if ttl < 0 {
        return Err(CmdError::Static("ERR Invalid TTL value, must be >= 0"));
    }
    let skip = ctx.server.debug.skip_checksum_validation;
    let body = crate::persistence::rdb::payload_body(&args[3], skip).ok_or(CmdError::Static(
        "ERR DUMP payload version or checksum are wrong",
    ))?;
    let limits = ctx.server.config.load_limits();
    // Every payload is checked whole as it is decoded (Redis's deep
    // sanitization, which it counts).
    ctx.server.stats.dump_payload_sanitizations += 1;
    let value = crate::persistence::rdb_load::restore_value(body, limits)
        .ok_or(CmdError::Static("ERR Bad data format"))?;
    let lazy = ctx.server.config.lazyfree.server_del;
    let at_ms = match ttl {
        0 => None,
        _ if absttl => Some(ttl),
        _ => Some(ttl.saturating_add(now_ms)),
    };
    let expired = at_ms.is_some_and(|at| ctx.server.already_expired(at, now_ms));
    let target = &mut ctx.server.dbs[db];
    let deleted = replace && target.delete(key, now_ms, lazy);
    if expired {
        if deleted {
            target.signal(EventClass::GENERIC, "del", key);
            ctx.server
                .propagate
                .rewrite(OwnedArgs::from_slices([&b"DEL"[..], key]));
        }
        ctx.out().ok();
        return Ok(());
    }
    let ttl_mode = at_ms.map_or(Ttl::Clear, Ttl::At);
    target.set(key, value, ttl_mode, now_ms);
    target.restore_access(key, idle, freq);
    target.signal(EventClass::GENERIC, "restore", key);
    if let (Some(at), false, true) = (at_ms, absttl, ctx.server.propagate.active()) {
        let at = at.to_string();
        let mut rewritten: Vec<&[u8]> = args.iter().collect();
        rewritten[2] = at.as_bytes();
        rewritten.push(b"ABSTTL");
        ctx.server
            .propagate
            .rewrite(OwnedArgs::from_slices(rewritten));
    }
    ctx.out().ok();
    Ok(())
}

fn move_cmd(ctx: &mut Ctx, args: Args) -> CmdResult {
    if ctx.server.cluster.is_some() {
        return Err(CmdError::Static("ERR MOVE is not allowed in cluster mode"));
    }
    let target_db = db_index_arg(&args[2], ctx.server.dbs.len(), None)?;
    let source_db = ctx.session.db;
    if target_db == source_db {
        return Err(CmdError::Static(
            "ERR source and destination objects are the same",
        ));
    }
    let now_ms = ctx.now_ms;
    let key = &args[1];
    let dbs = &mut ctx.server.dbs;
    let moved = dbs[source_db].contains(key, now_ms) && !dbs[target_db].contains(key, now_ms);
    if moved {
        if let Some(detached) = dbs[source_db].detach(key, now_ms) {
            dbs[target_db].attach(key, detached, now_ms);
            dbs[source_db].signal(EventClass::GENERIC, "move_from", key);
            dbs[target_db].signal(EventClass::GENERIC, "move_to", key);
        }
    }
    ctx.out().int(i64::from(moved));
    Ok(())
}

fn swapdb(ctx: &mut Ctx, args: Args) -> CmdResult {
    if ctx.server.cluster.is_some() {
        return Err(CmdError::Static(
            "ERR SWAPDB is not allowed in cluster mode",
        ));
    }
    let dbs = ctx.server.dbs.len();
    let a = db_index_arg(&args[1], dbs, Some("ERR invalid first DB index"))?;
    let b = db_index_arg(&args[2], dbs, Some("ERR invalid second DB index"))?;
    let now_ms = ctx.now_ms;
    ctx.server.swap_dbs(a, b, now_ms);
    ctx.server.propagate.force();
    ctx.out().ok();
    Ok(())
}

fn keys(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    let pattern = &args[1];
    let match_all = pattern == b"*";
    let session = &mut *ctx.session;
    let db = &ctx.server.dbs[session.db];
    let found: Vec<&[u8]> = db
        .live_keys(now_ms)
        .filter(|k| match_all || glob::matches(pattern, k, false))
        .collect();
    session.reply.array(found.len());
    for key in found {
        session.reply.bulk(key);
    }
    Ok(())
}

fn scan(ctx: &mut Ctx, args: Args) -> CmdResult {
    let mut type_filter: Option<Vec<u8>> = None;
    let opts = ScanArgs::parse(&args, 1, |name, value| {
        let known = is(name, "TYPE");
        if known {
            type_filter = Some(value.to_ascii_lowercase());
        }
        known
    })?;
    let now_ms = ctx.now_ms;
    let db = ctx.db();
    let mut found = Vec::new();
    let next = opts.collect(1, &mut found, |cursor, found| {
        db.scan_step(
            cursor,
            now_ms,
            |key| opts.matches(key),
            |key, value| {
                let type_ok = type_filter
                    .as_deref()
                    .is_none_or(|t| t == value.type_name().as_bytes());
                if type_ok && opts.matches(key) {
                    found.push(key.to_vec());
                }
            },
        )
    });
    reply_scan(ctx.out(), next, &found);
    Ok(())
}

fn randomkey(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    let db_index = ctx.session.db;
    let server = &mut *ctx.server;
    match server.dbs[db_index].random_key(&mut server.rng, now_ms) {
        Some(key) => ctx.out().bulk(&key),
        None => ctx.out().null(),
    }
    Ok(())
}

fn dbsize(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let len = ctx.db().len();
    ctx.out().int(len as i64);
    Ok(())
}

/// FLUSHDB/FLUSHALL's optional ASYNC|SYNC argument: whether to free on the
/// lazyfree thread (without one, `lazyfree-lazy-user-flush` decides).
fn flush_is_async(ctx: &Ctx, args: &Args) -> Result<bool, CmdError> {
    match args.len() {
        1 => Ok(ctx.server.config.lazyfree.user_flush),
        2 if is(&args[1], "ASYNC") => Ok(true),
        2 if is(&args[1], "SYNC") => Ok(false),
        _ => Err(CmdError::Syntax),
    }
}

/// Empties the databases in `range`, freeing their contents here or on
/// the lazyfree thread. Always propagated, even when already empty (as
/// Redis forces it).
fn flush_dbs(ctx: &mut Ctx, range: std::ops::Range<usize>, lazy: bool) {
    ctx.server.propagate.force();
    ctx.server.tracking.flushed();
    for i in range {
        let now_ms = ctx.now_ms;
        ctx.server.touch_watched_in_db(i, None, now_ms);
        let table = ctx.server.dbs[i].flush();
        ctx.server.leases.db_flushed(i);
        // Waiters on the flushed keys look again (Redis's
        // `signalFlushedDb`): a blocked XREADGROUP ends with an error.
        ctx.server.blocking.db_changed(i);
        if lazy && !table.is_empty() {
            let count = table.len() as u64;
            ctx.server.lazyfree.free_async_counted(table, count);
        }
    }
}

fn flushdb(ctx: &mut Ctx, args: Args) -> CmdResult {
    let lazy = flush_is_async(ctx, &args)?;
    let db = ctx.session.db;
    flush_dbs(ctx, db..db + 1, lazy);
    ctx.out().ok();
    Ok(())
}

fn flushall(ctx: &mut Ctx, args: Args) -> CmdResult {
    let lazy = flush_is_async(ctx, &args)?;
    // A background save of the old data is abandoned first.
    crate::persistence::save::abandon(ctx.server, crate::persistence::jobs::Job::Rdb);
    let all = 0..ctx.server.dbs.len();
    flush_dbs(ctx, all, lazy);
    let now_ms = ctx.now_ms;
    crate::persistence::save::after_flushall(ctx.server, now_ms);
    ctx.out().ok();
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::harness::Harness;

    #[test]
    fn rename_carries_ttl_and_errors() {
        let mut h = Harness::new();
        assert_eq!(h.run("RENAME a b"), "-ERR no such key\r\n");
        h.run("SET a 1 EX 100");
        h.run("SET b 2");
        assert_eq!(h.run("RENAMENX a b"), ":0\r\n");
        assert_eq!(h.run("RENAME a b"), "+OK\r\n");
        assert_eq!(h.run("TTL b"), ":100\r\n");
        assert_eq!(h.run("RENAME b b"), "+OK\r\n");
        assert_eq!(h.run("RENAMENX b b"), ":0\r\n");
    }

    #[test]
    fn copy_move_swapdb() {
        let mut h = Harness::new();
        h.run("SET a 1 PX 5000");
        assert_eq!(
            h.run("COPY a a"),
            "-ERR source and destination objects are the same\r\n"
        );
        assert_eq!(h.run("COPY a c DB 99"), "-ERR DB index is out of range\r\n");
        assert_eq!(h.run("COPY a c DB 1"), ":1\r\n");
        assert_eq!(h.run("COPY a c DB 1"), ":0\r\n");
        assert_eq!(h.run("COPY a c DB 1 REPLACE"), ":1\r\n");
        assert_eq!(
            h.run("MOVE a 0"),
            "-ERR source and destination objects are the same\r\n"
        );
        assert_eq!(h.run("MOVE a 2"), ":1\r\n");
        assert_eq!(h.run("SWAPDB 0 x"), "-ERR invalid second DB index\r\n");
        assert_eq!(h.run("SWAPDB 0 2"), "+OK\r\n");
        assert_eq!(h.run("PTTL a"), ":5000\r\n");
    }

    #[test]
    fn scan_visits_everything() {
        let mut h = Harness::new();
        for i in 0..100 {
            h.run(&format!("SET key:{i} v"));
        }
        let mut cursor = "0".to_string();
        let mut seen = std::collections::HashSet::new();
        loop {
            let out = h.run(&format!("SCAN {cursor} MATCH key:* COUNT 7"));
            let lines: Vec<&str> = out.split("\r\n").collect();
            cursor = lines[2].to_string();
            for l in lines.iter().skip(5).step_by(2) {
                if !l.is_empty() {
                    seen.insert(l.to_string());
                }
            }
            if cursor == "0" {
                break;
            }
        }
        assert_eq!(seen.len(), 100);
        assert_eq!(h.run("SCAN x"), "-ERR invalid cursor\r\n");
        assert_eq!(h.run("SCAN 0 COUNT 0"), "-ERR syntax error\r\n");
    }
}
