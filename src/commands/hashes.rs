//! Hash commands: HSET HSETNX HGET HMGET HMSET HDEL HLEN HEXISTS HKEYS HVALS
//! HGETALL HINCRBY HINCRBYFLOAT HSTRLEN HRANDFIELD HSCAN, and Redis 7.4's
//! field expiry: HEXPIRE HPEXPIRE HEXPIREAT HPEXPIREAT HTTL HPTTL
//! HEXPIRETIME HPEXPIRETIME HPERSIST, and Redis 8.0's HGETDEL HGETEX
//! HSETEX (a field past its deadline leaves on any lookup of its key:
//! `Db::expire_elements`).

use rand::Rng;

use super::aggregate::{
    bulk, delete_if_empty, rand_args, read, read_for_write, reply_picks, reply_scan, scan_target,
    view, write, write_or_create, HASH,
};
use super::member_ttl::{deadline_arg, HASH_FIELDS};
use super::strings::long_double_sum;
use super::{int_arg, is, CmdError, CmdResult, Ctx, Handler};
use crate::db::EventClass;
use crate::float::LongDouble;
use crate::protocol::request::parse_i64;
use crate::protocol::Args;
use crate::value::packed::Item;
use crate::value::{HashRef, OnSet};

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[
    ("hset", hset),
    ("hmset", hmset),
    ("hsetnx", hsetnx),
    ("hget", hget),
    ("hmget", hmget),
    ("hdel", hdel),
    ("hlen", hlen),
    ("hexists", hexists),
    ("hkeys", hkeys),
    ("hvals", hvals),
    ("hgetall", hgetall),
    ("hincrby", hincrby),
    ("hincrbyfloat", hincrbyfloat),
    ("hstrlen", hstrlen),
    ("hrandfield", hrandfield),
    ("hscan", hscan),
    ("hexpire", hexpire),
    ("hpexpire", hpexpire),
    ("hexpireat", hexpireat),
    ("hpexpireat", hpexpireat),
    ("httl", httl),
    ("hpttl", hpttl),
    ("hexpiretime", hexpiretime),
    ("hpexpiretime", hpexpiretime),
    ("hpersist", hpersist),
    ("hgetdel", hgetdel),
    ("hgetex", hgetex),
    ("hsetex", hsetex),
];

// ---- Field expiry (Redis 7.4; the commands shared with set members in
// `member_ttl`) ---------------------------------------------------------

/// `FIELDS numfields field ...` from `at`; `count_error`: the command's
/// message for a count below 1.
fn fields_arg<'a>(
    args: &'a Args,
    at: usize,
    count_error: &'static str,
) -> Result<Vec<&'a [u8]>, CmdError> {
    HASH_FIELDS.elements_arg(args, at, count_error)
}

/// HGETEX's and HSETEX's `EX|PX|EXAT|PXAT` at `args[at]` with its time
/// after it: the deadline, or `None` if `args[at]` is none of them.
fn deadline_option(
    ctx: &Ctx,
    args: &Args,
    at: usize,
    command: &'static str,
) -> Result<Option<i64>, CmdError> {
    let (base_ms, unit_ms) = match args[at].to_ascii_uppercase().as_slice() {
        b"EX" => (ctx.now_ms, 1000),
        b"PX" => (ctx.now_ms, 1),
        b"EXAT" => (0, 1000),
        b"PXAT" => (0, 1),
        _ => return Ok(None),
    };
    if at + 1 >= args.len() {
        return Err(CmdError::Static("ERR missing expire time"));
    }
    deadline_arg(&args[at + 1], base_ms, unit_ms, command).map(Some)
}

fn deleted_by_past_deadline(ctx: &mut Ctx, key: &[u8], fields: &[&[u8]]) {
    HASH_FIELDS.deleted_by_past_deadline(ctx, key, fields);
}

fn hexpire(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    HASH_FIELDS.expire(ctx, &args, now_ms, 1000)
}

fn hpexpire(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    HASH_FIELDS.expire(ctx, &args, now_ms, 1)
}

fn hexpireat(ctx: &mut Ctx, args: Args) -> CmdResult {
    HASH_FIELDS.expire(ctx, &args, 0, 1000)
}

