//! Hash commands: HSET HSETNX HGET HMGET HMSET HDEL HLEN HEXISTS HKEYS HVALS
//! HGETALL HINCRBY HINCRBYFLOAT HSTRLEN HRANDFIELD HSCAN.

use rand::Rng;

use super::aggregate::{
    bulk, delete_if_empty, rand_args, read, read_for_write, reply_picks, reply_scan, scan_target,
    view, write, write_or_create, HASH,
};
use super::strings::long_double_sum;
use super::{cmd, int_arg, CmdError, CmdResult, Command, Ctx};
use crate::db::EventClass;
use crate::float::LongDouble;
use crate::protocol::request::parse_i64;
use crate::protocol::Args;
use crate::value::packed::Item;
use crate::value::HashRef;

pub static COMMANDS: &[Command] = &[
    cmd!("hset", -4, ["write", "denyoom", "fast"], (1, 1, 1), hset, "hash", "Creates or modifies the value of a field in a hash."),
    cmd!("hmset", -4, ["write", "denyoom", "fast"], (1, 1, 1), hmset, "hash", "Sets the values of multiple fields."),
    cmd!("hsetnx", 4, ["write", "denyoom", "fast"], (1, 1, 1), hsetnx, "hash", "Sets the value of a field in a hash only when the field doesn't exist."),
    cmd!("hget", 3, ["readonly", "fast"], (1, 1, 1), hget, "hash", "Returns the value of a field in a hash."),
    cmd!("hmget", -3, ["readonly", "fast"], (1, 1, 1), hmget, "hash", "Returns the values of all fields in a hash."),
    cmd!("hdel", -3, ["write", "fast"], (1, 1, 1), hdel, "hash", "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain."),
    cmd!("hlen", 2, ["readonly", "fast"], (1, 1, 1), hlen, "hash", "Returns the number of fields in a hash."),
    cmd!("hexists", 3, ["readonly", "fast"], (1, 1, 1), hexists, "hash", "Determines whether a field exists in a hash."),
    cmd!("hkeys", 2, ["readonly"], (1, 1, 1), hkeys, "hash", "Returns all fields in a hash."),
    cmd!("hvals", 2, ["readonly"], (1, 1, 1), hvals, "hash", "Returns all values in a hash."),
    cmd!("hgetall", 2, ["readonly"], (1, 1, 1), hgetall, "hash", "Returns all fields and values in a hash."),
    cmd!("hincrby", 4, ["write", "denyoom", "fast"], (1, 1, 1), hincrby, "hash", "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist."),
    cmd!("hincrbyfloat", 4, ["write", "denyoom", "fast"], (1, 1, 1), hincrbyfloat, "hash", "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist."),
    cmd!("hstrlen", 3, ["readonly", "fast"], (1, 1, 1), hstrlen, "hash", "Returns the length of the value of a field."),
    cmd!("hrandfield", -2, ["readonly"], (1, 1, 1), hrandfield, "hash", "Returns one or more random fields from a hash."),
    cmd!("hscan", -3, ["readonly"], (1, 1, 1), hscan, "hash", "Iterates over fields and values of a hash."),
];

/// HSET and HMSET: sets every pair; returns how many fields were new.
fn hset_generic(ctx: &mut Ctx, args: &Args) -> Result<i64, CmdError> {
    if !args.len().is_multiple_of(2) {
        let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
        return Err(CmdError::wrong_arity(&name));
    }
    let limits = ctx.server.config.hash_limits();
    let pairs: Vec<(&[u8], &[u8])> = (2..args.len())
        .step_by(2)
        .map(|i| (&args[i], &args[i + 1]))
        .collect();
    let added = write_or_create(ctx, &args[1], &HASH)?.set_pairs(&pairs, limits);
    ctx.signal(EventClass::HASH, "hset", &args[1]);
    Ok(added as i64)
}

fn hset(ctx: &mut Ctx, args: Args) -> CmdResult {
    let added = hset_generic(ctx, &args)?;
    ctx.out().int(added);
    Ok(())
}

