//! DEBUG: the subcommands tools and Redis's own test suite use, answered
//! as Redis 7.0 answers them.

use super::{float_arg, int_arg, is, CmdError, CmdResult, Ctx, Handler};
use crate::digest;
use crate::protocol::Args;

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[
    ("debug|help", debug_help),
    ("debug|pause-cron", debug_pause_cron),
    ("debug|log", debug_log),
    ("debug|error", debug_error),
    ("debug|sleep", debug_sleep),
    ("debug|set-active-expire", debug_set_active_expire),
    ("debug|reload", debug_reload),
    ("debug|loadaof", debug_loadaof),
    ("debug|digest", debug_digest),
    ("debug|digest-value", debug_digest_value),
    ("debug|protocol", debug_protocol),
    (
        "debug|set-disable-deny-scripts",
        debug_set_disable_deny_scripts,
    ),
    ("debug|object", debug_object),
    ("debug|change-repl-id", debug_change_repl_id),
    ("debug|stringmatch-test", debug_stringmatch_test),
    ("debug|populate", debug_populate),
    ("debug|listpack", debug_listpack),
    (
        "debug|quicklist-packed-threshold",
        debug_quicklist_packed_threshold,
    ),
    ("debug|replybuffer", debug_replybuffer),
    (
        "debug|set-skip-checksum-validation",
        debug_set_skip_checksum_validation,
    ),
];

/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE] (see `crate::persistence::load::debug_reload`),
/// with redis-server's replies.
fn debug_reload(ctx: &mut Ctx, args: Args) -> CmdResult {
    let (mut save, mut flush, mut merge) = (true, true, false);
    for arg in args.iter().skip(2) {
        if is(arg, "MERGE") {
            merge = true;
        } else if is(arg, "NOFLUSH") {
            flush = false;
        } else if is(arg, "NOSAVE") {
            save = false;
        } else {
            return Err(CmdError::Static(
                "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
            ));
        }
    }
    let now_ms = ctx.now_ms;
    let reloaded = crate::persistence::load::debug_reload(ctx.server, now_ms, save, flush, merge);
    // Leases are never persisted: a reload drops them (issue 42), and
    // their waiters look again (the earliest may fill).
    ctx.server.leases.clear();
    for db in 0..ctx.server.dbs.len() {
        ctx.server.blocking.db_changed(db);
    }
    // Like Redis, the reload itself is not propagated (said after the
    // load, whose own bookkeeping resets the running command's).
    ctx.server.propagate.suppress();
    match reloaded {
        Ok(()) => {
            ctx.out().ok();
            Ok(())
        }
        Err(crate::persistence::load::ReloadError::Load(e)) => {
            tracing::warn!("DEBUG RELOAD: {e}");
            Err(CmdError::Static(
                "ERR Error trying to load the RDB dump, check server logs.",
            ))
        }
        Err(crate::persistence::load::ReloadError::Save(e)) => Err(super::server::save_error(e)),
    }
}

/// DEBUG LOADAOF (see `crate::persistence::aof_load::debug_loadaof`). Where redis-server exits on
/// a file it cannot load, lapse answers an error (the log says why).
fn debug_loadaof(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    let loaded = crate::persistence::aof_load::debug_loadaof(ctx.server, now_ms, ctx.replay);
    // The data came from the AOF: nothing to append to it or replicate
    // (said after the replay, whose commands reset the running one's).
    ctx.server.propagate.suppress();
    if let Err(e) = loaded {
        tracing::warn!("DEBUG LOADAOF: {e}");
        return Err(CmdError::Static(
            "ERR Error trying to load the AOF files, check server logs.",
        ));
    }
    ctx.out().ok();
    Ok(())
}

/// DEBUG DIGEST: the dataset's digest as redis-server computes it, hex.
fn debug_digest(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let hex = digest::hex(&digest::dataset_digest(&ctx.server.dbs));
    ctx.out().simple(&hex);
    Ok(())
}

/// DEBUG DIGEST-VALUE key...: one digest per key (zeros when absent).
fn debug_digest_value(ctx: &mut Ctx, args: Args) -> CmdResult {
    let db = &ctx.server.dbs[ctx.session.db];
    let digests: Vec<String> = args
        .iter()
        .skip(2)
        .map(|key| digest::hex(&digest::value_digest(db, key)))
        .collect();
    let out = ctx.out();
    out.array(digests.len());
    for d in digests {
        out.simple(&d);
    }
    Ok(())
}

