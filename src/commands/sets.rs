//! Set commands: SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP
//! SRANDMEMBER SMOVE SINTER SUNION SDIFF SINTERSTORE SUNIONSTORE SDIFFSTORE
//! SINTERCARD SSCAN.

use rand::Rng;

use super::aggregate::{
    bulk, delete_if_empty, distinct_indices, pop_count, rand_args, read, read_for_write,
    reply_picks, reply_scan, scan_target, store_result, view, write, write_or_create_with, SET,
};
use super::member_ttl::SET_MEMBERS;
use super::{int_arg, is, CmdError, CmdResult, Ctx, Handler};
use crate::db::{EventClass, StrEncoding};
use crate::protocol::Args;
use crate::value::packed::canonical_int;
use crate::value::set::empty_listpack;
use crate::value::{Set, SetRef, Value};

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[
    ("sadd", sadd),
    ("srem", srem),
    ("smembers", smembers),
    ("sismember", sismember),
    ("smismember", smismember),
    ("scard", scard),
    ("spop", spop),
    ("srandmember", srandmember),
    ("smove", smove),
    ("sinter", sinter),
    ("sunion", sunion),
    ("sdiff", sdiff),
    ("sinterstore", sinterstore),
    ("sunionstore", sunionstore),
    ("sdiffstore", sdiffstore),
    ("sintercard", sintercard),
    ("sscan", sscan),
    ("sexpire", sexpire),
    ("spexpire", spexpire),
    ("sexpireat", sexpireat),
    ("spexpireat", spexpireat),
    ("sttl", sttl),
    ("spttl", spttl),
    ("sexpiretime", sexpiretime),
    ("spexpiretime", spexpiretime),
    ("spersist", spersist),
];

fn sadd(ctx: &mut Ctx, args: Args) -> CmdResult {
    let limits = ctx.server.config.set_limits();
    let hint = args.len() - 2;
    let existed = read_for_write(ctx, &args[1], &SET)?.is_some();
    let set = write_or_create_with(ctx, &args[1], &SET, || {
        Value::Set(Set::create(&args[2], hint, limits))
    })?;
    if existed {
        set.make_room(hint, limits);
    }
    let added = args.iter().skip(2).filter(|m| set.add(m, limits)).count();
    if added > 0 {
        ctx.signal(EventClass::SET, "sadd", &args[1]);
    }
    ctx.out().int(added as i64);
    Ok(())
}

fn srem(ctx: &mut Ctx, args: Args) -> CmdResult {
    let removed = match write(ctx, &args[1], &SET)? {
        Some(set) => args.iter().skip(2).filter(|m| set.remove(m)).count(),
        None => 0,
    };
    if removed > 0 {
        ctx.signal(EventClass::SET, "srem", &args[1]);
    }
    delete_if_empty(ctx, &args[1]);
    ctx.out().int(removed as i64);
    Ok(())
}

fn smembers(ctx: &mut Ctx, args: Args) -> CmdResult {
    let view = view(ctx, &args[1], &SET)?;
    view.out.set(view.value.map_or(0, SetRef::len));
    for member in view.value.into_iter().flat_map(SetRef::iter) {
        bulk(view.out, member);
    }
    Ok(())
}

fn sismember(ctx: &mut Ctx, args: Args) -> CmdResult {
    let found = read(ctx, &args[1], &SET)?.is_some_and(|s| s.contains(&args[2]));
    ctx.out().int(i64::from(found));
    Ok(())
}

fn smismember(ctx: &mut Ctx, args: Args) -> CmdResult {
    let view = view(ctx, &args[1], &SET)?;
    view.out.array(args.len() - 2);
    for member in args.iter().skip(2) {
        let found = view.value.is_some_and(|s| s.contains(member));
        view.out.int(i64::from(found));
    }
    Ok(())
}

fn scard(ctx: &mut Ctx, args: Args) -> CmdResult {
    let len = read(ctx, &args[1], &SET)?.map_or(0, SetRef::len);
    ctx.out().int(len as i64);
    Ok(())
}

