//! The dispatcher (Redis's `processCommand` and `call()`): a client's
//! request is resolved against the command table, checked (existence,
//! authentication, arity, ACL, memory, MISCONF, replica, pause,
//! subscribed mode), queued inside MULTI or run: the handler found by the
//! entry's id, then the key-change events it caused and its effect to the
//! propagation point, timed for the command statistics, the slow log and
//! the latency monitor. ACL, eviction, persistence and replication are
//! asked here, not by the command families.

use crate::command_table::{full_name, Command, Flags};
use crate::commands::refusals::{
    cluster_route, disk_refusal, log_denial, request_keys, too_few_replicas, NOREPLICAS, OOM,
    READONLY_REPLICA,
};
use crate::commands::{self, c_str, debug_syntax_error, CmdError, CmdResult, Ctx};
use crate::connection::Session;
use crate::protocol::{Args, OwnedArgs};
use crate::state::ServerState;

/// Runs one request (`args` non-empty), appending its reply to the session.
pub fn execute(ctx: &mut Ctx, args: Args) {
    if ctx.server.pause.is_on() && must_wait_for_pause(ctx, args) {
        ctx.session.postponed = true;
        return;
    }
    ctx.session.last_interaction_ms = ctx.now_ms;
    let replied_from = ctx.session.reply.buf.len();
    let asking = ctx.session.asking;
    if let Err(err) = dispatch(ctx, args) {
        reply_error(ctx, &err);
    }
    // ASKING holds for the next command only (or the transaction it
    // opens), as Redis's `resetClient` has it.
    if asking && ctx.session.multi.is_none() && !args[0].eq_ignore_ascii_case(b"asking") {
        ctx.session.asking = false;
    }
    // Counted once it ran, as Redis's `call()` does (INFO does not count
    // itself).
    ctx.server.stats.total_commands_processed += 1;
    after_command(ctx, replied_from);
}

/// Runs one command of an AOF file being loaded, for the file's own
/// client (Redis's `loadSingleAppendOnlyFile`): the command itself, found
/// and its arity checked, queued between MULTI and EXEC; none of a
/// client's checks, counts, timings or MONITOR lines, and so neither are
/// the commands its EXEC or a script runs (see `call_replayed`).
pub fn replay(server: &mut ServerState, session: &mut Session, args: Args) {
    let mut ctx = Ctx {
        call: call_replayed,
        ..context(crate::clock::unix_time_ms(), session, server, &())
    };
    match find(&ctx, args) {
        Ok((top, cmd)) => {
            if !queued(ctx.session, top, cmd, args) {
                call_replayed(&mut ctx, cmd, args, false);
            }
        }
        Err((_, err)) => ctx.out().error(&err.message()),
    }
}

/// How a replayed EXEC or script runs its commands: `call` alone.
fn call_replayed(ctx: &mut Ctx, cmd: &'static Command, args: Args, _slowlog: bool) {
    if let Err(err) = call(ctx, cmd, args) {
        ctx.out().error(&err.message());
    }
}

/// A handler's context for `session`'s command at `now_ms`, with the
/// dispatcher's ways to run nested and replayed commands.
pub fn context<'a>(
    now_ms: i64,
    session: &'a mut Session,
    server: &'a mut ServerState,
    peers: &'a dyn crate::connection::Sessions,
) -> Ctx<'a> {
    Ctx {
        now_ms,
        session,
        server,
        peers,
        call: call_and_reply,
        replay,
    }
}

/// What follows every command a client sent, once it ran: CLIENT
/// CACHING and CLIENT REPLY OFF / SKIP take effect, the memory peak is
/// sampled.
#[inline(always)]
fn after_command(ctx: &mut Ctx, replied_from: usize) {
    // CLIENT CACHING holds for the next command only (a transaction's
    // commands all count as next; CLIENT subcommands leave it).
    if ctx.server.tracking.any()
        && ctx.session.multi.is_none()
        && ctx.session.last_cmd.0 != "client"
    {
        if let Some(t) = ctx.server.tracking.tracker_mut(ctx.session.id) {
            t.caching = false;
        }
    }
    // CLIENT REPLY OFF / SKIP, as the command left the mode (so that
    // CLIENT REPLY ON is answered and OFF is not).
    let (drop_reply, next) = ctx.session.reply_mode.after_command();
    if drop_reply {
        drop_reply_but_pushes(ctx.session, replied_from);
    } else {
        ctx.session.pushed.clear();
    }
    ctx.session.reply_mode = next;
    crate::memory::sample_peak_memory();
}

