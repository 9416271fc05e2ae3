//! HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG, PFSELFTEST.
//! The representation and the estimator are `crate::hll`'s; values are
//! strings changed in place with `Db::update_str`.

use rand::Rng;

use super::strings::read_string;
use super::{c_str, is, CmdError, CmdResult, Ctx, Handler};
use crate::db::{EventClass, StrEncoding};
use crate::hll::{self, Corrupt};
use crate::protocol::Args;

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[
    ("pfadd", pfadd),
    ("pfcount", pfcount),
    ("pfmerge", pfmerge),
    ("pfdebug", pfdebug),
    ("pfselftest", pfselftest),
];

fn not_hll() -> CmdError {
    CmdError::Static("WRONGTYPE Key is not a valid HyperLogLog string value.")
}

impl From<Corrupt> for CmdError {
    fn from(_: Corrupt) -> Self {
        CmdError::Static("INVALIDOBJ Corrupted HLL object detected")
    }
}

/// The HyperLogLog at `key` for reading: `None` if absent, Redis's errors
/// for another type or a string that is not a HyperLogLog.
fn read_hll<'a>(ctx: &'a mut Ctx, key: &[u8]) -> Result<Option<&'a [u8]>, CmdError> {
    match read_string(ctx, key)? {
        Some(s) if !hll::is_valid(s) => Err(not_hll()),
        found => Ok(found),
    }
}

/// Changes the HyperLogLog at `key` (a new empty one if absent) with
/// `edit`, which gets whether it existed. HyperLogLogs are always `raw`
/// strings, as Redis builds them.
fn update_hll<R>(
    ctx: &mut Ctx,
    key: &[u8],
    edit: impl FnOnce(&mut Vec<u8>, bool) -> Result<R, CmdError>,
) -> Result<R, CmdError> {
    let now_ms = ctx.now_ms;
    ctx.db()
        .update_str(
            key,
            now_ms,
            |_| StrEncoding::Raw,
            |s, existed| {
                if !existed {
                    *s = hll::new_sparse();
                } else if !hll::is_valid(s) {
                    return Err(not_hll());
                }
                edit(s, existed)
            },
        )
        .unwrap_or(Err(CmdError::WrongType))
}

fn pfadd(ctx: &mut Ctx, args: Args) -> CmdResult {
    let max_bytes = ctx.server.config.hll_sparse_max_bytes;
    let updated = update_hll(ctx, &args[1], |s, existed| {
        let mut updated = !existed;
        for element in args.iter().skip(2) {
            updated |= hll::add(s, element, max_bytes)?;
        }
        if updated {
            hll::invalidate_cache(s);
        }
        Ok(updated)
    })?;
    if updated {
        ctx.signal(EventClass::STRING, "pfadd", &args[1]);
    }
    ctx.out().int(i64::from(updated));
    Ok(())
}

fn pfcount(ctx: &mut Ctx, args: Args) -> CmdResult {
    if args.len() > 2 {
        // The cardinality of the union.
        let mut registers = vec![0u8; hll::REGISTERS];
        for key in args.iter().skip(1) {
            if let Some(s) = read_hll(ctx, key)? {
                hll::merge_into(&mut registers, s)?;
            }
        }
        ctx.out().int(hll::count_registers(&registers) as i64);
        return Ok(());
    }
    let key = &args[1];
    let Some(s) = read_hll(ctx, key)? else {
        ctx.out().int(0);
        return Ok(());
    };
    let card = match hll::cached_count(s) {
        Some(card) => card,
        None => {
            let card = hll::count(s)?;
            // The cache is part of the value: keeping it is a change
            // (WATCH, tracking and the effect stream see it, as in Redis).
            update_hll(ctx, key, |s, _| {
                hll::set_cached_count(s, card);
                Ok(())
            })?;
            ctx.signal(EventClass::SILENT, "pfcount", key);
            card
        }
    };
    ctx.out().int(card as i64);
    Ok(())
}

fn pfmerge(ctx: &mut Ctx, args: Args) -> CmdResult {
    let mut registers = vec![0u8; hll::REGISTERS];
    let mut use_dense = false;
    for key in args.iter().skip(1) {
        if let Some(s) = read_hll(ctx, key)? {
            use_dense |= !hll::is_sparse(s);
            hll::merge_into(&mut registers, s)?;
        }
    }
    let max_bytes = ctx.server.config.hll_sparse_max_bytes;
    update_hll(ctx, &args[1], |s, _| {
        if use_dense {
            hll::to_dense(s)?;
        }
        for (i, &value) in registers.iter().enumerate() {
            if value > 0 {
                // As Redis: a corrupt destination was refused above.
                let _ = hll::set_register(s, i, value, max_bytes);
            }
        }
        hll::invalidate_cache(s);
        Ok(())
    })?;
    // A merge is a mass add: Redis names it `pfadd`.
    ctx.signal(EventClass::STRING, "pfadd", &args[1]);
    ctx.out().ok();
    Ok(())
}

fn pfdebug(ctx: &mut Ctx, args: Args) -> CmdResult {
    let (sub, key) = (&args[1], &args[2]);
    let now_ms = ctx.now_ms;
    let s = match ctx.db().get_for_write(key, now_ms) {
        None => return Err(CmdError::Static("ERR The specified key does not exist")),
        Some(crate::value::ValueRef::Str(s)) if hll::is_valid(s) => s,
        Some(crate::value::ValueRef::Str(_)) => return Err(not_hll()),
        Some(_) => return Err(CmdError::WrongType),
    };
    let sparse = hll::is_sparse(s);
    if is(sub, "decode") {
        if !sparse {
            return Err(CmdError::Static("ERR HLL encoding is not sparse"));
        }
        let text = hll::decode(s);
        ctx.out().bulk(text.as_bytes());
    } else if is(sub, "encoding") {
        let name = if sparse { "sparse" } else { "dense" };
        ctx.out().simple(name);
    } else if is(sub, "getreg") || is(sub, "todense") {
        if sparse {
            update_hll(ctx, key, |s, _| Ok(hll::to_dense(s)?))?;
            ctx.signal(EventClass::SILENT, "pfdebug", key);
        }
        if is(sub, "todense") {
            ctx.out().int(i64::from(sparse));
            return Ok(());
        }
        let registers = match read_string(ctx, key)? {
            Some(s) => hll::registers(s)?,
            None => Vec::new(),
        };
        let out = ctx.out();
        out.array(registers.len());
        registers.iter().for_each(|&r| out.int(i64::from(r)));
    } else {
        return Err(CmdError::with_arg(
            "ERR Unknown PFDEBUG subcommand '",
            c_str(sub, usize::MAX),
            "'",
        ));
    }
    Ok(())
}

fn pfselftest(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let seed = ctx.server.rng.gen::<u64>();
    match hll::self_test(seed, ctx.server.config.hll_sparse_max_bytes) {
        Ok(()) => ctx.out().ok(),
        Err(message) => return Err(CmdError::owned(format!("ERR {message}"))),
    }
    Ok(())
}
