//! What the blocking commands share (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH,
//! BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP): the timeout argument, and what to
//! do when none of their keys has data: wait (the `blocking` room keeps
//! the waiter, the loop retries it when a key changes), or, inside EXEC,
//! answer as a timeout would.

use super::{CmdError, Ctx};
use crate::blocking::{BlockedOn, Waiter};
use crate::float::LongDouble;
use crate::protocol::{Args, OwnedArgs};

/// A blocking command's timeout in seconds (`getTimeoutFromObjectOrReply`):
/// a long double, times 1000 rounded up as C converts it; 0 waits forever
/// (`None`), otherwise the absolute deadline in unix ms.
pub fn timeout_arg(arg: &[u8], now_ms: i64) -> Result<Option<i64>, CmdError> {
    let seconds = LongDouble::parse(arg).ok_or(CmdError::Static(
        "ERR timeout is not a float or out of range",
    ))?;
    deadline_after(seconds.millis_ceil_as_i64(), now_ms)
}

/// The deadline `ms` milliseconds after `now_ms` (`None`: 0, wait
/// forever), with Redis's errors for a negative or too large timeout.
pub fn deadline_after(ms: i64, now_ms: i64) -> Result<Option<i64>, CmdError> {
    if ms < 0 {
        return Err(CmdError::Static("ERR timeout is negative"));
    }
    if ms == 0 {
        return Ok(None);
    }
    ms.checked_add(now_ms)
        .map(Some)
        .ok_or(CmdError::Static("ERR timeout is out of range"))
}

/// Whether this run is a retry of a blocked command (then a key of the
/// wrong type is passed over, as Redis serves a waiter only from a key of
/// the type it waits for).
pub fn retrying(ctx: &Ctx) -> bool {
    ctx.session.retrying
}

/// None of `keys` had data: block until one changes or `deadline_ms`
/// passes; inside EXEC, answer with a null array at once; when already
/// retrying, keep waiting. Writes no reply while blocked.
pub fn wait_for_keys(ctx: &mut Ctx, args: Args, keys: &[&[u8]], deadline_ms: Option<i64>) {
    if ctx.session.retrying {
        ctx.session.still_waiting = true;
        return;
    }
    if ctx.session.deny_blocking {
        ctx.out().null_array();
        return;
    }
    let Some(cmd) = ctx.server.commands.lookup(&args[0]) else {
        return;
    };
    let keys: Vec<Vec<u8>> = keys.iter().map(|k| k.to_vec()).collect();
    let who = Waiter {
        client: ctx.session.id,
        token: ctx.session.token,
    };
    let db = ctx.session.db;
    // A blocked XREADGROUP ends when its key is overwritten by any type.
    let on_overwrite = cmd.name == "xreadgroup";
    ctx.server
        .blocking
        .block(who, db, &keys, deadline_ms, on_overwrite);
    ctx.session.blocked = Some(BlockedOn {
        cmd,
        args: OwnedArgs::from_args(args),
        db,
        keys,
        deadline_ms,
        on_timeout: crate::blocking::OnTimeout::NullArray,
    });
    ctx.server.refresh_event_recording();
}
