//! Scripting commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT
//! (LOAD, EXISTS, FLUSH, KILL).
//!
//! The `scripting` room holds the interpreter and the cache; here a
//! script's `redis.call` becomes a command run on a client of its own
//! (the caller's database, RESP2 unless the script asks for RESP3), under
//! the caller's time snapshot, with the script's effects propagated as one
//! MULTI/EXEC unit.

use std::borrow::Cow;

use super::refusals;
use super::{c_str, int_arg, is, CmdError, CmdResult, Command, Ctx, Flags, Handler};
use crate::busy::Verdict;
use crate::connection::Session;
use crate::glob;
use crate::protocol::request::parse_i64;
use crate::protocol::{Args, OwnedArgs, Reply};
use crate::scripting::{
    CommandRunner, Library, Restore, RunningScript, Scripting, FLAG_ALLOW_CROSS_SLOT,
    FLAG_ALLOW_OOM, FLAG_ALLOW_STALE, FLAG_NO_CLUSTER, FLAG_NO_WRITES, SCRIPT_FLAGS,
};
use crate::state::ServerState;

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[
    ("eval", eval),
    ("evalsha", evalsha),
    ("eval_ro", eval_ro),
    ("evalsha_ro", evalsha_ro),
    ("fcall", fcall),
    ("fcall_ro", fcall_ro),
    ("function|load", function_load),
    ("function|delete", function_delete),
    ("function|flush", function_flush),
    ("function|list", function_list),
    ("function|dump", function_dump),
    ("function|restore", function_restore),
    ("function|stats", function_stats),
    ("function|kill", script_kill),
    ("function|help", function_help),
    ("script|load", script_load),
    ("script|exists", script_exists),
    ("script|flush", script_flush),
    ("script|kill", script_kill),
    ("script|help", script_help),
];

fn function_help(ctx: &mut Ctx, _args: Args) -> CmdResult {
    super::reply_help(
        ctx,
        "FUNCTION",
        &[
            "LOAD [REPLACE] <FUNCTION CODE>",
            "    Create a new library with the given library name and code.",
            "DELETE <LIBRARY NAME>",
            "    Delete the given library.",
            "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
            "    Return general information on all the libraries:",
            "    * Library name",
            "    * The engine used to run the Library",
            "    * Library description",
            "    * Functions list",
            "    * Library code (if WITHCODE is given)",
            "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
            "STATS",
            "    Return information about the current function running:",
            "    * Function name",
            "    * Command used to run the function",
            "    * Duration in MS that the function is running",
            "    If no function is running, return nil",
            "    In addition, returns a list of available engines.",
            "KILL",
            "    Kill the current running function.",
            "FLUSH [ASYNC|SYNC]",
            "    Delete all the libraries.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the libraries.",
            "    * SYNC: Synchronously flush the libraries.",
            "DUMP",
            "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
            "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
            "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
            "    control how to handle existing libraries (default APPEND):",
            "    * FLUSH: delete all existing libraries.",
            "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
            "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
            "      libraries with the new libraries (notice that even on this option there is a chance of failure",
            "      in case of functions name collision with another library).",
        ],
    );
    Ok(())
}

/// SCRIPT HELP: Redis's text, less SCRIPT DEBUG (lapse has no Lua
/// debugger).
fn script_help(ctx: &mut Ctx, _args: Args) -> CmdResult {
    super::reply_help(
        ctx,
        "SCRIPT",
        &[
            "EXISTS <sha1> [<sha1> ...]",
            "    Return information about the existence of the scripts in the script cache.",
            "FLUSH [ASYNC|SYNC]",
            "    Flush the Lua scripts cache. Very dangerous on replicas.",
            "    When called without the optional mode argument, the behavior is determined by the",
            "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
            "    * ASYNC: Asynchronously flush the scripts cache.",
            "    * SYNC: Synchronously flush the scripts cache.",
            "KILL",
            "    Kill the currently executing Lua script.",
            "LOAD <script>",
            "    Load a script into the scripts cache without executing it.",
        ],
    );
    Ok(())
}

