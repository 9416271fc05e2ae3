//! Scripting commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT
//! (LOAD, EXISTS, FLUSH, KILL).
//!
//! The `scripting` room holds the interpreter and the cache; here a
//! script's `redis.call` becomes a command run on a client of its own
//! (the caller's database, RESP2 unless the script asks for RESP3), under
//! the caller's time snapshot, with the script's effects propagated as one
//! MULTI/EXEC unit.

use super::{call_and_reply, cmd, int_arg, is, lookup, CmdError, CmdResult, Command, Ctx, Flags};
use crate::busy::Verdict;
use crate::connection::Session;
use crate::protocol::{Args, OwnedArgs};
use crate::scripting::{CommandRunner, RunningScript, Scripting};

pub static COMMANDS: &[Command] = &[
    cmd!(
        "eval",
        -3,
        ["noscript", "stale", "skip_monitor"],
        (0, 0, 0),
        eval,
        "scripting",
        "Executes a server-side Lua script."
    )
    .with_numkeys(2),
    cmd!(
        "evalsha",
        -3,
        ["noscript", "stale", "skip_monitor"],
        (0, 0, 0),
        evalsha,
        "scripting",
        "Executes a server-side Lua script by SHA1 digest."
    )
    .with_numkeys(2),
    cmd!(
        "eval_ro",
        -3,
        ["readonly", "noscript", "stale", "skip_monitor"],
        (0, 0, 0),
        eval_ro,
        "scripting",
        "Executes a read-only server-side Lua script."
    )
    .with_numkeys(2),
    cmd!(
        "evalsha_ro",
        -3,
        ["readonly", "noscript", "stale", "skip_monitor"],
        (0, 0, 0),
        evalsha_ro,
        "scripting",
        "Executes a read-only server-side Lua script by SHA1 digest."
    )
    .with_numkeys(2),
    Command {
        name: "script",
        arity: -2,
        flags: Flags::NONE,
        keys: (0, 0, 0),
        numkeys_at: None,
        handler: |_, _| Ok(()),
        subcommands: SCRIPT_SUBCOMMANDS,
        summary: "A container for Lua scripts management commands.",
        group: "scripting",
    },
];

static SCRIPT_SUBCOMMANDS: &[Command] = &[
    cmd!(
        "load",
        3,
        ["noscript", "stale"],
        (0, 0, 0),
        script_load,
        "scripting",
        "Loads a server-side Lua script to the script cache."
    ),
    cmd!(
        "exists",
        -3,
        ["noscript"],
        (0, 0, 0),
        script_exists,
        "scripting",
        "Determines whether server-side Lua scripts exist in the script cache."
    ),
    cmd!(
        "flush",
        -2,
        ["noscript"],
        (0, 0, 0),
        script_flush,
        "scripting",
        "Removes all server-side Lua scripts from the script cache."
    ),
    cmd!(
        "kill",
        2,
        ["noscript", "allow_busy"],
        (0, 0, 0),
        script_kill,
        "scripting",
        "Terminates a server-side Lua script during execution."
    ),
];

/// Runs the commands a script calls, on a client of the script's own.
struct ScriptClient<'c, 'a> {
    ctx: &'c mut Ctx<'a>,
    session: Session,
    /// EVAL_RO / EVALSHA_RO: write commands are refused.
    read_only: bool,
    /// Changes counted when the script started (to tell whether it wrote).
    dirty_at_start: u64,
}

impl CommandRunner for ScriptClient<'_, '_> {
    fn has_written(&self) -> bool {
        self.ctx.server.dirty() != self.dirty_at_start
    }

    fn while_busy(&mut self, script: &RunningScript) -> bool {
        let server = &mut *self.ctx.server;
        let max_query = server.config.client_query_buffer_limit;
        let mut verdict = Verdict::Continue;
        self.ctx
            .peers
            .for_each_socket(&mut |token, session, socket| match server
                .busy
                .serve(token, session, socket, script, max_query)
            {
                Verdict::Continue => {}
                v => verdict = v,
            });
        if verdict == Verdict::Shutdown {
            server.shutdown_requested = true;
        }
        verdict != Verdict::Continue
    }

    fn run(&mut self, owned: &OwnedArgs, resp3: bool) -> Result<&[u8], &'static str> {
        let refuse = Err;
        let args = owned.as_args();
        let Some(mut cmd) = lookup(&args[0]) else {
            return refuse("ERR Unknown Redis command called from script");
        };
        if !cmd.subcommands.is_empty() && args.len() >= 2 {
            match cmd.subcommands.iter().find(|s| is(&args[1], s.name)) {
                Some(sub) => cmd = sub,
                None => return refuse("ERR Unknown Redis command called from script"),
            }
        }
        if cmd.flags.has(Flags::NOSCRIPT) {
            return refuse("ERR This Redis command is not allowed from script");
        }
        let arity = i64::from(cmd.arity);
        let argc = args.len() as i64;
        if (arity > 0 && argc != arity) || argc < -arity {
            return refuse("ERR Wrong number of args calling Redis command from script");
        }
        if self.read_only && cmd.flags.has(Flags::WRITE) {
            return refuse("ERR Write commands are not allowed from read-only scripts.");
        }
        self.session.reply.resp3 = resp3;
        self.session.reply.buf.clear();
        let mut ctx = Ctx {
            now_ms: self.ctx.now_ms,
            session: &mut self.session,
            server: &mut *self.ctx.server,
            peers: self.ctx.peers,
        };
        call_and_reply(&mut ctx, cmd, args);
        Ok(&self.session.reply.buf)
    }
}