fn hmset(ctx: &mut Ctx, args: Args) -> CmdResult {
    hset_generic(ctx, &args)?;
    ctx.out().ok();
    Ok(())
}

fn hsetnx(ctx: &mut Ctx, args: Args) -> CmdResult {
    let exists = read_for_write(ctx, &args[1], &HASH)?.is_some_and(|h| h.contains(&args[2]));
    if !exists {
        let limits = ctx.server.config.hash_limits();
        write_or_create(ctx, &args[1], &HASH)?.set(&args[2], &args[3], limits);
        ctx.signal(EventClass::HASH, "hset", &args[1]);
    }
    ctx.out().int(i64::from(!exists));
    Ok(())
}

fn hget(ctx: &mut Ctx, args: Args) -> CmdResult {
    let view = view(ctx, &args[1], &HASH)?;
    match view.value.and_then(|h| h.get(&args[2])) {
        Some(value) => bulk(view.out, value),
        None => view.out.null(),
    }
    Ok(())
}

fn hmget(ctx: &mut Ctx, args: Args) -> CmdResult {
    let view = view(ctx, &args[1], &HASH)?;
    view.out.array(args.len() - 2);
    for field in args.iter().skip(2) {
        match view.value.and_then(|h| h.get(field)) {
            Some(value) => bulk(view.out, value),
            None => view.out.null(),
        }
    }
    Ok(())
}

fn hdel(ctx: &mut Ctx, args: Args) -> CmdResult {
    let removed = match write(ctx, &args[1], &HASH)? {
        Some(hash) => hash.remove(args.iter().skip(2)) as i64,
        None => 0,
    };
    if removed > 0 {
        ctx.signal(EventClass::HASH, "hdel", &args[1]);
    }
    delete_if_empty(ctx, &args[1]);
    ctx.out().int(removed);
    Ok(())
}

fn hlen(ctx: &mut Ctx, args: Args) -> CmdResult {
    let len = read(ctx, &args[1], &HASH)?.map_or(0, HashRef::len);
    ctx.out().int(len as i64);
    Ok(())
}

fn hexists(ctx: &mut Ctx, args: Args) -> CmdResult {
    let found = read(ctx, &args[1], &HASH)?.is_some_and(|h| h.contains(&args[2]));
    ctx.out().int(i64::from(found));
    Ok(())
}

fn hstrlen(ctx: &mut Ctx, args: Args) -> CmdResult {
    let len = read(ctx, &args[1], &HASH)?
        .and_then(|h| h.get(&args[2]))
        .map_or(0, |v| v.len());
    ctx.out().int(len as i64);
    Ok(())
}

/// What HKEYS, HVALS and HGETALL reply with.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Fields,
    Values,
    Both,
}

fn hgetall_generic(ctx: &mut Ctx, args: &Args, part: Part) -> CmdResult {
    let view = view(ctx, &args[1], &HASH)?;
    let len = view.value.map_or(0, HashRef::len);
    match part {
        Part::Both => view.out.map(len),
        _ => view.out.array(len),
    }
    for (field, value) in view.value.into_iter().flat_map(HashRef::iter) {
        if part != Part::Values {
            bulk(view.out, field);
        }
        if part != Part::Fields {
            bulk(view.out, value);
        }
    }
    Ok(())
}

fn hkeys(ctx: &mut Ctx, args: Args) -> CmdResult {
    hgetall_generic(ctx, &args, Part::Fields)
}

fn hvals(ctx: &mut Ctx, args: Args) -> CmdResult {
    hgetall_generic(ctx, &args, Part::Values)
}

fn hgetall(ctx: &mut Ctx, args: Args) -> CmdResult {
    hgetall_generic(ctx, &args, Part::Both)
}

