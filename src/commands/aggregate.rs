//! What the aggregate families (lists, hashes, sets, sorted sets) share:
//! typed access to a key with WRONGTYPE, creation on first write, deletion
//! of emptied aggregates, random picks for the *RANDMEMBER/SPOP family, and
//! the cursor loop of HSCAN/SSCAN/ZSCAN.

use std::collections::HashSet;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::{int_arg, is, CmdError, Ctx};
use crate::db::{EventClass, StrEncoding, Ttl};
use crate::dict::{Dict, DictEntry};
use crate::glob;
use crate::protocol::{Args, Reply};
use crate::value::packed::Item;
use crate::value::{Hash, HashRef, List, Set, SetRef, Stream, Value, ValueRef, ZSet, ZSetRef};

/// Writes an aggregate's element (packed or not) as a bulk string.
pub fn bulk(out: &mut Reply, item: Item<'_>) {
    item.with_bytes(|b| out.bulk(b));
}

/// An aggregate type and how commands read it: through a borrowed view
/// (`HashRef`...), which a small value kept inline in the keyspace can
/// give as well as an owned one.
pub trait Aggregate: 'static {
    type View<'a>: Copy;
    /// The owned value read as a borrowed one.
    fn borrowed(&self) -> Self::View<'_>;
}

impl Aggregate for Hash {
    type View<'a> = HashRef<'a>;
    fn borrowed(&self) -> HashRef<'_> {
        self.view()
    }
}
impl Aggregate for Set {
    type View<'a> = SetRef<'a>;
    fn borrowed(&self) -> SetRef<'_> {
        self.view()
    }
}
impl Aggregate for ZSet {
    type View<'a> = ZSetRef<'a>;
    fn borrowed(&self) -> ZSetRef<'_> {
        self.view()
    }
}
impl Aggregate for List {
    type View<'a> = &'a List;
    fn borrowed(&self) -> &List {
        self
    }
}
impl Aggregate for Stream {
    type View<'a> = &'a Stream;
    fn borrowed(&self) -> &Stream {
        self
    }
}

/// One aggregate type: how to recognise it in both borrowed forms and how
/// to make an empty one.
pub struct Kind<T: Aggregate> {
    pub get: for<'a> fn(ValueRef<'a>) -> Option<T::View<'a>>,
    pub get_mut: fn(&mut Value) -> Option<&mut T>,
    pub empty: fn() -> Value,
}

/// The value at `key` for reading: `Ok(None)` if absent, WRONGTYPE if it is
/// another type.
pub fn read<'a, T: Aggregate>(
    ctx: &'a mut Ctx,
    key: &[u8],
    kind: &Kind<T>,
) -> Result<Option<T::View<'a>>, CmdError> {
    let now_ms = ctx.now_ms;
    kind.of(ctx.db().get(key, now_ms))
}

impl<T: Aggregate> Kind<T> {
    /// A looked-up value as this type: `Ok(None)` if absent, WRONGTYPE if
    /// it is another type.
    pub fn of<'a>(&self, value: Option<ValueRef<'a>>) -> Result<Option<T::View<'a>>, CmdError> {
        match value {
            None => Ok(None),
            Some(v) => (self.get)(v).map(Some).ok_or(CmdError::WrongType),
        }
    }
}

/// The value at `key` as a command about to change it sees it (no read
/// statistics, no `keymiss`): `Ok(None)` if absent, WRONGTYPE if it is
/// another type.
pub fn read_for_write<'a, T: Aggregate>(
    ctx: &'a mut Ctx,
    key: &[u8],
    kind: &Kind<T>,
) -> Result<Option<T::View<'a>>, CmdError> {
    let now_ms = ctx.now_ms;
    kind.of(ctx.db().get_for_write(key, now_ms))
}

/// The value at `key` for changing in place: `Ok(None)` if absent.
pub fn write<'a, T: Aggregate>(
    ctx: &'a mut Ctx,
    key: &[u8],
    kind: &Kind<T>,
) -> Result<Option<&'a mut T>, CmdError> {
    let now_ms = ctx.now_ms;
    match ctx.db().value_mut(key, now_ms) {
        None => Ok(None),
        Some(Some(v)) => (kind.get_mut)(v).map(Some).ok_or(CmdError::WrongType),
        // An inline value is always a string.
        Some(None) => Err(CmdError::WrongType),
    }
}