fn spop(ctx: &mut Ctx, args: Args) -> CmdResult {
    let count = pop_count(&args)?;
    let now_ms = ctx.now_ms;
    let server = &mut *ctx.server;
    let db = &mut server.dbs[ctx.session.db];
    let popped: Vec<Vec<u8>> = match db.value_mut(&args[1], now_ms) {
        None => Vec::new(),
        Some(Some(Value::Set(set))) => {
            let want = count.map_or(1, |n| n.min(set.len() as i64) as usize);
            // Indices shift as members leave: pick members first, then remove.
            let member_at = set.view().by_index();
            let picked: Vec<Vec<u8>> = distinct_indices(&mut server.rng, set.len(), want)
                .into_iter()
                .filter_map(|i| member_at(i).map(|m| m.to_vec()))
                .collect();
            drop(member_at);
            for member in &picked {
                set.remove(member);
            }
            picked
        }
        Some(_) => return Err(CmdError::WrongType),
    };
    if !popped.is_empty() {
        ctx.signal(EventClass::SET, "spop", &args[1]);
        // The members actually taken, not the random choice, go out.
        let mut effect: Vec<&[u8]> = vec![b"SREM", &args[1]];
        effect.extend(popped.iter().map(Vec::as_slice));
        ctx.propagate_as(&effect);
    }
    delete_if_empty(ctx, &args[1]);
    let out = ctx.out();
    match count {
        None => match popped.first() {
            Some(member) => out.bulk(member),
            None => out.null(),
        },
        Some(_) => {
            out.set(popped.len());
            for member in &popped {
                out.bulk(member);
            }
        }
    }
    Ok(())
}

fn srandmember(ctx: &mut Ctx, args: Args) -> CmdResult {
    let count = rand_args(&args, None)?.map(|(n, _)| n);
    let mut view = view(ctx, &args[1], &SET)?;
    let set = view.value;
    let len = set.map_or(0, SetRef::len);
    let member_at = set.unwrap_or(SetRef::EMPTY).by_index();
    let Some(count) = count else {
        let pick = (len > 0).then(|| view.rng.gen_range(0..len) as u32);
        match pick.and_then(&member_at) {
            Some(member) => bulk(view.out, member),
            None => view.out.null(),
        }
        return Ok(());
    };
    reply_picks(&mut view, len, count, false, |out, i| {
        if let Some(member) = member_at(i) {
            bulk(out, member);
        }
    });
    Ok(())
}

fn smove(ctx: &mut Ctx, args: Args) -> CmdResult {
    let (src, dst, member) = (&args[1], &args[2], &args[3]);
    // As in Redis: both keys are looked up, then a missing source answers 0
    // before the types are checked.
    let now_ms = ctx.now_ms;
    let db = ctx.db();
    let src_kind = db
        .get_for_write(src, now_ms)
        .map(|v| (SET.get)(v).map(|s| s.contains(member)));
    let dst_ok = db
        .get_for_write(dst, now_ms)
        .is_none_or(|v| (SET.get)(v).is_some());
    let Some(src_has) = src_kind else {
        ctx.out().int(0);
        return Ok(());
    };
    let (Some(src_has), true) = (src_has, dst_ok) else {
        return Err(CmdError::WrongType);
    };
    let moved = match src_has {
        false => false,
        // Moving onto itself: nothing changes, but the member is there.
        true if src == dst => true,
        true => {
            if let Some(set) = write(ctx, src, &SET)? {
                set.remove(member);
            }
            ctx.signal(EventClass::SET, "srem", src);
            delete_if_empty(ctx, src);
            let limits = ctx.server.config.set_limits();
            let dst_set = write_or_create_with(ctx, dst, &SET, || {
                Value::Set(Set::create(member, 1, limits))
            })?;
            if dst_set.add(member, limits) {
                ctx.signal(EventClass::SET, "sadd", dst);
            }
            true
        }
    };
    ctx.out().int(i64::from(moved));
    Ok(())
}

