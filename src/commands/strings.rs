//! String commands: GET, SET and friends, counters, ranges.

use super::expire::{delete_now, set_expire_effect};
use super::expire::{expire_deadline_ms, Unit};
use super::{int_arg, is, CmdError, CmdResult, Ctx, Handler};
use crate::db::{EventClass, StrEncoding, Ttl};
use crate::float::LongDouble;
use crate::protocol::request::parse_i64;
use crate::protocol::Args;
use crate::value::{Value, ValueRef};

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[
    ("get", get),
    ("set", set),
    ("setnx", setnx),
    ("setex", setex),
    ("psetex", psetex),
    ("getex", getex),
    ("getdel", getdel),
    ("getset", getset),
    ("mget", mget),
    ("mset", mset),
    ("msetnx", msetnx),
    ("append", append),
    ("strlen", strlen),
    ("getrange", getrange),
    ("substr", getrange),
    ("setrange", setrange),
    ("lcs", lcs),
    ("incr", incr),
    ("decr", decr),
    ("incrby", incrby),
    ("decrby", decrby),
    ("incrbyfloat", incrbyfloat),
];

/// The string at `key`: `Ok(None)` if absent, WRONGTYPE if not a string.
pub(super) fn read_string<'a>(ctx: &'a mut Ctx, key: &[u8]) -> Result<Option<&'a [u8]>, CmdError> {
    let now_ms = ctx.now_ms;
    string_of(ctx.db().get(key, now_ms))
}

/// `read_string` for a command about to change the key (no read
/// statistics, no `keymiss` event).
fn read_string_for_write<'a>(ctx: &'a mut Ctx, key: &[u8]) -> Result<Option<&'a [u8]>, CmdError> {
    let now_ms = ctx.now_ms;
    string_of(ctx.db().get_for_write(key, now_ms))
}

fn string_of(value: Option<ValueRef<'_>>) -> Result<Option<&[u8]>, CmdError> {
    match value {
        None => Ok(None),
        Some(ValueRef::Str(s)) => Ok(Some(s)),
        Some(_) => Err(CmdError::WrongType),
    }
}

/// Replies with the string at `key`, or null (GET's reply).
fn reply_string(ctx: &mut Ctx, key: &[u8]) -> CmdResult {
    let now_ms = ctx.now_ms;
    let session = &mut *ctx.session;
    match ctx.server.dbs[session.db].get(key, now_ms) {
        None => session.reply.null(),
        Some(ValueRef::Str(s)) => session.reply.bulk(s),
        Some(_) => return Err(CmdError::WrongType),
    }
    Ok(())
}

fn get(ctx: &mut Ctx, args: Args) -> CmdResult {
    reply_string(ctx, &args[1])
}