/// The value at `key` for changing, created empty (without a TTL) if absent.
/// A created value left empty must be removed with `delete_if_empty`.
pub fn write_or_create<'a, T: Aggregate>(
    ctx: &'a mut Ctx,
    key: &[u8],
    kind: &Kind<T>,
) -> Result<&'a mut T, CmdError> {
    write_or_create_with(ctx, key, kind, kind.empty)
}

/// `write_or_create`, creating the value with `empty` (for a type whose
/// first form depends on what is about to be added).
pub fn write_or_create_with<'a, T: Aggregate>(
    ctx: &'a mut Ctx,
    key: &[u8],
    kind: &Kind<T>,
    empty: impl FnOnce() -> Value,
) -> Result<&'a mut T, CmdError> {
    if read_for_write(ctx, key, kind)?.is_none() {
        let now_ms = ctx.now_ms;
        ctx.db().set(key, empty(), Ttl::Clear, now_ms);
    }
    write(ctx, key, kind)?.ok_or(CmdError::WrongType)
}

/// Deletes `key` if it holds an aggregate with no elements left (Redis
/// never keeps empty aggregates), with the `del` event.
pub fn delete_if_empty(ctx: &mut Ctx, key: &[u8]) {
    let now_ms = ctx.now_ms;
    let db = ctx.db();
    if let Some(v) = db.get_for_write(key, now_ms) {
        if v.is_empty_aggregate() {
            db.delete(key, now_ms, false);
            db.signal(EventClass::GENERIC, "del", key);
        }
    }
}

/// The STORE forms' write (SINTERSTORE, ZUNIONSTORE, BITOP, SORT ...
/// STORE): `result` replaces `key` whatever it held, its TTL cleared, with
/// `event`; no result (an empty one: Redis never keeps empty aggregates)
/// deletes `key`, with `del` if it existed.
pub fn store_result(
    ctx: &mut Ctx,
    key: &[u8],
    result: Option<Value>,
    encoding: StrEncoding,
    (class, event): (EventClass, &'static str),
) {
    let now_ms = ctx.now_ms;
    let db = ctx.db();
    match result {
        Some(value) => {
            db.set_generic(key, value, Ttl::Clear, encoding, now_ms);
            db.signal(class, event, key);
        }
        None => {
            if db.delete(key, now_ms, false) {
                db.signal(EventClass::GENERIC, "del", key);
            }
        }
    }
}

/// A value borrowed for a reply built from it: the typed value at a key
/// (`None` if absent), the client's reply, and the server's RNG.
pub struct View<'a, T: Aggregate> {
    pub value: Option<T::View<'a>>,
    pub out: &'a mut Reply,
    pub rng: &'a mut SmallRng,
    /// Pending reply bytes past which this client is cut off.
    reply_cap: usize,
    close_after_reply: &'a mut bool,
}

/// The value at `key` with the reply and RNG borrowed beside it (WRONGTYPE
/// if it is another type).
pub fn view<'a, T: Aggregate>(
    ctx: &'a mut Ctx,
    key: &[u8],
    kind: &Kind<T>,
) -> Result<View<'a, T>, CmdError> {
    let now_ms = ctx.now_ms;
    let server = &mut *ctx.server;
    let session = &mut *ctx.session;
    let value = kind.of(server.dbs[session.db].get(key, now_ms))?;
    let hard = server.config.output_limit_normal.hard_bytes;
    let reply_cap = match usize::try_from(hard) {
        Ok(0) | Err(_) => REPLY_CEILING_BYTES,
        Ok(n) => n.min(REPLY_CEILING_BYTES),
    };
    Ok(View {
        value,
        out: &mut session.reply,
        rng: &mut server.rng,
        reply_cap,
        close_after_reply: &mut session.close_after_reply,
    })
}

/// The most one reply may grow to when no hard output limit is set.
const REPLY_CEILING_BYTES: usize = 1 << 30;

impl<T: Aggregate> View<'_, T> {
    /// Whether the reply being built is past what this client may hold (the
    /// normal hard output limit, or `REPLY_CEILING_BYTES` without one). A
    /// handler whose reply size the client chooses (SRANDMEMBER with a huge
    /// negative count) stops there: the unsent reply is dropped and the
    /// client closed, so memory stays bounded and no client ever reads a
    /// truncated reply as a whole one.
    pub fn reply_overflows(&mut self) -> bool {
        let over = self.out.pending() > self.reply_cap;
        if over {
            self.out.buf.truncate(self.out.sent);
            *self.close_after_reply = true;
        }
        over
    }
}