/// Runs the commands a script calls, on a client of the script's own.
struct ScriptClient<'c, 'a> {
    ctx: &'c mut Ctx<'a>,
    session: Session,
    /// EVAL_RO / EVALSHA_RO: write commands are refused.
    read_only: bool,
    /// `#!lua flags=allow-oom` (or `no-writes`): commands that may grow
    /// memory run even over `maxmemory`.
    allow_oom: bool,
    /// Changes counted when the script started (to tell whether it wrote).
    dirty_at_start: u64,
    /// The keys the script declared: its caller may cache them once the
    /// script reads anything (client-side caching), as Redis remembers
    /// the caller's keys, not those of the commands the script runs.
    declared_keys: &'c [&'c [u8]],
    /// They were remembered already.
    keys_remembered: bool,
    /// The command that runs the script, and (for a function) the
    /// libraries and functions there are: FUNCTION STATS while it is busy.
    command: Args<'c>,
    function_counts: Option<(usize, usize)>,
    /// Cluster mode: the slot the script's keys are in so far (its
    /// declared keys' at first), unless `allow-cross-slot-keys`.
    cluster_slot: Option<u16>,
    allow_cross_slot: bool,
}

impl ScriptClient<'_, '_> {
    /// After a command of the script: if it only read, the caller may now
    /// cache the script's declared keys (Redis's `call()` with
    /// `server.script_caller`).
    fn remember_declared_keys(&mut self, cmd: &Command) {
        if self.keys_remembered
            || !self.ctx.server.tracking.any()
            || !cmd.flags.has(Flags::READONLY)
            || cmd.flags.has(Flags::PUBSUB)
        {
            return;
        }
        self.keys_remembered = true;
        let caller = self.ctx.session.id;
        self.ctx
            .server
            .tracking
            .remember(caller, self.declared_keys);
    }
}

impl ScriptClient<'_, '_> {
    /// A command the script may not run here: counted as Redis's
    /// `scriptCall` counts it (rejected, and in the error statistics).
    fn refused(
        &mut self,
        cmd: Option<&'static Command>,
        message: impl Into<Cow<'static, str>>,
    ) -> Result<&'static [u8], Cow<'static, str>> {
        let message = message.into();
        if let Some(cmd) = cmd {
            self.ctx.server.cmdstats.rejected(cmd);
        }
        self.ctx.server.stats.error_replied(message.as_bytes());
        Err(message)
    }

    /// Cluster mode: the script's command must touch keys this node
    /// serves, all in one slot unless the script allows several (Redis's
    /// `scriptVerifyClusterState`).
    fn cluster_check(
        &mut self,
        top: &'static Command,
        cmd: &'static Command,
        args: Args,
    ) -> Result<(), &'static str> {
        let parent = (!std::ptr::eq(top, cmd)).then_some(top);
        let flags = || script_call_flags(self.ctx.server, cmd, args);
        let (asking, readonly) = (self.ctx.session.asking, self.ctx.session.readonly);
        let keys = refusals::request_keys(cmd, parent, args);
        let route = refusals::cluster_route(
            self.ctx.server,
            cmd,
            keys.into_iter(),
            flags,
            asking,
            readonly,
            self.ctx.now_ms,
        );
        match route {
            Err(refusal) => Err(refusal.script_message()),
            Ok(Some(slot)) if !self.allow_cross_slot => match self.cluster_slot {
                None => {
                    self.cluster_slot = Some(slot);
                    Ok(())
                }
                Some(first) if first != slot => {
                    Err("ERR Script attempted to access keys that do not hash to the same slot")
                }
                Some(_) => Ok(()),
            },
            Ok(_) => Ok(()),
        }
    }

    /// Redis's `scriptVerifyWriteCommandAllow` past the read-only check:
    /// a script's first write is refused on a read-only replica, while
    /// writes to disk fail, or without enough good replicas (a script
    /// that wrote already cannot stop half done).
    fn write_refusal(&self) -> Option<Cow<'static, str>> {
        let server = &*self.ctx.server;
        if self.has_written() || self.ctx.obeys_client() {
            return None;
        }
        if server.repl.is_replica() && server.config.replica_read_only {
            return Some(refusals::READONLY_REPLICA.into());
        }
        if let Some(refusal) = refusals::disk_refusal(server) {
            return Some(
                String::from_utf8_lossy(&refusal.message())
                    .into_owned()
                    .into(),
            );
        }
        refusals::too_few_replicas(server).then_some(refusals::NOREPLICAS.into())
    }
}

