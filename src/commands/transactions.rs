//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! Queueing happens in the dispatcher (`dispatch`); the watched-key table
//! is the `multi` room's. EXEC runs the queue under the one time snapshot
//! of its own command, so no key expires between two queued commands, and
//! their effects reach the propagation point as one unit.

use super::{CmdError, CmdResult, Ctx, Handler};
use crate::multi::Transaction;
use crate::protocol::Args;

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[
    ("multi", multi),
    ("exec", exec),
    ("discard", discard),
    ("watch", watch),
    ("unwatch", unwatch),
];

fn multi(ctx: &mut Ctx, _args: Args) -> CmdResult {
    if ctx.session.multi.is_some() {
        return Err(CmdError::Static("ERR MULTI calls can not be nested"));
    }
    ctx.session.multi = Some(Transaction::default());
    ctx.out().ok();
    Ok(())
}

fn exec(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let Some(transaction) = ctx.session.multi.take() else {
        return Err(CmdError::Static("ERR EXEC without MULTI"));
    };
    let client = ctx.session.id;
    let doomed = ctx
        .server
        .watches
        .exec_must_fail(client, &ctx.server.dbs, ctx.now_ms);
    ctx.server.unwatch_all(client);
    if transaction.aborted {
        return Err(CmdError::Static(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
    }
    if doomed {
        ctx.out().null_array();
        return Ok(());
    }
    ctx.server.propagate.begin_transaction();
    ctx.out().array(transaction.queue.len());
    // Blocking commands inside a transaction answer as if timed out.
    ctx.session.deny_blocking = true;
    for (cmd, args) in &transaction.queue {
        let args = args.as_args();
        // The user's rules may have changed since the command was queued.
        let top = super::lookup(args.get(0)).unwrap_or(cmd);
        let parent = (!std::ptr::eq(top, *cmd)).then_some(top);
        if let Err(denied) = ctx.server.acl.check(&ctx.session.user, cmd, parent, &args) {
            super::refusals::log_denial(ctx, &denied, cmd, parent, "multi");
            let reason = denied.exec_reason();
            let message = format!(
                "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {reason}"
            );
            ctx.server.stats.error_replied(message.as_bytes());
            ctx.out().error(message.as_bytes());
            continue;
        }
        (ctx.call)(ctx, cmd, args, true);
    }
    ctx.session.deny_blocking = false;
    ctx.server.propagate.end_transaction();
    // The queued commands propagated themselves, as one unit.
    ctx.server.propagate.suppress();
    Ok(())
}

fn discard(ctx: &mut Ctx, _args: Args) -> CmdResult {
    if ctx.session.multi.take().is_none() {
        return Err(CmdError::Static("ERR DISCARD without MULTI"));
    }
    ctx.server.unwatch_all(ctx.session.id);
    ctx.out().ok();
    Ok(())
}

fn watch(ctx: &mut Ctx, args: Args) -> CmdResult {
    if ctx.session.multi.is_some() {
        return Err(CmdError::Static("ERR WATCH inside MULTI is not allowed"));
    }
    let (client, db, now_ms) = (ctx.session.id, ctx.session.db, ctx.now_ms);
    for key in args.iter().skip(1) {
        let expired = ctx.server.dbs[db].is_logically_expired(key, now_ms);
        ctx.server.watches.watch(client, db, key, expired);
    }
    ctx.server.refresh_event_recording();
    ctx.out().ok();
    Ok(())
}

fn unwatch(ctx: &mut Ctx, _args: Args) -> CmdResult {
    ctx.server.unwatch_all(ctx.session.id);
    ctx.out().ok();
    Ok(())
}
