//! Stampede protection in the server (issue 42): GETLEASE and LEASE
//! RELEASE over the lease room (`crate::lease`) and soft deadlines
//! (`SET ... STALE`, kept by the keyspace). SET's `LEASE token` fencing is
//! in `strings`.

use super::{int_arg, CmdError, CmdResult, Ctx};
use crate::lease::{Grant, LeaseKind};
use crate::protocol::Args;
use crate::value::ValueRef;

pub(super) static HANDLERS: &[(&str, super::Handler)] =
    &[("getlease", getlease), ("lease|release", lease_release)];

/// A lease token argument (what GETLEASE handed out).
pub(super) fn token_arg(arg: &[u8]) -> Result<u64, CmdError> {
    u64::try_from(int_arg(arg)?).map_err(|_| CmdError::NotInteger)
}

/// GETLEASE key lease-milliseconds: `[value, state, token]` where state is
/// `fresh` (before the soft deadline, or no soft deadline), `refresh`
/// (stale, and the caller now holds the refresh lease: token), `stale`
/// (another client holds it), `fill` (missing, and the caller now holds
/// the fill lease: token) or `busy` (missing, another client fills it).
///
/// With `WAIT milliseconds`, a `busy` caller blocks instead (as BLPOP
/// does, never polling) until the key is written (then it gets the value)
/// or its fill lease ends without one (a lapse, a release, a deletion:
/// the earliest waiter takes the lease over), or the wait runs out
/// (`busy`). Inside MULTI or a script WAIT acts as 0.
fn getlease(ctx: &mut Ctx, args: Args) -> CmdResult {
    let mut wait_ms = 0;
    let mut i = 3;
    while i < args.len() {
        let opt = args.get(i);
        if !super::is(opt, "WAIT") || i + 1 >= args.len() {
            // BETA (XFetch) comes with the next step of issue 42.
            return Err(CmdError::Syntax);
        }
        wait_ms = int_arg(args.get(i + 1))?;
        if wait_ms < 0 {
            return Err(CmdError::Static("ERR timeout is negative"));
        }
        i += 2;
    }
    let lease_ms = int_arg(&args[2])?;
    if lease_ms <= 0 {
        return Err(CmdError::Static(
            "ERR lease-milliseconds must be a positive integer",
        ));
    }
    let key = &args[1];
    let (now_ms, db) = (ctx.now_ms, ctx.session.db);
    let value = match ctx.db().get(key, now_ms) {
        None => None,
        Some(ValueRef::Str(s)) => Some(s.to_vec()),
        Some(_) => return Err(CmdError::WrongType),
    };
    let had_leases = !ctx.server.leases.is_empty();
    let (state, token) = match &value {
        Some(_) => match ctx.db().soft_deadline(key, now_ms) {
            Some(soft) if soft <= now_ms => {
                match ctx
                    .server
                    .leases
                    .acquire(db, key, LeaseKind::Refresh, lease_ms, now_ms)
                {
                    Grant::Granted(_, token) => ("refresh", Some(token)),
                    Grant::Held(_) => {
                        ctx.server.leases.stats.stale_hits += 1;
                        ("stale", None)
                    }
                }
            }
            _ => ("fresh", None),
        },
        None => match ctx
            .server
            .leases
            .acquire(db, key, LeaseKind::Fill, lease_ms, now_ms)
        {
            Grant::Granted(_, token) => ("fill", Some(token)),
            Grant::Held(_) if wait_ms > 0 && !ctx.session.deny_blocking => {
                if !super::blocking::retrying(ctx) {
                    ctx.server.leases.stats.lease_waits += 1;
                }
                let deadline = super::blocking::deadline_after(wait_ms, now_ms)?;
                super::blocking::wait_for_keys(ctx, args, &[key], deadline);
                return Ok(());
            }
            Grant::Held(_) => ("busy", None),
        },
    };
    if !had_leases && !ctx.server.leases.is_empty() {
        // Writes must now reach the lease room (it ends leases).
        ctx.server.refresh_event_recording();
    }
    reply(ctx.out(), value.as_deref(), state, token);
    Ok(())
}

/// GETLEASE's reply: `[value or nil, state, token or nil]`.
fn reply(out: &mut crate::protocol::Reply, value: Option<&[u8]>, state: &str, token: Option<u64>) {
    out.array(3);
    match value {
        Some(v) => out.bulk(v),
        None => out.null(),
    }
    out.bulk(state.as_bytes());
    match token {
        Some(t) => out.int(t as i64),
        None => out.null(),
    }
}

/// A blocked GETLEASE whose WAIT ran out: `busy`.
pub fn wait_timed_out(out: &mut crate::protocol::Reply, leases: &mut crate::lease::Leases) {
    leases.stats.lease_wait_timeouts += 1;
    reply(out, None, "busy", None);
}

/// LEASE RELEASE key token: hands the lease back (1) if the token holds
/// it, so that the next reader may try at once; else 0.
fn lease_release(ctx: &mut Ctx, args: Args) -> CmdResult {
    let token = token_arg(&args[3])?;
    let (now_ms, db) = (ctx.now_ms, ctx.session.db);
    let released = ctx.server.leases.release(db, &args[2], token, now_ms);
    if released {
        // The next waiter may fill at once.
        ctx.server.blocking.key_changed(db, &args[2]);
    }
    ctx.out().int(i64::from(released));
    Ok(())
}
