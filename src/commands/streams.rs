//! Stream commands (Redis's `t_stream.c`): XADD, XLEN, XRANGE, XREVRANGE,
//! XDEL, XTRIM, XSETID, XREAD (with BLOCK), XINFO STREAM and HELP. The
//! type is `value::stream`'s. Effects go out deterministic: auto IDs as
//! the IDs made, `~` trims as exact ones to the resulting length or ID.

use super::aggregate::{read, read_for_write, view, write, STREAM};
use super::blocking::{deadline_after, retrying, wait_for_keys};
use super::{c_str, int_arg, is, CmdError, CmdResult, Ctx, Handler};
use crate::db::{EventClass, Ttl};
use crate::protocol::request::parse_i64;
use crate::protocol::{Args, OwnedArgs, Reply};
use crate::value::stream::{Entry, Group, Pending, Stream, StreamId, Trim};
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
    ("xreadgroup", xreadgroup),
    ("xack", xack),
    ("xpending", xpending),
    ("xclaim", xclaim),
    ("xautoclaim", xautoclaim),
    ("xgroup|create", xgroup_create),
    ("xgroup|createconsumer", xgroup_createconsumer),
    ("xgroup|delconsumer", xgroup_delconsumer),
    ("xgroup|destroy", xgroup_destroy),
    ("xgroup|setid", xgroup_setid),
    ("xgroup|help", xgroup_help),
    ("xinfo|consumers", xinfo_consumers),
    ("xinfo|groups", xinfo_groups),
    ("xinfo|stream", xinfo_stream),
    ("xinfo|help", xinfo_help),
];

const BAD_ID: &str = "ERR Invalid stream ID specified as stream command argument";