/// Runs a blocked client's command again once its keys are ready (Redis's
/// unblock path): the command itself, none of a new request's checks or
/// counts. It is timed and counted once, when it is served (see
/// `call_timed`); while it still waits it leaves no trace.
pub fn retry(ctx: &mut Ctx, cmd: &'static Command, args: Args) {
    let replied_from = ctx.session.reply.buf.len();
    ctx.session.retrying = true;
    let result = call_logged(ctx, cmd, args);
    ctx.session.retrying = false;
    if let Err(err) = result {
        reply_error(ctx, &err);
    }
    after_command(ctx, replied_from);
}

/// A command's error as its reply, counted in the error statistics
/// unless it was already.
fn reply_error(ctx: &mut Ctx, err: &CmdError) {
    let msg = err.message();
    if err.is_uncounted() {
        ctx.server.stats.error_replied(&msg);
    }
    ctx.out().error(&msg);
}

/// Drops the reply written since `from`, keeping the pushes in it (see
/// `Session::pushed`).
fn drop_reply_but_pushes(session: &mut Session, from: usize) {
    let buf = &mut session.reply.buf;
    let mut kept = from;
    for range in session.pushed.drain(..) {
        if range.start >= kept && range.end <= buf.len() {
            buf.copy_within(range.clone(), kept);
            kept += range.len();
        }
    }
    buf.truncate(kept);
}

/// Whether CLIENT PAUSE holds this request (not run, not counted; the
/// server keeps it until the pause ends). A request refused anyway (an
/// unknown command, NOAUTH, arity…) is answered at once, as in Redis,
/// whose pause check comes after those; replicas and the primary's link
/// are never held (nor a blocked command's retry, which comes by `retry`).
fn must_wait_for_pause(ctx: &mut Ctx, args: Args) -> bool {
    let session = &*ctx.session;
    if session.replica.is_some() || session.master {
        return false;
    }
    let Ok((top, cmd)) = resolve(ctx, args) else {
        return false;
    };
    let server = &*ctx.server;
    let writes = crate::pause::may_replicate(request_flags(server, session, cmd, args));
    if !server.pause.holds(writes) {
        return false;
    }
    // CLIENT LIST shows the held command as the client's last (Redis
    // sets it before its pause check).
    ctx.session.last_cmd = last_cmd_of(top, cmd);
    true
}

/// CLIENT LIST's `cmd=`: the command, and the subcommand run if it is one.
fn last_cmd_of(
    top: &'static Command,
    cmd: &'static Command,
) -> (&'static str, Option<&'static str>) {
    (top.name, (!std::ptr::eq(top, cmd)).then_some(cmd.name))
}

/// The flags the checks before a command go by (Redis's
/// `getCommandFlags`): the table's, or for a script call those its
/// declared flags make (see `scripting::script_call_flags`).
pub fn command_flags(server: &ServerState, cmd: &Command, args: Args) -> Flags {
    commands::scripting::script_call_flags(server, cmd, args)
}

/// The flags the checks before a request go by: [`command_flags`], and
/// for EXEC those of the commands it would run (Redis's
/// `mstate.cmd_flags`): it writes, may grow memory or may replicate if
/// one of them does, and may run on a stale replica only if all may.
pub fn request_flags(server: &ServerState, session: &Session, cmd: &Command, args: Args) -> Flags {
    let flags = command_flags(server, cmd, args);
    let Some(transaction) = session.multi.as_ref().filter(|_| cmd.name == "exec") else {
        return flags;
    };
    let carried = Flags::WRITE.with(Flags::DENYOOM).with(Flags::MAY_REPLICATE);
    let mut all_stale = true;
    let mut added = Flags::NONE;
    for (queued, queued_args) in &transaction.queue {
        let f = command_flags(server, queued, queued_args.as_args());
        all_stale &= f.has(Flags::STALE);
        added = added.with(f.only(carried));
    }
    let flags = flags.with(added);
    if all_stale {
        flags
    } else {
        flags.without(Flags::STALE)
    }
}