impl CommandRunner for ScriptClient<'_, '_> {
    fn has_written(&self) -> bool {
        self.ctx.server.dirty() != self.dirty_at_start
    }

    fn acl_allows(&mut self, owned: &OwnedArgs) -> Option<bool> {
        let args = owned.as_args();
        let top = self.ctx.server.commands.lookup(&args[0])?;
        let cmd = match top.subcommands.is_empty() || args.len() < 2 {
            true => top,
            false => top.subcommand(&args[1])?,
        };
        let parent = (!std::ptr::eq(top, cmd)).then_some(top);
        let user = &self.ctx.session.user;
        Some(self.ctx.server.acl.check(user, cmd, parent, &args).is_ok())
    }

    fn while_busy(&mut self, script: &RunningScript) -> bool {
        let server = &mut *self.ctx.server;
        let max_query = server.config.client_query_buffer_limit;
        let (command, counts) = (self.command, self.function_counts);
        let stats = |resp3: bool| {
            let counts = counts?;
            let mut out = Reply {
                resp3,
                ..Reply::default()
            };
            let running = (&command[1], command, script.duration_ms);
            function_stats_reply(&mut out, Some(running), counts);
            Some(out.buf)
        };
        let mut verdict = Verdict::Continue;
        self.ctx
            .peers
            .for_each_socket(&mut |token, session, socket| match server
                .busy
                .serve(token, session, socket, script, max_query, &stats)
            {
                Verdict::Continue => {}
                v => verdict = v,
            });
        // Clients that connect meanwhile are served too (Redis accepts
        // them while blocked: processEventsWhileBlocked).
        self.ctx.peers.accept_waiting(&mut |socket, peer| {
            if server.welcome(&socket, &peer) {
                let open = server.acl.default_is_open();
                server.busy.arrive(socket, peer, open);
            }
        });
        verdict = verdict.max(server.busy.serve_arrivals(script, max_query, &stats));
        if verdict == Verdict::Shutdown {
            server.shutdown_requested = true;
        }
        verdict != Verdict::Continue
    }

    fn run(&mut self, owned: &OwnedArgs, resp3: bool) -> Result<&[u8], Cow<'static, str>> {
        let args = owned.as_args();
        let Some(mut cmd) = self.ctx.server.commands.lookup(&args[0]) else {
            return self.refused(None, "ERR Unknown Redis command called from script");
        };
        let top = cmd;
        if !cmd.subcommands.is_empty() && args.len() >= 2 {
            match cmd.subcommand(&args[1]) {
                Some(sub) => cmd = sub,
                None => return self.refused(None, "ERR Unknown Redis command called from script"),
            }
        }
        let parent = (!std::ptr::eq(top, cmd)).then_some(top);
        if let Err(denied) = self
            .ctx
            .server
            .acl
            .check(&self.ctx.session.user, cmd, parent, &args)
        {
            refusals::log_denial(self.ctx, &denied, cmd, parent, "lua");
            return self.refused(Some(cmd), denied.script_message());
        }
        if cmd.flags.has(Flags::NOSCRIPT) && !self.ctx.server.debug.allow_noscript_in_scripts {
            return self.refused(
                Some(cmd),
                "ERR This Redis command is not allowed from script",
            );
        }
        if !cmd.arity_ok(args.len()) {
            return self.refused(
                Some(cmd),
                "ERR Wrong number of args calling Redis command from script",
            );
        }
        if self.ctx.server.cluster.is_some() && !self.ctx.obeys_client() {
            if let Err(refusal) = self.cluster_check(top, cmd, args) {
                return self.refused(Some(cmd), refusal);
            }
        }
        // May-replicate commands (PUBLISH) count as writes here, so a
        // read-only script may run during CLIENT PAUSE WRITE.
        if self.read_only && (cmd.flags.has(Flags::WRITE) || cmd.flags.has(Flags::MAY_REPLICATE)) {
            return self.refused(
                Some(cmd),
                "ERR Write commands are not allowed from read-only scripts.",
            );
        }
        if cmd.flags.has(Flags::WRITE) {
            if let Some(refusal) = self.write_refusal() {
                return self.refused(Some(cmd), refusal);
            }
        }
        // Over the memory limit (as found when the script started), a
        // command that may grow memory is refused, unless the script
        // allows it or has written already (it cannot stop half done).
        if cmd.flags.has(Flags::DENYOOM)
            && !self.allow_oom
            && self.ctx.server.out_of_memory
            && self.ctx.server.config.maxmemory > 0
            && !self.has_written()
        {
            return self.refused(Some(cmd), refusals::OOM);
        }
        self.session.reply.resp3 = resp3;
        self.session.reply.buf.clear();
        let mut ctx = Ctx {
            now_ms: self.ctx.now_ms,
            session: &mut self.session,
            server: &mut *self.ctx.server,
            peers: self.ctx.peers,
            call: self.ctx.call,
            replay: self.ctx.replay,
        };
        (self.ctx.call)(&mut ctx, cmd, args, false);
        self.remember_declared_keys(cmd);
        Ok(&self.session.reply.buf)
    }
}