/// `numkeys key... arg...` of the EVAL family: the keys and the args,
/// in one vector split at the returned index.
fn keys_and_argv<'a>(args: &Args<'a>) -> Result<(Vec<&'a [u8]>, usize), CmdError> {
    let numkeys = int_arg(&args[2])?;
    if numkeys < 0 {
        return Err(CmdError::Static("ERR Number of keys can't be negative"));
    }
    let rest = args.len() - 3;
    let numkeys = usize::try_from(numkeys).unwrap_or(usize::MAX);
    if numkeys > rest {
        return Err(CmdError::Static(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    Ok((args.iter().skip(3).collect(), numkeys))
}

/// The interpreter, created on first use (a server that never runs a
/// script never pays for one), taken out of the state while it runs so
/// the script's commands can borrow the state.
fn take_scripting(ctx: &mut Ctx) -> Result<Scripting, CmdError> {
    match ctx.server.scripting.take() {
        Some(s) => Ok(s),
        None => Scripting::new().map_err(|e| CmdError::owned(format!("ERR Lua: {e}"))),
    }
}

/// EVAL and friends: `body_or_sha` is the script (EVAL) or its SHA-1.
fn eval_generic(ctx: &mut Ctx, args: Args, by_sha: bool, read_only: bool) -> CmdResult {
    let (all, numkeys) = keys_and_argv(&args)?;
    let (keys, argv) = all.split_at(numkeys);
    let mut scripting = take_scripting(ctx)?;
    let sha = if by_sha {
        let sha = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
        if !scripting.exists(sha.as_bytes()) {
            ctx.server.scripting = Some(scripting);
            return Err(CmdError::Static(
                "NOSCRIPT No matching script. Please use EVAL.",
            ));
        }
        sha
    } else {
        match scripting.load(&args[1]) {
            Ok(sha) => sha,
            Err(msg) => {
                ctx.server.scripting = Some(scripting);
                return Err(CmdError::owned(msg));
            }
        }
    };
    let session = Session {
        authenticated: true,
        db: ctx.session.db,
        deny_blocking: true,
        id: u64::MAX,
        ..Session::default()
    };
    let mut out = std::mem::take(&mut ctx.session.reply);
    ctx.server.propagate.begin_transaction();
    {
        scripting.set_time_limit_ms(ctx.server.config.busy_reply_threshold_ms);
        let dirty_at_start = ctx.server.dirty();
        let mut client = ScriptClient {
            ctx: &mut *ctx,
            session,
            read_only,
            dirty_at_start,
        };
        scripting.run(&sha, keys, argv, &mut client, &mut out);
    }
    ctx.server.propagate.end_transaction();
    // The script's commands propagated themselves, as one unit.
    ctx.server.propagate.suppress();
    ctx.session.reply = out;
    ctx.server.scripting = Some(scripting);
    Ok(())
}

fn eval(ctx: &mut Ctx, args: Args) -> CmdResult {
    eval_generic(ctx, args, false, false)
}

fn evalsha(ctx: &mut Ctx, args: Args) -> CmdResult {
    eval_generic(ctx, args, true, false)
}

fn eval_ro(ctx: &mut Ctx, args: Args) -> CmdResult {
    eval_generic(ctx, args, false, true)
}

fn evalsha_ro(ctx: &mut Ctx, args: Args) -> CmdResult {
    eval_generic(ctx, args, true, true)
}

fn script_load(ctx: &mut Ctx, args: Args) -> CmdResult {
    let mut scripting = take_scripting(ctx)?;
    let loaded = scripting.load(&args[2]);
    ctx.server.scripting = Some(scripting);
    let sha = loaded.map_err(CmdError::owned)?;
    ctx.out().bulk(sha.as_bytes());
    Ok(())
}

fn script_exists(ctx: &mut Ctx, args: Args) -> CmdResult {
    let found: Vec<bool> = args
        .iter()
        .skip(2)
        .map(|sha| ctx.server.scripting.as_ref().is_some_and(|s| s.exists(sha)))
        .collect();
    let out = ctx.out();
    out.array(found.len());
    for f in found {
        out.int(i64::from(f));
    }
    Ok(())
}

fn script_flush(ctx: &mut Ctx, args: Args) -> CmdResult {
    match args.iter().nth(2) {
        None => {}
        Some(mode) if is(mode, "ASYNC") || is(mode, "SYNC") => {}
        Some(_) => {
            return Err(CmdError::Static(
                "ERR SCRIPT FLUSH only support SYNC|ASYNC option",
            ))
        }
    }
    if let Some(s) = &mut ctx.server.scripting {
        s.flush();
    }
    ctx.out().ok();
    Ok(())
}

fn script_kill(_ctx: &mut Ctx, _args: Args) -> CmdResult {
    // Scripts run to completion inside one command: none is ever running
    // while another client is served.
    Err(CmdError::Static(
        "NOTBUSY No scripts in execution right now.",
    ))
}