/// `[count [flag]]` of SRANDMEMBER (no flag), HRANDFIELD (WITHVALUES) and
/// ZRANDMEMBER (WITHSCORES), checked in Redis's order: the count (never
/// `i64::MIN`), then the syntax, then, with the flag, a count whose doubled
/// reply would overflow. `None` without a count; the flag's presence.
pub fn rand_args(args: &Args, flag: Option<&str>) -> Result<Option<(i64, bool)>, CmdError> {
    if flag.is_none() && args.len() > 3 {
        return Err(CmdError::Syntax);
    }
    if args.len() < 3 {
        return Ok(None);
    }
    let n = int_arg(&args[2])?;
    if n == i64::MIN {
        return Err(CmdError::Static("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"));
    }
    let with = match flag {
        Some(f) if args.len() == 4 && is(&args[3], f) => true,
        _ if args.len() > 3 => return Err(CmdError::Syntax),
        _ => false,
    };
    if with && !(-(i64::MAX / 2)..=i64::MAX / 2).contains(&n) {
        return Err(CmdError::Static("ERR value is out of range"));
    }
    Ok(Some((n, with)))
}

/// Which elements (by dict index) a random pick of `count` from `len`
/// returns, as the *RANDMEMBER commands define it.
pub enum Picks {
    /// Every element, once (`count >= len`).
    All(usize),
    /// Distinct random elements.
    Distinct(Vec<u32>),
    /// This many independent picks, repeats allowed (negative count).
    Repeats(u64),
}

impl Picks {
    pub fn new(rng: &mut impl Rng, len: usize, count: i64) -> Picks {
        if count < 0 {
            Picks::Repeats(if len == 0 { 0 } else { count.unsigned_abs() })
        } else if count as u64 >= len as u64 {
            Picks::All(len)
        } else {
            Picks::Distinct(distinct_indices(rng, len, count as usize))
        }
    }

    /// How many elements the reply holds (`u64`: a repeat count can be huge).
    pub fn count(&self) -> u64 {
        match self {
            Picks::All(n) => *n as u64,
            Picks::Distinct(v) => v.len() as u64,
            Picks::Repeats(n) => *n,
        }
    }

    /// Calls `emit` with each picked index until it returns false.
    pub fn each(&self, rng: &mut impl Rng, len: usize, mut emit: impl FnMut(u32) -> bool) {
        match self {
            Picks::All(n) => {
                for i in 0..*n as u32 {
                    if !emit(i) {
                        return;
                    }
                }
            }
            Picks::Distinct(v) => {
                for &i in v {
                    if !emit(i) {
                        return;
                    }
                }
            }
            Picks::Repeats(n) => {
                for _ in 0..*n {
                    if !emit(rng.gen_range(0..len) as u32) {
                        return;
                    }
                }
            }
        }
    }
}

/// `count` distinct indices below `len` (`count < len`), in random order.
pub fn distinct_indices(rng: &mut impl Rng, len: usize, count: usize) -> Vec<u32> {
    if count.saturating_mul(3) > len {
        // Dense: a partial Fisher-Yates shuffle of every index.
        let mut all: Vec<u32> = (0..len as u32).collect();
        for i in 0..count {
            let j = rng.gen_range(i..len);
            all.swap(i, j);
        }
        all.truncate(count);
        return all;
    }
    let mut seen = HashSet::with_capacity(count);
    let mut picked = Vec::with_capacity(count);
    while picked.len() < count {
        let i = rng.gen_range(0..len) as u32;
        if seen.insert(i) {
            picked.push(i);
        }
    }
    picked
}

/// The optional count of LPOP/RPOP/SPOP/ZPOPMIN/ZPOPMAX (`key [count]`):
/// `None` without one; Redis's own message for a negative or bad count.
pub fn pop_count(args: &Args) -> Result<Option<i64>, CmdError> {
    if args.len() > 3 {
        return Err(CmdError::Syntax);
    }
    (args.len() == 3)
        .then(|| {
            int_arg(&args[2])
                .ok()
                .filter(|&n| n >= 0)
                .ok_or(CmdError::Static(
                    "ERR value is out of range, must be positive",
                ))
        })
        .transpose()
}

