//! List commands: LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP, RPOP, LLEN, LRANGE,
//! LINDEX, LSET, LINSERT, LREM, LTRIM, LPOS, LMOVE, RPOPLPUSH.

use super::aggregate::{
    delete_if_empty, index_range, mpop_parse, pop_count, read, read_for_write, view, write,
    write_or_create, LIST,
};
use super::blocking::{self, timeout_arg, wait_for_keys};
use super::{int_arg, is, CmdError, CmdResult, Ctx, Handler};
use crate::db::EventClass;
use crate::protocol::Args;
use crate::value::list::{End, List};
use crate::value::Value;

/// The handlers of this family's commands, by full name (see
/// `command_table` for their entries).
pub(super) static HANDLERS: &[(&str, Handler)] = &[
    ("lpush", lpush),
    ("rpush", rpush),
    ("lpushx", lpushx),
    ("rpushx", rpushx),
    ("lpop", lpop),
    ("rpop", rpop),
    ("llen", llen),
    ("lrange", lrange),
    ("lindex", lindex),
    ("lset", lset),
    ("linsert", linsert),
    ("lrem", lrem),
    ("ltrim", ltrim),
    ("lpos", lpos),
    ("lmove", lmove),
    ("rpoplpush", rpoplpush),
    ("lmpop", lmpop),
    ("blpop", blpop),
    ("brpop", brpop),
    ("brpoplpush", brpoplpush),
    ("blmove", blmove),
    ("blmpop", blmpop),
];

/// The keyspace event of a push at `end` (`lpush`, `rpush`).
fn push_event(end: End) -> &'static str {
    match end {
        End::Left => "lpush",
        End::Right => "rpush",
    }
}

/// The keyspace event of a pop from `end` (`lpop`, `rpop`).
fn pop_event(end: End) -> &'static str {
    match end {
        End::Left => "lpop",
        End::Right => "rpop",
    }
}

/// Pushes `elems` in order at `end` of the list at `key`, creating the list
/// unless `only_existing`. Returns the new length (0 if nothing was created).
fn push_elems(
    ctx: &mut Ctx,
    key: &[u8],
    end: End,
    elems: &[&[u8]],
    only_existing: bool,
) -> Result<usize, CmdError> {
    if only_existing && read_for_write(ctx, key, &LIST)?.is_none() {
        return Ok(0);
    }
    let limits = ctx.server.config.list_limits();
    let list = write_or_create(ctx, key, &LIST)?;
    elems.iter().for_each(|e| list.push(end, e, limits));
    let len = list.len();
    ctx.signal(EventClass::LIST, push_event(end), key);
    Ok(len)
}

/// LPUSH/RPUSH/LPUSHX/RPUSHX: pushes every element in order; `only_existing`
/// for the X forms. Replies with the new length (0 if nothing was created).
fn push_generic(ctx: &mut Ctx, args: Args, end: End, only_existing: bool) -> CmdResult {
    let elems: Vec<&[u8]> = args.iter().skip(2).collect();
    let len = push_elems(ctx, &args[1], end, &elems, only_existing)?;
    ctx.out().int(len as i64);
    Ok(())
}

fn lpush(ctx: &mut Ctx, args: Args) -> CmdResult {
    push_generic(ctx, args, End::Left, false)
}

fn rpush(ctx: &mut Ctx, args: Args) -> CmdResult {
    push_generic(ctx, args, End::Right, false)
}

fn lpushx(ctx: &mut Ctx, args: Args) -> CmdResult {
    push_generic(ctx, args, End::Left, true)
}

fn rpushx(ctx: &mut Ctx, args: Args) -> CmdResult {
    push_generic(ctx, args, End::Right, true)
}