/// ACL: may the session's user run this? A refusal is logged (ACL LOG)
/// and answered with Redis's `-NOPERM`.
fn acl_check(ctx: &mut Ctx, top: &'static Command, cmd: &'static Command, args: Args) -> CmdResult {
    let parent = (!std::ptr::eq(top, cmd)).then_some(top);
    let denied = match ctx.server.acl.check(&ctx.session.user, cmd, parent, &args) {
        Ok(()) => return Ok(()),
        Err(denied) => denied,
    };
    let context = if ctx.session.multi.is_some() {
        "multi"
    } else {
        "toplevel"
    };
    log_denial(ctx, &denied, cmd, parent, context);
    Err(CmdError::owned(denied.message(cmd, parent)))
}

fn dispatch(ctx: &mut Ctx, args: Args) -> CmdResult {
    let (top, cmd) = match resolve(ctx, args) {
        Ok(found) => found,
        Err((found, err)) => return Err(rejected(ctx, found, err)),
    };
    ctx.session.last_cmd = last_cmd_of(top, cmd);
    if !matches!(ctx.session.last_top, Some((_, last)) if std::ptr::eq(last, top)) {
        ctx.session.last_top = crate::protocol::ExactWord::of(&args[0]).map(|name| (name, top));
    }
    if let Err(err) = acl_check(ctx, top, cmd, args) {
        return Err(rejected(ctx, Some(cmd), err));
    }
    if ctx.server.cluster.is_some() && !ctx.obeys_client() {
        if let Err(err) = cluster_check(ctx, top, cmd, args) {
            return Err(redirected(ctx, cmd, err));
        }
    }
    if ctx.server.config.maxmemory > 0 {
        if let Err(err) = oom_check(ctx, cmd, args) {
            return Err(rejected(ctx, Some(cmd), err));
        }
    }
    if ctx.server.tracking.any() {
        let max_keys = ctx.server.config.tracking_table_max_keys;
        ctx.server.tracking.limit_used_slots(max_keys);
        // Keys dropped to make room, before this command ran: its own
        // client hears of them before its reply (Redis sends at once
        // outside a command's execution; #11715).
        let resp3 = ctx.session.reply.resp3;
        for own in ctx.server.tracking.take_own(ctx.session.id) {
            let subscribed = ctx.session.is_subscribed();
            crate::tracking::encode(&own, resp3, false, subscribed, &mut ctx.session.reply);
        }
    }
    if queued(ctx.session, top, cmd, args) {
        ctx.out().simple("QUEUED");
        return Ok(());
    }
    call_logged(ctx, cmd, args)
}

/// Between MULTI and EXEC, queues the command unless it is one that runs
/// at once (`RUN_IN_MULTI`); whether it was queued. Outside MULTI (the
/// hot path) this is one check of an Option.
#[inline(always)]
fn queued(session: &mut Session, top: &Command, cmd: &'static Command, args: Args) -> bool {
    match &mut session.multi {
        Some(t) if !RUN_IN_MULTI.contains(&top.name) => {
            t.queue.push((cmd, OwnedArgs::from_args(args)));
            true
        }
        _ => false,
    }
}

/// A request refused before it ran: counted against its command, if it
/// named one (INFO commandstats `rejected_calls`); one refused while a
/// transaction is queued dooms it.
fn rejected(ctx: &mut Ctx, cmd: Option<&Command>, err: CmdError) -> CmdError {
    if let Some(cmd) = cmd {
        ctx.server.cmdstats.rejected(cmd);
        // A refused EXEC ends the transaction, saying why (Redis's
        // `execCommandAbort`), in or out of MULTI.
        if cmd.name == "exec" {
            ctx.session.multi = None;
            let id = ctx.session.id;
            ctx.server.unwatch_all(id);
            return CmdError::owned(format!(
                "EXECABORT Transaction discarded because of: {}",
                String::from_utf8_lossy(&err.message())
            ));
        }
    }
    if let Some(t) = &mut ctx.session.multi {
        t.aborted = true;
    }
    err
}