fn hpexpireat(ctx: &mut Ctx, args: Args) -> CmdResult {
    HASH_FIELDS.expire(ctx, &args, 0, 1)
}

fn httl(ctx: &mut Ctx, args: Args) -> CmdResult {
    HASH_FIELDS.ttl(ctx, &args, true, 1000)
}

fn hpttl(ctx: &mut Ctx, args: Args) -> CmdResult {
    HASH_FIELDS.ttl(ctx, &args, true, 1)
}

fn hexpiretime(ctx: &mut Ctx, args: Args) -> CmdResult {
    HASH_FIELDS.ttl(ctx, &args, false, 1000)
}

fn hpexpiretime(ctx: &mut Ctx, args: Args) -> CmdResult {
    HASH_FIELDS.ttl(ctx, &args, false, 1)
}

fn hpersist(ctx: &mut Ctx, args: Args) -> CmdResult {
    HASH_FIELDS.persist(ctx, &args)
}

/// Replies with each field's value, or nil.
fn reply_values(ctx: &mut Ctx, values: Vec<Option<Vec<u8>>>) {
    let out = ctx.out();
    out.array(values.len());
    for value in values {
        match value {
            Some(v) => out.bulk(&v),
            None => out.null(),
        }
    }
}

/// An effect naming `fields` after `head` as `FIELDS numfields field ...`.
fn propagate_with_fields(ctx: &mut Ctx, head: &[&[u8]], fields: &[&[u8]]) {
    HASH_FIELDS.propagate_with(ctx, head, fields);
}

/// HGETDEL key FIELDS numfields field ... (Redis 8.0): each field's value
/// or nil, each field found deleted (the hash with its last one).
/// Propagated as HDEL of the fields given.
fn hgetdel(ctx: &mut Ctx, args: Args) -> CmdResult {
    let key = &args[1];
    let exists = read_for_write(ctx, key, &HASH)?.is_some();
    let fields = fields_arg(&args, 2, "ERR Number of fields must be a positive integer")?;
    let mut values = vec![None; fields.len()];
    if exists {
        let hash = super::aggregate::write(ctx, key, &HASH)?.ok_or(CmdError::WrongType)?;
        // One field at a time: a field named twice is found once.
        for (value, &field) in values.iter_mut().zip(&fields) {
            *value = hash.view().get(field).map(|v| v.to_vec());
            if value.is_some() {
                hash.remove([field]);
            }
        }
    }
    if values.iter().any(Option::is_some) {
        ctx.signal(EventClass::HASH, "hdel", key);
        let mut effect: Vec<&[u8]> = vec![b"HDEL", key];
        effect.extend(fields.iter().copied());
        ctx.propagate_as(&effect);
        delete_if_empty(ctx, key);
    }
    reply_values(ctx, values);
    Ok(())
}

/// What HGETEX does to the deadlines of the fields it finds.
#[derive(Clone, Copy)]
enum FieldTtlChange {
    Keep,
    Persist,
    Set(i64),
}