/// `numkeys key... <which> [COUNT n]` from `args[at]` (LMPOP, ZMPOP and
/// their blocking forms), checked in Redis's order: the keys, which of
/// `choices` (its index), the count (1 without one).
pub fn mpop_parse<'a>(
    args: &Args<'a>,
    at: usize,
    choices: [&str; 2],
) -> Result<(Vec<&'a [u8]>, usize, usize), CmdError> {
    let numkeys = int_arg(&args[at])
        .ok()
        .filter(|&n| n > 0)
        .ok_or(CmdError::Static("ERR numkeys should be greater than 0"))?;
    let which_at = usize::try_from(numkeys)
        .ok()
        .and_then(|n| n.checked_add(at + 1))
        .filter(|&w| w < args.len())
        .ok_or(CmdError::Syntax)?;
    let which = choices
        .iter()
        .position(|c| is(&args[which_at], c))
        .ok_or(CmdError::Syntax)?;
    let mut count = None;
    let mut i = which_at + 1;
    while i < args.len() {
        if count.is_none() && is(&args[i], "COUNT") && i + 1 < args.len() {
            let n = int_arg(&args[i + 1])
                .ok()
                .filter(|&n| n > 0)
                .ok_or(CmdError::Static("ERR count should be greater than 0"))?;
            count = Some(usize::try_from(n).unwrap_or(usize::MAX));
            i += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let keys = (at + 1..which_at).map(|i| args.get(i)).collect();
    Ok((keys, which, count.unwrap_or(1)))
}

/// Redis's index arithmetic for LRANGE, LTRIM, ZRANGE and ZREMRANGEBYRANK:
/// negative indices count from the end and the range is clamped. The
/// inclusive `(first, last)`, or `None` when it is empty.
pub fn index_range(len: i64, mut start: i64, mut stop: i64) -> Option<(usize, usize)> {
    if start < 0 {
        start = len.saturating_add(start).max(0);
    }
    if stop < 0 {
        stop = len.saturating_add(stop);
    }
    if start > stop || start >= len {
        return None;
    }
    Some((start as usize, stop.min(len - 1) as usize))
}

/// HSCAN/SSCAN/ZSCAN arguments: `key cursor [MATCH pattern] [COUNT n]`.
pub struct ScanArgs<'a> {
    pub cursor: u64,
    pub count: u64,
    pub pattern: Option<&'a [u8]>,
}

impl<'a> ScanArgs<'a> {
    /// Parses the cursor at `args[at]` and the options after it; `extra`
    /// is offered each other option name and its value (SCAN's TYPE).
    pub fn parse(
        args: &'a Args,
        at: usize,
        extra: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<Self, CmdError> {
        let cursor = parse_cursor(&args[at])?;
        Self::parse_options(args, at + 1, cursor, extra)
    }

    /// The options from `args[from]` on, for a cursor already parsed.
    pub fn parse_options(
        args: &'a Args,
        from: usize,
        cursor: u64,
        mut extra: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<Self, CmdError> {
        let mut opts = ScanArgs {
            cursor,
            count: 10,
            pattern: None,
        };
        let mut i = from;
        while i < args.len() {
            let Some(value) = (i + 1 < args.len()).then(|| args.get(i + 1)) else {
                return Err(CmdError::Syntax);
            };
            if is(&args[i], "COUNT") {
                opts.count = match int_arg(value)? {
                    n if n < 1 => return Err(CmdError::Syntax),
                    n => n as u64,
                };
            } else if is(&args[i], "MATCH") {
                opts.pattern = Some(value).filter(|p| *p != b"*");
            } else if !extra(&args[i], value) {
                return Err(CmdError::Syntax);
            }
            i += 2;
        }
        Ok(opts)
    }

    pub fn matches(&self, item: &[u8]) -> bool {
        self.pattern.is_none_or(|p| glob::matches(p, item, false))
    }

    /// Runs `step` (one bucket: pushes matching items, returns the next
    /// cursor) until `count` elements of `width` items each are found, the
    /// iteration ends, or, as in Redis, 10 × count buckets were visited so a
    /// sparse table cannot stall the loop. Returns the next cursor.
    pub fn collect(
        &self,
        width: usize,
        found: &mut Vec<Vec<u8>>,
        mut step: impl FnMut(u64, &mut Vec<Vec<u8>>) -> u64,
    ) -> u64 {
        let mut next = self.cursor;
        let mut budget = self.count.saturating_mul(10);
        loop {
            next = step(next, found);
            budget -= 1;
            if next == 0 || budget == 0 || (found.len() / width) as u64 >= self.count {
                return next;
            }
        }
    }
}

impl ScanArgs<'_> {
    /// HSCAN and SSCAN over a dict: `emit`
    /// pushes an entry's items if it matches. Returns the next cursor.
    pub fn scan_dict<E: DictEntry>(
        &self,
        dict: &Dict<E>,
        width: usize,
        found: &mut Vec<Vec<u8>>,
        mut emit: impl FnMut(&E, &mut Vec<Vec<u8>>),
    ) -> u64 {
        // A resize under way is walked as it is (see `Dict::scan_step`).
        self.collect(width, found, |cursor, found| {
            dict.scan_step(cursor, |i| emit(dict.entry(i), found))
        })
    }
}

/// A SCAN cursor as Redis's `parseScanCursorOrReply` reads it with
/// `strtoul`: the text up to a NUL, no leading space, an optional sign (a
/// negative cursor wraps around, as C's does), decimal digits, nothing
/// after them; the empty string is cursor 0; overflow is refused.
pub fn parse_cursor(arg: &[u8]) -> Result<u64, CmdError> {
    const INVALID: CmdError = CmdError::Static("ERR invalid cursor");
    let text = super::c_str(arg, usize::MAX);
    if text.is_empty() {
        return Ok(0);
    }
    let (negative, digits) = match text[0] {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(INVALID);
    }
    let mut value: u64 = 0;
    for &d in digits {
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d - b'0')))
            .ok_or(INVALID)?;
    }
    Ok(if negative {
        value.wrapping_neg()
    } else {
        value
    })
}