fn debug_sleep(ctx: &mut Ctx, args: Args) -> CmdResult {
    let secs = float_arg(&args[2])?;
    // Blocking the loop is the point of DEBUG SLEEP; bound it to an hour.
    let secs = secs.clamp(0.0, 3600.0);
    std::thread::sleep(std::time::Duration::from_secs_f64(secs));
    ctx.out().ok();
    Ok(())
}

/// DEBUG HELP: Redis's text for the subcommands lapse has.
fn debug_help(ctx: &mut Ctx, _args: Args) -> CmdResult {
    super::reply_help(
        ctx,
        "DEBUG",
        &[
            "DIGEST",
            "    Output a hex signature representing the current DB content.",
            "DIGEST-VALUE <key> [<key> ...]",
            "    Output a hex signature of the values of all the specified keys.",
            "ERROR <string>",
            "    Return a Redis protocol error with <string> as message. Useful for clients",
            "    unit tests to simulate Redis errors.",
            "LOG <message>",
            "    Write <message> to the server log.",
            "LOADAOF",
            "    Flush the AOF buffers on disk and reload the AOF in memory.",
            "RELOAD [option ...]",
            "    Save the RDB on disk and reload it back to memory. Valid <option> values:",
            "    * MERGE: conflicting keys will be loaded from RDB.",
            "    * NOFLUSH: the existing database will not be removed before load, but",
            "      conflicting keys will generate an exception and kill the server.",
            "    * NOSAVE: the database will be loaded from an existing RDB file.",
            "SET-ACTIVE-EXPIRE <0|1>",
            "    Setting it to 0 disables expiring keys in background when they are not",
            "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
            "    default.",
            "SLEEP <seconds>",
            "    Stop the server for <seconds>. Decimals allowed.",
            "PAUSE-CRON <0|1>",
            "    Stop periodic cron job processing.",
        ],
    );
    Ok(())
}

/// DEBUG PAUSE-CRON 1 stops the cron (the slow expire cycle, timeouts,
/// the tracking table's limit...) until DEBUG PAUSE-CRON 0, as Redis's
/// test suite uses it.
fn debug_pause_cron(ctx: &mut Ctx, args: Args) -> CmdResult {
    ctx.server.cron_paused = int_arg(&args[2])? != 0;
    ctx.out().ok();
    Ok(())
}

fn debug_log(ctx: &mut Ctx, args: Args) -> CmdResult {
    tracing::warn!("DEBUG LOG: {}", String::from_utf8_lossy(&args[2]));
    ctx.out().ok();
    Ok(())
}

/// DEBUG ERROR <string>: the string as an error reply (Redis's
/// `addReplyErrorSds`: no code added).
fn debug_error(_ctx: &mut Ctx, args: Args) -> CmdResult {
    Err(CmdError::owned(
        String::from_utf8_lossy(&args[2]).replace(['\r', '\n'], " "),
    ))
}

fn debug_set_active_expire(ctx: &mut Ctx, args: Args) -> CmdResult {
    ctx.server.expire.enabled = int_arg(&args[2])? != 0;
    ctx.out().ok();
    Ok(())
}