/// HGETEX key [EX s | PX ms | EXAT s | PXAT ms | PERSIST] FIELDS numfields
/// field ... (Redis 8.0): each field's value or nil, each field found
/// given the deadline (deleted if it is past) or losing its own.
/// Propagated as HPEXPIREAT or HPERSIST of the fields given, or an HDEL
/// of each field deleted.
fn hgetex(ctx: &mut Ctx, args: Args) -> CmdResult {
    let key = &args[1];
    let exists = read_for_write(ctx, key, &HASH)?.is_some();
    let (change, fields_at) = if is(&args[2], "PERSIST") {
        (FieldTtlChange::Persist, 3)
    } else {
        match deadline_option(ctx, &args, 2, "hgetex")? {
            Some(at) => (FieldTtlChange::Set(at), 4),
            None => (FieldTtlChange::Keep, 2),
        }
    };
    let fields = fields_arg(
        &args,
        fields_at,
        "ERR Number of fields must be a positive integer",
    )?;
    let mut values = vec![None; fields.len()];
    if !exists {
        reply_values(ctx, values);
        return Ok(());
    }
    let past = match change {
        FieldTtlChange::Set(at) => ctx.server.already_expired(at, ctx.now_ms),
        _ => false,
    };
    let limits = ctx.server.config.hash_limits();
    let hash = super::aggregate::write(ctx, key, &HASH)?.ok_or(CmdError::WrongType)?;
    if !matches!(change, FieldTtlChange::Keep) {
        hash.allow_field_ttls();
    }
    let (mut updated, mut deleted) = (0, Vec::new());
    for (value, &field) in values.iter_mut().zip(&fields) {
        *value = hash.view().get(field).map(|v| v.to_vec());
        if value.is_none() {
            continue;
        }
        match change {
            FieldTtlChange::Keep => {}
            FieldTtlChange::Persist => {
                if hash.view().field_ttl(field).flatten().is_some() {
                    hash.set_field_ttl(field, None, limits);
                    updated += 1;
                }
            }
            FieldTtlChange::Set(_) if past => {
                hash.remove([field]);
                deleted.push(field);
            }
            FieldTtlChange::Set(at) => {
                hash.set_field_ttl(field, Some(at), limits);
                updated += 1;
            }
        }
    }
    if updated > 0 {
        if let FieldTtlChange::Set(at) = change {
            ctx.signal(EventClass::HASH, "hexpire", key);
            let at_text = at.to_string();
            propagate_with_fields(ctx, &[b"HPEXPIREAT", key, at_text.as_bytes()], &fields);
        } else {
            ctx.signal(EventClass::HASH, "hpersist", key);
            propagate_with_fields(ctx, &[b"HPERSIST", key], &fields);
        }
    }
    deleted_by_past_deadline(ctx, key, &deleted);
    reply_values(ctx, values);
    Ok(())
}

/// HSETEX's FNX and FXX.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FieldsExist {
    None,
    All,
}

/// HSETEX's deadline option.
#[derive(Clone, Copy, PartialEq, Eq)]
enum SetTtl {
    KeepTtl,
    /// The deadline, and where its time is in the arguments.
    At(i64, usize),
}