/// HSCAN/SSCAN/ZSCAN in Redis's order of checks: the cursor, then the key
/// (`None`: absent, answered with an empty scan; another type: WRONGTYPE),
/// then the options.
pub fn scan_target<'a, T: Aggregate>(
    ctx: &'a mut Ctx,
    args: &'a Args,
    kind: &Kind<T>,
) -> Result<Option<(T::View<'a>, ScanArgs<'a>)>, CmdError> {
    let cursor = parse_cursor(&args[2])?;
    let Some(value) = read(ctx, &args[1], kind)? else {
        return Ok(None);
    };
    let opts = ScanArgs::parse_options(args, 3, cursor, |_, _| false)?;
    Ok(Some((value, opts)))
}

/// The SCAN family's reply: the next cursor, then the items.
pub fn reply_scan(out: &mut Reply, next: u64, found: &[Vec<u8>]) {
    out.array(2);
    out.bulk(next.to_string().as_bytes());
    out.array(found.len());
    for item in found {
        out.bulk(item);
    }
}

macro_rules! kind {
    ($name:ident, $ty:ty, $variant:ident, $empty:expr) => {
        pub const $name: Kind<$ty> = Kind {
            get: |v| match v {
                ValueRef::$variant(x) => Some(x),
                _ => None,
            },
            get_mut: |v| match v {
                Value::$variant(x) => Some(x),
                _ => None,
            },
            empty: || Value::$variant($empty),
        };
    };
}

kind!(LIST, List, List, List::default());
kind!(HASH, Hash, Hash, Hash::default());
kind!(SET, Set, Set, Set::default());
kind!(ZSET, ZSet, ZSet, ZSet::default());
pub const STREAM: Kind<Stream> = Kind {
    get: |v| match v {
        ValueRef::Stream(x) => Some(x),
        _ => None,
    },
    get_mut: |v| match v {
        Value::Stream(x) => Some(x),
        _ => None,
    },
    empty: || Value::Stream(Box::default()),
};

/// The reply of SRANDMEMBER/HRANDFIELD/ZRANDMEMBER with a count: `emit`
/// writes one picked element (one item, or two with `pairs`: in RESP3 each
/// pair is an array of its own). Stops early if the client asked for more
/// than it may hold (see `View::reply_overflows`).
pub fn reply_picks<T: Aggregate>(
    view: &mut View<'_, T>,
    len: usize,
    count: i64,
    pairs: bool,
    mut emit: impl FnMut(&mut Reply, u32),
) {
    let picks = Picks::new(view.rng, len, count);
    let nested = pairs && view.out.resp3;
    let items = picks
        .count()
        .saturating_mul(if pairs && !nested { 2 } else { 1 });
    view.out.array(usize::try_from(items).unwrap_or(usize::MAX));
    let mut rng = SmallRng::from_rng(&mut *view.rng).unwrap_or_else(|_| SmallRng::seed_from_u64(0));
    let mut emitted: u32 = 0;
    picks.each(&mut rng, len, |i| {
        if nested {
            view.out.array(2);
        }
        emit(view.out, i);
        emitted = emitted.wrapping_add(1);
        // Checking every 1024 elements keeps the overshoot small.
        !emitted.is_multiple_of(1024) || !view.reply_overflows()
    });
}