/// DEBUG PROTOCOL <type>: a test value of each RESP3 type, as Redis
/// sends it (RESP2 clients get each type's RESP2 form).
fn debug_protocol(ctx: &mut Ctx, args: Args) -> CmdResult {
    let name = String::from_utf8_lossy(&args[2]).to_ascii_lowercase();
    let out = ctx.out();
    let resp3 = out.resp3;
    match name.as_str() {
        "string" => out.bulk(b"Hello World"),
        "integer" => out.int(12345),
        // Redis's test value (not pi).
        #[allow(clippy::approx_constant)]
        "double" => out.double(3.141),
        "bignum" if resp3 => out.buf.extend_from_slice(b"(1234567999999999999999999999999999999\r\n"),
        "bignum" => out.bulk(b"1234567999999999999999999999999999999"),
        "null" => out.null(),
        "array" | "set" => {
            if name == "set" {
                out.set(3);
            } else {
                out.array(3);
            }
            for j in 0..3 {
                out.int(j);
            }
        }
        "map" => {
            out.map(3);
            for j in 0..3 {
                out.int(j);
                out.bool(j == 1);
            }
        }
        "attrib" => {
            if resp3 {
                out.buf.extend_from_slice(b"|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n");
            }
            out.bulk(b"Some real reply following the attribute");
        }
        "push" if !resp3 => {
            return Err(CmdError::Static("ERR RESP2 is not supported by this command"));
        }
        "push" => {
            out.push(2);
            out.bulk(b"server-cpu-usage");
            out.int(42);
            out.bulk(b"Some real reply following the push reply");
        }
        "true" => out.bool(true),
        "false" => out.bool(false),
        "verbatim" => out.verbatim(b"This is a verbatim\nstring"),
        _ => return Err(CmdError::Static(
            "ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
        )),
    }
    Ok(())
}

/// Redis's `atoi`: the leading integer, 0 when there is none.
fn atoi(arg: &[u8]) -> i64 {
    let text = String::from_utf8_lossy(arg);
    let text = text.trim_start();
    let end = text
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && (c == '-' || c == '+'))))
        .map_or(text.len(), |(i, _)| i);
    text[..end].parse().unwrap_or(0)
}

fn debug_set_disable_deny_scripts(ctx: &mut Ctx, args: Args) -> CmdResult {
    ctx.server.debug.allow_noscript_in_scripts = atoi(&args[2]) != 0;
    ctx.out().ok();
    Ok(())
}

fn debug_set_skip_checksum_validation(ctx: &mut Ctx, args: Args) -> CmdResult {
    ctx.server.debug.skip_checksum_validation = atoi(&args[2]) != 0;
    ctx.out().ok();
    Ok(())
}

/// DEBUG OBJECT key: Redis's line about the value, found whether or not
/// its key has expired (Redis looks in the dict without expiring). The
/// "address" is the entry's, stable while the value changes in place.
fn debug_object(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    let options = crate::persistence::rdb::SaveOptions {
        compress: ctx.server.config.rdbcompression,
        checksum: true,
    };
    let config = &ctx.server.config;
    let db = &ctx.server.dbs[ctx.session.db];
    let Some(object) = db.debug_object(&args[2]) else {
        return Err(CmdError::NoSuchKey);
    };
    let mut line = format!(
        "Value at:{:#x} refcount:{} encoding:{} serializedlength:{} lru:{} lru_seconds_idle:{}",
        object.address,
        super::keys::refcount_of(config, object.value, object.encoding),
        object.encoding,
        crate::persistence::rdb::serialized_len(object.value, options),
        object.access.bits(),
        object.access.idle_ms(now_ms) / 1000,
    );
    if let crate::value::ValueRef::List(list) = object.value {
        // Redis's quicklist figures, for the nodes the list would have
        // (never compressed in lapse: `list-compress-depth` is kept only).
        let (nodes, bytes) = crate::persistence::rdb::quicklist_shape(list);
        let average = list.len() as f64 / nodes.max(1) as f64;
        line.push_str(&format!(
            " ql_nodes:{nodes} ql_avg_node:{average:.2} ql_listpack_max:{} ql_compressed:0 ql_uncompressed_size:{bytes}",
            config.list_max_listpack_size,
        ));
    }
    ctx.out().simple(&line);
    Ok(())
}

/// DEBUG CHANGE-REPL-ID: a new replication ID (replicas will need a full
/// sync), as Redis's `changeReplicationId`.
fn debug_change_repl_id(ctx: &mut Ctx, _args: Args) -> CmdResult {
    tracing::warn!("Changing replication IDs after receiving DEBUG change-repl-id");
    ctx.server.repl.replid = crate::replication::random_replid();
    ctx.out().ok();
    Ok(())
}