/// HSETEX key [FNX | FXX] [EX s | PX ms | EXAT s | PXAT ms | KEEPTTL]
/// FIELDS numfields field value ... (Redis 8.0): sets every pair (unless
/// FNX finds one of the fields or FXX misses one: 0), each field given the
/// deadline (deleted if it is past), keeping its own (KEEPTTL) or losing
/// it; 1. Options are checked before the key, as Redis does. Propagated
/// with the deadline as PXAT, or as an HDEL of each field deleted.
fn hsetex(ctx: &mut Ctx, args: Args) -> CmdResult {
    let key = &args[1];
    let (mut exist, mut ttl) = (None, None);
    let mut i = 2;
    let first = loop {
        if i >= args.len() {
            return Err(CmdError::Syntax);
        }
        let arg = &args[i];
        if is(arg, "FIELDS") {
            let arity = || CmdError::wrong_arity("hsetex");
            if i + 3 >= args.len() {
                return Err(arity());
            }
            let count = parse_i64(&args[i + 1])
                .filter(|n| (1..=i64::from(i32::MAX)).contains(n))
                .ok_or(CmdError::Static("ERR invalid number of fields"))?;
            let remaining = args.len() - i - 2;
            if !remaining.is_multiple_of(2) || usize::try_from(count).ok() != Some(remaining / 2) {
                return Err(arity());
            }
            break i + 2;
        }
        let one_ttl = "ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified";
        let one_exist = "ERR Only one of FXX or FNX arguments can be specified";
        if is(arg, "FNX") || is(arg, "FXX") {
            if exist.is_some() {
                return Err(CmdError::Static(one_exist));
            }
            exist = Some(if is(arg, "FNX") {
                FieldsExist::None
            } else {
                FieldsExist::All
            });
        } else if is(arg, "KEEPTTL") {
            if ttl.is_some() {
                return Err(CmdError::Static(one_ttl));
            }
            ttl = Some(SetTtl::KeepTtl);
        } else if ["EX", "PX", "EXAT", "PXAT"].iter().any(|o| is(arg, o)) {
            if ttl.is_some() {
                return Err(CmdError::Static(one_ttl));
            }
            let at = deadline_option(ctx, &args, i, "hsetex")?.ok_or(CmdError::Syntax)?;
            ttl = Some(SetTtl::At(at, i + 1));
            i += 1;
        } else {
            let mut message = b"ERR unknown argument: ".to_vec();
            message.extend_from_slice(arg);
            return Err(CmdError::Owned(message));
        }
        i += 1;
    };
    let pairs: Vec<(&[u8], &[u8])> = (first..args.len())
        .step_by(2)
        .map(|i| (&args[i][..], &args[i + 1][..]))
        .collect();
    let hash = read_for_write(ctx, key, &HASH)?;
    if let Some(exist) = exist {
        let found = pairs
            .iter()
            .filter(|(f, _)| hash.is_some_and(|h| h.contains(f)))
            .count();
        let met = match exist {
            FieldsExist::None => found == 0,
            FieldsExist::All => found == pairs.len(),
        };
        if !met {
            ctx.out().int(0);
            return Ok(());
        }
    }
    let limits = ctx.server.config.hash_limits();
    let on_set = if ttl.is_some() {
        OnSet::KeepTtl
    } else {
        OnSet::ClearTtl
    };
    let deadline = match ttl {
        Some(SetTtl::At(at, at_arg)) => {
            Some((at, at_arg, ctx.server.already_expired(at, ctx.now_ms)))
        }
        _ => None,
    };
    let hash = write_or_create(ctx, key, &HASH)?;
    if deadline.is_some() {
        hash.allow_field_ttls();
    }
    hash.set_pairs_with(&pairs, on_set, limits);
    let fields: Vec<&[u8]> = pairs.iter().map(|(f, _)| *f).collect();
    match deadline {
        Some((_, _, true)) => {
            hash.remove(fields.iter().copied());
        }
        Some((at, _, false)) => {
            for field in &fields {
                hash.set_field_ttl(field, Some(at), limits);
            }
        }
        None => {}
    }
    ctx.signal(EventClass::HASH, "hset", key);
    match deadline {
        Some((_, _, true)) => deleted_by_past_deadline(ctx, key, &fields),
        Some((at, at_arg, false)) => {
            ctx.signal(EventClass::HASH, "hexpire", key);
            if !is(&args[at_arg - 1], "PXAT") {
                let at_text = at.to_string();
                let mut effect: Vec<&[u8]> = args.iter().collect();
                effect[at_arg - 1] = b"PXAT";
                effect[at_arg] = at_text.as_bytes();
                ctx.propagate_as(&effect);
            }
        }
        None => {}
    }
    ctx.out().int(1);
    Ok(())
}

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
/// the text it returns, the field keeping its deadline (as Redis 7.4's
/// HINCRBY does); replies with nothing (the caller does). The text, and
/// whether the field has a deadline.
fn update_field(
    ctx: &mut Ctx,
    args: &Args,
    event: &'static str,
    f: impl FnOnce(Option<&[u8]>) -> Result<Vec<u8>, CmdError>,
) -> Result<(Vec<u8>, bool), CmdError> {
    let hash = read_for_write(ctx, &args[1], &HASH)?;
    let current = hash.and_then(|h| h.get(&args[2])).map(|v| v.to_vec());
    let has_ttl = hash.is_some_and(|h| h.field_ttl(&args[2]).flatten().is_some());
    let next = f(current.as_deref())?;
    let limits = ctx.server.config.hash_limits();
    write_or_create(ctx, &args[1], &HASH)?.set_pairs_with(
        &[(&args[2], &next)],
        OnSet::KeepTtl,
        limits,
    );
    ctx.signal(EventClass::HASH, event, &args[1]);
    Ok((next, has_ttl))
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
    let (text, has_ttl) = update_field(ctx, &args, "hincrbyfloat", |current| {
        let current = match current {
            Some(text) => {
                LongDouble::parse(text).ok_or(CmdError::Static("ERR hash value is not a float"))?
            }
            None => LongDouble::ZERO,
        };
        long_double_sum(current, incr)
    })?;
    // The result, not the sum, goes to replicas: same float everywhere;
    // a field with a deadline keeps it there too (as Redis 8.0 does).
    if has_ttl {
        ctx.propagate_as(&[
            b"HSETEX", &args[1], b"KEEPTTL", b"FIELDS", b"1", &args[2], &text,
        ]);
    } else {
        ctx.propagate_as(&[b"HSET", &args[1], &args[2], &text]);
    }
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