/// LPOP/RPOP [count]. An emptied list is deleted, as in Redis.
fn pop_generic(ctx: &mut Ctx, args: Args, end: End) -> CmdResult {
    // LPOP/RPOP take one optional argument: more is an arity error (SPOP
    // and ZPOPMIN call it a syntax error).
    if args.len() > 3 {
        return Err(CmdError::wrong_arity(match end {
            End::Left => "lpop",
            End::Right => "rpop",
        }));
    }
    let count = pop_count(&args)?;
    let want = count.map_or(1, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let Some((_, popped)) = pop_first(ctx, &[&args[1]], end, want)? else {
        match count {
            Some(_) => ctx.out().null_array(),
            None => ctx.out().null(),
        }
        return Ok(());
    };
    let out = ctx.out();
    match count {
        None => match popped.first() {
            Some(elem) => out.bulk(elem),
            None => out.null(),
        },
        Some(_) => {
            out.array(popped.len());
            for elem in &popped {
                out.bulk(elem);
            }
        }
    }
    Ok(())
}

fn lpop(ctx: &mut Ctx, args: Args) -> CmdResult {
    pop_generic(ctx, args, End::Left)
}

fn rpop(ctx: &mut Ctx, args: Args) -> CmdResult {
    pop_generic(ctx, args, End::Right)
}

fn llen(ctx: &mut Ctx, args: Args) -> CmdResult {
    let len = read(ctx, &args[1], &LIST)?.map_or(0, List::len);
    ctx.out().int(len as i64);
    Ok(())
}

fn lrange(ctx: &mut Ctx, args: Args) -> CmdResult {
    let start = int_arg(&args[2])?;
    let stop = int_arg(&args[3])?;
    let view = view(ctx, &args[1], &LIST)?;
    let range = view
        .value
        .and_then(|l| index_range(l.len() as i64, start, stop).map(|r| (l, r)));
    match range {
        None => view.out.array(0),
        Some((list, (from, to))) => {
            view.out.array(to - from + 1);
            for elem in list.iter_from(from).take(to - from + 1) {
                view.out.bulk(elem);
            }
        }
    }
    Ok(())
}

fn lindex(ctx: &mut Ctx, args: Args) -> CmdResult {
    // Redis looks the key up before it parses the index.
    let view = view(ctx, &args[1], &LIST)?;
    let Some(list) = view.value else {
        view.out.null();
        return Ok(());
    };
    let index = int_arg(&args[2])?;
    let elem = Some(list).and_then(|l| {
        let i = if index < 0 {
            (l.len() as i64).checked_add(index)?
        } else {
            index
        };
        usize::try_from(i).ok().and_then(|i| l.get(i))
    });
    match elem {
        Some(e) => view.out.bulk(e),
        None => view.out.null(),
    }
    Ok(())
}

fn lset(ctx: &mut Ctx, args: Args) -> CmdResult {
    let limits = ctx.server.config.list_limits();
    // Redis looks the key up before it parses the index.
    let list = write(ctx, &args[1], &LIST)?.ok_or(CmdError::NoSuchKey)?;
    let index = int_arg(&args[2])?;
    let i = if index < 0 {
        (list.len() as i64).checked_add(index)
    } else {
        Some(index)
    };
    let replaced = i
        .and_then(|i| usize::try_from(i).ok())
        .is_some_and(|i| list.set(i, &args[3], limits));
    if !replaced {
        return Err(CmdError::Static("ERR index out of range"));
    }
    ctx.signal(EventClass::LIST, "lset", &args[1]);
    ctx.out().ok();
    Ok(())
}

fn linsert(ctx: &mut Ctx, args: Args) -> CmdResult {
    let after = if is(&args[2], "AFTER") {
        true
    } else if is(&args[2], "BEFORE") {
        false
    } else {
        return Err(CmdError::Syntax);
    };
    let limits = ctx.server.config.list_limits();
    let reply = match write(ctx, &args[1], &LIST)? {
        None => 0,
        Some(list) => match list.iter().position(|e| e == &args[3]) {
            None => -1,
            Some(at) => {
                list.insert(at + usize::from(after), &args[4], limits);
                list.len() as i64
            }
        },
    };
    if reply > 0 {
        ctx.signal(EventClass::LIST, "linsert", &args[1]);
    }
    ctx.out().int(reply);
    Ok(())
}

fn lrem(ctx: &mut Ctx, args: Args) -> CmdResult {
    let count = int_arg(&args[2])?;
    let elem = &args[3];
    let limits = ctx.server.config.list_limits();
    let removed = match write(ctx, &args[1], &LIST)? {
        None => 0,
        Some(list) => {
            let limit = if count == 0 {
                usize::MAX
            } else {
                count.unsigned_abs() as usize
            };
            // A negative count removes from the tail.
            let from = if count < 0 { End::Right } else { End::Left };
            let mut removed = 0;
            list.retain(from, limits, |item| {
                let hit = removed < limit && item == elem;
                removed += usize::from(hit);
                !hit
            });
            removed
        }
    };
    if removed > 0 {
        ctx.signal(EventClass::LIST, "lrem", &args[1]);
    }
    delete_if_empty(ctx, &args[1]);
    ctx.out().int(removed as i64);
    Ok(())
}

fn ltrim(ctx: &mut Ctx, args: Args) -> CmdResult {
    let start = int_arg(&args[2])?;
    let stop = int_arg(&args[3])?;
    if let Some(list) = write(ctx, &args[1], &LIST)? {
        let dropped = list.trim(index_range(list.len() as i64, start, stop));
        // Thousands of dropped chunks are freed off the loop.
        if let Some(dropped) = dropped.map(Value::List) {
            if crate::value::effort::is_big(&dropped) {
                ctx.server.lazyfree.free_async(dropped);
            }
        }
        ctx.signal(EventClass::LIST, "ltrim", &args[1]);
    }
    delete_if_empty(ctx, &args[1]);
    ctx.out().ok();
    Ok(())
}

fn lpos(ctx: &mut Ctx, args: Args) -> CmdResult {
    let (mut rank, mut count, mut maxlen) = (1i64, None::<i64>, 0i64);
    let mut i = 3;
    while i < args.len() {
        let Some(value) = (i + 1 < args.len()).then(|| args.get(i + 1)) else {
            return Err(CmdError::Syntax);
        };
        if is(&args[i], "RANK") {
            rank = int_arg(value)?;
            if rank == 0 {
                return Err(CmdError::Static("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"));
            }
            if rank == i64::MIN {
                return Err(CmdError::Static("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"));
            }
        } else if is(&args[i], "COUNT") {
            // Like Redis, a COUNT or MAXLEN that is not a non-negative
            // integer gets the "can't be negative" message.
            let n = int_arg(value).ok().filter(|&n| n >= 0);
            count = Some(n.ok_or(CmdError::Static("ERR COUNT can't be negative"))?);
        } else if is(&args[i], "MAXLEN") {
            maxlen = int_arg(value)
                .ok()
                .filter(|&n| n >= 0)
                .ok_or(CmdError::Static("ERR MAXLEN can't be negative"))?;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 2;
    }
    let elem = &args[2];
    let matches: Vec<i64> = match read(ctx, &args[1], &LIST)? {
        None => Vec::new(),
        Some(list) => {
            let len = list.len();
            let want = match count {
                Some(0) => usize::MAX,
                Some(n) => n as usize,
                None => 1,
            };
            let scan = if maxlen == 0 {
                len
            } else {
                (maxlen as usize).min(len)
            };
            let mut skip = rank.unsigned_abs() - 1;
            let mut found = Vec::new();
            let walk: Box<dyn Iterator<Item = &[u8]>> = if rank > 0 {
                Box::new(list.iter())
            } else {
                Box::new(list.iter().rev())
            };
            for (step, item) in walk.take(scan).enumerate() {
                let at = if rank > 0 { step } else { len - 1 - step };
                if item == elem {
                    if skip > 0 {
                        skip -= 1;
                    } else {
                        found.push(at as i64);
                        if found.len() >= want {
                            break;
                        }
                    }
                }
            }
            found
        }
    };
    let out = ctx.out();
    match count {
        None => match matches.first() {
            Some(&at) => out.int(at),
            None => out.null(),
        },
        Some(_) => {
            out.array(matches.len());
            for at in matches {
                out.int(at);
            }
        }
    }
    Ok(())
}

fn end_arg(arg: &[u8]) -> Result<End, CmdError> {
    if is(arg, "LEFT") {
        Ok(End::Left)
    } else if is(arg, "RIGHT") {
        Ok(End::Right)
    } else {
        Err(CmdError::Syntax)
    }
}

/// LMOVE and RPOPLPUSH (`lmoveGenericCommand`): both types are checked
/// before anything moves; an emptied source is deleted.
fn lmove_generic(ctx: &mut Ctx, src: &[u8], dst: &[u8], from: End, to: End) -> CmdResult {
    if read_for_write(ctx, src, &LIST)?.is_none_or(List::is_empty) {
        ctx.out().null();
        return Ok(());
    }
    read_for_write(ctx, dst, &LIST)?;
    // The source was just seen to be a non-empty list.
    let elem = write(ctx, src, &LIST)?.and_then(|list| list.pop(from));
    let Some(elem) = elem else {
        ctx.out().null();
        return Ok(());
    };
    push_elems(ctx, dst, to, &[&elem], false)?;
    ctx.signal(EventClass::LIST, pop_event(from), src);
    delete_if_empty(ctx, src);
    ctx.out().bulk(&elem);
    Ok(())
}

fn lmove(ctx: &mut Ctx, args: Args) -> CmdResult {
    let from = end_arg(&args[3])?;
    let to = end_arg(&args[4])?;
    lmove_generic(ctx, &args[1], &args[2], from, to)
}

fn rpoplpush(ctx: &mut Ctx, args: Args) -> CmdResult {
    lmove_generic(ctx, &args[1], &args[2], End::Right, End::Left)
}

/// The name of a pop from `end`, for the effect stream.
fn pop_name(end: End) -> &'static [u8] {
    match end {
        End::Left => b"LPOP",
        End::Right => b"RPOP",
    }
}

/// A key and the elements popped from it.
type Popped = (Vec<u8>, Vec<Vec<u8>>);

/// Pops up to `count` elements from `end` of the first of `keys` that
/// holds a non-empty list: its key and the elements, `None` if none has
/// any. A key of another type answers WRONGTYPE, as Redis checks keys in
/// order, except when a blocked command is retried (then Redis waits on).
fn pop_first(
    ctx: &mut Ctx,
    keys: &[&[u8]],
    end: End,
    count: usize,
) -> Result<Option<Popped>, CmdError> {
    let retrying = blocking::retrying(ctx);
    for key in keys {
        let list = match write(ctx, key, &LIST) {
            Ok(Some(list)) if !list.is_empty() => list,
            Ok(_) => continue,
            Err(_) if retrying => continue,
            Err(e) => return Err(e),
        };
        let popped: Vec<Vec<u8>> = (0..count).map_while(|_| list.pop(end)).collect();
        if !popped.is_empty() {
            ctx.signal(EventClass::LIST, pop_event(end), key);
        }
        delete_if_empty(ctx, key);
        return Ok(Some((key.to_vec(), popped)));
    }
    Ok(None)
}

/// LMPOP/BLMPOP's `numkeys key... LEFT|RIGHT [COUNT n]` from `args[at]`.
fn mpop_args<'a>(args: &Args<'a>, at: usize) -> Result<(Vec<&'a [u8]>, End, usize), CmdError> {
    let (keys, which, count) = mpop_parse(args, at, ["LEFT", "RIGHT"])?;
    Ok((keys, if which == 0 { End::Left } else { End::Right }, count))
}