/// Cluster mode: whether this node serves the keys the request names
/// (for EXEC, those of every queued command); if not, the redirection or
/// refusal Redis answers (`MOVED`, `ASK`, `CROSSSLOT`, `TRYAGAIN`,
/// `CLUSTERDOWN`).
fn cluster_check(ctx: &Ctx, top: &'static Command, cmd: &'static Command, args: Args) -> CmdResult {
    use crate::command_table::{key_layout, KeyLayout};
    let (asking, readonly) = (ctx.session.asking, ctx.session.readonly);
    let route = |keys: &mut dyn Iterator<Item = &[u8]>| {
        let flags = || request_flags(ctx.server, ctx.session, cmd, args);
        cluster_route(ctx.server, cmd, keys, flags, asking, readonly, ctx.now_ms)
            .map(|_| ())
            .map_err(|refusal| refusal.error(ctx.server, ctx.session.tls))
    };
    if cmd.name == "exec" {
        let Some(t) = &ctx.session.multi else {
            return Ok(());
        };
        let mut keys = t.queue.iter().flat_map(|(queued, queued_args)| {
            let queued_args = queued_args.as_args();
            let parent = crate::command_table::lookup(&queued_args[0])
                .filter(|p| !std::ptr::eq(*p, *queued));
            request_keys(queued, parent, queued_args)
        });
        return route(&mut keys);
    }
    match key_layout(cmd) {
        KeyLayout::None => Ok(()),
        // The common case: keys by position, nothing allocated.
        layout @ KeyLayout::Range { .. } => route(&mut layout.range_keys(args)),
        KeyLayout::Specs => {
            let parent = (!std::ptr::eq(top, cmd)).then_some(top);
            route(&mut request_keys(cmd, parent, args).into_iter())
        }
    }
}

/// A request the cluster check refused: counted against its command; a
/// refused EXEC discards its transaction, a command refused while one is
/// queued dooms it (Redis's `discardTransaction` / `flagTransaction`).
fn redirected(ctx: &mut Ctx, cmd: &Command, err: CmdError) -> CmdError {
    ctx.server.cmdstats.rejected(cmd);
    if cmd.name == "exec" {
        ctx.session.multi = None;
        let id = ctx.session.id;
        ctx.server.unwatch_all(id);
    } else if let Some(t) = &mut ctx.session.multi {
        t.aborted = true;
    }
    err
}

/// The memory limit, before every command (Redis's `processCommand`):
/// evicts what `maxmemory-policy` allows; while still over the limit,
/// refuses the commands that may grow memory (`denyoom`, an EXEC holding
/// one) and any command a transaction would queue, so reads, deletes and
/// EXEC/DISCARD keep working. Not for the primary's stream or a loading
/// AOF, nor on a replica (Redis's `replica-ignore-maxmemory yes`).
fn oom_check(ctx: &mut Ctx, cmd: &Command, args: Args) -> CmdResult {
    ctx.server.out_of_memory = false;
    if !crate::evict::over_limit(ctx.server)
        || ctx.session.master
        || ctx.server.loading
        || ctx.server.repl.is_replica()
    {
        return Ok(());
    }
    let not_counted = crate::evict::not_counted(ctx.server, ctx.peers);
    let outcome = crate::evict::perform_evictions(ctx.server, not_counted, ctx.now_ms);
    // Remembered for the commands a script runs (Redis's
    // `pre_command_oom_state`).
    ctx.server.out_of_memory = outcome == crate::evict::Outcome::Fail;
    if outcome != crate::evict::Outcome::Fail {
        return Ok(());
    }
    let deny_oom = request_flags(ctx.server, ctx.session, cmd, args).has(Flags::DENYOOM);
    let queuing =
        ctx.session.multi.is_some() && !["exec", "discard", "quit", "reset"].contains(&cmd.name);
    if queuing || deny_oom {
        return Err(CmdError::Static(OOM));
    }
    Ok(())
}