/// Options shared by SET and GETEX (`parseExtendedStringArgumentsOrReply`).
#[derive(Default)]
struct StringOptions<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    keep_ttl: bool,
    persist: bool,
    /// The expire argument and its form (EX/PX relative, EXAT/PXAT absolute).
    expire: Option<(&'a [u8], Unit, bool)>,
    /// SET's STALE / PSTALE (issue 42): the grace after the deadline.
    stale: Option<(&'a [u8], Unit)>,
    /// SET's LEASE token: write only while it holds the key's lease.
    lease: Option<&'a [u8]>,
}

#[derive(PartialEq, Clone, Copy)]
enum OptionsFor {
    Set,
    Getex,
}

/// The option words of SET and GETEX.
#[derive(Clone, Copy, PartialEq)]
enum OptionWord {
    Nx,
    Xx,
    Get,
    KeepTtl,
    Persist,
    Stale,
    PStale,
    Lease,
    /// EX, PX, EXAT, PXAT: the unit, and whether relative.
    Expire(Unit, bool),
}

/// `opt` as an option word, in any case: read once as one upper-cased
/// number and matched (a request's options are not compared with every
/// name in turn).
fn option_word(opt: &[u8]) -> Option<OptionWord> {
    use crate::protocol::word;
    const NX: u64 = word(b"NX");
    const XX: u64 = word(b"XX");
    const GET: u64 = word(b"GET");
    const KEEPTTL: u64 = word(b"KEEPTTL");
    const PERSIST: u64 = word(b"PERSIST");
    const STALE: u64 = word(b"STALE");
    const PSTALE: u64 = word(b"PSTALE");
    const LEASE: u64 = word(b"LEASE");
    const EX: u64 = word(b"EX");
    const PX: u64 = word(b"PX");
    const EXAT: u64 = word(b"EXAT");
    const PXAT: u64 = word(b"PXAT");
    Some(match crate::protocol::upper_word(opt)? {
        NX => OptionWord::Nx,
        XX => OptionWord::Xx,
        GET => OptionWord::Get,
        KEEPTTL => OptionWord::KeepTtl,
        PERSIST => OptionWord::Persist,
        STALE => OptionWord::Stale,
        PSTALE => OptionWord::PStale,
        LEASE => OptionWord::Lease,
        EX => OptionWord::Expire(Unit::Seconds, true),
        PX => OptionWord::Expire(Unit::Millis, true),
        EXAT => OptionWord::Expire(Unit::Seconds, false),
        PXAT => OptionWord::Expire(Unit::Millis, false),
        _ => return None,
    })
}

#[inline(always)]
fn parse_string_options<'a>(
    args: &Args<'a>,
    from: usize,
    command: OptionsFor,
) -> Result<StringOptions<'a>, CmdError> {
    let mut o = StringOptions::default();
    let set = command == OptionsFor::Set;
    let mut i = from;
    while i < args.len() {
        let next = (i + 1 < args.len()).then(|| args.get(i + 1));
        match (option_word(args.get(i)), next) {
            (Some(OptionWord::Nx), _) if !o.xx && set => o.nx = true,
            (Some(OptionWord::Xx), _) if !o.nx && set => o.xx = true,
            (Some(OptionWord::Get), _) if set => o.get = true,
            (Some(OptionWord::KeepTtl), _) if !o.persist && o.expire.is_none() && set => {
                o.keep_ttl = true;
            }
            (Some(OptionWord::Persist), _) if !set && o.expire.is_none() && !o.keep_ttl => {
                o.persist = true;
            }
            (Some(word @ (OptionWord::Stale | OptionWord::PStale)), Some(value)) if set => {
                let unit = match word {
                    OptionWord::Stale => Unit::Seconds,
                    _ => Unit::Millis,
                };
                o.stale = Some((value, unit));
                i += 1;
            }
            (Some(OptionWord::Lease), Some(token)) if set => {
                o.lease = Some(token);
                i += 1;
            }
            (Some(OptionWord::Expire(unit, relative)), Some(value)) => {
                // A later EX replaces an earlier EX, but forms don't mix.
                let same_form = o.expire.is_none_or(|(_, u, r)| u == unit && r == relative);
                if o.keep_ttl || o.persist || !same_form {
                    return Err(CmdError::Syntax);
                }
                o.expire = Some((value, unit, relative));
                i += 1;
            }
            _ => return Err(CmdError::Syntax),
        }
        i += 1;
    }
    Ok(o)
}

/// Turns a SET-style expire argument into an absolute deadline
/// (`getExpireMillisecondsOrReply`): it must be positive and not overflow.
fn set_deadline_ms(
    arg: &[u8],
    unit: Unit,
    relative: bool,
    now_ms: i64,
    command: &'static str,
) -> Result<i64, CmdError> {
    let n = int_arg(arg)?;
    if n <= 0 {
        return Err(CmdError::InvalidExpireTime(command));
    }
    expire_deadline_ms(n, unit, if relative { now_ms } else { 0 })
        .filter(|&ms| ms > 0)
        .ok_or(CmdError::InvalidExpireTime(command))
}