/// LMPOP and a served BLMPOP: `[key, [elements]]`, propagated as the
/// plain pop with a count.
fn reply_mpop(ctx: &mut Ctx, key: &[u8], elems: &[Vec<u8>], end: End) {
    let n = elems.len().to_string();
    ctx.propagate_as(&[pop_name(end), key, n.as_bytes()]);
    let out = ctx.out();
    out.array(2);
    out.bulk(key);
    out.array(elems.len());
    for elem in elems {
        out.bulk(elem);
    }
}

fn lmpop(ctx: &mut Ctx, args: Args) -> CmdResult {
    let (keys, end, count) = mpop_args(&args, 1)?;
    match pop_first(ctx, &keys, end, count)? {
        Some((key, elems)) => reply_mpop(ctx, &key, &elems, end),
        None => ctx.out().null_array(),
    }
    Ok(())
}

fn blmpop(ctx: &mut Ctx, args: Args) -> CmdResult {
    let (keys, end, count) = mpop_args(&args, 2)?;
    let deadline = timeout_arg(&args[1], ctx.now_ms)?;
    match pop_first(ctx, &keys, end, count)? {
        Some((key, elems)) => reply_mpop(ctx, &key, &elems, end),
        None => wait_for_keys(ctx, args, &keys, deadline),
    }
    Ok(())
}