/// Redis's `streamGenericParseIDOrReply`: `<ms>[-<seq>]`, `-` and `+`
/// (refused when `strict`), a missing seq being `missing_seq`; with
/// `seq_star`, `<ms>-*` gives `(id, false)` (the seq to be generated).
fn parse_id(
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
fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.first() == Some(&b'-') {
        return parse_i64(s).and_then(|n| u64::try_from(n).ok());
    }
    if s.is_empty() || s.len() > 20 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

fn strict_id(arg: &[u8]) -> Result<StreamId, CmdError> {
    parse_id(arg, 0, true, false).map(|(id, _)| id)
}

/// The IDs from `args[from..]`, all strict (XDEL, XACK).
fn strict_ids(args: &Args, from: usize) -> Result<Vec<StreamId>, CmdError> {
    args.iter().skip(from).map(strict_id).collect()
}

/// A range bound (`streamParseIntervalIDOrReply`): `(` makes it
/// exclusive (and strict).
fn interval_id(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool), CmdError> {
    if arg.len() > 1 && arg[0] == b'(' {
        let id = parse_id(&arg[1..], missing_seq, true, false)?.0;
        Ok((id, true))
    } else {
        Ok((parse_id(arg, missing_seq, false, false)?.0, false))
    }
}

/// XADD/XTRIM's options (`streamParseAddOrTrimArgsOrReply`).
#[derive(Default)]
struct AddTrim {
    trim: Option<Trim>,
    approx: bool,
    /// Where the MAXLEN/MINID value is (rewritten for `~`).
    trim_arg_at: usize,
    limit: u64,
    no_mkstream: bool,
    /// The ID argument's place and value (XADD): `None` for `*`; the flag
    /// is false for `<ms>-*`.
    id: Option<(StreamId, bool)>,
    id_at: usize,
}

fn parse_add_trim(ctx: &Ctx, args: &Args, xadd: bool) -> Result<AddTrim, CmdError> {
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
fn rewrite_trim(effect: &mut [Vec<u8>], o: &AddTrim, s: &Stream) {
    if o.approx {
        effect[o.trim_arg_at - 1] = b"=".to_vec();
        effect[o.trim_arg_at] = match o.trim {
            Some(Trim::MaxLen(_)) => s.len().to_string().into_bytes(),
            _ => s.edge_id(true).unwrap_or_default().to_text().into_bytes(),
        };
    }
}

fn xadd(ctx: &mut Ctx, args: Args) -> CmdResult {
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

fn xlen(ctx: &mut Ctx, args: Args) -> CmdResult {
    let len = read(ctx, &args[1], &STREAM)?.map_or(0, Stream::len);
    ctx.out().int(len as i64);
    Ok(())
}

/// One entry as replies write it: `[id, [field, value, ...]]`.
fn reply_entry(out: &mut Reply, e: &Entry) {
    out.array(2);
    out.bulk(e.id.to_text().as_bytes());
    out.array(e.fields.len());
    e.fields.iter().for_each(|f| out.bulk(f));
}

fn range_generic(ctx: &mut Ctx, args: &Args, rev: bool) -> CmdResult {
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

fn xrange(ctx: &mut Ctx, args: Args) -> CmdResult {
    range_generic(ctx, &args, false)
}

fn xrevrange(ctx: &mut Ctx, args: Args) -> CmdResult {
    range_generic(ctx, &args, true)
}

fn xdel(ctx: &mut Ctx, args: Args) -> CmdResult {
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

fn xtrim(ctx: &mut Ctx, args: Args) -> CmdResult {
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

fn xsetid(ctx: &mut Ctx, args: Args) -> CmdResult {
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
struct ReadOptions {
    block_deadline: Option<Option<i64>>,
    count: usize,
    /// Where the key list starts, and how many keys.
    streams_at: usize,
    nstreams: usize,
    /// XREADGROUP's GROUP: where the group name is (the consumer follows).
    group_at: Option<usize>,
    noack: bool,
}

fn parse_read(ctx: &Ctx, args: &Args) -> Result<ReadOptions, CmdError> {
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
fn reply_streams(out: &mut Reply, results: &[StreamResult<'_>]) {
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
type StreamResult<'a> = (&'a [u8], Vec<(StreamId, Option<Entry>)>);

/// BLOCK's timeout in milliseconds (`getTimeoutFromObjectOrReply` with
/// `UNIT_MILLISECONDS`): an integer; 0 waits forever.
fn timeout_ms_arg(arg: &[u8], now_ms: i64) -> Result<Option<i64>, CmdError> {
    let ms = parse_i64(arg).ok_or(CmdError::Static(
        "ERR timeout is not an integer or out of range",
    ))?;
    deadline_after(ms, now_ms)
}

/// XREAD's look at one of its keys: a woken XREAD finding another type
/// there waits on (Redis serves a blocked XREAD only from a stream); the
/// first look answers WRONGTYPE.
fn read_stream<'a>(ctx: &'a mut Ctx, key: &[u8]) -> Result<Option<&'a Stream>, CmdError> {
    let waking = retrying(ctx);
    match read(ctx, key, &STREAM) {
        Err(CmdError::WrongType) if waking => Ok(None),
        other => other,
    }
}

fn xread(ctx: &mut Ctx, args: Args) -> CmdResult {
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

fn xinfo_stream(ctx: &mut Ctx, args: Args) -> CmdResult {
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

fn xinfo_help(ctx: &mut Ctx, _args: Args) -> CmdResult {
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

/// Redis's NOGROUP errors, naming the key and group as `%s` prints them.
fn no_group(prefix: &str, key: &[u8], middle: &str, group: &[u8], suffix: &str) -> CmdError {
    let mut msg = format!("NOGROUP {prefix}").into_bytes();
    msg.extend_from_slice(c_str(key, usize::MAX));
    msg.extend_from_slice(middle.as_bytes());
    msg.extend_from_slice(c_str(group, usize::MAX));
    msg.extend_from_slice(suffix.as_bytes());
    CmdError::Owned(msg)
}

/// "No such key 'k' or consumer group 'g'" (XPENDING, XCLAIM...).
fn no_key_or_group(key: &[u8], group: &[u8]) -> CmdError {
    no_group("No such key '", key, "' or consumer group '", group, "'")
}

/// "No such consumer group 'g' for key name 'k'" (XGROUP, XINFO).
fn no_group_for_key(key: &[u8], group: &[u8]) -> CmdError {
    no_group(
        "No such consumer group '",
        group,
        "' for key name '",
        key,
        "'",
    )
}

/// The consumer `name` of `group`, created if absent; its seen time
/// refreshed (`streamLookupConsumer`). Whether it was created.
fn consumer_of(group: &mut Group, name: &[u8], now_ms: i64) -> bool {
    let created = !group.consumers.contains_key(name);
    let consumer = group.consumers.entry(name.to_vec()).or_default();
    consumer.seen_time_ms = now_ms;
    created
}

/// The XCLAIM that reproduces a delivery or claim on replicas
/// (`streamPropagateXCLAIM`).
fn xclaim_effect(
    key: &[u8],
    group_name: &[u8],
    group: &Group,
    id: StreamId,
    p: &Pending,
) -> Vec<Vec<u8>> {
    vec![
        b"XCLAIM".to_vec(),
        key.to_vec(),
        group_name.to_vec(),
        p.consumer.clone(),
        b"0".to_vec(),
        id.to_text().into_bytes(),
        b"TIME".to_vec(),
        p.delivery_time_ms.to_string().into_bytes(),
        b"RETRYCOUNT".to_vec(),
        p.delivery_count.to_string().into_bytes(),
        b"FORCE".to_vec(),
        b"JUSTID".to_vec(),
        b"LASTID".to_vec(),
        group.last_id.to_text().into_bytes(),
    ]
}

/// XGROUP SETID's effect carrying the group's position
/// (`streamPropagateGroupID`).
fn setid_effect(key: &[u8], group_name: &[u8], group: &Group) -> Vec<Vec<u8>> {
    let read = group
        .entries_read
        .map_or("-1".to_string(), |n| n.to_string());
    vec![
        b"XGROUP".to_vec(),
        b"SETID".to_vec(),
        key.to_vec(),
        group_name.to_vec(),
        group.last_id.to_text().into_bytes(),
        b"ENTRIESREAD".to_vec(),
        read.into_bytes(),
    ]
}

/// Sends `effects` instead of the command itself (nothing if none:
/// consumer group commands propagate only what they did).
fn emit(ctx: &mut Ctx, effects: Vec<Vec<Vec<u8>>>) {
    ctx.server.propagate.suppress();
    for e in effects {
        let refs: Vec<&[u8]> = e.iter().map(Vec::as_slice).collect();
        ctx.propagate_as(&refs);
    }
}

/// Where a delivery goes and how (XREADGROUP's GROUP and options).
struct Delivery<'a> {
    key: &'a [u8],
    group: &'a [u8],
    consumer: &'a [u8],
    count: usize,
    noack: bool,
    now_ms: i64,
    /// Whether anything consumes effects (else none are built).
    propagating: bool,
}

/// Delivers new entries after the group's last ID to the consumer
/// (`streamReplyWithRange` with a group): the group moves on, each entry
/// goes pending (unless NOACK), and the effects to propagate are added.
fn deliver_new(
    s: &mut Stream,
    d: &Delivery,
    effects: &mut Vec<Vec<Vec<u8>>>,
) -> Vec<(StreamId, Option<Entry>)> {
    let Some(start) = s.groups.get(d.group).and_then(|g| g.last_id.incr()) else {
        return Vec::new();
    };
    let entries = s.range(start, StreamId::MAX, false, d.count);
    let mut moved = false;
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        let id = e.id;
        let (estimate, tombstones, added) = (
            s.distance_from_first(id),
            s.has_tombstones(id, None),
            s.entries_added,
        );
        let Some(group) = s.groups.get_mut(d.group) else {
            break;
        };
        if id > group.last_id {
            group.entries_read = match group.entries_read {
                Some(n) if !tombstones => Some(n + 1),
                _ if added > 0 => estimate,
                read => read,
            };
            group.last_id = id;
            moved = true;
        }
        if !d.noack {
            if let Some(old) = group.pending.get(&id) {
                let previous = old.consumer.clone();
                if let Some(c) = group.consumers.get_mut(&previous) {
                    c.pending.remove(&id);
                }
            }
            let p = Pending {
                consumer: d.consumer.to_vec(),
                delivery_time_ms: d.now_ms,
                delivery_count: 1,
            };
            if d.propagating {
                effects.push(xclaim_effect(d.key, d.group, group, id, &p));
            }
            group.pending.insert(id, p);
            if let Some(c) = group.consumers.get_mut(d.consumer) {
                c.pending.insert(id);
            }
        }
        out.push((id, Some(e)));
    }
    if d.noack && moved {
        if let Some(group) = s.groups.get(d.group) {
            effects.push(setid_effect(d.key, d.group, group));
        }
    }
    out
}

/// The consumer's history from `start` (`streamReplyWithRangeFromConsumerPEL`):
/// its pending entries, each delivered once more (an entry deleted since
/// comes back as `[id, nil]`).
fn deliver_history(
    s: &mut Stream,
    d: &Delivery,
    start: StreamId,
) -> Vec<(StreamId, Option<Entry>)> {
    let take = if d.count == 0 { usize::MAX } else { d.count };
    let ids: Vec<StreamId> = s
        .groups
        .get(d.group)
        .and_then(|g| g.consumers.get(d.consumer))
        .map(|c| c.pending.range(start..).take(take).copied().collect())
        .unwrap_or_default();
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let entry = s.get(id);
        if entry.is_some() {
            if let Some(p) = s
                .groups
                .get_mut(d.group)
                .and_then(|g| g.pending.get_mut(&id))
            {
                p.delivery_time_ms = d.now_ms;
                p.delivery_count += 1;
            }
        }
        out.push((id, entry));
    }
    out
}

fn xreadgroup(ctx: &mut Ctx, args: Args) -> CmdResult {
    let o = parse_read(ctx, &args)?;
    let group_at = o.group_at.unwrap_or(0);
    let (group_name, consumer_name) = (args.get(group_at), args.get(group_at + 1));
    let keys: Vec<&[u8]> = args.iter().skip(o.streams_at).take(o.nstreams).collect();
    // Each stream's start: `>` (new entries, MAX) or a history ID.
    let mut from: Vec<StreamId> = Vec::with_capacity(o.nstreams);
    for (n, key) in keys.iter().enumerate() {
        let arg = &args[o.streams_at + o.nstreams + n];
        let waking = retrying(ctx);
        let s = match read(ctx, key, &STREAM) {
            // Woken while blocked: as Redis 7.0.15 serves a blocked group
            // reader, its stream gone (or replaced) or its group gone
            // ends the wait with an error of its own.
            Ok(None) | Err(_) if waking => {
                return Err(CmdError::Static(
                    "UNBLOCKED the stream key no longer exists",
                ))
            }
            Ok(Some(s)) if waking && !s.groups.contains_key(group_name) => {
                return Err(CmdError::Static(
                    "NOGROUP the consumer group this client was blocked on no longer exists",
                ));
            }
            found => found?,
        };
        if s.is_none_or(|s| !s.groups.contains_key(group_name)) {
            return Err(no_group(
                "No such key '",
                key,
                "' or consumer group '",
                group_name,
                "' in XREADGROUP with GROUP option",
            ));
        }
        if arg == b"$" {
            return Err(CmdError::Static("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."));
        }
        from.push(if arg == b">" {
            StreamId::MAX
        } else {
            strict_id(arg)?
        });
    }
    let now_ms = ctx.now_ms;
    let propagating = ctx.server.propagate.active();
    let mut effects: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut results: Vec<StreamResult<'_>> = Vec::new();
    for (key, &gt) in keys.iter().zip(&from) {
        let Some(s) = write(ctx, key, &STREAM)? else {
            continue;
        };
        let history = gt != StreamId::MAX;
        let last = s.groups.get(group_name).map(|g| g.last_id);
        // Nothing past the group's position when the last ID ever made is
        // not (the cheap test first: the top entry takes a node's decoding).
        let serve = history
            || last.is_some_and(|last| {
                s.last_id > last && s.edge_id(false).is_some_and(|top| top > last)
            });
        let Some(group) = s.groups.get_mut(group_name).filter(|_| serve) else {
            continue;
        };
        let created = consumer_of(group, consumer_name, now_ms);
        let d = Delivery {
            key,
            group: group_name,
            consumer: consumer_name,
            count: o.count,
            noack: o.noack,
            now_ms,
            propagating,
        };
        if created && o.noack {
            effects.push(vec![
                b"XGROUP".to_vec(),
                b"CREATECONSUMER".to_vec(),
                key.to_vec(),
                group_name.to_vec(),
                consumer_name.to_vec(),
            ]);
        }
        let entries = match gt.incr() {
            Some(start) if history => deliver_history(s, &d, start),
            _ => deliver_new(s, &d, &mut effects),
        };
        if created {
            ctx.signal(EventClass::STREAM, "xgroup-createconsumer", key);
        }
        ctx.db().mark_dirty();
        results.push((key, entries));
    }
    emit(ctx, effects);
    if !results.is_empty() {
        reply_streams(ctx.out(), &results);
        return Ok(());
    }
    let Some(deadline) = o.block_deadline else {
        ctx.out().null_array();
        return Ok(());
    };
    wait_for_keys(ctx, args, &keys, deadline);
    Ok(())
}

fn xack(ctx: &mut Ctx, args: Args) -> CmdResult {
    let exists = read(ctx, &args[1], &STREAM)?.is_some_and(|s| s.groups.contains_key(&args[2][..]));
    if !exists {
        ctx.out().int(0);
        return Ok(());
    }
    let ids = strict_ids(&args, 3)?;
    let s = write(ctx, &args[1], &STREAM)?.ok_or(CmdError::WrongType)?;
    let mut acked = 0;
    if let Some(group) = s.groups.get_mut(&args[2][..]) {
        acked = ids
            .into_iter()
            .filter(|&id| drop_pending(group, id).is_some())
            .count();
    }
    for _ in 0..acked {
        ctx.db().mark_dirty();
    }
    ctx.out().int(acked as i64);
    Ok(())
}

/// XPENDING's range form: IDLE, start, end, count, consumer.
struct PendingQuery<'a> {
    min_idle: i64,
    start: StreamId,
    end: StreamId,
    count: i64,
    consumer: Option<&'a [u8]>,
}

fn pending_query<'a>(args: &Args<'a>) -> Result<PendingQuery<'a>, CmdError> {
    let mut at = 3;
    let mut min_idle = 0;
    if is(&args[3], "idle") {
        min_idle = int_arg(&args[4])?;
        if args.len() < 8 {
            return Err(CmdError::Syntax);
        }
        at += 2;
    }
    let count = int_arg(&args[at + 2])?.max(0);
    let (start, ex) = interval_id(&args[at], 0)?;
    let start = if ex {
        start
            .incr()
            .ok_or(CmdError::Static("ERR invalid start ID for the interval"))?
    } else {
        start
    };
    let (end, ex) = interval_id(&args[at + 1], u64::MAX)?;
    let end = if ex {
        end.decr()
            .ok_or(CmdError::Static("ERR invalid end ID for the interval"))?
    } else {
        end
    };
    let consumer = (at + 3 < args.len()).then(|| args.get(at + 3));
    Ok(PendingQuery {
        min_idle,
        start,
        end,
        count,
        consumer,
    })
}

fn xpending(ctx: &mut Ctx, args: Args) -> CmdResult {
    let summary = args.len() == 3;
    if !summary && !(6..=9).contains(&args.len()) {
        return Err(CmdError::Syntax);
    }
    let query = if summary {
        None
    } else {
        Some(pending_query(&args)?)
    };
    let now_ms = ctx.now_ms;
    let s = read(ctx, &args[1], &STREAM)?;
    let Some(group) = s.and_then(|s| s.groups.get(&args[2][..])) else {
        return Err(no_key_or_group(&args[1], &args[2]));
    };
    let Some(q) = query else {
        let edges = group
            .pending
            .keys()
            .next()
            .zip(group.pending.keys().next_back());
        let edges = edges.map(|(a, b)| (*a, *b));
        let owners: Vec<(Vec<u8>, usize)> = group
            .consumers
            .iter()
            .filter(|(_, c)| !c.pending.is_empty())
            .map(|(n, c)| (n.clone(), c.pending.len()))
            .collect();
        let len = group.pending.len();
        let out = ctx.out();
        out.array(4);
        out.int(len as i64);
        match edges {
            Some((first, last)) => {
                out.bulk(first.to_text().as_bytes());
                out.bulk(last.to_text().as_bytes());
                out.array(owners.len());
                for (name, n) in owners {
                    out.array(2);
                    out.bulk(&name);
                    out.bulk(n.to_string().as_bytes());
                }
            }
            None => {
                out.null();
                out.null();
                out.null_array();
            }
        }
        return Ok(());
    };
    let ids: Vec<StreamId> = match q.consumer {
        Some(name) => match group.consumers.get(name) {
            Some(c) => c.pending.range(q.start..).copied().collect(),
            None => Vec::new(),
        },
        None => group.pending.range(q.start..).map(|(id, _)| *id).collect(),
    };
    let mut rows = Vec::new();
    let mut count = q.count;
    for id in ids {
        if count == 0 || id > q.end {
            break;
        }
        let Some(p) = group.pending.get(&id) else {
            continue;
        };
        if q.min_idle != 0 && now_ms.saturating_sub(p.delivery_time_ms) < q.min_idle {
            continue;
        }
        count -= 1;
        rows.push((
            id,
            p.consumer.clone(),
            now_ms.saturating_sub(p.delivery_time_ms).max(0),
            p.delivery_count,
        ));
    }
    let out = ctx.out();
    out.array(rows.len());
    for (id, consumer, idle, deliveries) in rows {
        out.array(4);
        out.bulk(id.to_text().as_bytes());
        out.bulk(&consumer);
        out.int(idle);
        out.int(deliveries as i64);
    }
    Ok(())
}

/// Hands pending entry `id` to `consumer` (XCLAIM, XAUTOCLAIM): moved
/// from its previous owner, delivery time set, count as given or bumped.
fn claim(
    group: &mut Group,
    id: StreamId,
    consumer: &[u8],
    time_ms: i64,
    retry: Option<u64>,
    bump: bool,
) -> Option<Pending> {
    let p = group.pending.get_mut(&id)?;
    if p.consumer != consumer {
        let previous = std::mem::replace(&mut p.consumer, consumer.to_vec());
        if let Some(c) = group.consumers.get_mut(&previous) {
            c.pending.remove(&id);
        }
    }
    p.delivery_time_ms = time_ms;
    match retry {
        Some(n) => p.delivery_count = n,
        None if bump => p.delivery_count += 1,
        None => {}
    }
    let p = p.clone();
    if let Some(c) = group.consumers.get_mut(consumer) {
        c.pending.insert(id);
    }
    Some(p)
}

/// Drops pending entry `id` from the group and its owner.
fn drop_pending(group: &mut Group, id: StreamId) -> Option<Pending> {
    let p = group.pending.remove(&id)?;
    if let Some(c) = group.consumers.get_mut(&p.consumer) {
        c.pending.remove(&id);
    }
    Some(p)
}

/// XCLAIM's options after the IDs.
struct ClaimOptions {
    force: bool,
    justid: bool,
    time_ms: i64,
    retry: Option<u64>,
    last_id: StreamId,
}

fn claim_options(args: &Args, mut j: usize, now_ms: i64) -> Result<ClaimOptions, CmdError> {
    let mut o = ClaimOptions {
        force: false,
        justid: false,
        time_ms: -1,
        retry: None,
        last_id: StreamId::MIN,
    };
    let int = |arg: &[u8], what: &'static str| parse_i64(arg).ok_or(CmdError::Static(what));
    let mut retry = -1;
    while j < args.len() {
        let more = args.len() - 1 - j;
        let opt = &args[j];
        if is(opt, "force") {
            o.force = true;
        } else if is(opt, "justid") {
            o.justid = true;
        } else if is(opt, "idle") && more > 0 {
            j += 1;
            o.time_ms = now_ms.saturating_sub(int(
                &args[j],
                "ERR Invalid IDLE option argument for XCLAIM",
            )?);
        } else if is(opt, "time") && more > 0 {
            j += 1;
            o.time_ms = int(&args[j], "ERR Invalid TIME option argument for XCLAIM")?;
        } else if is(opt, "retrycount") && more > 0 {
            j += 1;
            retry = int(
                &args[j],
                "ERR Invalid RETRYCOUNT option argument for XCLAIM",
            )?;
        } else if is(opt, "lastid") && more > 0 {
            j += 1;
            o.last_id = strict_id(&args[j])?;
        } else {
            return Err(CmdError::with_arg(
                "ERR Unrecognized XCLAIM option '",
                c_str(opt, usize::MAX),
                "'",
            ));
        }
        j += 1;
    }
    if !(0..=now_ms).contains(&o.time_ms) {
        o.time_ms = now_ms;
    }
    o.retry = u64::try_from(retry).ok();
    Ok(o)
}

fn xclaim(ctx: &mut Ctx, args: Args) -> CmdResult {
    let (key, group_name, consumer) = (&args[1], &args[2], &args[3]);
    if read(ctx, key, &STREAM)?.is_none_or(|s| !s.groups.contains_key(group_name)) {
        return Err(no_key_or_group(key, group_name));
    }
    let min_idle = parse_i64(&args[4])
        .ok_or(CmdError::Static(
            "ERR Invalid min-idle-time argument for XCLAIM",
        ))?
        .max(0);
    let ids: Vec<StreamId> = args
        .iter()
        .skip(5)
        .map_while(|a| parse_id(a, 0, true, false).ok().map(|(id, _)| id))
        .collect();
    let now_ms = ctx.now_ms;
    let o = claim_options(&args, 5 + ids.len(), now_ms)?;
    let s = write(ctx, key, &STREAM)?.ok_or(CmdError::WrongType)?;
    let found: Vec<Option<Entry>> = ids.iter().map(|&id| s.get(id)).collect();
    let Some(group) = s.groups.get_mut(group_name) else {
        return Err(no_key_or_group(key, group_name));
    };
    let mut propagate_last_id = false;
    if o.last_id > group.last_id {
        group.last_id = o.last_id;
        propagate_last_id = true;
    }
    let (mut effects, mut claimed, mut created) = (Vec::new(), Vec::new(), None);
    for (&id, entry) in ids.iter().zip(found) {
        let Some(entry) = entry else {
            // The entry is gone: so is its pending record.
            if let Some(p) = drop_pending(group, id) {
                effects.push(xclaim_effect(key, group_name, group, id, &p));
                propagate_last_id = false;
            }
            continue;
        };
        if o.force && !group.pending.contains_key(&id) {
            let p = Pending {
                consumer: Vec::new(),
                delivery_time_ms: now_ms,
                delivery_count: 1,
            };
            group.pending.insert(id, p);
        }
        let Some(p) = group.pending.get(&id) else {
            continue;
        };
        if !p.consumer.is_empty()
            && min_idle != 0
            && now_ms.saturating_sub(p.delivery_time_ms) < min_idle
        {
            continue;
        }
        if created.is_none() {
            created = Some(consumer_of(group, consumer, now_ms));
        }
        if let Some(p) = claim(group, id, consumer, o.time_ms, o.retry, !o.justid) {
            effects.push(xclaim_effect(key, group_name, group, id, &p));
        }
        propagate_last_id = false;
        claimed.push(entry);
    }
    if propagate_last_id {
        effects.push(setid_effect(key, group_name, group));
    }
    if created == Some(true) {
        ctx.signal(EventClass::STREAM, "xgroup-createconsumer", key);
    }
    for _ in 0..effects.len() {
        ctx.db().mark_dirty();
    }
    emit(ctx, effects);
    let out = ctx.out();
    out.array(claimed.len());
    for e in &claimed {
        if o.justid {
            out.bulk(e.id.to_text().as_bytes());
        } else {
            reply_entry(out, e);
        }
    }
    Ok(())
}

fn xautoclaim(ctx: &mut Ctx, args: Args) -> CmdResult {
    let (key, group_name, consumer) = (&args[1], &args[2], &args[3]);
    let min_idle = parse_i64(&args[4])
        .ok_or(CmdError::Static(
            "ERR Invalid min-idle-time argument for XAUTOCLAIM",
        ))?
        .max(0);
    let (start, ex) = interval_id(&args[5], 0)?;
    let start = if ex {
        start
            .incr()
            .ok_or(CmdError::Static("ERR invalid start ID for the interval"))?
    } else {
        start
    };
    let (mut count, mut justid) = (100i64, false);
    let mut j = 6;
    while j < args.len() {
        if is(&args[j], "count") && j + 1 < args.len() {
            let max = i64::MAX / 16;
            count = parse_i64(&args[j + 1])
                .filter(|n| (1..=max).contains(n))
                .ok_or(CmdError::Static("ERR COUNT must be > 0"))?;
            j += 1;
        } else if is(&args[j], "justid") {
            justid = true;
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    if read(ctx, key, &STREAM)?.is_none_or(|s| !s.groups.contains_key(group_name)) {
        return Err(no_key_or_group(key, group_name));
    }
    let now_ms = ctx.now_ms;
    let s = write(ctx, key, &STREAM)?.ok_or(CmdError::WrongType)?;
    let candidates: Vec<StreamId> = s
        .groups
        .get(group_name)
        .map(|g| g.pending.range(start..).map(|(id, _)| *id).collect())
        .unwrap_or_default();
    let mut attempts = count.saturating_mul(10);
    let (mut claimed, mut deleted, mut effects) = (Vec::new(), Vec::new(), Vec::new());
    // The last pending entry examined, when the scan stopped early.
    let mut stopped_after: Option<StreamId> = None;
    let mut created = false;
    let mut examined = None;
    for id in candidates {
        if attempts == 0 || count == 0 {
            stopped_after = examined;
            break;
        }
        attempts -= 1;
        examined = Some(id);
        let entry = s.get(id);
        let Some(group) = s.groups.get_mut(group_name) else {
            break;
        };
        let Some(entry) = entry else {
            if let Some(p) = drop_pending(group, id) {
                effects.push(xclaim_effect(key, group_name, group, id, &p));
            }
            deleted.push(id);
            count -= 1;
            continue;
        };
        let idle = group
            .pending
            .get(&id)
            .map_or(0, |p| now_ms.saturating_sub(p.delivery_time_ms));
        if min_idle != 0 && idle < min_idle {
            continue;
        }
        created |= consumer_of(group, consumer, now_ms);
        if let Some(p) = claim(group, id, consumer, now_ms, None, !justid) {
            effects.push(xclaim_effect(key, group_name, group, id, &p));
        }
        claimed.push(entry);
        count -= 1;
    }
    // The cursor: the next pending entry after the last one examined.
    let next = stopped_after
        .and_then(|last| {
            let g = s.groups.get(group_name)?;
            g.pending
                .range(last..)
                .map(|(id, _)| *id)
                .find(|id| *id > last)
        })
        .unwrap_or(StreamId::MIN);
    if created {
        ctx.signal(EventClass::STREAM, "xgroup-createconsumer", key);
    }
    for _ in 0..effects.len() {
        ctx.db().mark_dirty();
    }
    emit(ctx, effects);
    let out = ctx.out();
    out.array(3);
    out.bulk(next.to_text().as_bytes());
    out.array(claimed.len());
    for e in &claimed {
        if justid {
            out.bulk(e.id.to_text().as_bytes());
        } else {
            reply_entry(out, e);
        }
    }
    out.array(deleted.len());
    deleted
        .iter()
        .for_each(|id| out.bulk(id.to_text().as_bytes()));
    Ok(())
}

/// XGROUP's shared start (`xgroupCommand`): the options after the fourth
/// argument, the key's type, and the group's existence where needed.
/// Returns ENTRIESREAD (`None`: -1 or not given).
fn xgroup_prologue(ctx: &mut Ctx, args: &Args, needs_group: bool) -> Result<Option<u64>, CmdError> {
    let sub = &args[1];
    let (create, setid) = (is(sub, "create"), is(sub, "setid"));
    let (mut mkstream, mut entries_read) = (false, None);
    let mut i = 5;
    while i < args.len() {
        if create && is(&args[i], "mkstream") {
            mkstream = true;
            i += 1;
        } else if (create || setid) && is(&args[i], "entriesread") && i + 1 < args.len() {
            let n = int_arg(&args[i + 1])?;
            if n < 0 && n != -1 {
                return Err(CmdError::Static(
                    "ERR value for ENTRIESREAD must be positive or -1",
                ));
            }
            entries_read = u64::try_from(n).ok();
            i += 2;
        } else {
            return Err(CmdError::subcommand_syntax(args, "XGROUP"));
        }
    }
    let s = read_for_write(ctx, &args[2], &STREAM)?;
    if !mkstream {
        let Some(s) = s else {
            return Err(CmdError::Static("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."));
        };
        if needs_group && !s.groups.contains_key(&args[3][..]) {
            return Err(no_group_for_key(&args[2], &args[3]));
        }
    }
    Ok(entries_read)
}

fn xgroup_create(ctx: &mut Ctx, args: Args) -> CmdResult {
    let entries_read = xgroup_prologue(ctx, &args, false)?;
    if args.len() > 8 {
        return Err(CmdError::subcommand_syntax(&args, "XGROUP"));
    }
    let now_ms = ctx.now_ms;
    let last = read_for_write(ctx, &args[2], &STREAM)?.map(|s| s.last_id);
    let id = if &args[4][..] == b"$" {
        last.unwrap_or(StreamId::MIN)
    } else {
        strict_id(&args[4])?
    };
    if last.is_none() {
        ctx.db()
            .set(&args[2], Value::Stream(Box::default()), Ttl::Clear, now_ms);
    }
    let s = write(ctx, &args[2], &STREAM)?.ok_or(CmdError::WrongType)?;
    if s.groups.contains_key(&args[3][..]) {
        return Err(CmdError::Static(
            "BUSYGROUP Consumer Group name already exists",
        ));
    }
    let group = Group {
        last_id: id,
        entries_read,
        ..Group::default()
    };
    s.groups.insert(args[3].to_vec(), group);
    ctx.signal(EventClass::STREAM, "xgroup-create", &args[2]);
    ctx.out().ok();
    Ok(())
}

fn xgroup_setid(ctx: &mut Ctx, args: Args) -> CmdResult {
    let entries_read = xgroup_prologue(ctx, &args, true)?;
    if args.len() != 5 && args.len() != 7 {
        return Err(CmdError::subcommand_syntax(&args, "XGROUP"));
    }
    let s = write(ctx, &args[2], &STREAM)?.ok_or(CmdError::WrongType)?;
    let id = if &args[4][..] == b"$" {
        s.last_id
    } else {
        parse_id(&args[4], 0, false, false)?.0
    };
    if let Some(g) = s.groups.get_mut(&args[3][..]) {
        g.last_id = id;
        g.entries_read = entries_read;
    }
    ctx.signal(EventClass::STREAM, "xgroup-setid", &args[2]);
    ctx.out().ok();
    Ok(())
}

fn xgroup_destroy(ctx: &mut Ctx, args: Args) -> CmdResult {
    xgroup_prologue(ctx, &args, false)?;
    let s = write(ctx, &args[2], &STREAM)?.ok_or(CmdError::WrongType)?;
    let removed = s.groups.remove(&args[3][..]).is_some();
    if removed {
        ctx.signal(EventClass::STREAM, "xgroup-destroy", &args[2]);
    }
    ctx.out().int(i64::from(removed));
    Ok(())
}

fn xgroup_createconsumer(ctx: &mut Ctx, args: Args) -> CmdResult {
    xgroup_prologue(ctx, &args, true)?;
    let now_ms = ctx.now_ms;
    let s = write(ctx, &args[2], &STREAM)?.ok_or(CmdError::WrongType)?;
    let created = s
        .groups
        .get_mut(&args[3][..])
        .is_some_and(|g| consumer_of(g, &args[4], now_ms));
    if created {
        ctx.signal(EventClass::STREAM, "xgroup-createconsumer", &args[2]);
    }
    ctx.out().int(i64::from(created));
    Ok(())
}

fn xgroup_delconsumer(ctx: &mut Ctx, args: Args) -> CmdResult {
    xgroup_prologue(ctx, &args, true)?;
    let s = write(ctx, &args[2], &STREAM)?.ok_or(CmdError::WrongType)?;
    let mut pending = None;
    if let Some(g) = s.groups.get_mut(&args[3][..]) {
        if let Some(c) = g.consumers.remove(&args[4][..]) {
            for id in &c.pending {
                g.pending.remove(id);
            }
            pending = Some(c.pending.len());
        }
    }
    if pending.is_some() {
        ctx.signal(EventClass::STREAM, "xgroup-delconsumer", &args[2]);
    }
    ctx.out().int(pending.unwrap_or(0) as i64);
    Ok(())
}

fn xgroup_help(ctx: &mut Ctx, _args: Args) -> CmdResult {
    super::reply_help(
        ctx,
        "XGROUP",
        &[
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
        ],
    );
    Ok(())
}

fn xinfo_groups(ctx: &mut Ctx, args: Args) -> CmdResult {
    let s = read(ctx, &args[2], &STREAM)?.ok_or(CmdError::NoSuchKey)?;
    let rows: Vec<_> = s
        .groups
        .iter()
        .map(|(name, g)| {
            (
                name.clone(),
                g.consumers.len(),
                g.pending.len(),
                g.last_id,
                g.entries_read,
                s.lag(g),
            )
        })
        .collect();
    let out = ctx.out();
    out.array(rows.len());
    for (name, consumers, pending, last, read, lag) in rows {
        out.map(6);
        out.bulk(b"name");
        out.bulk(&name);
        out.bulk(b"consumers");
        out.int(consumers as i64);
        out.bulk(b"pending");
        out.int(pending as i64);
        out.bulk(b"last-delivered-id");
        out.bulk(last.to_text().as_bytes());
        reply_group_counters(out, read, lag);
    }
    Ok(())
}

/// `entries-read` and `lag` (null when unknown), as XINFO shows them.
fn reply_group_counters(out: &mut Reply, read: Option<u64>, lag: Option<i64>) {
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
fn reply_full_groups(out: &mut Reply, s: &Stream, count: usize) {
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

fn xinfo_consumers(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now_ms = ctx.now_ms;
    let s = read(ctx, &args[2], &STREAM)?.ok_or(CmdError::NoSuchKey)?;
    let Some(g) = s.groups.get(&args[3][..]) else {
        return Err(no_group_for_key(&args[2], &args[3]));
    };
    let rows: Vec<_> = g
        .consumers
        .iter()
        .map(|(name, c)| {
            (
                name.clone(),
                c.pending.len(),
                now_ms.saturating_sub(c.seen_time_ms).max(0),
            )
        })
        .collect();
    let out = ctx.out();
    out.array(rows.len());
    for (name, pending, idle) in rows {
        out.map(3);
        out.bulk(b"name");
        out.bulk(&name);
        out.bulk(b"pending");
        out.int(pending as i64);
        out.bulk(b"idle");
        out.int(idle);
    }
    Ok(())
}
