//! DEBUG: the subcommands tools and Redis's own test suite use, answered
//! as Redis 7.0 answers them.

use super::{cmd, float_arg, help, int_arg, is, CmdError, CmdResult, Command, Ctx};
use crate::digest;
use crate::protocol::Args;

pub static SUBCOMMANDS: &[Command] = &[
    help!(debug_help, "server"),
    cmd!(
        "pause-cron",
        3,
        ["admin", "noscript", "loading", "stale"],
        (0, 0, 0),
        debug_pause_cron,
        "server",
        "Stops (1) or resumes (0) the periodic cron."
    ),
    cmd!(
        "log",
        3,
        ["admin", "noscript", "loading", "stale"],
        (0, 0, 0),
        debug_log,
        "server",
        "Writes the message to the server log."
    ),
    cmd!(
        "error",
        3,
        ["admin", "noscript", "loading", "stale"],
        (0, 0, 0),
        debug_error,
        "server",
        "Replies with the string as an error."
    ),
    cmd!(
        "sleep",
        3,
        ["admin", "noscript", "loading", "stale"],
        (0, 0, 0),
        debug_sleep,
        "server",
        "Blocks the server for the given number of seconds."
    ),
    cmd!(
        "set-active-expire",
        3,
        ["admin", "noscript", "loading", "stale"],
        (0, 0, 0),
        debug_set_active_expire,
        "server",
        "Switches the active expire cycle off (0) or on (1)."
    ),
    cmd!(
        "reload",
        -2,
        ["admin", "noscript", "loading", "stale"],
        (0, 0, 0),
        debug_reload,
        "server",
        "Saves the RDB file, empties the databases and loads the file back."
    ),
    cmd!(
        "loadaof",
        2,
        ["admin", "noscript", "loading", "stale"],
        (0, 0, 0),
        debug_loadaof,
        "server",
        "Writes out the AOF buffer, empties the databases and loads the AOF back."
    ),
    cmd!(
        "digest",
        2,
        ["admin", "noscript", "loading", "stale"],
        (0, 0, 0),
        debug_digest,
        "server",
        "Returns Redis's digest of the whole dataset."
    ),
    cmd!(
        "digest-value",
        -2,
        ["admin", "noscript", "loading", "stale"],
        (0, 0, 0),
        debug_digest_value,
        "server",
        "Returns Redis's digest of each named key's value."
    ),
];

/// DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE] (see `persist::debug_reload`),
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
    let reloaded = crate::persist::debug_reload(ctx.server, now_ms, save, flush, merge);
    // Like Redis, the reload itself is not propagated (said after the
    // load, whose own bookkeeping resets the running command's).
    ctx.server.propagate.suppress();
    match reloaded {
        Ok(()) => {
            ctx.out().ok();
            Ok(())
        }
        Err(crate::persist::ReloadError::Load(e)) => {
            tracing::warn!("DEBUG RELOAD: {e}");
            Err(CmdError::Static(
                "ERR Error trying to load the RDB dump, check server logs.",
            ))
        }
        Err(crate::persist::ReloadError::Save(e)) => Err(super::server::save_error(e)),
    }
}

/// DEBUG LOADAOF (see `aof::debug_loadaof`). Where redis-server exits on
/// a file it cannot load, lapse answers an error (the log says why).
fn debug_loadaof(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    let loaded = crate::aof::debug_loadaof(ctx.server, now_ms);
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
