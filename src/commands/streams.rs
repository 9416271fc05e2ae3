//! Stream commands (Redis's `t_stream.c`): XADD, XLEN, XRANGE, XREVRANGE,
//! XDEL, XTRIM, XSETID, XREAD (with BLOCK), XINFO STREAM and HELP;
//! consumer groups are `stream_groups`'. The
//! type is `value::stream`'s. Effects go out deterministic: auto IDs as
//! the IDs made, `~` trims as exact ones to the resulting length or ID.

use super::aggregate::{read, read_for_write, view, write, STREAM};
use super::blocking::{deadline_after, retrying, wait_for_keys};
use super::{c_str, int_arg, is, CmdError, CmdResult, Ctx, Handler};
use crate::db::{EventClass, Ttl};
use crate::protocol::request::parse_i64;
use crate::protocol::{Args, OwnedArgs, Reply};
use crate::value::stream::{Entry, Stream, StreamId, Trim};
use crate::value::Value;

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[
    ("xadd", xadd),
    ("xlen", xlen),
    ("xrange", xrange),
    ("xrevrange", xrevrange),
    ("xdel", xdel),
    ("xtrim", xtrim),
    ("xsetid", xsetid),
    ("xread", xread),
    ("xinfo|stream", xinfo_stream),
    ("xinfo|help", xinfo_help),
];

pub(super) const BAD_ID: &str = "ERR Invalid stream ID specified as stream command argument";

/// Redis's `streamGenericParseIDOrReply`: `<ms>[-<seq>]`, `-` and `+`
/// (refused when `strict`), a missing seq being `missing_seq`; with
/// `seq_star`, `<ms>-*` gives `(id, false)` (the seq to be generated).
pub(super) fn parse_id(
    arg: &[u8],
    missing_seq: u64,
    strict: bool,
    seq_star: bool,
) -> Result<(StreamId, bool), CmdError> {
    let bad = || CmdError::Static(BAD_ID);
    if arg.len() > 127 {
        return Err(bad());
    }
    let text = c_str(arg, usize::MAX);
    match text {
        b"-" | b"+" if strict => return Err(bad()),
        b"-" => return Ok((StreamId::MIN, true)),
        b"+" => return Ok((StreamId::MAX, true)),
        _ => {}
    }
    let (ms, seq) = match text.iter().position(|&c| c == b'-') {
        Some(dash) => (&text[..dash], Some(&text[dash + 1..])),
        None => (text, None),
    };
    let ms = parse_u64(ms).ok_or_else(bad)?;
    match seq {
        None => Ok((StreamId::new(ms, missing_seq), true)),
        Some(b"*") if seq_star => Ok((StreamId::new(ms, 0), false)),
        Some(seq) => Ok((StreamId::new(ms, parse_u64(seq).ok_or_else(bad)?), true)),
    }
}

/// Redis's `string2ull`: digits only (a leading `-` goes through
/// `string2ll` and must be a valid non-negative... Redis takes the
/// signed path for text starting with `-`).
pub(super) fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.first() == Some(&b'-') {
        return parse_i64(s).and_then(|n| u64::try_from(n).ok());
    }
    if s.is_empty() || s.len() > 20 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

pub(super) fn strict_id(arg: &[u8]) -> Result<StreamId, CmdError> {
    parse_id(arg, 0, true, false).map(|(id, _)| id)
}

/// The IDs from `args[from..]`, all strict (XDEL, XACK).
pub(super) fn strict_ids(args: &Args, from: usize) -> Result<Vec<StreamId>, CmdError> {
    args.iter().skip(from).map(strict_id).collect()
}

/// A range bound (`streamParseIntervalIDOrReply`): `(` makes it
/// exclusive (and strict).
pub(super) fn interval_id(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool), CmdError> {
    if arg.len() > 1 && arg[0] == b'(' {
        let id = parse_id(&arg[1..], missing_seq, true, false)?.0;
        Ok((id, true))
    } else {
        Ok((parse_id(arg, missing_seq, false, false)?.0, false))
    }
}