/// DEBUG STRINGMATCH-TEST: random patterns and strings through the glob
/// matcher (it must neither crash nor take long), Redis's
/// `stringmatchlen_fuzz_test`.
fn debug_stringmatch_test(ctx: &mut Ctx, _args: Args) -> CmdResult {
    use rand::Rng;
    let rng = &mut ctx.server.rng;
    for _ in 0..1000 {
        let mut pattern = vec![0u8; rng.gen_range(0..32)];
        let mut text = vec![0u8; rng.gen_range(0..32)];
        rng.fill(&mut pattern[..]);
        rng.fill(&mut text[..]);
        std::hint::black_box(crate::glob::matches(&pattern, &text, false));
    }
    ctx.out()
        .simple("Apparently Redis did not crash: test passed");
    Ok(())
}

/// DEBUG POPULATE count [prefix] [size]: string keys `<prefix>:<n>` with
/// values `value:<n>` (cut or zero-padded to `size`), skipping keys that
/// exist; not propagated, as in Redis.
fn debug_populate(ctx: &mut Ctx, args: Args) -> CmdResult {
    if args.len() > 5 {
        return Err(super::debug_syntax_error(args));
    }
    let positive = |arg: &[u8]| {
        int_arg(arg)
            .ok()
            .filter(|n| *n >= 0)
            .ok_or(CmdError::Static(
                "ERR value is out of range, must be positive",
            ))
    };
    let count = positive(&args[2])?;
    let size = match args.len() {
        5 => positive(&args[4])?,
        _ => 0,
    };
    let prefix = if args.len() >= 4 {
        &args[3]
    } else {
        &b"key"[..]
    };
    let now_ms = ctx.now_ms;
    for j in 0..count {
        let mut key = prefix.to_vec();
        key.extend_from_slice(format!(":{j}").as_bytes());
        // Redis formats the name into 128 bytes.
        key.truncate(127);
        if ctx.db().contains(&key, now_ms) {
            continue;
        }
        let mut value = format!("value:{j}").into_bytes();
        if size > 0 {
            value.resize(size as usize, 0);
        }
        ctx.db().set(
            &key,
            crate::value::Value::Str(value),
            crate::db::Ttl::Clear,
            now_ms,
        );
        ctx.signal(crate::db::EventClass::SILENT, "populate", &key);
    }
    ctx.server.propagate.suppress();
    ctx.out().ok();
    Ok(())
}

/// DEBUG LISTPACK key: Redis prints a listpack's layout to its standard
/// output; lapse logs the value's encoding and size.
fn debug_listpack(ctx: &mut Ctx, args: Args) -> CmdResult {
    let db = &ctx.server.dbs[ctx.session.db];
    let Some(object) = db.debug_object(&args[2]) else {
        return Err(CmdError::NoSuchKey);
    };
    if object.encoding != "listpack" {
        return Err(CmdError::Static("ERR Not a listpack encoded object."));
    }
    tracing::info!(
        "DEBUG LISTPACK {}: a listpack-encoded {}",
        String::from_utf8_lossy(&args[2]),
        object.value.type_name()
    );
    ctx.out().simple("Listpack structure printed on stdout");
    Ok(())
}

/// DEBUG QUICKLIST-PACKED-THRESHOLD size: Redis stores list elements
/// bigger than this in nodes of their own. lapse's lists have no such
/// nodes: the size is checked as Redis checks it and changes nothing.
fn debug_quicklist_packed_threshold(ctx: &mut Ctx, args: Args) -> CmdResult {
    let size = std::str::from_utf8(&args[2])
        .ok()
        .and_then(crate::config::parse_memory)
        .filter(|n| (0..=(1i64 << 32) - (1 << 20)).contains(n));
    if size.is_none() {
        return Err(CmdError::Static(
            "ERR argument must be a memory value bigger than 1 and smaller than 4gb",
        ));
    }
    ctx.out().ok();
    Ok(())
}

/// DEBUG REPLYBUFFER PEAK-RESET-TIME <NEVER|RESET|ms> | RESIZING <0|1>:
/// checked as Redis checks them; lapse's reply buffers shrink when idle
/// whatever these say.
fn debug_replybuffer(ctx: &mut Ctx, args: Args) -> CmdResult {
    if is(&args[2], "peak-reset-time") {
        if !is(&args[3], "never") && !is(&args[3], "reset") {
            int_arg(&args[3])?;
        }
    } else if !is(&args[2], "resizing") {
        return Err(super::debug_syntax_error(args));
    }
    ctx.out().ok();
    Ok(())
}
