//! Sorted-set commands: ZADD ZINCRBY ZREM ZSCORE ZMSCORE ZCARD ZCOUNT
//! ZLEXCOUNT ZRANK ZREVRANK ZRANGE ZREVRANGE ZRANGEBYSCORE ZREVRANGEBYSCORE
//! ZRANGEBYLEX ZREVRANGEBYLEX ZREMRANGEBYRANK ZREMRANGEBYSCORE
//! ZREMRANGEBYLEX ZPOPMIN ZPOPMAX ZRANDMEMBER ZSCAN ZUNIONSTORE ZINTERSTORE
//! ZDIFFSTORE.
//!
//! Every range command turns its range (ranks, scores or members) into a
//! span of ascending ranks and walks it with `ZSet::iter_from`.

use std::borrow::Cow;

use rand::Rng;
use std::collections::HashMap;

use super::aggregate::{
    bulk, delete_if_empty, index_range, mpop_parse, pop_count, rand_args, read, read_for_write,
    reply_picks, reply_scan, scan_target, store_result, view, write, write_or_create_with, ZSET,
};
use super::blocking::{self, timeout_arg, wait_for_keys};
use super::member_ttl::ZSET_MEMBERS;
use super::{float_arg, int_arg, is, CmdError, CmdResult, Ctx, Handler};
use crate::db::{EventClass, StrEncoding};
use crate::protocol::reply::format_double;
use crate::protocol::{Args, Reply};
use crate::value::packed::Item;
use crate::value::zset::ZEntry;
use crate::value::{Value, ValueRef, ZSet, ZSetRef};

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[
    ("zadd", zadd),
    ("zrangestore", zrangestore),
    ("zincrby", zincrby),
    ("zrem", zrem),
    ("zscore", zscore),
    ("zmscore", zmscore),
    ("zcard", zcard),
    ("zcount", zcount),
    ("zlexcount", zlexcount),
    ("zrank", zrank),
    ("zrevrank", zrevrank),
    ("zrange", zrange),
    ("zrevrange", zrevrange),
    ("zrangebyscore", zrangebyscore),
    ("zrevrangebyscore", zrevrangebyscore),
    ("zrangebylex", zrangebylex),
    ("zrevrangebylex", zrevrangebylex),
    ("zremrangebyrank", zremrangebyrank),
    ("zremrangebyscore", zremrangebyscore),
    ("zremrangebylex", zremrangebylex),
    ("zpopmin", zpopmin),
    ("zpopmax", zpopmax),
    ("zmpop", zmpop),
    ("bzpopmin", bzpopmin),
    ("bzpopmax", bzpopmax),
    ("bzmpop", bzmpop),
    ("zrandmember", zrandmember),
    ("zscan", zscan),
    ("zunionstore", zunionstore),
    ("zinterstore", zinterstore),
    ("zdiffstore", zdiffstore),
    ("zunion", zunion),
    ("zinter", zinter),
    ("zdiff", zdiff),
    ("zintercard", zintercard),
    ("zexpire", zexpire),
    ("zpexpire", zpexpire),
    ("zexpireat", zexpireat),
    ("zpexpireat", zpexpireat),
    ("zttl", zttl),
    ("zpttl", zpttl),
    ("zexpiretime", zexpiretime),
    ("zpexpiretime", zpexpiretime),
    ("zpersist", zpersist),
];

// ---- ZADD and ZINCRBY -------------------------------------------------

/// ZADD's options.
#[derive(Default, Clone, Copy)]
pub(super) struct AddFlags {
    pub nx: bool,
    pub xx: bool,
    pub gt: bool,
    pub lt: bool,
    pub ch: bool,
    pub incr: bool,
}

/// ZADD and ZINCRBY (`zaddGenericCommand`): applies `pairs` under `flags`
/// and replies with the count (added, plus updated with CH) or, with INCR,
/// the new score (null if a condition stopped it).
pub(super) fn zadd_generic(
    ctx: &mut Ctx,
    key: &[u8],
    flags: AddFlags,
    pairs: &[(f64, &[u8])],
) -> CmdResult {
    let exists = read_for_write(ctx, key, &ZSET)?.is_some();
    if !exists && flags.xx {
        match flags.incr {
            true => ctx.out().null(),
            false => ctx.out().int(0),
        }
        return Ok(());
    }
    let limits = ctx.server.config.zset_limits();
    let first_len = pairs.first().map_or(0, |(_, m)| m.len());
    let z = write_or_create_with(ctx, key, &ZSET, || {
        Value::ZSet(ZSet::create(first_len, limits))
    })?;
    let (mut added, mut updated) = (0, 0);
    let mut result = None;
    for &(score, member) in pairs {
        let new = match z.view().score(member) {
            Some(_) if flags.nx => continue,
            Some(current) => {
                let new = if flags.incr { current + score } else { score };
                if new.is_nan() {
                    return Err(CmdError::Static(
                        "ERR resulting score is not a number (NaN)",
                    ));
                }
                if (flags.gt && new <= current) || (flags.lt && new >= current) {
                    continue;
                }
                if new == current {
                    // Nothing moves (a changed sign of zero included).
                    result = Some(new);
                    continue;
                }
                updated += 1;
                new
            }
            None if flags.xx => continue,
            None => {
                added += 1;
                score
            }
        };
        z.insert(member, new, limits);
        result = Some(new);
    }
    if added + updated > 0 {
        let event = if flags.incr { "zincr" } else { "zadd" };
        ctx.signal(EventClass::ZSET, event, key);
    }
    delete_if_empty(ctx, key);
    let out = ctx.out();
    match (flags.incr, result) {
        (true, Some(score)) => out.double(score),
        (true, None) => out.null(),
        (false, _) => out.int(added + if flags.ch { updated } else { 0 }),
    }
    Ok(())
}