/// XADD/XTRIM's options (`streamParseAddOrTrimArgsOrReply`).
#[derive(Default)]
pub(super) struct AddTrim {
    pub(super) trim: Option<Trim>,
    pub(super) approx: bool,
    /// Where the MAXLEN/MINID value is (rewritten for `~`).
    pub(super) trim_arg_at: usize,
    pub(super) limit: u64,
    pub(super) no_mkstream: bool,
    /// The ID argument's place and value (XADD): `None` for `*`; the flag
    /// is false for `<ms>-*`.
    pub(super) id: Option<(StreamId, bool)>,
    pub(super) id_at: usize,
}

pub(super) fn parse_add_trim(ctx: &Ctx, args: &Args, xadd: bool) -> Result<AddTrim, CmdError> {
    let mut o = AddTrim::default();
    let mut limit_given = false;
    let mut i = 2;
    while i < args.len() {
        let more = args.len() - 1 - i;
        let opt = &args[i];
        if xadd && opt == b"*" {
            o.id_at = i;
            break;
        } else if (is(opt, "maxlen") || is(opt, "minid")) && more > 0 {
            if o.trim.is_some() {
                return Err(CmdError::Static("ERR syntax error, MAXLEN and MINID options at the same time are not compatible"));
            }
            o.approx = false;
            let next = &args[i + 1];
            if more >= 2 && next == b"~" {
                o.approx = true;
                i += 1;
            } else if more >= 2 && next == b"=" {
                i += 1;
            }
            let value = &args[i + 1];
            o.trim = Some(if is(opt, "maxlen") {
                let n = int_arg(value)?;
                if n < 0 {
                    return Err(CmdError::Static("ERR The MAXLEN argument must be >= 0."));
                }
                Trim::MaxLen(n as u64)
            } else {
                Trim::MinId(strict_id(value)?)
            });
            i += 1;
            o.trim_arg_at = i;
        } else if is(opt, "limit") && more > 0 {
            let n = int_arg(&args[i + 1])?;
            if n < 0 {
                return Err(CmdError::Static("ERR The LIMIT argument must be >= 0."));
            }
            o.limit = n as u64;
            limit_given = true;
            i += 1;
        } else if xadd && is(opt, "nomkstream") {
            o.no_mkstream = true;
        } else if xadd {
            o.id = Some(parse_id(opt, 0, true, true)?);
            o.id_at = i;
            break;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if o.limit != 0 && o.trim.is_none() {
        return Err(CmdError::Static(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && o.trim.is_none() {
        return Err(CmdError::Static(
            "ERR syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    if ctx.obeys_client() {
        o.limit = 0;
    } else if limit_given {
        if !o.approx {
            return Err(CmdError::Static(
                "ERR syntax error, LIMIT cannot be used without the special ~ option",
            ));
        }
    } else if o.approx {
        let entries = ctx.server.config.stream_node_max_entries as u64;
        o.limit = entries.saturating_mul(100);
        if o.limit == 0 {
            o.limit = 10000;
        }
        o.limit = o.limit.min(1_000_000);
    } else {
        o.limit = 0;
    }
    Ok(o)
}

/// The stream's trim in the effect stream: `~` made `=`, the value the
/// resulting length or first ID (`streamRewriteTrimArgument`).
pub(super) fn rewrite_trim(effect: &mut [Vec<u8>], o: &AddTrim, s: &Stream) {
    if o.approx {
        effect[o.trim_arg_at - 1] = b"=".to_vec();
        effect[o.trim_arg_at] = match o.trim {
            Some(Trim::MaxLen(_)) => s.len().to_string().into_bytes(),
            _ => s.edge_id(true).unwrap_or_default().to_text().into_bytes(),
        };
    }
}

pub(super) fn xadd(ctx: &mut Ctx, args: Args) -> CmdResult {
    let o = parse_add_trim(ctx, &args, true)?;
    let fields_at = o.id_at + 1;
    let nfields = args.len().saturating_sub(fields_at);
    if o.id_at == 0 || nfields < 2 || !nfields.is_multiple_of(2) {
        return Err(CmdError::wrong_arity("xadd"));
    }
    if let Some((id, true)) = o.id {
        if id == StreamId::MIN {
            return Err(CmdError::Static(
                "ERR The ID specified in XADD must be greater than 0-0",
            ));
        }
    }
    let exists = read_for_write(ctx, &args[1], &STREAM)?.is_some();
    if !exists && o.no_mkstream {
        ctx.out().null();
        return Ok(());
    }
    let (max_bytes, max_entries) = (
        ctx.server.config.stream_node_max_bytes,
        ctx.server.config.stream_node_max_entries,
    );
    let propagating = ctx.server.propagate.active();
    let now_ms = ctx.now_ms;
    if !exists {
        ctx.db()
            .set(&args[1], Value::Stream(Box::default()), Ttl::Clear, now_ms);
    }
    let fields: Vec<&[u8]> = args.iter().skip(fields_at).collect();
    let s = write(ctx, &args[1], &STREAM)?.ok_or(CmdError::WrongType)?;
    if s.last_id == StreamId::MAX {
        return Err(CmdError::Static(
            "ERR The stream has exhausted the last possible ID, unable to add more items",
        ));
    }
    let id = match o.id {
        Some((id, true)) => Some(id),
        Some((id, false)) if id.ms == s.last_id.ms => s.last_id.incr().filter(|n| n.ms == id.ms),
        Some((id, false)) => Some(id),
        None if (now_ms as u64) > s.last_id.ms => Some(StreamId::new(now_ms as u64, 0)),
        None => s.last_id.incr(),
    };
    let total: usize = fields.iter().map(|f| f.len()).sum();
    let id = match id {
        Some(id) if id > s.last_id && total <= crate::value::stream::LISTPACK_MAX_SIZE => id,
        Some(_) if total > crate::value::stream::LISTPACK_MAX_SIZE => {
            return Err(CmdError::Static("ERR Elements are too large to be stored"))
        }
        _ => {
            // A fresh stream created for nothing is removed again.
            if !exists {
                ctx.db().delete(&args[1], now_ms, false);
            }
            return Err(CmdError::Static(
                "ERR The ID specified in XADD is equal or smaller than the target stream top item",
            ));
        }
    };
    s.append(id, &fields, max_bytes, max_entries);
    let trimmed = o.trim.map_or(0, |how| s.trim(how, o.approx, o.limit));
    // The effect (built only for a consumer of the stream): the ID made,
    // a `~` trim made exact.
    let effect = propagating.then(|| {
        let mut effect: Vec<Vec<u8>> = args.iter().map(<[u8]>::to_vec).collect();
        if o.trim.is_some() {
            rewrite_trim(&mut effect, &o, s);
        }
        if !matches!(o.id, Some((_, true))) {
            effect[o.id_at] = id.to_text().into_bytes();
        }
        effect
    });
    ctx.signal(EventClass::STREAM, "xadd", &args[1]);
    if trimmed > 0 {
        ctx.signal(EventClass::STREAM, "xtrim", &args[1]);
    }
    if let Some(effect) = effect {
        let refs: Vec<&[u8]> = effect.iter().map(Vec::as_slice).collect();
        ctx.propagate_as(&refs);
    }
    ctx.out().bulk(id.to_text().as_bytes());
    Ok(())
}

pub(super) fn xlen(ctx: &mut Ctx, args: Args) -> CmdResult {
    let len = read(ctx, &args[1], &STREAM)?.map_or(0, Stream::len);
    ctx.out().int(len as i64);
    Ok(())
}

/// One entry as replies write it: `[id, [field, value, ...]]`.
pub(super) fn reply_entry(out: &mut Reply, e: &Entry) {
    out.array(2);
    out.bulk(e.id.to_text().as_bytes());
    out.array(e.fields.len());
    e.fields.iter().for_each(|f| out.bulk(f));
}

pub(super) fn range_generic(ctx: &mut Ctx, args: &Args, rev: bool) -> CmdResult {
    let (start_arg, end_arg) = if rev {
        (&args[3], &args[2])
    } else {
        (&args[2], &args[3])
    };
    let (mut start, start_ex) = interval_id(start_arg, 0)?;
    if start_ex {
        start = start
            .incr()
            .ok_or(CmdError::Static("ERR invalid start ID for the interval"))?;
    }
    let (mut end, end_ex) = interval_id(end_arg, u64::MAX)?;
    if end_ex {
        end = end
            .decr()
            .ok_or(CmdError::Static("ERR invalid end ID for the interval"))?;
    }
    let mut count: i64 = -1;
    let mut j = 4;
    while j < args.len() {
        if is(&args[j], "count") && j + 1 < args.len() {
            count = int_arg(&args[j + 1])?.max(0);
            j += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let entries = match read(ctx, &args[1], &STREAM)? {
        // COUNT 0 (or below) is a null reply, an absent key an empty one.
        Some(_) if count == 0 => {
            ctx.out().null_array();
            return Ok(());
        }
        Some(s) => s.range(start, end, rev, count.max(0) as usize),
        None => Vec::new(),
    };
    let out = ctx.out();
    out.array(entries.len());
    entries.iter().for_each(|e| reply_entry(out, e));
    Ok(())
}

pub(super) fn xrange(ctx: &mut Ctx, args: Args) -> CmdResult {
    range_generic(ctx, &args, false)
}

pub(super) fn xrevrange(ctx: &mut Ctx, args: Args) -> CmdResult {
    range_generic(ctx, &args, true)
}

pub(super) fn xdel(ctx: &mut Ctx, args: Args) -> CmdResult {
    if read_for_write(ctx, &args[1], &STREAM)?.is_none() {
        ctx.out().int(0);
        return Ok(());
    }
    let ids = strict_ids(&args, 2)?;
    let s = write(ctx, &args[1], &STREAM)?.ok_or(CmdError::WrongType)?;
    let deleted = ids.into_iter().filter(|&id| s.delete(id)).count();
    if deleted > 0 {
        ctx.signal(EventClass::STREAM, "xdel", &args[1]);
    }
    ctx.out().int(deleted as i64);
    Ok(())
}

pub(super) fn xtrim(ctx: &mut Ctx, args: Args) -> CmdResult {
    let o = parse_add_trim(ctx, &args, false)?;
    let Some(s) = write(ctx, &args[1], &STREAM)? else {
        ctx.out().int(0);
        return Ok(());
    };
    let deleted = o.trim.map_or(0, |how| s.trim(how, o.approx, o.limit));
    if deleted > 0 {
        let mut effect: Vec<Vec<u8>> = args.iter().map(<[u8]>::to_vec).collect();
        rewrite_trim(&mut effect, &o, s);
        ctx.signal(EventClass::STREAM, "xtrim", &args[1]);
        let refs: Vec<&[u8]> = effect.iter().map(Vec::as_slice).collect();
        ctx.propagate_as(&refs);
    }
    ctx.out().int(deleted as i64);
    Ok(())
}

pub(super) fn xsetid(ctx: &mut Ctx, args: Args) -> CmdResult {
    let id = strict_id(&args[2])?;
    let (mut entries_added, mut max_deleted) = (None, StreamId::MIN);
    let mut i = 3;
    while i < args.len() {
        let more = args.len() - 1 - i;
        if is(&args[i], "entriesadded") && more > 0 {
            let n = int_arg(&args[i + 1])?;
            if n < 0 {
                return Err(CmdError::Static("ERR entries_added must be positive"));
            }
            entries_added = Some(n as u64);
        } else if is(&args[i], "maxdeletedid") && more > 0 {
            max_deleted = strict_id(&args[i + 1])?;
            if id < max_deleted {
                return Err(CmdError::Static("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"));
            }
        } else {
            return Err(CmdError::Syntax);
        }
        i += 2;
    }
    let s = write(ctx, &args[1], &STREAM)?.ok_or(CmdError::NoSuchKey)?;
    if !s.is_empty() {
        if s.edge_id(false).is_some_and(|top| id < top) {
            return Err(CmdError::Static(
                "ERR The ID specified in XSETID is smaller than the target stream top item",
            ));
        }
        if entries_added.is_some_and(|n| s.len() > n) {
            return Err(CmdError::Static("ERR The entries_added specified in XSETID is smaller than the target stream length"));
        }
    }
    s.last_id = id;
    if let Some(n) = entries_added {
        s.entries_added = n;
    }
    if max_deleted != StreamId::MIN {
        s.max_deleted_entry_id = max_deleted;
    }
    ctx.signal(EventClass::STREAM, "xsetid", &args[1]);
    ctx.out().ok();
    Ok(())
}

/// XREAD's and XREADGROUP's options (`xreadCommand`'s parse).
pub(super) struct ReadOptions {
    pub(super) block_deadline: Option<Option<i64>>,
    pub(super) count: usize,
    /// Where the key list starts, and how many keys.
    pub(super) streams_at: usize,
    pub(super) nstreams: usize,
    /// XREADGROUP's GROUP: where the group name is (the consumer follows).
    pub(super) group_at: Option<usize>,
    pub(super) noack: bool,
}

pub(super) fn parse_read(ctx: &Ctx, args: &Args) -> Result<ReadOptions, CmdError> {
    let readgroup = args[0].len() == 10;
    let mut o = ReadOptions {
        block_deadline: None,
        count: 0,
        streams_at: 0,
        nstreams: 0,
        group_at: None,
        noack: false,
    };
    let mut i = 1;
    while i < args.len() {
        let more = args.len() - 1 - i;
        let opt = &args[i];
        if is(opt, "block") && more > 0 {
            if ctx.session.in_script {
                return Err(CmdError::owned(format!(
                    "ERR {} command is not allowed with BLOCK option from scripts",
                    String::from_utf8_lossy(&args[0])
                )));
            }
            i += 1;
            o.block_deadline = Some(timeout_ms_arg(&args[i], ctx.now_ms)?);
        } else if is(opt, "count") && more > 0 {
            i += 1;
            o.count = int_arg(&args[i])?.max(0) as usize;
        } else if is(opt, "streams") && more > 0 {
            o.streams_at = i + 1;
            let n = args.len() - o.streams_at;
            if !n.is_multiple_of(2) {
                return Err(CmdError::Static("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."));
            }
            o.nstreams = n / 2;
            break;
        } else if is(opt, "group") && more >= 2 {
            if !readgroup {
                return Err(CmdError::Static("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."));
            }
            o.group_at = Some(i + 1);
            i += 2;
        } else if is(opt, "noack") {
            if !readgroup {
                return Err(CmdError::Static("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."));
            }
            o.noack = true;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if o.streams_at == 0 {
        return Err(CmdError::Syntax);
    }
    if readgroup && o.group_at.is_none() {
        return Err(CmdError::Static("ERR Missing GROUP option for XREADGROUP"));
    }
    Ok(o)
}

/// XREAD's and XREADGROUP's reply: per stream served, its key and
/// entries (a map in RESP3); `None` entries are history entries since
/// deleted (`[id, nil]`).
pub(super) fn reply_streams(out: &mut Reply, results: &[StreamResult<'_>]) {
    if out.resp3 {
        out.map(results.len());
    } else {
        out.array(results.len());
    }
    for (key, entries) in results {
        if !out.resp3 {
            out.array(2);
        }
        out.bulk(key);
        out.array(entries.len());
        for (id, e) in entries {
            match e {
                Some(e) => reply_entry(out, e),
                None => {
                    out.array(2);
                    out.bulk(id.to_text().as_bytes());
                    out.null_array();
                }
            }
        }
    }
}

/// One stream's part of an XREAD/XREADGROUP reply.
pub(super) type StreamResult<'a> = (&'a [u8], Vec<(StreamId, Option<Entry>)>);

/// BLOCK's timeout in milliseconds (`getTimeoutFromObjectOrReply` with
/// `UNIT_MILLISECONDS`): an integer; 0 waits forever.
pub(super) fn timeout_ms_arg(arg: &[u8], now_ms: i64) -> Result<Option<i64>, CmdError> {
    let ms = parse_i64(arg).ok_or(CmdError::Static(
        "ERR timeout is not an integer or out of range",
    ))?;
    deadline_after(ms, now_ms)
}

/// XREAD's look at one of its keys: a woken XREAD finding another type
/// there waits on (Redis serves a blocked XREAD only from a stream); the
/// first look answers WRONGTYPE.
pub(super) fn read_stream<'a>(
    ctx: &'a mut Ctx,
    key: &[u8],
) -> Result<Option<&'a Stream>, CmdError> {
    let waking = retrying(ctx);
    match read(ctx, key, &STREAM) {
        Err(CmdError::WrongType) if waking => Ok(None),
        other => other,
    }
}

pub(super) fn xread(ctx: &mut Ctx, args: Args) -> CmdResult {
    let o = parse_read(ctx, &args)?;
    let keys: Vec<&[u8]> = args.iter().skip(o.streams_at).take(o.nstreams).collect();
    let mut after: Vec<StreamId> = Vec::with_capacity(o.nstreams);
    for (n, key) in keys.iter().enumerate() {
        let arg = &args[o.streams_at + o.nstreams + n];
        let s = read_stream(ctx, key)?;
        if arg == b"$" {
            after.push(s.map_or(StreamId::MIN, |s| s.last_id));
            continue;
        }
        if arg == b">" {
            return Err(CmdError::Static("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."));
        }
        after.push(strict_id(arg)?);
    }
    let mut results: Vec<StreamResult<'_>> = Vec::new();
    for (key, &gt) in keys.iter().zip(&after) {
        let Some(s) = read_stream(ctx, key)? else {
            continue;
        };
        if s.is_empty() || s.edge_id(false).is_none_or(|top| top <= gt) {
            continue;
        }
        let Some(start) = gt.incr() else {
            continue;
        };
        let entries = s.range(start, StreamId::MAX, false, o.count);
        results.push((key, entries.into_iter().map(|e| (e.id, Some(e))).collect()));
    }
    if !results.is_empty() {
        reply_streams(ctx.out(), &results);
        return Ok(());
    }
    let Some(deadline) = o.block_deadline else {
        ctx.out().null_array();
        return Ok(());
    };
    // Waiting: `$` becomes the ID it stood for, so that a retry reads
    // only what came after the block began.
    let mut retry = OwnedArgs::default();
    for (n, a) in args.iter().enumerate() {
        if n >= o.streams_at + o.nstreams {
            retry.push(after[n - o.streams_at - o.nstreams].to_text().as_bytes());
        } else {
            retry.push(a);
        }
    }
    wait_for_keys(ctx, retry.as_args(), &keys, deadline);
    Ok(())
}

pub(super) fn xinfo_stream(ctx: &mut Ctx, args: Args) -> CmdResult {
    // The key is looked up before the options are read, as in Redis.
    let view = view(ctx, &args[2], &STREAM)?;
    let s = view.value.ok_or(CmdError::NoSuchKey)?;
    let full = match args.len() {
        3 => None,
        4 | 6 if is(&args[3], "full") => {
            if args.len() == 6 && !is(&args[4], "count") {
                return Err(CmdError::subcommand_syntax(&args, "XINFO"));
            }
            let count = if args.len() == 6 {
                int_arg(&args[5])?
            } else {
                10
            };
            Some(if count < 0 { 10 } else { count as usize })
        }
        _ => return Err(CmdError::subcommand_syntax(&args, "XINFO")),
    };
    let out = view.out;
    out.map(if full.is_some() { 9 } else { 10 });
    out.bulk(b"length");
    out.int(s.len() as i64);
    out.bulk(b"radix-tree-keys");
    out.int(s.node_count() as i64);
    // (Redis counts its radix tree's inner nodes: an estimate here.)
    out.bulk(b"radix-tree-nodes");
    out.int(s.node_count() as i64 + 1);
    for (name, id) in [
        ("last-generated-id", s.last_id),
        ("max-deleted-entry-id", s.max_deleted_entry_id),
    ] {
        out.bulk(name.as_bytes());
        out.bulk(id.to_text().as_bytes());
    }
    out.bulk(b"entries-added");
    out.int(s.entries_added as i64);
    out.bulk(b"recorded-first-entry-id");
    out.bulk(s.first_id.to_text().as_bytes());
    match full {
        None => {
            out.bulk(b"groups");
            out.int(s.groups.len() as i64);
            for (name, rev) in [("first-entry", false), ("last-entry", true)] {
                out.bulk(name.as_bytes());
                match s.range(StreamId::MIN, StreamId::MAX, rev, 1).first() {
                    Some(e) => reply_entry(out, e),
                    None => out.null(),
                }
            }
        }
        Some(count) => {
            let entries = s.range(StreamId::MIN, StreamId::MAX, false, count);
            out.bulk(b"entries");
            out.array(entries.len());
            entries.iter().for_each(|e| reply_entry(out, e));
            out.bulk(b"groups");
            reply_full_groups(out, s, count);
        }
    }
    Ok(())
}

pub(super) fn xinfo_help(ctx: &mut Ctx, _args: Args) -> CmdResult {
    super::reply_help(
        ctx,
        "XINFO",
        &[
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
        ],
    );
    Ok(())
}

/// `entries-read` and `lag` (null when unknown), as XINFO shows them.
pub(super) fn reply_group_counters(out: &mut Reply, read: Option<u64>, lag: Option<i64>) {
    out.bulk(b"entries-read");
    match read {
        Some(n) => out.int(n as i64),
        None => out.null(),
    }
    out.bulk(b"lag");
    match lag {
        Some(n) => out.int(n),
        None => out.null(),
    }
}

/// XINFO STREAM FULL's groups: each with its pending entries and
/// consumers (at most `count` pending entries each; 0: all).
pub(super) fn reply_full_groups(out: &mut Reply, s: &Stream, count: usize) {
    let take = if count == 0 { usize::MAX } else { count };
    out.array(s.groups.len());
    for (name, g) in &s.groups {
        out.map(7);
        out.bulk(b"name");
        out.bulk(name);
        out.bulk(b"last-delivered-id");
        out.bulk(g.last_id.to_text().as_bytes());
        reply_group_counters(out, g.entries_read, s.lag(g));
        out.bulk(b"pel-count");
        out.int(g.pending.len() as i64);
        out.bulk(b"pending");
        let shown: Vec<_> = g.pending.iter().take(take).collect();
        out.array(shown.len());
        for (id, p) in shown {
            out.array(4);
            out.bulk(id.to_text().as_bytes());
            out.bulk(&p.consumer);
            out.int(p.delivery_time_ms);
            out.int(p.delivery_count as i64);
        }
        out.bulk(b"consumers");
        out.array(g.consumers.len());
        for (cname, c) in &g.consumers {
            out.map(4);
            out.bulk(b"name");
            out.bulk(cname);
            out.bulk(b"seen-time");
            out.int(c.seen_time_ms);
            out.bulk(b"pel-count");
            out.int(c.pending.len() as i64);
            out.bulk(b"pending");
            let shown: Vec<_> = c.pending.iter().take(take).collect();
            out.array(shown.len());
            for id in shown {
                let p = g.pending.get(id);
                out.array(3);
                out.bulk(id.to_text().as_bytes());
                out.int(p.map_or(0, |p| p.delivery_time_ms));
                out.int(p.map_or(0, |p| p.delivery_count as i64));
            }
        }
    }
}