#[derive(Clone, Copy)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// The combination of `keys` (every key type-checked first, as in Redis;
/// a missing key is an empty set), built as Redis 7.2 builds it, member
/// by member into a set that starts as an intset (an intersection: the
/// form of the smallest set, packed if that is a table), so its form and
/// order are Redis's. `limit` stops an intersection early (SINTERCARD;
/// 0 = no limit). For a store, an intersection of integers ends as an
/// intset if it fits.
fn combine(
    ctx: &mut Ctx,
    keys: &[&[u8]],
    op: Op,
    limit: usize,
    store: bool,
) -> Result<Set, CmdError> {
    let now_ms = ctx.now_ms;
    let limits = ctx.server.config.set_limits();
    let sets: Vec<Option<SetRef>> = ctx
        .db()
        .get_many(keys, now_ms, |v| (SET.get)(v).is_some())
        .map_err(|_| CmdError::WrongType)?
        .into_iter()
        .map(|v| v.and_then(SET.get))
        .collect();
    let mut out = Set::default();
    match op {
        Op::Inter => {
            if sets.iter().any(Option::is_none) {
                return Ok(out);
            }
            let mut sets: Vec<SetRef> = sets.into_iter().flatten().collect();
            sets.sort_by_key(|s| s.len());
            if !sets[0].is_intset() {
                out = empty_listpack();
            }
            let mut only_integers = true;
            for m in sets[0].iter() {
                m.with_bytes(|m| {
                    if sets[1..].iter().all(|s| s.contains(m)) {
                        only_integers &= canonical_int(m).is_some();
                        out.add(m, limits);
                    }
                });
                if limit > 0 && out.len() == limit {
                    break;
                }
            }
            if store && only_integers {
                out.ints_if_fit(limits);
            }
        }
        Op::Union => {
            for m in sets.iter().flatten().flat_map(|s| s.iter()) {
                m.with_bytes(|m| out.add(m, limits));
            }
        }
        Op::Diff => {
            // A later key naming the first one empties the difference.
            let same = keys[1..].contains(&keys[0]);
            for m in sets[0].filter(|_| !same).into_iter().flat_map(SetRef::iter) {
                m.with_bytes(|m| {
                    if !sets[1..].iter().flatten().any(|s| s.contains(m)) {
                        out.add(m, limits);
                    }
                });
            }
        }
    }
    Ok(out)
}

fn combine_generic(ctx: &mut Ctx, args: &Args, op: Op) -> CmdResult {
    let keys: Vec<&[u8]> = args.iter().skip(1).collect();
    let members = combine(ctx, &keys, op, 0, false)?;
    let out = ctx.out();
    out.set(members.len());
    members.view().iter().for_each(|m| bulk(out, m));
    Ok(())
}

/// SINTERSTORE/SUNIONSTORE/SDIFFSTORE: the result replaces `dst` whatever
/// it held (and its TTL); an empty result deletes `dst`.
fn store_generic(ctx: &mut Ctx, args: &Args, op: Op) -> CmdResult {
    let keys: Vec<&[u8]> = args.iter().skip(2).collect();
    let members = combine(ctx, &keys, op, 0, true)?;
    let len = members.len();
    let event = match op {
        Op::Inter => "sinterstore",
        Op::Union => "sunionstore",
        Op::Diff => "sdiffstore",
    };
    let result = (!members.is_empty()).then_some(Value::Set(members));
    let event = (EventClass::SET, event);
    store_result(ctx, &args[1], result, StrEncoding::Auto, event);
    ctx.out().int(len as i64);
    Ok(())
}

fn sinter(ctx: &mut Ctx, args: Args) -> CmdResult {
    combine_generic(ctx, &args, Op::Inter)
}

fn sunion(ctx: &mut Ctx, args: Args) -> CmdResult {
    combine_generic(ctx, &args, Op::Union)
}

fn sdiff(ctx: &mut Ctx, args: Args) -> CmdResult {
    combine_generic(ctx, &args, Op::Diff)
}