fn set(ctx: &mut Ctx, args: Args) -> CmdResult {
    let o = parse_string_options(&args, 3, OptionsFor::Set)?;
    let mut deadline = match o.expire {
        Some((arg, unit, relative)) => {
            Some(set_deadline_ms(arg, unit, relative, ctx.now_ms, "set")?)
        }
        None => None,
    };
    // STALE: fresh until the deadline given, stale for the grace after
    // it, then gone: the key's TTL is the hard deadline, grace included.
    let grace_ms = match o.stale {
        Some(_) if deadline.is_none() => return Err(CmdError::Syntax),
        Some((arg, unit)) => Some(set_deadline_ms(arg, unit, true, 0, "set")?),
        None => None,
    };
    if let (Some(at_ms), Some(grace)) = (deadline, grace_ms) {
        deadline = Some(
            at_ms
                .checked_add(grace)
                .ok_or(CmdError::InvalidExpireTime("set"))?,
        );
    }
    let lease = o.lease.map(super::lease::token_arg).transpose()?;
    let key = &args[1];
    let exists = if o.get {
        let old = read_string(ctx, key)?.map(<[u8]>::to_vec);
        match &old {
            Some(v) => ctx.out().bulk(v),
            None => ctx.out().null(),
        }
        old.is_some()
    } else if o.nx || o.xx {
        let now_ms = ctx.now_ms;
        ctx.db().contains(key, now_ms)
    } else {
        // Plain SET: existence doesn't matter; skip the extra lookup.
        false
    };
    // LEASE: only while the token holds the key's lease (a refresher
    // that was too slow must not overwrite a newer value).
    let (now_ms, db) = (ctx.now_ms, ctx.session.db);
    let fenced = lease.is_some_and(|t| !ctx.server.leases.holds(db, key, t, now_ms));
    if (o.nx && exists) || (o.xx && !exists) || fenced {
        if !o.get {
            ctx.out().null();
        }
        return Ok(());
    }
    if lease.is_some() {
        ctx.server.leases.filled();
    }
    let ttl = match (deadline, o.keep_ttl) {
        (Some(at_ms), _) => Ttl::At(at_ms),
        (None, true) => Ttl::Keep,
        (None, false) => Ttl::Clear,
    };
    store(ctx, key, args.get(2), ttl);
    if let Some(at_ms) = deadline {
        set_with_deadline_effect(ctx, key, args.get(2), at_ms);
        if let Some(grace) = grace_ms {
            // After the write's own signal, which ends any earlier one;
            // the soft deadline follows the write in the stream.
            let soft_ms = at_ms - grace;
            ctx.db().set_soft_deadline(key, soft_ms);
            if ctx.server.propagate.active() {
                let message = crate::db::soft_deadlines::echo_message(key, soft_ms);
                ctx.propagate_as(&[b"ECHO", &message]);
            }
        }
    } else if lease.is_some() {
        // Leases are the primary's: the effect is a plain write.
        let mut effect: Vec<&[u8]> = vec![b"SET", key, args.get(2)];
        if o.keep_ttl {
            effect.push(b"KEEPTTL");
        }
        ctx.propagate_as(&effect);
    }
    if !o.get {
        ctx.out().ok();
    }
    Ok(())
}

/// A string stored with a deadline (SET EX..., SETEX, PSETEX): the
/// `expire` event beside `set`, and the absolute `SET k v PXAT ms` in the
/// stream, as Redis 7.0 writes it.
fn set_with_deadline_effect(ctx: &mut Ctx, key: &[u8], value: &[u8], at_ms: i64) {
    ctx.signal(EventClass::GENERIC, "expire", key);
    if ctx.server.propagate.active() {
        let at = at_ms.to_string();
        ctx.propagate_as(&[b"SET", key, value, b"PXAT", at.as_bytes()]);
    }
}

/// Stores a string value (the single string write path).
fn store(ctx: &mut Ctx, key: &[u8], value: &[u8], ttl: Ttl) {
    let now_ms = ctx.now_ms;
    ctx.db().set_str(key, value, ttl, StrEncoding::Auto, now_ms);
    ctx.signal(EventClass::STRING, "set", key);
}

