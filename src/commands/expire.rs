//! Expiry commands: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, TTL, PTTL,
//! EXPIRETIME, PEXPIRETIME, PERSIST.

use super::{int_arg, is, CmdError, CmdResult, Ctx, Handler};
use crate::db::EventClass;
use crate::protocol::Args;

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[
    ("expire", expire),
    ("pexpire", pexpire),
    ("expireat", expireat),
    ("pexpireat", pexpireat),
    ("ttl", ttl),
    ("pttl", pttl),
    ("expiretime", expiretime),
    ("pexpiretime", pexpiretime),
    ("persist", persist),
];

/// The unit an expire argument is given in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Seconds,
    Millis,
}

/// `n` (in `unit`) after `base_ms`, as absolute unix ms; `None` on overflow.
pub fn expire_deadline_ms(n: i64, unit: Unit, base_ms: i64) -> Option<i64> {
    let ms = match unit {
        Unit::Seconds => n.checked_mul(1000)?,
        Unit::Millis => n,
    };
    ms.checked_add(base_ms)
}

/// EXPIRE's NX/XX/GT/LT conditions.
#[derive(Default)]
struct Conditions {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

fn parse_conditions(args: &Args) -> Result<Conditions, CmdError> {
    let mut c = Conditions::default();
    for arg in args.iter().skip(3) {
        if is(arg, "NX") {
            c.nx = true;
        } else if is(arg, "XX") {
            c.xx = true;
        } else if is(arg, "GT") {
            c.gt = true;
        } else if is(arg, "LT") {
            c.lt = true;
        } else {
            return Err(CmdError::with_arg("ERR Unsupported option ", arg, ""));
        }
    }
    if c.nx && (c.xx || c.gt || c.lt) {
        return Err(CmdError::Static(
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if c.gt && c.lt {
        return Err(CmdError::Static(
            "ERR GT and LT options at the same time are not compatible",
        ));
    }
    Ok(c)
}

impl Conditions {
    /// Whether the new deadline may replace `current` (`None` = no TTL,
    /// which counts as an infinite TTL for GT and LT).
    fn allow(&self, current: Option<i64>, new_ms: i64) -> bool {
        match current {
            Some(_) if self.nx => false,
            None if self.xx || self.gt => false,
            Some(cur) if self.gt => new_ms > cur,
            Some(cur) if self.lt => new_ms < cur,
            _ => true,
        }
    }
}

/// EXPIRE and friends (`expireGenericCommand`). `relative` adds the
/// command's time snapshot. A deadline already past deletes the key; a key
/// that expired before this command is deleted by the lookup first, so it is
/// never resurrected.
fn expire_generic(
    ctx: &mut Ctx,
    args: Args,
    unit: Unit,
    relative: bool,
    name: &'static str,
) -> CmdResult {
    let conditions = parse_conditions(&args)?;
    let n = int_arg(&args[2])?;
    let now_ms = ctx.now_ms;
    let base_ms = if relative { now_ms } else { 0 };
    let at_ms = expire_deadline_ms(n, unit, base_ms).ok_or(CmdError::InvalidExpireTime(name))?;
    let key = &args[1];
    let applied = match ctx.db().expire_at(key, now_ms) {
        None => false,
        Some(current) if !conditions.allow(current, at_ms) => false,
        Some(_) if ctx.server.already_expired(at_ms, now_ms) => {
            delete_now(ctx, key);
            true
        }
        Some(_) => {
            ctx.db().set_expire(key, at_ms, now_ms);
            set_expire_effect(ctx, key, at_ms);
            true
        }
    };
    ctx.out().int(i64::from(applied));
    Ok(())
}

/// A deadline already past, given by EXPIRE or GETEX: the key goes now,
/// freed as `lazyfree-lazy-expire` says, and the stream gets DEL (UNLINK
/// when lazy) rather than a time that a replica would see as past.
pub fn delete_now(ctx: &mut Ctx, key: &[u8]) {
    let now_ms = ctx.now_ms;
    let lazy = ctx.server.config.lazyfree.expire;
    ctx.db().delete(key, now_ms, lazy);
    ctx.signal(EventClass::GENERIC, "del", key);
    let name: &[u8] = if lazy { b"UNLINK" } else { b"DEL" };
    ctx.propagate_as(&[name, key]);
}

/// Signals a new deadline on `key` and propagates it as the absolute
/// `PEXPIREAT key <ms>` (EXPIRE family, GETEX).
pub fn set_expire_effect(ctx: &mut Ctx, key: &[u8], at_ms: i64) {
    ctx.signal(EventClass::GENERIC, "expire", key);
    let at = at_ms.to_string();
    ctx.propagate_as(&[b"PEXPIREAT", key, at.as_bytes()]);
}

fn expire(ctx: &mut Ctx, args: Args) -> CmdResult {
    expire_generic(ctx, args, Unit::Seconds, true, "expire")
}

fn pexpire(ctx: &mut Ctx, args: Args) -> CmdResult {
    expire_generic(ctx, args, Unit::Millis, true, "pexpire")
}

fn expireat(ctx: &mut Ctx, args: Args) -> CmdResult {
    expire_generic(ctx, args, Unit::Seconds, false, "expireat")
}

fn pexpireat(ctx: &mut Ctx, args: Args) -> CmdResult {
    expire_generic(ctx, args, Unit::Millis, false, "pexpireat")
}

/// TTL and friends (`ttlGenericCommand`): -2 no key, -1 no TTL, else the
/// remaining (or absolute) time, seconds rounded as Redis rounds.
/// TTL and PTTL also take KeyDB's member argument (`TTL key member`):
/// -2 no key, -1 no such member or no deadline, else the member's.
fn ttl_generic(ctx: &mut Ctx, args: Args, unit: Unit, absolute: bool) -> CmdResult {
    let now_ms = ctx.now_ms;
    let deadline = match args.len() {
        2 => ctx.db().ttl_deadline(&args[1], now_ms),
        3 => super::member_ttl::keydb_member_deadline(ctx, &args[1], &args[2]),
        _ => return Err(CmdError::Static("ERR Invalid arguments")),
    };
    let reply = match deadline {
        None => -2,
        Some(None) => -1,
        Some(Some(at_ms)) => {
            let ms = if absolute {
                at_ms
            } else {
                at_ms.saturating_sub(now_ms)
            }
            .max(0);
            match unit {
                Unit::Millis => ms,
                // Rounded without overflow (Redis answers 9223372036854776
                // for a deadline of i64::MAX ms).
                Unit::Seconds => ((ms as u64 + 500) / 1000) as i64,
            }
        }
    };
    ctx.out().int(reply);
    Ok(())
}

fn ttl(ctx: &mut Ctx, args: Args) -> CmdResult {
    ttl_generic(ctx, args, Unit::Seconds, false)
}

fn pttl(ctx: &mut Ctx, args: Args) -> CmdResult {
    ttl_generic(ctx, args, Unit::Millis, false)
}

fn expiretime(ctx: &mut Ctx, args: Args) -> CmdResult {
    ttl_generic(ctx, args, Unit::Seconds, true)
}

fn pexpiretime(ctx: &mut Ctx, args: Args) -> CmdResult {
    ttl_generic(ctx, args, Unit::Millis, true)
}

fn persist(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    let removed = ctx.db().persist(&args[1], now_ms);
    if removed {
        ctx.signal(EventClass::GENERIC, "persist", &args[1]);
    }
    ctx.out().int(i64::from(removed));
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::harness::Harness;

    #[test]
    fn the_latest_deadline_reads_back_without_overflow() {
        let mut h = Harness::new();
        h.run("SET k v");
        assert_eq!(h.run("PEXPIREAT k 9223372036854775807"), ":1\r\n");
        assert_eq!(h.run("EXPIRETIME k"), ":9223372036854776\r\n");
        assert_eq!(h.run("PEXPIRETIME k"), ":9223372036854775807\r\n");
    }

    #[test]
    fn conditions_and_errors() {
        let mut h = Harness::new();
        assert_eq!(h.run("EXPIRE nokey 10"), ":0\r\n");
        assert_eq!(h.run("TTL nokey"), ":-2\r\n");
        h.run("SET k v");
        assert_eq!(h.run("TTL k"), ":-1\r\n");
        assert_eq!(h.run("EXPIRE k 10 XX"), ":0\r\n");
        assert_eq!(h.run("EXPIRE k 10 GT"), ":0\r\n");
        assert_eq!(h.run("EXPIRE k 10 LT"), ":1\r\n");
        assert_eq!(h.run("EXPIRE k 20 NX"), ":0\r\n");
        assert_eq!(h.run("EXPIRE k 20 GT"), ":1\r\n");
        assert_eq!(h.run("EXPIRE k 30 LT"), ":0\r\n");
        assert_eq!(h.run("TTL k"), ":20\r\n");
        assert_eq!(
            h.run("EXPIRE k 1 NX XX"),
            "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n"
        );
        assert_eq!(
            h.run("EXPIRE k 1 GT LT"),
            "-ERR GT and LT options at the same time are not compatible\r\n"
        );
        assert_eq!(h.run("EXPIRE k 1 FOO"), "-ERR Unsupported option FOO\r\n");
        assert_eq!(
            h.run("EXPIRE k 9223372036854775807"),
            "-ERR invalid expire time in 'expire' command\r\n"
        );
        assert_eq!(
            h.run("PEXPIRE k 9223372036854775807"),
            "-ERR invalid expire time in 'pexpire' command\r\n"
        );
        assert_eq!(h.run("PERSIST k"), ":1\r\n");
        assert_eq!(h.run("PERSIST k"), ":0\r\n");
        assert_eq!(h.run("EXPIRE k -1"), ":1\r\n");
        assert_eq!(h.run("EXISTS k"), ":0\r\n");
    }

    #[test]
    fn expired_key_is_not_resurrected() {
        let mut h = Harness::new();
        h.run("SET k v PX 100");
        h.now_ms += 100;
        assert_eq!(h.run("EXPIRE k 100"), ":0\r\n");
        assert_eq!(h.run("EXISTS k"), ":0\r\n");
        assert_eq!(h.server.dbs[0].stats.expired_keys, 1);
    }
}