/// Applies `f` to the current value of `field` (None if absent) and stores
/// the text it returns; replies with nothing (the caller does).
fn update_field(
    ctx: &mut Ctx,
    args: &Args,
    event: &'static str,
    f: impl FnOnce(Option<&[u8]>) -> Result<Vec<u8>, CmdError>,
) -> Result<Vec<u8>, CmdError> {
    let current = read_for_write(ctx, &args[1], &HASH)?
        .and_then(|h| h.get(&args[2]))
        .map(|v| v.to_vec());
    let next = f(current.as_deref())?;
    let limits = ctx.server.config.hash_limits();
    write_or_create(ctx, &args[1], &HASH)?.set(&args[2], &next, limits);
    ctx.signal(EventClass::HASH, event, &args[1]);
    Ok(next)
}

fn hincrby(ctx: &mut Ctx, args: Args) -> CmdResult {
    let delta = int_arg(&args[3])?;
    let mut result = 0;
    update_field(ctx, &args, "hincrby", |current| {
        let value = match current {
            None => 0,
            Some(text) => {
                parse_i64(text).ok_or(CmdError::Static("ERR hash value is not an integer"))?
            }
        };
        result = value.checked_add(delta).ok_or(CmdError::Overflow)?;
        Ok(result.to_string().into_bytes())
    })?;
    ctx.out().int(result);
    Ok(())
}

fn hincrbyfloat(ctx: &mut Ctx, args: Args) -> CmdResult {
    let incr = LongDouble::parse(&args[3]).ok_or(CmdError::NotFloat)?;
    if !incr.is_finite() {
        return Err(CmdError::Static("ERR value is NaN or Infinity"));
    }
    let text = update_field(ctx, &args, "hincrbyfloat", |current| {
        let current = match current {
            Some(text) => {
                LongDouble::parse(text).ok_or(CmdError::Static("ERR hash value is not a float"))?
            }
            None => LongDouble::ZERO,
        };
        long_double_sum(current, incr)
    })?;
    // The result, not the sum, goes to replicas: same float everywhere.
    ctx.propagate_as(&[b"HSET", &args[1], &args[2], &text]);
    ctx.out().bulk(&text);
    Ok(())
}

fn hrandfield(ctx: &mut Ctx, args: Args) -> CmdResult {
    let count = rand_args(&args, Some("WITHVALUES"))?;
    let with_values = count.is_some_and(|(_, with)| with);
    let mut view = view(ctx, &args[1], &HASH)?;
    let hash = view.value.unwrap_or(HashRef::EMPTY);
    let Some((count, _)) = count else {
        match hash.len() {
            0 => view.out.null(),
            len => {
                let pick = view.rng.gen_range(0..len);
                if let Some((field, _)) = hash.iter().nth(pick) {
                    bulk(view.out, field);
                }
            }
        }
        return Ok(());
    };
    let pair_at = hash.by_index();
    reply_picks(&mut view, hash.len(), count, with_values, |out, i| {
        let Some((field, value)) = pair_at(i) else {
            return;
        };
        bulk(out, field);
        if with_values {
            bulk(out, value);
        }
    });
    Ok(())
}

fn hscan(ctx: &mut Ctx, args: Args) -> CmdResult {
    let Some((hash, opts)) = scan_target(ctx, &args, &HASH)? else {
        reply_scan(ctx.out(), 0, &[]);
        return Ok(());
    };
    let mut found = Vec::new();
    let emit = |field: Item, value: Item, found: &mut Vec<Vec<u8>>| {
        if field.with_bytes(|f| opts.matches(f)) {
            found.push(field.to_vec());
            found.push(value.to_vec());
        }
    };
    let next = match hash {
        HashRef::Table(d) => opts.scan_dict(d, 2, &mut found, |pair, found| {
            emit(
                Item::bytes(pair.field.as_bytes()),
                Item::bytes(pair.value.as_bytes()),
                found,
            )
        }),
        // A packed hash answers whole in one call, as Redis's listpacks.
        HashRef::Packed(_) => {
            hash.iter().for_each(|(f, v)| emit(f, v, &mut found));
            0
        }
    };
    reply_scan(ctx.out(), next, &found);
    Ok(())
}