fn setnx(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    let created = !ctx.db().contains(&args[1], now_ms);
    if created {
        store(ctx, &args[1], &args[2], Ttl::Clear);
    }
    ctx.out().int(i64::from(created));
    Ok(())
}

fn setex_generic(ctx: &mut Ctx, args: Args, unit: Unit, command: &'static str) -> CmdResult {
    let at_ms = set_deadline_ms(&args[2], unit, true, ctx.now_ms, command)?;
    store(ctx, &args[1], &args[3], Ttl::At(at_ms));
    set_with_deadline_effect(ctx, &args[1], &args[3], at_ms);
    ctx.out().ok();
    Ok(())
}

fn setex(ctx: &mut Ctx, args: Args) -> CmdResult {
    setex_generic(ctx, args, Unit::Seconds, "setex")
}

fn psetex(ctx: &mut Ctx, args: Args) -> CmdResult {
    setex_generic(ctx, args, Unit::Millis, "psetex")
}

fn getex(ctx: &mut Ctx, args: Args) -> CmdResult {
    let o = parse_string_options(&args, 2, OptionsFor::Getex)?;
    let key = &args[1];
    // Redis looks the key up before it validates the expire time.
    let Some(value) = read_string(ctx, key)?.map(<[u8]>::to_vec) else {
        ctx.out().null();
        return Ok(());
    };
    let deadline = match o.expire {
        Some((arg, unit, relative)) => {
            Some(set_deadline_ms(arg, unit, relative, ctx.now_ms, "getex")?)
        }
        None => None,
    };
    let now_ms = ctx.now_ms;
    match deadline {
        // An absolute time already past deletes the key (the reply is still the value).
        Some(at_ms) if ctx.server.already_expired(at_ms, now_ms) => delete_now(ctx, key),
        Some(at_ms) => {
            ctx.db().set_expire(key, at_ms, now_ms);
            set_expire_effect(ctx, key, at_ms);
        }
        None if o.persist && ctx.db().persist(key, now_ms) => {
            ctx.signal(EventClass::GENERIC, "persist", key);
            ctx.propagate_as(&[b"PERSIST", key]);
        }
        None => {}
    }
    ctx.out().bulk(&value);
    Ok(())
}

fn getdel(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    read_string(ctx, &args[1])?;
    // The type was checked above, so anything removed is a string.
    match ctx.db().detach(&args[1], now_ms).map(|d| d.value) {
        Some(Value::Str(s)) => {
            ctx.signal(EventClass::GENERIC, "del", &args[1]);
            ctx.propagate_as(&[b"DEL", &args[1]]);
            ctx.out().bulk(&s)
        }
        _ => ctx.out().null(),
    }
    Ok(())
}

fn getset(ctx: &mut Ctx, args: Args) -> CmdResult {
    read_string(ctx, &args[1])?;
    let now_ms = ctx.now_ms;
    let old = ctx
        .db()
        .replace(&args[1], Value::Str(args[2].to_vec()), Ttl::Clear, now_ms);
    ctx.signal(EventClass::STRING, "set", &args[1]);
    match old {
        Some(Value::Str(s)) => ctx.out().bulk(&s),
        _ => ctx.out().null(),
    }
    Ok(())
}

fn mget(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    let session = &mut *ctx.session;
    let db = &mut ctx.server.dbs[session.db];
    session.reply.array(args.len() - 1);
    for key in args.iter().skip(1) {
        match db.get(key, now_ms) {
            Some(ValueRef::Str(s)) => session.reply.bulk(s),
            // MGET answers nil for keys of other types, as Redis does.
            _ => session.reply.null(),
        }
    }
    Ok(())
}

fn check_pairs(args: &Args, name: &str) -> CmdResult {
    if args.len().is_multiple_of(2) {
        return Err(CmdError::wrong_arity(name));
    }
    Ok(())
}

fn mset(ctx: &mut Ctx, args: Args) -> CmdResult {
    check_pairs(&args, "mset")?;
    for i in (1..args.len()).step_by(2) {
        store(ctx, args.get(i), args.get(i + 1), Ttl::Clear);
    }
    ctx.out().ok();
    Ok(())
}