/// BLPOP/BRPOP `key... timeout`: `[key, element]` from the first key with
/// data, propagated as LPOP/RPOP; otherwise wait.
fn bpop_generic(ctx: &mut Ctx, args: Args, end: End) -> CmdResult {
    let deadline = timeout_arg(&args[args.len() - 1], ctx.now_ms)?;
    let keys: Vec<&[u8]> = args.iter().skip(1).take(args.len() - 2).collect();
    match pop_first(ctx, &keys, end, 1)? {
        Some((key, elems)) => {
            ctx.propagate_as(&[pop_name(end), &key]);
            let out = ctx.out();
            out.array(2);
            out.bulk(&key);
            out.bulk(&elems[0]);
        }
        None => wait_for_keys(ctx, args, &keys, deadline),
    }
    Ok(())
}

fn blpop(ctx: &mut Ctx, args: Args) -> CmdResult {
    bpop_generic(ctx, args, End::Left)
}

fn brpop(ctx: &mut Ctx, args: Args) -> CmdResult {
    bpop_generic(ctx, args, End::Right)
}

/// BLMOVE/BRPOPLPUSH: LMOVE once the source has an element (propagated as
/// LMOVE), otherwise wait on the source.
fn blmove_generic(ctx: &mut Ctx, args: Args, from: End, to: End, timeout: &[u8]) -> CmdResult {
    let deadline = timeout_arg(timeout, ctx.now_ms)?;
    let (src, dst) = (&args[1], &args[2]);
    let retrying = blocking::retrying(ctx);
    let ready = match read_for_write(ctx, src, &LIST) {
        Ok(list) => list.is_some_and(|l| !l.is_empty()),
        Err(_) if retrying => false,
        Err(e) => return Err(e),
    };
    if !ready {
        wait_for_keys(ctx, args, &[src], deadline);
        return Ok(());
    }
    let word = |end| {
        if end == End::Left {
            b"LEFT".as_slice()
        } else {
            b"RIGHT"
        }
    };
    ctx.propagate_as(&[b"LMOVE", src, dst, word(from), word(to)]);
    lmove_generic(ctx, src, dst, from, to)
}