fn sinterstore(ctx: &mut Ctx, args: Args) -> CmdResult {
    store_generic(ctx, &args, Op::Inter)
}

fn sunionstore(ctx: &mut Ctx, args: Args) -> CmdResult {
    store_generic(ctx, &args, Op::Union)
}

fn sdiffstore(ctx: &mut Ctx, args: Args) -> CmdResult {
    store_generic(ctx, &args, Op::Diff)
}

/// `numkeys key... [LIMIT n]`, as SINTERCARD (and ZINTERCARD) parse it:
/// the keys and the limit (0 = none).
pub fn numkeys_and_limit<'a>(args: &'a Args) -> Result<(Vec<&'a [u8]>, usize), CmdError> {
    let numkeys = int_arg(&args[1])
        .ok()
        .filter(|&n| n > 0)
        .ok_or(CmdError::Static("ERR numkeys should be greater than 0"))?;
    let numkeys = usize::try_from(numkeys).unwrap_or(usize::MAX);
    if numkeys > args.len() - 2 {
        return Err(CmdError::Static(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    let keys: Vec<&[u8]> = args.iter().skip(2).take(numkeys).collect();
    let mut limit = 0;
    let mut i = 2 + numkeys;
    while i < args.len() {
        if is(&args[i], "LIMIT") && i + 1 < args.len() {
            limit = int_arg(&args[i + 1])
                .ok()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or(CmdError::Static("ERR LIMIT can't be negative"))?;
            i += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    Ok((keys, limit))
}

fn sintercard(ctx: &mut Ctx, args: Args) -> CmdResult {
    let (keys, limit) = numkeys_and_limit(&args)?;
    let members = combine(ctx, &keys, Op::Inter, limit, false)?;
    ctx.out().int(members.len() as i64);
    Ok(())
}

fn sscan(ctx: &mut Ctx, args: Args) -> CmdResult {
    let Some((set, opts)) = scan_target(ctx, &args, &SET)? else {
        reply_scan(ctx.out(), 0, &[]);
        return Ok(());
    };
    let mut found = Vec::new();
    let next = match set {
        SetRef::Table(d) => opts.scan_dict(d, 1, &mut found, |m, found| {
            if opts.matches(m.as_bytes()) {
                found.push(m.as_bytes().to_vec());
            }
        }),
        // A packed set answers whole in one call, as Redis's do.
        _ => {
            for m in set.iter() {
                if m.with_bytes(|m| opts.matches(m)) {
                    found.push(m.to_vec());
                }
            }
            0
        }
    };
    reply_scan(ctx.out(), next, &found);
    Ok(())
}

// ---- Member expiry (Redis 8.12; the commands in `member_ttl`) ----------

fn sexpire(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    SET_MEMBERS.expire(ctx, &args, now_ms, 1000)
}

fn spexpire(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    SET_MEMBERS.expire(ctx, &args, now_ms, 1)
}

fn sexpireat(ctx: &mut Ctx, args: Args) -> CmdResult {
    SET_MEMBERS.expire(ctx, &args, 0, 1000)
}

fn spexpireat(ctx: &mut Ctx, args: Args) -> CmdResult {
    SET_MEMBERS.expire(ctx, &args, 0, 1)
}

fn sttl(ctx: &mut Ctx, args: Args) -> CmdResult {
    SET_MEMBERS.ttl(ctx, &args, true, 1000)
}

fn spttl(ctx: &mut Ctx, args: Args) -> CmdResult {
    SET_MEMBERS.ttl(ctx, &args, true, 1)
}

fn sexpiretime(ctx: &mut Ctx, args: Args) -> CmdResult {
    SET_MEMBERS.ttl(ctx, &args, false, 1000)
}

fn spexpiretime(ctx: &mut Ctx, args: Args) -> CmdResult {
    SET_MEMBERS.ttl(ctx, &args, false, 1)
}

fn spersist(ctx: &mut Ctx, args: Args) -> CmdResult {
    SET_MEMBERS.persist(ctx, &args)
}