fn msetnx(ctx: &mut Ctx, args: Args) -> CmdResult {
    check_pairs(&args, "msetnx")?;
    let now_ms = ctx.now_ms;
    let any_exists = (1..args.len())
        .step_by(2)
        .any(|i| ctx.db().contains(args.get(i), now_ms));
    if !any_exists {
        for i in (1..args.len()).step_by(2) {
            store(ctx, args.get(i), args.get(i + 1), Ttl::Clear);
        }
    }
    ctx.out().int(i64::from(!any_exists));
    Ok(())
}

/// Refuses strings longer than `proto-max-bulk-len` (`checkStringLength`).
fn check_string_length(ctx: &Ctx, len: u64) -> CmdResult {
    if len > ctx.server.config.proto_max_bulk_len as u64 {
        return Err(CmdError::Static(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
        ));
    }
    Ok(())
}

/// Changes the string at `key` in place (created empty if absent), keeping
/// its TTL; `edit` gets the bytes and whether the key existed, and returns
/// the reply value (failing before it changes anything). `encoding` says
/// what the string's encoding becomes, given whether the key existed.
fn update_string(
    ctx: &mut Ctx,
    key: &[u8],
    event: &'static str,
    encoding: fn(bool) -> StrEncoding,
    edit: impl FnOnce(&mut Vec<u8>, bool) -> Result<i64, CmdError>,
) -> Result<i64, CmdError> {
    let now_ms = ctx.now_ms;
    let result = ctx
        .db()
        .update_str(key, now_ms, encoding, edit)
        .unwrap_or(Err(CmdError::WrongType))?;
    ctx.signal(EventClass::STRING, event, key);
    Ok(result)
}

/// APPEND's encoding: a new key is stored as its argument would be, an
/// appended-to string becomes `raw` (Redis unshares it into a raw sds).
fn raw_if_existed(existed: bool) -> StrEncoding {
    if existed {
        StrEncoding::Raw
    } else {
        StrEncoding::Auto
    }
}

fn append(ctx: &mut Ctx, args: Args) -> CmdResult {
    let current = read_string_for_write(ctx, &args[1])?.map_or(0, <[u8]>::len);
    check_string_length(ctx, (current + args[2].len()) as u64)?;
    let len = update_string(ctx, &args[1], "append", raw_if_existed, |s, _| {
        grow(s, s.len() + args[2].len())?;
        s.extend_from_slice(&args[2]);
        Ok(s.len() as i64)
    })?;
    ctx.out().int(len);
    Ok(())
}

