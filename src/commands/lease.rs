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
fn getlease(ctx: &mut Ctx, args: Args) -> CmdResult {
    if args.len() > 3 {
        // WAIT and BETA come with the next step of issue 42.
        return Err(CmdError::Syntax);
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
            Grant::Held(_) => ("busy", None),
        },
    };
    if !had_leases && !ctx.server.leases.is_empty() {
        // Writes must now reach the lease room (it ends leases).
        ctx.server.refresh_event_recording();
    }
    let out = ctx.out();
    out.array(3);
    match &value {
        Some(v) => out.bulk(v),
        None => out.null(),
    }
    out.bulk(state.as_bytes());
    match token {
        Some(t) => out.int(t as i64),
        None => out.null(),
    }
    Ok(())
}

/// LEASE RELEASE key token: hands the lease back (1) if the token holds
/// it, so that the next reader may try at once; else 0.
fn lease_release(ctx: &mut Ctx, args: Args) -> CmdResult {
    let token = token_arg(&args[3])?;
    let (now_ms, db) = (ctx.now_ms, ctx.session.db);
    let released = ctx.server.leases.release(db, &args[2], token, now_ms);
    ctx.out().int(i64::from(released));
    Ok(())
}