fn blmove(ctx: &mut Ctx, args: Args) -> CmdResult {
    let from = end_arg(&args[3])?;
    let to = end_arg(&args[4])?;
    blmove_generic(ctx, args, from, to, &args[5])
}

fn brpoplpush(ctx: &mut Ctx, args: Args) -> CmdResult {
    blmove_generic(ctx, args, End::Right, End::Left, &args[3])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::Harness;

    #[test]
    fn ranges() {
        assert_eq!(index_range(3, 0, -1), Some((0, 2)));
        assert_eq!(index_range(3, -100, 100), Some((0, 2)));
        assert_eq!(index_range(3, 2, 1), None);
        assert_eq!(index_range(3, 5, 10), None);
        assert_eq!(index_range(0, 0, -1), None);
        assert_eq!(index_range(3, i64::MIN, i64::MAX), Some((0, 2)));
    }

    #[test]
    fn push_pop_and_types() {
        let mut h = Harness::new();
        assert_eq!(h.run("RPUSH l a b c"), ":3\r\n");
        assert_eq!(h.run("LPUSH l z"), ":4\r\n");
        assert_eq!(
            h.run("LRANGE l 0 -1"),
            "*4\r\n$1\r\nz\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"
        );
        assert_eq!(h.run("TYPE l"), "+list\r\n");
        assert_eq!(
            h.run("GET l"),
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
        );
        assert_eq!(h.run("SET s x"), "+OK\r\n");
        assert_eq!(
            h.run("LPUSH s a"),
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
        );
        assert_eq!(
            h.run("LPOP l -1"),
            "-ERR value is out of range, must be positive\r\n"
        );
        assert_eq!(h.run("LPOP l 0"), "*0\r\n");
        assert_eq!(h.run("LPOP nol 2"), "*-1\r\n");
        assert_eq!(
            h.run("RPOP l 10"),
            "*4\r\n$1\r\nc\r\n$1\r\nb\r\n$1\r\na\r\n$1\r\nz\r\n"
        );
        assert_eq!(h.run("EXISTS l"), ":0\r\n", "an emptied list is deleted");
        assert_eq!(h.run("LPUSHX l a"), ":0\r\n");
        assert_eq!(h.run("LINDEX nol 0"), "$-1\r\n");
    }
}