/// Commands that run at once between MULTI and EXEC instead of being
/// queued (Redis's list in `processCommand`).
const RUN_IN_MULTI: &[&str] = &["exec", "discard", "multi", "watch", "quit", "reset"];

/// A refused request: the command it named, if any, and why.
type Refusal = (Option<&'static Command>, CmdError);

/// The table entry a request names (the subcommand's, for containers like
/// CONFIG), after the checks every command gets: existence,
/// authentication, arity. Returns the top-level entry and the one to run.
#[inline(always)]
fn resolve(ctx: &Ctx, args: Args) -> Result<(&'static Command, &'static Command), Refusal> {
    let (cmd, run) = find(ctx, args)?;
    match may_run(ctx, cmd, run, args) {
        Ok(()) => Ok((cmd, run)),
        Err(err) => Err((Some(run), err)),
    }
}

/// The refusals of a command found: DEBUG's protection, MULTI's,
/// subscribed mode's, MISCONF, and the replication's.
#[inline(always)]
fn may_run(ctx: &Ctx, cmd: &Command, run: &Command, args: Args) -> CmdResult {
    protected_check(ctx, cmd)?;
    no_multi_check(ctx, run)?;
    subscribed_mode_check(ctx, cmd, run)?;
    disk_error_check(ctx, run, args)?;
    replica_check(ctx, run, args)
}

/// The table entries a request names (top level, and the one to run),
/// once it exists, the client may run it unauthenticated or is
/// authenticated, and its arity is right.
#[inline(always)]
fn find(ctx: &Ctx, args: Args) -> Result<(&'static Command, &'static Command), Refusal> {
    let repeated = match ctx.session.last_top {
        Some((name, cmd)) if name.is(&args[0]) => Some(cmd),
        _ => None,
    };
    let Some(cmd) = repeated.or_else(|| ctx.server.commands.lookup(&args[0])) else {
        return Err((None, unknown_command(args)));
    };
    if !ctx.session.authenticated && !cmd.flags.has(Flags::NOAUTH) {
        let err = CmdError::Static("NOAUTH Authentication required.");
        return Err((Some(cmd), err));
    }
    // The entry to run: the subcommand's, for a container given one.
    let run = if !cmd.subcommands.is_empty() && args.len() >= 2 {
        // Redis counts nothing for an unknown subcommand.
        let Some(sub) = cmd.subcommand(&args[1]) else {
            if cmd.name == "debug" {
                return Err((None, debug_syntax_error(args)));
            }
            return Err((
                None,
                CmdError::with_arg(
                    "ERR unknown subcommand '",
                    c_str(&args[1], 128),
                    &format!("'. Try {} HELP.", cmd.name.to_ascii_uppercase()),
                ),
            ));
        };
        sub
    } else {
        cmd
    };
    if !run.arity_ok(args.len()) {
        let err = if cmd.name == "debug" && !std::ptr::eq(run, cmd) {
            debug_syntax_error(args)
        } else if std::ptr::eq(run, cmd) {
            CmdError::wrong_arity(cmd.name)
        } else {
            CmdError::wrong_arity(&format!("{}|{}", cmd.name, run.name))
        };
        return Err((Some(run), err));
    }
    Ok((cmd, run))
}

/// Commands flagged `no_multi` (SAVE, SHUTDOWN, SYNC, PSYNC) are refused
/// inside MULTI, dooming it.
fn no_multi_check(ctx: &Ctx, cmd: &Command) -> CmdResult {
    if ctx.session.multi.is_some() && cmd.flags.has(Flags::NO_MULTI) {
        return Err(CmdError::Static(
            "ERR Command not allowed inside a transaction",
        ));
    }
    Ok(())
}

/// Redis's MISCONF: while the last background save failed (and
/// `stop-writes-on-bgsave-error` with save points), or the AOF cannot be
/// written or synced, writes and PING are refused, so that clients notice
/// the data is not being persisted.
#[inline(always)]
fn disk_error_check(ctx: &Ctx, cmd: &Command, args: Args) -> CmdResult {
    if ctx.session.master {
        return Ok(());
    }
    // The disk's state first (a flag and an atomic): a script call's
    // flags cost a lookup of the script, paid only while writes fail.
    match disk_refusal(ctx.server) {
        None => Ok(()),
        Some(refusal) => refused_while_disk_fails(ctx, cmd, args, refusal),
    }
}

#[inline(never)]
fn refused_while_disk_fails(ctx: &Ctx, cmd: &Command, args: Args, refusal: CmdError) -> CmdResult {
    if cmd.name == "ping" || request_flags(ctx.server, ctx.session, cmd, args).has(Flags::WRITE) {
        return Err(refusal);
    }
    Ok(())
}

/// A replica's clients: no writes with `replica-read-only` (Redis's
/// READONLY); with the link down and `replica-serve-stale-data no`, only
/// the commands flagged `stale` (Redis's MASTERDOWN). A primary's: no
/// writes without `min-replicas-to-write` good replicas (NOREPLICAS).
#[inline(always)]
fn replica_check(ctx: &Ctx, cmd: &Command, args: Args) -> CmdResult {
    if ctx.session.master || (!ctx.server.repl.is_replica() && !too_few_replicas(ctx.server)) {
        return Ok(());
    }
    refused_by_replication(ctx, cmd, args)
}

#[inline(never)]
fn refused_by_replication(ctx: &Ctx, cmd: &Command, args: Args) -> CmdResult {
    let server = &ctx.server;
    let flags = || request_flags(server, ctx.session, cmd, args);
    if !server.repl.is_replica() {
        // A primary with `min-replicas-to-write`: Redis's NOREPLICAS.
        if too_few_replicas(server) && flags().has(Flags::WRITE) {
            return Err(CmdError::Static(NOREPLICAS));
        }
        return Ok(());
    }
    let flags = flags();
    if flags.has(Flags::WRITE) && server.config.replica_read_only {
        return Err(CmdError::Static(READONLY_REPLICA));
    }
    if server.repl.link != crate::replication::Link::Connected
        && !server.config.replica_serve_stale_data
        && !flags.has(Flags::STALE)
    {
        return Err(CmdError::Static(
            "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
        ));
    }
    Ok(())
}

/// DEBUG, Redis's protected command, only for whom `enable-debug-command`
/// allows, with Redis's error (checked after arity, as Redis does).
fn protected_check(ctx: &Ctx, top: &Command) -> CmdResult {
    if top.name != "debug"
        || ctx
            .server
            .config
            .enable_debug_command
            .allows(&ctx.session.addr)
    {
        return Ok(());
    }
    Err(CmdError::Static(
        "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", \
         you can run it from a local connection, otherwise you need to set this option in the \
         configuration file, and then restart the server.",
    ))
}

/// In RESP2 a subscribed client may only (un)subscribe, PING, QUIT and
/// RESET; RESP3 carries messages as pushes and allows everything.
#[inline(always)]
fn subscribed_mode_check(ctx: &Ctx, top: &Command, cmd: &Command) -> CmdResult {
    if ctx.session.is_subscribed() {
        refused_while_subscribed(ctx, top, cmd)
    } else {
        Ok(())
    }
}

#[inline(never)]
fn refused_while_subscribed(ctx: &Ctx, top: &Command, cmd: &Command) -> CmdResult {
    if ctx.session.reply.resp3 || commands::pubsub::allowed_when_subscribed(top.name) {
        return Ok(());
    }
    let full = full_name(cmd, (!std::ptr::eq(top, cmd)).then_some(top));
    Err(CmdError::owned(format!(
        "ERR Can't execute '{full}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    )))
}

/// Shows the command to MONITOR clients, secrets redacted as the slow
/// log redacts them.
fn feed_monitors(ctx: &mut Ctx, args: Args, nested: bool) {
    let shown = crate::slowlog::redacted_args(args.iter());
    let origin = if nested {
        crate::monitor::Origin::Script
    } else {
        crate::monitor::Origin::Client(&ctx.session.addr)
    };
    ctx.server.monitors.feed(ctx.session.db, origin, &shown);
}

/// Runs a command inside EXEC or a script: as `call` (`call_logged` for
/// EXEC's, which the slow log sees one by one), with an error written as
/// the command's reply.
pub fn call_and_reply(ctx: &mut Ctx, cmd: &Command, args: Args, slowlog: bool) {
    ctx.server.stats.total_commands_processed += 1;
    let result = call_timed(ctx, cmd, args, !slowlog);
    if let Err(err) = result {
        let msg = err.message();
        if err.is_uncounted() {
            ctx.server.stats.error_replied(&msg);
        }
        ctx.out().error(&msg);
    }
}

/// Runs one command (Redis's `call()`): the handler, then the key-change
/// events it caused (expired keys' DELs go out first), then its effect to
/// the propagation point, if it changed anything.
pub fn call(ctx: &mut Ctx, cmd: &Command, args: Args) -> CmdResult {
    call_inline(ctx, cmd, args)
}

/// `call`, inlined into `call_timed` (every client's command).
#[inline(always)]
fn call_inline(ctx: &mut Ctx, cmd: &Command, args: Args) -> CmdResult {
    let db = ctx.session.db;
    let dirty_before = ctx.server.dirty();
    // CLIENT NO-TOUCH: its reads leave keys' access history alone (but
    // TOUCH touches, as in Redis).
    let no_touch = ctx.session.no_touch && cmd.name != "touch";
    if no_touch {
        ctx.server.dbs.iter_mut().for_each(|db| db.no_touch = true);
    }
    // NOLOOP: the changes this command makes are its client's (a
    // script's commands', its caller's: the outermost call sets it).
    let outermost = ctx.server.tracking.current == 0 && !ctx.session.in_script;
    if outermost {
        ctx.server.tracking.current = ctx.session.id;
    }
    let result = match commands::handlers::of(cmd) {
        Some(run) => run(ctx, args),
        None => Ok(()),
    };
    if no_touch {
        ctx.server.dbs.iter_mut().for_each(|db| db.no_touch = false);
    }
    if ctx.server.tracking.any() {
        track_keys_read(ctx, cmd, args);
    }
    ctx.server.process_key_events();
    if outermost {
        ctx.server.tracking.current = 0;
    }
    let changes = ctx.server.dirty() - dirty_before;
    ctx.server
        .propagate
        .command_done(db, || OwnedArgs::from_args(args), changes);
    result
}

/// Client-side caching: the keys a read-only command (a script's too,
/// counted for its caller; not the read-only scripts themselves, nor
/// pub/sub's shard channels) read may now be cached by its client.
fn track_keys_read(ctx: &mut Ctx, cmd: &Command, args: Args) {
    let script = matches!(cmd.name, "eval_ro" | "evalsha_ro" | "fcall_ro");
    if !cmd.flags.has(Flags::READONLY) || cmd.flags.has(Flags::PUBSUB) || script {
        return;
    }
    if ctx.session.in_script {
        // The caller's declared keys are remembered instead (see
        // `ScriptClient::remember_declared_keys`).
        return;
    }
    if let Some(keys) = cmd.keys_of(&args) {
        ctx.server.tracking.remember(ctx.session.id, &keys);
    }
}

/// `call`, timed for the command statistics and the slow log: the
/// dispatcher's way to run a client's command, and EXEC's for each of its
/// own (EXEC itself is not logged, nor are a script's commands, as in
/// Redis: `nested` for those).
pub fn call_logged(ctx: &mut Ctx, cmd: &Command, args: Args) -> CmdResult {
    call_timed(ctx, cmd, args, false)
}

/// `call_logged`; `nested` for a command a script runs (timed on its own,
/// not slow-logged).
fn call_timed(ctx: &mut Ctx, cmd: &Command, args: Args, nested: bool) -> CmdResult {
    // One reading a command: within a batch of requests the end of one
    // command is the start of the next (the parse between them counts).
    let started = match ctx.session.command_tick {
        tick if tick != 0 && !nested => tick,
        _ => crate::clock::ticks(),
    };
    // A woken command was shown and counted when it blocked: its retry
    // adds its time and outcome once it is served, nothing while it
    // still waits (Redis's `updateStatsOnUnblock`).
    let retry = ctx.session.retrying;
    // Scripts are shown before the commands they run, everything else
    // once it ran; administrative commands never (as Redis).
    let monitored = !retry
        && !ctx.server.monitors.is_empty()
        && !ctx.server.loading
        && !cmd.flags.has(Flags::ADMIN);
    if monitored && cmd.flags.has(Flags::SKIP_MONITOR) {
        feed_monitors(ctx, args, nested);
    }
    let result = call_inline(ctx, cmd, args);
    if monitored && !cmd.flags.has(Flags::SKIP_MONITOR) {
        feed_monitors(ctx, args, nested);
    }
    let ended = crate::clock::ticks();
    let ticks = ended.wrapping_sub(started);
    let threshold_ms = ctx.server.config.latency_monitor_threshold;
    if threshold_ms > 0 {
        let event = if cmd.flags.has(Flags::FAST) {
            "fast-command"
        } else {
            "command"
        };
        let ms = crate::clock::ticks_to_us(ticks) / 1000;
        let now_s = ctx.now_ms / 1000;
        ctx.server
            .latency
            .add_if_needed(threshold_ms, event, ms, now_s);
    }
    // Still blocked: the slow log and the latency histogram wait for
    // the end of the wait.
    let waiting = ctx.session.blocked.is_some() || ctx.session.still_waiting;
    if retry && waiting {
        return result;
    }
    let track_latency = ctx.server.config.latency_tracking && !waiting;
    ctx.server
        .cmdstats
        .called(cmd, ticks, result.is_err(), track_latency, !retry);
    if nested || waiting {
        return result;
    }
    ctx.session.command_tick = ended;
    // The setting as the command left it (a CONFIG SET of it counts);
    // compared in ticks, converted only for an entry.
    let threshold_us = ctx.server.config.slowlog_log_slower_than;
    if cmd.name != "exec"
        && threshold_us >= 0
        && ticks >= (threshold_us as u64).saturating_mul(crate::clock::ticks_per_us())
    {
        let duration_us = crate::clock::ticks_to_us(ticks);
        let shown = crate::slowlog::redacted_args(args.iter());
        let max_len = ctx.server.config.slowlog_max_len;
        ctx.server.slowlog.push(
            threshold_us,
            max_len,
            duration_us,
            &shown,
            &ctx.session.addr,
            &ctx.session.name,
            ctx.now_ms / 1000,
        );
    }
    result
}

/// Redis's `unknown command` error: the name and the first arguments as
/// `%.128s` and `'%.*s' ` print them, the list cut once it passes 128 bytes.
fn unknown_command(args: Args) -> CmdError {
    let mut listed: Vec<u8> = Vec::new();
    for arg in args.iter().skip(1) {
        if listed.len() >= 128 {
            break;
        }
        let room = 128 - listed.len();
        listed.push(b'\'');
        listed.extend_from_slice(c_str(arg, room));
        listed.extend_from_slice(b"' ");
    }
    let mut msg = b"ERR unknown command '".to_vec();
    msg.extend_from_slice(c_str(&args[0], 128));
    msg.extend_from_slice(b"', with args beginning with: ");
    msg.extend_from_slice(&listed);
    CmdError::Owned(msg)
}

#[cfg(test)]
mod tests {
    use crate::harness::Harness;

    #[test]
    fn unknown_command_and_arity_errors() {
        let mut h = Harness::new();
        assert_eq!(
            h.run("foo a \"b\\r\\nc\""),
            "-ERR unknown command 'foo', with args beginning with: 'a' 'b  c' \r\n"
        );
        assert_eq!(
            h.run("GET"),
            "-ERR wrong number of arguments for 'get' command\r\n"
        );
        assert_eq!(
            h.run("config foo"),
            "-ERR unknown subcommand 'foo'. Try CONFIG HELP.\r\n"
        );
        assert_eq!(
            h.run("config get"),
            "-ERR wrong number of arguments for 'config|get' command\r\n"
        );
    }
}
