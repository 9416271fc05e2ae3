//! Stampede protection in the server (issue 42): GETLEASE and LEASE
//! RELEASE over the lease room (`crate::lease`) and soft deadlines
//! (`SET ... STALE`, kept by the keyspace). SET's `LEASE token` fencing is
//! in `strings`.

use super::{int_arg, CmdError, CmdResult, Ctx};
use crate::lease::{Grant, LeaseKind};
use crate::protocol::Args;
use crate::value::ValueRef;

/// GETLEASE on a replica (a READONLY error, so that clients that go to
/// the primary on one do so).
const GETLEASE_ON_REPLICA: &str =
    "READONLY GETLEASE is served by the primary only (leases live there)";

pub(super) static HANDLERS: &[(&str, super::Handler)] =
    &[("getlease", getlease), ("lease|release", lease_release)];

/// A lease token argument (what GETLEASE handed out).
pub(super) fn token_arg(arg: &[u8]) -> Result<u64, CmdError> {
    u64::try_from(int_arg(arg)?).map_err(|_| CmdError::NotInteger)
}

/// GETLEASE key lease-milliseconds [WAIT ms] [BETA beta]: `[value, state,
/// token]` where state is
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
    let (mut wait_ms, mut beta) = (0, None);
    let mut i = 3;
    while i + 1 < args.len() {
        let (opt, value) = (args.get(i), args.get(i + 1));
        if super::is(opt, "WAIT") {
            wait_ms = int_arg(value)?;
            if wait_ms < 0 {
                return Err(CmdError::Static("ERR timeout is negative"));
            }
        } else if super::is(opt, "BETA") {
            let b = std::str::from_utf8(value)
                .ok()
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|b| b.is_finite() && *b > 0.0)
                .ok_or(CmdError::Static("ERR BETA must be a positive number"))?;
            beta = Some(b);
        } else {
            return Err(CmdError::Syntax);
        }
        i += 2;
    }
    if i != args.len() {
        return Err(CmdError::Syntax);
    }
    let lease_ms = int_arg(&args[2])?;
    if lease_ms <= 0 {
        return Err(CmdError::Static(
            "ERR lease-milliseconds must be a positive integer",
        ));
    }
    if ctx.server.repl.is_replica() {
        // Leases live on the primary: one holder per key among all the
        // clients of the data set.
        return Err(CmdError::Static(GETLEASE_ON_REPLICA));
    }
    let key = &args[1];
    let (now_ms, db) = (ctx.now_ms, ctx.session.db);
    // One lookup; a fresh key is answered from where it is, as GET is.
    let session = &mut *ctx.session;
    let (value, soft) = match ctx.server.dbs[db].get_with_soft(key, now_ms) {
        None => (None, None),
        Some((ValueRef::Str(s), soft)) => {
            if beta.is_none() && soft.is_none_or(|soft| soft > now_ms) {
                // `reply(.., Some(s), "fresh", None)`, its tail one copy.
                session.reply.array(3);
                session.reply.bulk(s);
                session.reply.encoded(&FRESH_NO_TOKEN);
                return Ok(());
            }
            (Some(s.to_vec()), soft)
        }
        Some(_) => return Err(CmdError::WrongType),
    };
    let had_leases = !ctx.server.leases.is_empty();
    let (state, token) = match &value {
        Some(_) => match soft {
            // Stale, or XFetch picked this reader to refresh early.
            Some(soft) if soft <= now_ms || beta.is_some_and(|b| early(ctx, key, soft, b)) => {
                let early = soft > now_ms;
                let leases = &mut ctx.server.leases;
                match leases.acquire(db, key, LeaseKind::Refresh, lease_ms, now_ms) {
                    Grant::Granted(_, token) => {
                        leases.stats.early_refreshes += u64::from(early);
                        ("refresh", Some(token))
                    }
                    // An early refresh is out: the others read it fresh.
                    Grant::Held(_) if early => ("fresh", None),
                    Grant::Held(_) => {
                        leases.stats.stale_hits += 1;
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
                if let Some(blocked) = &mut ctx.session.blocked {
                    blocked.on_timeout = crate::blocking::OnTimeout::LeaseBusy;
                }
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

/// XFetch's rule for a fresh key whose soft deadline is `soft`: refresh
/// early when `now - delta * beta * ln(rand()) >= soft`, `delta` being
/// the key's last measured recompute time; never before it has one.
fn early(ctx: &mut Ctx, key: &[u8], soft: i64, beta: f64) -> bool {
    use rand::Rng;
    let Some(delta) = ctx.server.leases.delta(ctx.session.db, key) else {
        return false;
    };
    // In (0, 1]: ln of it is at most 0, so the gap is at least 0.
    let r = 1.0 - ctx.server.rng.gen::<f64>();
    ctx.now_ms as f64 - delta as f64 * beta * r.ln() >= soft as f64
}

/// The end of GETLEASE's reply to a fresh read: `fresh`, no token.
const FRESH_NO_TOKEN: crate::protocol::Encoded = crate::protocol::Encoded {
    resp2: b"$5\r\nfresh\r\n$-1\r\n",
    resp3: b"$5\r\nfresh\r\n_\r\n",
};

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

#[cfg(test)]
mod tests {
    use crate::protocol::Reply;

    /// The fresh read's tail, encoded in advance, is what `reply` writes.
    #[test]
    fn the_fresh_tail_is_the_typed_reply() {
        for resp3 in [false, true] {
            let (mut typed, mut fused) = (Reply::default(), Reply::default());
            typed.resp3 = resp3;
            fused.resp3 = resp3;
            super::reply(&mut typed, Some(b"v"), "fresh", None);
            fused.array(3);
            fused.bulk(b"v");
            fused.encoded(&super::FRESH_NO_TOKEN);
            assert_eq!(typed.buf, fused.buf, "resp3 {resp3}");
        }
    }
}