/// `numkeys key... arg...` of the EVAL and FCALL families (`numkeys`
/// already read from `args[2]`): the keys and the args, in one vector
/// split at the returned index.
fn keys_and_argv<'a>(args: &Args<'a>, numkeys: i64) -> Result<(Vec<&'a [u8]>, usize), CmdError> {
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

/// Lends the interpreter to `f` (created on first use: a server that
/// never runs a script never pays for one), out of the state so the
/// script's commands can borrow the state meanwhile; it goes back however
/// `f` ends.
fn with_scripting<R>(
    ctx: &mut Ctx,
    f: impl FnOnce(&mut Scripting, &mut Ctx) -> Result<R, CmdError>,
) -> Result<R, CmdError> {
    let mut scripting = match ctx.server.scripting.take() {
        Some(s) => s,
        None => Scripting::new().map_err(|e| CmdError::owned(format!("ERR Lua: {e}")))?,
    };
    let result = f(&mut scripting, ctx);
    ctx.server.scripting = Some(scripting);
    result
}

/// The flags this call of a script command runs with, as Redis's
/// `getCommandFlags` finds them for the checks before a command
/// (`evalGetCommandFlags`, `fcallGetCommandFlags`): a script or function
/// that declared flags replaces the command's `write`, `denyoom`, `stale`
/// and `may_replicate` with what its flags imply (`scriptFlagsToCmdFlags`);
/// without declared flags (no shebang, an unknown script or function), and
/// for any other command, the command's own stand.
pub fn script_call_flags(server: &ServerState, cmd: &Command, args: Args) -> Flags {
    let declared = match (cmd.name, &server.scripting) {
        ("eval" | "eval_ro", _) => crate::scripting::declared_flags(&args[1]),
        ("evalsha" | "evalsha_ro", Some(scripting)) if args[1].len() == 40 => {
            scripting.script_flags(&String::from_utf8_lossy(&args[1]).to_ascii_lowercase())
        }
        ("fcall" | "fcall_ro", Some(scripting)) => scripting
            .function(&String::from_utf8_lossy(&args[1]))
            .map(|f| f.flags),
        _ => None,
    };
    let Some(declared) = declared else {
        return cmd.flags;
    };
    let has = |bit: u8| declared & bit != 0;
    let mut flags = cmd
        .flags
        .without(Flags::STALE | Flags::DENYOOM | Flags::WRITE | Flags::MAY_REPLICATE);
    if !has(FLAG_NO_WRITES) {
        flags = flags | Flags::WRITE;
        if !has(FLAG_ALLOW_OOM) {
            flags = flags | Flags::DENYOOM;
        }
    }
    if has(FLAG_ALLOW_STALE) {
        flags = flags | Flags::STALE;
    }
    flags
}

/// EVAL and friends: `args[1]` is the script (EVAL) or its SHA-1.
fn eval_generic(ctx: &mut Ctx, args: Args, by_sha: bool, read_only: bool) -> CmdResult {
    let (all, numkeys) = keys_and_argv(&args, int_arg(&args[2])?)?;
    with_scripting(ctx, |scripting, ctx| {
        let sha = if by_sha {
            let sha = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
            if !scripting.exists(sha.as_bytes()) {
                return Err(CmdError::Static(
                    "NOSCRIPT No matching script. Please use EVAL.",
                ));
            }
            sha
        } else {
            scripting.load(&args[1]).map_err(CmdError::owned)?
        };
        let declared = scripting.script_flags(&sha);
        if let Some(flags) = declared {
            if read_only && flags & FLAG_NO_WRITES == 0 {
                return Err(CmdError::Static(
                    "ERR Can not execute a script with write flag using *_ro command.",
                ));
            }
        }
        let target = Target::Script(&sha);
        let limits = ScriptLimits::of(declared, read_only);
        run_script(ctx, args, scripting, &target, &all, numkeys, limits)
    })
}

/// What a script may do, from its declared flags (Redis's
/// `scriptPrepareForRun`).
#[derive(Debug, Clone, Copy)]
struct ScriptLimits {
    read_only: bool,
    allow_oom: bool,
    /// `no-cluster`: refused on a cluster node; `allow-cross-slot-keys`:
    /// its commands may touch keys of several slots (all local).
    no_cluster: bool,
    allow_cross_slot: bool,
}

impl ScriptLimits {
    /// `declared`: the script's flags (`None`: an EVAL script without a
    /// shebang, Redis's compatibility mode); `read_only`: run by a `_RO`
    /// command. A script declared `no-writes` may run over the memory
    /// limit, as `allow-oom` says.
    fn of(declared: Option<u8>, read_only: bool) -> ScriptLimits {
        match declared {
            None => ScriptLimits {
                read_only,
                allow_oom: false,
                no_cluster: false,
                allow_cross_slot: false,
            },
            Some(flags) => {
                let no_writes = flags & FLAG_NO_WRITES != 0;
                ScriptLimits {
                    read_only: no_writes,
                    allow_oom: no_writes || flags & FLAG_ALLOW_OOM != 0,
                    no_cluster: flags & FLAG_NO_CLUSTER != 0,
                    allow_cross_slot: flags & FLAG_ALLOW_CROSS_SLOT != 0,
                }
            }
        }
    }
}

/// What a script run runs.
enum Target<'a> {
    /// A cached EVAL script, by SHA-1.
    Script(&'a str),
    /// A library function, by name.
    Function(&'a str),
}

/// Runs a script on a client of its own, its effects propagated as one
/// unit, its reply (or error) left in the caller's output.
fn run_script(
    ctx: &mut Ctx,
    command: Args,
    scripting: &mut Scripting,
    target: &Target,
    all: &[&[u8]],
    numkeys: usize,
    limits: ScriptLimits,
) -> CmdResult {
    if limits.no_cluster && ctx.server.cluster.is_some() {
        return Err(CmdError::Static(
            "ERR Can not run script on cluster, 'no-cluster' flag is set.",
        ));
    }
    let (keys, argv) = all.split_at(numkeys);
    let session = Session {
        authenticated: true,
        db: ctx.session.db,
        deny_blocking: true,
        in_script: true,
        id: u64::MAX,
        ..Session::default()
    };
    let mut out = std::mem::take(&mut ctx.session.reply);
    let outcome;
    ctx.server.propagate.begin_transaction();
    {
        scripting.set_time_limit_ms(ctx.server.config.busy_reply_threshold_ms);
        let dirty_at_start = ctx.server.dirty();
        let mut client = ScriptClient {
            ctx: &mut *ctx,
            session,
            read_only: limits.read_only,
            allow_oom: limits.allow_oom,
            dirty_at_start,
            declared_keys: keys,
            keys_remembered: false,
            command,
            function_counts: matches!(target, Target::Function(_))
                .then(|| (scripting.library_count(), scripting.function_count())),
            cluster_slot: keys.first().map(|k| crate::cluster::slot::key_slot(k)),
            allow_cross_slot: limits.allow_cross_slot,
        };
        outcome = match target {
            Target::Script(sha) => scripting.run(sha, keys, argv, &mut client, &mut out),
            Target::Function(name) => {
                scripting.call_function(name, keys, argv, &mut client, &mut out)
            }
        };
    }
    ctx.server.propagate.end_transaction();
    // The script's commands propagated themselves, as one unit.
    ctx.server.propagate.suppress();
    ctx.session.reply = out;
    match outcome {
        Some(Ok(())) | None => Ok(()),
        Some(Err(e)) if e.counted => Err(CmdError::Counted(e.message)),
        Some(Err(e)) => Err(CmdError::Owned(e.message)),
    }
}

/// FCALL and FCALL_RO.
fn fcall_generic(ctx: &mut Ctx, args: Args, read_only_command: bool) -> CmdResult {
    let name = String::from_utf8_lossy(&args[1]).into_owned();
    let flags = match &ctx.server.scripting {
        Some(s) => s.function(&name).map(|f| f.flags),
        None => None,
    };
    let Some(flags) = flags else {
        return Err(CmdError::Static("ERR Function not found"));
    };
    let numkeys = parse_i64(&args[2]).ok_or(CmdError::Static("ERR Bad number of keys provided"))?;
    let (all, numkeys) = keys_and_argv(&args, numkeys)?;
    let no_writes = flags & FLAG_NO_WRITES != 0;
    if read_only_command && !no_writes {
        return Err(CmdError::Static(
            "ERR Can not execute a script with write flag using *_ro command.",
        ));
    }
    with_scripting(ctx, |scripting, ctx| {
        let target = Target::Function(&name);
        let limits = ScriptLimits::of(Some(flags), false);
        run_script(ctx, args, scripting, &target, &all, numkeys, limits)
    })
}

fn fcall(ctx: &mut Ctx, args: Args) -> CmdResult {
    fcall_generic(ctx, args, false)
}

fn fcall_ro(ctx: &mut Ctx, args: Args) -> CmdResult {
    fcall_generic(ctx, args, true)
}

fn function_load(ctx: &mut Ctx, args: Args) -> CmdResult {
    let mut replace = false;
    let mut at = 2;
    while at < args.len() - 1 {
        if is(&args[at], "REPLACE") {
            replace = true;
            at += 1;
            continue;
        }
        return Err(CmdError::owned(format!(
            "ERR Unknown option given: {}",
            String::from_utf8_lossy(c_str(&args[at], usize::MAX))
        )));
    }
    if at >= args.len() {
        return Err(CmdError::Static("ERR Function code is missing"));
    }
    let name = with_scripting(ctx, |scripting, _| {
        scripting
            .load_library(&args[at], replace)
            .map_err(CmdError::owned)
    })?;
    ctx.server.mark_changed();
    ctx.out().bulk(name.as_bytes());
    Ok(())
}

fn function_delete(ctx: &mut Ctx, args: Args) -> CmdResult {
    let name = String::from_utf8_lossy(&args[2]);
    let deleted = ctx
        .server
        .scripting
        .as_mut()
        .is_some_and(|s| s.delete_library(&name));
    if !deleted {
        return Err(CmdError::Static("ERR Library not found"));
    }
    ctx.server.mark_changed();
    ctx.out().ok();
    Ok(())
}

fn function_flush(ctx: &mut Ctx, args: Args) -> CmdResult {
    if args.len() > 3 {
        return Err(CmdError::Static(
            "ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION HELP.",
        ));
    }
    if args.len() == 3 && !is(&args[2], "ASYNC") && !is(&args[2], "SYNC") {
        return Err(CmdError::Static(
            "ERR FUNCTION FLUSH only supports SYNC|ASYNC option",
        ));
    }
    if let Some(s) = &mut ctx.server.scripting {
        s.flush_functions();
    }
    ctx.server.mark_changed();
    ctx.out().ok();
    Ok(())
}

fn function_list(ctx: &mut Ctx, args: Args) -> CmdResult {
    let mut with_code = false;
    let mut pattern: Option<&[u8]> = None;
    let mut i = 2;
    while i < args.len() {
        if !with_code && is(&args[i], "WITHCODE") {
            with_code = true;
        } else if pattern.is_none() && is(&args[i], "LIBRARYNAME") {
            if i + 1 >= args.len() {
                return Err(CmdError::Static("ERR library name argument was not given"));
            }
            i += 1;
            pattern = Some(args.get(i));
        } else {
            return Err(CmdError::owned(format!(
                "ERR Unknown argument {}",
                String::from_utf8_lossy(c_str(&args[i], usize::MAX))
            )));
        }
        i += 1;
    }
    let scripting = ctx.server.scripting.take();
    let libraries: Vec<&Library> = scripting
        .iter()
        .flat_map(|s| s.libraries())
        .filter(|l| pattern.is_none_or(|p| glob::matches(p, l.name.as_bytes(), true)))
        .collect();
    let out = ctx.out();
    out.array(libraries.len());
    for library in libraries {
        out.map(if with_code { 4 } else { 3 });
        out.bulk(b"library_name");
        out.bulk(library.name.as_bytes());
        out.bulk(b"engine");
        out.bulk(b"LUA");
        out.bulk(b"functions");
        out.array(library.functions.len());
        for f in &library.functions {
            out.map(3);
            out.bulk(b"name");
            out.bulk(f.name.as_bytes());
            out.bulk(b"description");
            match &f.description {
                Some(d) => out.bulk(d),
                None => out.null(),
            }
            out.bulk(b"flags");
            let names: Vec<&str> = SCRIPT_FLAGS
                .iter()
                .enumerate()
                .filter(|(bit, _)| f.flags & (1 << bit) != 0)
                .map(|(_, n)| *n)
                .collect();
            out.set(names.len());
            for n in names {
                out.simple(n);
            }
        }
        if with_code {
            out.bulk(b"library_code");
            out.bulk(&library.code);
        }
    }
    ctx.server.scripting = scripting;
    Ok(())
}

fn function_dump(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let payload = match &ctx.server.scripting {
        Some(s) => s.dump_functions(),
        None => crate::persistence::rdb::dump_payload(Vec::new()),
    };
    ctx.out().bulk(&payload);
    Ok(())
}

fn function_restore(ctx: &mut Ctx, args: Args) -> CmdResult {
    if args.len() > 4 {
        return Err(CmdError::Static(
            "ERR unknown subcommand or wrong number of arguments for 'restore'. Try FUNCTION HELP.",
        ));
    }
    let how =
        match args.iter().nth(3) {
            None => Restore::Append,
            Some(p) if is(p, "APPEND") => Restore::Append,
            Some(p) if is(p, "REPLACE") => Restore::Replace,
            Some(p) if is(p, "FLUSH") => Restore::Flush,
            Some(_) => return Err(CmdError::Static(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            )),
        };
    with_scripting(ctx, |scripting, _| {
        scripting
            .restore_functions(&args[2], how)
            .map_err(CmdError::owned)
    })?;
    ctx.server.mark_changed();
    ctx.out().ok();
    Ok(())
}

fn function_stats(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let counts = ctx
        .server
        .scripting
        .as_ref()
        .map_or((0, 0), |s| (s.library_count(), s.function_count()));
    // A running function is reported while it is busy (`busy`, through
    // `ScriptClient::while_busy`); here none runs.
    function_stats_reply(ctx.out(), None, counts);
    Ok(())
}

/// FUNCTION STATS's reply: the running function (its name, the command
/// that called it, how long it has run) and the engine's counts.
fn function_stats_reply(
    out: &mut Reply,
    running: Option<(&[u8], Args, u64)>,
    (libraries, functions): (usize, usize),
) {
    out.map(2);
    out.bulk(b"running_script");
    match running {
        None => out.null(),
        Some((name, command, duration_ms)) => {
            out.map(3);
            out.bulk(b"name");
            out.bulk(name);
            out.bulk(b"command");
            out.array(command.len());
            for arg in command.iter() {
                out.bulk(arg);
            }
            out.bulk(b"duration_ms");
            out.int(duration_ms as i64);
        }
    }
    out.bulk(b"engines");
    out.map(1);
    out.bulk(b"LUA");
    out.map(2);
    out.bulk(b"libraries_count");
    out.int(libraries as i64);
    out.bulk(b"functions_count");
    out.int(functions as i64);
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
    let sha = with_scripting(ctx, |scripting, _| {
        scripting.load(&args[2]).map_err(CmdError::owned)
    })?;
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