/// Makes room for a string of `len` bytes, or fails without panicking when
/// the allocator can't (possible if `proto-max-bulk-len` was set very high).
fn grow(s: &mut Vec<u8>, len: usize) -> Result<(), CmdError> {
    s.try_reserve(len.saturating_sub(s.len())).map_err(|_| {
        CmdError::Static("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
    })
}

fn strlen(ctx: &mut Ctx, args: Args) -> CmdResult {
    let len = read_string(ctx, &args[1])?.map_or(0, <[u8]>::len);
    ctx.out().int(len as i64);
    Ok(())
}

fn getrange(ctx: &mut Ctx, args: Args) -> CmdResult {
    let start = int_arg(&args[2])?;
    let end = int_arg(&args[3])?;
    let value = read_string(ctx, &args[1])?.unwrap_or_default();
    let range = substring_range(value.len() as i64, start, end);
    let slice = range.map_or(&[][..], |(s, e)| &value[s..=e]);
    let slice = slice.to_vec();
    ctx.out().bulk(&slice);
    Ok(())
}

/// GETRANGE's index arithmetic, as Redis 7.0 does it: negative indices count
/// from the end, the range is clamped, and an empty result is `None`.
fn substring_range(len: i64, mut start: i64, mut end: i64) -> Option<(usize, usize)> {
    if start < 0 && end < 0 && start > end {
        return None;
    }
    if start < 0 {
        start = len.saturating_add(start);
    }
    if end < 0 {
        end = len.saturating_add(end);
    }
    start = start.max(0);
    end = end.max(0);
    if end >= len {
        end = len - 1;
    }
    if start > end || len == 0 {
        return None;
    }
    Some((start as usize, end as usize))
}

fn setrange(ctx: &mut Ctx, args: Args) -> CmdResult {
    let offset = int_arg(&args[2])?;
    if offset < 0 {
        return Err(CmdError::Static("ERR offset is out of range"));
    }
    let patch = &args[3];
    let current = read_string_for_write(ctx, &args[1])?.map(<[u8]>::len);
    if patch.is_empty() {
        // Nothing to write: report the current length, create nothing.
        ctx.out().int(current.unwrap_or(0) as i64);
        return Ok(());
    }
    check_string_length(ctx, (offset as u64).saturating_add(patch.len() as u64))?;
    let offset = offset as usize;
    let len = update_string(
        ctx,
        &args[1],
        "setrange",
        |_| StrEncoding::Raw,
        |s, _| {
            let end = offset + patch.len();
            if s.len() < end {
                grow(s, end)?;
                s.resize(end, 0);
            }
            s[offset..end].copy_from_slice(patch);
            Ok(s.len() as i64)
        },
    )?;
    ctx.out().int(len);
    Ok(())
}

/// LCS's options.
#[derive(Default)]
struct LcsOptions {
    len: bool,
    idx: bool,
    with_match_len: bool,
    min_match_len: u64,
}

fn lcs_options(args: &Args) -> Result<LcsOptions, CmdError> {
    let mut o = LcsOptions::default();
    let mut j = 3;
    while j < args.len() {
        match &args[j] {
            a if is(a, "idx") => o.idx = true,
            a if is(a, "len") => o.len = true,
            a if is(a, "withmatchlen") => o.with_match_len = true,
            a if is(a, "minmatchlen") && j + 1 < args.len() => {
                o.min_match_len = int_arg(&args[j + 1])?.max(0) as u64;
                j += 1;
            }
            _ => return Err(CmdError::Syntax),
        }
        j += 1;
    }
    if o.len && o.idx {
        return Err(CmdError::Static(
            "ERR If you want both the length and indexes, please just use IDX.",
        ));
    }
    Ok(o)
}

/// One LCS match: ranges in the first and second string (inclusive).
type LcsRange = ((usize, usize), (usize, usize));

/// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]: the longest
/// common subsequence by the dynamic-programming table, walked back from
/// the end as Redis walks it (so IDX lists the same ranges in the same
/// order).
fn lcs(ctx: &mut Ctx, args: Args) -> CmdResult {
    // Both keys are looked up before either's type is judged, as Redis.
    let a = read_string(ctx, &args[1]).map(|s| s.map(<[u8]>::to_vec));
    let b = read_string(ctx, &args[2]).map(|s| s.map(<[u8]>::to_vec));
    let (Ok(a), Ok(b)) = (a, b) else {
        return Err(CmdError::Static(
            "ERR The specified keys must contain string values",
        ));
    };
    let (a, b) = (a.unwrap_or_default(), b.unwrap_or_default());
    let o = lcs_options(&args)?;
    let (alen, blen) = (a.len(), b.len());
    let cells = (alen as u64 + 1) * (blen as u64 + 1);
    if cells.saturating_mul(4) > ctx.server.config.proto_max_bulk_len as u64 {
        return Err(CmdError::Static(
            "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        ));
    }
    let mut table: Vec<u32> = Vec::new();
    table.try_reserve_exact(cells as usize).map_err(|_| {
        CmdError::Static("ERR Insufficient memory, failed allocating transient memory for LCS")
    })?;
    table.resize(cells as usize, 0);
    let at = |i: usize, j: usize| j + i * (blen + 1);
    for i in 1..=alen {
        for j in 1..=blen {
            table[at(i, j)] = if a[i - 1] == b[j - 1] {
                table[at(i - 1, j - 1)] + 1
            } else {
                table[at(i - 1, j)].max(table[at(i, j - 1)])
            };
        }
    }
    let total = table[at(alen, blen)];
    let mut common = vec![0u8; total as usize];
    let mut ranges: Vec<LcsRange> = Vec::new();
    let (mut i, mut j, mut k) = (alen, blen, total as usize);
    // The match being extended backwards: (a start, a end, b start, b end).
    let mut current: Option<(usize, usize, usize, usize)> = None;
    let compute = o.idx || !o.len;
    while compute && i > 0 && j > 0 {
        let emit;
        if a[i - 1] == b[j - 1] {
            common[k - 1] = a[i - 1];
            current = Some(match current {
                None => (i - 1, i - 1, j - 1, j - 1),
                Some((_, ae, _, be)) => (i - 1, ae, j - 1, be),
            });
            emit = i - 1 == 0 || j - 1 == 0;
            k -= 1;
            i -= 1;
            j -= 1;
        } else {
            if table[at(i - 1, j)] > table[at(i, j - 1)] {
                i -= 1;
            } else {
                j -= 1;
            }
            emit = current.is_some();
        }
        if emit {
            if let Some((a_start, a_end, b_start, b_end)) = current.take() {
                let len = (a_end - a_start + 1) as u64;
                if o.min_match_len == 0 || len >= o.min_match_len {
                    ranges.push(((a_start, a_end), (b_start, b_end)));
                }
            }
        }
    }
    let out = ctx.out();
    if o.idx {
        out.map(2);
        out.bulk(b"matches");
        out.array(ranges.len());
        for ((a_start, a_end), (b_start, b_end)) in ranges {
            out.array(2 + usize::from(o.with_match_len));
            for (start, end) in [(a_start, a_end), (b_start, b_end)] {
                out.array(2);
                out.int(start as i64);
                out.int(end as i64);
            }
            if o.with_match_len {
                out.int((a_end - a_start + 1) as i64);
            }
        }
        out.bulk(b"len");
        out.int(i64::from(total));
    } else if o.len {
        out.int(i64::from(total));
    } else {
        out.bulk(&common);
    }
    Ok(())
}

/// INCR/DECR/INCRBY/DECRBY: adds `delta` to the integer at `key`, keeping its TTL.
fn incr_generic(ctx: &mut Ctx, key: &[u8], delta: i64) -> CmdResult {
    let value = update_string(
        ctx,
        key,
        "incrby",
        |_| StrEncoding::Auto,
        |s, existed| {
            let current = if existed {
                parse_i64(s).ok_or(CmdError::NotInteger)?
            } else {
                0
            };
            let next = current.checked_add(delta).ok_or(CmdError::Overflow)?;
            s.clear();
            let mut tmp = [0u8; 20];
            s.extend_from_slice(crate::protocol::reply::format_i64(next, &mut tmp));
            Ok(next)
        },
    )?;
    ctx.out().int(value);
    Ok(())
}

fn incr(ctx: &mut Ctx, args: Args) -> CmdResult {
    incr_generic(ctx, &args[1], 1)
}

fn decr(ctx: &mut Ctx, args: Args) -> CmdResult {
    incr_generic(ctx, &args[1], -1)
}

fn incrby(ctx: &mut Ctx, args: Args) -> CmdResult {
    let delta = int_arg(&args[2])?;
    incr_generic(ctx, &args[1], delta)
}

fn decrby(ctx: &mut Ctx, args: Args) -> CmdResult {
    let delta = int_arg(&args[2])?;
    let delta = delta
        .checked_neg()
        .ok_or(CmdError::Static("ERR decrement would overflow"))?;
    incr_generic(ctx, &args[1], delta)
}

fn incrbyfloat(ctx: &mut Ctx, args: Args) -> CmdResult {
    // Redis's order: the key's type, the stored value, then the increment.
    let current = match read_string_for_write(ctx, &args[1])? {
        Some(text) => LongDouble::parse(text).ok_or(CmdError::NotFloat)?,
        None => LongDouble::ZERO,
    };
    let incr = LongDouble::parse(&args[2]).ok_or(CmdError::NotFloat)?;
    let text = long_double_sum(current, incr)?;
    // Redis stores the formatted sum as a fresh string: never `int`.
    let now_ms = ctx.now_ms;
    ctx.db()
        .set_str(&args[1], &text, Ttl::Keep, StrEncoding::NotInt, now_ms);
    ctx.signal(EventClass::STRING, "incrbyfloat", &args[1]);
    // The result, not the sum, goes to replicas: same float everywhere.
    ctx.propagate_as(&[b"SET", &args[1], &text, b"KEEPTTL"]);
    ctx.out().bulk(&text);
    Ok(())
}

/// `a + b` in long double, printed as INCRBYFLOAT and HINCRBYFLOAT reply
/// with it; Redis's error when the sum is not finite.
pub(crate) fn long_double_sum(a: LongDouble, b: LongDouble) -> Result<Vec<u8>, CmdError> {
    let sum = a + b;
    if !sum.is_finite() {
        return Err(CmdError::Static(
            "ERR increment would produce NaN or Infinity",
        ));
    }
    Ok(sum.to_human_string().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Harness;

    #[test]
    fn getrange_indices() {
        assert_eq!(substring_range(5, 0, -1), Some((0, 4)));
        assert_eq!(substring_range(5, -3, -1), Some((2, 4)));
        assert_eq!(substring_range(5, -1, -3), None);
        assert_eq!(substring_range(5, 3, 100), Some((3, 4)));
        assert_eq!(substring_range(5, i64::MIN, i64::MAX), Some((0, 4)));
        assert_eq!(substring_range(0, 0, -1), None);
    }

    #[test]
    fn set_options_and_errors() {
        let mut h = Harness::new();
        assert_eq!(h.run("SET k v NX XX"), "-ERR syntax error\r\n");
        assert_eq!(h.run("SET k v EX 10 PX 10"), "-ERR syntax error\r\n");
        assert_eq!(h.run("SET k v EX 10 KEEPTTL"), "-ERR syntax error\r\n");
        assert_eq!(
            h.run("SET k v EX 0"),
            "-ERR invalid expire time in 'set' command\r\n"
        );
        assert_eq!(
            h.run("SET k v EX x"),
            "-ERR value is not an integer or out of range\r\n"
        );
        assert_eq!(
            h.run("SET k v EX 9223372036854775807"),
            "-ERR invalid expire time in 'set' command\r\n"
        );
        assert_eq!(h.run("SET k v EX"), "-ERR syntax error\r\n");
        assert_eq!(h.run("SET k v EX 10 EX 20"), "+OK\r\n");
        assert_eq!(h.run("TTL k"), ":20\r\n");
        assert_eq!(h.run("SET k w NX"), "$-1\r\n");
        assert_eq!(h.run("SET k w NX GET"), "$1\r\nv\r\n");
        assert_eq!(h.run("SET k w KEEPTTL GET"), "$1\r\nv\r\n");
        assert_eq!(h.run("TTL k"), ":20\r\n");
        assert_eq!(h.run("SET k x"), "+OK\r\n");
        assert_eq!(h.run("TTL k"), ":-1\r\n");
    }

    #[test]
    fn counters() {
        let mut h = Harness::new();
        assert_eq!(h.run("INCR n"), ":1\r\n");
        assert_eq!(
            h.run("INCRBY n 9223372036854775806"),
            ":9223372036854775807\r\n"
        );
        assert_eq!(
            h.run("INCR n"),
            "-ERR increment or decrement would overflow\r\n"
        );
        assert_eq!(
            h.run("DECRBY n -9223372036854775808"),
            "-ERR decrement would overflow\r\n"
        );
        assert_eq!(h.run("SET s abc"), "+OK\r\n");
        assert_eq!(
            h.run("INCR s"),
            "-ERR value is not an integer or out of range\r\n"
        );
        assert_eq!(h.run("SET e \"\""), "+OK\r\n");
        assert_eq!(
            h.run("INCR e"),
            "-ERR value is not an integer or out of range\r\n"
        );
    }
}