fn zadd(ctx: &mut Ctx, args: Args) -> CmdResult {
    let mut flags = AddFlags::default();
    let mut i = 2;
    while i < args.len() {
        let arg = &args[i];
        let flag = if is(arg, "NX") {
            &mut flags.nx
        } else if is(arg, "XX") {
            &mut flags.xx
        } else if is(arg, "GT") {
            &mut flags.gt
        } else if is(arg, "LT") {
            &mut flags.lt
        } else if is(arg, "CH") {
            &mut flags.ch
        } else if is(arg, "INCR") {
            &mut flags.incr
        } else {
            break;
        };
        *flag = true;
        i += 1;
    }
    let rest = args.len() - i;
    if rest == 0 || !rest.is_multiple_of(2) {
        return Err(CmdError::Syntax);
    }
    // Redis's order: incompatible options, then INCR's single pair.
    if flags.nx && flags.xx {
        return Err(CmdError::Static(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if u8::from(flags.nx) + u8::from(flags.gt) + u8::from(flags.lt) > 1 {
        return Err(CmdError::Static(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if flags.incr && rest > 2 {
        return Err(CmdError::Static(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    let pairs = (i..args.len())
        .step_by(2)
        .map(|p| Ok((float_arg(&args[p])?, &args[p + 1])))
        .collect::<Result<Vec<(f64, &[u8])>, CmdError>>()?;
    zadd_generic(ctx, &args[1], flags, &pairs)
}

fn zincrby(ctx: &mut Ctx, args: Args) -> CmdResult {
    let incr = float_arg(&args[2])?;
    let flags = AddFlags {
        incr: true,
        ..AddFlags::default()
    };
    zadd_generic(ctx, &args[1], flags, &[(incr, &args[3])])
}

fn zrem(ctx: &mut Ctx, args: Args) -> CmdResult {
    let removed = match write(ctx, &args[1], &ZSET)? {
        Some(z) => args
            .iter()
            .skip(2)
            .filter(|m| z.remove(m).is_some())
            .count(),
        None => 0,
    };
    if removed > 0 {
        ctx.signal(EventClass::ZSET, "zrem", &args[1]);
    }
    delete_if_empty(ctx, &args[1]);
    ctx.out().int(removed as i64);
    Ok(())
}

fn zscore(ctx: &mut Ctx, args: Args) -> CmdResult {
    let view = view(ctx, &args[1], &ZSET)?;
    match view.value.and_then(|z| z.score(&args[2])) {
        Some(score) => view.out.double(score),
        None => view.out.null(),
    }
    Ok(())
}

fn zmscore(ctx: &mut Ctx, args: Args) -> CmdResult {
    let view = view(ctx, &args[1], &ZSET)?;
    view.out.array(args.len() - 2);
    for member in args.iter().skip(2) {
        match view.value.and_then(|z| z.score(member)) {
            Some(score) => view.out.double(score),
            None => view.out.null(),
        }
    }
    Ok(())
}

fn zcard(ctx: &mut Ctx, args: Args) -> CmdResult {
    let len = read(ctx, &args[1], &ZSET)?.map_or(0, ZSetRef::len);
    ctx.out().int(len as i64);
    Ok(())
}

// ---- Ranges ----------------------------------------------------------

/// A score or member range, as a pair of predicates on the order: which
/// nodes lie before its start, and which lie at or before its end.
enum Range {
    Score {
        min: f64,
        min_ex: bool,
        max: f64,
        max_ex: bool,
    },
    Lex {
        min: LexBound,
        max: LexBound,
    },
}

/// One end of a lexicographic range: `-`, `+`, `[member` or `(member`.
enum LexBound {
    Least,
    Greatest,
    Incl(Vec<u8>),
    Excl(Vec<u8>),
}

fn score_bound(arg: &[u8]) -> Result<(f64, bool), CmdError> {
    const BAD: CmdError = CmdError::Static("ERR min or max is not a float");
    // `zslParseRange`: plain strtod, so "" and "(" mean 0 and " 1" is 1.
    let (text, exclusive) = match arg.strip_prefix(b"(") {
        Some(rest) => (rest, true),
        None => (arg, false),
    };
    crate::float::parse_f64_lenient(text)
        .map(|v| (v, exclusive))
        .ok_or(BAD)
}

fn lex_bound(arg: &[u8]) -> Result<LexBound, CmdError> {
    match arg.split_first() {
        Some((b'-', [])) => Ok(LexBound::Least),
        Some((b'+', [])) => Ok(LexBound::Greatest),
        Some((b'[', rest)) => Ok(LexBound::Incl(rest.to_vec())),
        Some((b'(', rest)) => Ok(LexBound::Excl(rest.to_vec())),
        _ => Err(CmdError::Static(
            "ERR min or max not valid string range item",
        )),
    }
}

impl Range {
    fn score(min: &[u8], max: &[u8]) -> Result<Range, CmdError> {
        let (min, min_ex) = score_bound(min)?;
        let (max, max_ex) = score_bound(max)?;
        Ok(Range::Score {
            min,
            min_ex,
            max,
            max_ex,
        })
    }

    fn lex(min: &[u8], max: &[u8]) -> Result<Range, CmdError> {
        Ok(Range::Lex {
            min: lex_bound(min)?,
            max: lex_bound(max)?,
        })
    }

    /// Whether `node` comes before the range's start.
    fn before_start(&self, node: ZEntry) -> bool {
        match self {
            Range::Score { min, min_ex, .. } => {
                node.score < *min || (*min_ex && node.score == *min)
            }
            Range::Lex { min, .. } => node.member.with_bytes(|m| match min {
                LexBound::Least => false,
                LexBound::Greatest => true,
                LexBound::Incl(b) => m < b.as_slice(),
                LexBound::Excl(b) => m <= b.as_slice(),
            }),
        }
    }

    /// Whether `node` comes at or before the range's end.
    fn upto_end(&self, node: ZEntry) -> bool {
        match self {
            Range::Score { max, max_ex, .. } => {
                node.score < *max || (!*max_ex && node.score == *max)
            }
            Range::Lex { max, .. } => node.member.with_bytes(|m| match max {
                LexBound::Least => false,
                LexBound::Greatest => true,
                LexBound::Incl(b) => m <= b.as_slice(),
                LexBound::Excl(b) => m < b.as_slice(),
            }),
        }
    }

    /// The ascending ranks `lo..hi` the range covers. O(log n).
    fn span(&self, z: ZSetRef<'_>) -> (usize, usize) {
        let lo = z.count_before(|n| self.before_start(n));
        let hi = z.count_before(|n| self.upto_end(n));
        (lo, hi.max(lo))
    }
}

/// Ranks `start..=stop` as the half-open span `lo..hi` (empty: `0..0`).
fn rank_span(len: usize, start: i64, stop: i64) -> (usize, usize) {
    index_range(len as i64, start, stop).map_or((0, 0), |(first, last)| (first, last + 1))
}

fn zcount_generic(ctx: &mut Ctx, key: &[u8], range: Range) -> CmdResult {
    let count = read(ctx, key, &ZSET)?.map_or(0, |z| {
        let (lo, hi) = range.span(z);
        hi - lo
    });
    ctx.out().int(count as i64);
    Ok(())
}

fn zcount(ctx: &mut Ctx, args: Args) -> CmdResult {
    zcount_generic(ctx, &args[1], Range::score(&args[2], &args[3])?)
}

fn zlexcount(ctx: &mut Ctx, args: Args) -> CmdResult {
    zcount_generic(ctx, &args[1], Range::lex(&args[2], &args[3])?)
}

fn zrank_generic(ctx: &mut Ctx, args: &Args, rev: bool) -> CmdResult {
    if args.len() > 4 {
        let name = if rev { "zrevrank" } else { "zrank" };
        return Err(CmdError::wrong_arity(name));
    }
    // Redis 7.0 has no WITHSCORE (7.2's): any other fourth argument is
    // an arity error there, as here.
    if args.len() == 4 && !is(&args[3], "WITHSCORE") {
        return Err(CmdError::wrong_arity(if rev {
            "zrevrank"
        } else {
            "zrank"
        }));
    }
    let with_score = args.len() == 4;
    let view = view(ctx, &args[1], &ZSET)?;
    let found = view.value.and_then(|z| {
        let rank = z.rank(&args[2])?;
        let score = z.score(&args[2])?;
        Some((if rev { z.len() - 1 - rank } else { rank }, score))
    });
    match (found, with_score) {
        (Some((rank, _)), false) => view.out.int(rank as i64),
        (Some((rank, score)), true) => {
            view.out.array(2);
            view.out.int(rank as i64);
            view.out.double(score);
        }
        (None, false) => view.out.null(),
        (None, true) => view.out.null_array(),
    }
    Ok(())
}

fn zrank(ctx: &mut Ctx, args: Args) -> CmdResult {
    zrank_generic(ctx, &args, false)
}

fn zrevrank(ctx: &mut Ctx, args: Args) -> CmdResult {
    zrank_generic(ctx, &args, true)
}

/// What a ZRANGE-family command selects.
enum Select {
    Ranks(i64, i64),
    Range(Range),
}

/// A parsed ZRANGE-family request.
struct RangeQuery {
    select: Select,
    rev: bool,
    /// LIMIT offset count (count < 0: no limit).
    limit: Option<(i64, i64)>,
    with_scores: bool,
}

/// Which syntax a ZRANGE-family command uses for its range.
#[derive(Clone, Copy, PartialEq, Eq)]
enum By {
    Rank,
    Score,
    Lex,
}

impl RangeQuery {
    /// Builds the query from `min`/`max` as given (with REV they arrive as
    /// max then min) and the options after them.
    /// `src` is where the source key sits (ZRANGESTORE's is after its
    /// destination); min, max and the options follow it.
    fn parse(args: &Args, src: usize, mut by: By, mut rev: bool) -> Result<Self, CmdError> {
        let (mut limit, mut with_scores) = (None, false);
        // Only ZRANGE and ZRANGESTORE take REV and BY*, each at most once
        // (the older commands have both fixed by their name).
        let store = args[0].eq_ignore_ascii_case(b"zrangestore");
        let generic = store || args[0].eq_ignore_ascii_case(b"zrange");
        let (mut rev_open, mut by_open) = (generic, generic);
        let mut i = src + 3;
        while i < args.len() {
            if !store && is(&args[i], "WITHSCORES") {
                with_scores = true;
            } else if is(&args[i], "LIMIT") && i + 2 < args.len() {
                limit = Some((int_arg(&args[i + 1])?, int_arg(&args[i + 2])?));
                i += 2;
            } else if rev_open && is(&args[i], "REV") {
                (rev, rev_open) = (true, false);
            } else if by_open && is(&args[i], "BYSCORE") {
                (by, by_open) = (By::Score, false);
            } else if by_open && is(&args[i], "BYLEX") {
                (by, by_open) = (By::Lex, false);
            } else {
                return Err(CmdError::Syntax);
            }
            i += 1;
        }
        // Redis only objects to a LIMIT that limits (count -1 is "all").
        if limit.is_some_and(|(_, count)| count != -1) && by == By::Rank {
            return Err(CmdError::Static("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"));
        }
        if with_scores && by == By::Lex {
            return Err(CmdError::Static(
                "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
            ));
        }
        let (a, b) = (&args[src + 1], &args[src + 2]);
        let (min, max) = if rev && by != By::Rank {
            (b, a)
        } else {
            (a, b)
        };
        let select = match by {
            By::Rank => Select::Ranks(int_arg(min)?, int_arg(max)?),
            By::Score => Select::Range(Range::score(min, max)?),
            By::Lex => Select::Range(Range::lex(min, max)?),
        };
        Ok(RangeQuery {
            select,
            rev,
            limit,
            with_scores,
        })
    }

    /// Positions `start..end` in the walking direction.
    fn positions(&self, z: ZSetRef<'_>) -> (usize, usize) {
        let len = z.len();
        let (start, end) = match &self.select {
            Select::Ranks(start, stop) => return rank_span(len, *start, *stop),
            Select::Range(range) => {
                let (lo, hi) = range.span(z);
                if self.rev {
                    (len - hi, len - lo)
                } else {
                    (lo, hi)
                }
            }
        };
        match self.limit {
            None => (start, end),
            Some((offset, _)) if offset < 0 => (0, 0),
            Some((offset, count)) => {
                let start = start.saturating_add(offset as usize).min(end);
                let end = match usize::try_from(count) {
                    Ok(count) => start.saturating_add(count).min(end),
                    Err(_) => end,
                };
                (start, end)
            }
        }
    }
}

/// Writes `(member, score)` items: members alone, or with scores as a flat
/// list (RESP2) or one pair array each (RESP3).
fn reply_scored<'a>(
    out: &mut Reply,
    len: usize,
    with_scores: bool,
    items: impl Iterator<Item = (Item<'a>, f64)>,
) {
    let pair_arrays = with_scores && out.resp3;
    out.array(if with_scores && !pair_arrays {
        len * 2
    } else {
        len
    });
    for (member, score) in items {
        if pair_arrays {
            out.array(2);
        }
        bulk(out, member);
        if with_scores {
            out.double(score);
        }
    }
}

fn range_generic(ctx: &mut Ctx, args: &Args, by: By, rev: bool) -> CmdResult {
    let query = RangeQuery::parse(args, 1, by, rev)?;
    let view = view(ctx, &args[1], &ZSET)?;
    let z = view.value.unwrap_or(ZSetRef::EMPTY);
    let (start, end) = query.positions(z);
    let items = z
        .iter_from(start, query.rev)
        .take(end - start)
        .map(|e| (e.member, e.score));
    reply_scored(view.out, end - start, query.with_scores, items);
    Ok(())
}

fn zrange(ctx: &mut Ctx, args: Args) -> CmdResult {
    range_generic(ctx, &args, By::Rank, false)
}

/// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]:
/// the range ZRANGE would reply, stored (an empty one deletes `dst`).
fn zrangestore(ctx: &mut Ctx, args: Args) -> CmdResult {
    let query = RangeQuery::parse(&args, 2, By::Rank, false)?;
    let limits = ctx.server.config.zset_limits();
    let z = read(ctx, &args[2], &ZSET)?.unwrap_or(ZSetRef::EMPTY);
    let (start, end) = query.positions(z);
    let mut result = ZSet::Tree(Box::default());
    for e in z.iter_from(start, query.rev).take(end - start) {
        e.member.with_bytes(|m| result.insert(m, e.score, limits));
    }
    result.pack_if_fit(limits);
    let len = result.len();
    let result = (len > 0).then_some(Value::ZSet(result));
    let event = (EventClass::ZSET, "zrangestore");
    store_result(ctx, &args[1], result, StrEncoding::Auto, event);
    ctx.out().int(len as i64);
    Ok(())
}

fn zrevrange(ctx: &mut Ctx, args: Args) -> CmdResult {
    range_generic(ctx, &args, By::Rank, true)
}

fn zrangebyscore(ctx: &mut Ctx, args: Args) -> CmdResult {
    range_generic(ctx, &args, By::Score, false)
}

fn zrevrangebyscore(ctx: &mut Ctx, args: Args) -> CmdResult {
    range_generic(ctx, &args, By::Score, true)
}

fn zrangebylex(ctx: &mut Ctx, args: Args) -> CmdResult {
    range_generic(ctx, &args, By::Lex, false)
}

fn zrevrangebylex(ctx: &mut Ctx, args: Args) -> CmdResult {
    range_generic(ctx, &args, By::Lex, true)
}

/// ZREMRANGEBY*: removes the members of ascending ranks `span(z)`.
fn zremrange_generic(
    ctx: &mut Ctx,
    key: &[u8],
    event: &'static str,
    span: impl FnOnce(ZSetRef<'_>) -> (usize, usize),
) -> CmdResult {
    let removed = match write(ctx, key, &ZSET)? {
        None => 0,
        Some(z) => {
            let (lo, hi) = span(z.view());
            let doomed: Vec<Vec<u8>> = z
                .view()
                .iter_from(lo, false)
                .take(hi - lo)
                .map(|e| e.member.to_vec())
                .collect();
            for member in &doomed {
                z.remove(member);
            }
            doomed.len()
        }
    };
    if removed > 0 {
        ctx.signal(EventClass::ZSET, event, key);
    }
    delete_if_empty(ctx, key);
    ctx.out().int(removed as i64);
    Ok(())
}

fn zremrangebyrank(ctx: &mut Ctx, args: Args) -> CmdResult {
    let (start, stop) = (int_arg(&args[2])?, int_arg(&args[3])?);
    zremrange_generic(ctx, &args[1], "zremrangebyrank", |z| {
        rank_span(z.len(), start, stop)
    })
}

fn zremrangebyscore(ctx: &mut Ctx, args: Args) -> CmdResult {
    let range = Range::score(&args[2], &args[3])?;
    zremrange_generic(ctx, &args[1], "zremrangebyscore", |z| range.span(z))
}

fn zremrangebylex(ctx: &mut Ctx, args: Args) -> CmdResult {
    let range = Range::lex(&args[2], &args[3])?;
    zremrange_generic(ctx, &args[1], "zremrangebylex", |z| range.span(z))
}

// ---- Pops, random members, scan -----------------------------------------

/// ZPOPMIN/ZPOPMAX [count]. Without a count the reply is one flat pair;
/// with one it is a list of pairs (nested in RESP3).
fn zpop_generic(ctx: &mut Ctx, args: &Args, max: bool) -> CmdResult {
    let count = pop_count(args)?;
    let want = count.map_or(1, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let popped = zpop_first(ctx, &[&args[1]], max, want)?.map_or_else(Vec::new, |(_, p)| p);
    let out = ctx.out();
    let items = popped.iter().map(|(m, s)| (Item::bytes(m), *s));
    match count {
        None => {
            out.array(popped.len() * 2);
            for (member, score) in &popped {
                out.bulk(member);
                out.double(*score);
            }
        }
        Some(_) => reply_scored(out, popped.len(), true, items),
    }
    Ok(())
}

/// A key and the members popped from it, with their scores.
type ZPopped = (Vec<u8>, Vec<(Vec<u8>, f64)>);

/// Pops up to `count` members (lowest, or highest with `max`) from the
/// first of `keys` holding a non-empty sorted set, as `pop_first` does for
/// lists (WRONGTYPE in key order, except when a blocked command retries).
fn zpop_first(
    ctx: &mut Ctx,
    keys: &[&[u8]],
    max: bool,
    count: usize,
) -> Result<Option<ZPopped>, CmdError> {
    let retrying = blocking::retrying(ctx);
    for key in keys {
        let z = match write(ctx, key, &ZSET) {
            Ok(Some(z)) if !z.is_empty() => z,
            Ok(_) => continue,
            Err(_) if retrying => continue,
            Err(e) => return Err(e),
        };
        let popped: Vec<(Vec<u8>, f64)> = (0..count).map_while(|_| z.pop(max)).collect();
        if !popped.is_empty() {
            ctx.signal(
                EventClass::ZSET,
                if max { "zpopmax" } else { "zpopmin" },
                key,
            );
        }
        delete_if_empty(ctx, key);
        return Ok(Some((key.to_vec(), popped)));
    }
    Ok(None)
}

/// The blocking and multi-key pops propagate as the plain pop of what they
/// took (`ZPOPMIN key n`).
fn propagate_zpop(ctx: &mut Ctx, key: &[u8], max: bool, popped: usize) {
    let name: &[u8] = if max { b"ZPOPMAX" } else { b"ZPOPMIN" };
    let n = popped.to_string();
    ctx.propagate_as(&[name, key, n.as_bytes()]);
}

/// ZMPOP/BZMPOP's `numkeys key... MIN|MAX [COUNT n]` from `args[at]`.
fn zmpop_args<'a>(args: &Args<'a>, at: usize) -> Result<(Vec<&'a [u8]>, bool, usize), CmdError> {
    let (keys, which, count) = mpop_parse(args, at, ["MIN", "MAX"])?;
    Ok((keys, which == 1, count))
}

/// `[key, [[member, score], ...]]` (ZMPOP, BZMPOP), propagated as the
/// plain pop.
fn reply_zmpop(ctx: &mut Ctx, key: &[u8], popped: &[(Vec<u8>, f64)], max: bool) {
    propagate_zpop(ctx, key, max, popped.len());
    let out = ctx.out();
    out.array(2);
    out.bulk(key);
    out.array(popped.len());
    for (member, score) in popped {
        out.array(2);
        out.bulk(member);
        out.double(*score);
    }
}

fn zmpop(ctx: &mut Ctx, args: Args) -> CmdResult {
    let (keys, max, count) = zmpop_args(&args, 1)?;
    match zpop_first(ctx, &keys, max, count)? {
        Some((key, popped)) => reply_zmpop(ctx, &key, &popped, max),
        None => ctx.out().null_array(),
    }
    Ok(())
}

fn bzmpop(ctx: &mut Ctx, args: Args) -> CmdResult {
    // BZMPOP reads its timeout first (BLMPOP last: Redis's own order).
    let deadline = timeout_arg(&args[1], ctx.now_ms)?;
    let (keys, max, count) = zmpop_args(&args, 2)?;
    match zpop_first(ctx, &keys, max, count)? {
        Some((key, popped)) => reply_zmpop(ctx, &key, &popped, max),
        None => wait_for_keys(ctx, args, &keys, deadline),
    }
    Ok(())
}

/// BZPOPMIN/BZPOPMAX `key... timeout`: `[key, member, score]`.
fn bzpop_generic(ctx: &mut Ctx, args: Args, max: bool) -> CmdResult {
    let deadline = timeout_arg(&args[args.len() - 1], ctx.now_ms)?;
    let keys: Vec<&[u8]> = args.iter().skip(1).take(args.len() - 2).collect();
    match zpop_first(ctx, &keys, max, 1)? {
        Some((key, popped)) => {
            propagate_zpop(ctx, &key, max, popped.len());
            let out = ctx.out();
            out.array(3);
            out.bulk(&key);
            out.bulk(&popped[0].0);
            out.double(popped[0].1);
        }
        None => wait_for_keys(ctx, args, &keys, deadline),
    }
    Ok(())
}

fn bzpopmin(ctx: &mut Ctx, args: Args) -> CmdResult {
    bzpop_generic(ctx, args, false)
}

fn bzpopmax(ctx: &mut Ctx, args: Args) -> CmdResult {
    bzpop_generic(ctx, args, true)
}

fn zpopmin(ctx: &mut Ctx, args: Args) -> CmdResult {
    zpop_generic(ctx, &args, false)
}

fn zpopmax(ctx: &mut Ctx, args: Args) -> CmdResult {
    zpop_generic(ctx, &args, true)
}

fn zrandmember(ctx: &mut Ctx, args: Args) -> CmdResult {
    let count = rand_args(&args, Some("WITHSCORES"))?;
    let with_scores = count.is_some_and(|(_, with)| with);
    let mut view = view(ctx, &args[1], &ZSET)?;
    let z = view.value.unwrap_or(ZSetRef::EMPTY);
    let entry_at = z.by_index();
    let Some((count, _)) = count else {
        let pick = (!z.is_empty()).then(|| view.rng.gen_range(0..z.len()) as u32);
        match pick.and_then(&entry_at) {
            Some(e) => bulk(view.out, e.member),
            None => view.out.null(),
        }
        return Ok(());
    };
    reply_picks(&mut view, z.len(), count, with_scores, |out, i| {
        if let Some(e) = entry_at(i) {
            bulk(out, e.member);
            if with_scores {
                out.double(e.score);
            }
        }
    });
    Ok(())
}

fn zscan(ctx: &mut Ctx, args: Args) -> CmdResult {
    let Some((z, opts)) = scan_target(ctx, &args, &ZSET)? else {
        reply_scan(ctx.out(), 0, &[]);
        return Ok(());
    };
    let mut found = Vec::new();
    let emit = |member: &[u8], score: f64, found: &mut Vec<Vec<u8>>| {
        if opts.matches(member) {
            found.push(member.to_vec());
            found.push(format_double(score).into_bytes());
        }
    };
    let next = match z {
        ZSetRef::Tree(t) => opts.collect(2, &mut found, |cursor, found| {
            t.scan_step(cursor, |n| emit(n.member.as_bytes(), n.score, found))
        }),
        // A packed sorted set answers whole in one call, as Redis's do.
        ZSetRef::Packed(_) => {
            for e in z.iter_from(0, false) {
                e.member.with_bytes(|m| emit(m, e.score, &mut found));
            }
            0
        }
    };
    reply_scan(ctx.out(), next, &found);
    Ok(())
}

// ---- ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE ---------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    fn apply(self, acc: f64, score: f64) -> f64 {
        match self {
            // inf + -inf is NaN; Redis stores 0 then.
            Aggregate::Sum => Some(acc + score).filter(|s| !s.is_nan()).unwrap_or(0.0),
            Aggregate::Min => acc.min(score),
            Aggregate::Max => acc.max(score),
        }
    }
}

/// A source of a store command: a sorted set, or a set whose members all
/// score 1.
enum Source<'a> {
    ZSet(ZSetRef<'a>),
    Set(crate::value::SetRef<'a>),
}

impl<'a> Source<'a> {
    /// The source a value can be: a sorted set or a set.
    fn of(value: ValueRef<'a>) -> Option<Source<'a>> {
        match value {
            ValueRef::ZSet(z) => Some(Source::ZSet(z)),
            ValueRef::Set(s) => Some(Source::Set(s)),
            _ => None,
        }
    }

    fn len(&self) -> usize {
        match self {
            Source::ZSet(z) => z.len(),
            Source::Set(s) => s.len(),
        }
    }

    fn score(&self, member: &[u8]) -> Option<f64> {
        match self {
            Source::ZSet(z) => z.score(member),
            Source::Set(s) => s.contains(member).then_some(1.0),
        }
    }

    /// Each member with its score (a set's members score 1), borrowed
    /// where the value holds it whole.
    fn each(&self, mut f: impl FnMut(Cow<'a, [u8]>, f64)) {
        match self {
            Source::ZSet(z) => z
                .iter_from(0, false)
                .for_each(|e| f(cow(e.member), e.score)),
            Source::Set(s) => s.iter().for_each(|m| f(cow(m), 1.0)),
        }
    }
}

/// `[dst] numkeys key... [WEIGHTS w...] [AGGREGATE SUM|MIN|MAX]` (and
/// `[WITHSCORES]` when the result is replied, not stored: ZUNION, ZINTER,
/// ZDIFF), as Redis's `zunionInterDiffGenericCommand`.
fn setop_generic(ctx: &mut Ctx, args: &Args, op: SetOp, store: bool) -> CmdResult {
    let (replied_name, stored_name) = match op {
        SetOp::Union => ("zunion", "zunionstore"),
        SetOp::Inter => ("zinter", "zinterstore"),
        SetOp::Diff => ("zdiff", "zdiffstore"),
    };
    let name = if store { stored_name } else { replied_name };
    let at = if store { 2 } else { 1 };
    let keys = numkeys_and_keys(args, at, name)?;
    // Redis checks the sources' types before it parses the options.
    let options = store_options(args, at + 1 + keys.len(), keys.len(), op, !store);
    let sources = sources_of(ctx, &keys)?;
    let (weights, aggregate, with_scores) = options?;
    let mut result = combine(&sources, &weights, aggregate, op);
    if !store {
        let out = ctx.out();
        let items = result
            .view()
            .iter_from(0, false)
            .map(|e| (e.member, e.score));
        reply_scored(out, result.len(), with_scores, items);
        return Ok(());
    }
    // Built as a tree, then packed if it fits, as Redis does.
    result.pack_if_fit(ctx.server.config.zset_limits());
    let len = result.len();
    let result = (!result.is_empty()).then_some(Value::ZSet(result));
    let event = (EventClass::ZSET, stored_name);
    store_result(ctx, &args[1], result, StrEncoding::Auto, event);
    ctx.out().int(len as i64);
    Ok(())
}

/// `numkeys key...` at `args[at..]`: the keys, with Redis's errors for
/// a count under 1 (naming `command`) or past the arguments.
fn numkeys_and_keys<'a>(
    args: &Args<'a>,
    at: usize,
    command: &str,
) -> Result<Vec<&'a [u8]>, CmdError> {
    let numkeys = int_arg(&args[at])?;
    if numkeys < 1 {
        return Err(CmdError::owned(format!(
            "ERR at least 1 input key is needed for '{command}' command"
        )));
    }
    let numkeys = usize::try_from(numkeys).unwrap_or(usize::MAX);
    if numkeys > args.len() - at - 1 {
        return Err(CmdError::Syntax);
    }
    Ok(args.iter().skip(at + 1).take(numkeys).collect())
}

/// The sorted sets (or sets) at `keys`, missing ones `None`; any other
/// type is WRONGTYPE.
fn sources_of<'c>(ctx: &'c mut Ctx, keys: &[&[u8]]) -> Result<Vec<Option<Source<'c>>>, CmdError> {
    let now_ms = ctx.now_ms;
    Ok(ctx
        .db()
        .get_many(keys, now_ms, |v| Source::of(v).is_some())
        .map_err(|_| CmdError::WrongType)?
        .into_iter()
        .map(|v| v.and_then(Source::of))
        .collect())
}

/// ZINTERCARD numkeys key... [LIMIT limit]: how many members all share
/// (counting stops at a non-zero limit).
fn zintercard(ctx: &mut Ctx, args: Args) -> CmdResult {
    let keys = numkeys_and_keys(&args, 1, "zintercard")?;
    // The keys are read (WRONGTYPE) before LIMIT is, as in Redis.
    let sources = sources_of(ctx, &keys)?;
    let mut limit = 0usize;
    let mut i = 2 + keys.len();
    let mut parsed = Ok(());
    while i < args.len() {
        if is(&args[i], "LIMIT") && i + 1 < args.len() {
            // Not a number is "negative" too, in Redis's words.
            match int_arg(&args[i + 1]) {
                Ok(n) if n >= 0 => limit = usize::try_from(n).unwrap_or(usize::MAX),
                _ => parsed = Err(CmdError::Static("ERR LIMIT can't be negative")),
            }
            i += 2;
        } else {
            parsed = Err(CmdError::Syntax);
            break;
        }
    }
    parsed?;
    let weights = vec![1.0; keys.len()];
    let shared = combine(&sources, &weights, Aggregate::Sum, SetOp::Inter).len();
    let count = if limit > 0 { shared.min(limit) } else { shared };
    ctx.out().int(count as i64);
    Ok(())
}

/// `[WEIGHTS w...] [AGGREGATE SUM|MIN|MAX]` from `args[from..]` (neither
/// for ZDIFFSTORE).
fn store_options(
    args: &Args,
    from: usize,
    numkeys: usize,
    op: SetOp,
    replied: bool,
) -> Result<(Vec<f64>, Aggregate, bool), CmdError> {
    let mut weights = vec![1.0; numkeys];
    let mut aggregate = Aggregate::Sum;
    let mut with_scores = false;
    let mut i = from;
    while i < args.len() {
        let left = args.len() - i - 1;
        if replied && is(&args[i], "WITHSCORES") {
            with_scores = true;
            i += 1;
            continue;
        }
        if op != SetOp::Diff && is(&args[i], "WEIGHTS") && left >= numkeys {
            for (w, arg) in weights.iter_mut().zip(args.iter().skip(i + 1)) {
                *w = float_arg(arg)
                    .map_err(|_| CmdError::Static("ERR weight value is not a float"))?;
            }
            i += numkeys + 1;
        } else if op != SetOp::Diff && is(&args[i], "AGGREGATE") && left >= 1 {
            aggregate = match &args[i + 1] {
                a if is(a, "SUM") => Aggregate::Sum,
                a if is(a, "MIN") => Aggregate::Min,
                a if is(a, "MAX") => Aggregate::Max,
                _ => return Err(CmdError::Syntax),
            };
            i += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    Ok((weights, aggregate, with_scores))
}

/// A member borrowed where the value holds it whole.
fn cow(member: Item<'_>) -> Cow<'_, [u8]> {
    match member {
        Item::Str(&[], whole) => Cow::Borrowed(whole),
        other => Cow::Owned(other.to_vec()),
    }
}

/// The combined sorted set (a missing source is empty).
fn combine<'a>(
    sources: &[Option<Source<'a>>],
    weights: &[f64],
    aggregate: Aggregate,
    op: SetOp,
) -> ZSet {
    let weigh = |score: f64, w: f64| Some(score * w).filter(|s| !s.is_nan()).unwrap_or(0.0);
    let mut scores: HashMap<Cow<'a, [u8]>, f64> = HashMap::new();
    // Union and intersection take the sources smallest first, each with
    // its weight, as Redis sorts them (stably): scores add up in Redis's
    // order, so sums agree to the last bit.
    let mut order: Vec<usize> = (0..sources.len()).collect();
    order.sort_by_key(|&i| sources[i].as_ref().map_or(0, Source::len));
    let sorted = || order.iter().map(|&i| (&sources[i], weights[i]));
    match op {
        SetOp::Union => {
            for (source, w) in sorted() {
                let Some(source) = source else { continue };
                source.each(|member, score| {
                    let score = weigh(score, w);
                    scores
                        .entry(member)
                        .and_modify(|acc| *acc = aggregate.apply(*acc, score))
                        .or_insert(score);
                });
            }
        }
        SetOp::Inter => {
            if let Some(all) = sorted()
                .map(|(source, w)| source.as_ref().map(|s| (s, w)))
                .collect::<Option<Vec<_>>>()
            {
                // Walk the smallest source, probe the others in order.
                all[0].0.each(|member, _| {
                    let mut acc = None;
                    for &(source, w) in &all {
                        let Some(score) = source.score(&member) else {
                            return;
                        };
                        let score = weigh(score, w);
                        acc = Some(acc.map_or(score, |a| aggregate.apply(a, score)));
                    }
                    if let Some(score) = acc {
                        scores.insert(member, score);
                    }
                });
            }
        }
        SetOp::Diff => {
            if let Some(first) = &sources[0] {
                first.each(|member, score| {
                    let elsewhere = sources[1..]
                        .iter()
                        .flatten()
                        .any(|s| s.score(&member).is_some());
                    if !elsewhere {
                        scores.insert(member, score);
                    }
                });
            }
        }
    }
    let mut result = ZSet::Tree(Box::default());
    for (member, score) in scores {
        result.insert(&member, score, crate::value::ZLimits::DEFAULT);
    }
    result
}

fn zunionstore(ctx: &mut Ctx, args: Args) -> CmdResult {
    setop_generic(ctx, &args, SetOp::Union, true)
}

fn zinterstore(ctx: &mut Ctx, args: Args) -> CmdResult {
    setop_generic(ctx, &args, SetOp::Inter, true)
}

fn zdiffstore(ctx: &mut Ctx, args: Args) -> CmdResult {
    setop_generic(ctx, &args, SetOp::Diff, true)
}

fn zunion(ctx: &mut Ctx, args: Args) -> CmdResult {
    setop_generic(ctx, &args, SetOp::Union, false)
}

fn zinter(ctx: &mut Ctx, args: Args) -> CmdResult {
    setop_generic(ctx, &args, SetOp::Inter, false)
}

fn zdiff(ctx: &mut Ctx, args: Args) -> CmdResult {
    setop_generic(ctx, &args, SetOp::Diff, false)
}

// ---- Member expiry (lapse's, as the set family's; in `member_ttl`) -----

fn zexpire(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    ZSET_MEMBERS.expire(ctx, &args, now_ms, 1000)
}

fn zpexpire(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    ZSET_MEMBERS.expire(ctx, &args, now_ms, 1)
}

fn zexpireat(ctx: &mut Ctx, args: Args) -> CmdResult {
    ZSET_MEMBERS.expire(ctx, &args, 0, 1000)
}

fn zpexpireat(ctx: &mut Ctx, args: Args) -> CmdResult {
    ZSET_MEMBERS.expire(ctx, &args, 0, 1)
}

fn zttl(ctx: &mut Ctx, args: Args) -> CmdResult {
    ZSET_MEMBERS.ttl(ctx, &args, true, 1000)
}

fn zpttl(ctx: &mut Ctx, args: Args) -> CmdResult {
    ZSET_MEMBERS.ttl(ctx, &args, true, 1)
}

fn zexpiretime(ctx: &mut Ctx, args: Args) -> CmdResult {
    ZSET_MEMBERS.ttl(ctx, &args, false, 1000)
}

fn zpexpiretime(ctx: &mut Ctx, args: Args) -> CmdResult {
    ZSET_MEMBERS.ttl(ctx, &args, false, 1)
}

fn zpersist(ctx: &mut Ctx, args: Args) -> CmdResult {
    ZSET_MEMBERS.persist(ctx, &args)
}
